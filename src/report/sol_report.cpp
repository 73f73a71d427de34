// `solar sol`'s report with its insights and headroom, and its renderings
// (include/solar/report/sol_report.h).
#include "solar/report/sol_report.h"

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
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

namespace solar::report {
namespace {

std::vector<sol::Fidelity> analysed_fidelities(const sol::Analysis& a) {
  std::vector<sol::Fidelity> out;
  for (const sol::FidelityResult& r : a.results) out.push_back(r.fidelity);
  return out;
}

// The cross-platform and inverse-roofline tables of the HTML report: the target device as
// analysed, then every other built-in device; the latency target is the measured time when
// there is one, else the target's smallest SOL time.
nlohmann::json devices_json(const Report& r, const std::optional<sol::Headroom>& h) {
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
  MultiDeviceReport m;
  m.comparison =
      sol::compare_devices(r.graph, devices, sol::find_precision_policy(r.analysis.policy),
                           analysed_fidelities(r.analysis), target);
  return multi_device_to_json(m);
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

SolReport make_sol_report(Report r, const Measured& measured, size_t top, bool json, bool details) {
  if (!measured.ms && (!measured.on.empty() || !measured.method.empty())) {
    throw UserError("--measured-on needs --measured-ms (the time measured on that device)");
  }
  const bool nodes = !measured.nodes_file.empty() || !measured.nodes_json.empty();
  if (!measured.ms && nodes) {
    throw UserError("--measured-nodes needs --measured-ms (the whole program's time)");
  }
  SolReport s{std::move(r), nullptr, "", std::nullopt, top, ""};
  if (json) s.json = report_to_json(s.report);
  const sol::Insights insights = sol::find_insights(s.report.graph, s.report.analysis);
  if (json) s.json["insights"] = insights_to_json(insights);
  const std::string insight_lines = render_insights(insights);
  if (!insight_lines.empty()) s.tail += "\n" + insight_lines;
  if (measured.ms) {
    s.headroom = sol::compute_headroom(s.report.analysis, s.report.device.name,
                                       {*measured.ms / 1e3, measured.on, measured.method});
    if (nodes) {
      std::string method;
      const std::vector<sol::NodeMeasurement> times =
          read_measured_nodes(measured.nodes_file, measured.nodes_json, method);
      s.headroom->nodes =
          sol::compute_node_headroom(s.report.graph, s.report.analysis, times, method);
    }
    if (json) s.json["headroom"] = headroom_to_json(*s.headroom);
    std::optional<sol::Headroom> attainable;
    if (s.report.attainable) {
      attainable = sol::compute_headroom(*s.report.attainable, s.report.device.name,
                                         s.headroom->measurement);
      if (json) s.json["headroom"]["attainable"] = attainable_headroom_to_json(*attainable);
    }
    s.tail += "\n" + render_headroom(*s.headroom, attainable ? &*attainable : nullptr);
  }
  s.table = render_sol_table(s, details);
  return s;
}

std::string render_sol_table(const SolReport& s, bool details) {
  return render_report(s.report, s.top, details) + s.tail;
}

std::string render_output(const SolReport& s, std::string_view kind) {
  if (kind == "dot") return einsum::graph_to_dot(s.report.graph);
  if (kind != "html" && kind != "trace" && kind != "csv") {
    throw UserError("unknown report output '" + std::string(kind) +
                    "' (valid: csv, dot, html, trace)");
  }
  SOLAR_CHECK(!s.json.is_null(), "the report's " + std::string(kind) + " needs its JSON report");
  if (kind == "html") return render_html(s.json, devices_json(s.report, s.headroom));
  if (kind == "trace") return render_trace(s.json);
  return render_csv(s.json);
}

}  // namespace solar::report
