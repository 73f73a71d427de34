// The single-device SOL report: data, JSON, terminal (include/solar/report/report.h).
#include "solar/report/report.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "format.h"
#include "json_parts.h"

namespace solar::report {
namespace {

using namespace detail;

nlohmann::json rate_json(const sol::Rate* r) {
  return r ? nlohmann::json(r->flops_per_s) : nlohmann::json(nullptr);
}

std::string rate_label(const sol::Rate* r) { return r ? r->label : "none"; }

bool bytes_exact(const einsum::Node& n) {
  const auto exact = [](const einsum::Access& a) { return a.footprint_exact; };
  return std::all_of(n.reads.begin(), n.reads.end(), exact) &&
         std::all_of(n.writes.begin(), n.writes.end(), exact);
}

bool has_fallback(const sol::NodeCost& c) {
  return (c.mac_rate && c.mac_rate->fallback()) || (c.other_rate && c.other_rate->fallback());
}

nlohmann::json node_json(const einsum::Node& n, const sol::NodeCost& c) {
  const sol::Rate* other = c.other_rate ? &*c.other_rate : nullptr;
  return {
      {"name", n.name},
      {"kind", einsum::node_kind_name(n.kind)},
      {"op", n.op},
      {"einsum", n.einsum},
      {"points", n.points},
      {"macs", n.counts.macs},
      {"other_ops", n.counts.other_ops()},
      {"flops", n.counts.flops()},
      {"bytes_read", n.bytes_read()},
      {"bytes_written", n.bytes_written()},
      {"bytes_unfused", c.bytes},
      {"bytes_exact", bytes_exact(n)},
      {"precision", rate_label(c.main_rate())},
      {"rate_flops_per_s", rate_json(c.main_rate())},
      {"other_ops_precision", rate_label(other)},
      {"other_ops_rate_flops_per_s", rate_json(other)},
      {"precision_fallback", has_fallback(c)},
      {"mac_s", c.mac_s},
      {"other_ops_s", c.other_s},
      {"compute_s", c.compute_s},
      {"memory_s", c.memory_s},
      {"sol_unfused_s", c.time_s},
      {"bottleneck", sol::bottleneck_name(c.bottleneck)},
  };
}

// {"path": value} of every figure set on the command line.
nlohmann::json overrides_json(const hw::Device& d) {
  nlohmann::json j = nlohmann::json::object();
  for (const hw::FigureEntry& e : hw::list_figures(d)) {
    if (e.figure.source == hw::kOverrideSource) j[e.path] = e.figure.value;
  }
  return j;
}

std::string header(const Report& r) {
  std::string s = "SOL of " + source_name(r.graph.source) + " on " + r.device.name + " (DRAM " +
                  format_bandwidth(r.analysis.dram_bandwidth_bytes_per_s) + ")\n";
  if (!r.graph.sizes.empty()) {
    s += "  sizes: ";
    std::string sep;
    for (const auto& [name, value] : r.graph.sizes) {
      s += sep + name + "=" + std::to_string(value);
      sep = ", ";
    }
    s += "\n";
  }
  s += "  precision policy: " + r.analysis.policy + "\n";
  s += "  " + r.verification + "\n";
  const einsum::OpCounts& t = r.analysis.totals;
  s += "  work: " + format_count(static_cast<double>(t.macs), "MAC") + ", " +
       format_count(static_cast<double>(t.other_ops())) + " other ops, " +
       format_count(static_cast<double>(t.flops()), "FLOP") + " (" + std::string(kFlopsConvention) +
       "), " + std::to_string(r.graph.nodes.size()) + " nodes\n";
  return s;
}

std::string fidelity_table(const sol::Analysis& a) {
  std::vector<std::vector<std::string>> rows = {
      {"fidelity", "SOL time", "compute", "memory", "DRAM bytes", "bottleneck"}};
  for (const sol::FidelityResult& f : a.results) {
    rows.push_back({std::string(sol::fidelity_name(f.fidelity)), format_seconds(f.time_s),
                    format_seconds(f.compute_s), format_seconds(f.memory_s),
                    format_bytes(static_cast<double>(f.bytes)),
                    std::string(sol::bottleneck_name(f.bottleneck))});
  }
  std::string s = format_table(rows, "lrrrrl");
  const nlohmann::json sol = sol_json(a);
  if (sol.contains("fused_over_unfused") && !sol["fused_over_unfused"].is_null()) {
    s += "fused/unfused: " + format_number(sol["fused_over_unfused"].get<double>()) + "\n";
  }
  return s;
}

// The compute unit and precision a node ran at, '*' marking a fallback.
std::string short_precision(const sol::Rate* r) {
  if (!r) return "-";
  return sol::target_name(r->used) + (r->fallback() ? "*" : "");
}

std::string node_table(const Report& r, size_t top) {
  const std::vector<sol::NodeCost>& costs = r.analysis.nodes;
  std::vector<size_t> order(costs.size());
  std::iota(order.begin(), order.end(), 0);
  // Slowest first; ties in graph order, so the table is deterministic.
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t x, size_t y) { return costs[x].time_s > costs[y].time_s; });
  order.resize(std::min(top, order.size()));
  double total = 0;  // the unfused SOL, whatever the fidelities analysed
  for (const sol::NodeCost& c : costs) total += c.time_s;
  std::vector<std::vector<std::string>> rows = {{"node", "precision", "rate", "MACs", "other ops",
                                                 "bytes", "compute", "memory", "time", "share",
                                                 "bound"}};
  for (const size_t i : order) {
    const einsum::Node& n = r.graph.nodes[i];
    const sol::NodeCost& c = costs[i];
    const sol::Rate* main = c.main_rate();
    rows.push_back({n.name, short_precision(main), main ? format_rate(main->flops_per_s) : "-",
                    format_count(static_cast<double>(n.counts.macs)),
                    format_count(static_cast<double>(n.counts.other_ops())),
                    format_bytes(static_cast<double>(c.bytes)), format_seconds(c.compute_s),
                    format_seconds(c.memory_s), format_seconds(c.time_s),
                    total > 0 ? format_number(100 * c.time_s / total) + "%" : "-",
                    std::string(sol::bottleneck_name(c.bottleneck))});
  }
  return "Slowest nodes, run alone (" + std::to_string(order.size()) + " of " +
         std::to_string(costs.size()) + "):\n" + format_table(rows, "llrrrrrrrrl");
}

