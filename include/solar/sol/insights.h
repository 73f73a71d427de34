// Insights: what the analysis suggests doing to a program (docs/report.md, "Insights").
//
//  - Contraction order. A chain of contractions (nodes whose body is one product of two operands
//    under a sum, each feeding the next through an intermediate nobody else reads) is a tensor
//    network; the program computes it in one order, and another may need far fewer MACs (e.g.
//    A(50x5) B(5x100) C(100x10): (AB)C costs 75,000 MACs, A(BC) 7,500; multi-head latent
//    attention computed naively vs with the up-projection absorbed). The cheapest order is found
//    by dynamic programming over subsets of the chain's operands, as opt_einsum's `optimal` path
//    does: cost(S) = min over splits S = S1 + S2 of cost(S1) + cost(S2) + the product of the
//    extents of the indices of the two partial results; a partial result keeps the indices that
//    an operand outside it or the chain's output still needs.
//    A chain runs through index relabelings: a node that only copies one tensor (permute,
//    reshape, broadcast, copy) or scales it by a constant (a scale commutes with a product) is
//    not a barrier. Every dimension is a product of atomic indices (a [B*H, T, D] tensor made
//    from [B, H, T, D] carries b, h, t, d), so an einsum lowered to reshape + bmm + reshape lines
//    up with its neighbours. Any other node (softmax, a mask, GELU, a bias add) cuts the chain:
//    its input is the output of the chain before it and its output an operand of the chain after
//    it, both computed exactly as the program does, so each side is reordered on its own (the
//    absorbed form of attention keeps the scores, and the softmax over them, unchanged).
//  - Fusion opportunities: each intermediate tensor, with the DRAM bytes saved when its producer
//    and its consumers run as one kernel (its writes and reads stay on chip), ranked by bytes.
//  - The bottleneck of each node: compute or memory, its arithmetic intensity (FLOPs per byte)
//    and the device's ridge point for the node's rate (rate / DRAM bandwidth).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "solar/einsum/graph.h"
#include "solar/sol/analysis.h"

namespace solar::sol {

// A tensor network: operand k has indices labels[k] (label ids into `extents`); `output` are the
// indices of the result.
struct TensorNetwork {
  std::vector<std::string> names;        // operand names, for the order's text
  std::vector<std::vector<int>> labels;  // per operand
  std::vector<int64_t> extents;          // per label
  std::vector<int> output;
};

// A contraction order and its cost in MACs (a pairwise contraction costs the product of the
// extents of every index of its two operands). `text` nests pairs: "(A (B C))".
// `steps` are its pairwise contractions in einsum notation, in the order they run (the post-order
// of `text`): "abd,cbd->abc", one letter per index (a..z, A..Z; empty when a network has more
// than 52 indices). An operand's letters are in its own order, a partial result's in increasing
// label order, the last step's output in the network's output order.
struct ContractionOrder {
  int64_t macs = 0;
  std::string text;
  std::vector<std::string> steps = {};
};

// The cheapest pairwise order of `net` (at least 2 operands, at most kMaxChainOperands; else
// InternalError). Ties: the first split found, enumerating subsets in increasing order, so the
// result is deterministic. Costs saturate at INT64_MAX.
inline constexpr size_t kMaxChainOperands = 12;
ContractionOrder optimal_order(const TensorNetwork& net);

struct ContractionChain {
  std::vector<std::string> nodes;     // its contractions, in program order
  std::vector<std::string> operands;  // the chain's input tensors, in order of first read
  ContractionOrder program;           // as the program computes it (its nodes' MACs, summed)
  ContractionOrder best;              // the cheapest order
  std::vector<std::string> via = {};  // the relabelings it runs through, in program order
  // The letters of `steps` and their extents, in letter order.
  std::vector<std::pair<std::string, int64_t>> indices = {};
  // The compute time the best order saves: the chain's nodes' compute terms minus 2 x best.macs
  // at the fastest of their MAC rates (0 when best == program).
  double compute_s_saved = 0;
  // The fused SOL with this chain at its best order: max(fused compute - compute_s_saved, fused
  // memory) (the fused bytes are the graph's inputs and outputs, which do not change); absent
  // when the fused fidelity was not analysed.
  std::optional<double> fused_s = {};
  int64_t flops_saved() const { return 2 * (program.macs - best.macs); }
};

struct FusionOpportunity {
  std::string tensor;                  // the intermediate that would stay on chip
  std::string producer;                // the node writing it
  std::vector<std::string> consumers;  // the nodes reading it, in program order
  int64_t bytes_saved = 0;             // bytes it is written with + its widest read in each
                                       // consumer op (an op reads it once; the producer's own
                                       // op reads it on chip, which saves nothing)
  double memory_s_saved = 0;           // bytes_saved / DRAM bandwidth
};

struct NodeBottleneck {
  std::string node;
  Bottleneck bottleneck = Bottleneck::Memory;
  double intensity_flops_per_byte = 0;  // node FLOPs / node bytes (0 without bytes)
  double ridge_flops_per_byte = 0;      // main rate / DRAM bandwidth (0 without arithmetic)
};

struct Insights {
  std::vector<ContractionChain> chains;     // chains of >= 2 contractions, program order
  std::vector<FusionOpportunity> fusions;   // bytes saved, largest first (ties: declaration order)
  std::vector<NodeBottleneck> bottlenecks;  // one per node, program order
  std::vector<std::string> notes;           // chains left out, and why
};

// The insights of `g`, analysed as `a` (a = analyze(g, ...)).
Insights find_insights(const einsum::Graph& g, const Analysis& a);

}  // namespace solar::sol
