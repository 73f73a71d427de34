// Headroom of a measured time against the SOL times (include/solar/sol/headroom.h).
#include "solar/sol/headroom.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <string>

#include "solar/util/error.h"

namespace solar::sol {

Headroom compute_headroom(const Analysis& a, const std::string& target, const Measurement& m) {
  if (!std::isfinite(m.time_s) || m.time_s <= 0) {
    throw UserError("a measured time must be a positive finite number of milliseconds");
  }
  SOLAR_CHECK(!a.results.empty(), "headroom needs at least one fidelity");
  Headroom h;
  h.measurement = m;
  h.target = target;
  h.what_if = !m.device.empty() && m.device != target;
  h.bound_s = std::numeric_limits<double>::infinity();
  for (const FidelityResult& r : a.results) {
    h.fidelities.push_back({r.fidelity, r.time_s, r.time_s > 0 ? m.time_s / r.time_s : 0.0});
    h.bound_s = std::min(h.bound_s, r.time_s);
  }
  h.violation = m.time_s < h.bound_s;
  return h;
}

namespace {

// A kernel's name without the suffix of a repeat block's iterations ("[t=3]", a scan's
// "[t=1..5]", a captured scan's "[y_scan=7]").
std::string kernel_of(const std::string& graph_node) {
  const size_t bracket = graph_node.find('[');
  return bracket == std::string::npos ? graph_node : graph_node.substr(0, bracket);
}

}  // namespace

NodeHeadrooms compute_node_headroom(const einsum::Graph& g, const Analysis& a,
                                    const std::vector<NodeMeasurement>& measured,
                                    const std::string& method) {
  SOLAR_CHECK(a.nodes.size() == g.nodes.size(), "one node cost per graph node");
  // Who claims what: kernel name / written tensor -> index of the measured node.
  std::map<std::string, size_t> by_kernel;
  std::map<std::string, size_t> by_tensor;
  std::set<std::string> names;
  for (size_t i = 0; i < measured.size(); ++i) {
    const NodeMeasurement& m = measured[i];
    if (!std::isfinite(m.time_s) || m.time_s < 0) {
      throw UserError("measured node '" + m.node + "': its time must be a finite number >= 0");
    }
    if (!names.insert(m.node).second) throw UserError("measured node '" + m.node + "' is twice");
    for (const std::string& k : m.kernels) {
      if (!by_kernel.emplace(k, i).second) {
        throw UserError("kernel '" + k + "' is claimed by measured nodes '" +
                        measured[by_kernel.at(k)].node + "' and '" + m.node + "'");
      }
    }
    for (const std::string& t : m.tensors) by_tensor.emplace(t, i);  // first writer owns it
  }
  NodeHeadrooms out;
  out.method = method;
  for (const NodeMeasurement& m : measured) {
    out.nodes.push_back({m.node, m.op, m.time_s, 0.0, {}, std::nullopt, ""});
  }
  std::set<std::string> found;
  std::vector<std::optional<size_t>> owners(g.nodes.size());
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const einsum::Node& node = g.nodes[n];
    std::optional<size_t> owner;
    if (node.kind == einsum::NodeKind::Einsum) {
      const auto it = by_kernel.find(kernel_of(node.name));
      if (it != by_kernel.end()) owner = it->second;
      found.insert(kernel_of(node.name));
    } else {
      for (const einsum::Access& w : node.writes) {
        const auto it = by_tensor.find(w.tensor);
        if (it != by_tensor.end() && !owner) owner = it->second;
      }
    }
    owners[n] = owner;
    if (!owner) {
      out.unattributed.push_back(node.name);
      out.unattributed_sol_s += a.nodes[n].time_s;
      continue;
    }
    out.nodes[*owner].graph_nodes.push_back(node.name);
    out.nodes[*owner].sol_s += a.nodes[n].time_s;
  }
  // A framework operation (an op block) whose nodes all belong to one measured node runs as one
  // kernel in the unfused model: that node's SOL counts the operation's time, not its nodes' each
  // alone. So the per-node SOLs and the rest add up to the unfused SOL whenever no operation is
  // split between measured nodes.
  for (const OpCost& op : a.ops) {
    if (op.last - op.first < 2) continue;
    const std::optional<size_t> owner = owners[op.first];
    bool one = true;
    for (size_t n = op.first; n < op.last; ++n) one = one && owners[n] == owner;
    if (!one) continue;
    (owner ? out.nodes[*owner].sol_s : out.unattributed_sol_s) += op.time_s - op.nodes_alone_s;
  }
  // A kernel the lift removed as dead code (einsum::Graph::dead_nodes) is in the program: it
  // costs nothing.
  for (const std::string& dead : g.dead_nodes) found.insert(kernel_of(dead));
  for (const auto& [kernel, i] : by_kernel) {
    if (found.count(kernel) == 0) {
      throw UserError("measured node '" + measured[i].node + "' names kernel '" + kernel +
                      "', which is not in the program (times measured for another program?)");
    }
  }
  for (size_t i = 0; i < measured.size(); ++i) {
    NodeHeadroom& h = out.nodes[i];
    out.sol_s += h.sol_s;
    if (!measured[i].lowered) {
      h.status = "not lowered";
    } else if (h.graph_nodes.empty()) {
      h.status = "view (no work)";
    } else if (h.sol_s <= 0) {
      h.status = "no work";
    } else {
      h.status = "ok";
      h.headroom = h.measured_s / h.sol_s;
    }
  }
  std::stable_sort(
      out.nodes.begin(), out.nodes.end(),
      [](const NodeHeadroom& x, const NodeHeadroom& y) { return x.measured_s > y.measured_s; });
  return out;
}

}  // namespace solar::sol
