// A training step's phases (docs/training.md): the forward pass, the backward pass and the
// optimizer's update, each analysed as a program of its own, and the activations the forward
// keeps for the backward.
//
// The capture tags every node with its phase; the lowering gives the phase of every tensor a node
// writes (frontend::LowerResult::tensor_phases). A node of the einsum graph belongs to the phase
// of the tensor it writes. A phase's graph is the whole graph's nodes of that phase with the
// tensors' roles seen from the phase: a tensor another phase writes and this one reads is an
// input (the backward reads the forward's activations from DRAM); a tensor this phase writes that
// another phase reads, or that is a graph output, is an output (the forward writes them). So each
// phase's SOL at every fidelity is that of the phase run alone, and the sum over phases is never
// below the whole step's (fusing across phases can only save).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "solar/einsum/graph.h"
#include "solar/hw/device.h"
#include "solar/sol/analysis.h"
#include "solar/sol/precision.h"

namespace solar::sol {

// The phases, in step order.
const std::vector<std::string>& phase_names();  // forward, backward, optimizer

// The phase of every node of `g`: that of the first tensor it writes in `tensor_phase`; a node
// whose tensors have none takes the phase of the node before it (the first: "forward").
std::vector<std::string> node_phases(const einsum::Graph& g,
                                     const std::map<std::string, std::string>& tensor_phase);

// The graph of the nodes of `phase` (node_phases gives `phases`), with the roles above; a
// tensor the phase does not touch keeps its role (it touches no DRAM there).
einsum::Graph phase_graph(const einsum::Graph& g, const std::vector<std::string>& phases,
                          std::string_view phase);

// A tensor the forward writes and the backward reads: kept in memory from one to the other.
struct Activation {
  std::string tensor;
  int64_t bytes = 0;  // the whole tensor, its dtype's size x elements
};

struct PhaseAnalysis {
  std::string phase;
  size_t nodes = 0;   // einsum nodes
  Analysis analysis;  // of phase_graph
};

struct StepAnalysis {
  std::vector<PhaseAnalysis> phases;    // the phases that have nodes, in step order
  std::vector<Activation> activations;  // in declaration order
  int64_t activation_bytes = 0;         // their sum
};

// Every phase of `g` analysed on `d` at `fidelities` (as sol::analyze), and the activations.
StepAnalysis analyze_step(const einsum::Graph& g,
                          const std::map<std::string, std::string>& tensor_phase,
                          const hw::Device& d, const PrecisionPolicy& policy,
                          const std::vector<Fidelity>& fidelities,
                          const AnalysisOptions& options = {});

}  // namespace solar::sol
