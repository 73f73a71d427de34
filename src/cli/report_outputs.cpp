// `solar sol`'s report outputs and sections (include/solar/cli/report_outputs.h).
#include "solar/cli/report_outputs.h"

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "solar/einsum/graph.h"
#include "solar/hw/device.h"
#include "solar/report/exports.h"
#include "solar/report/html.h"
#include "solar/report/sections.h"
#include "solar/report/whatif.h"
#include "solar/sol/headroom.h"
#include "solar/sol/insights.h"
#include "solar/sol/precision.h"
#include "solar/util/error.h"
#include "solar/util/file.h"

namespace solar::cli {
namespace {

std::vector<sol::Fidelity> analysed_fidelities(const sol::Analysis& a) {
  std::vector<sol::Fidelity> out;
  for (const sol::FidelityResult& r : a.results) out.push_back(r.fidelity);
  return out;
}

// The cross-platform and inverse-roofline tables of the HTML report: the target device as
// analysed, then every other built-in device; the latency target is the measured time when
// there is one, else the target's smallest SOL time.
nlohmann::json devices_json(const report::Report& r, const std::optional<sol::Headroom>& h) {
  std::vector<hw::Device> devices = {r.device};
  for (const std::string& name : hw::builtin_device_names()) {
    if (name != r.device.name) devices.push_back(hw::load_builtin_device(name));
  }
  double latency = std::numeric_limits<double>::infinity();
  for (const sol::FidelityResult& f : r.analysis.results) latency = std::min(latency, f.time_s);
  if (h) latency = h->measurement.time_s;
  const std::optional<double> target =
      latency > 0 && latency < std::numeric_limits<double>::infinity()
          ? std::optional<double>(latency)
          : std::nullopt;
  return report::multi_device_to_json(
      report::compare_devices(r.graph, devices, sol::find_precision_policy(r.analysis.policy),
                              analysed_fidelities(r.analysis), target));
}

// The per-node times of a --measured-nodes file (docs/calibrate.md, "Per-node headroom"):
// {"method": "...", "nodes": [{"node", "op", "measured_s", "lowered", "kernels", "tensors"}]};
// only `node` and `measured_s` are required.
std::vector<sol::NodeMeasurement> read_measured_nodes(const std::string& path,
                                                      std::string& method) {
  try {
    const nlohmann::json doc = nlohmann::json::parse(read_text_file(path));
    method = doc.value("method", "");
    std::vector<sol::NodeMeasurement> nodes;
    for (const nlohmann::json& n : doc.at("nodes")) {
      nodes.push_back({n.at("node").get<std::string>(), n.value("op", ""),
                       n.at("measured_s").get<double>(), n.value("lowered", true),
                       n.value("kernels", std::vector<std::string>{}),
                       n.value("tensors", std::vector<std::string>{})});
    }
    return nodes;
  } catch (const nlohmann::json::exception& e) {
    throw UserError("--measured-nodes " + path + ": not a per-node times file: " + e.what());
  }
}

}  // namespace

void add_report_outputs(CLI::App& app, ReportOutputs& o) {
  app.add_option("--html", o.html, "Write the self-contained HTML report (roofline, tables)")
      ->type_name("OUT");
  app.add_option("--trace", o.trace, "Write a Chrome/Perfetto trace of the unfused SOL timeline")
      ->type_name("OUT");
  app.add_option("--csv", o.csv, "Write the per-node table as CSV")->type_name("OUT");
  app.add_option("--dot", o.dot, "Write the einsum graph in Graphviz DOT")->type_name("OUT");
  app.add_option("--measured-ms", o.measured_ms,
                 "A measured time of the program, in ms: adds headroom = measured / SOL")
      ->type_name("X");
  app.add_option("--measured-on", o.measured_on,
                 "The device that measured (another than --hw: headroom is a what-if)")
      ->type_name("NAME");
  app.add_option("--measured-method", o.measured_method)->group("");  // hidden: solar analyze
  app.add_option("--measured-nodes", o.measured_nodes,
                 "Per-node measured times (JSON): adds per-node headroom (needs --measured-ms)")
      ->type_name("FILE");
}

bool reads_json_report(const ReportOutputs& o) {
  return !o.html.empty() || !o.trace.empty() || !o.csv.empty();
}

void render_report_outputs(const report::Report& r, const ReportOutputs& o, nlohmann::json* j,
                           std::string& table,
                           std::vector<std::pair<std::string, std::string>>& files) {
  SOLAR_CHECK(j != nullptr || !reads_json_report(o), "report outputs need the JSON report");
  if (!o.measured_ms && (!o.measured_on.empty() || !o.measured_method.empty())) {
    throw UserError("--measured-on needs --measured-ms (the time measured on that device)");
  }
  if (!o.measured_ms && !o.measured_nodes.empty()) {
    throw UserError("--measured-nodes needs --measured-ms (the whole program's time)");
  }
  const sol::Insights insights = sol::find_insights(r.graph, r.analysis);
  if (j != nullptr) (*j)["insights"] = report::insights_to_json(insights);
  const std::string insight_lines = report::render_insights(insights);
  if (!insight_lines.empty()) table += "\n" + insight_lines;
  std::optional<sol::Headroom> headroom;
  if (o.measured_ms) {
    headroom = sol::compute_headroom(r.analysis, r.device.name,
                                     {*o.measured_ms / 1e3, o.measured_on, o.measured_method});
    if (!o.measured_nodes.empty()) {
      std::string method;
      const std::vector<sol::NodeMeasurement> nodes = read_measured_nodes(o.measured_nodes, method);
      headroom->nodes = sol::compute_node_headroom(r.graph, r.analysis, nodes, method);
    }
    if (j != nullptr) (*j)["headroom"] = report::headroom_to_json(*headroom);
    table += "\n" + report::render_headroom(*headroom);
  }
  if (!o.html.empty())
    files.emplace_back(o.html, report::render_html(*j, devices_json(r, headroom)));
  if (!o.trace.empty()) files.emplace_back(o.trace, report::render_trace(*j));
  if (!o.csv.empty()) files.emplace_back(o.csv, report::render_csv(*j));
  if (!o.dot.empty()) files.emplace_back(o.dot, einsum::graph_to_dot(r.graph));
  std::string wrote;
  for (const auto& [path, text] : files) wrote += "wrote " + path + "\n";
  if (!wrote.empty()) table += "\n" + wrote;
}

}  // namespace solar::cli
