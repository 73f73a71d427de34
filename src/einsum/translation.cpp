// Translations of access maps and nodes (include/solar/einsum/translation.h).
#include "solar/einsum/translation.h"

#include <algorithm>
#include <cstddef>

namespace solar::einsum {

bool same_domain(const ir::AffineDomain& a, const ir::AffineDomain& b) {
  if (a.size() != b.size()) return false;
  for (size_t k = 0; k < a.size(); ++k) {
    if (a[k].var != b[k].var || !(a[k].lo == b[k].lo) || !(a[k].hi == b[k].hi)) return false;
  }
  return true;
}

bool MapShift::moves() const {
  return offset != 0 || std::any_of(index.begin(), index.end(), [](int64_t d) { return d != 0; });
}

std::optional<MapShift> map_shift(const AccessMap& x, const AccessMap& y) {
  if (x.data_dependent || y.data_dependent || x.guarded != y.guarded || x.strides != y.strides ||
      x.extent != y.extent || x.index.size() != y.index.size()) {
    return std::nullopt;
  }
  MapShift shift;
  shift.offset = y.offset - x.offset;
  for (size_t d = 0; d < x.index.size(); ++d) {
    if (x.index[d].coeffs != y.index[d].coeffs) return std::nullopt;
    shift.index.push_back(y.index[d].constant - x.index[d].constant);
  }
  return shift;
}

std::optional<std::vector<int64_t>> translation(const Node& a, const Node& b) {
  if (a.kind != NodeKind::Einsum || b.kind != NodeKind::Einsum || a.reduction != b.reduction ||
      !same_domain(a.domain, b.domain) || a.reads.size() != b.reads.size() ||
      a.writes.size() != b.writes.size()) {
    return std::nullopt;
  }
  std::vector<int64_t> delta;
  bool moves = false;
  for (const bool write : {false, true}) {
    const std::vector<Access>& xs = write ? a.writes : a.reads;
    const std::vector<Access>& ys = write ? b.writes : b.reads;
    for (size_t i = 0; i < xs.size(); ++i) {
      if (xs[i].tensor != ys[i].tensor || xs[i].maps.size() != ys[i].maps.size()) {
        return std::nullopt;
      }
      for (size_t k = 0; k < xs[i].maps.size(); ++k) {
        const std::optional<MapShift> s = map_shift(xs[i].maps[k], ys[i].maps[k]);
        if (!s) return std::nullopt;
        delta.push_back(s->offset);
        delta.insert(delta.end(), s->index.begin(), s->index.end());
        moves = moves || (write && s->moves());
      }
    }
  }
  if (!moves) return std::nullopt;
  return delta;
}

}  // namespace solar::einsum
