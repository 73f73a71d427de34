// The cache-aware fused model (docs/fidelities.md, "Cache-aware fused"): with a finite on-chip
// capacity C, choose fusion groups and, per group, a tiling that minimises DRAM traffic with the
// working set within C. The optimiser is exact for the mapspace defined here and in the docs.
//
// The mapspace, stated once (docs/fidelities.md has the worked example and the proofs):
//   - Units: a node, or a run of consecutive nodes that are translates of each other (a repeat
//     block unrolled: the same kernel, every index shifted by the same constants from one node
//     to the next), folded into one unit with one more loop over its steps.
//   - Groups: the graph is split into segments of consecutive nodes (program order). Each
//     segment runs in one of three modes:
//       tiled     at most kMaxTiledUnits units: einsum nodes, and movement nodes that copy with
//                 affine maps over their own elements (a materialised reshape); a segment that
//                 starts or ends inside a run holds at most kMaxTiledGroup nodes. The units are
//                 joined through the intermediates they write and read: a read of an
//                 intermediate must lie inside what earlier units of the segment wrote (one
//                 writer, or several writing disjoint parts), dimension by dimension of the
//                 tensor's storage (dimensions merged where a view reshapes them); a dimension
//                 indexed by the same loop variable on both sides joins those variables into one
//                 group dimension, any other dimension (a broadcast, a slice, a flip, a reshape,
//                 a scan's shifted read) runs whole inside a tile. The dimensions every unit with
//                 loops has, and that run whole nowhere, are the common dims: they are tiled;
//                 every other loop runs over its whole range inside a tile. A unit without loops
//                 (a scalar epilogue) runs once.
//       untiled   any nodes: every tensor the segment touches is held on chip whole; each tensor
//                 coming from outside is read once, each tensor needed after it written once.
//       streamed  one data-movement node alone: its reads and writes, each element once,
//                 through a working set we count as 0 bytes (a copy streams).
//       stream    a chain without a second pass over its data (statistics combined in one
//                 pass, Welford-style; scans with a carry; broadcast tensors, statistics and
//                 carries held on chip; contractions only over inputs and materialised views,
//                 each reaching its own least traffic alone): charged as untiled, a lower bound.
//   - Tiled schedule: a tile size per common dim, among the divisors of its extent; an order of
//     the outer tile loops (any permutation of the dims whose tile is smaller than the extent);
//     each tensor keeps one tile on chip, reused across the loops inside its innermost relevant
//     loop (its tile is fetched again whenever a loop at or outside that one advances). A tensor
//     with no tiled relevant dim is fetched once. Intermediates of the group never leave the
//     chip: the order must place every tiled dim an intermediate depends on before the tiled
//     dims it does not depend on (so each of its tiles is finished before the loops move on).
//     A reduction over a tiled dim whose result is used inside the group (the row max of a
//     softmax with the key dimension tiled) is assumed to be combined online, as fused attention
//     kernels do; the group lists such tensors (`online`).
//   - Cost: tile footprint of a tensor = product over its dimensions of the span of the index
//     over the tile (sum of |coeff| x (tile - 1) + 1), clipped to the dimension's size, at most
//     the tensor's size (an intermediate: over the maps that write it; a broadcast dimension
//     has none); working set = sum of the footprints of every tensor of the group (in bytes);
//     traffic = sum over tensors of fetches x footprint (inputs, and the parts of a tensor the
//     group reads but does not write), writes (+ reads of partial sums when a reduction loop
//     sits outside an output's tile) for outputs, 0 for intermediates.
//   - T_cache = max(sum of every node's compute, traffic / DRAM bandwidth) is the headline; the
//     sequential variant sum over groups of max(group compute, group traffic / bandwidth) is
//     reported too.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "solar/einsum/graph.h"
#include "solar/hw/device.h"

