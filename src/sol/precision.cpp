// Precision policies and rate resolution (include/solar/sol/precision.h, docs/precision.md).
#include "solar/sol/precision.h"

#include <algorithm>
#include <array>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
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
    case ir::DType::C128:  // the lift gives complex tensors as their f32 or f64 pairs
      return 64;
    case ir::DType::F32:
    case ir::DType::C64:
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
    case ir::DType::F4E2M1X2:
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
       "weight-only int8: every linear weight stored in 8 bits with one bf16 scale per channel "
       "and dequantised on chip, products at the program's precision (a bf16 model's on bf16 "
       "tensor cores); otherwise as pytorch-cuda-default",
       table(kPytorchDefault), WeightFormat{"int8", 8, ir::DType::I8, 16, 1, true}},
      {"fp8-weights",
       "weight-only fp8 (e4m3): every linear weight stored in 8 bits with one fp32 scale per "
       "128 x 128 block and upcast on chip, products at the program's precision; otherwise as "
       "pytorch-cuda-default",
       table(kPytorchDefault), WeightFormat{"fp8-e4m3", 8, ir::DType::F8E4M3, 32, 128 * 128}},
      {"nvfp4-weights",
       "NVFP4 weights: every linear weight stored in 4-bit e2m1 with one fp8 e4m3 scale per 16 "
       "elements (4.5 bits an element), products at the fp4 tensor rate where the device has "
       "one, else at the program's precision; otherwise as pytorch-cuda-default",
       table(kPytorchDefault),
       WeightFormat{"nvfp4", 4, std::nullopt, 8, 16, false, Precision::Fp4}},
      {"mxfp4-weights",
       "MXFP4 weights: every linear weight stored in 4-bit e2m1 with one 8-bit e8m0 scale per 32 "
       "elements (4.25 bits an element), products at the fp4 tensor rate where the device has "
       "one, else at the program's precision; otherwise as pytorch-cuda-default",
       table(kPytorchDefault),
       WeightFormat{"mxfp4", 4, std::nullopt, 8, 32, false, Precision::Fp4}},
      {"int4-weights",
       "weight-only int4 (AWQ/GPTQ-style): every linear weight stored in 4 bits with one bf16 "
       "scale per group of 128 elements (4.125 bits an element; group=N sets the group) and "
       "dequantised on chip, products at the program's precision; otherwise as "
       "pytorch-cuda-default",
       table(kPytorchDefault), WeightFormat{"int4", 4, std::nullopt, 16, 128}},
  };
  return policies;
}

einsum::ElementBits WeightFormat::bits(const std::vector<int64_t>& shape, int64_t numel) const {
  int64_t per = group;
  if (per_channel) {
    const int64_t rows = shape.size() >= 2 ? shape[0] : 1;
    const int64_t channels = rows == 0 ? 1 : std::max<int64_t>(1, std::min(rows, numel / rows));
    per = std::max<int64_t>(1, numel / channels);
  }
  return {int64_t{element_bits} * per + scale_bits, per};
}

std::vector<std::string> quantised_weights(const einsum::Graph& g, const PrecisionPolicy& policy) {
  std::vector<std::string> out;
  if (!policy.weight_format) return out;
  const WeightFormat& f = *policy.weight_format;
  std::set<std::string_view> linear;  // weights a node with MACs reads
  for (const einsum::Node& n : g.nodes) {
    if (n.counts.macs == 0) continue;
    for (const einsum::Access& a : n.reads) linear.insert(a.tensor);
  }
  for (const einsum::TensorInfo& t : g.tensors) {
    if (t.role != ir::TensorRole::Weight || !ir::dtype_is_float(t.dtype) || !t.format.empty() ||
        8 * ir::dtype_size(t.dtype) <= f.element_bits) {
      continue;
    }
    if (!policy.quantise_all && (t.shape.size() < 2 || linear.count(t.name) == 0)) continue;
    if (std::find(policy.keep.begin(), policy.keep.end(), t.name) != policy.keep.end()) continue;
    out.push_back(t.name);
  }
  return out;
}

einsum::Graph store_weights(einsum::Graph g, const PrecisionPolicy& policy) {
  if (!policy.weight_format) return g;
  const WeightFormat& f = *policy.weight_format;
  const std::vector<std::string> names = quantised_weights(g, policy);
  const std::set<std::string, std::less<>> stored(names.begin(), names.end());
  std::map<std::string, const einsum::TensorInfo*, std::less<>> info;
  for (einsum::TensorInfo& t : g.tensors) {
    if (stored.count(t.name) == 0) continue;
    if (f.dtype) t.dtype = *f.dtype;
    t.format = std::string(f.name);
    t.stored_bits = f.bits(t.shape, t.numel);
    t.bytes = t.bytes_of(t.numel);
    info.emplace(t.name, &t);
  }
  for (einsum::Node& n : g.nodes) {
    for (auto* list : {&n.reads, &n.writes}) {
      for (einsum::Access& a : *list) {
        const auto it = info.find(a.tensor);
        if (it == info.end()) continue;
        a.bytes = it->second->bytes_of(a.footprint);
        if (f.products && n.counts.macs > 0) n.mac_reads_stored_weight = true;
      }
    }
  }
  return g;
}

namespace {

// `text` split at every `sep` (empty pieces kept).
std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> out(1);
  for (const char c : text) {
    if (c == sep) {
      out.emplace_back();
    } else {
      out.back() += c;
    }
  }
  return out;
}

