// Headroom: how far a measured run is from its speed-of-light time (docs/calibrate.md).
//
//   headroom_F = measured time / SOL time of fidelity F, for each fidelity analysed.
//
// A SOL time is a lower bound, so every headroom should be >= 1 for the fidelities that bound
// every implementation: the smallest SOL time analysed (the fused model, or the cache-aware one
// when it is smaller than unfused but above fused) is the program's bound, and a measured time
// below it is a *violation* (the device figures are too low, or the program did less work than
// the graph says). A measured time below the unfused SOL alone is no violation: a real program
// may fuse kernels.
//
// When the device that measured is not the device the SOL was computed for, headroom is a
// what-if (measured on one device, bounded on another), and the report says so.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "solar/einsum/graph.h"
#include "solar/sol/analysis.h"

namespace solar::sol {

// A measured time of the whole program.
struct Measurement {
  double time_s = 0;   // positive, finite (the median when several runs were timed)
  std::string device;  // the device that measured; empty: not stated
  std::string method;  // how it was measured, one line (may be empty)
};

struct FidelityHeadroom {
  Fidelity fidelity = Fidelity::Unfused;
  double sol_s = 0;
  double headroom = 0;  // measured / sol_s (0 when sol_s is 0: no bound to compare with)
};

// A measured time of one node of the framework's graph (a captured node), with what the
// lowering made of it (frontend::LoweredNode): the einsum graph's nodes are attributed to it by
// these names.
struct NodeMeasurement {
  std::string node;                  // the captured node's name
  std::string op;                    // its operator (may be empty)
  double time_s = 0;                 // finite, >= 0 (a view may take no device time)
  bool lowered = true;               // false: it was not lowered (no SOL time to compare with)
  std::vector<std::string> kernels;  // the IR kernels it lowered to
  std::vector<std::string> tensors;  // the tensors it writes (its data-movement nodes' outputs)
};

// Per-node headroom of one captured node. A graph node belongs to the captured node that lists
// its kernel (an einsum node; "[t=3]" suffixes of repeat blocks ignored) or the tensor it writes
// (a data-movement node).
struct NodeHeadroom {
  std::string node;
  std::string op;
  double measured_s = 0;
  double sol_s = 0;                      // Σ unfused SOL of its graph nodes
  std::vector<std::string> graph_nodes;  // its nodes of the einsum graph, in graph order
  std::optional<double> headroom;        // measured_s / sol_s; absent when sol_s is 0
  // "ok" (a ratio), "view (no work)" (no graph node: a view that folded away), "no work" (graph
  // nodes with a zero SOL time), "not lowered" (no SOL).
  std::string status;
};

struct NodeHeadrooms {
  std::string method;                     // how the nodes were timed, one line (may be empty)
  std::vector<NodeHeadroom> nodes;        // by measured time, descending (ties: the input order)
  double sol_s = 0;                       // Σ sol_s of the nodes
  std::vector<std::string> unattributed;  // graph nodes no measured node claims, in graph order
  double unattributed_sol_s = 0;          // their Σ unfused SOL (sol_s + this = unfused SOL)
};

struct Headroom {
  Measurement measurement;
  std::string target;                        // the device of the SOL times
  bool what_if = false;                      // measured on a named device other than the target
  std::vector<FidelityHeadroom> fidelities;  // in the order of the analysis' results
  double bound_s = 0;                        // the smallest SOL time analysed
  bool violation = false;                    // measured < bound_s
  std::optional<NodeHeadrooms> nodes;        // per-node headroom, when node times were given
};

// Headroom of `m` against `a` (analysed on device `target`). UserError when the measured time
// is not a positive finite number.
Headroom compute_headroom(const Analysis& a, const std::string& target, const Measurement& m);

// Per-node headroom of `measured` against the unfused SOL of graph `g` (analysed as `a`): each
// graph node is attributed to the measured node that names it. UserError for a time that is
// negative or not finite, a node named twice, a graph node claimed by two nodes, or a kernel
// that is not in the graph (the times were measured for another program).
NodeHeadrooms compute_node_headroom(const einsum::Graph& g, const Analysis& a,
                                    const std::vector<NodeMeasurement>& measured,
                                    const std::string& method);

}  // namespace solar::sol
