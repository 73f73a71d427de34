// Helpers shared by the lowering rule files (declared in rules.h): reads and writes over an
// output box, elementwise rule builders, constant fills, reductions into kept dims, moments,
// and the spatial padding of convolution and pooling. See docs/lowering.md.
#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "rules.h"
#include "solar/util/error.h"

namespace solar::frontend {

std::string at_box(const TensorInfo& t) { return t.name + "[" + box_index(t.rank(), kI) + "]"; }

std::string read(NodeLowering& n, const std::string& key, const TensorInfo& out) {
  if (!n.is_tensor(key)) return lit(n.number(key));
  const TensorInfo t = n.tensor(key);
  return t.name + "[" + bcast_index(t.shape, out.shape, kI) + "]";
}

void pointwise(NodeLowering& n, const std::string& rhs) {
  const TensorInfo& y = n.out();
  n.kernel("map", box_loops(y.shape, kI), at_box(y), "=", rhs);
}

Rule unary(Unary f) {
  return [f](NodeLowering& n) { pointwise(n, f(n, read(n, "self", n.out()))); };
}

Rule call(const std::string& fn) {
  return unary([fn](NodeLowering&, const std::string& x) { return fn + "(" + x + ")"; });
}

Rule binary(Binary f, const std::string& a, const std::string& b) {
  return
      [f, a, b](NodeLowering& n) { pointwise(n, f(n, read(n, a, n.out()), read(n, b, n.out()))); };
}

ir::DType acc_dtype(const TensorInfo& x) {
  return x.dtype == ir::DType::F64 ? ir::DType::F64 : ir::DType::F32;
}

std::string scaled(const std::string& x, double alpha) {
  return alpha == 1.0 ? x : x + " * " + lit(alpha);
}

Rule fill(double value, const std::string& key) {
  return [value, key](NodeLowering& n) {
    pointwise(n, key.empty() ? lit(value) : lit(n.number(key)));
  };
}

std::vector<bool> reduced_dims(NodeLowering& n, int rank) {
  const std::vector<int64_t> dims = n.ints_or("dim", {});
  std::vector<bool> reduced(rank, dims.empty());
  for (int64_t d : dims) reduced[norm_dim(d, rank)] = true;
  return reduced;
}

void reduce_into(NodeLowering& n, const TensorInfo& y, const TensorInfo& x,
                 const std::vector<bool>& reduced, const std::string& assign,
                 const std::string& value) {
  n.kernel("reduce", box_loops(x.shape, kI), kept_read(y, x, reduced), assign, value);
}

std::string kept_read(const TensorInfo& y, const TensorInfo& x, const std::vector<bool>& reduced) {
  const bool keep = y.rank() == x.rank();
  std::string index;
  for (int d = 0; d < x.rank(); ++d) {
    if (reduced[d] && !keep) continue;
    index += (index.empty() ? "" : ", ") + (reduced[d] ? "0" : kI + std::to_string(d));
  }
  return y.name + "[" + index + "]";
}

void moments(NodeLowering& n, const TensorInfo& x, const std::vector<bool>& reduced,
             const TensorInfo& mean, const TensorInfo& var, int64_t count) {
  const bool keep = mean.rank() == x.rank();
  std::string index;
  for (int d = 0; d < x.rank(); ++d) {
    if (reduced[d] && !keep) continue;
    index += (index.empty() ? "" : ", ") + (reduced[d] ? "0" : kI + std::to_string(d));
  }
  const TensorInfo sum = n.temp("sum", acc_dtype(x), mean.shape);
  reduce_into(n, sum, x, reduced, "+=", at_box(x));
  n.kernel("mean", box_loops(mean.shape, kI), at_box(mean), "=",
           at_box(sum) + " / " + std::to_string(count));
  const std::string d = "(" + at_box(x) + " - " + mean.name + "[" + index + "])";
  const TensorInfo sq = n.temp("sqsum", acc_dtype(x), mean.shape);
  reduce_into(n, sq, x, reduced, "+=", d + " * " + d);
  n.kernel("var", box_loops(mean.shape, kI), at_box(var), "=",
           at_box(sq) + " / " + std::to_string(count));
}

std::vector<int64_t> per_dim(NodeLowering& n, const std::string& key, size_t dims,
                             std::vector<int64_t> fallback) {
  std::vector<int64_t> v = n.ints_or(key, std::move(fallback));
  if (v.empty()) return v;
  if (v.size() == 1) v.assign(dims, v[0]);
  if (v.size() != dims)
    throw UserError("argument '" + key + "' needs " + std::to_string(dims) + " entries");
  return v;
}

TensorInfo pad_spatial(NodeLowering& n, const TensorInfo& x, const std::vector<int64_t>& lo,
                       const std::vector<int64_t>& need, const std::string& value) {
  const size_t sp = lo.size();
  std::vector<int64_t> lo_all(x.rank() - sp, 0);
  std::vector<int64_t> hi_all = lo_all;
  std::vector<int64_t> shape = x.shape;
  bool any = false;
  for (size_t d = 0; d < sp; ++d) {
    const size_t xd = x.rank() - sp + d;
    const int64_t hi = std::max<int64_t>(0, need[d] - lo[d] - x.shape[xd]);
    lo_all.push_back(lo[d]);
    hi_all.push_back(hi);
    shape[xd] += lo[d] + hi;
    any = any || lo[d] != 0 || hi != 0;
  }
  if (!any) return x;
  const TensorInfo p = n.temp("pad", x.dtype, shape);
  n.stmt(p.name + " = pad(" + x.name + ", lo=[" + join_ints(lo_all) + "], hi=[" +
         join_ints(hi_all) + "], value=" + value + ")");
  return p;
}

}  // namespace solar::frontend
