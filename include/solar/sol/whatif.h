// What-ifs over several devices (docs/report.md): the cross-platform comparison (`solar
// compare`) and the inverse roofline (`solar provision`), from one graph. Each device is analysed
// on its own; a device that cannot run the graph (no rate for some node's precision) keeps its
// row with the reason instead of numbers. report/whatif.h renders them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "solar/einsum/graph.h"
#include "solar/hw/device.h"
#include "solar/sol/analysis.h"
#include "solar/sol/precision.h"
#include "solar/sol/provision.h"

namespace solar::sol {

struct DeviceResult {
  std::string device;
  std::optional<Analysis> analysis;  // absent when the device cannot run the graph
  std::string error;                 // why `analysis` is absent
  std::vector<Provision> provision;  // one per fidelity when a latency target is given
  size_t fallback_nodes = 0;         // nodes with a precision fallback on this device
};

struct DeviceComparison {
  std::string source;  // the graph's source (a file path; reports show its name)
  ir::SymbolValues sizes;
  std::string policy;
  CacheState cache_state = CacheState::Cold;  // AnalysisOptions::cache_state
  std::vector<Fidelity> fidelities;
  einsum::OpCounts totals;
  // DRAM bytes of each fidelity whose bytes are device-free (unfused, fused); the cache-aware
  // bytes are in each device's analysis.
  std::vector<std::pair<Fidelity, int64_t>> bytes;
  std::optional<double> latency_s;    // the target of `solar provision`
  std::vector<DeviceResult> devices;  // in the order given
};

// Analyses `g` on every device; with `latency_s`, adds the inverse roofline of each. The cache
// fidelity shares one optimiser across the devices (unless `options` brings one).
DeviceComparison compare_devices(const einsum::Graph& g, const std::vector<hw::Device>& devices,
                                 const PrecisionPolicy& policy,
                                 const std::vector<Fidelity>& fidelities,
                                 std::optional<double> latency_s = std::nullopt,
                                 AnalysisOptions options = {});

}  // namespace solar::sol