// A weight-only policy with the options of `spec` (after its name) applied: see
// find_precision_policy.
PrecisionPolicy with_options(PrecisionPolicy p, std::string_view spec) {
  const std::string name(p.name);
  if (!p.weight_format) {
    throw UserError("precision policy '" + name +
                    "' takes no options (only weight-only "
                    "policies do): '" +
                    std::string(spec) + "'");
  }
  for (const std::string& opt : split(std::string(spec), ':')) {
    const size_t eq = opt.find('=');
    const std::string key = opt.substr(0, eq);
    const std::string value = eq == std::string::npos ? "" : opt.substr(eq + 1);
    if (eq == std::string::npos || value.empty()) {
      throw UserError("policy option '" + opt + "' of '" + name + "' is not KEY=VALUE");
    }
    if (key == "group") {
      if (p.weight_format->name != "int4") {
        throw UserError("policy option 'group' applies to int4-weights only ('" + name +
                        "' has the fixed scale layout of its format)");
      }
      int64_t g = 0;
      try {
        size_t used = 0;
        g = std::stoll(value, &used);
        if (used != value.size()) g = 0;
      } catch (const std::exception&) {
        g = 0;
      }
      if (g <= 0) throw UserError("policy option group=" + value + ": not a positive integer");
      p.weight_format->group = g;
    } else if (key == "quantise") {
      if (value != "linear" && value != "all") {
        throw UserError("policy option quantise=" + value + ": expected linear or all");
      }
      p.quantise_all = value == "all";
    } else if (key == "keep") {
      p.keep = split(value, '+');
    } else {
      throw UserError("unknown policy option '" + key + "' (valid: group, quantise, keep)");
    }
  }
  return p;
}

}  // namespace

const PrecisionPolicy& find_precision_policy(std::string_view name) {
  const std::vector<PrecisionPolicy>& all = precision_policies();
  const std::string_view base = name.substr(0, name.find(':'));
  const auto it = std::find_if(all.begin(), all.end(),
                               [&](const PrecisionPolicy& p) { return p.name == base; });
  if (it != all.end() && base.size() == name.size()) return *it;
  if (it != all.end()) {
    // A policy with options: built once per spelling and kept, so the reference stays valid.
    struct Owned {
      std::string name, description;
      PrecisionPolicy policy;
    };
    static std::mutex mutex;
    static std::map<std::string, std::unique_ptr<Owned>, std::less<>> made;
    const std::lock_guard<std::mutex> lock(mutex);
    const auto found = made.find(name);
    if (found != made.end()) return found->second->policy;
    const std::string_view options = name.substr(base.size() + 1);
    auto owned = std::make_unique<Owned>(
        Owned{std::string(name), std::string(it->description) + "; options " + std::string(options),
              with_options(*it, options)});
    owned->policy.name = owned->name;
    owned->policy.description = owned->description;
    return made.emplace(std::string(name), std::move(owned)).first->second->policy;
  }
  std::vector<std::string> names;
  for (const PrecisionPolicy& p : all) names.emplace_back(p.name);
  throw UserError("unknown precision policy '" + std::string(name) +
                  "' (valid: " + join(names, ", ") + ")");
}

Target vector_target(ir::DType t) {
  switch (t) {
    case ir::DType::F64:
    case ir::DType::C128:
      return on_vector(Precision::Fp64);
    case ir::DType::F16:
      return on_vector(Precision::Fp16);
    case ir::DType::BF16:
      return on_vector(Precision::Bf16);
    case ir::DType::F32:
    case ir::DType::C64:
    case ir::DType::F8E4M3:
    case ir::DType::F8E5M2:
    case ir::DType::I64:
    case ir::DType::I32:
    case ir::DType::I8:
    case ir::DType::U8:
    case ir::DType::F4E2M1X2:
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
  Rate own = resolve_rate(d, wanted,
                          target_name(wanted) + " (MACs of node '" + n.name + "', " +
                              std::string(contraction_class_description(c)) + ", policy " +
                              std::string(policy.name) + ")");
  // A product with a weight stored in a format with a tensor-core rate (fp4): at that rate where
  // the device has one and it is faster, else at the program's precision.
  if (n.mac_reads_stored_weight && policy.weight_format && policy.weight_format->products) {
    const Target format = on_tensor(*policy.weight_format->products);
    const std::optional<hw::Figure>& peak = d.peak(format.unit, format.precision);
    if (peak && peak->value > own.flops_per_s) {
      return {format, format, peak->value, target_name(format)};
    }
  }
  return own;
}

std::optional<Rate> origin_mac_rate(const einsum::Node& n, const hw::Device& d,
                                    const PrecisionPolicy& policy) {
  if (!n.mac_lhs_origin || !n.mac_rhs_origin) return std::nullopt;
  ir::DType lhs = *n.mac_lhs_origin;
  ir::DType rhs = *n.mac_rhs_origin;
  // fp4 values (decoded from packed f4e2m1x2 pairs) on either side: the fp4 tensor rate, as an
  // NVFP4 or MXFP4 kernel runs the product (activations quantised on the fly), where the device
  // has one; else as bf16 values (an e2m1 value times an e4m3 block scale has at most 5
  // significant bits, exact in bf16: a device without fp4 runs the product there).
  if (lhs == ir::DType::F4E2M1X2 || rhs == ir::DType::F4E2M1X2) {
    const Target fp4 = on_tensor(Precision::Fp4);
    const std::optional<hw::Figure>& peak = d.peak(fp4.unit, fp4.precision);
    if (peak) return Rate{fp4, fp4, peak->value, target_name(fp4)};
    if (lhs == ir::DType::F4E2M1X2) lhs = ir::DType::BF16;
    if (rhs == ir::DType::F4E2M1X2) rhs = ir::DType::BF16;
  }
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
