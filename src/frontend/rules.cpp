// The lowering rules, one per operator family, and the registry that names them. Each rule
// writes its node's IR text through NodeLowering; docs/lowering.md states each rule's semantics.
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

namespace {

// `self OP other`.
Rule infix(const std::string& op) {
  return binary([op](NodeLowering&, const std::string& a, const std::string& b) {
    return "(" + a + " " + op + " " + b + ")";
  });
}

// add and sub: `self OP other * alpha`.
Rule add_sub(const std::string& op) {
  return binary([op](NodeLowering& n, const std::string& a, const std::string& b) {
    return a + " " + op + " " + scaled(b, n.number_or("alpha", 1.0));
  });
}

// `min(max(x, lo), hi)`; an absent (or unnamed, "") bound is skipped.
Rule clamp_rule(const std::string& lo_key, const std::string& hi_key) {
  return unary([lo_key, hi_key](NodeLowering& n, const std::string& x) {
    std::string e = x;
    if (n.has(lo_key)) e = "max(" + e + ", " + read(n, lo_key, n.out()) + ")";
    if (n.has(hi_key)) e = "min(" + e + ", " + read(n, hi_key, n.out()) + ")";
    return e;
  });
}

// GELU, exact (erf) or with approximate="tanh".
std::string gelu(NodeLowering& n, const std::string& x) {
  if (n.string_or("approximate", "none") == "tanh") {
    return "0.5 * " + x + " * (1.0 + tanh(0.7978845608028654 * (" + x + " + 0.044715 * " + x +
           " * " + x + " * " + x + ")))";
  }
  return "0.5 * " + x + " * (1.0 + erf(" + x + " * 0.7071067811865476))";
}

// ---- views and copies --------------------------------------------------------------------

// `y = x`, a copy (which also converts dtypes).
void copy_rule(NodeLowering& n) { n.stmt(n.out().name + " = " + n.tensor("self").name); }

// Every view that keeps the row-major order: `y = reshape(x)`.
void reshape_rule(NodeLowering& n) {
  n.stmt(n.out().name + " = reshape(" + n.tensor("self").name + ")");
}

// view_copy: the view (`reshape`) materialised, as its name says and as eager runs it: a copy
// kernel over the view, which reads the input's bytes and writes as many (a plain `y = v` copy
// statement would be a relabelling the analysis does not charge).
void view_copy_rule(NodeLowering& n) {
  const TensorInfo x = n.tensor("self");
  const TensorInfo& y = n.out();
  const TensorInfo v = n.temp("view", x.dtype, y.shape);
  n.stmt(v.name + " = reshape(" + x.name + ")");
  const std::string at = "[" + box_index(y.rank(), kI) + "]";
  n.kernel("copy", box_loops(y.shape, kI), y.name + at, "=", v.name + at);
}

// expand: numpy broadcasting to the output shape.
void expand_rule(NodeLowering& n) {
  n.stmt(n.out().name + " = broadcast(" + n.tensor("self").name + ")");
}

// `y = permute(x, perm)`.
void permute_to(NodeLowering& n, const std::vector<int64_t>& perm) {
  n.stmt(n.out().name + " = permute(" + n.tensor("self").name + ", [" + join_ints(perm) + "])");
}

// Swaps dimensions d0 and d1 of the input (t: the last two of a 2-D tensor).
void transpose_dims(NodeLowering& n, int64_t d0, int64_t d1) {
  const int rank = n.tensor("self").rank();
  if (rank < 2) return copy_rule(n);
  std::vector<int64_t> perm(rank);
  for (int d = 0; d < rank; ++d) perm[d] = d;
  std::swap(perm[norm_dim(d0, rank)], perm[norm_dim(d1, rank)]);
  permute_to(n, perm);
}

// permute with negative dims normalised.
void permute_rule(NodeLowering& n) {
  const int rank = n.tensor("self").rank();
  std::vector<int64_t> perm = n.ints_or("dims", {});
  for (int64_t& d : perm) d = norm_dim(d, rank);
  permute_to(n, perm);
}

// slice.Tensor: start and end clamped into 0..size as Python slicing does.
void slice_rule(NodeLowering& n) {
  const TensorInfo x = n.tensor("self");
  const int64_t dim = norm_dim(n.integer_or("dim", 0), x.rank());
  const int64_t size = x.shape[dim];
  auto clampi = [size](int64_t v) { return std::clamp(v < 0 ? v + size : v, int64_t{0}, size); };
  const int64_t start = clampi(n.integer_or("start", 0));
  const int64_t end = std::max(start, clampi(n.integer_or("end", size)));
  std::string slices;
  for (int64_t d = 0; d < dim; ++d) slices += ":, ";
  slices += std::to_string(start) + ":" + std::to_string(end) + ":" +
            std::to_string(n.integer_or("step", 1));
  n.stmt(n.out().name + " = " + x.name + "[" + slices + "]");
}

// select.int: a single index drops the dim.
void select_rule(NodeLowering& n) {
  const TensorInfo x = n.tensor("self");
  const int64_t dim = norm_dim(n.integer("dim"), x.rank());
  int64_t index = n.integer("index");
  if (index < 0) index += x.shape[dim];
  std::string slices;
  for (int64_t d = 0; d < dim; ++d) slices += ":, ";
  n.stmt(n.out().name + " = " + x.name + "[" + slices + std::to_string(index) + "]");
}

// split_with_sizes and split.Tensor: output k is the slice of x along `dim` after the outputs
// before it (the outputs' shapes give the sizes; split.Tensor's last piece may be shorter).
void split_rule(NodeLowering& n) {
  const TensorInfo x = n.tensor("self");
  const int64_t dim = norm_dim(n.integer_or("dim", 0), x.rank());
  std::string lead;
  for (int64_t d = 0; d < dim; ++d) lead += ":, ";
  int64_t start = 0;
  for (size_t k = 0; k < n.outputs(); ++k) {
    const TensorInfo& y = n.out(k);
    const int64_t end = start + y.shape[dim];
    n.stmt(y.name + " = " + x.name + "[" + lead + std::to_string(start) + ":" +
           std::to_string(end) + "]");
    start = end;
  }
  if (start != x.shape[dim]) {
    throw UserError("the outputs cover " + std::to_string(start) + " of " +
                    std::to_string(x.shape[dim]) + " elements of dim " + std::to_string(dim));
  }
}

// unbind.int: output k is `x[:, k]` (the dim dropped).
void unbind_rule(NodeLowering& n) {
  const TensorInfo x = n.tensor("self");
  const int64_t dim = norm_dim(n.integer_or("dim", 0), x.rank());
  if (static_cast<int64_t>(n.outputs()) != x.shape[dim]) {
    throw UserError(std::to_string(n.outputs()) + " outputs for a dim of size " +
                    std::to_string(x.shape[dim]));
  }
  std::string lead;
  for (int64_t d = 0; d < dim; ++d) lead += ":, ";
  for (size_t k = 0; k < n.outputs(); ++k) {
    n.stmt(n.out(k).name + " = " + x.name + "[" + lead + std::to_string(k) + "]");
  }
}

// constant_pad_nd: `pad` lists (low, high) pairs from the last dim backwards; negative amounts
// crop, done as a slice after padding by the positive parts.
void constant_pad_rule(NodeLowering& n) {
  const TensorInfo x = n.tensor("self");
  const TensorInfo& y = n.out();
  const std::vector<int64_t> pad = n.ints_or("pad", {});
  if (pad.size() % 2 != 0 || static_cast<int>(pad.size() / 2) > x.rank()) {
    throw UserError("pad must list (low, high) pairs for at most rank dims");
  }
  std::vector<int64_t> lo(x.rank(), 0), hi(x.rank(), 0);
  for (size_t k = 0; k < pad.size() / 2; ++k) {
    lo[x.rank() - 1 - k] = pad[2 * k];
    hi[x.rank() - 1 - k] = pad[2 * k + 1];
  }
  bool crop = false;
  std::vector<int64_t> plo(x.rank()), phi(x.rank()), padded(x.shape);
  for (int d = 0; d < x.rank(); ++d) {
    plo[d] = std::max<int64_t>(lo[d], 0);
    phi[d] = std::max<int64_t>(hi[d], 0);
    padded[d] += plo[d] + phi[d];
    crop = crop || lo[d] < 0 || hi[d] < 0;
  }
  const std::string value = lit(n.number_or("value", 0.0));
  const TensorInfo p = crop ? n.temp("padded", y.dtype, padded) : y;
  n.stmt(p.name + " = pad(" + x.name + ", lo=[" + join_ints(plo) + "], hi=[" + join_ints(phi) +
         "], value=" + value + ")");
  if (!crop) return;
  std::string slices;
  for (int d = 0; d < x.rank(); ++d) {
    const int64_t start = std::max<int64_t>(-lo[d], 0);
    slices += (d ? ", " : "") + std::to_string(start) + ":" + std::to_string(start + y.shape[d]);
  }
  n.stmt(y.name + " = " + p.name + "[" + slices + "]");
}

// `y = concat(a, b, .., dim=d)`.
void cat_rule(NodeLowering& n) {
  const TensorInfo& y = n.out();
  std::string names;
  for (const TensorInfo& t : n.tensor_list("tensors")) {
    if (t.rank() == 1 && t.shape[0] == 0 && y.rank() > 1) continue;  // torch skips these
    names += t.name + ", ";
  }
  const int64_t dim = norm_dim(n.integer_or("dim", 0), y.rank());
  n.stmt(y.name + " = concat(" + names + "dim=" + std::to_string(dim) + ")");
}

// stack: each operand gets the new dim by a reshape, then concat along it.
void stack_rule(NodeLowering& n) {
  const TensorInfo& y = n.out();
  const int64_t dim = norm_dim(n.integer_or("dim", 0), y.rank());
  std::string names;
  for (const TensorInfo& t : n.tensor_list("tensors")) {
    std::vector<int64_t> shape = t.shape;
    shape.insert(shape.begin() + dim, 1);
    const TensorInfo u = n.temp("unsq", t.dtype, shape);
    n.stmt(u.name + " = reshape(" + t.name + ")");
    names += u.name + ", ";
  }
  n.stmt(y.name + " = concat(" + names + "dim=" + std::to_string(dim) + ")");
}

// embedding: rows of the weight by index, `take(weight, indices, dim=0)`.
void embedding_rule(NodeLowering& n) {
  n.stmt(n.out().name + " = take(" + n.tensor("weight").name + ", " + n.tensor("indices").name +
         ", dim=0)");
}

}  // namespace

