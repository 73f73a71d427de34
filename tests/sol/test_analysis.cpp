// The SOL cost formulas and fidelities (include/solar/sol/analysis.h, docs/fidelities.md), each
// checked against numbers worked out by hand, plus the laws: fused <= unfused, a faster device
// is never slower. H100-SXM figures used throughout: fp32 vector 67e12 FLOP/s, tf32 tensor
// 494.5e12, bf16 tensor 989.5e12, DRAM 3.35e12 B/s.
#include "solar/sol/analysis.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "sol_test_util.h"
#include "solar/util/error.h"

namespace solar::sol {
namespace {

using hw::ComputeUnit;
using hw::Precision;
using testing::lift_file;
using testing::lift_gemm;
using testing::lift_gemv;
using testing::lift_text;
using testing::make_device;
using testing::make_node;

const PrecisionPolicy& default_policy() { return find_precision_policy(kDefaultPrecisionPolicy); }

// H100-SXM's rates and bandwidth without its min_kernel_s: the tests of the time formulas count
// in nanoseconds, below the kernel floor (0.4 us), which has tests of its own
// (tests/sol/test_cache_state.cpp).
hw::Device h100() {
  hw::Device d = hw::load_builtin_device("H100-SXM");
  d.min_kernel_s.reset();
  return d;
}

einsum::Access access(const std::string& tensor, int64_t bytes) {
  return {tensor, tensor + "[...]", bytes / 4, true, bytes};
}

// ---------------------------------------------------------------------------------------------
// Fidelity registry

TEST(Fidelity, RegistryAndParsing) {
  EXPECT_EQ(implemented_fidelities(),
            (std::vector<Fidelity>{Fidelity::Unfused, Fidelity::Fused, Fidelity::Cache}));
  EXPECT_EQ(parse_fidelities("all"), implemented_fidelities());
  EXPECT_EQ(parse_fidelities("fused"), std::vector<Fidelity>{Fidelity::Fused});
  EXPECT_EQ(parse_fidelities("unfused"), std::vector<Fidelity>{Fidelity::Unfused});
  EXPECT_EQ(parse_fidelities("cache"), std::vector<Fidelity>{Fidelity::Cache});
  EXPECT_TRUE(fidelity_implemented(Fidelity::Cache));
  EXPECT_EQ(fidelity_key(Fidelity::Cache), "cache_aware");
  try {
    parse_fidelities("roofline");
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()),
              "unknown fidelity 'roofline' (valid: unfused, fused, cache, all)");
  }
}

TEST(NodeCost, Fp32GemmOnH100IsComputeBound) {
  // C[1024,1024] += A[1024,1024] * B[1024,1024], f32: 1024^3 = 1073741824 MACs.
  einsum::Node n = make_node("gemm", 1073741824, 0, 0, ir::DType::F32);
  n.reads = {access("A", 4194304), access("B", 4194304)};  // 1024*1024*4 bytes each
  n.writes = {access("C", 4194304)};
  const NodeCost c = node_cost(n, h100(), default_policy());
  ASSERT_TRUE(c.mac_rate.has_value());
  EXPECT_EQ(c.mac_rate->label, "fp32 vector");
  EXPECT_FALSE(c.other_rate.has_value());
  // compute = 2 * 1073741824 / 67e12 = 32.05 us; memory = 3 * 4194304 / 3.35e12 = 3.756 us.
  EXPECT_DOUBLE_EQ(c.compute_s, 2.0 * 1073741824 / 67e12);
  EXPECT_EQ(c.bytes, 12582912);
  EXPECT_DOUBLE_EQ(c.memory_s, 12582912 / 3.35e12);
  EXPECT_DOUBLE_EQ(c.time_s, c.compute_s);
  EXPECT_EQ(c.bottleneck, Bottleneck::Compute);
  EXPECT_EQ(c.main_rate(), &*c.mac_rate);
}

TEST(NodeCost, MacsAndOtherOpsOverlap) {
  // 1000 MACs at bf16 tensor (989.5e12) and 3000 other ops (bf16 vector -> fp32 vector, 67e12):
  // mac_s = 2000 / 989.5e12 = 2.02 ps, other_s = 3000 / 67e12 = 44.8 ps; compute = the max.
  einsum::Node n = make_node("mixed", 1000, 2000, 1000, ir::DType::BF16);
  n.writes = {access("y", 8)};
  const NodeCost c = node_cost(n, h100(), default_policy());
  EXPECT_DOUBLE_EQ(c.mac_s, 2000 / 989.5e12);
  EXPECT_DOUBLE_EQ(c.other_s, 3000 / 67e12);
  EXPECT_DOUBLE_EQ(c.compute_s, 3000 / 67e12);
  EXPECT_EQ(c.main_rate(), &*c.mac_rate);  // MACs name the node's precision
  EXPECT_TRUE(c.other_rate->fallback());
  // memory = 8 / 3.35e12 = 2.4 ps < compute.
  EXPECT_EQ(c.bottleneck, Bottleneck::Compute);
}

