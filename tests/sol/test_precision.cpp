// Precision policies: contraction classes, the policy tables, rate resolution with fallbacks and
// the errors when nothing applies (include/solar/sol/precision.h, docs/precision.md).
#include "solar/sol/precision.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <string>
#include <utility>
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
  for (const char* name :
       {"pytorch-cuda-default", "strict", "tf32", "jax-default", "bf16", "fp8", "int8-weights",
        "fp8-weights", "nvfp4-weights", "mxfp4-weights", "int4-weights"}) {
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
              "jax-default, bf16, fp8, int8-weights, fp8-weights, nvfp4-weights, "
              "mxfp4-weights, int4-weights)");
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

// A bf16 decode-style matrix-vector product, x bf16[1, 4096] times the linear weight
// W bf16[4096, 4096], plus a bias b bf16[4096] into y bf16[1, 4096].
constexpr const char* kLinear = R"(
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
)";

// Weight-only quantisation (PrecisionPolicy::weight_format, store_weights) of kLinear: the
// linear weight W is stored (b, of rank 1, is not: the default rule quantises linear weights).
//   default:      x 8,192 + W 33,554,432 + b 8,192 + y 8,192 = 33,579,008 B
//   int8-weights: W 4096 x 4096 x 1 B = 16,777,216 B plus one bf16 scale per channel:
//                 min(4096 rows, 16,777,216 / 4096) = 4096 channels x 2 B = 8,192 B,
//                 W = 16,785,408 B; x + b + y = 24,576 B: 16,809,984 B
//   fp8-weights:  W 16,777,216 B plus one fp32 scale per 128 x 128 block:
//                 16,777,216 / 16,384 = 1,024 blocks x 4 B = 4,096 B, W = 16,781,312 B;
//                 16,781,312 + 24,576 = 16,805,888 B
// The product stays a bf16 one: 4096 x 4096 = 16,777,216 MACs at H100's 989.5e12 bf16 rate.
TEST(PrecisionPolicy, WeightOnlyStorageHalvesABf16ModelsWeightBytesScalesIncluded) {
  const einsum::Graph g = testing::lift_text(kLinear);
  const hw::Device h100 = hw::load_builtin_device("H100-SXM");
  const Analysis plain = analyze(g, h100, find_precision_policy("pytorch-cuda-default"));
  EXPECT_EQ(plain.result(Fidelity::Fused).bytes, 33'579'008);
  for (const auto& [name, w_bytes] :
       {std::pair<const char*, int64_t>{"int8-weights", 16'785'408}, {"fp8-weights", 16'781'312}}) {
    SCOPED_TRACE(name);
    const PrecisionPolicy& p = find_precision_policy(name);
    const einsum::Graph stored = store_weights(g, p);
    EXPECT_EQ(stored.tensors.size(), g.tensors.size());
    EXPECT_EQ(stored.find_tensor("w")->bytes, w_bytes);
    EXPECT_EQ(stored.find_tensor("b")->dtype, DType::BF16);  // rank 1: not a linear weight
    const Analysis a = analyze(stored, h100, p);
    EXPECT_EQ(a.result(Fidelity::Fused).bytes, w_bytes + 24'576);
    EXPECT_EQ(a.nodes[0].mac_rate->used, on_tensor(Precision::Bf16));
    EXPECT_DOUBLE_EQ(a.nodes[0].mac_s, 2.0 * 16'777'216 / 989.5e12);
    // Idempotent: a stored graph is stored already.
    EXPECT_EQ(analyze(store_weights(stored, p), h100, p).result(Fidelity::Fused).bytes,
              w_bytes + 24'576);
  }
  // Policies without weight storage leave the graph as it is.
  const einsum::Graph same = store_weights(g, find_precision_policy("fp8"));
  for (const einsum::TensorInfo& t : same.tensors) EXPECT_EQ(t.dtype, DType::BF16) << t.name;
}

// The 4-bit formats of kLinear's W (4096 x 4096 = 16,777,216 elements), values 4096 x 4096 / 2 =
// 8,388,608 B plus the scales:
//   nvfp4 (one fp8 e4m3 scale per 16):  16,777,216 / 16 x 1 B = 1,048,576: 9,437,184 B
//   mxfp4 (one 8-bit e8m0 scale per 32): 16,777,216 / 32 x 1 B = 524,288: 8,912,896 B
//   int4-weights (one bf16 per 128):    16,777,216 / 128 x 2 B = 262,144: 8,650,752 B
//   int4-weights:group=64:              16,777,216 / 64 x 2 B = 524,288:  8,912,896 B
// The tensor keeps its dtype (bf16): its size is the format's. Every fidelity moves W's bytes:
// fused and cache-aware (50 MB of L2 holds everything: each tensor once) x 8,192 + W + b 8,192
// + y 8,192; unfused, op by op, gemv x 8,192 + W + y 8,192 and bias y 8,192 + b 8,192 + y
// 8,192: W + 40,960.
TEST(PrecisionPolicy, FourBitWeightFormatsCountTheirScalesByHand) {
  const einsum::Graph g = testing::lift_text(kLinear);
  const hw::Device h100 = hw::load_builtin_device("H100-SXM");
  for (const auto& [name, w_bytes] : {std::pair<const char*, int64_t>{"nvfp4-weights", 9'437'184},
                                      {"mxfp4-weights", 8'912'896},
                                      {"int4-weights", 8'650'752},
                                      {"int4-weights:group=64", 8'912'896}}) {
    SCOPED_TRACE(name);
    const PrecisionPolicy& p = find_precision_policy(name);
    EXPECT_EQ(p.name, name);
    const einsum::Graph stored = store_weights(g, p);
    const einsum::TensorInfo& w = *stored.find_tensor("w");
    EXPECT_EQ(w.bytes, w_bytes);
    EXPECT_EQ(w.dtype, DType::BF16);
    EXPECT_EQ(stored.nodes[0].reads[1].tensor, "w");
    EXPECT_EQ(stored.nodes[0].reads[1].bytes, w_bytes);
    const Analysis a = analyze(stored, h100, p);
    EXPECT_EQ(a.result(Fidelity::Fused).bytes, w_bytes + 24'576);
    EXPECT_EQ(a.result(Fidelity::Cache).bytes, w_bytes + 24'576);
    EXPECT_EQ(a.result(Fidelity::Unfused).bytes, w_bytes + 40'960);
  }
  EXPECT_EQ(store_weights(g, find_precision_policy("nvfp4-weights")).find_tensor("w")->format,
            "nvfp4");
}

// Sizes in bits round down once per count, never a byte per element up: an nvfp4 weight of
// 3 x 10 = 30 elements takes 30 x 4.5 = 135 bits = 16.875 B, counted 16 (30 x 72 / 128 = 16.875,
// floor). One element takes 4.5 bits: 0 B (floor of 0.5625). A whole-byte dtype is exact:
// 3 bf16 elements 6 B.
TEST(PrecisionPolicy, BitSizesRoundDownOncePerCount) {
  const einsum::ElementBits nvfp4{72, 16};
  EXPECT_EQ(nvfp4.bytes(30), 16);
  EXPECT_EQ(nvfp4.bytes(1), 0);
  EXPECT_EQ(nvfp4.bytes(16), 9);  // 16 x 4 bits = 8 B + one 1-byte scale
  EXPECT_EQ((einsum::ElementBits{16, 1}.bytes(3)), 6);
  // No overflow: 2^60 elements of 72 bits per 16 = 2^60 x 9 / 16 = 9 x 2^56 B.
  EXPECT_EQ(nvfp4.bytes(int64_t{1} << 60), 9 * (int64_t{1} << 56));
}

// Products with a weight stored in an fp4 format run at the fp4 tensor rate where the device has
// one (B200: 9000e12), else at the program's precision (H100 has none: bf16, 989.5e12); int4
// has no tensor rate of its own: bf16 on both. kLinear's 16,777,216 MACs.
TEST(PrecisionPolicy, Fp4WeightProductsRunAtTheFp4RateWhereTheDeviceHasOne) {
  const einsum::Graph g = testing::lift_text(kLinear);
  const hw::Device b200 = hw::load_builtin_device("B200");
  const hw::Device h100 = hw::load_builtin_device("H100-SXM");
  for (const char* name : {"nvfp4-weights", "mxfp4-weights"}) {
    SCOPED_TRACE(name);
    const PrecisionPolicy& p = find_precision_policy(name);
    const einsum::Graph stored = store_weights(g, p);
    EXPECT_TRUE(stored.nodes[0].mac_reads_stored_weight);
    const Analysis on_b200 = analyze(stored, b200, p);
    EXPECT_EQ(on_b200.nodes[0].mac_rate->used, on_tensor(Precision::Fp4));
    EXPECT_DOUBLE_EQ(on_b200.nodes[0].mac_s, 2.0 * 16'777'216 / 9000e12);
    const Analysis on_h100 = analyze(stored, h100, p);
    EXPECT_EQ(on_h100.nodes[0].mac_rate->used, on_tensor(Precision::Bf16));
    EXPECT_FALSE(on_h100.nodes[0].mac_rate->fallback());
  }
  const PrecisionPolicy& int4 = find_precision_policy("int4-weights");
  const einsum::Graph stored = store_weights(g, int4);
  EXPECT_FALSE(stored.nodes[0].mac_reads_stored_weight);
  EXPECT_EQ(analyze(stored, b200, int4).nodes[0].mac_rate->used, on_tensor(Precision::Bf16));
}

// Which weights a policy quantises: linear weights by default (W, not the rank-1 b);
// quantise=all takes b too (4096 nvfp4 elements: 4096 x 72 / 128 = 2,304 B); keep=w leaves W.
TEST(PrecisionPolicy, QuantisedWeightsFollowTheRuleAndItsOverrides) {
  const einsum::Graph g = testing::lift_text(kLinear);
  EXPECT_EQ(quantised_weights(g, find_precision_policy("nvfp4-weights")),
            std::vector<std::string>{"w"});
  EXPECT_EQ(quantised_weights(g, find_precision_policy("nvfp4-weights:quantise=all")),
            (std::vector<std::string>{"w", "b"}));
  EXPECT_TRUE(quantised_weights(g, find_precision_policy("nvfp4-weights:keep=w")).empty());
  EXPECT_TRUE(quantised_weights(g, find_precision_policy("bf16")).empty());
  const einsum::Graph all = store_weights(g, find_precision_policy("nvfp4-weights:quantise=all"));
  EXPECT_EQ(all.find_tensor("b")->bytes, 2'304);
  // The same spelling gives the same policy object.
  EXPECT_EQ(&find_precision_policy("int4-weights:group=32"),
            &find_precision_policy("int4-weights:group=32"));
}

TEST(PrecisionPolicy, BadPolicyOptionsAreOneLineErrors) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"nvfp4-weights:group=8",
       "policy option 'group' applies to int4-weights only ('nvfp4-weights' has the fixed scale "
       "layout of its format)"},
      {"int4-weights:group=0", "policy option group=0: not a positive integer"},
      {"int4-weights:group=12x", "policy option group=12x: not a positive integer"},
      {"int4-weights:size=2", "unknown policy option 'size' (valid: group, quantise, keep)"},
      {"int4-weights:group", "policy option 'group' of 'int4-weights' is not KEY=VALUE"},
      {"int4-weights:quantise=some", "policy option quantise=some: expected linear or all"},
      {"bf16:group=2",
       "precision policy 'bf16' takes no options (only weight-only policies do): 'group=2'"},
  };
  for (const auto& [spec, message] : cases) {
    SCOPED_TRACE(spec);
    try {
      find_precision_policy(spec);
      FAIL() << "no error";
    } catch (const UserError& e) {
      EXPECT_EQ(std::string(e.what()), message);
    }
  }
}

// A program that carries packed fp4 weights (f4e2m1x2, torch.float4_e2m1fn_x2): w holds 64 x 32
// pairs, 64 x 64 fp4 values, unpacked by a mask and a shift into codes, decoded by a 16-entry
// table, then multiplied. Bytes by bits: w is 64 x 32 x 1 B = 2,048 B (one byte a pair); fused,
// x 2 x 64 x 4 = 512 + w 2,048 + table 16 x 4 = 64 + y 512 = 3,136 B (the copy to u8 is the
// same bytes: folded). MACs by the unpacked K: 2 x 64 x 64 = 8,192. The product's weight operand
// has origin fp4 (a <= 16-entry table indexed by codes of fp4 data): on B200 the fused fidelity
// prices it at fp4 (9000e12: 2 x 8,192 / 9000e12); H100 has no fp4 rate: none.
TEST(PrecisionPolicy, PackedFp4GemmCountsBytesByBitsAndMacsByTheUnpackedK) {
  const einsum::Graph g = testing::lift_text(R"(
input x : f32[2, 64]
weight w : f4e2m1x2[64, 32]
weight table : f32[16]
tensor b : u8[64, 32]
tensor c : u8[64, 32, 2]
tensor cr : u8[64, 64]
tensor v : f32[64, 64]
output y : f32[2, 64]
b = w
kernel lo {
  for n in 0..64, j in 0..32:
    c[n, j, 0] = bitand(b[n, j], 15)
}
kernel hi {
  for n in 0..64, j in 0..32:
    c[n, j, 1] = shr(b[n, j], 4)
}
cr = reshape(c)
v = take(table, cr, dim=0)
kernel gemm {
  for i in 0..2, n in 0..64, k in 0..64:
    y[i, n] += x[i, k] * v[n, k]
}
)");
  EXPECT_EQ(g.find_tensor("w")->bytes, 2'048);
  const einsum::Node& gemm = g.nodes.back();
  EXPECT_EQ(gemm.name, "gemm");
  EXPECT_EQ(gemm.counts.macs, 8'192);
  EXPECT_EQ(gemm.mac_rhs_origin, DType::F4E2M1X2);
  const PrecisionPolicy& p = find_precision_policy(kDefaultPrecisionPolicy);
  const Analysis b200 = analyze(g, hw::load_builtin_device("B200"), p);
  EXPECT_EQ(b200.result(Fidelity::Fused).bytes, 3'136);
  ASSERT_TRUE(b200.nodes.back().origin_mac_rate.has_value());
  EXPECT_EQ(b200.nodes.back().origin_mac_rate->used, on_tensor(Precision::Fp4));
  EXPECT_DOUBLE_EQ(b200.nodes.back().origin_mac_rate->flops_per_s, 9000e12);
  const Analysis h100 = analyze(g, hw::load_builtin_device("H100-SXM"), p);
  EXPECT_FALSE(h100.nodes.back().origin_mac_rate.has_value());
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