Rule fill(double value, const std::string& key) {
  return [value, key](NodeLowering& n) {
    pointwise(n, key.empty() ? lit(value) : lit(n.number(key)));
  };
}

namespace {

// arange (.default, .start, .start_step): `y[i0] = start + step * i0`.
void arange_rule(NodeLowering& n) {
  const double start = n.has("start") ? n.number("start") : 0.0;
  pointwise(n, lit(start) + " + " + lit(n.number_or("step", 1.0)) + " * " + kI + "0");
}

// tril (`cmp` "<=") and triu (">="): keeps x where `col - row CMP diagonal`, else 0.
void tri_rule(NodeLowering& n, const std::string& cmp) {
  const TensorInfo& y = n.out();
  const int r = y.rank();
  const std::string row = kI + std::to_string(r - 2);
  const std::string col = kI + std::to_string(r - 1);
  const int64_t diag = n.integer_or("diagonal", 0);
  pointwise(n, "select(" + col + " - " + row + " " + cmp + " " + std::to_string(diag) + ", " +
                   read(n, "self", y) + ", 0.0)");
}

// ---- contractions --------------------------------------------------------------------------

// y[b.., i, j] += a[b.., i, k] * B over the output's box and k in 0..k; `b_read` reads the
// second operand (e.g. "w[k, i1]" for mm).
void contract(NodeLowering& n, const TensorInfo& y, const TensorInfo& a, const std::string& b_read,
              int64_t k) {
  const int r = y.rank();
  std::string a_index;
  for (int d = 0; d < r - 1; ++d) a_index += kI + std::to_string(d) + ", ";
  n.kernel("mm", box_loops(y.shape, kI) + ", k in 0.." + std::to_string(k), at_box(y),
           "+=", a.name + "[" + a_index + "k] * " + b_read);
}

// mm and bmm: `y[b.., i, j] += self[b.., i, k] * mat2[b.., k, j]`.
void mm_rule(NodeLowering& n) {
  const TensorInfo a = n.tensor("self");
  const TensorInfo b = n.tensor("mat2");
  std::string b_index;
  for (int d = 0; d < n.out().rank() - 2; ++d) b_index += kI + std::to_string(d) + ", ";
  b_index += "k, " + kI + std::to_string(n.out().rank() - 1);
  contract(n, n.out(), a, b.name + "[" + b_index + "]", a.shape.back());
}

// addmm / baddbmm: out = beta * self + alpha * (mat1 @ mat2).
void addmm_rule(NodeLowering& n, const std::string& a_key, const std::string& b_key) {
  const TensorInfo& y = n.out();
  const TensorInfo a = n.tensor(a_key);
  const TensorInfo b = n.tensor(b_key);
  const TensorInfo acc = n.temp("acc", y.dtype, y.shape);
  std::string b_index;
  for (int d = 0; d < y.rank() - 2; ++d) b_index += kI + std::to_string(d) + ", ";
  b_index += "k, " + kI + std::to_string(y.rank() - 1);
  contract(n, acc, a, b.name + "[" + b_index + "]", a.shape.back());
  const double beta = n.number_or("beta", 1.0);
  const std::string prod = scaled(at_box(acc), n.number_or("alpha", 1.0));
  pointwise(n, beta == 0.0 ? prod : scaled(read(n, "self", y), beta) + " + " + prod);
}

// linear: `y[.., j] += input[.., k] * weight[j, k]`, then the bias.
void linear_rule(NodeLowering& n) {
  const TensorInfo& y = n.out();
  const TensorInfo x = n.tensor("input");
  const TensorInfo w = n.tensor("weight");
  const std::string w_read = w.name + "[" + kI + std::to_string(y.rank() - 1) + ", k]";
  if (!n.has("bias")) return contract(n, y, x, w_read, x.shape.back());
  const TensorInfo acc = n.temp("acc", y.dtype, y.shape);
  contract(n, acc, x, w_read, x.shape.back());
  pointwise(n, at_box(acc) + " + " + read(n, "bias", y));
}

// ---- reductions ----------------------------------------------------------------------------

}  // namespace

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

