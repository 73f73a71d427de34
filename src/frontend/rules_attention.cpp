// Lowering rules for scaled-dot-product attention, and the attention helpers rules_train.cpp
// shares. See docs/lowering.md.
#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "rules.h"
#include "solar/util/error.h"

namespace solar::frontend {

namespace {

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
      const std::string& b = a.names[d];  // "b1", or "4*b1 + g" with enable_gqa
      flat = (a.groups > 1 && d == r - 3 ? "(" + b + ")" : b) + " * " + std::to_string(stride) +
             " + " + flat;
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

}  // namespace

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
  // enable_gqa: key and value with Hk heads, the query with H, a multiple (PyTorch repeats each
  // key and value head H / Hk times, repeat_interleave). Hk 1 is the broadcast below.
  std::vector<int64_t> kv_batch = a.batch;
  if (n.flag_or("enable_gqa", false) && !a.batch.empty() && k.rank() >= 3 && v.rank() >= 3) {
    const int64_t h = a.batch.back();
    const int64_t hk = k.shape[k.rank() - 3];
    if (hk != h && hk != 1) {
      if (hk < 1 || h % hk != 0 || v.shape[v.rank() - 3] != hk) {
        throw UserError("enable_gqa: the query's " + std::to_string(h) +
                        " heads must be a multiple of the key's and the value's, not " +
                        std::to_string(hk) + " and " + std::to_string(v.shape[v.rank() - 3]));
      }
      a.groups = h / hk;
      kv_batch.back() = hk;
    }
  }
  // Key and value may broadcast against the query's batch and head dims (numpy rules, as the
  // framework's matmuls do): multi-query attention passes k, v [B, 1, Lk, E] with q [B, H, Lq, E].
  // A broadcast dim is read at index 0: every head reads the same keys and values.
  std::vector<std::string> names;
  for (size_t d = 0; d < a.batch.size(); ++d) names.push_back("b" + std::to_string(d));
  auto batch_index = [&](const TensorInfo& t) {
    const std::vector<int64_t> dims(t.shape.begin(), t.shape.end() - 2);
    bool fits = dims.size() <= kv_batch.size();
    for (size_t d = 0; fits && d < dims.size(); ++d) {
      const int64_t want = kv_batch[kv_batch.size() - dims.size() + d];
      fits = dims[d] == want || dims[d] == 1;
    }
    if (!fits) {
      throw UserError(
          "key and value must have the query's batch and head dims or broadcast to "
          "them (or, with enable_gqa, a number of heads that divides the query's)");
    }
    if (dims != a.batch) a.broadcast_kv = true;
    const std::string index = bcast_names(dims, kv_batch, names);
    return index.empty() ? index : index + ", ";
  };
  a.ki = batch_index(k);
  a.vi = batch_index(v);
  a.names = names;
  a.bl = box_loops(kv_batch, "b");
  if (a.groups > 1) {
    const std::string g = std::to_string(a.groups);
    a.names.back() = g + "*" + names.back() + " + g";
    a.bl += ", g in 0.." + g;
  }
  a.bi = join(a.names, ", ");
  a.scale = n.number_or("scale", 1.0 / std::sqrt(static_cast<double>(a.e)));
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
    std::vector<std::string> names = a.names;  // the scores' index names: b.., i, j
    names.push_back("i");
    names.push_back("j");
    const std::string mread = m.name + "[" + bcast_names(m.shape, a.s_shape, names) + "]";
    logits = m.dtype == ir::DType::Bool ? "select(" + mread + ", " + logits + ", -inf)"
                                        : logits + " + " + mread;
  }
  return logits;
}

void register_attention_rules(RuleTable& r) {
  r["aten.scaled_dot_product_attention.default"] = sdpa_rule;
  r["aten._scaled_dot_product_flash_attention_for_cpu.default"] = sdpa_rule;
}

}  // namespace solar::frontend
