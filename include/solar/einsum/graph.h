// The einsum graph: what SOLAR's analyses run on.
//
// Lifting turns a checked IR program (at bound sizes) into a list of nodes in program order
// (repeat blocks unrolled): every kernel becomes one extended-einsum node, every composition
// statement either folds away as a view (no data moves: the consumers' accesses are rewritten to
// read the viewed tensor directly; a constant pad becomes guarded reads) or becomes a
// data-movement node (bytes, no arithmetic).
//
// Counting conventions (stated once, here and in docs/fidelities.md):
//   - MACs: the points of a node's domain where its body multiplies two tensor-reading operands
//     under a sum reduction (`+=` with a top-level product; invariant factors such as `rsqrt(D)`
//     are folded in and free). 1 MAC = 2 FLOPs. Sub-expressions with no read and no loop index
//     are computed once and cost nothing.
//   - Other ops, per point, by cost class (ast.h): simple (add, sub, mul, compare, select, min,
//     max, abs, ...) and special (exp, log, tanh, erf, div, sqrt, rsqrt, pow, ...). A reduction
//     that is not a MAC counts one simple op per point (the combine). Casts, negation and reads
//     are free. `select` counts its condition, one simple op, and the larger of its two branches.
//   - FLOPs = 2 x MACs + other ops.
//   - Domain sizes are exact integer-point counts (a causal triangle counts the triangle).
//   - Bytes of an access = its footprint (distinct elements touched) x element size of the
//     tensor's storage, in bits: its dtype's, or a weight format's (scales included) under a
//     weight-storage policy (sol::store_weights), rounded down to whole bytes once per count.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "solar/ir/affine.h"
#include "solar/ir/ast.h"
#include "solar/ir/sizes.h"

namespace solar::ir {
class CheckedProgram;  // solar/ir/checker.h
}  // namespace solar::ir

namespace solar::einsum {

#define SOLAR_NODE_KINDS(X)                                  \
  X(Einsum)   /* a kernel: Out[o] = R_r f(In_1[a_1], ...) */ \
  X(Movement) /* a composition statement that moves data: bytes, no arithmetic */

enum class NodeKind : uint8_t {
#define SOLAR_X(e) e,
  SOLAR_NODE_KINDS(SOLAR_X)
#undef SOLAR_X
};
std::string_view node_kind_name(NodeKind k);

// sum for `+=`, prod `*=`, max `max=`, min `min=`, none for `=` and data movement.
enum class Reduction : uint8_t { None, Sum, Prod, Max, Min };
std::string_view reduction_name(Reduction r);

struct OpCounts {
  int64_t macs = 0;
  int64_t simple = 0;
  int64_t special = 0;
  int64_t other_ops() const { return simple + special; }
  int64_t flops() const { return 2 * macs + simple + special; }
};

// One access map of a node: how the points of `domain` reach a tensor's storage.
//   Affine maps: the element at flat row-major offset `offset + sum_d strides[d] * index[d]` of
//   the tensor, where index[d] is the d-th index as written in the kernel (for a read through a
//   folded view, an index of the view, whose dimension d has size extent[d]). A guarded map (a
//   read inside a `select` branch, or any read through a padded view) is performed only where
//   every index lies in 0..extent[d]; through a padded view, index[d] is the view's index minus
//   the padding before dimension d, and extent[d] the number of the source's elements along it.
//   Data-dependent maps (take, gather, scatter): `moved` elements at positions given by an index
//   tensor's values; `index` is empty, except for the read of take and gather: there `data_dim`
//   is the dimension the index tensor chooses, and every other dimension d of the view read
//   (`offset`, `strides`, `extent` as for an affine map) is indexed by index[d], a loop of the
//   elements moved (index[data_dim] is 0).
struct AccessMap {
  std::string text;  // e.g. "x[n, c, 2 * oh + kh, ow]"; "x.flat[...]" when no per-dimension form
  ir::AffineDomain domain;
  int64_t offset = 0;
  std::vector<ir::AffineForm> index;
  std::vector<int64_t> strides;
  std::vector<int64_t> extent;
  bool guarded = false;
  bool data_dependent = false;
  int64_t moved = 0;
  int64_t data_dim = -1;  // take and gather reads: the dimension the index tensor chooses
  // Data-dependent maps: the fewest distinct elements the map can touch, whatever the index
  // values (every index the same value, or the `distinct=D` the program guarantees), and whether
  // the footprint counts that many (Routing::Concentrated) instead of `moved`, all taken distinct
  // (Routing::Balanced). Only a routed map (the read of a take that carries `distinct=D`: a
  // router's choice, the experts a top-k router picks) follows the routing; every other
  // data-dependent map (a gather by a block table, an embedding lookup) counts `moved`.
  int64_t fewest = 0;
  bool routed = false;
  bool concentrated = false;