TEST(NodeCost, DataMovementHasNoRate) {
  einsum::Node n;
  n.name = "copy:y";
  n.kind = einsum::NodeKind::Movement;
  n.reads = {access("x", 4000)};
  n.writes = {access("y", 4000)};
  const NodeCost c = node_cost(n, h100(), default_policy());
  EXPECT_EQ(c.main_rate(), nullptr);
  EXPECT_EQ(c.compute_s, 0);
  EXPECT_DOUBLE_EQ(c.time_s, 8000 / 3.35e12);  // 2.39 ns
  EXPECT_EQ(c.bottleneck, Bottleneck::Memory);
}

TEST(NodeCost, UnfusedSumsTheNodesMaxes) {
  // Two nodes: one compute-bound (2e6 MACs fp32: 4e6 / 67e12 = 59.7 ns vs 100 B: 0.03 ns),
  // one memory-bound (1e6 bytes: 298.5 ns vs 10 ops: 0.15 ps).
  einsum::Graph g;
  g.nodes = {make_node("a", 2000000, 0, 0, ir::DType::F32),
             make_node("b", 0, 10, 0, ir::DType::F32)};
  g.nodes[0].writes = {access("t", 100)};
  g.nodes[1].reads = {access("t", 500000)};
  g.nodes[1].writes = {access("y", 500000)};
  const Analysis a = analyze(g, h100(), default_policy(), {Fidelity::Unfused});
  const FidelityResult& u = a.result(Fidelity::Unfused);
  EXPECT_DOUBLE_EQ(u.time_s, 4e6 / 67e12 + 1e6 / 3.35e12);  // 59.7 ns + 298.5 ns
  EXPECT_DOUBLE_EQ(u.compute_s, 4e6 / 67e12 + 10 / 67e12);  // summed compute terms
  EXPECT_DOUBLE_EQ(u.memory_s, 100 / 3.35e12 + 1e6 / 3.35e12);
  EXPECT_EQ(u.bytes, 1000100);
  EXPECT_EQ(u.bottleneck, Bottleneck::Memory);  // 298.5 ns memory-bound > 59.7 ns compute-bound
  EXPECT_EQ(a.totals.macs, 2000000);
  EXPECT_EQ(a.totals.flops(), 4000010);
}

// ---------------------------------------------------------------------------------------------
// Whole programs, lifted from IR text

// A relabelling reshape (einsum::Node::relabel): the head-merge of attention, o : [B, H, T, D]
// permuted to [B, T, H, D] and reshaped to [B, T, H*D], which SOLAR's strided views cannot
// express (it merges H and D, not adjacent in o's storage), so the lift materialises it. PyTorch
// runs it as a view (the attention kernel writes o in the layout that allows one): the unfused
// fidelity charges it nothing. B=2, H=4, T=8, D=16: 1,024 f32 elements, 4,096 B per tensor.
//   k1: x read 4,096 + o written 4,096 = 8,192 B
//   reshape: o -> y, 0 B (it would be 4,096 + 4,096 = 8,192 B as a copy)
//   k2: y read 4,096 + z written 4,096 = 8,192 B
// unfused = 16,384 B (it was 24,576 B when the reshape was charged as a copy).
TEST(Sol, RelabellingReshapeIsFreeInTheUnfusedAndCacheFidelities) {
  const einsum::Graph g = lift_text(R"(
input x : f32[2, 4, 8, 16]
tensor o : f32[2, 4, 8, 16]
tensor p : f32[2, 8, 4, 16]
tensor y : f32[2, 8, 64]
output z : f32[2, 8, 64]
kernel k1 {
  for b in 0..2, h in 0..4, t in 0..8, d in 0..16:
    o[b, h, t, d] = x[b, h, t, d] * 2.0
}
p = permute(o, [0, 2, 1, 3])
y = reshape(p)
kernel k2 {
  for b in 0..2, t in 0..8, c in 0..64:
    z[b, t, c] = y[b, t, c] + 1.0
}
)");
  const auto relabel =
      std::find_if(g.nodes.begin(), g.nodes.end(), [](const einsum::Node& n) { return n.relabel; });
  ASSERT_NE(relabel, g.nodes.end());
  EXPECT_EQ(relabel->bytes_read() + relabel->bytes_written(), 8192);  // what a copy would move
  const Analysis a = analyze(g, h100(), default_policy());
  EXPECT_EQ(a.result(Fidelity::Unfused).bytes, 16384);
  EXPECT_EQ(a.result(Fidelity::Fused).bytes, 8192);  // x and z
  EXPECT_EQ(a.result(Fidelity::Cache).bytes, 8192);  // 50 MB holds o and y: x and z only
  const NodeCost c = node_cost(*relabel, h100(), default_policy());
  EXPECT_EQ(c.bytes, 0);
  EXPECT_EQ(c.time_s, 0);
  // The same reshape of a graph input is a copy: the input's layout is given. x permuted and
  // reshaped into the output: 4,096 B read + 4,096 B written.
  const einsum::Graph copy = lift_text(R"(
input x : f32[2, 4, 8, 16]
tensor p : f32[2, 8, 4, 16]
output y : f32[2, 8, 64]
p = permute(x, [0, 2, 1, 3])
y = reshape(p)
)");
  ASSERT_EQ(copy.nodes.size(), 1);
  EXPECT_FALSE(copy.nodes[0].relabel);
  EXPECT_EQ(analyze(copy, h100(), default_policy()).result(Fidelity::Unfused).bytes, 8192);
}