namespace {

// sum, amax, amin: one reduction kernel over `dim` (keepdim from the output's rank).
Rule reduce_rule(const std::string& assign) {
  return [assign](NodeLowering& n) {
    const TensorInfo x = n.tensor("self");
    reduce_into(n, n.out(), x, reduced_dims(n, x.rank()), assign, at_box(x));
  };
}

// any (`max=`) and all (`min=`) of `x != 0` over `dim` (all dims when absent).
Rule any_all_rule(const std::string& assign) {
  return [assign](NodeLowering& n) {
    const TensorInfo x = n.tensor("self");
    reduce_into(n, n.out(), x, reduced_dims(n, x.rank()), assign, "(" + at_box(x) + " != 0.0)");
  };
}

// logsumexp over `dim`: max m (0 where m is infinite, as torch does), then
// `log(sum(exp(x - m))) + m`.
void logsumexp_rule(NodeLowering& n) {
  const TensorInfo x = n.tensor("self");
  const TensorInfo& y = n.out();
  const std::vector<bool> reduced = reduced_dims(n, x.rank());
  std::vector<int64_t> kept_shape;
  std::string kept;
  for (int d = 0; d < x.rank(); ++d) {
    if (reduced[d]) continue;
    kept_shape.push_back(x.shape[d]);
    kept += (kept.empty() ? "" : ", ") + kI + std::to_string(d);
  }
  const TensorInfo mx = n.temp("max", acc_dtype(x), kept_shape);
  const TensorInfo s = n.temp("sum", acc_dtype(x), kept_shape);
  reduce_into(n, mx, x, reduced, "max=", at_box(x));
  const std::string m = mx.name + "[" + kept + "]";
  const std::string shift = "select(abs(" + m + ") == inf, 0.0, " + m + ")";
  reduce_into(n, s, x, reduced, "+=", "exp(" + at_box(x) + " - " + shift + ")");
  // y has x's rank (keepdim) or drops the reduced dims; read the stats by y's kept indices.
  const bool keep = y.rank() == x.rank();
  std::string yk;
  for (int d = 0; d < y.rank(); ++d) {
    if (keep && reduced[d]) continue;
    yk += (yk.empty() ? "" : ", ") + kI + std::to_string(d);
  }
  const std::string ms = mx.name + "[" + yk + "]";
  pointwise(n, "log(" + s.name + "[" + yk + "]) + select(abs(" + ms + ") == inf, 0.0, " + ms + ")");
}

// mean: the sum, then one division by the number of reduced elements.
void mean_rule(NodeLowering& n) {
  const TensorInfo x = n.tensor("self");
  const TensorInfo& y = n.out();
  const std::vector<bool> reduced = reduced_dims(n, x.rank());
  int64_t count = 1;
  for (int d = 0; d < x.rank(); ++d) count *= reduced[d] ? x.shape[d] : 1;
  const TensorInfo sum = n.temp("sum", y.dtype, y.shape);
  reduce_into(n, sum, x, reduced, "+=", at_box(x));
  pointwise(n, at_box(sum) + " / " + std::to_string(count));
}

// Softmax (or log-softmax) along `dim`: max, e = exp(x - max), sum of e; then e / sum (or
// x - max - log(sum)).
void softmax_like(NodeLowering& n, bool log) {
  const TensorInfo x = n.tensor("self");
  std::vector<bool> reduced(x.rank(), false);
  reduced[norm_dim(n.integer("dim"), x.rank())] = true;
  std::vector<int64_t> kept_shape;
  std::string kept;
  for (int d = 0; d < x.rank(); ++d) {
    if (reduced[d]) continue;
    kept_shape.push_back(x.shape[d]);
    kept += (kept.empty() ? "" : ", ") + kI + std::to_string(d);
  }
  const TensorInfo mx = n.temp("max", acc_dtype(x), kept_shape);
  const TensorInfo e = n.temp("exp", acc_dtype(x), x.shape);
  const TensorInfo s = n.temp("sum", acc_dtype(x), kept_shape);
  reduce_into(n, mx, x, reduced, "max=", at_box(x));
  const std::string m = mx.name + "[" + kept + "]";
  n.kernel("exp", box_loops(x.shape, kI), at_box(e), "=", "exp(" + at_box(x) + " - " + m + ")");
  reduce_into(n, s, e, reduced, "+=", at_box(e));
  const std::string sum = s.name + "[" + kept + "]";
  pointwise(n, log ? at_box(x) + " - " + m + " - log(" + sum + ")" : at_box(e) + " / " + sum);
}

// ---- normalisation -------------------------------------------------------------------------

}  // namespace

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

