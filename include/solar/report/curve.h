// `solar curve`: DRAM traffic and SOL time of the cache-aware model against on-chip capacity
// (docs/report.md, docs/fidelities.md): the data, and its JSON, CSV, SVG and terminal forms.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "solar/einsum/graph.h"
#include "solar/hw/device.h"
#include "solar/sol/precision.h"

namespace solar::report {

struct CurvePoint {
  int64_t capacity_bytes = 0;
  std::string mark;                      // "L2", "SMEM" or "" (a sweep point)
  std::optional<int64_t> traffic_bytes;  // absent: no schedule fits
  double time_s = 0;                     // max(compute, traffic / bandwidth); 0 when nothing fits
  size_t groups = 0;
  size_t tiled_groups = 0;
};

struct Curve {
  std::string source;  // file name, without directories
  std::string device;
  double dram_bandwidth_bytes_per_s = 0;
  double compute_s = 0;  // sum of the nodes' compute terms
  int64_t unfused_bytes = 0, fused_bytes = 0;
  double unfused_s = 0, fused_s = 0;
  std::optional<int64_t> l2_bytes, smem_bytes;  // the device's, when its file has them
  std::vector<CurvePoint> points;               // capacity increasing
};

// The sweep 1 KiB, 2 KiB, ..., 1 GiB (powers of two), plus the device's L2 and SMEM capacities.
// UserError as sol::analyze.
Curve make_curve(const einsum::Graph& g, const hw::Device& d, const sol::PrecisionPolicy& policy);

nlohmann::json curve_to_json(const Curve& c);
// One header line, one line per point: capacity_bytes,mark,traffic_bytes,sol_s,groups,tiled_groups.
std::string curve_to_csv(const Curve& c);
// A log-log plot of DRAM traffic against capacity, the fused and unfused traffic as horizontal
// lines, the device's L2 and SMEM as vertical ones. Deterministic text.
std::string curve_to_svg(const Curve& c);
// The table printed by `solar curve`.
std::string render_curve(const Curve& c);

}  // namespace solar::report
