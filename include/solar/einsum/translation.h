// Translations: how the index constants of one access map, or of every map of one node, move to
// another's, the same einsum shifted by constant amounts. The lift collapses the steps of a scan
// by them (src/einsum/lift_scans.cpp; docs/einsum.md, "Scans"); the cache-aware optimiser takes a
// run of translated nodes as the steps of one loop (src/sol/cache_internal.h).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "solar/einsum/graph.h"
#include "solar/ir/affine.h"

namespace solar::einsum {

// Whether two domains are the same loops: the same variables, in the same order, with the same
// bounds.
bool same_domain(const ir::AffineDomain& a, const ir::AffineDomain& b);

// How an access map y moves against an access map x (map_shift).
struct MapShift {
  int64_t offset = 0;          // y.offset - x.offset
  std::vector<int64_t> index;  // per index dimension d: y.index[d].constant - x.index[d].constant

  bool moves() const;  // any shift not 0
};

// The shift of map y against map x when y is x translated: both affine (not data-dependent),
// with the same guard, strides, extent, rank and coefficients of every index dimension, so that
// only the offset and the index constants differ; nullopt otherwise. Neither the maps' texts nor
// their domains are compared.
std::optional<MapShift> map_shift(const AccessMap& x, const AccessMap& y);

// When node b is node a translated: both einsum nodes of the same reduction over the same domain,
// with the same tensors read and written, as many maps of each, every map of b a map_shift of
// a's, and at least one write moved. The shifts, per map (reads then writes, in order) its offset
// shift then one per index dimension; nullopt otherwise.
std::optional<std::vector<int64_t>> translation(const Node& a, const Node& b);

}  // namespace solar::einsum