namespace {

// native_layer_norm over the trailing normalized_shape dims; outputs out, mean, rstd.
void layer_norm_rule(NodeLowering& n) {
  const TensorInfo x = n.tensor("input");
  const int64_t norm_rank = static_cast<int64_t>(n.ints_or("normalized_shape", {}).size());
  const int64_t batch_rank = x.rank() - norm_rank;
  std::vector<bool> reduced(x.rank(), false);
  std::vector<int64_t> stat_shape = x.shape;
  int64_t count = 1;
  for (int d = static_cast<int>(batch_rank); d < x.rank(); ++d) {
    reduced[d] = true;
    stat_shape[d] = 1;
    count *= x.shape[d];
  }
  const bool stats_out = n.outputs() == 3 && n.out(1).shape == stat_shape;
  const TensorInfo mean = stats_out ? n.out(1) : n.temp("mean", acc_dtype(x), stat_shape);
  const TensorInfo var = n.temp("var", acc_dtype(x), stat_shape);
  moments(n, x, reduced, mean, var, count);
  const TensorInfo rstd = stats_out ? n.out(2) : n.temp("rstd", acc_dtype(x), stat_shape);
  const std::string eps = lit(n.number_or("eps", 1e-5));
  n.kernel("rstd", box_loops(stat_shape, kI), at_box(rstd), "=",
           "rsqrt(" + at_box(var) + " + " + eps + ")");
  const std::string stat_index = bcast_index(stat_shape, x.shape, kI);
  std::string e = "(" + at_box(x) + " - " + mean.name + "[" + stat_index + "]) * " + rstd.name +
                  "[" + stat_index + "]";
  if (n.has("weight")) e += " * " + read(n, "weight", x);
  if (n.has("bias")) e += " + " + read(n, "bias", x);
  pointwise(n, e);
}

// Batch norm, channel dim 1. Training: batch statistics (outputs 1, 2 are mean and rstd; the
// functional form adds updated running mean and var as outputs 3, 4). Eval: running statistics.
void batch_norm(NodeLowering& n, bool training) {
  const TensorInfo x = n.tensor("input");
  const TensorInfo& y = n.out();
  const int64_t channels = x.shape.at(1);
  const std::vector<int64_t> c_shape{channels};
  const std::string c = kI + "1";
  const std::string eps = lit(n.number_or("eps", 1e-5));
  std::string mean_read;
  std::string rstd_read;
  if (training) {
    std::vector<bool> reduced(x.rank(), true);
    reduced[1] = false;
    const int64_t count = x.numel() / std::max<int64_t>(channels, 1);
    const bool stats_out = n.outputs() >= 3 && n.out(1).shape == c_shape;
    const TensorInfo mean = stats_out ? n.out(1) : n.temp("mean", acc_dtype(x), c_shape);
    const TensorInfo var = n.temp("var", acc_dtype(x), c_shape);
    moments(n, x, reduced, mean, var, count);
    const TensorInfo rstd = stats_out ? n.out(2) : n.temp("rstd", acc_dtype(x), c_shape);
    n.kernel("rstd", "c in 0.." + std::to_string(channels), rstd.name + "[c]", "=",
             "rsqrt(" + var.name + "[c] + " + eps + ")");
    if (n.outputs() == 5 && n.has("running_mean")) {
      const std::string m = lit(n.number_or("momentum", 0.1));
      const std::string keep = lit(1.0 - n.number_or("momentum", 0.1));
      const std::string unbias = lit(static_cast<double>(count) / std::max<int64_t>(count - 1, 1));
      n.kernel(
          "run_mean", "c in 0.." + std::to_string(channels), n.out(3).name + "[c]", "=",
          keep + " * " + n.tensor("running_mean").name + "[c] + " + m + " * " + mean.name + "[c]");
      n.kernel("run_var", "c in 0.." + std::to_string(channels), n.out(4).name + "[c]", "=",
               keep + " * " + n.tensor("running_var").name + "[c] + " + m + " * " + var.name +
                   "[c] * " + unbias);
    }
    mean_read = mean.name + "[" + c + "]";
    rstd_read = rstd.name + "[" + c + "]";
  } else {
    mean_read = n.tensor("running_mean").name + "[" + c + "]";
    rstd_read = "rsqrt(" + n.tensor("running_var").name + "[" + c + "] + " + eps + ")";
  }
  std::string e = "(" + at_box(x) + " - " + mean_read + ") * " + rstd_read;
  if (n.has("weight")) e += " * " + n.tensor("weight").name + "[" + c + "]";
  if (n.has("bias")) e += " + " + n.tensor("bias").name + "[" + c + "]";
  n.kernel("norm", box_loops(y.shape, kI), at_box(y), "=", e);
}

// ---- convolution and pooling ---------------------------------------------------------------

}  // namespace

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

namespace {

// A forward convolution into y (no bias): zero padding, then one strided, dilated,
// grouped kernel.
void conv_forward(NodeLowering& n, const TensorInfo& y, const TensorInfo& x, const TensorInfo& w,
                  const std::vector<int64_t>& s, const std::vector<int64_t>& p,
                  const std::vector<int64_t>& dl, int64_t groups) {
  const size_t sp = s.size();
  const int64_t icg = w.shape[1];
  const int64_t ocg = w.shape[0] / groups;
  std::vector<int64_t> need(sp);
  for (size_t d = 0; d < sp; ++d) {
    need[d] = (y.shape[2 + d] - 1) * s[d] + dl[d] * (w.shape[2 + d] - 1) + 1;
  }
  const TensorInfo xp = pad_spatial(n, x, p, need, "0.0");
  std::string loops = "b in 0.." + std::to_string(y.shape[0]) + ", g in 0.." +
                      std::to_string(groups) + ", oc in 0.." + std::to_string(ocg);
  std::string o_index;
  std::string x_index;
  std::string w_index;
  for (size_t d = 0; d < sp; ++d) {
    loops += ", o" + std::to_string(d) + " in 0.." + std::to_string(y.shape[2 + d]);
    o_index += ", o" + std::to_string(d);
  }
  loops += ", ic in 0.." + std::to_string(icg);
  for (size_t d = 0; d < sp; ++d) {
    const std::string k = "k" + std::to_string(d);
    loops += ", " + k + " in 0.." + std::to_string(w.shape[2 + d]);
    x_index += ", " + std::to_string(s[d]) + "*o" + std::to_string(d) + " + " +
               std::to_string(dl[d]) + "*" + k;
    w_index += ", " + k;
  }
  const std::string oc = std::to_string(ocg) + "*g + oc";
  n.kernel("conv", loops, y.name + "[b, " + oc + o_index + "]", "+=",
           xp.name + "[b, " + std::to_string(icg) + "*g + ic" + x_index + "] * " + w.name + "[" +
               oc + ", ic" + w_index + "]");
}

}  // namespace

// Transposed convolution: every input element scatters into the output window it reaches,
// `o = s*i - p + d*k`, computed into an uncropped buffer and sliced by the padding.
void conv_transposed(NodeLowering& n, const TensorInfo& y, const TensorInfo& x, const TensorInfo& w,
                     const std::vector<int64_t>& s, const std::vector<int64_t>& p,
                     const std::vector<int64_t>& dl, int64_t groups) {
  const size_t sp = s.size();
  const int64_t icg = w.shape[0] / groups;
  const int64_t ocg = w.shape[1];
  std::vector<int64_t> full = y.shape;
  std::string slices = ":, :";
  for (size_t d = 0; d < sp; ++d) {
    const int64_t reach = (x.shape[2 + d] - 1) * s[d] + dl[d] * (w.shape[2 + d] - 1) + 1;
    full[2 + d] = std::max(reach, p[d] + y.shape[2 + d]);
    slices += ", " + std::to_string(p[d]) + ":" + std::to_string(p[d] + y.shape[2 + d]);
  }
  const TensorInfo acc = n.temp("full", y.dtype, full);
  std::string loops = "b in 0.." + std::to_string(y.shape[0]) + ", g in 0.." +
                      std::to_string(groups) + ", oc in 0.." + std::to_string(ocg);
  std::string o_index;
  std::string x_index;
  std::string w_index;
  for (size_t d = 0; d < sp; ++d) {
    const std::string i = "x" + std::to_string(d);
    const std::string k = "k" + std::to_string(d);
    loops += ", " + i + " in 0.." + std::to_string(x.shape[2 + d]) + ", " + k + " in 0.." +
             std::to_string(w.shape[2 + d]);
    o_index += ", " + std::to_string(s[d]) + "*" + i + " + " + std::to_string(dl[d]) + "*" + k;
    x_index += ", " + i;
    w_index += ", " + k;
  }
  loops += ", ic in 0.." + std::to_string(icg);
  const std::string ic = std::to_string(icg) + "*g + ic";
  n.kernel(
      "convt", loops, acc.name + "[b, " + std::to_string(ocg) + "*g + oc" + o_index + "]",
      "+=", x.name + "[b, " + ic + x_index + "] * " + w.name + "[" + ic + ", oc" + w_index + "]");
  n.stmt(y.name + " = " + acc.name + "[" + slices + "]");
}

