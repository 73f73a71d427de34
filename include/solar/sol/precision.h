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

// A named policy: the wanted target of each contraction class.
struct PrecisionPolicy {
  std::string_view name;
  std::string_view description;
  std::array<Target, kContractionClassCount> contraction;  // by ContractionClass
  // Weight-only quantisation: every floating weight tensor (`weight` role: parameters and
  // buffers) wider than this dtype is stored in it and dequantised on chip, so its bytes are
  // this dtype's; the products keep the program's own precision (their operand dtypes, taken in
  // the lift). Scales and zero points are not counted (they only add bytes). Applied by
  // store_weights. Unset: the bytes are the program's.
  std::optional<ir::DType> weight_storage = std::nullopt;

  Target wanted(ContractionClass c) const { return contraction[static_cast<size_t>(c)]; }
};

// `g` with `policy`'s weight storage applied (PrecisionPolicy::weight_storage): each such weight
// tensor's dtype and bytes, and the bytes of every access to it. `g` itself when the policy has
// none. Every analysis applies it before anything else (report::make_report, compare_devices,
// make_curve).
einsum::Graph store_weights(einsum::Graph g, const PrecisionPolicy& policy);

// The registry, default policy first.
const std::vector<PrecisionPolicy>& precision_policies();

// A policy by name; an unknown name is a UserError listing the valid ones.
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
// paired with a floating one counts as bf16, which holds every int8 value exactly). nullopt
// when the node has no origin, or the device has no rate for it.
std::optional<Rate> origin_mac_rate(const einsum::Node& n, const hw::Device& d,
                                    const PrecisionPolicy& policy);

}  // namespace solar::sol
