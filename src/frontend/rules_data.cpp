// Rules for data-dependent operators: random draws (data sources), bitwise operations and
// shifts, sorting, top-k and histograms, and as_strided views. See docs/lowering.md ("Random
// draws", "Bitwise operations", "Sorting and top-k", "as_strided").
#include <string>
#include <vector>

#include "rules.h"
#include "solar/util/error.h"

namespace solar::frontend {
namespace {

// ---- random draws ------------------------------------------------------------------------------

// A random op: its first output is a random draw (NodeLowering::random_output). Its values are
// the framework's (SOLAR cannot reproduce a framework's generator); the analysis generates it
// on chip. The op's tensor arguments (bernoulli's probabilities, normal's means) are not read:
// leaving out a read only makes the bound smaller.
void random_rule(NodeLowering& n) { n.random_output(0); }

// ---- bitwise operations ------------------------------------------------------------------------

// `self OP other` of integers or bools: on bools the logical form (and, or, xor as !=), else
// the IR's bitwise function on 64-bit integers.
Rule bitwise(const std::string& logical, const std::string& fn) {
  return [logical, fn](NodeLowering& n) {
    const std::string a = read(n, "self", n.out());
    const std::string b = read(n, "other", n.out());
    if (n.out().dtype == ir::DType::Bool) {
      pointwise(n, "(" + a + " " + logical + " " + b + ")");
    } else {
      pointwise(n, fn + "(" + a + ", " + b + ")");
    }
  };
}

// `self << other`, `self >> other` (arithmetic, as PyTorch's signed integers).
Rule shift(const std::string& fn) {
  return [fn](NodeLowering& n) {
    pointwise(n, fn + "(" + read(n, "self", n.out()) + ", " + read(n, "other", n.out()) + ")");
  };
}

// ---- as_strided
// ----------------------------------------------------------------------------------

// as_strided(self, size, stride, storage_offset): y[i..] = flat(self)[offset + sum_d stride_d i_d],
// an affine read of self's elements in row-major order (the capture's tensors are contiguous).
void as_strided_rule(NodeLowering& n) {
  const TensorInfo x = n.tensor("self");
  const TensorInfo& y = n.out();
  const std::vector<int64_t> size = n.ints_or("size", {});
  const std::vector<int64_t> stride = n.ints_or("stride", {});
  const int64_t offset = n.integer_or("storage_offset", 0);
  if (size != y.shape || stride.size() != size.size()) {
    throw UserError("as_strided: size and stride must give the output's shape");
  }
  int64_t last = offset;
  int64_t first = offset;
  for (size_t d = 0; d < size.size(); ++d) {
    if (size[d] == 0) return;  // no element: nothing to write
    (stride[d] >= 0 ? last : first) += stride[d] * (size[d] - 1);
  }
  if (first < 0 || last >= x.numel()) {
    throw UserError("as_strided reads element " + std::to_string(first < 0 ? first : last) +
                    " of a tensor of " + std::to_string(x.numel()) + " elements");
  }
  const TensorInfo flat = n.temp("flat", x.dtype, {x.numel()});
  n.stmt(flat.name + " = reshape(" + x.name + ")");
  std::string index = std::to_string(offset);
  for (size_t d = 0; d < size.size(); ++d) {
    if (stride[d] == 0) continue;
    index += " + " + std::to_string(stride[d]) + " * " + kI + std::to_string(d);
  }
  pointwise(n, flat.name + "[" + index + "]");
}

// ---- sorting and top-k
// ---------------------------------------------------------------------------

// The full slice of every dimension but `dim`, and `range` along it: ":, :, 0:4".
std::string slices_along(int rank, int64_t dim, const std::string& range) {
  std::string s;
  for (int d = 0; d < rank; ++d) s += (d ? ", " : "") + (d == dim ? range : std::string(":"));
  return s;
}

// The sorting permutation of x along dim into an i64 tensor: output `index_out` of the node
// when it is an i64 output that is needed, else a temporary.
// `order = argsort(x, dim=.., descending=..)`.
void argsort_stmt(NodeLowering& n, const TensorInfo& order, const TensorInfo& x, int64_t dim,
                  bool descending) {
  n.stmt(order.name + " = argsort(" + x.name + ", dim=" + std::to_string(dim) +
         ", descending=" + (descending ? "1" : "0") + ")");
}

TensorInfo argsort_into(NodeLowering& n, const TensorInfo& x, int64_t dim, bool descending,
                        size_t index_out) {
  const bool direct = n.outputs() > index_out && n.out(index_out).dtype == ir::DType::I64 &&
                      n.out(index_out).shape == x.shape && n.output_needed(index_out);
  const TensorInfo order = direct ? n.out(index_out) : n.temp("order", ir::DType::I64, x.shape);
  argsort_stmt(n, order, x, dim, descending);
  if (!direct && n.outputs() > index_out && n.output_needed(index_out)) {
    n.stmt(n.out(index_out).name + " = " + order.name);  // another integer dtype: a copy
  }
  return order;
}

// sort(self, dim, descending) -> (values, indices); sort.stable(self, stable, dim, descending).
void sort_rule(NodeLowering& n) {
  const TensorInfo x = n.tensor("self");
  const int64_t dim = norm_dim(n.integer_or("dim", -1), x.rank());
  if (x.rank() == 0) {
    n.stmt(n.out(0).name + " = " + x.name);
    if (n.output_needed(1)) n.kernel("index", "", n.out(1).name + "[]", "=", "0");
    return;
  }
  const TensorInfo order = argsort_into(n, x, dim, n.flag_or("descending", false), 1);
  n.stmt(n.out(0).name + " = gather(" + x.name + ", " + order.name +
         ", dim=" + std::to_string(dim) + ")");
}

// argsort(self, dim, descending); argsort.stable(self, stable, dim, descending).
void argsort_rule(NodeLowering& n) {
  const TensorInfo x = n.tensor("self");
  if (x.rank() == 0) {
    n.kernel("index", "", n.out().name + "[]", "=", "0");
    return;
  }
  argsort_into(n, x, norm_dim(n.integer_or("dim", -1), x.rank()), n.flag_or("descending", false),
               0);
}

// topk(self, k, dim, largest, sorted) -> (values, indices): the first k positions of the
// sorting permutation (descending for the largest), and the values there. Ties go to the lower
// position (a stable sort); PyTorch leaves their order unspecified.
void topk_rule(NodeLowering& n) {
  const TensorInfo x = n.tensor("self");
  const int64_t k = n.integer("k");
  if (x.rank() == 0) {
    if (k != 1 && k != 0) throw UserError("topk of a scalar takes k = 0 or 1");
    n.stmt(n.out(0).name + " = " + x.name);
    if (n.output_needed(1)) n.kernel("index", "", n.out(1).name + "[]", "=", "0");
    return;
  }
  const int64_t dim = norm_dim(n.integer_or("dim", -1), x.rank());
  if (k < 0 || k > x.shape[static_cast<size_t>(dim)]) {
    throw UserError("k = " + std::to_string(k) + " is out of range for a dimension of size " +
                    std::to_string(x.shape[static_cast<size_t>(dim)]));
  }
  if (k == 0) return;  // empty outputs
  const TensorInfo order = n.temp("order", ir::DType::I64, x.shape);
  argsort_stmt(n, order, x, dim, n.flag_or("largest", true));
  std::vector<int64_t> top_shape = x.shape;
  top_shape[static_cast<size_t>(dim)] = k;
  const std::string first_k =
      order.name + "[" + slices_along(x.rank(), dim, "0:" + std::to_string(k)) + "]";
  const bool direct = n.out(1).dtype == ir::DType::I64;
  const TensorInfo top = direct ? n.out(1) : n.temp("top", ir::DType::I64, top_shape);
  n.stmt(top.name + " = " + first_k);
  if (!direct && n.output_needed(1)) n.stmt(n.out(1).name + " = " + top.name);
  n.stmt(n.out(0).name + " = gather(" + x.name + ", " + top.name + ", dim=" + std::to_string(dim) +
         ")");
}

// ---- histograms
// ----------------------------------------------------------------------------------

// histc(self, bins, min, max): counts of self's elements in `bins` equal bins over [min, max]
// (min == max: the data's own minimum and maximum, widened by 1 each way when they are equal);
// elements outside the range (and NaN) are not counted. Each element's bin, floor((x - min) *
// bins / (max - min)) (max itself in the last bin), is scattered with reduce=add into bins + 1
// counters, the last one collecting what is not counted.
void histc_rule(NodeLowering& n) {
  const TensorInfo x = n.tensor("self");
  const TensorInfo& y = n.out();
  const int64_t bins = n.integer_or("bins", 100);
  if (bins <= 0) throw UserError("histc needs bins > 0");
  double lo_value = n.number_or("min", 0.0);
  double hi_value = n.number_or("max", 0.0);
  if (lo_value > hi_value) throw UserError("histc needs min <= max");
  const ir::DType acc = acc_dtype(x);
  const TensorInfo flat = n.temp("flat", x.dtype, {x.numel()});
  n.stmt(flat.name + " = reshape(" + x.name + ")");
  const std::string v = flat.name + "[i0]";
  std::string lo = lit(lo_value);
  std::string width = lit(hi_value - lo_value);
  std::string hi = lit(hi_value);
  if (lo_value == hi_value) {  // the data's range
    const TensorInfo mn = n.temp("min", acc, {});
    const TensorInfo mx = n.temp("max", acc, {});
    const TensorInfo range = n.temp("range", acc, {2});
    const std::string loops = "i0 in 0.." + std::to_string(x.numel());
    n.kernel("min", loops, mn.name + "[]", "min=", v);
    n.kernel("max", loops, mx.name + "[]", "max=", v);
    n.kernel("lo", "", range.name + "[0]", "=",
             "select(" + mn.name + "[] == " + mx.name + "[], " + mn.name + "[] - 1.0, " + mn.name +
                 "[])");
    n.kernel("hi", "", range.name + "[1]", "=",
             "select(" + mn.name + "[] == " + mx.name + "[], " + mx.name + "[] + 1.0, " + mx.name +
                 "[])");
    lo = range.name + "[0]";
    hi = range.name + "[1]";
    width = "(" + hi + " - " + lo + ")";
  }
  const TensorInfo bin = n.temp("bin", ir::DType::I64, {x.numel()});
  const std::string b = std::to_string(bins);
  n.kernel("bin", "i0 in 0.." + std::to_string(x.numel()), bin.name + "[i0]", "=",
           "select(" + v + " >= " + lo + " && " + v + " <= " + hi + ", min(floor((" + v + " - " +
               lo + ") * " + b + ".0 / " + width + "), " + b + ".0 - 1.0), " + b + ".0)");
  const TensorInfo ones = n.temp("one", y.dtype, {x.numel()});
  n.kernel("one", "i0 in 0.." + std::to_string(x.numel()), ones.name + "[i0]", "=", "1.0");
  const TensorInfo zero = n.temp("zero", y.dtype, {bins + 1});
  const TensorInfo counts = n.temp("counts", y.dtype, {bins + 1});
  n.stmt(counts.name + " = scatter(" + zero.name + ", " + bin.name + ", " + ones.name +
         ", dim=0, reduce=add)");
  n.stmt(y.name + " = " + counts.name + "[0:" + b + "]");
}

}  // namespace

void register_data_rules(RuleTable& r) {
  for (const char* op : {"aten.rand.default",         "aten.rand.generator",
                         "aten.randn.default",        "aten.randn.generator",
                         "aten.randint.default",      "aten.randint.low",
                         "aten.randint.generator",    "aten.randint.low_generator",
                         "aten.rand_like.default",    "aten.randn_like.default",
                         "aten.randint_like.default", "aten.randint_like.low_dtype",
                         "aten.bernoulli.default",    "aten.bernoulli.p",
                         "aten.bernoulli.Tensor",     "aten.normal.Tensor_float",
                         "aten.normal.float_Tensor",  "aten.normal.Tensor_Tensor",
                         "aten.normal.float_float",   "aten.normal_functional.default",
                         "aten.uniform.default",      "aten.randperm.default",
                         "aten.multinomial.default",  "aten.exponential.default",
                         "aten.geometric.default",    "aten.log_normal.default",
                         "aten.cauchy.default",       "aten.random.default",
                         "aten.random.from",          "aten.random.to"}) {
    r[op] = random_rule;
  }
  for (const char* overload : {"Tensor", "Scalar", "Scalar_Tensor"}) {
    const std::string o = overload;
    r["aten.bitwise_and." + o] = bitwise("&&", "bitand");
    r["aten.bitwise_or." + o] = bitwise("||", "bitor");
    r["aten.bitwise_xor." + o] = bitwise("!=", "bitxor");
  }
  for (const char* overload : {"Tensor", "Scalar"}) {
    const std::string o = overload;
    r["aten.__and__." + o] = bitwise("&&", "bitand");
    r["aten.__or__." + o] = bitwise("||", "bitor");
    r["aten.__xor__." + o] = bitwise("!=", "bitxor");
    r["aten.__lshift__." + o] = shift("shl");
    r["aten.__rshift__." + o] = shift("shr");
  }
  for (const char* overload : {"Tensor", "Tensor_Scalar", "Scalar_Tensor"}) {
    const std::string o = overload;
    r["aten.bitwise_left_shift." + o] = shift("shl");
    r["aten.bitwise_right_shift." + o] = shift("shr");
  }
  r["aten.as_strided.default"] = as_strided_rule;
  r["aten.as_strided_copy.default"] = as_strided_rule;
  r["aten.sort.default"] = sort_rule;
  r["aten.sort.stable"] = sort_rule;
  r["aten.argsort.default"] = argsort_rule;
  r["aten.argsort.stable"] = argsort_rule;
  r["aten.topk.default"] = topk_rule;
  r["aten.histc.default"] = histc_rule;
}

}  // namespace solar::frontend
