// `solar curve`: DRAM traffic and SOL time of the cache-aware model against on-chip capacity
// (docs/report.md, docs/fidelities.md): the JSON, CSV, SVG and terminal forms of the data
// (sol/curve.h).
#pragma once

#include <string>

#include <nlohmann/json_fwd.hpp>

#include "solar/sol/curve.h"

namespace solar::report {

nlohmann::json curve_to_json(const sol::Curve& c);
// One header line, one line per point: capacity_bytes,mark,traffic_bytes,sol_s,groups,tiled_groups.
std::string curve_to_csv(const sol::Curve& c);
// A log-log plot of DRAM traffic against capacity, the fused and unfused traffic as horizontal
// lines, the device's L2 and SMEM as vertical ones. Deterministic text.
std::string curve_to_svg(const sol::Curve& c);
// The table printed by `solar curve`.
std::string render_curve(const sol::Curve& c);

}  // namespace solar::report
