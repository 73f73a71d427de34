// The Chrome / Perfetto trace of the unfused SOL timeline (include/solar/report/exports.h).
#include <nlohmann/json.hpp>
#include <string>

#include "solar/report/exports.h"
#include "solar/report/provenance.h"

namespace solar::report {

std::string render_trace(const nlohmann::json& report) {
  nlohmann::json events = nlohmann::json::array();
  const std::string process = "SOL of " + report.at("source").get<std::string>() + " on " +
                              report.at("hardware").at("name").get<std::string>() +
                              " (unfused, program order)";
  events.push_back({{"name", "process_name"},
                    {"ph", "M"},
                    {"pid", 0},
                    {"tid", 0},
                    {"args", {{"name", process}}}});
  events.push_back({{"name", "thread_name"},
                    {"ph", "M"},
                    {"pid", 0},
                    {"tid", 0},
                    {"args", {{"name", "nodes"}}}});
  double t_us = 0;
  for (const nlohmann::json& n : report.at("nodes")) {
    const double dur_us = n.at("sol_unfused_s").get<double>() * 1e6;
    events.push_back({{"name", n.at("name")},
                      {"cat", n.at("kind")},
                      {"ph", "X"},
                      {"pid", 0},
                      {"tid", 0},
                      {"ts", t_us},
                      {"dur", dur_us},
                      {"args",
                       {{"einsum", n.at("einsum")},
                        {"precision", n.at("precision")},
                        {"flops", n.at("flops")},
                        {"bytes", n.at("bytes_unfused")},
                        {"compute_s", n.at("compute_s")},
                        {"memory_s", n.at("memory_s")},
                        {"bottleneck", n.at("bottleneck")}}}});
    t_us += dur_us;
  }
  // What the viewer shows as the trace's metadata: where the program came from, how it was
  // checked, and the operators left out of the timeline.
  const Provenance p = provenance_of_report(report);
  nlohmann::json unsupported = nlohmann::json::array();
  if (p.coverage) {
    for (const UnsupportedOp& u : p.coverage->unsupported_ops) {
      unsupported.push_back(u.op + " (node '" + u.node + "'): " + u.reason);
    }
  }
  const std::string captured = capture_line(p.capture);
  const nlohmann::json other = {{"capture", captured.empty() ? "IR file" : captured},
                                {"cache_state", report.at("cache_state")},
                                {"verification", verification_line(p.verification)},
                                {"unsupported_ops", std::move(unsupported)}};
  const nlohmann::json trace = {
      {"traceEvents", std::move(events)}, {"displayTimeUnit", "ns"}, {"otherData", other}};
  return trace.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace solar::report