namespace {

// convolution: forward or transposed, 1-d to 3-d, then the bias in a second kernel.
void convolution_rule(NodeLowering& n) {
  const TensorInfo x = n.tensor("input");
  const TensorInfo w = n.tensor("weight");
  const TensorInfo& y = n.out();
  const size_t sp = static_cast<size_t>(x.rank()) - 2;
  const std::vector<int64_t> s = per_dim(n, "stride", sp, {1});
  const std::vector<int64_t> p = per_dim(n, "padding", sp, {0});
  const std::vector<int64_t> dl = per_dim(n, "dilation", sp, {1});
  const int64_t groups = n.integer_or("groups", 1);
  const bool transposed = n.flag_or("transposed", false);
  const TensorInfo acc = n.has("bias") ? n.temp("acc", y.dtype, y.shape) : y;
  if (transposed) {
    conv_transposed(n, acc, x, w, s, p, dl, groups);
  } else {
    conv_forward(n, acc, x, w, s, p, dl, groups);
  }
  if (n.has("bias")) {
    pointwise(n, at_box(acc) + " + " + n.tensor("bias").name + "[" + kI + "1]");
  }
}

// Window geometry of a pooling node: kernel, stride, padding, dilation per spatial dim.
struct Window {
  std::vector<int64_t> k, s, p, d;
};

// The pooling window of a node (an empty stride means the kernel size).
Window window(NodeLowering& n, size_t sp) {
  Window w;
  w.k = per_dim(n, "kernel_size", sp, {});
  w.s = per_dim(n, "stride", sp, {});
  if (w.s.empty()) w.s = w.k;
  w.p = per_dim(n, "padding", sp, {0});
  w.d = per_dim(n, "dilation", sp, {1});
  return w;
}

// Pools x (spatial dims last, `sp` of them) into y: `assign` over each window of the padded x,
// with loops "i0.." over y's box and "k0.." over the window. Returns the window read.
std::string pool(NodeLowering& n, const TensorInfo& x, const TensorInfo& y, const Window& w,
                 const std::string& assign, const std::string& pad_value) {
  const size_t sp = w.k.size();
  const size_t lead = x.rank() - sp;
  std::vector<int64_t> need(sp);
  for (size_t d = 0; d < sp; ++d) {
    need[d] = (y.shape[lead + d] - 1) * w.s[d] + w.d[d] * (w.k[d] - 1) + 1;
  }
  const TensorInfo xp = pad_spatial(n, x, w.p, need, pad_value);
  std::string loops = box_loops(y.shape, kI);
  std::string index;
  for (size_t d = 0; d < lead; ++d) index += kI + std::to_string(d) + ", ";
  for (size_t d = 0; d < sp; ++d) {
    const std::string k = "k" + std::to_string(d);
    loops += ", " + k + " in 0.." + std::to_string(w.k[d]);
    index += (d ? ", " : "") + std::to_string(w.s[d]) + "*" + kI + std::to_string(lead + d) +
             " + " + std::to_string(w.d[d]) + "*" + k;
  }
  const std::string window_read = xp.name + "[" + index + "]";
  n.kernel("pool", loops, at_box(y), assign, window_read);
  return window_read;
}

// max_pool{1,2,3}d_with_indices: the max, and the flat index (within each plane of the unpadded
// input) of its first occurrence in row-major window order.
Rule max_pool_rule(size_t sp) {
  return [sp](NodeLowering& n) {
    const TensorInfo x = n.tensor("self");
    const TensorInfo& y = n.out();
    const Window w = window(n, sp);
    const std::string xread = pool(n, x, y, w, "max=", "-inf");
    if (n.outputs() < 2) return;
    const size_t lead = x.rank() - sp;
    std::string flat;
    for (size_t d = 0; d < sp; ++d) {
      const std::string pos = "(" + std::to_string(w.s[d]) + " * " + kI + std::to_string(lead + d) +
                              " + " + std::to_string(w.d[d]) + " * k" + std::to_string(d) + " - " +
                              std::to_string(w.p[d]) + ")";
      flat = d == 0 ? pos : "(" + flat + ") * " + std::to_string(x.shape[lead + d]) + " + " + pos;
    }
    std::string loops = box_loops(y.shape, kI);
    for (size_t d = 0; d < sp; ++d) {
      loops += ", k" + std::to_string(d) + " in 0.." + std::to_string(w.k[d]);
    }
    n.kernel("argmax", loops, at_box(n.out(1)),
             "min=", "select(" + xread + " == " + at_box(y) + ", " + flat + ", inf)");
  };
}

// avg_pool{2,3}d: the window sum over the zero-padded input over the divisor: divisor_override,
// else the window clipped to the padded input (count_include_pad) or to the input.
Rule avg_pool_rule(size_t sp) {
  return [sp](NodeLowering& n) {
    const TensorInfo x = n.tensor("self");
    const TensorInfo& y = n.out();
    Window w = window(n, sp);
    w.d.assign(sp, 1);
    const TensorInfo sum = n.temp("sum", acc_dtype(x), y.shape);
    pool(n, x, sum, w, "+=", "0.0");
    std::string divisor;
    if (n.has("divisor_override")) {
      divisor = std::to_string(n.integer("divisor_override"));
    } else {
      const bool include_pad = n.flag_or("count_include_pad", true);
      const size_t lead = x.rank() - sp;
      for (size_t d = 0; d < sp; ++d) {
        const int64_t size = x.shape[lead + d];
        const std::string start = "(" + std::to_string(w.s[d]) + " * " + kI +
                                  std::to_string(lead + d) + " - " + std::to_string(w.p[d]) + ")";
        const std::string end = "min(" + start + " + " + std::to_string(w.k[d]) + ", " +
                                std::to_string(size + (include_pad ? w.p[d] : 0)) + ")";
        const std::string len =
            "(" + end + " - " + (include_pad ? start : "max(" + start + ", 0)") + ")";
        divisor += (d ? " * " : "") + len;
      }
      divisor = "(" + divisor + ")";
    }
    pointwise(n, at_box(sum) + " / " + divisor);
  };
}

// ---- attention -----------------------------------------------------------------------------

// softmax(q k^T * scale + mask) v over the last two dims, with a causal (j <= i) domain when
// is_causal. Output 1, when present, is the log-sum-exp of the scaled scores.
void sdpa_rule(NodeLowering& n) {
  const TensorInfo q = n.tensor("query");
  const TensorInfo k = n.tensor("key");
  const TensorInfo v = n.tensor("value");
  const TensorInfo& y = n.out();
  const double dropout = n.number_or("dropout_p", 0.0);
  if (dropout < 0.0 || dropout > 1.0) throw UserError("dropout_p must be in [0, 1]");
  const int r = q.rank();
  const Attention a = attention_of(n, q, k, v);
  const int64_t len_q = a.len_q;
  const int64_t len_k = a.len_k;
  const bool causal = a.causal;
  const std::vector<int64_t>& q_batch = a.batch;
  const std::vector<int64_t>& s_shape = a.s_shape;
  const std::vector<int64_t>& row_shape = a.row_shape;
  const std::string& bi = a.bi;
  const std::string& rows = a.rows;
  const std::string& cols = a.cols;
  const std::string row = a.row();
  const std::string logits = attention_logits(n, a, q, k);
  const TensorInfo lg = n.temp("logits", acc_dtype(q), s_shape);
  n.kernel("logits", cols, lg.name + "[" + bi + "i, j]", "=", logits);
  const TensorInfo mx = n.temp("max", acc_dtype(q), row_shape);
  n.kernel("max", cols, mx.name + row, "max=", lg.name + "[" + bi + "i, j]");
  // The attention weights are stored in the query's dtype, as FlashAttention converts them before
  // the second product: with bf16 inputs, P V is a bf16 x bf16 product on the tensor cores (an f32
  // P would class it as an f32 product and bound it at the vector rate, above what the fused
  // kernels run at). The row sum reads the stored weights.
  const TensorInfo p = n.temp("p", q.dtype, s_shape);
  n.kernel("exp", cols, p.name + "[" + bi + "i, j]", "=",
           "exp(" + lg.name + "[" + bi + "i, j] - " + mx.name + row + ")");
  const TensorInfo l = n.temp("sum", acc_dtype(q), row_shape);
  n.kernel("sum", cols, l.name + row, "+=", p.name + "[" + bi + "i, j]");
  // Dropout of the attention weights: the Weyl mask of native_dropout (docs/lowering.md,
  // "Dropout") over the weights' flat row-major index; the normaliser divides at the end.
  TensorInfo pd = p;
  if (dropout > 0.0) {
    std::string flat = "i * " + std::to_string(len_k) + " + j";
    int64_t stride = len_q * len_k;
    for (int d = r - 3; d >= 0; --d) {
      flat = "b" + std::to_string(d) + " * " + std::to_string(stride) + " + " + flat;
      stride *= q_batch[d];
    }
    pd = n.temp("dropped", q.dtype, s_shape);
    const std::string kept = "((" + flat + " + 1) * 0.6180339887498949) % 1.0 >= " + lit(dropout);
    n.kernel("dropout", cols, pd.name + "[" + bi + "i, j]", "=",
             dropout >= 1.0 ? std::string("0.0")
                            : "select(" + kept + ", " + p.name + "[" + bi + "i, j] * " +
                                  lit(1.0 / (1.0 - dropout)) + ", 0.0)");
  }
  const TensorInfo acc = n.temp("acc", acc_dtype(q), y.shape);
  n.kernel("pv",
           rows + ", d in 0.." + std::to_string(a.dv) + ", j in 0.." +
               (causal ? "i + 1" : std::to_string(len_k)),
           acc.name + "[" + bi + "i, d]",
           "+=", pd.name + "[" + bi + "i, j] * " + v.name + "[" + a.vi + "j, d]");
  n.kernel("out", rows + ", d in 0.." + std::to_string(a.dv), y.name + "[" + bi + "i, d]", "=",
           acc.name + "[" + bi + "i, d] / " + l.name + row);
  if (n.outputs() >= 2 && n.out(1).shape == row_shape) {
    n.kernel("lse", rows, n.out(1).name + row, "=", mx.name + row + " + log(" + l.name + row + ")");
  }
}

std::map<std::string, Rule> make_rules() {
  std::map<std::string, Rule> r;
  for (const char* op : {"clone", "alias", "detach", "lift_fresh", "lift_fresh_copy", "_to_copy"}) {
    r[std::string("aten.") + op + ".default"] = copy_rule;
  }
  for (const char* op : {"view.default", "_unsafe_view.default", "reshape.default",
                         "_reshape_alias.default", "unsqueeze.default", "squeeze.default",
                         "squeeze.dim", "squeeze.dims", "flatten.using_ints"}) {
    r[std::string("aten.") + op] = reshape_rule;
  }
  r["aten.view_copy.default"] = view_copy_rule;
  r["aten.expand.default"] = expand_rule;
  r["aten.t.default"] = [](NodeLowering& n) { transpose_dims(n, 0, 1); };
  r["aten.transpose.int"] = [](NodeLowering& n) {
    transpose_dims(n, n.integer("dim0"), n.integer("dim1"));
  };
  r["aten.permute.default"] = permute_rule;
  r["aten.slice.Tensor"] = slice_rule;
  r["aten.select.int"] = select_rule;
  r["aten.cat.default"] = cat_rule;
  r["aten.stack.default"] = stack_rule;
  r["aten.embedding.default"] = embedding_rule;
  r["aten.split_with_sizes.default"] = split_rule;
  r["aten.split.Tensor"] = split_rule;
  r["aten.unsafe_split.Tensor"] = split_rule;
  r["aten.unbind.int"] = unbind_rule;
  r["aten.constant_pad_nd.default"] = constant_pad_rule;
  for (const char* op : {"aten.arange.default", "aten.arange.start", "aten.arange.start_step"}) {
    r[op] = arange_rule;
  }
  r["aten.full.default"] = fill(0.0, "fill_value");
  r["aten.full_like.default"] = fill(0.0, "fill_value");
  r["aten.scalar_tensor.default"] = fill(0.0, "s");
  r["aten.zeros.default"] = fill(0.0);
  r["aten.zeros_like.default"] = fill(0.0);
  r["aten.ones.default"] = fill(1.0);
  r["aten.ones_like.default"] = fill(1.0);
  for (const char* op : {"aten.empty.memory_format", "aten.empty_like.default",
                         "aten.empty_permuted.default", "aten.empty_strided.default"}) {
    r[op] = fill(0.0);
  }
  r["aten.tril.default"] = [](NodeLowering& n) { tri_rule(n, "<="); };
  r["aten.triu.default"] = [](NodeLowering& n) { tri_rule(n, ">="); };

  for (const char* v : {".Tensor", ".Scalar"}) {
    r[std::string("aten.add") + v] = add_sub("+");
    r[std::string("aten.sub") + v] = add_sub("-");
    r[std::string("aten.mul") + v] = infix("*");
    r[std::string("aten.div") + v] = infix("/");
    r[std::string("aten.eq") + v] = infix("==");
    r[std::string("aten.ne") + v] = infix("!=");
    r[std::string("aten.lt") + v] = infix("<");
    r[std::string("aten.le") + v] = infix("<=");
    r[std::string("aten.gt") + v] = infix(">");
    r[std::string("aten.ge") + v] = infix(">=");
  }
  for (const char* v : {"aten.rsub.Scalar", "aten.rsub.Tensor"}) {
    r[v] = binary([](NodeLowering& n, const std::string& a, const std::string& b) {
      return b + " - " + scaled(a, n.number_or("alpha", 1.0));
    });
  }
  r["aten.logical_and.default"] = infix("&&");
  r["aten.logical_or.default"] = infix("||");
  r["aten.logical_xor.default"] =
      binary([](NodeLowering&, const std::string& a, const std::string& b) {
        return "((" + a + " != 0.0) != (" + b + " != 0.0))";
      });
  r["aten.logical_not.default"] =
      unary([](NodeLowering&, const std::string& x) { return "!" + x; });
  r["aten.maximum.default"] = binary([](NodeLowering&, const std::string& a, const std::string& b) {
    return "max(" + a + ", " + b + ")";
  });
  r["aten.minimum.default"] = binary([](NodeLowering&, const std::string& a, const std::string& b) {
    return "min(" + a + ", " + b + ")";
  });
  for (const char* v : {"aten.pow.Tensor_Scalar", "aten.pow.Tensor_Tensor", "aten.pow.Scalar"}) {
    r[v] = binary([](NodeLowering&, const std::string& a,
                     const std::string& b) { return "pow(" + a + ", " + b + ")"; },
                  "self", "exponent");
  }
  r["aten.where.self"] = [](NodeLowering& n) {
    pointwise(n, "select(" + read(n, "condition", n.out()) + ", " + read(n, "self", n.out()) +
                     ", " + read(n, "other", n.out()) + ")");
  };
  for (const char* v : {"aten.masked_fill.Scalar", "aten.masked_fill.Tensor"}) {
    r[v] = [](NodeLowering& n) {
      pointwise(n, "select(" + read(n, "mask", n.out()) + ", " + read(n, "value", n.out()) + ", " +
                       read(n, "self", n.out()) + ")");
    };
  }

  for (const char* fn : {"exp", "log", "sqrt", "rsqrt", "abs", "tanh", "sigmoid", "erf", "sin",
                         "cos", "floor", "ceil", "sign", "expm1", "log1p", "log2"}) {
    r[std::string("aten.") + fn + ".default"] = call(fn);
  }
  r["aten.reciprocal.default"] = call("recip");
  r["aten.neg.default"] = unary([](NodeLowering&, const std::string& x) { return "-" + x; });
  r["aten.relu.default"] =
      unary([](NodeLowering&, const std::string& x) { return "max(" + x + ", 0.0)"; });
  r["aten.silu.default"] =
      unary([](NodeLowering&, const std::string& x) { return x + " * sigmoid(" + x + ")"; });
  r["aten.gelu.default"] = unary(gelu);
  r["aten.leaky_relu.default"] = unary([](NodeLowering& n, const std::string& x) {
    return "select(" + x + " > 0.0, " + x + ", " + x + " * " +
           lit(n.number_or("negative_slope", 0.01)) + ")";
  });
  r["aten.hardswish.default"] = unary([](NodeLowering&, const std::string& x) {
    return x + " * min(max(" + x + " + 3.0, 0.0), 6.0) / 6.0";
  });
  r["aten.hardsigmoid.default"] = unary([](NodeLowering&, const std::string& x) {
    return "min(max(" + x + " + 3.0, 0.0), 6.0) / 6.0";
  });
  r["aten.elu.default"] = unary([](NodeLowering& n, const std::string& x) {
    const double scale = n.number_or("scale", 1.0);
    return "select(" + x + " > 0.0, " + scaled(x, scale) + ", expm1(" +
           scaled(x, n.number_or("input_scale", 1.0)) + ") * " +
           lit(n.number_or("alpha", 1.0) * scale) + ")";
  });
  r["aten.softplus.default"] = unary([](NodeLowering& n, const std::string& x) {
    const double beta = n.number_or("beta", 1.0);
    return "select(" + scaled(x, beta) + " > " + lit(n.number_or("threshold", 20.0)) + ", " + x +
           ", log1p(exp(" + scaled(x, beta) + ")) / " + lit(beta) + ")";
  });
  r["aten.mish.default"] = unary(
      [](NodeLowering&, const std::string& x) { return x + " * tanh(log1p(exp(" + x + ")))"; });
  r["aten.xlogy.Tensor"] = binary([](NodeLowering&, const std::string& a, const std::string& b) {
    return "select(isnan(" + b + "), nan, select(" + a + " == 0.0, 0.0, " + a + " * log(" + b +
           ")))";
  });
  r["aten.div.Tensor_mode"] =
      binary([](NodeLowering& n, const std::string& a, const std::string& b) {
        const std::string q = "(" + a + " / " + b + ")";
        const std::string mode = n.string_or("rounding_mode", "");
        if (mode.empty()) return q;
        if (mode == "floor") return "floor" + q;
        if (mode == "trunc") return "sign" + q + " * floor(abs" + q + ")";
        throw UserError("unknown rounding_mode '" + mode + "'");
      });
  r["aten.trunc.default"] = unary([](NodeLowering&, const std::string& x) {
    return "sign(" + x + ") * floor(abs(" + x + "))";
  });
  r["aten.round.default"] = call("round");
  for (const char* v : {"aten.remainder.Scalar", "aten.remainder.Tensor"}) {
    r[v] = infix("%");
  }
  for (const char* v : {"aten.fmod.Scalar", "aten.fmod.Tensor"}) {
    // a % b has b's sign; fmod has a's: subtract b when the signs differ and it is nonzero.
    r[v] = binary([](NodeLowering&, const std::string& a, const std::string& b) {
      const std::string m = "(" + a + " % " + b + ")";
      return "select(" + m + " != 0.0 && (" + a + " < 0.0) != (" + b + " < 0.0), " + m + " - " + b +
             ", " + m + ")";
    });
  }
  r["aten.isnan.default"] = call("isnan");
  r["aten.isinf.default"] =
      unary([](NodeLowering&, const std::string& x) { return "(abs(" + x + ") == inf)"; });
  r["aten.bitwise_not.default"] = [](NodeLowering& n) {
    const std::string x = read(n, "self", n.out());
    pointwise(n, n.tensor("self").dtype == ir::DType::Bool ? "!" + x : "-" + x + " - 1.0");
  };
  r["aten.exp2.default"] = call("exp2");
  r["aten.log10.default"] = unary(
      [](NodeLowering&, const std::string& x) { return "log(" + x + ") * 0.4342944819032518"; });
  r["aten.atan.default"] =
      unary([](NodeLowering&, const std::string& x) { return "atan2(" + x + ", 1.0)"; });
  r["aten.asin.default"] = unary([](NodeLowering&, const std::string& x) {
    return "atan2(" + x + ", sqrt(1.0 - " + x + " * " + x + "))";
  });
  r["aten.acos.default"] = unary([](NodeLowering&, const std::string& x) {
    return "atan2(sqrt(1.0 - " + x + " * " + x + "), " + x + ")";
  });
  r["aten.tan.default"] =
      unary([](NodeLowering&, const std::string& x) { return "sin(" + x + ") / cos(" + x + ")"; });
  r["aten.sinh.default"] = unary([](NodeLowering&, const std::string& x) {
    return "(exp(" + x + ") - exp(-" + x + ")) * 0.5";
  });
  r["aten.cosh.default"] = unary([](NodeLowering&, const std::string& x) {
    return "(exp(" + x + ") + exp(-" + x + ")) * 0.5";
  });
  r["aten.clamp.default"] = clamp_rule("min", "max");
  r["aten.clamp.Tensor"] = clamp_rule("min", "max");
  r["aten.clamp_min.default"] = clamp_rule("min", "");
  r["aten.clamp_max.default"] = clamp_rule("", "max");
  r["aten.hardtanh.default"] = clamp_rule("min_val", "max_val");

  r["aten.mm.default"] = mm_rule;
  r["aten.bmm.default"] = mm_rule;
  r["aten.addmm.default"] = [](NodeLowering& n) { addmm_rule(n, "mat1", "mat2"); };
  r["aten.baddbmm.default"] = [](NodeLowering& n) { addmm_rule(n, "batch1", "batch2"); };
  r["aten.linear.default"] = linear_rule;

  r["aten.sum.dim_IntList"] = reduce_rule("+=");
  r["aten.sum.default"] = reduce_rule("+=");
  r["aten.prod.dim_int"] = reduce_rule("*=");
  r["aten.prod.default"] = reduce_rule("*=");
  r["aten.amax.default"] = reduce_rule("max=");
  r["aten.amin.default"] = reduce_rule("min=");
  r["aten.mean.dim"] = mean_rule;
  for (const char* op : {"aten.any.default", "aten.any.dim", "aten.any.dims"}) {
    r[op] = any_all_rule("max=");
  }
  for (const char* op : {"aten.all.default", "aten.all.dim", "aten.all.dims"}) {
    r[op] = any_all_rule("min=");
  }
  r["aten.logsumexp.default"] = logsumexp_rule;
  r["aten.mean.default"] = mean_rule;
  r["aten._softmax.default"] = [](NodeLowering& n) { softmax_like(n, false); };
  r["aten._log_softmax.default"] = [](NodeLowering& n) { softmax_like(n, true); };

  r["aten.native_layer_norm.default"] = layer_norm_rule;
  r["aten._native_batch_norm_legit_no_training.default"] = [](NodeLowering& n) {
    batch_norm(n, false);
  };
  for (const char* op :
       {"aten._native_batch_norm_legit.default", "aten._native_batch_norm_legit_functional.default",
        "aten.native_batch_norm.default"}) {
    r[op] = [](NodeLowering& n) { batch_norm(n, n.flag_or("training", true)); };
  }
  r["aten._native_batch_norm_legit.no_stats"] = [](NodeLowering& n) {
    batch_norm(n, n.flag_or("training", true));
  };

  r["aten.convolution.default"] = convolution_rule;
  r["aten.max_pool2d_with_indices.default"] = max_pool_rule(2);
  r["aten.max_pool3d_with_indices.default"] = max_pool_rule(3);
  r["aten.avg_pool2d.default"] = avg_pool_rule(2);
  r["aten.avg_pool3d.default"] = avg_pool_rule(3);

  r["aten.scaled_dot_product_attention.default"] = sdpa_rule;
  r["aten._scaled_dot_product_flash_attention_for_cpu.default"] = sdpa_rule;

  for (auto* family :
       {register_lax_rules, register_fragment_rules, register_index_rules, register_reduction_rules,
        register_data_rules, register_model_rules, register_rnn_rules, register_train_rules}) {
    std::map<std::string, Rule> more;
    family(more);
    for (auto& [name, rule] : more) {
      SOLAR_CHECK(!r.contains(name), "lowering rule registered twice: " + name);
      r[name] = std::move(rule);
    }
  }
  return r;
}

}  // namespace

