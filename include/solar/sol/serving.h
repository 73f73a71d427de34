// Serving figures of a decoder (docs/serving.md): from the SOL of one prefill or decode step
// analysed at several batch sizes, the time of a step, the tokens it makes and tokens/s per
// device, and the batch at which the step turns compute bound.
//
// A decode step makes one token per sequence: `tokens` = batch, its SOL is the time per
// output token of every sequence (the inter-token latency), tokens/s = batch / SOL. A prefill
// step reads `batch` x `context` prompt tokens: `tokens` = batch x context, its SOL is the time
// to the first token, tokens/s = batch x context / SOL. report/serving.h renders the result.
//
// In parallel (`--devices N --parallel tp=N`, docs/serving.md "Serving in parallel"): each step
// is laid out by sol/parallel.h's planner (Megatron: column-parallel QKV and up/gate,
// row-parallel o_proj and down, attention by head, so each device keeps 1/N of the weights and
// of the KV cache) and the figures are the per-device ones of that layout: every device runs its
// shard of the step at once, so the per-device step is what a token costs (the group's step);
// its terms are the device's compute, DRAM bytes and the collectives (the two all-reduces of
// each transformer layer's activation) at the scale-up link's bandwidth.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "solar/sol/analysis.h"
#include "solar/sol/parallel.h"

namespace solar::sol {

enum class ServePhase : uint8_t { Prefill, Decode };

// "prefill", "decode".
std::string_view serve_phase_name(ServePhase p);
// An unknown name is a UserError listing the valid ones.
ServePhase parse_serve_phase(std::string_view name);

// One step analysed at one batch size: the fidelities' results (Analysis::results) and, on
// several devices, its layout's analysis (sol::analyze_parallel; absent on one device).
struct ServeStep {
  int64_t batch = 0;
  std::vector<FidelityResult> results;
  std::optional<ParallelAnalysis> parallel = std::nullopt;
};

// The layout `--serve` takes: `layout_for(devices, text)` with tensor parallelism only; a
// UserError names dp, pp, mb or sp (a step serves every sequence on every device of the group).
ParallelLayout serving_layout(int64_t devices, std::string_view text);

// One fidelity's figures of one step.
struct ServeFigures {
  Fidelity fidelity = Fidelity::Fused;
  double step_s = 0;        // the step's SOL time
  double tokens_per_s = 0;  // tokens / step_s (0 when step_s is 0: no work, said so)
  double compute_s = 0;
  double memory_s = 0;
  int64_t bytes = 0;                           // DRAM bytes (in parallel: of one device)
  Bottleneck bottleneck = Bottleneck::Memory;  // the larger of compute and memory
  // In parallel: the step's collectives on one device (0 on one device), and whether they are
  // the largest term (the step is bound by the interconnect).
  double comm_s = 0;
  bool interconnect_bound = false;
};

struct ServeRow {
  int64_t batch = 0;
  int64_t tokens = 0;                 // decode: batch; prefill: batch x context
  std::vector<ServeFigures> figures;  // in the steps' fidelity order
  // In parallel: the step's collectives and the bytes one device sends in them.
  size_t collectives = 0;
  double sent_bytes = 0;
};

// The layout of a parallel serving report.
struct ServeParallel {
  ParallelLayout layout;
  std::string link;             // the scale-up link's name
  double link_bytes_per_s = 0;  // per direction
  bool in_network_reduction = false;
};

// Where a fidelity's step turns compute bound over the batches analysed.
struct ServeCrossover {
  Fidelity fidelity = Fidelity::Fused;
  std::optional<int64_t> last_memory_bound;    // the largest batch before the first compute-bound
  std::optional<int64_t> first_compute_bound;  // the smallest compute-bound batch analysed
  // The batch at which compute = memory, interpolating both terms linearly between the two
  // batches above (exact when both are affine in the batch, as a decode step's counts are);
  // absent unless both exist. Not for unfused (its bottleneck is the nodes' majority kind).
  std::optional<double> estimate;
};

struct Serving {
  ServePhase phase = ServePhase::Decode;
  int64_t context = 0;
  std::vector<ServeRow> rows;              // by batch, increasing
  std::vector<ServeCrossover> crossovers;  // one per fidelity, in the steps' fidelity order
  // Present when the steps were laid out over several devices: every figure is then per device
  // (the fidelities are the parallel analysis's: unfused and fused).
  std::optional<ServeParallel> parallel;
};

// The figures of `steps` (batches strictly increasing, each >= 1; the same fidelities in the
// same order in each; context >= 1; all laid out on the same devices or none): UserError
// otherwise.
Serving summarize_serving(ServePhase phase, int64_t context, const std::vector<ServeStep>& steps);

}  // namespace solar::sol