  ir::AffineForm flat() const;  // offset + sum_d strides[d] * index[d] (affine maps only)
};

// The tensor accesses of a node, after views are folded: one per tensor whose storage is touched
// (a graph input, weight, output or materialised intermediate), holding all the node's access maps
// of that tensor, so that an element two maps touch is counted once.
struct Access {
  std::string tensor;
  std::string text;       // the maps' texts, joined by ", ", e.g. "x[n, c, 2 * oh + kh, ow]"
  int64_t footprint = 0;  // distinct elements touched (data-dependent maps: see docs/einsum.md)
  bool footprint_exact = true;  // false: a documented lower bound (see docs/einsum.md)
  int64_t bytes = 0;            // footprint x element size
  std::vector<AccessMap> maps = {};
};

struct Node {
  std::string name;  // kernel name; in repeat blocks suffixed "[t=3]"; movement: "copy:y" etc.
                     // (unique: a repeated movement name gets "#2", "#3", ...)
  NodeKind kind = NodeKind::Einsum;
  std::string op;  // "kernel", or the composition op's name ("concat", "copy", ...)
  // The `op` block the node's statement is in (its name, with the repeat suffix of the block:
  // "softmax", "cell[t=2]"), or "" when it is in none. Consecutive nodes of one block are one
  // framework operation: the unfused fidelity runs them as one kernel (docs/fidelities.md).
  std::string op_block;
  std::string einsum;  // one-line canonical text of the node
  int64_t points = 0;  // |domain| (movement nodes: elements moved)
  Reduction reduction = Reduction::None;
  ir::AffineDomain domain;    // the iteration domain (movement nodes: the elements written)
  std::vector<Access> reads;  // one per tensor, in order of first appearance
  std::vector<Access> writes;
  OpCounts counts;
  // What decides the precision the node runs in (the SOL engine's precision policy):
  std::optional<ir::DType> mac_lhs_dtype, mac_rhs_dtype;  // operands of the product (macs > 0)
  // Origin precision of the product's operands (docs/precision.md, "Origin precision"): set
  // when both operands are exact upcasts of narrower values (through casts, per-block scale
  // multiplies, reshapes and copies), to the dtypes of those narrower values: a dequantised
  // fp8 GEMM (`cast<f32>(a_fp8) * scale` times `cast<f32>(b_fp8) * scale`) has f32 operands
  // of origin f8e4m3. Unset otherwise, or when the origins are the operands' own dtypes.
  std::optional<ir::DType> mac_lhs_origin, mac_rhs_origin;
  ir::DType out_dtype = ir::DType::F32;
  ir::DType compute_dtype = ir::DType::F32;  // widest floating dtype among operands and output
  // An `=` kernel whose value is one tensor read scaled by factors that are the same at every
  // point (`x[i, j] * 0.125`, `x[i, j] / 4.0`, `rsqrt(D) * x[i, j]`): a scale commutes with a
  // contraction (the insights' chains run through it).
  bool scales_a_read = false;
  // A `reshape` of an intermediate that the lift had to materialise because SOLAR's strided
  // views cannot express it (one that merges permuted dimensions): a relabelling of the same
  // elements, which no framework runs as a kernel of its own. The kernel that writes the
  // intermediate can write it in the layout that makes the reshape a view, as an eager run does
  // (the attention kernel's output, whose head-merge torch.export records as `aten.view`: a
  // view only where the real strides allow one); a copy a framework does need is an operation
  // of its own (`clone`, `contiguous`). Not of a graph input: its layout is given. The unfused
  // and cache-aware fidelities charge it no bytes (docs/fidelities.md, "Relabelling reshapes").
  // Also the record of an in-place write: the copy into a capture's `x_written` output of the
  // values an in-place update writes into input x, when that write is a node of its own
  // (docs/einsum.md, "In-place updates of inputs").
  bool relabel = false;
  // Set by sol::store_weights: the node has MACs and reads a weight that the policy stores in a
  // format with a tensor-core rate of its own (NVFP4, MXFP4: fp4), so its MACs run at that rate
  // where the device has one (docs/precision.md).
  bool mac_reads_stored_weight = false;
  // The loops whose index is used as a value on the right side (an Index expression: `arange`,
  // a causal mask's `j <= i`): the node's value depends on them even where no read does.
  std::vector<std::string> value_loops = {};
  bool conv_like = false;  // a contraction with a sliding window (an operand index that combines
                           // an output loop and a reduced loop in one dimension, or an output
                           // index that combines two loops: a transposed convolution)

