// Rules for operators that real model code (Hugging Face `transformers` models, common library
// custom ops) reaches and the other rule families do not cover. See docs/lowering.md.
#include <algorithm>
#include <cstdint>
#include <string>

#include "rules.h"
#include "solar/util/error.h"

namespace solar::frontend {

namespace {

// transformers.grouped_mm_fallback(input [S, K], weight [E, K, N], offs [E]) -> [S, N]: the
// mixture-of-experts product of transformers' integrations/moe.py. The rows of `input` are
// sorted by expert; `offs` holds the cumulative row counts, so rows offs[e - 1]..offs[e] are
// multiplied by weight[e] and rows from offs[E - 1] on are zero. The expert of row s is
// g[s] = #{e < E - 1 : offs[e] <= s} (a compare per row and boundary), its matrix is gathered
// (`take`), and one contraction does each row's own product: S*K*N MACs, the work of the
// per-expert matmuls (not E times it, as a dense product of every row with every expert would).
void grouped_mm(NodeLowering& n, const TensorInfo& x, const TensorInfo& w, const TensorInfo& offs) {
  const TensorInfo& y = n.out();
  if (x.rank() != 2 || w.rank() != 3 || offs.rank() != 1 || w.shape[0] != offs.shape[0] ||
      w.shape[1] != x.shape[1] || w.shape[0] < 1) {
    throw UserError("expects input [S, K], weight [E, K, N] and offs [E] (E >= 1)");
  }
  const int64_t rows = x.shape[0];
  const int64_t k = x.shape[1];
  const int64_t experts = w.shape[0];
  const int64_t cols = w.shape[2];
  const std::string s = kI + "0";
  const std::string j = kI + "1";
  const TensorInfo expert = n.temp("expert", ir::DType::I64, {rows});
  n.kernel(
      "expert", s + " in 0.." + std::to_string(rows) + ", e in 0.." + std::to_string(experts - 1),
      expert.name + "[" + s + "]", "+=", "select(" + s + " >= " + offs.name + "[e], 1.0, 0.0)");
  const TensorInfo rows_w = n.temp("weights", w.dtype, {rows, k, cols});
  // offs, the running sum of a histogram of a top-k router's experts (value facts), has as many
  // non-empty groups as the tokens chose different experts: the rows use that many matrices.
  const int64_t groups = std::min({n.facts(offs).groups, experts, rows});
  const std::string distinct = groups >= 1 ? ", distinct=" + std::to_string(groups) : "";
  n.stmt(rows_w.name + " = take(" + w.name + ", " + expert.name + ", dim=0" + distinct + ")");
  const TensorInfo acc = n.temp("acc", y.dtype, {rows, cols});
  n.kernel("mm", box_loops(acc.shape, kI) + ", k in 0.." + std::to_string(k), at_box(acc),
           "+=", x.name + "[" + s + ", k] * " + rows_w.name + "[" + s + ", k, " + j + "]");
  pointwise(n, "select(" + s + " < " + offs.name + "[" + std::to_string(experts - 1) + "], " +
                   at_box(acc) + ", 0.0)");
}

void grouped_mm_fallback_rule(NodeLowering& n) {
  grouped_mm(n, n.tensor("input"), n.tensor("weight"), n.tensor("offs"));
}

// aten._grouped_mm(self [S, K], mat2 [E, K, N], offs [E]) -> [S, N], torch's grouped product
// (torch.nn.functional.grouped_mm, which transformers' experts call where torch has it): the same
// product as grouped_mm_fallback. Other forms (no offs, a bias, 2-D mat2, 3-D self) are refused.
void aten_grouped_mm_rule(NodeLowering& n) {
  if (!n.has("offs") || n.has("bias")) {
    throw UserError("supported only as input [S, K], weight [E, K, N], offs [E], no bias");
  }
  grouped_mm(n, n.tensor("self"), n.tensor("mat2"), n.tensor("offs"));
}

}  // namespace

void register_model_rules(RuleTable& r) {
  r["transformers.grouped_mm_fallback.default"] = grouped_mm_fallback_rule;
  r["aten._grouped_mm.default"] = aten_grouped_mm_rule;
}

}  // namespace solar::frontend
