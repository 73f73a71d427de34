// SOL cost formulas and the fidelity registry (include/solar/sol/analysis.h, docs/fidelities.md).
#include "solar/sol/analysis.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "solar/ir/dtype.h"
#include "solar/util/error.h"

namespace solar::sol {
namespace {

Bottleneck bound(double compute_s, double memory_s) {
  return compute_s > memory_s ? Bottleneck::Compute : Bottleneck::Memory;
}

// What an evaluator reads, and where the cache-aware one leaves its schedule.
struct EvalContext {
  const einsum::Graph& g;
  const hw::Device& device;
  const std::vector<NodeCost>& nodes;
  const MemoryModel& memory;
  const AnalysisOptions& options;
  Analysis& out;
};

// Unfused: T = sum_u max(compute_u, memory_u) over the framework operations.
FidelityResult evaluate_unfused(const EvalContext& ctx) {
  FidelityResult r{Fidelity::Unfused};
  double compute_bound_s = 0;
  double memory_bound_s = 0;
  int64_t bytes = 0;
  for (const OpCost& c : ctx.out.ops) {
    r.time_s += c.time_s;
    r.compute_s += c.compute_s;
    r.memory_s += c.memory_s;
    bytes += c.bytes;
    r.warm_bytes += ctx.memory.warm_bytes(c.bytes);
    (c.bottleneck == Bottleneck::Compute ? compute_bound_s : memory_bound_s) += c.time_s;
  }
  r.bytes = bytes;
  r.bottleneck = bound(compute_bound_s, memory_bound_s);
  return r;
}

// Fused: T = max(sum_i compute_i, memory.time_s(bytes_io)).
// max(compute, memory.time_s(bytes)), the shape of the fused and cache-aware models.
FidelityResult overlapped(Fidelity f, double compute_s, int64_t bytes, const MemoryModel& memory) {
  FidelityResult r{f};
  r.compute_s = compute_s;
  r.bytes = bytes;
  r.warm_bytes = memory.warm_bytes(bytes);
  r.memory_s = memory.time_s(bytes);
  r.time_s = std::max(r.compute_s, r.memory_s);
  r.bottleneck = bound(r.compute_s, r.memory_s);
  return r;
}

// The compute of the fused and cache-aware models: each node's MACs at their origin precision
// where that is faster (NodeCost::fused_compute_s).
double total_compute(const std::vector<NodeCost>& nodes) {
  double compute = 0;
  for (const NodeCost& c : nodes) compute += c.fused_compute_s;
  return compute;
}

FidelityResult evaluate_fused(const EvalContext& ctx) {
  return overlapped(Fidelity::Fused, total_compute(ctx.nodes), dram_bytes(ctx.g, Fidelity::Fused),
                    ctx.memory);
}

// Cache-aware: T = max(sum_i compute_i, traffic / bandwidth) for the best schedule at capacity C.
FidelityResult evaluate_cache(const EvalContext& ctx) {
  const std::optional<int64_t> capacity = cache_capacity(ctx.device, ctx.options.cache);
  SOLAR_CHECK(capacity.has_value(), "evaluate_cache without a capacity");
  std::optional<CacheOptimizer> own;
  CacheOptimizer* opt = ctx.options.optimizer;
  if (!opt) opt = &own.emplace(ctx.g);
  CacheSchedule sched = opt->optimize(*capacity);
  CacheTime t = cache_time(sched, ctx.nodes, ctx.memory);
  ctx.out.cache = std::move(sched);
  ctx.out.cache_capacity_source = capacity_source(ctx.options.cache);
  ctx.out.cache_groups = std::move(t.groups);
  ctx.out.cache_sequential_s = t.sequential_s;
  return t.result;
}

// One kernel: a program that does work (bytes or compute) runs at least one kernel, which takes
// at least the device's min_kernel_s, when its file (or --set) has that figure. With the kernel
// floor on (--kernel-floor on), the fused and cache-aware times (and the cache-aware sequential
// variant) are never below it; the unfused one is floored per operation. docs/cache-state.md,
// "One kernel".
void apply_program_floor(const einsum::Graph& g, const hw::Device& d, Analysis& a) {
  if (!a.kernel_floor || !d.min_kernel_s) return;
  // A relabelling (einsum::Node::relabel) launches nothing: a program of relabellings only runs
  // no kernel and is not floored.
  const bool works = std::any_of(g.nodes.begin(), g.nodes.end(), [](const einsum::Node& n) {
    return !n.relabel && (n.counts.flops() > 0 || n.bytes_read() + n.bytes_written() > 0);
  });
  if (!works) return;
  a.program_floor_s = d.min_kernel_s->value;
  for (FidelityResult& r : a.results) {
    if (r.fidelity == Fidelity::Unfused || r.time_s >= a.program_floor_s) continue;
    r.time_s = a.program_floor_s;
    r.floored = true;
  }
  if (a.cache) a.cache_sequential_s = std::max(a.cache_sequential_s, a.program_floor_s);
}

using Evaluator = FidelityResult (*)(const EvalContext&);

struct FidelityInfo {
  Fidelity fidelity;
  std::string_view name;
  std::string_view key;
  std::string_view description;
  Evaluator evaluate;  // nullptr: not implemented in this version
};

constexpr Evaluator evaluator_of(Fidelity f) {
  switch (f) {
    case Fidelity::Unfused:
      return evaluate_unfused;
    case Fidelity::Fused:
      return evaluate_fused;
    case Fidelity::Cache:
      return evaluate_cache;
  }
  return nullptr;
}

constexpr FidelityInfo kFidelities[] = {
#define SOLAR_X(e, s, k, d) {Fidelity::e, s, k, d, evaluator_of(Fidelity::e)},
    SOLAR_FIDELITIES(SOLAR_X)
#undef SOLAR_X
};

const FidelityInfo& info(Fidelity f) { return kFidelities[static_cast<size_t>(f)]; }

}  // namespace

std::string_view bottleneck_name(Bottleneck b) {
  switch (b) {
    case Bottleneck::Compute:
      return "compute";
    case Bottleneck::Memory:
      return "memory";
  }
  internal_error(__FILE__, __LINE__, "bad Bottleneck");
}

const Rate* NodeCost::main_rate() const {
  if (mac_rate) return &*mac_rate;
  return other_rate ? &*other_rate : nullptr;
}

std::string_view cache_state_name(CacheState s) {
  switch (s) {
#define SOLAR_X(e, n) \
  case CacheState::e: \
    return n;
    SOLAR_CACHE_STATES(SOLAR_X)
#undef SOLAR_X
  }
  internal_error(__FILE__, __LINE__, "bad CacheState");
}

CacheState parse_cache_state(std::string_view text) {
#define SOLAR_X(e, n) \
  if (text == (n)) return CacheState::e;
  SOLAR_CACHE_STATES(SOLAR_X)
#undef SOLAR_X
  throw UserError("unknown cache state '" + std::string(text) + "' (valid: cold, warm)");
}

int64_t MemoryModel::warm_bytes(int64_t bytes) const {
  if (state == CacheState::Cold) return 0;
  return std::min(bytes, llc_capacity_bytes);
}

double MemoryModel::time_s(int64_t bytes) const {
  const int64_t w = warm_bytes(bytes);
  double t = static_cast<double>(bytes - w) / dram_bandwidth;
  if (w > 0) t += static_cast<double>(w) / llc_bandwidth;
  return t;
}

MemoryModel memory_model(const hw::Device& d, CacheState s) {
  MemoryModel m;
  m.state = s;
  m.dram_bandwidth = d.dram_bandwidth_bytes_per_s();
  if (s == CacheState::Cold) return m;
  const hw::MemorySpec& l2 = d.level(hw::MemoryLevel::L2);
  const char* missing = !l2.capacity_bytes          ? "capacity (l2_capacity_bytes)"
                        : !l2.bandwidth_bytes_per_s ? "bandwidth (l2_bandwidth_bytes_per_s)"
                                                    : nullptr;
  if (missing) {
    throw UserError("--cache-state warm: the warm bound cannot be computed for " + d.name +
                    ": its device file has no L2 " + missing + "; give one with --set");
  }
  // C in whole bytes, rounded up; B_llc at least B_dram (a cache is never taken to be slower
  // than DRAM). Both err toward the smaller time.
  m.llc_capacity_bytes = static_cast<int64_t>(std::ceil(l2.capacity_bytes->value));
  m.llc_bandwidth = std::max(l2.bandwidth_bytes_per_s->value, m.dram_bandwidth);
  return m;
}

std::string_view fidelity_name(Fidelity f) { return info(f).name; }
std::string_view fidelity_key(Fidelity f) { return info(f).key; }
bool fidelity_implemented(Fidelity f) { return info(f).evaluate != nullptr; }

const std::vector<Fidelity>& implemented_fidelities() {
  static const std::vector<Fidelity> implemented = [] {
    std::vector<Fidelity> v;
    for (const FidelityInfo& i : kFidelities) {
      if (i.evaluate) v.push_back(i.fidelity);
    }
    return v;
  }();
  return implemented;
}

std::vector<Fidelity> parse_fidelities(std::string_view text) {
  if (text == "all") return implemented_fidelities();
  std::string valid;
  for (const FidelityInfo& i : kFidelities) {
    if (i.name == text) {
      if (!i.evaluate) {
        throw UserError("fidelity '" + std::string(text) + "' (" + std::string(i.description) +
                        ") is not implemented in this version");
      }
      return {i.fidelity};
    }
    if (i.evaluate) valid += std::string(i.name) + ", ";
  }
  throw UserError("unknown fidelity '" + std::string(text) + "' (valid: " + valid + "all)");
}

const FidelityResult& Analysis::result(Fidelity f) const {
  for (const FidelityResult& r : results) {
    if (r.fidelity == f) return r;
  }
  internal_error(__FILE__, __LINE__,
                 "fidelity '" + std::string(fidelity_name(f)) + "' was not analysed");
}

NodeCost node_cost(const einsum::Node& n, const hw::Device& d, const PrecisionPolicy& policy) {
  NodeCost c;
  if (n.counts.macs > 0) {
    c.mac_rate = mac_rate(n, d, policy);
    c.mac_s = 2.0 * static_cast<double>(n.counts.macs) / c.mac_rate->flops_per_s;
  }
  if (n.counts.other_ops() > 0) {
    c.other_rate = other_ops_rate(n, d, policy);
    c.other_s = static_cast<double>(n.counts.other_ops()) / c.other_rate->flops_per_s;
  }
  c.compute_s = std::max(c.mac_s, c.other_s);
  c.fused_compute_s = c.compute_s;
  if (c.mac_rate) {
    c.origin_mac_rate = origin_mac_rate(n, d, policy);
    if (c.origin_mac_rate && c.origin_mac_rate->flops_per_s > c.mac_rate->flops_per_s) {
      const double origin_mac_s =
          2.0 * static_cast<double>(n.counts.macs) / c.origin_mac_rate->flops_per_s;
      c.fused_compute_s = std::max(origin_mac_s, c.other_s);
    } else {
      c.origin_mac_rate.reset();
    }
  }
  c.bytes = n.relabel ? 0 : n.bytes_read() + n.bytes_written();
  c.memory_s = static_cast<double>(c.bytes) / d.dram_bandwidth_bytes_per_s();
  c.time_s = std::max(c.compute_s, c.memory_s);
  c.bottleneck = bound(c.compute_s, c.memory_s);
  return c;
}

std::vector<einsum::OpUnit> packed_fp4_units(const einsum::Graph& g) {
  std::vector<einsum::OpUnit> out;
  for (einsum::OpUnit& u : einsum::op_units(g)) {
    bool reads_fp4 = false;
    for (size_t i = u.first; i < u.last && !reads_fp4; ++i) {
      for (const einsum::Access& r : g.nodes[i].reads) {
        const einsum::TensorInfo* t = g.find_tensor(r.tensor);
        reads_fp4 = reads_fp4 || (t != nullptr && t->dtype == ir::DType::F4E2M1X2);
      }
    }
    if (reads_fp4) out.push_back(std::move(u));
  }
  return out;
}

namespace {

// An operation that reads packed fp4 pairs (packed_fp4_units) runs on the fp4 tensor core: its
// nodes without MACs (the unpacking, the table lookup, the block scales) cost no compute time in
// any fidelity, and its products are priced at their origin rate in the unfused one too (eager's
// kernel is the fp4 kernel). docs/precision.md, "Block-scaled fp4 products".
void price_fp4_operations(const einsum::Graph& g, std::vector<NodeCost>& nodes) {
  for (const einsum::OpUnit& u : packed_fp4_units(g)) {
    for (size_t i = u.first; i < u.last; ++i) {
      NodeCost& c = nodes[i];
      if (g.nodes[i].counts.macs == 0) {
        c.other_s = c.compute_s = c.fused_compute_s = 0;
      } else if (c.origin_mac_rate) {
        c.mac_rate = c.origin_mac_rate;
        c.mac_s = 2.0 * static_cast<double>(g.nodes[i].counts.macs) / c.mac_rate->flops_per_s;
        c.compute_s = c.fused_compute_s;
      }
      c.time_s = std::max(c.compute_s, c.memory_s);
      c.bottleneck = bound(c.compute_s, c.memory_s);
    }
  }
}

}  // namespace

std::vector<OpCost> op_costs(const einsum::Graph& g, const std::vector<NodeCost>& nodes,
                             const MemoryModel& memory, double kernel_floor_s) {
  SOLAR_CHECK(nodes.size() == g.nodes.size(), "op_costs: one cost per node");
  std::vector<OpCost> ops;
  for (const einsum::OpUnit& u : einsum::op_units(g)) {
    OpCost c;
    c.name = u.name;
    c.first = u.first;
    c.last = u.last;
    for (size_t i = u.first; i < u.last; ++i) {
      c.counts.macs += g.nodes[i].counts.macs;
      c.counts.simple += g.nodes[i].counts.simple;
      c.counts.special += g.nodes[i].counts.special;
      c.compute_s += nodes[i].compute_s;
      c.nodes_alone_s += nodes[i].time_s;
    }
    c.bytes = u.bytes();
    c.bytes_exact = u.bytes_exact;
    c.memory_s = memory.time_s(c.bytes);
    c.time_s = std::max(c.compute_s, c.memory_s);
    c.bottleneck = bound(c.compute_s, c.memory_s);
    // An operation that does work launches at least one kernel, which takes at least the floor.
    const bool launches = c.bytes > 0 || c.compute_s > 0;
    if (launches && kernel_floor_s > c.time_s) {
      c.time_s = kernel_floor_s;
      c.floored = true;
    }
    ops.push_back(std::move(c));
  }
  return ops;
}

int64_t unfused_bytes(const einsum::Graph& g) {
  int64_t bytes = 0;
  for (const einsum::OpUnit& u : einsum::op_units(g)) bytes += u.bytes();
  return bytes;
}

einsum::OpCounts total_counts(const einsum::Graph& g) {
  einsum::OpCounts t;
  for (const einsum::Node& n : g.nodes) {
    t.macs += n.counts.macs;
    t.simple += n.counts.simple;
    t.special += n.counts.special;
  }
  return t;
}

namespace {

// The bytes of the repeated copies of the outputs whose values repeat.
int64_t repeated_bytes(const einsum::Graph& g) {
  int64_t bytes = 0;
  for (const RepeatedOutput& r : repeated_outputs(g)) bytes += r.bytes - r.once_bytes;
  return bytes;
}

}  // namespace

int64_t fused_bytes(const einsum::Graph& g) {
  int64_t bytes = 0;
  const std::vector<einsum::Footprint> touched = einsum::touched_footprints(g);
  for (size_t i = 0; i < g.tensors.size(); ++i) {
    const einsum::TensorInfo& t = g.tensors[i];
    if (t.role == ir::TensorRole::Intermediate) continue;
    bytes += t.bytes_of(touched[i].elements);
  }
  return bytes;
}

std::vector<RepeatedOutput> repeated_outputs(const einsum::Graph& g) {
  return repeated_outputs(g, einsum::repeated_copies(g));
}

std::vector<RepeatedOutput> repeated_outputs(const einsum::Graph& g,
                                             const std::vector<int64_t>& copies) {
  std::vector<RepeatedOutput> out;
  std::vector<einsum::Footprint> touched;
  for (size_t t = 0; t < g.tensors.size(); ++t) {
    const einsum::TensorInfo& info = g.tensors[t];
    if (copies[t] <= 1 || info.role != ir::TensorRole::Output) continue;
    if (touched.empty()) touched = einsum::touched_footprints(g);
    RepeatedOutput r;
    r.tensor = info.name;
    r.copies = copies[t];
    r.bytes = info.bytes_of(touched[t].elements);
    r.once_bytes = info.bytes_of(touched[t].elements / copies[t]);
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      for (const einsum::Access& a : g.nodes[i].writes) {
        if (a.tensor == info.name) r.writer = i;
      }
    }
    out.push_back(std::move(r));
  }
  return out;
}

