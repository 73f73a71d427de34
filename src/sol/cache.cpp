// The cache-aware fused optimiser (include/solar/sol/cache.h, docs/fidelities.md).
//
// Three levels of search, each exact for its part of the mapspace:
//   1. Segments: dynamic programming over the cut points of the node list (best[e] = min over j
//      of best[j] + cost of [j, e) as one group). Exact over every partition into consecutive
//      segments.
//   2. Tile sizes of a tiled segment: every vector of divisors is evaluated. The working set of
//      a tile vector does not depend on the loop order (each tensor keeps one tile; an
//      intermediate's tile is fixed by the order rule), so each tile vector gives one point
//      (working set, least traffic over orders); the points are kept as a Pareto frontier, and
//      a capacity's answer is the least traffic of a point that fits.
//   3. Loop order for one tile vector: a tensor's traffic depends only on the set of loops at
//      or outside its innermost relevant loop (the prefix in which its last relevant dim is
//      placed), so the least total over all permutations is a shortest path over subsets
//      (dynamic programming on the set of dims placed so far: 2^m states instead of m!).
// Pruning rules (each proven in docs/fidelities.md): dims whose tile equals their extent are
// left out of the order (one iteration: no factor in any count); a tiled segment that fails for a
// structural reason (a unit that cannot tile, a write that is not one to one, a read neither
// inside nor outside the segment's writes, two loops of one unit joined) fails extended by more
// units, so its tiled extension stops; an untiled segment's working set only grows when the
// segment grows, so extending it stops once it exceeds the capacity and no tiled one remains;
// the longest untiled segment that fits is kept as a sliding window over the nodes (not regrown
// from each start), and the untiled segments between a start's scan and that window are skipped
// when a lower bound of their traffic cannot beat the best known schedule of their prefix
// (search(), "Untiled segments from j").
//
// Segments are made of units (a node, or a run of translated nodes folded into one with a step
// loop) joined through the intermediates they write and read: join_tensor states the rule.
#include "solar/sol/cache.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "solar/ir/affine.h"
#include "solar/ir/dtype.h"
#include "solar/sol/analysis.h"
#include "solar/util/checked.h"
#include "solar/util/error.h"
#include "solar/util/text.h"

#include "cache_internal.h"

namespace solar::sol {

CacheOptimizer::CacheOptimizer(const einsum::Graph& g) : impl_(std::make_unique<Impl>(g)) {}

CacheOptimizer::~CacheOptimizer() = default;

int64_t parse_capacity(std::string_view text) {
  constexpr uint64_t kMaxCapacity = uint64_t{1} << 60;
  const std::optional<uint64_t> bytes = parse_bytes(text);
  if (!bytes || *bytes < 1 || *bytes > kMaxCapacity) {
    throw UserError("'" + std::string(text) +
                    "' is not a capacity (examples: 32MiB, 50MB, 256KiB, 4096)");
  }
  return static_cast<int64_t>(*bytes);
}

hw::MemoryLevel parse_cache_level(std::string_view text) {
  if (text == "L2") return hw::MemoryLevel::L2;
  if (text == "SMEM") return hw::MemoryLevel::Smem;
  throw UserError("unknown on-chip level '" + std::string(text) + "' (valid: L2, SMEM)");
}

std::optional<int64_t> cache_capacity(const hw::Device& d, const CacheOptions& options) {
  if (options.capacity_bytes) return options.capacity_bytes;
  const hw::MemorySpec& level = d.level(options.level);
  if (!level.capacity_bytes) return std::nullopt;
  return static_cast<int64_t>(level.capacity_bytes->value);
}

std::string capacity_source(const CacheOptions& options) {
  if (options.capacity_bytes) return "--capacity";
  return std::string(hw::memory_level_name(options.level));
}

std::string_view group_mode_name(GroupMode m) {
  switch (m) {
    case GroupMode::Tiled:
      return "tiled";
    case GroupMode::Untiled:
      return "untiled";
    case GroupMode::Streamed:
      return "streamed";
    case GroupMode::Stream:
      return "stream";
  }
  internal_error(__FILE__, __LINE__, "bad GroupMode");
}

std::string_view tensor_role_name(TensorRole r) {
  switch (r) {
    case TensorRole::Input:
      return "input";
    case TensorRole::Output:
      return "output";
    case TensorRole::OnChip:
      return "on-chip";
    case TensorRole::OnChipOut:
      return "on-chip+output";
  }
  internal_error(__FILE__, __LINE__, "bad TensorRole");
}

}  // namespace solar::sol
