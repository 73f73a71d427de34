// Speed-of-light (SOL) analysis of an einsum graph on a device: per-node costs and the SOL time at
// each fidelity (docs/fidelities.md). All cost formulas of the SOL engine live here.
//
// Conventions, stated once:
//   - Device rates are FLOP/s with 1 MAC = 2 FLOPs (int8: ops/s, same convention). A node's
//     MACs take 2 x MACs / rate seconds; its other ops take other_ops / rate seconds, one op
//     counted as one FLOP. A non-FMA op issues at half the FMA FLOP rate on real hardware, so
//     this is optimistic: the time stays a lower bound.
//   - compute_i = max(mac_s_i, other_s_i): MACs and other ops may overlap (separate units),
//     again a lower bound. memory_i = bytes_i / DRAM bandwidth.
//   - unfused: T = sum_u max(compute_u, memory_u) over the framework operations u (op_units:
//     one `op` block, or one node outside any), compute_u = sum of its nodes' compute, bytes_u =
//     the op run as one kernel (reads from outside it, writes needed after it: einsum::OpUnit).
//   - fused:   T = max(sum_i compute_i, bytes_io / DRAM bandwidth), bytes_io = the touched
//     elements of every graph input, weight and output, each counted once, x element size.
//   - cache-aware: T = max(sum_i compute_i, traffic / DRAM bandwidth), traffic = the DRAM bytes of
//     the best schedule (fusion groups, tilings) within an on-chip capacity (sol/cache.h); the
//     sequential variant sums max(group compute, group traffic / bandwidth) over the groups.
//   - cache state (docs/cache-state.md): every `bytes / DRAM bandwidth` above is
//     MemoryModel::time_s(bytes). Cold (the default): bytes / B_dram. Warm: W = min(bytes, C) of
//     them at the last-level cache's bandwidth B_llc, the rest at DRAM's:
//     W / B_llc + (bytes - W) / B_dram, C = the L2 capacity.
//   - kernel floor (on by default, where the device has a min_kernel_s): each framework
//     operation that does work (bytes or compute) takes at least the device's min_kernel_s in the
//     unfused fidelity; the fused and cache-aware times of a program that does work take at least
//     one min_kernel_s (the program runs at least one kernel).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "solar/einsum/graph.h"
#include "solar/hw/device.h"
#include "solar/sol/cache.h"
#include "solar/sol/precision.h"

namespace solar::sol {

// What bounds a time: the compute term or the memory term (memory on a tie).
enum class Bottleneck : uint8_t { Compute, Memory };
std::string_view bottleneck_name(Bottleneck b);

// The state of the caches when the program starts: X(enumerator, name). Cold: nothing the
// program reads is on chip; warm: what a back-to-back loop over the same inputs leaves there.
#define SOLAR_CACHE_STATES(X) \
  X(Cold, "cold")             \
  X(Warm, "warm")

enum class CacheState : uint8_t {
#define SOLAR_X(e, s) e,
  SOLAR_CACHE_STATES(SOLAR_X)
#undef SOLAR_X
};

std::string_view cache_state_name(CacheState s);

// `--cache-state` values: `cold` or `warm`; anything else is a UserError listing them.
CacheState parse_cache_state(std::string_view text);

// Where the bytes of a model are served from, the one place of the memory-time formula
// (docs/cache-state.md). Cold: every byte at the DRAM bandwidth B_dram. Warm: W = min(bytes, C)
// bytes at the last-level cache's bandwidth B_llc (at least B_dram: a cache is never taken to
// be slower than DRAM), the rest at B_dram.
struct MemoryModel {
  CacheState state = CacheState::Cold;
  double dram_bandwidth = 0;       // B_dram, bytes/s
  int64_t llc_capacity_bytes = 0;  // C (warm only)
  double llc_bandwidth = 0;        // B_llc, bytes/s (warm only)

  // W: the bytes served from the last-level cache (0 when cold).
  int64_t warm_bytes(int64_t bytes) const;
  // W / B_llc + (bytes - W) / B_dram.
  double time_s(int64_t bytes) const;
};

// The memory model of `d` in state `s`. Warm needs the device's L2 capacity and bandwidth:
// without either, a UserError saying the warm bound cannot be computed for the device.
MemoryModel memory_model(const hw::Device& d, CacheState s);

// The cost of one node run alone (the unfused model).
struct NodeCost {
  std::optional<Rate> mac_rate;    // present when the node has MACs
  std::optional<Rate> other_rate;  // present when the node has other ops
  double mac_s = 0;                // 2 x MACs / mac rate
  double other_s = 0;              // other ops / other-ops rate
  double compute_s = 0;            // max(mac_s, other_s)
  // The rate of the node's MACs at their operands' origin precision (Node::mac_lhs_origin),
  // when that is faster than mac_rate: the fused and cache-aware fidelities price the product
  // there (docs/precision.md, "Origin precision"); the unfused one keeps mac_rate.
  std::optional<Rate> origin_mac_rate;
  double fused_compute_s = 0;  // compute_s, with the MACs at origin_mac_rate when present
  int64_t bytes = 0;           // bytes read + bytes written
  double memory_s = 0;         // bytes / DRAM bandwidth
  double time_s = 0;           // max(compute_s, memory_s)
  Bottleneck bottleneck = Bottleneck::Memory;

