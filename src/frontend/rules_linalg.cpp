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

}  // namespace

void register_linalg_rules(RuleTable& r) {
  r["aten.mm.default"] = mm_rule;
  r["aten.bmm.default"] = mm_rule;
  r["aten.addmm.default"] = [](NodeLowering& n) { addmm_rule(n, "mat1", "mat2"); };
  r["aten.baddbmm.default"] = [](NodeLowering& n) { addmm_rule(n, "batch1", "batch2"); };
  r["aten.linear.default"] = linear_rule;
  r["aten.convolution.default"] = convolution_rule;
}

}  // namespace solar::frontend
