// Insights and headroom sections: JSON and terminal lines (include/solar/report/sections.h).
#include "solar/report/sections.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "format.h"
#include "solar/util/text.h"

namespace solar::report {
namespace {

using namespace detail;

}  // namespace

std::string format_ratio(double v) {
  if (v < 1e4) return format_number(v);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f", v);
  return buf;
}

nlohmann::json insights_to_json(const sol::Insights& in) {
  nlohmann::json chains = nlohmann::json::array();
  for (const sol::ContractionChain& c : in.chains) {
    nlohmann::json indices = nlohmann::json::array();
    for (const auto& [letter, extent] : c.indices) {
      indices.push_back({{"index", letter}, {"extent", extent}});
    }
    chains.push_back(
        {{"nodes", c.nodes},
         {"operands", c.operands},
         {"via", c.via},
         {"indices", std::move(indices)},
         {"program_order", c.program.text},
         {"program_steps", c.program.steps},
         {"program_macs", c.program.macs},
         {"best_order", c.best.text},
         {"best_steps", c.best.steps},
         {"best_macs", c.best.macs},
         {"flops_saved", c.flops_saved()},
         {"compute_s_saved", c.compute_s_saved},
         {"fused_sol_s", c.fused_s ? nlohmann::json(*c.fused_s) : nlohmann::json(nullptr)}});
  }
  nlohmann::json fusions = nlohmann::json::array();
  for (const sol::FusionOpportunity& f : in.fusions) {
    fusions.push_back({{"tensor", f.tensor},
                       {"producer", f.producer},
                       {"consumers", f.consumers},
                       {"bytes_saved", f.bytes_saved},
                       {"memory_s_saved", f.memory_s_saved}});
  }
  nlohmann::json bottlenecks = nlohmann::json::array();
  for (const sol::NodeBottleneck& b : in.bottlenecks) {
    bottlenecks.push_back({{"node", b.node},
                           {"bottleneck", sol::bottleneck_name(b.bottleneck)},
                           {"intensity_flops_per_byte", b.intensity_flops_per_byte},
                           {"ridge_flops_per_byte", b.ridge_flops_per_byte}});
  }
  return {{"contraction_chains", std::move(chains)},
          {"fusion_opportunities", std::move(fusions)},
          {"bottlenecks", std::move(bottlenecks)},
          {"notes", in.notes}};
}

std::string headroom_note(const sol::Headroom& h) {
  if (h.measurement.device.empty()) {
    return "the device that measured is not stated: headroom assumes it was " + h.target;
  }
  if (h.what_if) {
    return "measured on " + h.measurement.device + ", SOL of " + h.target +
           ": headroom is a what-if (the program did not run on " + h.target + ")";
  }
  return "measured on " + h.target;
}

namespace {

// `headroom.nodes` and its companions (docs/report.md, "Headroom").
nlohmann::json node_headroom_to_json(const sol::NodeHeadrooms& n) {
  nlohmann::json nodes = nlohmann::json::array();
  for (const sol::NodeHeadroom& x : n.nodes) {
    const bool has_sol = x.status != "not lowered";
    nodes.push_back({{"node", x.node},
                     {"op", x.op},
                     {"measured_s", x.measured_s},
                     {"sol_unfused_s", has_sol ? nlohmann::json(x.sol_s) : nlohmann::json()},
                     {"headroom", x.headroom ? nlohmann::json(*x.headroom) : nlohmann::json()},
                     {"status", x.status},
                     {"graph_nodes", x.graph_nodes}});
  }
  return {{"nodes", std::move(nodes)},
          {"nodes_method", n.method},
          {"nodes_sol_unfused_s", n.sol_s},
          {"nodes_unattributed", n.unattributed},
          {"nodes_unattributed_sol_s", n.unattributed_sol_s}};
}

// The per-node lines: the `top` nodes with the longest measured times.
std::string render_node_headroom(const sol::NodeHeadrooms& n, bool what_if, size_t top = 10) {
  const size_t shown = std::min(top, n.nodes.size());
  std::string s = "  per node (measured / unfused SOL of its graph nodes" +
                  std::string(what_if ? ", a what-if" : "") + "), longest measured first (" +
                  std::to_string(shown) + " of " + std::to_string(n.nodes.size()) + ")" +
                  (n.method.empty() ? "" : ": " + n.method) + "\n";
  std::vector<std::vector<std::string>> rows = {{"node", "op", "measured", "SOL", "headroom"}};
  for (size_t i = 0; i < shown; ++i) {
    const sol::NodeHeadroom& x = n.nodes[i];
    rows.push_back({x.node, x.op, format_seconds(x.measured_s),
                    x.status == "not lowered" ? "-" : format_seconds(x.sol_s),
                    x.headroom ? format_ratio(*x.headroom) + "x" : x.status});
  }
  const std::string table = format_table(rows, "llrrr");
  for (size_t at = 0, end = 0; at < table.size(); at = end + 1) {
    end = std::min(table.find('\n', at), table.size());
    s += "    " + table.substr(at, end - at) + "\n";
  }
  if (!n.unattributed.empty()) {
    s += "    not attributed to a measured node: " + join(n.unattributed, ", ") + " (" +
         format_seconds(n.unattributed_sol_s) + " of unfused SOL)\n";
  }
  return s;
}

}  // namespace

nlohmann::json headroom_to_json(const sol::Headroom& h) {
  nlohmann::json by = nlohmann::json::object();
  for (const sol::FidelityHeadroom& f : h.fidelities) {
    by[std::string(sol::fidelity_key(f.fidelity))] = f.headroom;  // as `bytes` and `sol`
  }
  nlohmann::json j = {
      {"measured_s", h.measurement.time_s},
      {"measured_on", h.measurement.device.empty() ? nlohmann::json(nullptr)
                                                   : nlohmann::json(h.measurement.device)},
      {"method", h.measurement.method},
      {"target", h.target},
      {"what_if", h.what_if},
      {"note", headroom_note(h)},
      {"by_fidelity", std::move(by)},
      {"bound_s", h.bound_s},
      {"violation", h.violation}};
  if (h.nodes) j.update(node_headroom_to_json(*h.nodes));
  return j;
}

nlohmann::json attainable_headroom_to_json(const sol::Headroom& h) {
  nlohmann::json by = nlohmann::json::object();
  for (const sol::FidelityHeadroom& f : h.fidelities) {
    by[std::string(sol::fidelity_key(f.fidelity))] = f.headroom;
  }
  return {{"by_fidelity", std::move(by)}};
}

std::string render_insights(const sol::Insights& in, size_t top_fusions) {
  std::string s;
  for (const sol::ContractionChain& c : in.chains) {
    if (c.best.macs >= c.program.macs) continue;
    s += "  contraction order of " + join(c.nodes, ", ") + ": " + c.program.text + " " +
         format_count(static_cast<double>(c.program.macs), "MAC") + " -> " + c.best.text + " " +
         format_count(static_cast<double>(c.best.macs), "MAC") + ", saves " +
         format_count(static_cast<double>(c.program.macs - c.best.macs), "MAC") + " (" +
         format_count(static_cast<double>(c.flops_saved()), "FLOP") + ")\n";
    if (!c.best.steps.empty()) {
      std::string index_list;
      for (const auto& [letter, extent] : c.indices) {
        index_list += (index_list.empty() ? "" : " ") + letter + "=" + std::to_string(extent);
      }
      s += "    as einsums: " + join(c.best.steps, "; ") + " (" + index_list + ")\n";
    }
    if (!c.via.empty()) s += "    through " + join(c.via, ", ") + "\n";
    if (c.fused_s) s += "    fused SOL with this order: " + format_seconds(*c.fused_s) + "\n";
  }
  const size_t n = std::min(top_fusions, in.fusions.size());
  for (size_t i = 0; i < n; ++i) {
    const sol::FusionOpportunity& f = in.fusions[i];
    s += "  fuse " + f.producer + " -> " + join(f.consumers, ", ") + " (keep " + f.tensor +
         " on chip): saves " + format_bytes(static_cast<double>(f.bytes_saved)) +
         " of DRAM traffic\n";
  }
  if (in.fusions.size() > n) {
    s += "  (" + std::to_string(in.fusions.size() - n) +
         " more fusion opportunities in the JSON report)\n";
  }
  return s.empty() ? s : "Insights:\n" + s;
}

std::string render_headroom(const sol::Headroom& h, const sol::Headroom* attainable) {
  std::string s = "Headroom (measured / SOL): measured " + format_seconds(h.measurement.time_s);
  if (!h.measurement.method.empty()) s += " (" + h.measurement.method + ")";
  s += "\n  " + headroom_note(h) + "\n ";
  for (const sol::FidelityHeadroom& f : h.fidelities) {
    // A SOL of 0 (an empty program) bounds nothing: no ratio, not 0x.
    s += " " + std::string(sol::fidelity_name(f.fidelity)) + " " +
         (f.sol_s > 0 ? format_ratio(f.headroom) + "x" : "- (SOL 0)");
  }
  s += "\n";
  if (attainable) {
    s += "  against the attainable times (measured ceilings, not a bound):";
    for (const sol::FidelityHeadroom& f : attainable->fidelities) {
      s += " " + std::string(sol::fidelity_name(f.fidelity)) + " " +
           (f.sol_s > 0 ? format_ratio(f.headroom) + "x" : "- (SOL 0)");
    }
    s += "\n";
  }
  if (h.violation) {
    s += "  VIOLATION: the measured time is below the SOL bound " + format_seconds(h.bound_s) +
         " (device figures too low, or the program does less work than its graph)\n";
  }
  if (h.nodes) s += render_node_headroom(*h.nodes, h.what_if);
  return s;
}

}  // namespace solar::report