  // The rate of the node's main work: its MACs when it has any, else its other ops; nullptr for
  // a node without arithmetic (data movement).
  const Rate* main_rate() const;
};

// The cost of one framework operation run alone, as one kernel (the unfused model): the nodes
// [first, last) of the graph (einsum::OpUnit).
struct OpCost {
  std::string name;
  size_t first = 0, last = 0;
  einsum::OpCounts counts;   // summed over its nodes
  double compute_s = 0;      // sum of its nodes' compute_s
  double nodes_alone_s = 0;  // sum of its nodes' time_s: each run alone, as its own kernel
  int64_t bytes = 0;         // OpUnit::bytes()
  bool bytes_exact = true;
  double memory_s = 0;  // MemoryModel::time_s(bytes)
  double time_s = 0;    // max(compute_s, memory_s), or the kernel floor when that is larger
  Bottleneck bottleneck = Bottleneck::Memory;
  bool floored = false;  // the kernel floor set time_s
};

// The costs of the graph's framework operations, from its nodes' costs. `kernel_floor_s` > 0:
// an operation that does work (bytes or compute) takes at least that long.
std::vector<OpCost> op_costs(const einsum::Graph& g, const std::vector<NodeCost>& nodes,
                             const MemoryModel& memory, double kernel_floor_s = 0);

// The registry of fidelities: X(enumerator, name, report key, description). The name is what
// `--fidelity` takes and tables show; the key names it in JSON (`sol.<key>_s`, `bytes.<key>`).
#define SOLAR_FIDELITIES(X)                                                                       \
  X(Unfused, "unfused", "unfused",                                                                \
    "every framework op runs alone, as one kernel: its inputs and outputs go through DRAM")       \
  X(Fused, "fused", "fused",                                                                      \
    "one kernel, unlimited on-chip memory: only graph inputs, weights and outputs touch DRAM, "   \
    "each once")                                                                                  \
  X(Cache, "cache", "cache_aware",                                                                \
    "cache-aware fused: a finite on-chip capacity, fusion groups and tilings chosen to minimise " \
    "DRAM traffic")

enum class Fidelity : uint8_t {
#define SOLAR_X(e, s, k, d) e,
  SOLAR_FIDELITIES(SOLAR_X)
#undef SOLAR_X
};

std::string_view fidelity_name(Fidelity f);
std::string_view fidelity_key(Fidelity f);  // "unfused", "fused", "cache_aware"
bool fidelity_implemented(Fidelity f);

// The implemented fidelities, in registry order.
const std::vector<Fidelity>& implemented_fidelities();

// `--fidelity` values: a fidelity's name, or `all` (the implemented ones). An unknown name is a
// UserError listing the valid ones; a fidelity of the registry that is not implemented is a
// UserError saying so.
std::vector<Fidelity> parse_fidelities(std::string_view text);

// The SOL time of a whole graph at one fidelity, with its two terms. For unfused, compute_s and
// memory_s are the sums of the nodes' terms (time_s >= both) and the bottleneck is the kind
// of the nodes that account for more of the time.
struct FidelityResult {
  Fidelity fidelity = Fidelity::Unfused;
  double time_s = 0;
  double compute_s = 0;
  double memory_s = 0;
  int64_t bytes = 0;       // DRAM traffic of the model (cold); warm: traffic below the LLC
  int64_t warm_bytes = 0;  // of `bytes`, those served from the last-level cache (warm only)
  Bottleneck bottleneck = Bottleneck::Memory;
  // Fused and cache-aware: the device's min_kernel_s set time_s (a program that runs at least
  // one kernel takes at least one kernel's minimum duration; docs/cache-state.md).
  bool floored = false;
};

// The cost of one group of the cache-aware schedule.
struct CacheGroupCost {
  double compute_s = 0;  // sum of its nodes' compute terms
  double memory_s = 0;   // MemoryModel::time_s(its traffic)
  double time_s = 0;     // max of the two
};

// How the cache-aware fidelity is run.
struct AnalysisOptions {
  CacheOptions cache;
  // Reused across calls (several devices, several capacities); nullptr: a fresh one per call.
  CacheOptimizer* optimizer = nullptr;
  // When the device has no capacity for the level asked (and no --capacity was given): true,
  // skip the cache fidelity and say why (Analysis::cache_skipped), as `--fidelity all` does;
  // false, a UserError, as an explicit `--fidelity cache` does.
  bool cache_optional = true;
  // Where the bytes are served from (docs/cache-state.md).
  CacheState cache_state = CacheState::Cold;
  // The kernel floor (the device's min_kernel_s): per operation in the unfused fidelity, once
  // for the whole program in the fused and cache-aware ones. On by default; false (--kernel-floor
  // off) gives the unfloored times.
  bool kernel_floor = true;
};

// An output whose values repeat along some of its dimensions: `copies` copies of each distinct
// value; `bytes` written in full, `once_bytes` one copy of each value; `writer` the node that
// writes it.
struct RepeatedOutput {
  std::string tensor;
  int64_t copies = 1;
  int64_t bytes = 0;
  int64_t once_bytes = 0;
  size_t writer = 0;
};
// The graph outputs whose values repeat, in tensor order; `copies`: einsum::repeated_copies(g),
// where the caller has it.
std::vector<RepeatedOutput> repeated_outputs(const einsum::Graph& g);
std::vector<RepeatedOutput> repeated_outputs(const einsum::Graph& g,
                                             const std::vector<int64_t>& copies);

struct Analysis {
  std::string policy;  // precision policy name
  double dram_bandwidth_bytes_per_s = 0;
  einsum::OpCounts totals;              // summed over the nodes
  std::vector<NodeCost> nodes;          // one per graph node, in graph order
  std::vector<OpCost> ops;              // one per framework operation (op_units), in graph order
  std::vector<FidelityResult> results;  // one per requested fidelity, in the order requested
  // The cache-aware fidelity, when analysed: its schedule, where the capacity came from, the cost
  // of each group (in schedule order) and the sequential variant of its time.
  std::optional<CacheSchedule> cache;
  std::string cache_capacity_source;
  std::vector<CacheGroupCost> cache_groups;
  double cache_sequential_s = 0;
  std::string cache_skipped;         // why the cache fidelity was asked for but not analysed
  MemoryModel memory;                // the cache state and its figures
  bool kernel_floor = false;         // asked for (AnalysisOptions::kernel_floor)
  double kernel_floor_s = 0;         // the floor applied to the unfused operations; 0: none
  std::string kernel_floor_skipped;  // asked for but the device has no min_kernel_s: why
  // The floor of the fused and cache-aware times, with the kernel floor on: the device's
  // min_kernel_s when its file (or --set) has one and the program does work; 0: none
  // (docs/cache-state.md, "One kernel").
  double program_floor_s = 0;
  // The outputs whose values repeat (einsum::repeated_copies): the fused and cache-aware models
  // write each distinct value once, as a kernel that returns a broadcast view does
  // (docs/fidelities.md, "Repeated values").
  std::vector<RepeatedOutput> repeated_outputs;

