// Precision policies: which compute unit and precision a node's work runs in on a device, and so
// which peak rate bounds its compute time (docs/precision.md).
//
// A node has two kinds of work (einsum/graph.h): MACs (a product of two operands under a sum) and
// other ops. A policy maps a node's MACs, by the dtypes of the two product operands and whether
// the node is a convolution, to a wanted (unit, precision) pair. Other ops run on the vector unit
// at the precision of the node's compute dtype, under every policy. When the device has no rate
// for the wanted pair, resolve_rate follows a fixed fallback chain (one per wanted pair, listed in
// docs/precision.md) towards rates that are at least as fast, so the bound stays a lower bound,
// and records the fallback in the rate's label. A rate is never zero: when no rate of the chain
// exists the analysis stops with a UserError naming the device, the node and the precision.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "solar/einsum/graph.h"
#include "solar/hw/device.h"

namespace solar::sol {

inline constexpr std::string_view kDefaultPrecisionPolicy = "pytorch-cuda-default";

// What decides the precision of a node's MACs: X(enumerator, description). The class of a pair
// of operand dtypes follows PyTorch's type promotion (contraction_class).
#define SOLAR_CONTRACTION_CLASSES(X)         \
  X(Fp64, "f64 operands")                    \
  X(Fp32, "f32 operands, not a convolution") \
  X(Fp32Conv, "f32 operands, a convolution") \
  X(Fp16, "f16 operands")                    \
  X(Bf16, "bf16 operands")                   \
  X(Fp8, "f8 operands (e4m3 or e5m2)")       \
  X(Int8, "8-bit integer or bool operands")  \
  X(WideInt, "32- or 64-bit integer operands")

enum class ContractionClass : uint8_t {
#define SOLAR_X(e, s) e,
  SOLAR_CONTRACTION_CLASSES(SOLAR_X)
#undef SOLAR_X
};

#define SOLAR_X(e, s) +1
inline constexpr size_t kContractionClassCount = 0 SOLAR_CONTRACTION_CLASSES(SOLAR_X);
#undef SOLAR_X

std::string_view contraction_class_description(ContractionClass c);

// The class of a contraction with product operands of dtypes `lhs` and `rhs`. Floating operands
// win over integer ones (PyTorch promotes the integer operand); among floats the wider wins, and
// f16 with bf16 promotes to f32 (torch.promote_types). `conv_like` splits f32 into Fp32Conv.
ContractionClass contraction_class(ir::DType lhs, ir::DType rhs, bool conv_like);

// A compute unit and a precision: one peak rate of a device.
struct Target {
  hw::ComputeUnit unit = hw::ComputeUnit::Vector;
  hw::Precision precision = hw::Precision::Fp32;

  bool operator==(const Target&) const = default;
};

// "bf16 tensor", "fp32 vector".
std::string target_name(Target t);

// A weight storage format of a weight-only policy: `element_bits`-bit values and one
// `scale_bits`-bit scale per `group` elements (docs/precision.md, "Weight formats"). Bits per
// element: element_bits + scale_bits / group (NVFP4: 4 + 8 / 16 = 4.5).
struct WeightFormat {
  std::string_view name;  // "nvfp4"
  int element_bits = 8;
  // The IR dtype of a stored element where the IR has one (int8, fp8 e4m3): the stored tensor
  // takes it. Unset (4-bit formats): the tensor keeps its dtype, and its size is the format's.
  std::optional<ir::DType> dtype = std::nullopt;
  int scale_bits = 0;
  // Elements per scale: a block of `group` elements (per_channel false), or, per_channel, one
  // scale per channel: a weight of rank 2 or more has min(rows, numel / rows) channels (its
  // first dimension or the rest, whichever is fewer, so the count errs small whichever is the
  // output channel), a weight of rank 1 or 0 one scale.
  int64_t group = 1;
  bool per_channel = false;
  // The tensor-core precision of the products with such a weight where the device has a rate for
  // it (fp4 formats: fp4); unset, or no rate: the program's own precision.
  std::optional<hw::Precision> products = std::nullopt;

