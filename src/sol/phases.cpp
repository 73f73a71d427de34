// A training step's phases (include/solar/sol/phases.h).
#include "solar/sol/phases.h"

#include <set>
#include <string>
#include <vector>

#include "solar/ir/dtype.h"

namespace solar::sol {

const std::vector<std::string>& phase_names() {
  static const std::vector<std::string> names = {"forward", "backward", "optimizer"};
  return names;
}

std::vector<std::string> node_phases(const einsum::Graph& g,
                                     const std::map<std::string, std::string>& tensor_phase) {
  std::vector<std::string> phases;
  std::string current = phase_names().front();
  for (const einsum::Node& n : g.nodes) {
    for (const einsum::Access& w : n.writes) {
      const auto it = tensor_phase.find(w.tensor);
      if (it != tensor_phase.end()) {
        current = it->second;
        break;
      }
    }
    phases.push_back(current);
  }
  return phases;
}

namespace {

// Per tensor: the phases that write it and that read it.
struct Uses {
  std::set<std::string> writers, readers;
};

std::map<std::string, Uses> tensor_uses(const einsum::Graph& g,
                                        const std::vector<std::string>& phases) {
  std::map<std::string, Uses> uses;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    for (const einsum::Access& a : g.nodes[i].writes) uses[a.tensor].writers.insert(phases[i]);
    for (const einsum::Access& a : g.nodes[i].reads) uses[a.tensor].readers.insert(phases[i]);
  }
  return uses;
}

// phase_graph with the graph's tensor uses given (analyze_step builds them once for every phase).
einsum::Graph phase_graph_of(const einsum::Graph& g, const std::vector<std::string>& phases,
                             const std::map<std::string, Uses>& uses, std::string_view phase) {
  einsum::Graph p;
  p.source = g.source;
  p.routing = g.routing;
  p.sizes = g.sizes;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (phases[i] == phase) p.nodes.push_back(g.nodes[i]);
  }
  const std::string mine(phase);
  for (einsum::TensorInfo t : g.tensors) {
    const auto it = uses.find(t.name);
    if (it != uses.end() &&
        (t.role == ir::TensorRole::Intermediate || t.role == ir::TensorRole::Output)) {
      const Uses& u = it->second;
      const bool writes = u.writers.count(mine) != 0;
      const bool reads = u.readers.count(mine) != 0;
      const bool read_elsewhere = u.readers.size() > (reads ? 1U : 0U);
      if (writes) {
        if (t.role != ir::TensorRole::Output && read_elsewhere) t.role = ir::TensorRole::Output;
      } else if (reads) {
        t.role = ir::TensorRole::Input;
      } else {
        t.role = ir::TensorRole::Intermediate;  // untouched here
      }
    }
    p.tensors.push_back(std::move(t));
  }
  return p;
}

}  // namespace

einsum::Graph phase_graph(const einsum::Graph& g, const std::vector<std::string>& phases,
                          std::string_view phase) {
  return phase_graph_of(g, phases, tensor_uses(g, phases), phase);
}

StepAnalysis analyze_step(const einsum::Graph& g,
                          const std::map<std::string, std::string>& tensor_phase,
                          const hw::Device& d, const PrecisionPolicy& policy,
                          const std::vector<Fidelity>& fidelities, const AnalysisOptions& options) {
  const std::vector<std::string> phases = node_phases(g, tensor_phase);
  StepAnalysis s;
  AnalysisOptions fresh = options;
  fresh.optimizer = nullptr;  // each phase is a graph of its own
  const std::map<std::string, Uses> uses = tensor_uses(g, phases);
  for (const std::string& name : phase_names()) {
    const einsum::Graph pg = phase_graph_of(g, phases, uses, name);
    if (pg.nodes.empty()) continue;
    s.phases.push_back({name, pg.nodes.size(), analyze(pg, d, policy, fidelities, fresh)});
  }
  for (const einsum::TensorInfo& t : g.tensors) {
    const auto it = uses.find(t.name);
    if (it == uses.end()) continue;
    if (it->second.writers.count("forward") != 0 && it->second.readers.count("backward") != 0) {
      s.activations.push_back({t.name, t.bytes});
      s.activation_bytes += t.bytes;
    }
  }
  return s;
}

}  // namespace solar::sol
