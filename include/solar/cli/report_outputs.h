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
// The report with its `insights` and `headroom` sections and its renderings are the report
// module's (report/sol_report.h).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "solar/report/sol_report.h"

namespace solar::cli {

struct ReportOutputs {
  std::string html;
  std::string trace;
  std::string csv;
  std::string dot;
  report::Measured measured;  // --measured-ms, --measured-on, --measured-nodes
};

// Adds the options above to `app`, storing into `o`.
void add_report_outputs(CLI::App& app, ReportOutputs& o);

// Whether an output of `o` is rendered from the JSON report (--html, --trace, --csv).
bool reads_json_report(const ReportOutputs& o);

// Renders every file `o` asks for into `files` (path, content), adding a line "wrote OUT" to
// `s.table` for each; the caller writes them all at once (write_files_atomically), so that one
// bad path leaves none written.
void render_report_outputs(report::SolReport& s, const ReportOutputs& o,
                           std::vector<std::pair<std::string, std::string>>& files);

}  // namespace solar::cli
