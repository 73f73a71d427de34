// Lowering rules of the backward operators that a training step's joint graph keeps whole
// (docs/training.md): Core ATen has no decomposition for them. Every other backward op
// (threshold_backward, native_layer_norm_backward, gelu_backward, ...) is decomposed by the
// capture into ops that have rules.
#include <cmath>
#include <string>
#include <vector>

#include "rules.h"
#include "solar/util/error.h"

namespace solar::frontend {
namespace {

// "i0, i1" for the spatial loops named `prefix` + d, d in 0..sp.
std::string spatial(const std::string& prefix, size_t sp) {
  std::string s;
  for (size_t d = 0; d < sp; ++d) s += (d ? ", " : "") + prefix + std::to_string(d);
  return s;
}

// convolution_backward(grad_output, input, weight, bias_sizes, stride, padding, dilation,
// transposed, output_padding, groups, output_mask) -> (grad_input, grad_weight, grad_bias) of a
// forward (not transposed) convolution, 1-d to 3-d, any groups:
//   grad_input:  the transposed convolution of grad_output by the weight (conv_transposed): the
//                forward's MACs;
//   grad_weight: gw[OCg*g + oc, ic, k..] += xp[b, ICg*g + ic, s*o + d*k..] * gy[b, OCg*g + oc,
//                o..] over the zero-padded input: the forward's MACs;
//   grad_bias:   gb[c] += gy[b, c, o..].
// An output that output_mask leaves out is null in the capture and not computed.
void convolution_backward_rule(NodeLowering& n) {
  const TensorInfo gy = n.tensor("grad_output");
  const TensorInfo x = n.tensor("input");
  const TensorInfo w = n.tensor("weight");
  if (n.flag_or("transposed", false)) {
    throw UserError("the backward of a transposed convolution has no rule yet");
  }
  const size_t sp = static_cast<size_t>(x.rank()) - 2;
  const std::vector<int64_t> s = per_dim(n, "stride", sp, {1});
  const std::vector<int64_t> p = per_dim(n, "padding", sp, {0});
  const std::vector<int64_t> dl = per_dim(n, "dilation", sp, {1});
  const int64_t groups = n.integer_or("groups", 1);
  const auto wanted = [&](size_t i) {
    return n.outputs() > i && !n.out(i).name.empty() && n.output_needed(i);
  };
  if (wanted(0)) conv_transposed(n, n.out(0), gy, w, s, p, dl, groups);
  if (wanted(1)) {
    const TensorInfo& gw = n.out(1);
    const int64_t icg = w.shape[1];
    const int64_t ocg = w.shape[0] / groups;
    std::vector<int64_t> need(sp);
    for (size_t d = 0; d < sp; ++d) {
      need[d] = (gy.shape[2 + d] - 1) * s[d] + dl[d] * (w.shape[2 + d] - 1) + 1;
    }
    const TensorInfo xp = pad_spatial(n, x, p, need, "0.0");
    std::string loops = "g in 0.." + std::to_string(groups) + ", oc in 0.." + std::to_string(ocg) +
                        ", ic in 0.." + std::to_string(icg);
    std::string x_index;
    for (size_t d = 0; d < sp; ++d) {
      loops += ", k" + std::to_string(d) + " in 0.." + std::to_string(w.shape[2 + d]);
    }
    loops += ", b in 0.." + std::to_string(x.shape[0]);
    for (size_t d = 0; d < sp; ++d) {
      const std::string o = "o" + std::to_string(d);
      loops += ", " + o + " in 0.." + std::to_string(gy.shape[2 + d]);
      x_index += ", " + std::to_string(s[d]) + "*" + o + " + " + std::to_string(dl[d]) + "*k" +
                 std::to_string(d);
    }
    const std::string oc = std::to_string(ocg) + "*g + oc";
    n.kernel("dweight", loops, gw.name + "[" + oc + ", ic, " + spatial("k", sp) + "]", "+=",
             xp.name + "[b, " + std::to_string(icg) + "*g + ic" + x_index + "] * " + gy.name +
                 "[b, " + oc + ", " + spatial("o", sp) + "]");
  }
  if (wanted(2)) {
    const TensorInfo& gb = n.out(2);
    std::string loops =
        "c in 0.." + std::to_string(gy.shape[1]) + ", b in 0.." + std::to_string(gy.shape[0]);
    for (size_t d = 0; d < sp; ++d) {
      loops += ", o" + std::to_string(d) + " in 0.." + std::to_string(gy.shape[2 + d]);
    }
    n.kernel("dbias", loops, gb.name + "[c]", "+=", gy.name + "[b, c, " + spatial("o", sp) + "]");
  }
}

// max_pool2d_with_indices_backward(grad_output, self, ..., indices): PyTorch zeroes the input's
// gradient and adds each output element's gradient at the position its index names (the flat
// index within its H x W plane): a zero fill (one store per element), then
// `scatter(zeros, indices, grad_output, dim=1, reduce=add)` over the planes viewed flat.
void max_pool2d_backward_rule(NodeLowering& n) {
  const TensorInfo gy = n.tensor("grad_output");
  const TensorInfo idx = n.tensor("indices");
  const TensorInfo& gx = n.out();
  const int r = gx.rank();
  int64_t planes = 1;
  for (int d = 0; d < r - 2; ++d) planes *= gx.shape[d];
  const int64_t in_plane = gx.shape[r - 2] * gx.shape[r - 1];
  const int64_t out_plane = gy.shape[r - 2] * gy.shape[r - 1];
  const TensorInfo zeros = n.temp("zeros", gx.dtype, {planes, in_plane});
  n.kernel("zero", "p in 0.." + std::to_string(planes) + ", q in 0.." + std::to_string(in_plane),
           zeros.name + "[p, q]", "=", "0.0");
  const TensorInfo g = n.temp("grad", gy.dtype, {planes, out_plane});
  n.stmt(g.name + " = reshape(" + gy.name + ")");
  const TensorInfo i = n.temp("index", idx.dtype, {planes, out_plane});
  n.stmt(i.name + " = reshape(" + idx.name + ")");
  const TensorInfo flat = n.temp("flat", gx.dtype, {planes, in_plane});
  n.stmt(flat.name + " = scatter(" + zeros.name + ", " + i.name + ", " + g.name +
         ", dim=1, reduce=add)");
  n.stmt(gx.name + " = reshape(" + flat.name + ")");
}

// _scaled_dot_product_flash_attention_for_cpu_backward(grad_out, query, key, value, out,
// logsumexp, dropout_p, is_causal, attn_mask, scale) -> (grad_query, grad_key, grad_value): the
// FlashAttention-2 backward, the probabilities recomputed from the forward's log-sum-exp, over the
// causal triangle with is_causal (as the forward rule):
//   s = q k^T (one product), P = exp(s * scale [+ mask] - lse), dV = P^T dO, dP = dO V^T,
//   D = rowsum(dO * O), dS = P * (dP - D) * scale, dQ = dS K, dK = dS^T Q:
// five products of the attention's size (the forward has two) and the row sums of dO * O. P and
// dS are stored in the query's dtype, as FlashAttention converts them before its products.
void sdpa_backward_rule(NodeLowering& n) {
  const TensorInfo go = n.tensor("grad_out");
  const TensorInfo q = n.tensor("query");
  const TensorInfo k = n.tensor("key");
  const TensorInfo v = n.tensor("value");
  const TensorInfo o = n.tensor("out");
  const TensorInfo lse = n.tensor("logsumexp");
  if (n.number_or("dropout_p", 0.0) != 0.0) {
    throw UserError("attention backward with dropout has no rule yet");
  }
  const Attention a = attention_of(n, q, k, v);
  if (a.broadcast_kv) {
    throw UserError("attention backward with keys or values broadcast over heads has no rule yet");
  }
  const int64_t len_q = a.len_q;
  const int64_t len_k = a.len_k;
  const int64_t e = a.e;
  const int64_t dv = a.dv;
  const bool causal = a.causal;
  const double scale = a.scale;
  const std::vector<int64_t>& s_shape = a.s_shape;
  const std::vector<int64_t>& row_shape = a.row_shape;
  const std::string& bl = a.bl;
  const std::string& bi = a.bi;
  const std::string& rows = a.rows;
  const std::string& cols = a.cols;
  const std::string ij = a.ij();
  const std::string row = a.row();
  if (lse.shape.size() != a.batch.size() + 1 || lse.shape.back() != len_q) {
    throw UserError("logsumexp must have the query's batch dims and its length");
  }
  const std::string logits = attention_logits(n, a, q, k);
  const TensorInfo pr = n.temp("p", q.dtype, s_shape);
  n.kernel("p", cols, pr.name + ij, "=", "exp(" + logits + " - " + lse.name + row + ")");
  // dV and dK reduce over the queries: keys outermost, the queries that see key j inside.
  const std::string dv_loops = bl + "j in 0.." + std::to_string(len_k) + ", i in " +
                               (causal ? "j" : "0") + ".." + std::to_string(len_q);
  if (n.outputs() > 2 && !n.out(2).name.empty()) {
    n.kernel("dv", dv_loops + ", d in 0.." + std::to_string(dv), n.out(2).name + "[" + bi + "j, d]",
             "+=", pr.name + ij + " * " + go.name + "[" + bi + "i, d]");
  }
  const TensorInfo dp = n.temp("dp", acc_dtype(q), s_shape);
  n.kernel("dp", cols + ", d in 0.." + std::to_string(dv), dp.name + ij,
           "+=", go.name + "[" + bi + "i, d] * " + v.name + "[" + bi + "j, d]");
  const TensorInfo drow = n.temp("delta", acc_dtype(q), row_shape);
  n.kernel("delta", rows + ", d in 0.." + std::to_string(dv), drow.name + row,
           "+=", go.name + "[" + bi + "i, d] * " + o.name + "[" + bi + "i, d]");
  const TensorInfo ds = n.temp("ds", q.dtype, s_shape);
  n.kernel("ds", cols, ds.name + ij, "=",
           pr.name + ij + " * (" + dp.name + ij + " - " + drow.name + row + ") * " + lit(scale));
  if (!n.out(0).name.empty()) {
    n.kernel("dq", cols + ", e in 0.." + std::to_string(e), n.out(0).name + "[" + bi + "i, e]",
             "+=", ds.name + ij + " * " + k.name + "[" + bi + "j, e]");
  }
  if (n.outputs() > 1 && !n.out(1).name.empty()) {
    n.kernel("dk", dv_loops + ", e in 0.." + std::to_string(e), n.out(1).name + "[" + bi + "j, e]",
             "+=", ds.name + ij + " * " + q.name + "[" + bi + "i, e]");
  }
}

}  // namespace

void register_train_rules(RuleTable& r) {
  r["aten.convolution_backward.default"] = convolution_backward_rule;
  r["aten.max_pool2d_with_indices_backward.default"] = max_pool2d_backward_rule;
  r["aten._scaled_dot_product_flash_attention_for_cpu_backward.default"] = sdpa_backward_rule;
}

}  // namespace solar::frontend
