// Precision policies: contraction classes, the policy tables, rate resolution with fallbacks and
// the errors when nothing applies (include/solar/sol/precision.h, docs/precision.md).
#include "solar/sol/precision.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "sol_test_util.h"
#include "solar/sol/analysis.h"
#include "solar/util/error.h"

namespace solar::sol {
namespace {

using hw::ComputeUnit;
using hw::Precision;
using ir::DType;
using testing::make_device;
using testing::make_node;

constexpr Target on_tensor(Precision p) { return {ComputeUnit::Tensor, p}; }
constexpr Target on_vector(Precision p) { return {ComputeUnit::Vector, p}; }

// H100-SXM's figures (data/hardware/H100-SXM.yaml).
hw::Device h100() {
  return make_device("H100-SXM",
                     {{ComputeUnit::Tensor, Precision::Fp64, 67e12},
                      {ComputeUnit::Tensor, Precision::Tf32, 494.5e12},
                      {ComputeUnit::Tensor, Precision::Fp16, 989.5e12},
                      {ComputeUnit::Tensor, Precision::Bf16, 989.5e12},
                      {ComputeUnit::Tensor, Precision::Fp8, 1979e12},
                      {ComputeUnit::Tensor, Precision::Int8, 1979e12},
                      {ComputeUnit::Vector, Precision::Fp64, 34e12},
                      {ComputeUnit::Vector, Precision::Fp32, 67e12}},
                     3.35e12);
}

// TPU-v5e's figures: bf16 and int8 tensor rates only.
hw::Device tpu() {
  return make_device("TPU-v5e",
                     {{ComputeUnit::Tensor, Precision::Bf16, 197e12},
                      {ComputeUnit::Tensor, Precision::Int8, 393e12}},
                     0.819e12);
}

TEST(ContractionClass, FollowsTypePromotion) {
  EXPECT_EQ(contraction_class(DType::F32, DType::F32, false), ContractionClass::Fp32);
  EXPECT_EQ(contraction_class(DType::F32, DType::F32, true), ContractionClass::Fp32Conv);
  EXPECT_EQ(contraction_class(DType::BF16, DType::BF16, false), ContractionClass::Bf16);
  EXPECT_EQ(contraction_class(DType::F16, DType::F16, true), ContractionClass::Fp16);
  // torch.promote_types(float16, bfloat16) == float32.
  EXPECT_EQ(contraction_class(DType::F16, DType::BF16, false), ContractionClass::Fp32);
  EXPECT_EQ(contraction_class(DType::BF16, DType::F16, true), ContractionClass::Fp32Conv);
  EXPECT_EQ(contraction_class(DType::F64, DType::F32, false), ContractionClass::Fp64);
  EXPECT_EQ(contraction_class(DType::BF16, DType::F32, false), ContractionClass::Fp32);
  EXPECT_EQ(contraction_class(DType::F8E4M3, DType::F8E5M2, false), ContractionClass::Fp8);
  EXPECT_EQ(contraction_class(DType::F8E4M3, DType::BF16, false), ContractionClass::Bf16);
  // A float operand wins over an integer one (the integer is promoted).
  EXPECT_EQ(contraction_class(DType::I32, DType::F16, false), ContractionClass::Fp16);
  EXPECT_EQ(contraction_class(DType::F8E4M3, DType::I64, false), ContractionClass::Fp8);
  EXPECT_EQ(contraction_class(DType::I8, DType::U8, false), ContractionClass::Int8);
  EXPECT_EQ(contraction_class(DType::Bool, DType::I8, false), ContractionClass::Int8);
  EXPECT_EQ(contraction_class(DType::I8, DType::I32, false), ContractionClass::WideInt);
}

TEST(PrecisionPolicy, RegistryNamesAreUniqueAndDefaultComesFirst) {
  std::set<std::string_view> names;
  for (const PrecisionPolicy& p : precision_policies()) {
    EXPECT_TRUE(names.insert(p.name).second) << p.name;
    EXPECT_FALSE(p.description.empty()) << p.name;
    EXPECT_EQ(&find_precision_policy(p.name), &p);
  }
  EXPECT_EQ(precision_policies().front().name, kDefaultPrecisionPolicy);
  for (const char* name : {"pytorch-cuda-default", "strict", "tf32", "jax-default", "bf16", "fp8",
                           "int8-weights", "fp8-weights"}) {
    EXPECT_EQ(names.count(name), 1u) << name;
  }
}

TEST(PrecisionPolicy, UnknownNameListsTheValidOnes) {
  try {
    find_precision_policy("fast");
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()),
              "unknown precision policy 'fast' (valid: pytorch-cuda-default, strict, tf32, "
              "jax-default, bf16, fp8, int8-weights, fp8-weights)");
  }
}

