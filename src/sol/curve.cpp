// Traffic and SOL against on-chip capacity (include/solar/sol/curve.h).
#include "solar/sol/curve.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "solar/sol/analysis.h"
#include "solar/sol/cache.h"

namespace solar::sol {
Curve make_curve(const einsum::Graph& program, const hw::Device& d, const PrecisionPolicy& policy,
                 CacheState state, bool kernel_floor) {
  std::optional<einsum::Graph> stored;  // the policy's weight storage (store_weights)
  if (policy.weight_format) stored = store_weights(program, policy);
  const einsum::Graph& g = stored ? *stored : program;
  AnalysisOptions options;
  options.cache_state = state;
  options.kernel_floor = kernel_floor;
  const Analysis a = analyze(g, d, policy, {Fidelity::Unfused, Fidelity::Fused}, options);
  Curve c;
  c.source = g.source;
  c.device = d.name;
  c.cache_state = state;
  c.kernel_floor = kernel_floor;
  c.kernel_floor_s = a.program_floor_s;
  c.kernel_floor_skipped = a.kernel_floor_skipped;
  c.dram_bandwidth_bytes_per_s = a.dram_bandwidth_bytes_per_s;
  c.compute_s = a.result(Fidelity::Fused).compute_s;
  c.unfused_bytes = a.result(Fidelity::Unfused).bytes;
  c.fused_bytes = a.result(Fidelity::Fused).bytes;
  c.unfused_s = a.result(Fidelity::Unfused).time_s;
  c.fused_s = a.result(Fidelity::Fused).time_s;
  std::vector<std::pair<int64_t, std::string>> capacities;
  for (int k = kCurveMinLog2; k <= kCurveMaxLog2; ++k) capacities.emplace_back(int64_t{1} << k, "");
  for (const auto& [level, name] :
       {std::pair{hw::MemoryLevel::L2, "L2"}, std::pair{hw::MemoryLevel::Smem, "SMEM"}}) {
    const auto& cap = d.level(level).capacity_bytes;
    if (!cap) continue;
    const auto bytes = static_cast<int64_t>(cap->value);
    (level == hw::MemoryLevel::L2 ? c.l2_bytes : c.smem_bytes) = bytes;
    capacities.emplace_back(bytes, name);
  }
  std::stable_sort(capacities.begin(), capacities.end(),
                   [](const auto& x, const auto& y) { return x.first < y.first; });
  CacheOptimizer opt(g);
  for (const auto& [capacity, mark] : capacities) {
    CurvePoint p;
    p.capacity_bytes = capacity;
    p.mark = mark;
    if (const std::optional<CacheSchedule> s = opt.try_optimize(capacity)) {
      const CacheTime t = cache_time(*s, a.nodes, a.memory);
      p.traffic_bytes = s->traffic_bytes;
      // The one-kernel floor, as the fused time has it (sol/analysis.h).
      p.time_s = std::max(t.result.time_s, a.program_floor_s);
      p.groups = s->groups.size();
      p.tiled_groups = static_cast<size_t>(
          std::count_if(s->groups.begin(), s->groups.end(),
                        [](const CacheGroup& x) { return x.mode == GroupMode::Tiled; }));
    }
    c.points.push_back(std::move(p));
  }
  return c;
}

}  // namespace solar::sol
