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
#include <nlohmann/json_fwd.hpp>

#include "solar/report/report.h"

namespace solar::cli {

struct ReportOutputs {
  std::string html;
  std::string trace;
  std::string csv;
  std::string dot;
  std::optional<double> measured_ms;
  std::string measured_on;
  std::string measured_method;  // hidden: how `solar analyze --measure` timed the run
  std::string measured_nodes;   // a file of per-node measured times
};

// Adds the options above to `app`, storing into `o`.
void add_report_outputs(CLI::App& app, ReportOutputs& o);

// Whether an output of `o` is rendered from the JSON report (--html, --trace, --csv).
bool reads_json_report(const ReportOutputs& o);

// Adds the `insights` (and with a measured time the `headroom`) section to the JSON report `*j`
// and their lines to `table`, then renders every file asked for into `files` (path, content),
// adding a line "wrote OUT" to `table` for each; the caller writes them all at once
// (write_files_atomically), so that one bad path leaves none written. `j` may be null (no JSON
// report is built: on a large graph building it is a large part of a run) only when
// reads_json_report(o) is false. UserError for a bad measured time or --measured-on without
// --measured-ms.
void render_report_outputs(const report::Report& r, const ReportOutputs& o, nlohmann::json* j,
                           std::string& table,
                           std::vector<std::pair<std::string, std::string>>& files);

}  // namespace solar::cli