  int64_t bytes_read() const;
  int64_t bytes_written() const;
};

// The size of a tensor's elements in storage: `bits` per `per` elements, so that a block-scaled
// format's scales count in its size (NVFP4: 4-bit values and one 8-bit scale per 16, 4 x 16 + 8
// = 72 bits per 16 elements).
struct ElementBits {
  int64_t bits = 32;
  int64_t per = 1;
  // floor(elements x bits / (8 x per)): the bytes of `elements` elements, rounded down once (a
  // lower bound, never a byte per element rounded up). Exact for whole-byte dtypes.
  int64_t bytes(int64_t elements) const;
  bool operator==(const ElementBits&) const = default;
};

struct TensorInfo {
  std::string name;
  ir::TensorRole role = ir::TensorRole::Intermediate;
  ir::DType dtype = ir::DType::F32;
  std::vector<int64_t> shape;
  int64_t numel = 0;
  int64_t bytes = 0;
  // The storage format of a weight under a weight-storage policy (sol::store_weights): its name
  // ("nvfp4") and element size, scales included. Empty: the dtype's (8 x its size per element).
  std::string format = {};
  std::optional<ElementBits> stored_bits = std::nullopt;

  ElementBits element_bits() const;          // stored_bits, else the dtype's
  int64_t bytes_of(int64_t elements) const;  // element_bits().bytes(elements)
};

// How the footprints count the elements that routed takes (`take(..., distinct=D)`: a router's
// choice of experts) touch, whose positions the data decide (docs/einsum.md, "Data-dependent
// accesses"); every other data-dependent map (take, gather, scatter by ids the program names)
// counts every index distinct under both:
//   Balanced:     every index taken distinct, up to the tensor's size (a batch spread over every
//                 expert it can reach: min(E, B*k) experts at batch B);
//   Concentrated: as many different values as the program guarantees (top-k routing reads k
//                 experts), the fewest elements any routing can touch: a lower bound on the bytes
//                 for every routing (the default of --routing; the graph lift returns is
//                 Balanced).
enum class Routing : uint8_t { Balanced, Concentrated };
std::string_view routing_name(Routing r);
Routing parse_routing(std::string_view name);  // "balanced" or "concentrated" (else UserError)

struct Graph {
  std::string source;                   // the program's file name (for reports)
  Routing routing = Routing::Balanced;  // how data-dependent footprints are counted
  ir::SymbolValues sizes;               // the bound sizes
  std::vector<TensorInfo> tensors;      // declaration order
  std::vector<Node> nodes;              // program order, repeats unrolled
  // Nodes the lift removed as dead code: their values reach no graph output (docs/einsum.md,
  // "Dead code"); they cost nothing at any fidelity. Program order.
  std::vector<std::string> dead_nodes;