TEST(PrecisionPolicy, Tables) {
  using CC = ContractionClass;
  const PrecisionPolicy& def = find_precision_policy("pytorch-cuda-default");
  EXPECT_EQ(def.wanted(CC::Fp64), on_tensor(Precision::Fp64));
  EXPECT_EQ(def.wanted(CC::Fp32), on_vector(Precision::Fp32));      // no TF32 for matmul
  EXPECT_EQ(def.wanted(CC::Fp32Conv), on_tensor(Precision::Tf32));  // cuDNN's TF32 default
  EXPECT_EQ(def.wanted(CC::Fp16), on_tensor(Precision::Fp16));
  EXPECT_EQ(def.wanted(CC::Bf16), on_tensor(Precision::Bf16));
  EXPECT_EQ(def.wanted(CC::Fp8), on_tensor(Precision::Fp8));
  EXPECT_EQ(def.wanted(CC::Int8), on_tensor(Precision::Int8));
  EXPECT_EQ(def.wanted(CC::WideInt), on_vector(Precision::Fp32));

  const PrecisionPolicy& strict = find_precision_policy("strict");
  EXPECT_EQ(strict.wanted(CC::Fp32), on_vector(Precision::Fp32));
  EXPECT_EQ(strict.wanted(CC::Fp32Conv), on_vector(Precision::Fp32));
  EXPECT_EQ(strict.wanted(CC::Bf16), on_tensor(Precision::Bf16));

  const PrecisionPolicy& tf32 = find_precision_policy("tf32");
  EXPECT_EQ(tf32.wanted(CC::Fp32), on_tensor(Precision::Tf32));
  EXPECT_EQ(tf32.wanted(CC::Fp32Conv), on_tensor(Precision::Tf32));
  EXPECT_EQ(tf32.wanted(CC::Fp64), on_tensor(Precision::Fp64));

  // XLA's default precision: fp32 dots and convolutions on TF32 tensor cores.
  const PrecisionPolicy& jax = find_precision_policy("jax-default");
  EXPECT_EQ(jax.wanted(CC::Fp32), on_tensor(Precision::Tf32));
  EXPECT_EQ(jax.wanted(CC::Fp32Conv), on_tensor(Precision::Tf32));
  EXPECT_EQ(jax.wanted(CC::Bf16), on_tensor(Precision::Bf16));

  for (const CC c : {CC::Fp64, CC::Fp32, CC::Fp32Conv, CC::Fp16, CC::Bf16, CC::Fp8}) {
    EXPECT_EQ(find_precision_policy("bf16").wanted(c), on_tensor(Precision::Bf16));
    EXPECT_EQ(find_precision_policy("fp8").wanted(c), on_tensor(Precision::Fp8));
  }
  EXPECT_EQ(find_precision_policy("bf16").wanted(CC::Int8), on_tensor(Precision::Int8));
}

// Weight-only quantisation (PrecisionPolicy::weight_storage, store_weights): a bf16 decode-style
// matrix-vector product, x bf16[1, 4096] times the weight W bf16[4096, 4096], plus a bias
// b bf16[4096] into y bf16[1, 4096].
//   default:      x 8,192 + W 33,554,432 + b 8,192 + y 8,192 = 33,579,008 B
//   int8-weights: x 8,192 + W 16,777,216 + b 4,096 + y 8,192 = 16,797,696 B (W and b 1 B each)
// The product stays a bf16 one: 4096 x 4096 = 16,777,216 MACs at H100's 989.5e12 bf16 rate.
TEST(PrecisionPolicy, WeightOnlyStorageHalvesABf16ModelsWeightBytes) {
  const einsum::Graph g = testing::lift_text(R"(
input x : bf16[1, 4096]
weight w : bf16[4096, 4096]
weight b : bf16[4096]
output y : bf16[1, 4096]
kernel gemv {
  for i in 0..1, n in 0..4096, k in 0..4096:
    y[i, n] += x[i, k] * w[k, n]
}
kernel bias {
  for i in 0..1, n in 0..4096:
    y[i, n] = y[i, n] + b[n]
}
)");
  const hw::Device h100 = hw::load_builtin_device("H100-SXM");
  const Analysis plain = analyze(g, h100, find_precision_policy("pytorch-cuda-default"));
  EXPECT_EQ(plain.result(Fidelity::Fused).bytes, 33'579'008);
  for (const char* name : {"int8-weights", "fp8-weights"}) {
    SCOPED_TRACE(name);
    const PrecisionPolicy& p = find_precision_policy(name);
    const einsum::Graph stored = store_weights(g, p);
    EXPECT_EQ(stored.tensors.size(), g.tensors.size());
    const Analysis a = analyze(stored, h100, p);
    EXPECT_EQ(a.result(Fidelity::Fused).bytes, 16'797'696);
    EXPECT_EQ(a.nodes[0].mac_rate->used, on_tensor(Precision::Bf16));
    EXPECT_DOUBLE_EQ(a.nodes[0].mac_s, 2.0 * 16'777'216 / 989.5e12);
    // Idempotent: a stored graph is stored already.
    EXPECT_EQ(analyze(store_weights(stored, p), h100, p).result(Fidelity::Fused).bytes, 16'797'696);
  }
  // Policies without weight storage leave the graph as it is.
  const einsum::Graph same = store_weights(g, find_precision_policy("fp8"));
  for (const einsum::TensorInfo& t : same.tensors) EXPECT_EQ(t.dtype, DType::BF16) << t.name;
}