TEST(Sol, Fp32GemvOnH100IsMemoryBound) {
  // MACs = 1 * 4096 * 4096 = 16777216; FLOPs = 33554432.
  // bytes: A 4096*4 = 16384, B 4096*4096*4 = 67108864, C 16384: 67141632 (unfused = fused: one
  // node, whose operands are all graph inputs and outputs).
  // compute = 33554432 / 67e12 = 0.5008 us (fp32 matmul on the vector unit, no TF32)
  // memory  = 67141632 / 3.35e12 = 20.04 us
  const Analysis a = analyze(lift_gemv(), h100(), default_policy());
  EXPECT_EQ(a.totals.macs, 16777216);
  for (const Fidelity f : {Fidelity::Unfused, Fidelity::Fused}) {
    const FidelityResult& r = a.result(f);
    EXPECT_EQ(r.bytes, 67141632) << fidelity_name(f);
    EXPECT_DOUBLE_EQ(r.compute_s, 33554432 / 67e12) << fidelity_name(f);
    EXPECT_DOUBLE_EQ(r.time_s, 67141632 / 3.35e12) << fidelity_name(f);
    EXPECT_EQ(r.bottleneck, Bottleneck::Memory) << fidelity_name(f);
  }
}

TEST(Sol, Fp32GemmOnH100UnfusedEqualsFusedForOneNode) {
  // M = N = K = 1024: MACs 1073741824, compute 2 * 1073741824 / 67e12 = 32.05 us;
  // bytes 3 * 1024 * 1024 * 4 = 12582912, memory 3.756 us: compute-bound at both fidelities.
  const einsum::Graph g = lift_gemm("f32", 1024, 1024, 1024);
  const Analysis a = analyze(g, h100(), default_policy());
  EXPECT_EQ(a.nodes[0].mac_rate->label, "fp32 vector");
  for (const Fidelity f : {Fidelity::Unfused, Fidelity::Fused}) {
    EXPECT_DOUBLE_EQ(a.result(f).time_s, 2.0 * 1073741824 / 67e12);
    EXPECT_EQ(a.result(f).bytes, 12582912);
    EXPECT_EQ(a.result(f).bottleneck, Bottleneck::Compute);
  }
  // TF32 allowed: compute 2147483648 / 494.5e12 = 4.343 us, still above memory 3.756 us.
  const Analysis t = analyze(g, h100(), find_precision_policy("tf32"));
  EXPECT_EQ(t.nodes[0].mac_rate->label, "tf32 tensor");
  EXPECT_DOUBLE_EQ(t.result(Fidelity::Fused).time_s, 2147483648 / 494.5e12);
}

