// The report options of `solar sol` beyond the table and the JSON (docs/report.md, "HTML, trace,
// CSV, DOT"; docs/calibrate.md, "Headroom"):
//
//   --html OUT.html   self-contained HTML report (report/html.h)
//   --trace OUT.json  Chrome / Perfetto trace of the unfused SOL timeline (report/exports.h)
//   --csv OUT.csv     per-node table
//   --dot OUT.dot     the einsum graph in Graphviz DOT
//   --measured-ms X   a measured time of the whole program: adds the `headroom` section
//   --measured-on N   the device that measured (another than --hw: headroom is a what-if)
//   --measured-nodes F  per-node measured times (JSON, docs/calibrate.md): adds headroom.nodes
//
// and the `insights` section, always added to the JSON report and, when it has something to
// say, to the table.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <string_view>

#include "solar/report/report.h"
#include "solar/sol/headroom.h"

namespace solar::cli {

struct ReportOutputs {
  std::string html;
  std::string trace;
  std::string csv;
  std::string dot;
  std::optional<double> measured_ms;
  std::string measured_on;
  std::string measured_method;      // how the run was timed (the Python API: solar.measure)
  std::string measured_nodes;       // a file of per-node measured times
  std::string measured_nodes_json;  // or the file's text itself (the Python API)
};

// The report of `solar sol` with its sections: what the command prints and writes, and what
// `solar._core.analyze` returns (python/bindings/analysis.cpp).
struct SolReport {
  report::Report report;
  nlohmann::json json;  // report_to_json with `insights` (and `headroom` with a measured time)
  std::string table;    // render_report with the insight and headroom lines
  std::optional<sol::Headroom> headroom;
};

// Adds the options above to `app`, storing into `o`.
void add_report_outputs(CLI::App& app, ReportOutputs& o);

// Whether an output of `o` is rendered from the JSON report (--html, --trace, --csv).
bool reads_json_report(const ReportOutputs& o);

// The report with its `insights` (and with a measured time its `headroom`) section in the JSON
// and their lines in the table (`top` rows per table). `json` false: no JSON report is built (on
// a graph of 100k nodes building it is a large part of a run; `SolReport::json` stays null),
// allowed only when reads_json_report(o) is false. UserError for a bad measured time or
// --measured-on without --measured-ms.
SolReport make_sol_report(report::Report r, const ReportOutputs& o, size_t top, bool json = true);

// One rendering of `s`: "html", "trace", "csv" or "dot" (InternalError for another).
std::string render_output(const SolReport& s, std::string_view kind);

// Renders every file `o` asks for into `files` (path, content), adding a line "wrote OUT" to
// `s.table` for each; the caller writes them all at once (write_files_atomically), so that one
// bad path leaves none written.
void render_report_outputs(SolReport& s, const ReportOutputs& o,
                           std::vector<std::pair<std::string, std::string>>& files);

}  // namespace solar::cli
