// The report of `solar sol` with its sections beyond report_to_json: `insights` (always) and,
// with a measured time, `headroom` (docs/report.md, "Insights"; docs/calibrate.md, "Headroom"),
// and its renderings (HTML, trace, CSV, DOT). What the `solar sol` command prints and writes
// (cli/sol_commands.h) and what `solar._core.analyze` returns (python/bindings/analysis.cpp).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "solar/report/report.h"
#include "solar/sol/headroom.h"

namespace solar::report {

// A measured time of the whole program (`--measured-ms`): adds the `headroom` section.
// `on`: the device that measured (another than the analysed one: headroom is a what-if);
// `method`: how the run was timed (the Python API: solar.torch.measure); per-node measured times
// (docs/calibrate.md, "Per-node headroom") from the file `nodes_file`, or its text `nodes_json`.
struct Measured {
  std::optional<double> ms;
  std::string on;
  std::string method;
  std::string nodes_file;
  std::string nodes_json;
};

struct SolReport {
  Report report;
  nlohmann::json json;  // report_to_json with `insights` (and `headroom` with a measured time)
  std::string table;    // render_report with the insight and headroom lines
  std::optional<sol::Headroom> headroom;
  size_t top = 10;   // rows per table
  std::string tail;  // the insight and headroom lines, after render_report's
};

// The report with its `insights` (and with a measured time its `headroom`) section in the JSON
// and their lines in the table (`top` rows per table). `json` false: no JSON report is built (on
// a graph of 100k nodes building it is a large part of a run; `SolReport::json` stays null);
// `details`: the table with render_report's details (`--details`). UserError for a bad per-node
// times file, or a device or per-node times without a measured time.
SolReport make_sol_report(Report r, const Measured& measured, size_t top, bool json = true,
                          bool details = false);

// The table of `s` (SolReport::table), with render_report's `details` or without.
std::string render_sol_table(const SolReport& s, bool details);

// One rendering of `s`: "html", "trace", "csv" or "dot" (UserError for another). HTML, trace and
// CSV read the JSON report (InternalError when `s` was made without it).
std::string render_output(const SolReport& s, std::string_view kind);

}  // namespace solar::report
