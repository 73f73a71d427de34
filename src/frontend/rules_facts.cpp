// Value facts (rules.h, ValueFacts): what the operators that made a tensor guarantee about its
// values whatever the data. A top-k router's indices hold k different experts per token; the
// views, copies and sorts of them hold the same values; a histogram with one bin per integer has
// a nonzero bin per different value, and its running sum as many non-empty groups. The rules
// that gather rows by such an index (index.Tensor, index_select, embedding, transformers'
// grouped_mm_fallback) write `take(..., distinct=D)`: a routed take, whose bytes --routing decides
// (concentrated: D slices; balanced: every index distinct). Takes by other indices (block tables,
// token ids) carry no mark and read the rows they name (docs/lowering.md, "Value facts").
#include <cmath>
#include <cstdint>
#include <string>

#include "rules.h"

namespace solar::frontend {

namespace {

bool exact_integers(ir::DType t) {  // holds every integer value of an expert index exactly
  return t == ir::DType::I64 || t == ir::DType::I32 || t == ir::DType::F32 || t == ir::DType::F64;
}

bool is_integer(double v) { return std::isfinite(v) && std::floor(v) == v; }

// Ops whose output 0 holds exactly the values of `self` (views, copies, sorted values).
bool keeps_values(const std::string& op) {
  for (const char* name : {"aten.view.default",
                           "aten._unsafe_view.default",
                           "aten.reshape.default",
                           "aten._reshape_alias.default",
                           "aten.unsqueeze.default",
                           "aten.squeeze.default",
                           "aten.squeeze.dim",
                           "aten.squeeze.dims",
                           "aten.flatten.using_ints",
                           "aten.clone.default",
                           "aten.alias.default",
                           "aten.detach.default",
                           "aten.lift_fresh_copy.default",
                           "aten.expand.default",
                           "aten.permute.default",
                           "aten.t.default",
                           "aten.transpose.int",
                           "aten._to_copy.default",
                           "aten.alias_copy.default",
                           "aten.detach_copy.default",
                           "aten.unsqueeze_copy.default",
                           "aten.squeeze_copy.dim",
                           "aten.expand_copy.default",
                           "aten.permute_copy.default",
                           "aten.t_copy.default",
                           "aten.transpose_copy.int",
                           "aten.sort.default",
                           "aten.sort.stable"}) {
    if (op == name) return true;
  }
  return false;
}

}  // namespace

ValueFacts NodeLowering::facts(const TensorInfo& t) const {
  if (facts_ == nullptr) return {};
  const auto it = facts_->find(t.name);
  return it == facts_->end() ? ValueFacts{} : it->second;
}

std::string NodeLowering::distinct_attr(const TensorInfo& index) const {
  const ValueFacts f = facts(index);
  if (f.distinct < 1 || f.lo < 0) return "";  // a negative index would wrap onto another
  return ", distinct=" + std::to_string(f.distinct);
}

void propagate_facts(const NodeLowering& n, FactMap& facts) {
  const std::string& op = n.op();
  if (n.outputs() == 0 || n.out(0).name.empty()) return;
  if (op == "aten.topk.default") {
    // The indices of the k largest along dim: k different positions 0..n-1 in every row.
    const TensorInfo x = n.tensor("self");
    const int64_t k = n.integer("k");
    int64_t dim = n.integer_or("dim", -1);
    if (dim < 0) dim += x.rank();
    if (x.rank() == 0 || dim < 0 || dim >= x.rank() || n.outputs() < 2 || n.out(1).name.empty() ||
        k < 1 || k > x.shape[dim]) {
      return;
    }
    facts[n.out(1).name] = {k, 0, x.shape[dim] - 1, 0, 0};
    return;
  }
  if (!n.has("self") || !n.is_tensor("self")) return;
  const ValueFacts in = n.facts(n.tensor("self"));
  const TensorInfo self = n.tensor("self");
  const bool sort = op == "aten.sort.default" || op == "aten.sort.stable";
  const bool argsort = op == "aten.argsort.default" || op == "aten.argsort.stable";
  if ((sort || argsort) && self.rank() == 1) {
    // The order of a rank-1 sort: every position 0..n-1 once.
    const size_t at = sort ? 1 : 0;
    if (n.outputs() > at && !n.out(at).name.empty()) {
      facts[n.out(at).name].permutation = self.shape[0];
    }
  }
  if (op == "aten.index.Tensor" && self.rank() == 1 && in.distinct > 0) {
    // A rank-1 tensor taken in a permuted order (the router's experts sorted by argsort) holds
    // the same values.
    const std::vector<TensorInfo> index = n.tensor_list_or_null("indices");
    if (index.size() == 1 && !index[0].name.empty() &&
        n.facts(index[0]).permutation == self.shape[0] && index[0].rank() == 1) {
      facts[n.out(0).name] = in;
    }
    return;
  }
  if (keeps_values(op)) {
    if (op == "aten._to_copy.default" && !exact_integers(n.out(0).dtype)) return;
    if (in.distinct > 0 || in.nonzero > 0 || in.groups > 0) facts[n.out(0).name] = in;
    return;
  }
  if (op == "aten.histc.default" && in.distinct > 0) {
    // One bin per integer of min..max: bin(v) = floor((v - min) * bins / (max - min)), the last
    // value clipped into the last bin; with bins = max - min + 1 the scale is above 1, so
    // different integers in range fall in different bins.
    const double lo = n.number_or("min", 0.0);
    const double hi = n.number_or("max", 0.0);
    const int64_t bins = n.integer_or("bins", 100);
    if (!is_integer(lo) || !is_integer(hi) || hi <= lo || static_cast<double>(in.lo) < lo ||
        static_cast<double>(in.hi) > hi || static_cast<double>(bins) != hi - lo + 1) {
      return;
    }
    facts[n.out(0).name] = {0, 0, -1, in.distinct, 0};
    return;
  }
  if (op == "aten.cumsum.default" && in.nonzero > 0 && n.out(0).rank() == 1) {
    facts[n.out(0).name] = {0, 0, -1, 0, in.nonzero};  // non-negative counts: non-decreasing
  }
}

}  // namespace solar::frontend
