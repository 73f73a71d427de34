// What-if reports over several devices (docs/report.md): the cross-platform comparison (`solar
// compare`) and the inverse roofline (`solar provision`), from one graph. Each device is analysed
// on its own; a device that cannot run the graph (no rate for some node's precision) keeps its
// row with the reason instead of numbers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "solar/einsum/graph.h"
#include "solar/hw/device.h"
#include "solar/report/report.h"
#include "solar/sol/analysis.h"
#include "solar/sol/precision.h"
#include "solar/sol/provision.h"

namespace solar::report {

struct DeviceResult {
  std::string device;
  std::optional<sol::Analysis> analysis;  // absent when the device cannot run the graph
  std::string error;                      // why `analysis` is absent
  std::vector<sol::Provision> provision;  // one per fidelity when a latency target is given
  size_t fallback_nodes = 0;              // nodes with a precision fallback on this device
};

struct MultiDeviceReport {
  std::string source;  // the IR file's name, without directories
  ir::SymbolValues sizes;
  std::string policy;
  Verification verification;  // of the program, by its frontend (provenance.h)
  std::vector<sol::Fidelity> fidelities;
  einsum::OpCounts totals;
  // DRAM bytes of each fidelity whose bytes are device-free (unfused, fused); the cache-aware
  // bytes are in each device's analysis.
  std::vector<std::pair<sol::Fidelity, int64_t>> bytes;
  std::optional<double> latency_s;    // the target of `solar provision`
  std::vector<DeviceResult> devices;  // in the order given
};

// Analyses `g` on every device; with `latency_s`, adds the inverse roofline of each. The cache
// fidelity shares one optimiser across the devices (unless `options` brings one).
MultiDeviceReport compare_devices(const einsum::Graph& g, const std::vector<hw::Device>& devices,
                                  const sol::PrecisionPolicy& policy,
                                  const std::vector<sol::Fidelity>& fidelities,
                                  std::optional<double> latency_s = std::nullopt,
                                  sol::AnalysisOptions options = {});

// JSON (docs/report.md), keys sorted; `provision` objects only with a latency target.
nlohmann::json multi_device_to_json(const MultiDeviceReport& r);

// `solar compare`: one row per device: SOL and bottleneck per fidelity, fused/unfused ratio.
std::string render_compare(const MultiDeviceReport& r);

// `solar provision`: what the target needs, then one row per device and fidelity with the
// factors against the device. InternalError without a latency target.
std::string render_provision(const MultiDeviceReport& r);

}  // namespace solar::report