TEST(Sol, Bf16GemmRunsOnTensorCores) {
  // M = N = K = 4096, bf16: MACs 4096^3 = 68719476736; compute 2 * 68719476736 / 989.5e12
  // = 138.9 us; bytes 3 * 4096 * 4096 * 2 = 100663296, memory 30.05 us.
  const Analysis a = analyze(lift_gemm("bf16", 4096, 4096, 4096), h100(), default_policy());
  EXPECT_EQ(a.nodes[0].mac_rate->label, "bf16 tensor");
  EXPECT_EQ(a.nodes[0].mac_rate->flops_per_s, 989.5e12);
  EXPECT_DOUBLE_EQ(a.result(Fidelity::Fused).time_s, 2.0 * 68719476736 / 989.5e12);
  EXPECT_EQ(a.result(Fidelity::Fused).bytes, 100663296);
  EXPECT_DOUBLE_EQ(a.result(Fidelity::Fused).memory_s, 100663296 / 3.35e12);
  EXPECT_EQ(a.result(Fidelity::Fused).bottleneck, Bottleneck::Compute);
}

// A valid (unpadded) 3x3 convolution: x f32[8, 64, 58, 58], w f32[64, 64, 3, 3], y[8, 64, 56, 56].
constexpr const char* kConv = R"(size N = 8
size C = 64
size F = 64
size H = 58
size W = 58
size OH = H - 2
size OW = W - 2
input x : f32[N, C, H, W]
weight w : f32[F, C, 3, 3]
output y : f32[N, F, OH, OW]
kernel conv {
  for n in 0..N, f in 0..F, oh in 0..OH, ow in 0..OW, c in 0..C, kh in 0..3, kw in 0..3:
    y[n, f, oh, ow] += x[n, c, oh + kh, ow + kw] * w[f, c, kh, kw]
}
)";

TEST(Sol, Fp32ConvOnTf32ByDefaultAndOnVectorUnderStrict) {
  // MACs = 8 * 64 * 56 * 56 * 64 * 9 = 924844032.
  // bytes: x 8*64*58*58*4 = 6889472, w 64*64*9*4 = 147456, y 8*64*56*56*4 = 6422528:
  // 13459456, memory = 13459456 / 3.35e12 = 4.018 us.
  const einsum::Graph g = lift_text(kConv);
  ASSERT_TRUE(g.nodes[0].conv_like);
  const Analysis def = analyze(g, h100(), default_policy());
  EXPECT_EQ(def.totals.macs, 924844032);
  EXPECT_EQ(def.nodes[0].mac_rate->label, "tf32 tensor");
  // Default: compute = 2 * 924844032 / 494.5e12 = 3.741 us < memory: memory-bound.
  EXPECT_DOUBLE_EQ(def.nodes[0].compute_s, 2.0 * 924844032 / 494.5e12);
  EXPECT_EQ(def.result(Fidelity::Fused).bytes, 13459456);
  EXPECT_DOUBLE_EQ(def.result(Fidelity::Fused).time_s, 13459456 / 3.35e12);
  EXPECT_EQ(def.result(Fidelity::Fused).bottleneck, Bottleneck::Memory);
  // Strict: compute = 1849688064 / 67e12 = 27.61 us: compute-bound.
  const Analysis strict = analyze(g, h100(), find_precision_policy("strict"));
  EXPECT_EQ(strict.nodes[0].mac_rate->label, "fp32 vector");
  EXPECT_DOUBLE_EQ(strict.result(Fidelity::Fused).time_s, 2.0 * 924844032 / 67e12);
  EXPECT_EQ(strict.result(Fidelity::Fused).bottleneck, Bottleneck::Compute);
}