std::string fallback_notes(const Report& r) {
  std::string s;
  for (size_t i = 0; i < r.analysis.nodes.size(); ++i) {
    const sol::NodeCost& c = r.analysis.nodes[i];
    for (const std::optional<sol::Rate>* rate : {&c.mac_rate, &c.other_rate}) {
      if (*rate && (*rate)->fallback()) {
        s += "  " + r.graph.nodes[i].name + ": " + (*rate)->label + "\n";
      }
    }
  }
  return s.empty() ? s : "* precision fallbacks (the device lacks the wanted rate):\n" + s;
}

}  // namespace

Report make_report(einsum::Graph graph, hw::Device device, const sol::PrecisionPolicy& policy,
                   const std::vector<sol::Fidelity>& fidelities) {
  sol::Analysis analysis = sol::analyze(graph, device, policy, fidelities);
  return Report{std::move(graph), std::move(device), std::move(analysis)};
}

nlohmann::json report_to_json(const Report& r) {
  nlohmann::json nodes = nlohmann::json::array();
  for (size_t i = 0; i < r.graph.nodes.size(); ++i) {
    nodes.push_back(node_json(r.graph.nodes[i], r.analysis.nodes[i]));
  }
  return {
      {"schema_version", kSchemaVersion},
      {"source", source_name(r.graph.source)},
      {"sizes", sizes_json(r.graph.sizes)},
      {"hardware",
       {{"name", r.device.name},
        {"vendor", r.device.vendor},
        {"dram_bandwidth_bytes_per_s", r.analysis.dram_bandwidth_bytes_per_s},
        {"overrides", overrides_json(r.device)}}},
      {"precision_policy", r.analysis.policy},
      {"flops_convention", kFlopsConvention},
      {"verification", {{"status", r.verification}}},
      {"totals", totals_json(r.analysis.totals)},
      {"bytes", bytes_json(r.analysis)},
      {"sol", sol_json(r.analysis)},
      {"nodes", std::move(nodes)},
  };
}

std::string render_report(const Report& r, size_t top_nodes) {
  std::string s = header(r) + "\n" + fidelity_table(r.analysis);
  if (!r.graph.nodes.empty()) s += "\n" + node_table(r, top_nodes);
  const std::string notes = fallback_notes(r);
  if (!notes.empty()) s += "\n" + notes;
  return s;
}

}  // namespace solar::report
