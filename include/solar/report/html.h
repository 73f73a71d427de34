// The HTML report (`solar sol --html OUT.html`, docs/report.md "HTML"): one self-contained file,
// no network: an inline SVG roofline (the device's roofs, each node as a point at its arithmetic
// intensity, one marker per fidelity), the fidelities side by side, a sortable per-node table
// (inline JavaScript; the rows are in the file, sorted by SOL time when the script runs), fusion
// groups and opportunities, contraction-order insights, the inverse-roofline and cross-platform
// tables, and the headroom when a measured time was given.
//
// It renders the JSON report, not the analysis: every fidelity the report lists appears, in the
// registry's order. Same JSON, same bytes.
//
// Laid out for a browser window of 1,400 px: the roof labels name the rate used ('*' a fallback,
// whose whole label, "bf16 vector->fp32 vector (H100-SXM has no bf16 vector rate)", is in a
// tooltip and a footnote), stacked beside the plot clear of each other and of the legend; the
// node table's precision column the same short names; no number in a table breaks across lines
// (tests/python/test_html_report.py checks both in Chromium).
#pragma once

#include <string>

#include <nlohmann/json_fwd.hpp>

namespace solar::report {

// `report`: report_to_json(...) with the optional `insights` and `headroom` sections.
// `devices`: multi_device_to_json(...) of the same graph (with a latency target for the
// inverse-roofline table), or null to leave both tables out.
std::string render_html(const nlohmann::json& report, const nlohmann::json& devices);

}  // namespace solar::report