  // The stored size of the elements of a weight of shape `shape` (numel elements).
  einsum::ElementBits bits(const std::vector<int64_t>& shape, int64_t numel) const;
};

// A named policy: the wanted target of each contraction class.
struct PrecisionPolicy {
  std::string_view name;
  std::string_view description;
  std::array<Target, kContractionClassCount> contraction;  // by ContractionClass
  // Weight-only quantisation: the weights the policy quantises (by default every linear weight:
  // a floating `weight` tensor of rank 2 or more that a node with MACs reads, the language-model
  // head included; `quantise=all`: every floating weight, biases, norms and embeddings too;
  // `keep=A+B`: not the tensors named) are stored in this format and dequantised on chip, so
  // their bytes are the format's, scales included. The products keep the program's precision
  // (their operand dtypes, taken in the lift), unless the format has a product precision the
  // device has. Applied by store_weights. Unset: the bytes are the program's.
  std::optional<WeightFormat> weight_format = std::nullopt;
  bool quantise_all = false;
  std::vector<std::string> keep = {};

  Target wanted(ContractionClass c) const { return contraction[static_cast<size_t>(c)]; }
};

// `g` with `policy`'s weight storage applied (PrecisionPolicy::weight_format): each quantised
// weight tensor's format, size and bytes (and dtype, where the format has one), the bytes of
// every access to it, and Node::mac_reads_stored_weight of the nodes with MACs that read one
// when the format has a product precision. `g` itself when the policy has none, or a tensor
// stored already. Every analysis applies it before anything else (report::make_report,
// compare_devices, make_curve).
einsum::Graph store_weights(einsum::Graph g, const PrecisionPolicy& policy);

// The names of the tensors store_weights quantises in `g` under `policy`, in declaration order
// (empty without weight storage).
std::vector<std::string> quantised_weights(const einsum::Graph& g, const PrecisionPolicy& policy);

// The registry, default policy first.
const std::vector<PrecisionPolicy>& precision_policies();

// A policy by name; an unknown name is a UserError listing the valid ones. A weight-only policy
// takes options after its name, each `:KEY=VALUE` (docs/precision.md): `group=N` (int4-weights:
// elements per scale), `quantise=linear|all`, `keep=NAME+NAME` (tensors left unquantised), as in
// `int4-weights:group=64:keep=lm_head`; a bad option is a UserError naming it.
const PrecisionPolicy& find_precision_policy(std::string_view name);

// The rate one kind of a node's work runs at.
struct Rate {
  Target wanted;           // what the policy asked for
  Target used;             // what the device has (== wanted unless fallback)
  double flops_per_s = 0;  // the peak of `used`: FLOP/s (int8: ops/s), positive
  std::string label;       // "bf16 tensor", or "fp32 vector->bf16 tensor (TPU-v5e has no ...)"

  bool fallback() const { return !(used == wanted); }
};

// The wanted target for other ops (non-MAC work) of a node whose compute dtype is `t`: the
// vector unit at fp64, fp32, fp16 or bf16; f8, integer and bool work at fp32.
Target vector_target(ir::DType t);

// The rate of `wanted` on `d`, following its fallback chain. `what` names the work for the error
// message (e.g. "node 'gemm' (policy pytorch-cuda-default)"). Throws UserError when no rate of
// the chain exists on the device.
Rate resolve_rate(const hw::Device& d, Target wanted, std::string_view what);

// The wanted targets tried after `wanted`, in order (docs/precision.md lists them).
const std::vector<Target>& fallback_chain(Target wanted);

// The rates of a node's MACs (the node has MACs and both product operand dtypes) and of its other
// ops, under `policy` on `d`.
Rate mac_rate(const einsum::Node& n, const hw::Device& d, const PrecisionPolicy& policy);
Rate other_ops_rate(const einsum::Node& n, const hw::Device& d, const PrecisionPolicy& policy);

// The rate of a node's MACs at its operands' origin precision (einsum::Node::mac_lhs_origin):
// the policy's target for the contraction class of the two origin dtypes (an integer origin
// paired with a floating one counts as bf16, which holds every int8 value exactly; an f4e2m1x2
// origin, fp4 values decoded from packed pairs, on either side: the fp4 tensor rate). nullopt
// when the node has no origin, or the device has no rate for it.
std::optional<Rate> origin_mac_rate(const einsum::Node& n, const hw::Device& d,
                                    const PrecisionPolicy& policy);

}  // namespace solar::sol