TEST(Sol, MlpChainFusedMovesOnlyInputsWeightsAndOutputs) {
  // y = relu(x @ w1 + b1) @ w2 + b2 with B = 4, I = 16, HID = 32, O = 8, all f32. Bytes:
  // x 4*16*4 = 256, w1 16*32*4 = 2048, b1 32*4 = 128, w2 32*8*4 = 1024, b2 8*4 = 32,
  // z = a = 4*32*4 = 512, u = y = 4*8*4 = 128.
  //   fc1       x + w1 + z  = 256 + 2048 + 512  = 2816
  //   bias_relu z + b1 + a  = 512 + 128 + 512   = 1152
  //   fc2       a + w2 + u  = 512 + 1024 + 128  = 1664
  //   bias      u + b2 + y  = 128 + 32 + 128    = 288
  // unfused = 5920; fused = x + w1 + b1 + w2 + b2 + y = 256 + 2048 + 128 + 1024 + 32 + 128 = 3616.
  const std::string text = R"(size B = 4
size I = 16
size HID = 32
size O = 8
input x : f32[B, I]
weight w1 : f32[I, HID]
weight b1 : f32[HID]
weight w2 : f32[HID, O]
weight b2 : f32[O]
tensor z : f32[B, HID]
tensor a : f32[B, HID]
tensor u : f32[B, O]
output y : f32[B, O]
kernel fc1 {
  for i in 0..B, j in 0..HID, k in 0..I:
    z[i, j] += x[i, k] * w1[k, j]
}
kernel bias_relu {
  for i in 0..B, j in 0..HID:
    a[i, j] = max(z[i, j] + b1[j], 0.0)
}
kernel fc2 {
  for i in 0..B, j in 0..O, k in 0..HID:
    u[i, j] += a[i, k] * w2[k, j]
}
kernel bias {
  for i in 0..B, j in 0..O:
    y[i, j] = u[i, j] + b2[j]
}
)";
  const Analysis a = analyze(lift_text(text), h100(), default_policy());
  ASSERT_EQ(a.nodes.size(), 4u);
  EXPECT_EQ(a.nodes[0].bytes, 2816);
  EXPECT_EQ(a.nodes[1].bytes, 1152);
  EXPECT_EQ(a.nodes[2].bytes, 1664);
  EXPECT_EQ(a.nodes[3].bytes, 288);
  const FidelityResult& u = a.result(Fidelity::Unfused);
  const FidelityResult& f = a.result(Fidelity::Fused);
  EXPECT_EQ(u.bytes, 5920);
  EXPECT_EQ(f.bytes, 3616);
  // Work: fc1 4*32*16 = 2048 MACs, bias_relu 4*32 * (add + max) = 256 ops, fc2 4*8*32 = 1024
  // MACs, bias 4*8 = 32 adds. Every node is memory-bound (fc1: 4096 / 67e12 = 0.06 ns vs
  // 2816 / 3.35e12 = 0.84 ns), so unfused = 5920 / 3.35e12 = 1.767 ns.
  EXPECT_EQ(a.totals.flops(), 2 * 2048 + 256 + 2 * 1024 + 32);
  EXPECT_DOUBLE_EQ(u.time_s, 2816 / 3.35e12 + 1152 / 3.35e12 + 1664 / 3.35e12 + 288 / 3.35e12);
  // fused = max((4096 + 256 + 2048 + 32) / 67e12, 3616 / 3.35e12) = max(0.096, 1.079) ns.
  EXPECT_DOUBLE_EQ(f.compute_s, 4096 / 67e12 + 256 / 67e12 + 2048 / 67e12 + 32 / 67e12);
  EXPECT_DOUBLE_EQ(f.time_s, 3616 / 3.35e12);
  EXPECT_EQ(f.bottleneck, Bottleneck::Memory);
}

TEST(Sol, SoftmaxIsMemoryBound) {
  // R = C = 1024, f32; x and y 1024*1024*4 = 4194304 bytes, m and s 1024*4 = 4096.
  //   row_max   m max= x:              1 op/point (the combine)        reads x       writes m
  //   row_sum   s += exp(x - m):       sub, exp, combine: 3 ops/point  reads x, m    writes s
  //   normalize y = exp(x - m) / s:    sub, exp, div:     3 ops/point  reads x, m, s writes y
  // unfused bytes = (4194304 + 4096) + (4194304 + 2*4096) + (2*4194304 + 2*4096) = 16797696
  // fused bytes = x + y = 8388608.
  // compute = 7 * 1048576 / 67e12 = 0.1096 us; fused memory = 8388608 / 3.35e12 = 2.504 us.
  const std::string text = R"(size R = 1024
size C = 1024
input x : f32[R, C]
tensor m : f32[R]
tensor s : f32[R]
output y : f32[R, C]
kernel row_max {
  for i in 0..R, j in 0..C:
    m[i] max= x[i, j]
}
kernel row_sum {
  for i in 0..R, j in 0..C:
    s[i] += exp(x[i, j] - m[i])
}
kernel normalize {
  for i in 0..R, j in 0..C:
    y[i, j] = exp(x[i, j] - m[i]) / s[i]
}
)";
  const Analysis a = analyze(lift_text(text), h100(), default_policy());
  EXPECT_EQ(a.totals.macs, 0);
  EXPECT_EQ(a.totals.other_ops(), 7 * 1048576);
  for (const NodeCost& c : a.nodes) {
    EXPECT_EQ(c.other_rate->label, "fp32 vector");
    EXPECT_EQ(c.bottleneck, Bottleneck::Memory);
  }
  EXPECT_EQ(a.result(Fidelity::Unfused).bytes, 16797696);
  EXPECT_DOUBLE_EQ(a.result(Fidelity::Unfused).time_s,
                   4198400 / 3.35e12 + 4202496 / 3.35e12 + 8396800 / 3.35e12);
  EXPECT_EQ(a.result(Fidelity::Fused).bytes, 8388608);
  EXPECT_DOUBLE_EQ(a.result(Fidelity::Fused).compute_s,
                   1048576 / 67e12 + 3145728 / 67e12 + 3145728 / 67e12);
  EXPECT_DOUBLE_EQ(a.result(Fidelity::Fused).time_s, 8388608 / 3.35e12);
  EXPECT_EQ(a.result(Fidelity::Fused).bottleneck, Bottleneck::Memory);
}

