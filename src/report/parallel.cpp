// The parallel section of a report (include/solar/report/report.h, docs/parallel.md): the SOL per
// device of a tp/dp/pp layout, its collectives and pipeline stages.
#include <algorithm>
#include <cstddef>
#include <nlohmann/json.hpp>
#include <numeric>
#include <string>
#include <vector>

#include "format.h"
#include "solar/report/report.h"
#include "solar/sol/parallel.h"

namespace solar::report {

using namespace detail;

void add_parallel(Report& r, const sol::ParallelLayout& layout) {
  r.parallel = sol::analyze_parallel(r.graph, r.device, r.analysis, layout);
}

nlohmann::json parallel_to_json(const Report& r) {
  if (!r.parallel) return nullptr;
  const sol::ParallelAnalysis& p = *r.parallel;
  const auto terms = [](const sol::ParallelTerms& t) {
    return nlohmann::json{
        {"time_s", t.time_s},     {"compute_s", t.compute_s},
        {"memory_s", t.memory_s}, {"communication_s", t.comm_s},
        {"bytes", t.bytes},       {"bottleneck", std::string(sol::parallel_bottleneck(t))}};
  };
  nlohmann::json results = nlohmann::json::object();
  for (const sol::ParallelResult& x : p.results) {
    results[std::string(sol::fidelity_key(x.fidelity))] = {
        {"time_s", x.time_s},
        {"speedup", x.speedup},
        {"bottleneck_stage", x.bottleneck_stage},
        {"bottleneck", std::string(sol::parallel_bottleneck(x.terms))},
        {"terms", terms(x.terms)}};
  }
  nlohmann::json comms = nlohmann::json::array();
  for (const sol::Communication& c : p.comms) {
    comms.push_back({{"collective", std::string(sol::collective_name(c.kind))},
                     {"axis", c.axis},
                     {"group", c.group},
                     {"tensor", c.tensor},
                     {"buffer_bytes", c.buffer_bytes},
                     {"sent_bytes", c.sent_bytes},
                     {"time_s", c.time_s},
                     {"stage", c.stage},
                     {"algorithm", c.in_network ? "in-network"
                                   : c.kind == sol::Collective::AllToAll ||
                                           c.kind == sol::Collective::PointToPoint
                                       ? "direct"
                                       : "ring"},
                     {"after", c.after_node < r.graph.nodes.size()
                                   ? nlohmann::json(r.graph.nodes[c.after_node].name)
                                   : nlohmann::json(nullptr)},
                     {"before", c.before_node < r.graph.nodes.size()
                                    ? nlohmann::json(r.graph.nodes[c.before_node].name)
                                    : nlohmann::json(nullptr)}});
  }
  nlohmann::json stages = nlohmann::json::array();
  for (const sol::ParallelStage& s : p.stages) {
    nlohmann::json by = nlohmann::json::object();
    for (size_t k = 0; k < s.terms.size() && k < p.results.size(); ++k) {
      by[std::string(sol::fidelity_key(p.results[k].fidelity))] = terms(s.terms[k]);
    }
    stages.push_back({{"first_node", s.first},
                      {"nodes", s.last - s.first},
                      {"send_bytes", s.send_bytes},
                      {"send_s", s.send_s},
                      {"fidelities", std::move(by)}});
  }
  nlohmann::json nodes = nlohmann::json::array();
  for (size_t i = 0; i < p.nodes.size(); ++i) {
    const auto loop = [](const std::string& l) {
      return l.empty() ? nlohmann::json(nullptr) : nlohmann::json(l);
    };
    nodes.push_back({{"node", r.graph.nodes[i].name},
                     {"tp_loop", loop(p.nodes[i].tp_loop)},
                     {"dp_loop", loop(p.nodes[i].dp_loop)},
                     {"fraction", p.nodes[i].fraction}});
  }
  return {{"layout",
           {{"text", sol::parallel_text(p.layout)},
            {"devices", p.layout.devices()},
            {"tp", p.layout.tp},
            {"dp", p.layout.dp},
            {"pp", p.layout.pp},
            {"microbatches", p.layout.microbatches},
            {"sequence_parallel", p.layout.sequence_parallel}}},
          {"link",
           {{"name", p.link},
            {"per_direction_bytes_per_s", p.link_bytes_per_s},
            {"in_network_reduction", p.in_network_reduction}}},
          {"fidelities", std::move(results)},
          {"floor_s", p.floor_s},
          {"link_needed_per_direction_bytes_per_s", p.link_needed_bytes_per_s},
          {"communication", std::move(comms)},
          {"stages", std::move(stages)},
          {"nodes", std::move(nodes)}};
}

std::string parallel_table(const Report& r, size_t top) {
  if (!r.parallel) return "";
  const sol::ParallelAnalysis& p = *r.parallel;
  const double n = static_cast<double>(p.layout.devices());
  std::string s = "\nParallel: " + sol::parallel_text(p.layout) + " on " +
                  std::to_string(p.layout.devices()) + " x " + r.device.name;
  if (!p.link.empty() || p.link_bytes_per_s > 0) {
    s += ", " + (p.link.empty() ? std::string("scale-up link") : p.link) + " at " +
         format_bandwidth(p.link_bytes_per_s) + " each way";
  }
  if (p.in_network_reduction) s += ", reducing in the network";
  s += " (docs/parallel.md):\n";
  std::vector<std::vector<std::string>> rows = {{"fidelity", "SOL per device", "compute", "memory",
                                                 "DRAM bytes", "communication", "bottleneck",
                                                 "speedup"}};
  for (const sol::ParallelResult& x : p.results) {
    rows.push_back({std::string(sol::fidelity_name(x.fidelity)), format_seconds(x.time_s),
                    format_seconds(x.terms.compute_s), format_seconds(x.terms.memory_s),
                    format_bytes(static_cast<double>(x.terms.bytes)),
                    format_seconds(x.terms.comm_s), std::string(sol::parallel_bottleneck(x.terms)),
                    x.speedup > 0 ? format_number(x.speedup) + "x" : std::string("-")});
  }
  s += format_table(rows, "lrrrrrlr");
  if (p.layout.pp > 1) s += "(terms: the bottleneck stage's)\n";
  s += "any layout on " + format_number(n) + " devices: >= " + format_seconds(p.floor_s) +
       " (the compute and the fused bytes shared evenly, no communication)\n";
  if (p.link_needed_bytes_per_s > 0) {
    s += "interconnect: stops bounding the fused time at " +
         format_bandwidth(p.link_needed_bytes_per_s) + " each way\n";
  }
  if (!p.comms.empty()) {
    std::vector<size_t> order(p.comms.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return p.comms[a].time_s > p.comms[b].time_s; });
    if (order.size() > top) order.resize(top);
    std::vector<std::vector<std::string>> c = {
        {"collective", "axis", "devices", "tensor", "buffer", "sent/device", "time", "before"}};
    for (size_t k : order) {
      const sol::Communication& m = p.comms[k];
      c.push_back(
          {std::string(sol::collective_name(m.kind)) + (m.in_network ? " (in-network)" : ""),
           m.axis, std::to_string(m.group), m.tensor,
           format_bytes(static_cast<double>(m.buffer_bytes)), format_bytes(m.sent_bytes),
           format_seconds(m.time_s),
           m.before_node < r.graph.nodes.size()      ? r.graph.nodes[m.before_node].name
           : m.kind == sol::Collective::PointToPoint ? "stage " + std::to_string(m.stage + 1)
                                                     : std::string("(output)")});
    }
    s += "\nCollectives, longest first (" + std::to_string(order.size()) + " of " +
         std::to_string(p.comms.size()) + "):\n" + format_table(c, "llrlrrrl");
  }
  if (p.stages.size() > 1) {
    std::vector<std::vector<std::string>> st = {{"stage", "nodes", "first node"}};
    for (const sol::ParallelResult& x : p.results) {
      st[0].push_back(std::string(sol::fidelity_name(x.fidelity)));
    }
    st[0].push_back("sends");
    st[0].push_back("send time");
    for (size_t k = 0; k < p.stages.size(); ++k) {
      const sol::ParallelStage& g = p.stages[k];
      std::vector<std::string> row = {std::to_string(k + 1), std::to_string(g.last - g.first),
                                      r.graph.nodes[g.first].name};
      for (const sol::ParallelTerms& t : g.terms) row.push_back(format_seconds(t.time_s));
      row.push_back(format_bytes(static_cast<double>(g.send_bytes)));
      row.push_back(format_seconds(g.send_s));
      st.push_back(std::move(row));
    }
    s += "\nPipeline stages (" + std::to_string(p.layout.microbatches) + " microbatch" +
         (p.layout.microbatches == 1 ? "" : "es") + "):\n" +
         format_table(st, "rrl" + std::string(p.results.size() + 2, 'r'));
  }
  return s;
}

}  // namespace solar::report
