// What-ifs over several devices: compare and provision (include/solar/sol/whatif.h).
#include "solar/sol/whatif.h"

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "solar/sol/cache.h"
#include "solar/util/error.h"

namespace solar::sol {
namespace {

size_t count_fallback_nodes(const Analysis& a) {
  return static_cast<size_t>(std::count_if(a.nodes.begin(), a.nodes.end(), [](const auto& c) {
    return (c.mac_rate && c.mac_rate->fallback()) || (c.other_rate && c.other_rate->fallback());
  }));
}

}  // namespace

DeviceComparison compare_devices(const einsum::Graph& program,
                                 const std::vector<hw::Device>& devices,
                                 const PrecisionPolicy& policy,
                                 const std::vector<Fidelity>& fidelities,
                                 std::optional<double> latency_s, AnalysisOptions options) {
  // A report's graph has the policy's weight storage already; applying it again changes nothing.
  std::optional<einsum::Graph> stored;
  if (policy.weight_format) stored = store_weights(program, policy);
  const einsum::Graph& g = stored ? *stored : program;
  std::optional<CacheOptimizer> optimizer;  // one for all devices: it keeps its tilings
  if (!options.optimizer) options.optimizer = &optimizer.emplace(g);
  DeviceComparison r;
  r.source = g.source;
  r.sizes = g.sizes;
  r.policy = policy.name;
  r.cache_state = options.cache_state;
  r.fidelities = fidelities;
  r.totals = total_counts(g);
  for (const Fidelity f : fidelities) {
    if (device_independent_bytes(f)) r.bytes.emplace_back(f, dram_bytes(g, f));
  }
  r.latency_s = latency_s;
  for (const hw::Device& d : devices) {
    DeviceResult result;
    result.device = d.name;
    try {
      result.analysis = analyze(g, d, policy, fidelities, options);
    } catch (const UserError& e) {  // the device has no rate for some node's precision
      result.error = e.what();
    }
    if (result.analysis) {
      result.fallback_nodes = count_fallback_nodes(*result.analysis);
      if (latency_s) result.provision = provision(*result.analysis, *latency_s);
    }
    r.devices.push_back(std::move(result));
  }
  return r;
}

}  // namespace solar::sol