  // The result of `f`; InternalError when it was not requested.
  const FidelityResult& result(Fidelity f) const;
};

// The unfused cost of node `n`.
NodeCost node_cost(const einsum::Node& n, const hw::Device& d, const PrecisionPolicy& policy);

// The framework operations that read packed fp4 pairs themselves (a tensor of dtype f4e2m1x2, not
// a decoded copy): _scaled_mm of NVFP4 operands, or a program's own unpacking of a packed tensor.
// The fp4 tensor core decodes and scales such pairs as it multiplies (docs/precision.md,
// "Block-scaled fp4 products").
std::vector<einsum::OpUnit> packed_fp4_units(const einsum::Graph& g);

// The counts of every node of `g`, summed.
einsum::OpCounts total_counts(const einsum::Graph& g);

// The unfused DRAM bytes: the sum over the framework operations of OpUnit::bytes().
int64_t unfused_bytes(const einsum::Graph& g);

// bytes_io of the fused model: sum over graph inputs, weights and outputs of
// touched_elements x element size.
int64_t fused_bytes(const einsum::Graph& g);

// Whether fidelity `f`'s DRAM bytes are the same on every device (unfused, fused); the
// cache-aware bytes depend on the device's capacity.
bool device_independent_bytes(Fidelity f);

// The DRAM bytes of fidelity `f`'s model, the same on every device: unfused, the sum of every
// framework operation's reads and writes (unfused_bytes); fused, fused_bytes less the repeated
// copies of each output whose values repeat (repeated_outputs). InternalError for a
// fidelity whose bytes depend on the device (cache).
int64_t dram_bytes(const einsum::Graph& g, Fidelity f);

// The cache-aware time of a schedule: T = max(total compute, memory.time_s(traffic)), with the
// per-group costs and the sequential variant (sum over groups of max(compute, memory)).
struct CacheTime {
  FidelityResult result;
  std::vector<CacheGroupCost> groups;
  double sequential_s = 0;
};
CacheTime cache_time(const CacheSchedule& s, const std::vector<NodeCost>& nodes,
                     const MemoryModel& memory);

// Analyses `g` on `d` under `policy` at `fidelities` (each implemented; InternalError otherwise).
// Throws UserError when the device has no rate for some node's work (precision.h), or when the
// cache fidelity has no capacity (and options.cache_optional is false) or no schedule fits.
Analysis analyze(const einsum::Graph& g, const hw::Device& d, const PrecisionPolicy& policy,
                 const std::vector<Fidelity>& fidelities = implemented_fidelities(),
                 const AnalysisOptions& options = {});

}  // namespace solar::sol