// hardsigmoid over N = 1024 f32 elements, as torch.export decomposes it: four kernels.
std::string hardsigmoid_text(bool op_block) {
  const std::string kernels = R"(kernel add {
  for i in 0..N:
    t0[i] = x[i] + 3.0
}
kernel lo {
  for i in 0..N:
    t1[i] = max(t0[i], 0.0)
}
kernel hi {
  for i in 0..N:
    t2[i] = min(t1[i], 6.0)
}
kernel div {
  for i in 0..N:
    y[i] = t2[i] / 6.0
}
)";
  return "size N = 1024\ninput x : f32[N]\ntensor t0 : f32[N]\ntensor t1 : f32[N]\n"
         "tensor t2 : f32[N]\noutput y : f32[N]\n" +
         (op_block ? "op hardsigmoid {\n" + kernels + "}\n" : kernels);
}

TEST(Unfused, OneFrameworkOpIsOneKernel) {
  // Per op: read x (1024 x 4 B = 4096 B), write y (4096 B): 8192 B = 8N, not the four kernels'
  // 4 x (4096 + 4096) = 32768 B = 32N. Compute: add, max, min (simple) and div (special), one
  // each per element: 4 x 1024 = 4096 ops at fp32 vector 67e12 = 61.1 ps, the sum of the nodes'
  // compute; memory 8192 / 3.35e12 = 2.445 ns bounds it.
  const Analysis op = analyze(lift_text(hardsigmoid_text(true)), h100(), default_policy());
  ASSERT_EQ(op.ops.size(), 1u);
  EXPECT_EQ(op.ops[0].name, "hardsigmoid");
  EXPECT_EQ(op.ops[0].first, 0u);
  EXPECT_EQ(op.ops[0].last, 4u);
  EXPECT_EQ(op.ops[0].bytes, 8192);
  EXPECT_DOUBLE_EQ(op.ops[0].compute_s, 3 * 1024 / 67e12 + 1024 / 67e12);
  const FidelityResult& u = op.result(Fidelity::Unfused);
  EXPECT_EQ(u.bytes, 8192);
  EXPECT_DOUBLE_EQ(u.time_s, 8192 / 3.35e12);
  // The fused bound is the same here: one op is the whole graph (x and y, 8192 B).
  EXPECT_EQ(op.result(Fidelity::Fused).bytes, 8192);
  // Without the block, every kernel is an op of its own: 32768 B.
  const Analysis kernels = analyze(lift_text(hardsigmoid_text(false)), h100(), default_policy());
  EXPECT_EQ(kernels.ops.size(), 4u);
  EXPECT_EQ(kernels.result(Fidelity::Unfused).bytes, 32768);
  EXPECT_DOUBLE_EQ(kernels.result(Fidelity::Unfused).time_s, 4 * 8192 / 3.35e12);
}

TEST(Unfused, AnIntermediateNeededAfterTheOpIsWrittenOnce) {
  // op a: t = x * 2 (t is read again by b, outside the op), u = t + 1 (consumed by b).
  // op a moves: x read (64 x 4 = 256 B); t written (256 B, b reads it); u written (256 B, b
  // reads it): 768 B. b alone: reads t, u (512 B), writes y (256 B): 768 B. Total 1536 B,
  // against the three kernels' 512 + 512 + 768 = 1792 B.
  const einsum::Graph g = lift_file(SOLAR_SOURCE_DIR "/tests/fixtures/op_blocks.ir");
  const std::vector<einsum::OpUnit> units = einsum::op_units(g);
  ASSERT_EQ(units.size(), 2u);
  EXPECT_EQ(units[0].name, "a");
  EXPECT_EQ(units[0].bytes_read, 256);
  EXPECT_EQ(units[0].bytes_written, 512);
  EXPECT_EQ(units[1].name, "b");
  EXPECT_EQ(units[1].bytes(), 768);
  EXPECT_EQ(analyze(g, h100(), default_policy()).result(Fidelity::Unfused).bytes, 1536);
}

