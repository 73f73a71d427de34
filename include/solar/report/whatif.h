// What-if reports over several devices (docs/report.md): the cross-platform comparison (`solar
// compare`) and the inverse roofline (`solar provision`) of sol/whatif.h, as JSON and tables.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "solar/report/provenance.h"
#include "solar/sol/whatif.h"

namespace solar::report {

// A comparison of devices (sol/whatif.h) and the verification of its program.
struct MultiDeviceReport {
  sol::DeviceComparison comparison;
  Verification verification;  // of the program, by its frontend (provenance.h)
};

// JSON (docs/report.md), keys sorted; `provision` objects only with a latency target.
nlohmann::json multi_device_to_json(const MultiDeviceReport& r);

// `solar compare`: one row per device: SOL and bottleneck per fidelity, fused/unfused ratio.
std::string render_compare(const MultiDeviceReport& r);

// `solar provision`: what the target needs, then one row per device and fidelity with the
// factors against the device. InternalError without a latency target.
std::string render_provision(const MultiDeviceReport& r);

}  // namespace solar::report
