// The SOL of a program run on several devices (docs/parallel.md): a layout of tensor (tp), data
// (dp) and pipeline (pp) parallelism over tp x dp x pp devices, the collectives the layout needs,
// and the time per device at the unfused and fused fidelities.
//
// The layout. Every einsum node runs on each axis (tp, dp) either replicated (every device of the
// axis's group computes all of it) or split along one of its loops: each device computes 1/A of
// the points (A the axis's size) and touches 1/A of each operand the loop indexes. A tensor is, on
// each axis, replicated, sharded (contiguous blocks of one storage dimension, one per device),
// partial (each device holds a partial sum or extremum of it), or free (a weight: stored as each
// device needs it, sliced ahead of time). A read that needs another layout than the tensor has
// costs a collective, charged once per tensor and layout:
//   replicated needed:  sharded -> all-gather; partial -> all-reduce
//   sharded needed:     partial -> reduce-scatter; sharded along another block -> all-to-all
// The planner, in graph order: data parallelism splits every graph input whose first dimension is
// the batch (that of the first input) and weights are replicated; each node follows its inputs
// (splits the loop that reads an input in the layout it has, when that costs least) or runs
// replicated. Tensor parallelism shards weights: a contraction that reads a weight splits one of
// the weight's loops (column-parallel: an output loop; row-parallel: the reduced loop, whose
// output is partial), chosen by least cost, lookahead included; other nodes follow as above. Every
// graph output ends complete: on tp replicated (a weight-shaped output, a gradient or an updated
// parameter, may stay sharded as each device keeps its shard; with `sp`, sequence parallelism,
// any output may), on dp not partial (a gradient is all-reduced).
// Pipeline parallelism cuts the framework operations into pp contiguous stages of least maximum
// time; the tensors crossing a cut are sent point to point.
//
// Costs per device (lower bounds of a run of the layout):
//   - compute and DRAM bytes: a node's compute_s x its split fractions; an access's bytes x the
//     fractions of the axes whose loop it involves (the slice of one device; a weight's bytes are
//     the largest slice any access reads). On devices of one group the largest share is at least
//     the mean, so 1/A errs smaller.
//   - a collective on an axis of A devices over a buffer of S bytes (the tensor's bytes divided
//     by its sharding on the other axis) sends, per device, by its bandwidth-optimal algorithm:
//     all-reduce 2(A-1)/A x S (ring), or S over a link whose switches reduce in the network
//     (hw::LinkSpec::in_network_reduction: NVLink SHARP; each device sends its buffer once and
//     receives the sum); all-gather and reduce-scatter (A-1)/A x S; all-to-all (A-1)/A^2 x S;
//     point to point S. Time = bytes / the scale-up link's bandwidth per direction.
//   - unfused: the eager run of the layout on one compute stream and one communication stream:
//     the framework operations in order, each as one kernel (its time as in sol/analysis.h, from
//     the per-device terms), a collective starting when its tensor is written and the stream is
//     free, an operation waiting for the collectives it reads.
//   - fused: T = max(sum compute, bytes_io / DRAM bandwidth, sum of communication) per stage:
//     any implementation, communication overlapped with everything else.
//   - pipeline of S stages and M microbatches (GPipe order): T = sum_s t_s / M + (M - 1) x
//     max(max_s t_s / M, max_b p2p_b / M); one microbatch's stage time t_s / M is a lower bound
//     (each microbatch reads the stage's weights again).
//   - floor: no layout on N devices does better than max(sum compute / N, fused bytes / N / DRAM
//     bandwidth): the work and the bytes each device must at least share.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "solar/einsum/graph.h"
#include "solar/hw/device.h"
#include "solar/sol/analysis.h"
#include "solar/sol/precision.h"