TEST(Unfused, AnInputReadTwiceInsideAnOpIsReadOnce) {
  // Softmax over 8 rows of 16 f32 as one op: x is read by all three kernels, once from DRAM
  // (8 x 16 x 4 = 512 B); y written (512 B); the row max m and sum s stay on chip: 1024 B.
  // The kernels alone: (512 + 32) + (512 + 32 + 32) + (512 + 32 + 32 + 512) = 2208 B.
  const std::string body = R"(kernel row_max {
  for i in 0..8, j in 0..16:
    m[i] max= x[i, j]
}
kernel row_sum {
  for i in 0..8, j in 0..16:
    s[i] += exp(x[i, j] - m[i])
}
kernel normalize {
  for i in 0..8, j in 0..16:
    y[i, j] = exp(x[i, j] - m[i]) / s[i]
}
)";
  const std::string head =
      "input x : f32[8, 16]\ntensor m : f32[8]\ntensor s : f32[8]\noutput y : f32[8, 16]\n";
  const Analysis op = analyze(lift_text(head + "op softmax {\n" + body + "}\n"), h100(),
                              default_policy(), {Fidelity::Unfused});
  EXPECT_EQ(op.result(Fidelity::Unfused).bytes, 1024);
  const Analysis alone =
      analyze(lift_text(head + body), h100(), default_policy(), {Fidelity::Unfused});
  EXPECT_EQ(alone.result(Fidelity::Unfused).bytes, 2208);
}

TEST(Unfused, RepeatedOpBlocksAreOneOpPerIteration) {
  // `op step` inside `repeat t in 0..3`: three ops step[t=0..2], each two kernels over 4 f32:
  // h read (16 B), a on chip, h written back (16 B) = 32 B per op, 96 B in all (the kernels
  // alone: 2 x 32 B per iteration = 192 B).
  const std::string text = R"(input x : f32[4]
tensor a : f32[4]
output h : f32[4]
h = x
repeat t in 0..3 {
  op step {
    kernel up {
      for i in 0..4:
        a[i] = h[i] * 0.5
    }
    kernel down {
      for i in 0..4:
        h[i] = tanh(a[i])
    }
  }
}
)";
  const einsum::Graph g = lift_text(text);
  const std::vector<einsum::OpUnit> units = einsum::op_units(g);
  ASSERT_EQ(units.size(), 4u);  // the copy h = x (a movement node: h is an output), then 3 ops
  EXPECT_EQ(units[1].name, "step[t=0]");
  EXPECT_EQ(units[3].name, "step[t=2]");
  for (size_t k = 1; k < 4; ++k) EXPECT_EQ(units[k].bytes(), 32) << units[k].name;
}

TEST(Sol, DeviceWithoutTheRateFallsBackAndSaysWhy) {
  // TPU-v5e publishes bf16 and int8 tensor rates only: the fp32 GEMV's MACs fall back to bf16
  // tensor, 197e12: compute = 33554432 / 197e12 = 0.17 us; memory 67141632 / 0.819e12 = 82 us.
  const Analysis a = analyze(lift_gemv(), hw::load_builtin_device("TPU-v5e"), default_policy());
  const Rate& r = *a.nodes[0].mac_rate;
  EXPECT_TRUE(r.fallback());
  EXPECT_EQ(r.flops_per_s, 197e12);
  EXPECT_EQ(r.label, "fp32 vector->bf16 tensor (TPU-v5e has no fp32 vector or tf32 tensor rate)");
  EXPECT_DOUBLE_EQ(a.nodes[0].compute_s, 33554432 / 197e12);
  EXPECT_DOUBLE_EQ(a.result(Fidelity::Fused).time_s, 67141632 / 0.819e12);
}

TEST(Sol, Fp64OnATpuIsAUserError) {
  const std::string text = R"(size N = 4
input a : f64[N]
input b : f64[N]
output c : f64[]
kernel dot {
  for i in 0..N:
    c[] += a[i] * b[i]
}
)";
  try {
    analyze(lift_text(text), hw::load_builtin_device("TPU-v5e"), default_policy());
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()),
              "TPU-v5e has no rate for fp64 tensor (MACs of node 'dot', f64 operands, policy "
              "pytorch-cuda-default): tried fp64 tensor, fp64 vector; add one with --set "
              "peak_flops_per_s.tensor.fp64=VALUE");
  }
}

// ---------------------------------------------------------------------------------------------
// Laws, over every example, built-in device and policy

