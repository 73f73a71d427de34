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
#include "solar/sol/whatif.h"
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
  report::MultiDeviceReport m;
  m.comparison =
      sol::compare_devices(r.graph, devices, sol::find_precision_policy(r.analysis.policy),
                           analysed_fidelities(r.analysis), target);
  return report::multi_device_to_json(m);
}

// The per-node times of a --measured-nodes file (docs/calibrate.md, "Per-node headroom"):
// {"method": "...", "nodes": [{"node", "op", "measured_s", "lowered", "kernels", "tensors"}]};
// only `node` and `measured_s` are required.
std::vector<sol::NodeMeasurement> read_measured_nodes(const std::string& path,
                                                      const std::string& text,
                                                      std::string& method) {
  try {
    const nlohmann::json doc = nlohmann::json::parse(text.empty() ? read_text_file(path) : text);
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
  app.add_option("--measured-nodes", o.measured_nodes,
                 "Per-node measured times (JSON): adds per-node headroom (needs --measured-ms)")
      ->type_name("FILE");
}

bool reads_json_report(const ReportOutputs& o) {
  return !o.html.empty() || !o.trace.empty() || !o.csv.empty();
}

SolReport make_sol_report(report::Report r, const ReportOutputs& o, size_t top, bool json) {
  SOLAR_CHECK(json || !reads_json_report(o), "report outputs need the JSON report");
  if (!o.measured_ms && (!o.measured_on.empty() || !o.measured_method.empty())) {
    throw UserError("--measured-on needs --measured-ms (the time measured on that device)");
  }
  const bool nodes = !o.measured_nodes.empty() || !o.measured_nodes_json.empty();
  if (!o.measured_ms && nodes) {
    throw UserError("--measured-nodes needs --measured-ms (the whole program's time)");
  }
  SolReport s{std::move(r), nullptr, "", std::nullopt};
  if (json) s.json = report::report_to_json(s.report);
  s.table = report::render_report(s.report, top);
  const sol::Insights insights = sol::find_insights(s.report.graph, s.report.analysis);
  if (json) s.json["insights"] = report::insights_to_json(insights);
  const std::string insight_lines = report::render_insights(insights);
  if (!insight_lines.empty()) s.table += "\n" + insight_lines;
  if (o.measured_ms) {
    s.headroom = sol::compute_headroom(s.report.analysis, s.report.device.name,
                                       {*o.measured_ms / 1e3, o.measured_on, o.measured_method});
    if (nodes) {
      std::string method;
      const std::vector<sol::NodeMeasurement> measured =
          read_measured_nodes(o.measured_nodes, o.measured_nodes_json, method);
      s.headroom->nodes =
          sol::compute_node_headroom(s.report.graph, s.report.analysis, measured, method);
    }
    if (json) s.json["headroom"] = report::headroom_to_json(*s.headroom);
    s.table += "\n" + report::render_headroom(*s.headroom);
  }
  return s;
}

std::string render_output(const SolReport& s, std::string_view kind) {
  if (kind == "html") return report::render_html(s.json, devices_json(s.report, s.headroom));
  if (kind == "trace") return report::render_trace(s.json);
  if (kind == "csv") return report::render_csv(s.json);
  if (kind == "dot") return einsum::graph_to_dot(s.report.graph);
  internal_error(__FILE__, __LINE__, "unknown report output '" + std::string(kind) + "'");
}

void render_report_outputs(SolReport& s, const ReportOutputs& o,
                           std::vector<std::pair<std::string, std::string>>& files) {
  const std::pair<const std::string*, std::string_view> asked[] = {
      {&o.html, "html"}, {&o.trace, "trace"}, {&o.csv, "csv"}, {&o.dot, "dot"}};
  for (const auto& [path, kind] : asked) {
    if (!path->empty()) files.emplace_back(*path, render_output(s, kind));
  }
  std::string wrote;
  for (const auto& [path, text] : files) wrote += "wrote " + path + "\n";
  if (!wrote.empty()) s.table += "\n" + wrote;
}

}  // namespace solar::cli