const std::map<std::string, Rule>& rules() {
  static const std::map<std::string, Rule> registry = make_rules();
  return registry;
}

Attention attention_of(NodeLowering& n, const TensorInfo& q, const TensorInfo& k,
                       const TensorInfo& v) {
  const int r = q.rank();
  Attention a;
  a.len_q = q.shape[r - 2];
  if (k.rank() < 2 || v.rank() < 2) throw UserError("key and value must have rank 2 or more");
  a.len_k = k.shape[k.rank() - 2];
  a.e = q.shape[r - 1];
  a.dv = v.shape[v.rank() - 1];
  a.causal = n.flag_or("is_causal", false);
  if (a.causal && a.len_q > a.len_k) throw UserError("is_causal with more queries than keys");
  a.batch.assign(q.shape.begin(), q.shape.end() - 2);
  // Key and value may broadcast against the query's batch and head dims (numpy rules, as the
  // framework's matmuls do): multi-query attention passes k, v [B, 1, Lk, E] with q [B, H, Lq, E].
  // A broadcast dim is read at index 0: every head reads the same keys and values.
  std::vector<std::string> names;
  for (size_t d = 0; d < a.batch.size(); ++d) names.push_back("b" + std::to_string(d));
  auto batch_index = [&](const TensorInfo& t) {
    const std::vector<int64_t> dims(t.shape.begin(), t.shape.end() - 2);
    bool fits = dims.size() <= a.batch.size();
    for (size_t d = 0; fits && d < dims.size(); ++d) {
      const int64_t want = a.batch[a.batch.size() - dims.size() + d];
      fits = dims[d] == want || dims[d] == 1;
    }
    if (!fits) {
      throw UserError(
          "key and value must have the query's batch and head dims or broadcast to "
          "them (grouped heads need enable_gqa, which has no rule yet)");
    }
    if (dims != a.batch) a.broadcast_kv = true;
    const std::string index = bcast_names(dims, a.batch, names);
    return index.empty() ? index : index + ", ";
  };
  a.ki = batch_index(k);
  a.vi = batch_index(v);
  a.scale = n.number_or("scale", 1.0 / std::sqrt(static_cast<double>(a.e)));
  a.bl = box_loops(a.batch, "b");
  a.bi = box_index(r - 2, "b");
  if (!a.bl.empty()) {
    a.bl += ", ";
    a.bi += ", ";
  }
  a.rows = a.bl + "i in 0.." + std::to_string(a.len_q);
  a.cols = a.rows + ", j in 0.." + (a.causal ? "i + 1" : std::to_string(a.len_k));
  a.row_shape = a.batch;
  a.row_shape.push_back(a.len_q);
  a.s_shape = a.row_shape;
  a.s_shape.push_back(a.len_k);
  return a;
}

std::string attention_logits(NodeLowering& n, const Attention& a, const TensorInfo& q,
                             const TensorInfo& k) {
  const TensorInfo sc = n.temp("scores", acc_dtype(q), a.s_shape);
  n.kernel("qk", a.cols + ", e in 0.." + std::to_string(a.e), sc.name + a.ij(),
           "+=", q.name + "[" + a.bi + "i, e] * " + k.name + "[" + a.ki + "j, e]");
  std::string logits = sc.name + a.ij() + " * " + lit(a.scale);
  if (n.has("attn_mask")) {
    const TensorInfo m = n.tensor("attn_mask");
    std::vector<std::string> names;  // the scores' index names: b.., i, j
    for (size_t d = 0; d < a.batch.size(); ++d) names.push_back("b" + std::to_string(d));
    names.push_back("i");
    names.push_back("j");
    const std::string mread = m.name + "[" + bcast_names(m.shape, a.s_shape, names) + "]";
    logits = m.dtype == ir::DType::Bool ? "select(" + mread + ", " + logits + ", -inf)"
                                        : logits + " + " + mread;
  }
  return logits;
}

}  // namespace solar::frontend