TEST(PrecisionPolicy, VectorTargetFollowsTheComputeDtype) {
  EXPECT_EQ(vector_target(DType::F32), on_vector(Precision::Fp32));
  EXPECT_EQ(vector_target(DType::F64), on_vector(Precision::Fp64));
  EXPECT_EQ(vector_target(DType::F16), on_vector(Precision::Fp16));
  EXPECT_EQ(vector_target(DType::BF16), on_vector(Precision::Bf16));
  EXPECT_EQ(vector_target(DType::F8E5M2), on_vector(Precision::Fp32));
  EXPECT_EQ(vector_target(DType::I32), on_vector(Precision::Fp32));
}

TEST(ResolveRate, PresentRateIsUsedAsIs) {
  const Rate r = resolve_rate(h100(), on_tensor(Precision::Tf32), "x");
  EXPECT_EQ(r.used, on_tensor(Precision::Tf32));
  EXPECT_FALSE(r.fallback());
  EXPECT_EQ(r.flops_per_s, 494.5e12);
  EXPECT_EQ(r.label, "tf32 tensor");
}

TEST(ResolveRate, FallbackIsRecordedWithTheMissingRates) {
  // TPU-v5e: no fp32 vector, no tf32 tensor: fp32 falls back to bf16 tensor (197e12).
  const Rate r = resolve_rate(tpu(), on_vector(Precision::Fp32), "x");
  EXPECT_TRUE(r.fallback());
  EXPECT_EQ(r.wanted, on_vector(Precision::Fp32));
  EXPECT_EQ(r.used, on_tensor(Precision::Bf16));
  EXPECT_EQ(r.flops_per_s, 197e12);
  EXPECT_EQ(r.label, "fp32 vector->bf16 tensor (TPU-v5e has no fp32 vector or tf32 tensor rate)");

  // H100 has no bf16 vector rate: bf16 elementwise work runs at the fp32 vector rate.
  const Rate h = resolve_rate(h100(), on_vector(Precision::Bf16), "x");
  EXPECT_EQ(h.used, on_vector(Precision::Fp32));
  EXPECT_EQ(h.flops_per_s, 67e12);
  EXPECT_EQ(h.label, "bf16 vector->fp32 vector (H100-SXM has no bf16 vector rate)");

  // fp64 tensor falls back to fp64 vector (A6000-like device: vector fp64 1.21e12 only).
  const hw::Device a6000 =
      make_device("A6000", {{ComputeUnit::Vector, Precision::Fp64, 1.21e12}}, 768e9);
  const Rate f = resolve_rate(a6000, on_tensor(Precision::Fp64), "x");
  EXPECT_EQ(f.used, on_vector(Precision::Fp64));
  EXPECT_EQ(f.flops_per_s, 1.21e12);
}

TEST(ResolveRate, ADeviceListingTheHalfVectorRateUsesIt) {
  hw::Device d = h100();
  hw::apply_override(d, "peak_flops_per_s.vector.bf16=134e12");
  const Rate r = resolve_rate(d, on_vector(Precision::Bf16), "x");
  EXPECT_FALSE(r.fallback());
  EXPECT_EQ(r.flops_per_s, 134e12);
}

