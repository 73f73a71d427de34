// Precision policies and rate resolution (include/solar/sol/precision.h, docs/precision.md).
#include "solar/sol/precision.h"

#include <algorithm>
#include <array>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "solar/ir/dtype.h"
#include "solar/util/error.h"
#include "solar/util/text.h"

namespace solar::sol {
namespace {

using hw::ComputeUnit;
using hw::Precision;
using CC = ContractionClass;

constexpr Target on_tensor(Precision p) { return {ComputeUnit::Tensor, p}; }
constexpr Target on_vector(Precision p) { return {ComputeUnit::Vector, p}; }

// A policy's table from its choices for the classes whose target varies between policies; the
// others are the same in every policy.
struct Choices {
  Target fp64, fp32, fp32_conv, fp16, bf16, fp8;
};

constexpr std::array<Target, kContractionClassCount> table(const Choices& c) {
  std::array<Target, kContractionClassCount> t{};
  t[static_cast<size_t>(CC::Fp64)] = c.fp64;
  t[static_cast<size_t>(CC::Fp32)] = c.fp32;
  t[static_cast<size_t>(CC::Fp32Conv)] = c.fp32_conv;
  t[static_cast<size_t>(CC::Fp16)] = c.fp16;
  t[static_cast<size_t>(CC::Bf16)] = c.bf16;
  t[static_cast<size_t>(CC::Fp8)] = c.fp8;
  t[static_cast<size_t>(CC::Int8)] = on_tensor(Precision::Int8);
  // The device files have no integer vector rate: wide integer MACs count at the fp32 one.
  t[static_cast<size_t>(CC::WideInt)] = on_vector(Precision::Fp32);
  return t;
}

// Every floating-point contraction at one tensor precision (the what-if policies).
constexpr Choices all_floating(Precision p) {
  return {on_tensor(p), on_tensor(p), on_tensor(p), on_tensor(p), on_tensor(p), on_tensor(p)};
}

constexpr Choices kPytorchDefault = {on_tensor(Precision::Fp64), on_vector(Precision::Fp32),
                                     on_tensor(Precision::Tf32), on_tensor(Precision::Fp16),
                                     on_tensor(Precision::Bf16), on_tensor(Precision::Fp8)};

constexpr Choices with_fp32(Choices c, Target matmul, Target conv) {
  c.fp32 = matmul;
  c.fp32_conv = conv;
  return c;
}

// The width in bits of a floating-point dtype; 0 for integers and bool.
int float_width(ir::DType t) {
  switch (t) {
    case ir::DType::F64:
      return 64;
    case ir::DType::F32:
      return 32;
    case ir::DType::F16:
    case ir::DType::BF16:
      return 16;
    case ir::DType::F8E4M3:
    case ir::DType::F8E5M2:
      return 8;
    case ir::DType::I64:
    case ir::DType::I32:
    case ir::DType::I8:
    case ir::DType::U8:
    case ir::DType::Bool:
      return 0;
  }
  internal_error(__FILE__, __LINE__, "bad DType");
}

}  // namespace

std::string_view contraction_class_description(ContractionClass c) {
  switch (c) {
#define SOLAR_X(e, s)       \
  case ContractionClass::e: \
    return s;
    SOLAR_CONTRACTION_CLASSES(SOLAR_X)
#undef SOLAR_X
  }
  internal_error(__FILE__, __LINE__, "bad ContractionClass");
}

ContractionClass contraction_class(ir::DType lhs, ir::DType rhs, bool conv_like) {
  const int wl = float_width(lhs);
  const int wr = float_width(rhs);
  const int widest = std::max(wl, wr);
  if (widest == 0) {  // integer or bool operands only
    const bool narrow = ir::dtype_size(lhs) == 1 && ir::dtype_size(rhs) == 1;
    return narrow ? CC::Int8 : CC::WideInt;
  }
  if (widest == 64) return CC::Fp64;
  // f16 with bf16 promotes to f32 (torch.promote_types(float16, bfloat16) == float32).
  const bool mixed_half = wl == 16 && wr == 16 && lhs != rhs;
  if (widest == 32 || mixed_half) return conv_like ? CC::Fp32Conv : CC::Fp32;
  if (widest == 16) {
    const ir::DType half = wl == 16 ? lhs : rhs;
    return half == ir::DType::F16 ? CC::Fp16 : CC::Bf16;
  }
  return CC::Fp8;
}

std::string target_name(Target t) {
  return std::string(hw::precision_name(t.precision)) + " " +
         std::string(hw::compute_unit_name(t.unit));
}

const std::vector<PrecisionPolicy>& precision_policies() {
  static const std::vector<PrecisionPolicy> policies = {
      {kDefaultPrecisionPolicy,
       "PyTorch on CUDA with default settings: fp32 matmul on the vector unit (TF32 off), fp32 "
       "convolution on TF32 tensor cores (cuDNN's default), fp16/bf16/fp8/int8 on tensor cores, "
       "fp64 on fp64 tensor cores",
       table(kPytorchDefault)},
      {"strict",
       "no reduced-precision fp32: every fp32 contraction, convolutions included, on the fp32 "
       "vector unit; otherwise as pytorch-cuda-default",
       table(with_fp32(kPytorchDefault, on_vector(Precision::Fp32), on_vector(Precision::Fp32)))},
      {"tf32",
       "TF32 allowed everywhere (torch.backends.cuda.matmul.allow_tf32 = True): every fp32 "
       "contraction on TF32 tensor cores; otherwise as pytorch-cuda-default",
       table(with_fp32(kPytorchDefault, on_tensor(Precision::Tf32), on_tensor(Precision::Tf32)))},
      {"jax-default",
       "JAX/XLA with default precision (jax_default_matmul_precision unset): every fp32 dot "
       "and convolution on TF32 tensor cores on NVIDIA GPUs (on TPUs, with no TF32 rate, at "
       "the bf16 rate, as XLA's default single bf16 pass); otherwise as pytorch-cuda-default",
       table(with_fp32(kPytorchDefault, on_tensor(Precision::Tf32), on_tensor(Precision::Tf32)))},
      {"bf16",
       "what-if: every floating-point contraction at the bf16 tensor rate (rates only: the "
       "bytes stay those of the program's dtypes)",
       table(all_floating(Precision::Bf16))},
      {"fp8",
       "what-if: every floating-point contraction at the fp8 tensor rate (rates only: the "
       "bytes stay those of the program's dtypes)",
       table(all_floating(Precision::Fp8))},
      {"int8-weights",
       "weight-only int8: every floating weight stored in 1 byte and dequantised on chip, "
       "products at the program's precision (a bf16 model's on bf16 tensor cores); otherwise "
       "as pytorch-cuda-default",
       table(kPytorchDefault), ir::DType::I8},
      {"fp8-weights",
       "weight-only fp8 (e4m3): every floating weight stored in 1 byte and upcast on chip, "
       "products at the program's precision; otherwise as pytorch-cuda-default",
       table(kPytorchDefault), ir::DType::F8E4M3},
  };
  return policies;
}

einsum::Graph store_weights(einsum::Graph g, const PrecisionPolicy& policy) {
  if (!policy.weight_storage) return g;
  const ir::DType to = *policy.weight_storage;
  const int64_t size = ir::dtype_size(to);
  std::set<std::string, std::less<>> stored;
  for (einsum::TensorInfo& t : g.tensors) {
    if (t.role != ir::TensorRole::Weight || !ir::dtype_is_float(t.dtype) ||
        ir::dtype_size(t.dtype) <= size) {
      continue;
    }
    t.dtype = to;
    t.bytes = t.numel * size;
    stored.insert(t.name);
  }
  for (einsum::Node& n : g.nodes) {
    for (auto* list : {&n.reads, &n.writes}) {
      for (einsum::Access& a : *list) {
        if (stored.count(a.tensor) != 0) a.bytes = a.footprint * size;
      }
    }
  }
  return g;
}

const PrecisionPolicy& find_precision_policy(std::string_view name) {
  const std::vector<PrecisionPolicy>& all = precision_policies();
  const auto it = std::find_if(all.begin(), all.end(),
                               [&](const PrecisionPolicy& p) { return p.name == name; });
  if (it != all.end()) return *it;
  std::vector<std::string> names;
  for (const PrecisionPolicy& p : all) names.emplace_back(p.name);
  throw UserError("unknown precision policy '" + std::string(name) +
                  "' (valid: " + join(names, ", ") + ")");
}

Target vector_target(ir::DType t) {
  switch (t) {
    case ir::DType::F64:
      return on_vector(Precision::Fp64);
    case ir::DType::F16:
      return on_vector(Precision::Fp16);
    case ir::DType::BF16:
      return on_vector(Precision::Bf16);
    case ir::DType::F32:
    case ir::DType::F8E4M3:
    case ir::DType::F8E5M2:
    case ir::DType::I64:
    case ir::DType::I32:
    case ir::DType::I8:
    case ir::DType::U8:
    case ir::DType::Bool:
      return on_vector(Precision::Fp32);
  }
  internal_error(__FILE__, __LINE__, "bad DType");
}

const std::vector<Target>& fallback_chain(Target wanted) {
  // Where the work goes when the device has no figure for the wanted rate, in order. A figure is
  // missing for one of two reasons. The unit does not exist, and the chain names where the work
  // really runs: no fp64 tensor cores, DGEMM runs on the fp64 vector unit; no fp8 tensor cores,
  // fp8 operands are widened to fp16; no half-precision vector rate, PyTorch computes half
  // elementwise ops in fp32. Or the unit exists but its rate is not published (TPUs publish no
  // fp32 or vector rate, Jetson Thor no tf32 or int8): the chain goes to a rate at least as
  // fast, so the bound stays a lower bound.
  using P = Precision;
  static const std::vector<Target> half_to_fp32 = {on_vector(P::Fp32), on_tensor(P::Tf32),
                                                   on_tensor(P::Bf16), on_tensor(P::Fp16)};
  static const std::vector<std::pair<Target, std::vector<Target>>> chains = {
      {on_tensor(P::Fp64), {on_vector(P::Fp64)}},
      {on_vector(P::Fp32), {on_tensor(P::Tf32), on_tensor(P::Bf16), on_tensor(P::Fp16)}},
      {on_vector(P::Fp16), half_to_fp32},
      {on_vector(P::Bf16), half_to_fp32},
      {on_tensor(P::Tf32), {on_tensor(P::Bf16), on_tensor(P::Fp16)}},
      {on_tensor(P::Fp16), {on_tensor(P::Bf16)}},
      {on_tensor(P::Bf16), {on_tensor(P::Fp16)}},
      {on_tensor(P::Fp8), {on_tensor(P::Fp16), on_tensor(P::Bf16)}},
      {on_tensor(P::Int8), {on_tensor(P::Fp8), on_tensor(P::Fp16), on_tensor(P::Bf16)}},
  };
  static const std::vector<Target> none;
  for (const auto& [from, chain] : chains) {
    if (from == wanted) return chain;
  }
  return none;
}

Rate resolve_rate(const hw::Device& d, Target wanted, std::string_view what) {
  std::vector<std::string> missing;
  std::vector<Target> tried = {wanted};
  const std::vector<Target>& chain = fallback_chain(wanted);
  tried.insert(tried.end(), chain.begin(), chain.end());
  for (const Target& t : tried) {
    const std::optional<hw::Figure>& peak = d.peak(t.unit, t.precision);
    if (!peak) {
      missing.push_back(target_name(t));
      continue;
    }
    Rate r{wanted, t, peak->value, target_name(t)};
    if (!missing.empty()) {
      r.label = target_name(wanted) + "->" + target_name(t) + " (" + d.name + " has no " +
                join(missing, " or ") + " rate)";
    }
    return r;
  }
  throw UserError(d.name + " has no rate for " + std::string(what) + ": tried " +
                  join(missing, ", ") + "; add one with --set peak_flops_per_s." +
                  std::string(hw::compute_unit_name(wanted.unit)) + "." +
                  std::string(hw::precision_name(wanted.precision)) + "=VALUE");
}

Rate mac_rate(const einsum::Node& n, const hw::Device& d, const PrecisionPolicy& policy) {
  SOLAR_CHECK(n.mac_lhs_dtype && n.mac_rhs_dtype,
              "node '" + n.name + "' has MACs but no product operand dtypes");
  const ContractionClass c = contraction_class(*n.mac_lhs_dtype, *n.mac_rhs_dtype, n.conv_like);
  const Target wanted = policy.wanted(c);
  return resolve_rate(d, wanted,
                      target_name(wanted) + " (MACs of node '" + n.name + "', " +
                          std::string(contraction_class_description(c)) + ", policy " +
                          std::string(policy.name) + ")");
}

std::optional<Rate> origin_mac_rate(const einsum::Node& n, const hw::Device& d,
                                    const PrecisionPolicy& policy) {
  if (!n.mac_lhs_origin || !n.mac_rhs_origin) return std::nullopt;
  ir::DType lhs = *n.mac_lhs_origin;
  ir::DType rhs = *n.mac_rhs_origin;
  // An integer origin with a floating one: the integer values are exact in bf16.
  if (float_width(lhs) == 0 && float_width(rhs) != 0) lhs = ir::DType::BF16;
  if (float_width(rhs) == 0 && float_width(lhs) != 0) rhs = ir::DType::BF16;
  const ContractionClass c = contraction_class(lhs, rhs, n.conv_like);
  try {
    return resolve_rate(d, policy.wanted(c), "origin precision");
  } catch (const UserError&) {
    return std::nullopt;  // no rate for the origin precision: the node keeps its own
  }
}

Rate other_ops_rate(const einsum::Node& n, const hw::Device& d, const PrecisionPolicy& policy) {
  const Target wanted = vector_target(n.compute_dtype);
  return resolve_rate(d, wanted,
                      target_name(wanted) + " (other ops of node '" + n.name + "', compute dtype " +
                          std::string(ir::dtype_name(n.compute_dtype)) + ", policy " +
                          std::string(policy.name) + ")");
}

}  // namespace solar::sol