bool device_independent_bytes(Fidelity f) { return f != Fidelity::Cache; }

CacheTime cache_time(const CacheSchedule& s, const std::vector<NodeCost>& nodes,
                     const MemoryModel& memory) {
  CacheTime t;
  t.result = overlapped(Fidelity::Cache, total_compute(nodes), s.traffic_bytes, memory);
  for (const CacheGroup& grp : s.groups) {
    CacheGroupCost c;
    for (size_t i = grp.first; i < grp.last; ++i) c.compute_s += nodes[i].fused_compute_s;
    c.memory_s = memory.time_s(grp.traffic_bytes);
    c.time_s = std::max(c.compute_s, c.memory_s);
    t.sequential_s += c.time_s;
    t.groups.push_back(c);
  }
  return t;
}

int64_t dram_bytes(const einsum::Graph& g, Fidelity f) {
  switch (f) {
    case Fidelity::Unfused:
      return unfused_bytes(g);
    case Fidelity::Fused:
      return fused_bytes(g) - repeated_bytes(g);
    case Fidelity::Cache:
      break;
  }
  internal_error(__FILE__, __LINE__,
                 "no DRAM byte count for fidelity '" + std::string(fidelity_name(f)) + "'");
}

Analysis analyze(const einsum::Graph& g, const hw::Device& d, const PrecisionPolicy& policy,
                 const std::vector<Fidelity>& fidelities, const AnalysisOptions& options) {
  Analysis a;
  a.policy = policy.name;
  a.dram_bandwidth_bytes_per_s = d.dram_bandwidth_bytes_per_s();
  a.memory = memory_model(d, options.cache_state);
  a.totals = total_counts(g);
  for (const einsum::Node& n : g.nodes) {
    NodeCost c = node_cost(n, d, policy);
    if (a.memory.state != CacheState::Cold) {  // the node alone, its bytes as the cache state says
      c.memory_s = a.memory.time_s(c.bytes);
      c.time_s = std::max(c.compute_s, c.memory_s);
      c.bottleneck = bound(c.compute_s, c.memory_s);
    }
    a.nodes.push_back(c);
  }
  price_fp4_operations(g, a.nodes);
  // A node that writes a tensor whose values repeat computes each distinct value once in the
  // fused and cache-aware models.
  const std::vector<int64_t> copies = einsum::repeated_copies(g);
  std::map<std::string_view, int64_t> repeated;  // name -> copies, of the tensors that repeat
  for (size_t t = 0; t < g.tensors.size(); ++t) {
    if (copies[t] > 1) repeated.emplace(g.tensors[t].name, copies[t]);
  }
  for (size_t i = 0; !repeated.empty() && i < g.nodes.size(); ++i) {
    for (const einsum::Access& w : g.nodes[i].writes) {
      if (const auto it = repeated.find(w.tensor); it != repeated.end()) {
        a.nodes[i].fused_compute_s /= static_cast<double>(it->second);
      }
    }
  }
  a.repeated_outputs = repeated_outputs(g, copies);
  a.kernel_floor = options.kernel_floor;
  if (options.kernel_floor) {
    if (d.min_kernel_s) {
      a.kernel_floor_s = d.min_kernel_s->value;
    } else {
      a.kernel_floor_skipped = d.name +
                               " has no min_kernel_s in its device file; give one with "
                               "--set min_kernel_s=SECONDS";
    }
  }
  a.ops = op_costs(g, a.nodes, a.memory, a.kernel_floor_s);
  for (const Fidelity f : fidelities) {
    const Evaluator evaluate = info(f).evaluate;
    SOLAR_CHECK(evaluate != nullptr,
                "fidelity '" + std::string(fidelity_name(f)) + "' is not implemented");
    if (f == Fidelity::Cache && !cache_capacity(d, options.cache)) {
      const std::string why = d.name + " has no " +
                              std::string(hw::memory_level_name(options.cache.level)) +
                              " capacity in its device file; give one with --capacity";
      if (!options.cache_optional) throw UserError("cache fidelity: " + why);
      a.cache_skipped = why;
      continue;
    }
    a.results.push_back(evaluate(EvalContext{g, d, a.nodes, a.memory, options, a}));
  }
  apply_program_floor(g, d, a);
  return a;
}

}  // namespace solar::sol
