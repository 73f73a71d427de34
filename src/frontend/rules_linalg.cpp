// Lowering rules for linear algebra: matrix products, linear layers and convolutions (forward
// and transposed). See docs/lowering.md.
#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "rules.h"
#include "solar/util/error.h"

namespace solar::frontend {

namespace {

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

// _scaled_mm(self [M, K], mat2 [K, N], scale_a, scale_b, bias, scale_result, out_dtype): a
// product of fp8 operands accumulated in f32, `acc[i, j] += self[i, k] * mat2[k, j]`, then
// `y = acc * scale_a * scale_b (+ bias)` in the output's dtype. Tensor-wise scales (one value
// each) or row-wise ones (scale_a [M, 1], scale_b [1, N]). Block-scaled operands (packed fp4
// with fp8 scales per 16 or 32 values, fp8 with scales per 128-blocks) and a scale_result (an
// fp8 output) are refused in one line.
std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t d = 0; d < shape.size(); ++d) s += (d ? ", " : "") + std::to_string(shape[d]);
  return s + "]";
}

void scaled_mm_rule(NodeLowering& n) {
  const TensorInfo& y = n.out();
  const TensorInfo a = n.tensor("self");
  const TensorInfo b = n.tensor("mat2");
  if (a.dtype == ir::DType::F4E2M1X2 || b.dtype == ir::DType::F4E2M1X2) {
    throw UserError(n.op() +
                    " of packed fp4 operands (block-scaled NVFP4/MXFP4) has no lowering "
                    "rule yet (fp8 operands with tensor-wise or row-wise scales have)");
  }
  if (a.rank() != 2 || b.rank() != 2) throw UserError(n.op() + ": operands of rank 2 only");
  const TensorInfo sa = n.tensor("scale_a");
  const TensorInfo sb = n.tensor("scale_b");
  const int64_t m = a.shape[0];
  const int64_t cols = b.shape[1];
  const auto numel = [](const TensorInfo& t) {
    int64_t e = 1;
    for (int64_t d : t.shape) e *= d;
    return e;
  };
  const bool tensor_wise = numel(sa) == 1 && numel(sb) == 1;
  const bool row_wise =
      sa.shape == std::vector<int64_t>{m, 1} && sb.shape == std::vector<int64_t>{1, cols};
  if (!tensor_wise && !row_wise) {
    throw UserError(n.op() + " with block-wise scales (scale_a " + shape_text(sa.shape) +
                    ", scale_b " + shape_text(sb.shape) +
                    ") has no lowering rule yet (tensor-wise or row-wise scales have)");
  }
  if (n.has("scale_result")) {
    throw UserError(n.op() + " with a scale_result (an fp8 output) has no lowering rule yet");
  }
  const TensorInfo acc = n.temp("acc", ir::DType::F32, y.shape);
  contract(n, acc, a, b.name + "[k, " + kI + "1]", a.shape[1]);
  const auto scale = [&](const TensorInfo& t, const std::string& key) {
    if (numel(t) != 1) return read(n, key, y);
    std::string at;  // its one element: t[0, 0, ..]
    for (int d = 0; d < t.rank(); ++d) at += d == 0 ? "0" : ", 0";
    return t.name + "[" + at + "]";
  };
  std::string rhs = at_box(acc) + " * " + scale(sa, "scale_a") + " * " + scale(sb, "scale_b");
  if (n.has("bias")) rhs += " + " + read(n, "bias", y);
  pointwise(n, rhs);
}

}  // namespace

void register_linalg_rules(RuleTable& r) {
  r["aten.mm.default"] = mm_rule;
  r["aten.bmm.default"] = mm_rule;
  r["aten.addmm.default"] = [](NodeLowering& n) { addmm_rule(n, "mat1", "mat2"); };
  r["aten.baddbmm.default"] = [](NodeLowering& n) { addmm_rule(n, "batch1", "batch2"); };
  r["aten.linear.default"] = linear_rule;
  r["aten._scaled_mm.default"] = scaled_mm_rule;
  r["aten.convolution.default"] = convolution_rule;
}

}  // namespace solar::frontend