namespace solar::sol {

// The most units a tiled group holds (longer segments can still run untiled).
inline constexpr size_t kMaxTiledUnits = 64;
// The most nodes of a tiled group that starts or ends inside a run of translated nodes.
inline constexpr size_t kMaxTiledGroup = 8;
// The search budget of one tiled segment, in evaluated (tile vector, loop subset) states. Above
// it the tile sizes of each dim are restricted to powers of two dividing the extent and the
// extent itself, and the group says `mapspace: reduced`.
inline constexpr int64_t kSearchBudget = 40'000'000;

// Where the capacity of the cache-aware model comes from.
struct CacheOptions {
  hw::MemoryLevel level = hw::MemoryLevel::L2;
  std::optional<int64_t> capacity_bytes;  // set: overrides `level`
};

// "32MiB", "50MB", "1GiB", "4096" (bytes, as util/text.h's parse_bytes reads them). UserError for
// anything else, a value below 1 byte or above 2^60 bytes.
int64_t parse_capacity(std::string_view text);
// "L2" or "SMEM" (UserError otherwise).
hw::MemoryLevel parse_cache_level(std::string_view text);

// The capacity to use on `d`: options.capacity_bytes, else the device's level capacity; nullopt
// when the device has no such level.
std::optional<int64_t> cache_capacity(const hw::Device& d, const CacheOptions& options);
// "L2", "SMEM" or "--capacity": what the capacity is.
std::string capacity_source(const CacheOptions& options);

// Stream: a chain of nodes charged its untiled traffic (each tensor from outside read once, each
// tensor needed after written once) when a streaming kernel's resident state fits, though the
// whole chain does not: a lower bound (docs/fidelities.md, "Streaming chains").
enum class GroupMode : uint8_t { Tiled, Untiled, Streamed, Stream };
std::string_view group_mode_name(GroupMode m);

// The role of a tensor in a group.
enum class TensorRole : uint8_t {
  Input,     // read from DRAM
  Output,    // written to DRAM (needed after the group, or a graph output)
  OnChip,    // produced and consumed inside the group, never in DRAM
  OnChipOut  // produced and consumed inside the group, and also written to DRAM once
};
std::string_view tensor_role_name(TensorRole r);

struct GroupTensor {
  std::string name;
  TensorRole role = TensorRole::Input;
  int64_t footprint_bytes = 0;  // its tile (tiled), or all it touches (untiled), on chip
  int64_t fetches = 1;          // how many times its tile is filled (or written)
  int64_t traffic_bytes = 0;    // its DRAM traffic
};

struct GroupDim {
  std::string name;  // the loop variable's name in the first node of the group that has it
  int64_t extent = 0;
  int64_t tile = 0;
};

struct CacheGroup {
  size_t first = 0, last = 0;  // the nodes [first, last) of the graph
  GroupMode mode = GroupMode::Untiled;
  std::vector<GroupDim> dims;           // tiled: the common dims, in the first node's order
  std::vector<std::string> loop_order;  // tiled: the tiled dims, outermost first
  std::vector<GroupTensor> tensors;     // by first appearance in the group
  std::vector<std::string> online;      // intermediates combined online (see above)
  bool reduced_mapspace = false;        // the search budget restricted the tile sizes
  // The traffic is a lower bound, not the traffic of a schedule (docs/fidelities.md, "Lower
  // bounds"), and why.
  bool lower_bound = false;
  std::string lower_bound_reason;
  int64_t working_set_bytes = 0;
  int64_t traffic_bytes = 0;
  // The same nodes with unlimited capacity: the least traffic of any of their schedules, and the
  // least capacity that reaches it. capacity_limited: traffic_bytes > min_traffic_bytes.
  int64_t min_traffic_bytes = 0;
  int64_t capacity_for_min_traffic_bytes = 0;
  bool capacity_limited = false;
};

struct CacheSchedule {
  int64_t capacity_bytes = 0;
  int64_t traffic_bytes = 0;  // sum over the groups
  std::vector<CacheGroup> groups;
};

// The optimiser over one graph. It keeps what it learns about segments (their tilings) between
// calls, so one optimiser answers many capacities cheaply (solar curve, several devices).
class CacheOptimizer {
 public:
  explicit CacheOptimizer(const einsum::Graph& g);
  ~CacheOptimizer();
  CacheOptimizer(const CacheOptimizer&) = delete;
  CacheOptimizer& operator=(const CacheOptimizer&) = delete;

  // The schedule of least DRAM traffic whose every group fits in `capacity_bytes` (ties: the
  // first found, in a fixed order). UserError when no schedule fits (a node whose smallest tile
  // is larger than the capacity).
  CacheSchedule optimize(int64_t capacity_bytes);
  // The same, nullopt when no schedule fits.
  std::optional<CacheSchedule> try_optimize(int64_t capacity_bytes);
  // The same search without its shortcuts: every segment searched (no stop once the schedule
  // moves the fused bytes, no lower-bound skip of tiled segments) and every untiled segment's
  // cost recounted from its nodes, not kept incrementally. Quadratic; for tests, which check that
  // it returns what try_optimize does.
  std::optional<CacheSchedule> try_optimize_exhaustive(int64_t capacity_bytes);

  // The best schedule of the nodes [first, last) as one group at `capacity_bytes` in the modes
  // allowed, or nullopt when none fits or the segment cannot run in those modes (tests).
  std::optional<CacheGroup> best_group(size_t first, size_t last, int64_t capacity_bytes,
                                       bool allow_untiled = true);

  // The mapspace of a tileable segment, for tests that enumerate it by brute force: the common
  // dims (name, extent, tile 0), or nullopt when [first, last) cannot be tiled.
  std::optional<std::vector<GroupDim>> tiled_dims(size_t first, size_t last);
  // The working set and traffic (bytes) of one tiled schedule of [first, last): `tiles` per
  // common dim (each a divisor of its extent), `order` the tiled dims (tile < extent) outermost
  // first, by index into tiled_dims. nullopt when the order breaks the intermediates' rule.
  struct Cost {
    int64_t working_set_bytes = 0;
    int64_t traffic_bytes = 0;
  };
  std::optional<Cost> tiled_cost(size_t first, size_t last, const std::vector<int64_t>& tiles,
                                 const std::vector<size_t>& order);

 private:
  std::optional<CacheSchedule> search(int64_t capacity_bytes, bool exhaustive);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace solar::sol
