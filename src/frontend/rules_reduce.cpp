// Lowering rules for reductions (sum, mean, any/all, logsumexp, softmax, with indices), scans,
// norms, layer/batch/group norm, pooling (max, average, adaptive) and dropout. See docs/lowering.md
// ("Reductions and normalisation", "Dropout").
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "rules.h"
#include "solar/util/error.h"

namespace solar::frontend {
namespace {

// The name of a repeat index of the node: unique, as node outputs are, and never a loop index
// (those start with the index prefix's underscores).
std::string repeat_index(NodeLowering& n, const std::string& hint) {
  return n.out().name + "_" + hint;
}

// cumsum (`op` "+") and cumprod ("*") along `dim`: scan() (a 0-d tensor is copied). With a
// `dtype` other than the input's, the input is converted first, as PyTorch does (a float input
// of an integer cumsum is truncated element by element, then summed: cumsum([0.6, 0.6], dtype
// int32) is [0, 0], not [0, 1]).
Rule scan_rule(const std::string& op) {
  return [op](NodeLowering& n) {
    TensorInfo x = n.tensor("self");
    const TensorInfo& y = n.out();
    if (x.dtype != y.dtype && x.rank() > 0) {
      const TensorInfo converted = n.temp("converted", y.dtype, x.shape);
      n.stmt(converted.name + " = " + x.name);
      x = converted;
    }
    if (x.rank() == 0) return pointwise(n, x.name + "[]");
    scan(n, x, y, norm_dim(n.integer("dim"), x.rank()), false, op);
  };
}

// The reduced dims of an argmax-style `dim` (a single optional int: absent reduces all).
std::vector<bool> single_dim(NodeLowering& n, int rank) {
  std::vector<bool> reduced(rank, !n.has("dim"));
  if (n.has("dim")) reduced[norm_dim(n.integer("dim"), rank)] = true;
  return reduced;
}

// The row-major flat index, over the reduced dims only, of a point of x's box.
std::string reduced_flat_index(const TensorInfo& x, const std::vector<bool>& reduced) {
  std::string flat;
  for (int d = 0; d < x.rank(); ++d) {
    if (!reduced[d]) continue;
    const std::string i = kI + std::to_string(d);
    flat = flat.empty() ? i : "(" + flat + ") * " + std::to_string(x.shape[d]) + " + " + i;
  }
  return flat.empty() ? "0" : flat;
}

// max.dim / min.dim (values and indices), argmax / argmin (indices), max / min (all): `max=`
// (`min=`) over the reduced dims, then the first index where x equals it (`min=` of the
// row-major index within the reduced dims, as PyTorch returns).
Rule extremum_rule(const std::string& assign, bool values, bool indices) {
  return [assign, values, indices](NodeLowering& n) {
    const TensorInfo x = n.tensor("self");
    const std::vector<bool> reduced = single_dim(n, x.rank());
    size_t out = 0;
    const TensorInfo best = values ? n.out(out++) : n.temp("best", x.dtype, n.out().shape);
    reduce_into(n, best, x, reduced, assign, at_box(x));
    if (!indices) return;
    first_index_of(n, n.out(out), x, reduced, best);
  };
}

// linalg_vector_norm (`ord`) and norm.ScalarOpt_dim (`p`) over `dim`: 2: sqrt(sum x^2);
// inf / -inf: max / min |x|; 0: the count of nonzeros; 1: sum |x|; p: (sum |x|^p)^(1/p).
Rule norm_rule(const std::string& ord_key) {
  return [ord_key](NodeLowering& n) {
    const TensorInfo x = n.tensor("self");
    const TensorInfo& y = n.out();
    const double p = n.number_or(ord_key, 2.0);
    const std::vector<bool> reduced = reduced_dims(n, x.rank());
    const std::string ax = "abs(" + at_box(x) + ")";
    if (std::isinf(p)) return reduce_into(n, y, x, reduced, p > 0 ? "max=" : "min=", ax);
    if (p == 0.0) return reduce_into(n, y, x, reduced, "+=", "(" + at_box(x) + " != 0.0)");
    if (p == 1.0) return reduce_into(n, y, x, reduced, "+=", ax);
    const TensorInfo s = n.temp("sum", acc_dtype(x), y.shape);
    if (p == 2.0) {
      reduce_into(n, s, x, reduced, "+=", at_box(x) + " * " + at_box(x));
      return pointwise(n, "sqrt(" + at_box(s) + ")");
    }
    reduce_into(n, s, x, reduced, "+=", "pow(" + ax + ", " + lit(p) + ")");
    pointwise(n, "pow(" + at_box(s) + ", " + lit(1.0 / p) + ")");
  };
}

// var.correction and std.correction over `dim`: the mean (kept dims), the sum of squared
// deviations, divided by count - correction (default 1); std takes the square root.
Rule var_rule(bool root) {
  return [root](NodeLowering& n) {
    const TensorInfo x = n.tensor("self");
    const TensorInfo& y = n.out();
    const std::vector<bool> reduced = reduced_dims(n, x.rank());
    int64_t count = 1;
    std::vector<int64_t> kept = x.shape;
    for (int d = 0; d < x.rank(); ++d) {
      if (!reduced[d]) continue;
      count *= x.shape[d];
      kept[d] = 1;
    }
    const TensorInfo sum = n.temp("sum", acc_dtype(x), kept);
    reduce_into(n, sum, x, reduced, "+=", at_box(x));
    const TensorInfo mean = n.temp("mean", acc_dtype(x), kept);
    n.kernel("mean", box_loops(kept, kI), at_box(mean), "=",
             at_box(sum) + " / " + std::to_string(count));
    const std::string dev = "(" + at_box(x) + " - " + kept_read(mean, x, reduced) + ")";
    const TensorInfo sq = n.temp("sqsum", acc_dtype(x), y.shape);
    reduce_into(n, sq, x, reduced, "+=", dev + " * " + dev);
    const double divisor = static_cast<double>(count) - n.number_or("correction", 1.0);
    const std::string v = at_box(sq) + " / " + lit(std::max(divisor, 0.0));
    pointwise(n, root ? "sqrt(" + v + ")" : v);
  };
}

// native_group_norm(input, weight, bias, N, C, HxW, group, eps): x viewed as [N, G, C/G, HxW],
// mean and biased variance over the last two; outputs out, mean [N, G], rstd [N, G].
void group_norm_rule(NodeLowering& n) {
  const TensorInfo x = n.tensor("input");
  const TensorInfo& y = n.out();
  const int64_t batch = n.integer("N");
  const int64_t channels = n.integer("C");
  const int64_t hw = n.integer("HxW");
  const int64_t groups = n.integer("group");
  if (groups <= 0 || channels % groups != 0 || batch * channels * hw != x.numel()) {
    throw UserError("group norm of " + std::to_string(x.numel()) + " elements with N=" +
                    std::to_string(batch) + ", C=" + std::to_string(channels) +
                    ", HxW=" + std::to_string(hw) + ", group=" + std::to_string(groups));
  }
  const int64_t cg = channels / groups;
  const std::vector<int64_t> shape4{batch, groups, cg, hw};
  const TensorInfo xr = n.temp("x", x.dtype, shape4);
  n.stmt(xr.name + " = reshape(" + x.name + ")");
  const std::vector<int64_t> stat_shape{batch, groups};
  const bool stats_out = n.outputs() == 3 && n.out(1).shape == stat_shape;
  const TensorInfo mean = stats_out ? n.out(1) : n.temp("mean", acc_dtype(x), stat_shape);
  const TensorInfo var = n.temp("var", acc_dtype(x), stat_shape);
  moments(n, xr, {false, false, true, true}, mean, var, cg * hw);
  const TensorInfo rstd = stats_out ? n.out(2) : n.temp("rstd", acc_dtype(x), stat_shape);
  n.kernel("rstd", box_loops(stat_shape, kI), at_box(rstd), "=",
           "rsqrt(" + at_box(var) + " + " + lit(n.number_or("eps", 1e-5)) + ")");
  const std::string c = std::to_string(cg) + "*" + kI + "1 + " + kI + "2";
  std::string e = "(" + at_box(xr) + " - " + mean.name + "[" + kI + "0, " + kI + "1]) * " +
                  rstd.name + "[" + kI + "0, " + kI + "1]";
  if (n.has("weight")) e += " * " + n.tensor("weight").name + "[" + c + "]";
  if (n.has("bias")) e += " + " + n.tensor("bias").name + "[" + c + "]";
  const TensorInfo yr = n.temp("y", y.dtype, shape4);
  n.kernel("norm", box_loops(shape4, kI), at_box(yr), "=", e);
  n.stmt(y.name + " = reshape(" + yr.name + ")");
}

// _adaptive_avg_pool{2,3}d: output o of a spatial dim of input size I and output size O averages
// the window floor(o*I/O) .. ceil((o+1)*I/O). When every O divides its I, the windows are a
// regular pool (kernel = stride = I/O); otherwise one kernel per output position (a repeat over
// the spatial output positions, whose windows are then constant).
void adaptive_avg_rule(NodeLowering& n) {
  const TensorInfo x = n.tensor("self");
  const TensorInfo& y = n.out();
  const std::vector<int64_t> size = n.ints_or("output_size", {});
  const size_t sp = size.size();
  const size_t lead = x.rank() - sp;
  if (sp == 0 || sp > static_cast<size_t>(x.rank())) throw UserError("bad output_size");
  bool regular = true;
  for (size_t d = 0; d < sp; ++d) {
    regular = regular && size[d] > 0 && x.shape[lead + d] % size[d] == 0;
  }
  std::string lead_loops;
  std::string lead_index;
  for (size_t d = 0; d < lead; ++d) {
    lead_loops += kI + std::to_string(d) + " in 0.." + std::to_string(x.shape[d]) + ", ";
    lead_index += kI + std::to_string(d) + ", ";
  }
  const TensorInfo sum = n.temp("sum", acc_dtype(x), y.shape);
  if (regular) {
    std::string loops = box_loops(y.shape, kI);
    std::string index = lead_index;
    int64_t count = 1;
    for (size_t d = 0; d < sp; ++d) {
      const int64_t k = x.shape[lead + d] / size[d];
      count *= k;
      loops += ", k" + std::to_string(d) + " in 0.." + std::to_string(k);
      index += (d ? ", " : "") + std::to_string(k) + "*" + kI + std::to_string(lead + d) + " + k" +
               std::to_string(d);
    }
    n.kernel("pool", loops, at_box(sum), "+=", x.name + "[" + index + "]");
    return pointwise(n, at_box(sum) + " / " + std::to_string(count));
  }
  std::string out_index = lead_index;
  std::string in_index = lead_index;
  std::string loops = lead_loops;
  std::string count;
  for (size_t d = 0; d < sp; ++d) {
    const std::string o = repeat_index(n, "o" + std::to_string(d));
    const std::string in = std::to_string(x.shape[lead + d]);
    const std::string out = std::to_string(size[d]);
    const std::string start = "(" + o + " * " + in + ") / " + out;
    const std::string end = "((" + o + " + 1) * " + in + " + " + out + " - 1) / " + out;
    n.stmt("repeat " + o + " in 0.." + out + " {");
    const std::string k = "k" + std::to_string(d);
    loops += (d ? ", " : "") + k + " in 0.." + end + " - " + start;
    out_index += (d ? ", " : "") + o;
    in_index += (d ? ", " : "") + start + " + " + k;
    // In a value expression `/` is true division: floor() makes it the integer bounds' division.
    count += (d ? " * (" : "(") + std::string("floor(") + end + ") - floor(" + start + "))";
  }
  n.kernel("pool", loops, sum.name + "[" + out_index + "]", "+=", x.name + "[" + in_index + "]");
  const std::string avg_loops =
      lead_loops.empty() ? lead_loops : lead_loops.substr(0, lead_loops.size() - 2);  // ", "
  n.kernel("avg", avg_loops, y.name + "[" + out_index + "]", "=",
           sum.name + "[" + out_index + "] / (" + count + ")");
  for (size_t d = 0; d < sp; ++d) n.stmt("}");
}

// native_dropout(input, p, train): the Weyl-sequence mask of docs/lowering.md ("Dropout"):
// element i (row-major) is kept iff frac((i + 1) * 0.6180339887498949) >= p; kept elements are
// scaled by 1 / (1 - p). The mask output is computed from the same formula (never read back),
// and only when it is needed (read by another node, or a graph output).
void dropout_rule(NodeLowering& n) {
  const TensorInfo x = n.tensor("input");
  const TensorInfo& y = n.out();
  const double p = n.number("p");
  const bool train = n.flag_or("train", true);
  const bool mask_read = n.outputs() >= 2 && n.output_needed(1);
  if (!train || p == 0.0) {
    n.stmt(y.name + " = " + x.name);
    if (mask_read) n.kernel("mask", box_loops(x.shape, kI), at_box(n.out(1)), "=", "1.0");
    return;
  }
  if (p >= 1.0) {
    pointwise(n, "0.0");
    if (mask_read) n.kernel("mask", box_loops(x.shape, kI), at_box(n.out(1)), "=", "0.0");
    return;
  }
  std::string flat;
  int64_t stride = 1;
  for (int d = x.rank() - 1; d >= 0; --d) {
    flat = kI + std::to_string(d) + (stride == 1 ? "" : " * " + std::to_string(stride)) +
           (flat.empty() ? "" : " + " + flat);
    stride *= x.shape[d];
  }
  // frac(v) as `v % 1.0`: for v >= 0 the floor modulo is v - floor(v), exactly.
  const std::string v =
      "((" + (flat.empty() ? std::string("0") : flat) + " + 1) * 0.6180339887498949)";
  const std::string kept = "(" + v + " % 1.0 >= " + lit(p) + ")";
  pointwise(n, "select(" + kept + ", " + at_box(x) + " * " + lit(1.0 / (1.0 - p)) + ", 0.0)");
  if (mask_read) n.kernel("mask", box_loops(x.shape, kI), at_box(n.out(1)), "=", kept);
}

}  // namespace

void first_index_of(NodeLowering& n, const TensorInfo& idx, const TensorInfo& x,
                    const std::vector<bool>& reduced, const TensorInfo& best) {
  reduce_into(n, idx, x, reduced, "min=",
              "select(" + at_box(x) + " == " + kept_read(best, x, reduced) + ", " +
                  reduced_flat_index(x, reduced) + ", inf)");
}

void scan(NodeLowering& n, const TensorInfo& x, const TensorInfo& y, int64_t dim, bool reverse,
          const std::string& op) {
  const int64_t len = x.shape.at(dim);
  if (len == 0) return;
  std::vector<int64_t> row = x.shape;
  row.erase(row.begin() + dim);
  const std::string t = y.name + "_scan";  // the repeat index (a name no rule gives a tensor)
  auto index = [&](const std::string& pos) {
    std::string s;
    for (int d = 0, r = 0; d < x.rank(); ++d) {
      s += (d ? ", " : "") + (d == dim ? pos : kI + std::to_string(r++));
    }
    return "[" + s + "]";
  };
  const std::string first = std::to_string(reverse ? len - 1 : 0);
  n.kernel("first", box_loops(row, kI), y.name + index(first), "=", x.name + index(first));
  if (len == 1) return;
  // step t = 1..len-1 writes position t (reverse: len - 1 - t) from its predecessor
  const std::string pos = reverse ? std::to_string(len - 1) + " - " + t : t;
  const std::string a = y.name + index(pos + (reverse ? " + 1" : " - 1"));
  const std::string b = x.name + index(pos);
  const std::string value =
      op == "+" || op == "*" ? a + " " + op + " " + b : op + "(" + a + ", " + b + ")";
  n.stmt("repeat " + t + " in 1.." + std::to_string(len) + " {");
  n.kernel("step", box_loops(row, kI), y.name + index(pos), "=", value);
  n.stmt("}");
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

}  // namespace

void register_reduction_rules(RuleTable& r) {
  r["aten.cumsum.default"] = scan_rule("+");
  r["aten.cumprod.default"] = scan_rule("*");
  r["aten.max.dim"] = extremum_rule("max=", true, true);
  r["aten.min.dim"] = extremum_rule("min=", true, true);
  r["aten.argmax.default"] = extremum_rule("max=", false, true);
  r["aten.argmin.default"] = extremum_rule("min=", false, true);
  r["aten.max.default"] = extremum_rule("max=", true, false);
  r["aten.min.default"] = extremum_rule("min=", true, false);
  r["aten.linalg_vector_norm.default"] = norm_rule("ord");
  r["aten.norm.ScalarOpt_dim"] = norm_rule("p");
  r["aten.var.correction"] = var_rule(false);
  r["aten.std.correction"] = var_rule(true);
  r["aten.native_group_norm.default"] = group_norm_rule;
  r["aten._adaptive_avg_pool2d.default"] = adaptive_avg_rule;
  r["aten._adaptive_avg_pool3d.default"] = adaptive_avg_rule;
  r["aten.native_dropout.default"] = dropout_rule;
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
  r["aten.max_pool2d_with_indices.default"] = max_pool_rule(2);
  r["aten.max_pool3d_with_indices.default"] = max_pool_rule(3);
  r["aten.avg_pool2d.default"] = avg_pool_rule(2);
  r["aten.avg_pool3d.default"] = avg_pool_rule(3);
}

}  // namespace solar::frontend