  const TensorInfo* find_tensor(std::string_view name) const;
};

// Lifts a program that passes the checker at `sizes`: checks it (once; DiagnosticError if it does
// not pass), then lifts the checked program. `sizes` sets free sizes (as --size does), and may
// also hold derived sizes at the values they derive to (so the result of ir::check_or_throw can
// be passed as is). A program checked already: lift(const ir::CheckedProgram&).
Graph lift(const ir::Program& p, const ir::SymbolValues& sizes);

// Lifts a program already checked (ir::check_program) at its bound sizes, without checking it
// again: the same graph as lift(p.program(), p.sizes()).
Graph lift(const ir::CheckedProgram& p);

// Counts the footprints of every data-dependent map of `g` under `r` (sets g.routing; each
// access that holds such a map gets its footprint and bytes again). The graph lift returns is
// Balanced.
void assume_routing(Graph& g, Routing r);

// Graph inputs, weights and outputs touched by the whole graph, each counted once: the number of
// distinct elements of `tensor` read (inputs, weights) or written (outputs, intermediates) by all
// nodes together. Data-dependent accesses add their moved elements, as if distinct.
int64_t touched_elements(const Graph& g, std::string_view tensor);

// touched_elements with its exactness: `exact` is false when `elements` is a lower bound (e.g. a
// union of overlapping accesses of a tensor of more than 2^28 elements; docs/einsum.md,
// "Footprints", lists the cases).
struct Footprint {
  int64_t elements = 0;
  bool exact = true;
};
Footprint touched_footprint(const Graph& g, std::string_view tensor);
// touched_footprint of every tensor of g.tensors, in that order, in one pass over the nodes (an
// intermediate: the elements its writes touch, as touched_footprint gives).
std::vector<Footprint> touched_footprints(const Graph& g);

// How many copies of each of its distinct values each tensor of g.tensors holds (in that order):
// the product of the sizes of the dimensions along which its values repeat, 1 where they repeat
// along none (docs/fidelities.md, "Repeated values"). A tensor's values repeat along dimension d
// when one node writes it whole, through a write whose index along d is one loop v (0 to the
// size, step 1) that no other index of the write uses, and the value at each point does not
// depend on v: no read's index uses v except along dimensions along which that read's tensor
// repeats, v is no value of the right side, and no loop's bounds use it. A causal mask broadcast
// over heads (`mask[b, h, i, j] = allowed[i, j] & keep[b, j]`) repeats along h; so does a
// `zeros(B, H, L, L).masked_fill(...)` of such a mask (the zeros repeat along every dimension).
std::vector<int64_t> repeated_copies(const Graph& g);

// One framework operation: a run of consecutive nodes of one `op` block, or one node that is in
// none. The unfused fidelity runs each as one kernel, as eager runs the op
// (docs/fidelities.md, "Unfused"): its intermediates stay on chip, so its DRAM bytes are
//   read:    per tensor read by the unit before any node of the unit writes it, the distinct
//            elements its reads touch (union of the maps of those nodes);
//   written: per tensor the unit writes, unless a later node of the unit reads it and nothing
//            after the unit needs it (not a graph output, no later reader): the distinct
//            elements its writes touch.
// Tensors written and consumed inside the unit stay on chip. A unit of one node moves what the
// node reads and writes (Node::bytes_read + bytes_written), as before units existed.
struct OpUnit {
  std::string name;  // the op block's name, or the node's name
  size_t first = 0;  // the nodes [first, last) of the graph
  size_t last = 0;
  int64_t bytes_read = 0;
  int64_t bytes_written = 0;
  bool bytes_exact = true;  // false: a lower bound (a footprint of docs/einsum.md's cases)
  int64_t bytes() const { return bytes_read + bytes_written; }
};

// The graph's framework operations, in node order (every node in exactly one).
std::vector<OpUnit> op_units(const Graph& g);

// Text form (documented in docs/einsum.md; deterministic) and Graphviz DOT.
std::string print_graph(const Graph& g);
std::string graph_to_dot(const Graph& g);

}  // namespace solar::einsum