TEST(ResolveRate, ChainsAreTheDocumentedOnes) {
  // docs/precision.md, "Fallbacks".
  using P = Precision;
  EXPECT_EQ(fallback_chain(on_tensor(P::Fp64)), (std::vector<Target>{on_vector(P::Fp64)}));
  EXPECT_EQ(fallback_chain(on_vector(P::Fp64)), std::vector<Target>{});
  EXPECT_EQ(fallback_chain(on_vector(P::Fp32)),
            (std::vector<Target>{on_tensor(P::Tf32), on_tensor(P::Bf16), on_tensor(P::Fp16)}));
  EXPECT_EQ(fallback_chain(on_vector(P::Bf16)),
            (std::vector<Target>{on_vector(P::Fp32), on_tensor(P::Tf32), on_tensor(P::Bf16),
                                 on_tensor(P::Fp16)}));
  EXPECT_EQ(fallback_chain(on_vector(P::Fp16)), fallback_chain(on_vector(P::Bf16)));
  EXPECT_EQ(fallback_chain(on_tensor(P::Tf32)),
            (std::vector<Target>{on_tensor(P::Bf16), on_tensor(P::Fp16)}));
  EXPECT_EQ(fallback_chain(on_tensor(P::Fp16)), (std::vector<Target>{on_tensor(P::Bf16)}));
  EXPECT_EQ(fallback_chain(on_tensor(P::Bf16)), (std::vector<Target>{on_tensor(P::Fp16)}));
  EXPECT_EQ(fallback_chain(on_tensor(P::Fp8)),
            (std::vector<Target>{on_tensor(P::Fp16), on_tensor(P::Bf16)}));
  EXPECT_EQ(fallback_chain(on_tensor(P::Int8)),
            (std::vector<Target>{on_tensor(P::Fp8), on_tensor(P::Fp16), on_tensor(P::Bf16)}));
}

TEST(ResolveRate, EveryNonFp64TargetResolvesOnEveryBuiltinDevice) {
  // Whatever the policy, a program without f64 can be analysed on every built-in device.
  for (const std::string& name : hw::builtin_device_names()) {
    const hw::Device d = hw::load_builtin_device(name);
    for (const PrecisionPolicy& p : precision_policies()) {
      for (size_t c = 0; c < kContractionClassCount; ++c) {
        if (static_cast<ContractionClass>(c) == ContractionClass::Fp64) continue;
        const Target t = p.contraction[c];
        EXPECT_NO_THROW(resolve_rate(d, t, "x")) << name << " " << p.name << " " << c;
      }
    }
    for (const DType t : {DType::F32, DType::F16, DType::BF16, DType::F8E4M3, DType::I64}) {
      EXPECT_NO_THROW(resolve_rate(d, vector_target(t), "x")) << name << " " << ir::dtype_name(t);
    }
  }
}

TEST(ResolveRate, NoRateInTheChainIsAUserErrorNamingDeviceAndPrecision) {
  try {
    resolve_rate(tpu(), on_tensor(Precision::Fp64), "fp64 tensor (MACs of node 'g')");
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()),
              "TPU-v5e has no rate for fp64 tensor (MACs of node 'g'): tried fp64 tensor, fp64 "
              "vector; add one with --set peak_flops_per_s.tensor.fp64=VALUE");
  }
}

TEST(NodeRates, DefaultPolicyOnH100) {
  const PrecisionPolicy& def = find_precision_policy(kDefaultPrecisionPolicy);
  const hw::Device d = h100();
  // fp32 matmul on the vector unit, fp32 convolution on TF32, bf16 on bf16 tensor cores.
  EXPECT_EQ(mac_rate(make_node("mm", 8, 0, 0, DType::F32), d, def).flops_per_s, 67e12);
  EXPECT_EQ(mac_rate(make_node("conv", 8, 0, 0, DType::F32, true), d, def).flops_per_s, 494.5e12);
  EXPECT_EQ(mac_rate(make_node("mm", 8, 0, 0, DType::BF16), d, def).flops_per_s, 989.5e12);
  EXPECT_EQ(mac_rate(make_node("mm", 8, 0, 0, DType::F64), d, def).flops_per_s, 67e12);
  EXPECT_EQ(mac_rate(make_node("mm", 8, 0, 0, DType::I8), d, def).flops_per_s, 1979e12);
  EXPECT_EQ(other_ops_rate(make_node("ew", 0, 8, 0, DType::F32), d, def).flops_per_s, 67e12);
  EXPECT_EQ(other_ops_rate(make_node("ew", 0, 8, 0, DType::F64), d, def).flops_per_s, 34e12);
  // Strict: the convolution on the vector unit too.
  EXPECT_EQ(
      mac_rate(make_node("conv", 8, 0, 0, DType::F32, true), d, find_precision_policy("strict"))
          .flops_per_s,
      67e12);
}

TEST(NodeRates, ErrorNamesNodeAndPolicy) {
  try {
    mac_rate(make_node("proj", 8, 0, 0, DType::F64), tpu(), find_precision_policy("strict"));
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()),
              "TPU-v5e has no rate for fp64 tensor (MACs of node 'proj', f64 operands, policy "
              "strict): tried fp64 tensor, fp64 vector; add one with --set "
              "peak_flops_per_s.tensor.fp64=VALUE");
  }
}

}  // namespace
}  // namespace solar::sol