std::vector<std::string> example_files() {
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(SOLAR_SOURCE_DIR "/examples")) {
    if (e.path().extension() == ".ir") files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

TEST(SolLaws, FusedIsNeverAboveUnfused) {
  const std::vector<std::string> files = example_files();
  ASSERT_GE(files.size(), 10u);
  for (const std::string& file : files) {
    const einsum::Graph g = lift_file(file);
    for (const std::string& name : hw::builtin_device_names()) {
      const hw::Device d = hw::load_builtin_device(name);
      for (const PrecisionPolicy& p : precision_policies()) {
        const Analysis a = analyze(g, d, p);
        const FidelityResult& u = a.result(Fidelity::Unfused);
        const FidelityResult& f = a.result(Fidelity::Fused);
        EXPECT_LE(f.time_s, u.time_s) << file << " " << name << " " << p.name;
        EXPECT_LE(f.bytes, u.bytes) << file << " " << name << " " << p.name;
        EXPECT_GT(f.time_s, 0) << file << " " << name << " " << p.name;
      }
    }
  }
}

TEST(SolLaws, UnfusedPerOpIsNeverAboveThePerKernelSum) {
  // The unfused fidelity runs each framework op as one kernel: never more bytes or time than
  // its kernels run alone (the per-node costs).
  for (const std::string& file : example_files()) {
    const einsum::Graph g = lift_file(file);
    const Analysis a = analyze(g, h100(), default_policy(), {Fidelity::Unfused});
    double kernels_s = 0;
    int64_t kernel_bytes = 0;
    for (const NodeCost& c : a.nodes) {
      kernels_s += c.time_s;
      kernel_bytes += c.bytes;
    }
    EXPECT_LE(a.result(Fidelity::Unfused).time_s, kernels_s * (1 + 1e-12)) << file;
    EXPECT_LE(a.result(Fidelity::Unfused).bytes, kernel_bytes) << file;
  }
}

// Every present figure of `d` that a rate or the DRAM bandwidth, as override keys.
std::vector<std::string> speed_keys(const hw::Device& d) {
  std::vector<std::string> keys;
  for (const hw::FigureEntry& e : hw::list_figures(d)) {
    if (e.path.starts_with("peak_flops_per_s.") || e.path == "memory.DRAM.bandwidth_bytes_per_s") {
      keys.push_back(e.path);
    }
  }
  return keys;
}

hw::Device scaled(hw::Device d, const std::vector<std::string>& keys, double k) {
  for (const hw::FigureEntry& e : hw::list_figures(d)) {
    if (std::find(keys.begin(), keys.end(), e.path) == keys.end()) continue;
    char value[64];
    std::snprintf(value, sizeof value, "%.17g", e.figure.value * k);
    hw::apply_override(d, e.path + "=" + value);
  }
  return d;
}

TEST(SolLaws, AFasterDeviceIsNeverSlower) {
  // Doubling any one rate or the bandwidth never raises the SOL; scaling all of them by 4
  // divides it by 4 (both models are homogeneous of degree -1 in the speeds).
  for (const std::string& file : example_files()) {
    const einsum::Graph g = lift_file(file);
    for (const std::string& name : hw::builtin_device_names()) {
      const hw::Device d = hw::load_builtin_device(name);
      // The cache fidelity where the device has an L2 (not the TPUs); its schedule does not
      // depend on the speeds, so it scales like the fused model.
      AnalysisOptions o;
      o.cache_optional = true;
      const Analysis base = analyze(g, d, default_policy(), implemented_fidelities(), o);
      std::vector<Fidelity> analysed;
      for (const FidelityResult& r : base.results) analysed.push_back(r.fidelity);
      for (const std::string& key : speed_keys(d)) {
        const Analysis faster =
            analyze(g, scaled(d, {key}, 2.0), default_policy(), implemented_fidelities(), o);
        for (const Fidelity f : analysed) {
          EXPECT_LE(faster.result(f).time_s, base.result(f).time_s)
              << file << " " << name << " " << key << " " << fidelity_name(f);
        }
      }
      // All of them 4x faster: 4x shorter, without the kernel floor (a floor does not scale).
      AnalysisOptions unfloored = o;
      unfloored.kernel_floor = false;
      const Analysis slow = analyze(g, d, default_policy(), implemented_fidelities(), unfloored);
      const Analysis all = analyze(g, scaled(d, speed_keys(d), 4.0), default_policy(),
                                   implemented_fidelities(), unfloored);
      for (const Fidelity f : analysed) {
        EXPECT_NEAR(all.result(f).time_s, slow.result(f).time_s / 4, 1e-12 * slow.result(f).time_s)
            << file << " " << name << " " << fidelity_name(f);
      }
    }
  }
}

}  // namespace
}  // namespace solar::sol