namespace solar::sol {

// `--parallel tp=T,dp=D,pp=P[,mb=M][,sp][,ring]`: each factor >= 1 (absent: 1); `mb` the
// microbatches of the pipeline (default 1); `sp` sequence parallelism (outputs may stay sharded on
// tp); `ring` all-reduces by the ring bound even over a link that reduces in the network.
struct ParallelLayout {
  int64_t tp = 1, dp = 1, pp = 1;
  int64_t microbatches = 1;
  bool sequence_parallel = false;
  bool ring = false;
  // A serving step (docs/serving.md, "Serving in parallel"; not spelled in the text): every graph
  // output stays on the devices that write it: each device keeps its heads' rows of the KV cache
  // it writes, and its vocabulary shard of the logits (a sampler reduces a few values per
  // sequence across the devices, not the logits: leaving that out errs small).
  bool serving = false;
  int64_t devices() const { return tp * dp * pp; }
  bool operator==(const ParallelLayout&) const = default;
};

// Parses `--parallel` text; UserError naming what is wrong (unknown key, a factor < 1, ...).
ParallelLayout parse_parallel(std::string_view text);
// The layout of `--devices N --parallel TEXT` (devices 0: not given): parse_parallel(TEXT), whose
// devices() must be N when both are given. UserError: --devices without --parallel, or a layout
// of another number of devices.
ParallelLayout layout_for(int64_t devices, std::string_view parallel);
// "tp=8", "tp=2,dp=4,pp=2,mb=8", "tp=8,sp": the canonical text.
std::string parallel_text(const ParallelLayout& l);

enum class Collective : uint8_t { AllReduce, AllGather, ReduceScatter, AllToAll, PointToPoint };
std::string_view collective_name(Collective c);  // "all-reduce", ..., "send/recv"

// One collective of the layout.
struct Communication {
  Collective kind = Collective::AllReduce;
  std::string axis;          // "tp", "dp", "pp"
  int64_t group = 1;         // devices taking part
  std::string tensor;        // the tensor moved
  int64_t buffer_bytes = 0;  // S: the tensor's bytes on the group (divided by its other sharding)
  double sent_bytes = 0;     // per device, by the formulas above
  double time_s = 0;         // sent_bytes / link bandwidth per direction
  size_t stage = 0;          // the pipeline stage it belongs to (pp: the sending stage)
  bool in_network = false;   // an all-reduce costed by the in-network bound (below the ring's)
  // The node that writes the tensor (or SIZE_MAX: a graph input) and the node that waits for it
  // (or SIZE_MAX: the end of the stage, a graph output).
  size_t after_node = SIZE_MAX, before_node = SIZE_MAX;
};

// How one node runs: the loop it splits on each axis ("": replicated) and its compute fraction.
struct NodeSplit {
  std::string tp_loop, dp_loop;
  double fraction = 1;  // of its points one device computes
};

// Per-device terms and time of one stage at one fidelity.
struct ParallelTerms {
  double compute_s = 0;
  double memory_s = 0;
  int64_t bytes = 0;  // DRAM bytes per device
  double comm_s = 0;  // the collectives of the stage
  double time_s = 0;
};

// "compute", "memory", "interconnect": the largest of the three terms (ties: the earlier).
std::string_view parallel_bottleneck(const ParallelTerms& t);

struct ParallelStage {
  size_t first = 0, last = 0;        // nodes [first, last)
  std::vector<ParallelTerms> terms;  // per fidelity, in the analysis's order
  int64_t send_bytes = 0;            // per device, to the next stage (0 for the last)
  double send_s = 0;
};

struct ParallelResult {
  Fidelity fidelity = Fidelity::Fused;
  double time_s = 0;  // the step on the layout, per device
  // The bottleneck stage's terms (pp = 1: the only stage); with microbatches, its communication
  // is the longest send between stages when that is longer (it paces the steady state).
  ParallelTerms terms;
  size_t bottleneck_stage = 0;
  double speedup = 0;  // the one-device SOL at this fidelity / time_s
};

struct ParallelAnalysis {
  ParallelLayout layout;
  std::string link;                   // the scale-up link's name ("" when none is needed)
  double link_bytes_per_s = 0;        // per direction
  bool in_network_reduction = false;  // all-reduces costed by the in-network bound
  std::vector<NodeSplit> nodes;       // one per graph node
  std::vector<Communication> comms;   // in the order the planner added them
  std::vector<ParallelStage> stages;
  std::vector<ParallelResult> results;  // per fidelity (unfused, fused only), in order asked
  double floor_s = 0;                   // any layout on devices(), see above
  // The per-direction link bandwidth at which the fused bound's communication term stops being
  // the largest (sum of sent bytes / max(compute, memory) of the bottleneck stage); 0 without
  // communication.
  double link_needed_bytes_per_s = 0;
};

// Analyses `g` on layout `l` of devices `d`, from `one`: the one-device analysis of `g` on `d`
// (sol::analyze), whose node costs, cache state and kernel floor it uses and whose fidelities it
// reports (the cache fidelity is skipped: not modelled per device). UserError: a layout of more
// than one device when `d` has no scale-up link figure; more stages than framework operations.
ParallelAnalysis analyze_parallel(const einsum::Graph& g, const hw::Device& d, const Analysis& one,
                                  const ParallelLayout& l);

}  // namespace solar::sol
