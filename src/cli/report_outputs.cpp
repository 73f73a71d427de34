// `solar sol`'s report outputs (include/solar/cli/report_outputs.h).
#include "solar/cli/report_outputs.h"

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "solar/report/sol_report.h"

namespace solar::cli {

void add_report_outputs(CLI::App& app, ReportOutputs& o) {
  app.add_option("--html", o.html, "Write the self-contained HTML report (roofline, tables)")
      ->type_name("OUT");
  app.add_option("--trace", o.trace, "Write a Chrome/Perfetto trace of the unfused SOL timeline")
      ->type_name("OUT");
  app.add_option("--csv", o.csv, "Write the per-node table as CSV")->type_name("OUT");
  app.add_option("--dot", o.dot, "Write the einsum graph in Graphviz DOT")->type_name("OUT");
  app.add_option("--measured-ms", o.measured.ms,
                 "A measured time of the program, in ms: adds headroom = measured / SOL")
      ->type_name("X");
  app.add_option("--measured-on", o.measured.on,
                 "The device that measured (another than --hw: headroom is a what-if)")
      ->type_name("NAME");
  app.add_option("--measured-nodes", o.measured.nodes_file,
                 "Per-node measured times (JSON): adds per-node headroom (needs --measured-ms)")
      ->type_name("FILE");
}

bool reads_json_report(const ReportOutputs& o) {
  return !o.html.empty() || !o.trace.empty() || !o.csv.empty();
}

void render_report_outputs(report::SolReport& s, const ReportOutputs& o,
                           std::vector<std::pair<std::string, std::string>>& files) {
  const std::pair<const std::string*, std::string_view> asked[] = {
      {&o.html, "html"}, {&o.trace, "trace"}, {&o.csv, "csv"}, {&o.dot, "dot"}};
  for (const auto& [path, kind] : asked) {
    if (!path->empty()) files.emplace_back(*path, report::render_output(s, kind));
  }
  std::string wrote;
  for (const auto& [path, text] : files) wrote += "wrote " + path + "\n";
  if (!wrote.empty()) s.table += "\n" + wrote;
}

}  // namespace solar::cli
