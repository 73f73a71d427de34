// Report sections added to `solar sol`'s report by the options of docs/calibrate.md and
// docs/report.md ("Insights", "Headroom"): their JSON form and their lines in the terminal table.
#pragma once

#include <string>

#include <nlohmann/json_fwd.hpp>

#include "solar/sol/headroom.h"
#include "solar/sol/insights.h"

namespace solar::report {

// `insights`: contraction_chains, fusion_opportunities, bottlenecks, notes (docs/report.md).
nlohmann::json insights_to_json(const sol::Insights& in);

// `headroom`: measured_s, measured_on, method, target, what_if, note, by_fidelity, bound_s,
// violation, and with per-node times nodes, nodes_method, nodes_sol_unfused_s,
// nodes_unattributed, nodes_unattributed_sol_s (docs/calibrate.md).
nlohmann::json headroom_to_json(const sol::Headroom& h);

// The one-line statement of where the measurement and the bound come from: "measured on X, SOL
// of Y: headroom is a what-if ...", "measured on Y", or "... not stated ...".
std::string headroom_note(const sol::Headroom& h);

// A few lines for the terminal: chains whose order can be improved, and the largest fusion
// opportunities (at most `top_fusions`). Empty when there is nothing to say.
std::string render_insights(const sol::Insights& in, size_t top_fusions = 3);

// A headroom ratio: four significant digits, whole numbers from 10,000 up ("0.9876", "565.9",
// "28294").
std::string format_ratio(double v);

// The headroom lines of the terminal table.
// `attainable`: the headroom against the SOL at the device's measured ceilings
// (Report::attainable), one line under the ratios.
std::string render_headroom(const sol::Headroom& h, const sol::Headroom* attainable = nullptr);

// The `headroom.attainable` object: {"by_fidelity": {fidelity: measured / attainable time}}.
nlohmann::json attainable_headroom_to_json(const sol::Headroom& h);

}  // namespace solar::report
