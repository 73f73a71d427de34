// Lowering rules for views, copies, concatenation, padding and constant tensors (arange, full,
// tril/triu). See docs/lowering.md.
#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "rules.h"
#include "solar/ir/dtype.h"
#include "solar/util/error.h"

namespace solar::frontend {

namespace {

// ---- views and copies --------------------------------------------------------------------

// `y = x`, a copy (which also converts dtypes). Of the same dtype, the analysis folds it as a view
// (alias, detach, lift_fresh: no kernel in eager either).
void copy_rule(NodeLowering& n) { n.stmt(n.out().name + " = " + n.tensor("self").name); }

// `y[i..] = v[i..]`: a copy kernel, which reads v's elements and writes y's, as eager's copy
// kernels do (a plain `y = v` copy statement of the same dtype would be a relabelling the analysis
// does not charge).
void copy_kernel(NodeLowering& n, const std::string& v) {
  const TensorInfo& y = n.out();
  const std::string at = "[" + box_index(y.rank(), kI) + "]";
  n.kernel("copy", box_loops(y.shape, kI), y.name + at, "=", v + at);
}

// clone (also what `contiguous()` of a non-contiguous tensor exports as), lift_fresh_copy and
// _to_copy: eager runs a copy kernel, which reads the input and writes a new tensor, so the
// unfused fidelity charges both. A dtype change is a `y = x` copy, which converts, and which the
// lift charges as a movement node (read x, write y) already.
void clone_rule(NodeLowering& n) {
  const TensorInfo x = n.tensor("self");
  if (x.dtype != n.out().dtype) return copy_rule(n);
  copy_kernel(n, x.name);
}

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
  copy_kernel(n, v.name);
}

// view.dtype: the same bytes read as another dtype of the same size. Supported where the value of
// an element is its byte in both dtypes (u8, i8 with wrap-around, and packed fp4 pairs,
// f4e2m1x2, whose value is their byte): a copy, which converts exactly; the analysis folds one
// to or from f4e2m1x2 as a view (docs/einsum.md). Others (f8 as u8) are a one-line error.
void view_dtype_rule(NodeLowering& n) {
  const TensorInfo x = n.tensor("self");
  const TensorInfo& y = n.out();
  const auto bytewise = [](ir::DType t) {
    return t == ir::DType::U8 || t == ir::DType::I8 || t == ir::DType::F4E2M1X2;
  };
  if (x.dtype != y.dtype && !(bytewise(x.dtype) && bytewise(y.dtype))) {
    throw UserError("aten.view.dtype from " + std::string(ir::dtype_name(x.dtype)) + " to " +
                    std::string(ir::dtype_name(y.dtype)) +
                    " is not supported (only between u8, i8 and f4e2m1x2)");
  }
  n.stmt(y.name + " = " + x.name);
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

// slice.Tensor: start and end clamped into 0..size as Python slicing does. `x[..]` of the slice.
std::string slice_region(NodeLowering& n) {
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
  return x.name + "[" + slices + "]";
}

// select.int: a single index drops the dim. `x[..]` of the selection.
std::string select_region(NodeLowering& n) {
  const TensorInfo x = n.tensor("self");
  const int64_t dim = norm_dim(n.integer("dim"), x.rank());
  int64_t index = n.integer("index");
  if (index < 0) index += x.shape[dim];
  std::string slices;
  for (int64_t d = 0; d < dim; ++d) slices += ":, ";
  return x.name + "[" + slices + std::to_string(index) + "]";
}

void slice_rule(NodeLowering& n) { n.stmt(n.out().name + " = " + slice_region(n)); }
void select_rule(NodeLowering& n) { n.stmt(n.out().name + " = " + select_region(n)); }

// select_copy.int / slice_copy.Tensor (make_fx's functionalized views, e.g. of an input updated
// in place): the view materialised, as view_copy is: a copy kernel over the region.
Rule region_copy(std::string (*region)(NodeLowering&)) {
  return [region](NodeLowering& n) {
    const TensorInfo& y = n.out();
    const TensorInfo v = n.temp("view", y.dtype, y.shape);
    n.stmt(v.name + " = " + region(n));
    const std::string at = "[" + box_index(y.rank(), kI) + "]";
    n.kernel("copy", box_loops(y.shape, kI), y.name + at, "=", v.name + at);
  };
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

}  // namespace

void register_view_rules(RuleTable& r) {
  for (const char* op : {"alias", "detach", "lift_fresh"}) {
    r[std::string("aten.") + op + ".default"] = copy_rule;
  }
  for (const char* op : {"clone", "lift_fresh_copy", "_to_copy"}) {
    r[std::string("aten.") + op + ".default"] = clone_rule;
  }
  for (const char* op : {"view.default", "_unsafe_view.default", "reshape.default",
                         "_reshape_alias.default", "unsqueeze.default", "squeeze.default",
                         "squeeze.dim", "squeeze.dims", "flatten.using_ints"}) {
    r[std::string("aten.") + op] = reshape_rule;
  }
  r["aten.view_copy.default"] = view_copy_rule;
  r["aten.view.dtype"] = view_dtype_rule;
  r["aten.expand.default"] = expand_rule;
  r["aten.t.default"] = [](NodeLowering& n) { transpose_dims(n, 0, 1); };
  r["aten.transpose.int"] = [](NodeLowering& n) {
    transpose_dims(n, n.integer("dim0"), n.integer("dim1"));
  };
  r["aten.permute.default"] = permute_rule;
  r["aten.slice.Tensor"] = slice_rule;
  r["aten.select.int"] = select_rule;
  r["aten.slice_copy.Tensor"] = region_copy(slice_region);
  r["aten.select_copy.int"] = region_copy(select_region);
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
  // The functionalised views: functionalisation (make_fx's trace of a program specialised on its
  // values, docs/capture.md) writes each view of the program as its `_copy` twin, which is how the
  // capture records the view, not work the program asked for. Each lowers as its view does (the
  // same argument names, the same rule), so a view costs what it costs in the program's own graph;
  // erring toward fewer bytes, no copy kernel is charged. (view_copy, slice_copy and select_copy
  // keep their copy kernel above: eager runs one, and their tests count it.)
  for (const auto& [copy, view] : std::initializer_list<std::pair<const char*, const char*>>{
           {"alias_copy.default", "alias.default"},
           {"detach_copy.default", "detach.default"},
           {"_reshape_alias_copy.default", "_reshape_alias.default"},
           {"unsqueeze_copy.default", "unsqueeze.default"},
           {"squeeze_copy.default", "squeeze.default"},
           {"squeeze_copy.dim", "squeeze.dim"},
           {"squeeze_copy.dims", "squeeze.dims"},
           {"expand_copy.default", "expand.default"},
           {"permute_copy.default", "permute.default"},
           {"t_copy.default", "t.default"},
           {"transpose_copy.int", "transpose.int"},
           {"split_copy.Tensor", "split.Tensor"},
           {"split_with_sizes_copy.default", "split_with_sizes.default"},
           {"unbind_copy.int", "unbind.int"}}) {
    r[std::string("aten.") + copy] = r.table().at(std::string("aten.") + view);
  }
}

}  // namespace solar::frontend
