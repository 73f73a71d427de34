// The Chrome / Perfetto trace of the unfused SOL timeline (include/solar/report/exports.h).
#include <nlohmann/json.hpp>
#include <string>

#include "solar/report/exports.h"

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
  const nlohmann::json trace = {{"traceEvents", std::move(events)}, {"displayTimeUnit", "ns"}};
  return trace.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace solar::report
