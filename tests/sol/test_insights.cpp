// Insights (include/solar/sol/insights.h) and headroom (include/solar/sol/headroom.h): contraction
// orders worked out by hand, fusion opportunities and bottlenecks of examples/mlp.ir, headroom
// ratios and the violation flag.
#include "solar/sol/insights.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "sol_test_util.h"
#include "solar/hw/device.h"
#include "solar/ir/checker.h"
#include "solar/ir/parser.h"
#include "solar/sol/analysis.h"
#include "solar/sol/headroom.h"
#include "solar/sol/precision.h"
#include "solar/util/error.h"

namespace solar::sol {
namespace {

using testing::lift_text;

const PrecisionPolicy& policy() { return find_precision_policy(kDefaultPrecisionPolicy); }

Insights insights_of(const einsum::Graph& g) {
  return find_insights(g, analyze(g, hw::load_builtin_device("H100-SXM"), policy()));
}

TEST(OptimalOrder, MatrixChainNotLeftToRight) {
  // A(50x5) B(5x100) C(100x10); labels i=0 (50), j=1 (5), k=2 (100), l=3 (10).
  //   (A B) C: 50*5*100 + 50*100*10 = 25,000 + 50,000 = 75,000 MACs
  //   A (B C): 5*100*10 + 50*5*10   =  5,000 +  2,500 =  7,500 MACs
  const TensorNetwork net{{"A", "B", "C"}, {{0, 1}, {1, 2}, {2, 3}}, {50, 5, 100, 10}, {0, 3}};
  const ContractionOrder o = optimal_order(net);
  EXPECT_EQ(o.macs, 7500);
  EXPECT_EQ(o.text, "(A (B C))");
}

TEST(OptimalOrder, MatrixChainLeftToRight) {
  // A(10x100) B(100x5) C(5x50): (A B) C = 10*100*5 + 10*5*50 = 5,000 + 2,500 = 7,500;
  // A (B C) = 100*5*50 + 10*100*50 = 25,000 + 50,000 = 75,000.
  const TensorNetwork net{{"A", "B", "C"}, {{0, 1}, {1, 2}, {2, 3}}, {10, 100, 5, 50}, {0, 3}};
  const ContractionOrder o = optimal_order(net);
  EXPECT_EQ(o.macs, 7500);
  EXPECT_EQ(o.text, "((A B) C)");
}

TEST(OptimalOrder, FourMatrices) {
  // Extents 10, 20, 30, 40, 30 (A 10x20, B 20x30, C 30x40, D 40x30). The classic matrix-chain
  // table: m[AB] = 6,000, m[BC] = 24,000, m[CD] = 36,000;
  // m[ABC] = min(m[AB] + 10*30*40 = 18,000, m[BC] + 10*20*40 = 32,000) = 18,000;
  // m[BCD] = min(m[BC] + 20*40*30 = 48,000, m[CD] + 20*30*30 = 54,000) = 48,000;
  // m[ABCD] = min(m[ABC] + 10*40*30 = 30,000, m[AB] + m[CD] + 10*30*30 = 51,000,
  //               m[BCD] + 10*20*30 = 54,000) = 30,000: (((A B) C) D).
  const TensorNetwork net{
      {"A", "B", "C", "D"}, {{0, 1}, {1, 2}, {2, 3}, {3, 4}}, {10, 20, 30, 40, 30}, {0, 4}};
  const ContractionOrder o = optimal_order(net);
  EXPECT_EQ(o.macs, 30000);
  EXPECT_EQ(o.text, "(((A B) C) D)");
}

TEST(OptimalOrder, CostsSaturateInsteadOfOverflowing) {
  // Two operands sharing nothing: an outer product of 2^40 x 2^40 points overflows int64.
  const int64_t big = int64_t{1} << 40;
  const TensorNetwork net{{"X", "Y"}, {{0}, {1}}, {big, big}, {0, 1}};
  EXPECT_EQ(optimal_order(net).macs, std::numeric_limits<int64_t>::max());
}

constexpr const char* kChain = R"(size I = 50
size J = 5
size K = 100
size L = 10
input A : f32[I, J]
weight B : f32[J, K]
weight C : f32[K, L]
tensor T : f32[I, K]
output Y : f32[I, L]
kernel ab {
  for i in 0..I, k in 0..K, j in 0..J:
    T[i, k] += A[i, j] * B[j, k]
}
kernel abc {
  for i in 0..I, l in 0..L, k in 0..K:
    Y[i, l] += T[i, k] * C[k, l]
}
)";

TEST(Insights, ChainOfTwoMatmulsIsReordered) {
  const Insights in = insights_of(lift_text(kChain));
  ASSERT_EQ(in.chains.size(), 1u);
  const ContractionChain& c = in.chains[0];
  EXPECT_EQ(c.nodes, (std::vector<std::string>{"ab", "abc"}));
  EXPECT_EQ(c.operands, (std::vector<std::string>{"A", "B", "C"}));
  // As written: ab 50*100*5 = 25,000 MACs, abc 50*10*100 = 50,000: 75,000.
  EXPECT_EQ(c.program.text, "((A B) C)");
  EXPECT_EQ(c.program.macs, 75000);
  // B C first: 5*100*10 = 5,000, then A (BC): 50*5*10 = 2,500: 7,500.
  EXPECT_EQ(c.best.text, "(A (B C))");
  EXPECT_EQ(c.best.macs, 7500);
  EXPECT_EQ(c.flops_saved(), 2 * (75000 - 7500));  // 135,000 FLOPs
  EXPECT_TRUE(in.notes.empty());
}

// Multi-head latent attention, decode step (one query), scores only: the keys are up-projected
// from the latent cache c (naive), or the up-projection is absorbed into the query.
constexpr const char* kMla = R"(size H = 4
size D = 16
size R = 64
size T = 256
input q : f32[H, D]
input c : f32[T, R]
weight wuk : f32[R, H, D]
tensor k : f32[H, T, D]
output s : f32[H, T]
kernel up_k {
  for h in 0..H, t in 0..T, d in 0..D, r in 0..R:
    k[h, t, d] += c[t, r] * wuk[r, h, d]
}
kernel scores {
  for h in 0..H, t in 0..T, d in 0..D:
    s[h, t] += q[h, d] * k[h, t, d]
}
)";

TEST(Insights, MultiHeadLatentAttentionAbsorbed) {
  const Insights in = insights_of(lift_text(kMla));
  ASSERT_EQ(in.chains.size(), 1u);
  const ContractionChain& c = in.chains[0];
  EXPECT_EQ(c.operands, (std::vector<std::string>{"c", "wuk", "q"}));
  // Naive: up_k H*T*D*R = 4*256*16*64 = 1,048,576; scores H*T*D = 4*256*16 = 16,384.
  EXPECT_EQ(c.program.macs, 1048576 + 16384);
  EXPECT_EQ(c.program.text, "(q (c wuk))");  // scores reads q, then k = (c wuk)
  // Absorbed: q' = q wuk over d: H*D*R = 4*16*64 = 4,096; s = q' c over r: H*T*R = 4*256*64 =
  // 65,536. Total 69,632.
  EXPECT_EQ(c.best.macs, 4096 + 65536);
  EXPECT_EQ(c.best.text, "(c (wuk q))");
  EXPECT_EQ(c.flops_saved(), 2 * (1064960 - 69632));  // 1,990,656 FLOPs
}

TEST(Insights, MlpFusionOpportunitiesAndBottlenecks) {
  // examples/mlp.ir: x f32[B=4, I=16], w1 [16, HID=32], b1 [32], w2 [32, O=8], b2 [8]; fc1 ->
  // z, bias_relu -> a, fc2 -> u, bias -> y.
  const ir::Program p = ir::parse_file(SOLAR_SOURCE_DIR "/examples/mlp.ir");
  const einsum::Graph g = einsum::lift(p, ir::check_or_throw(p));
  const Insights in = insights_of(g);
  // fc1 and fc2 are contractions but bias_relu sits between them: no chain.
  EXPECT_TRUE(in.chains.empty());
  // z and a: f32[4, 32] = 512 bytes, written once and read once: 1,024 bytes each; u: f32[4, 8]
  // = 128 bytes: 256. Ties keep program order.
  ASSERT_EQ(in.fusions.size(), 3u);
  EXPECT_EQ(in.fusions[0].tensor, "z");
  EXPECT_EQ(in.fusions[0].producer, "fc1");
  EXPECT_EQ(in.fusions[0].consumers, (std::vector<std::string>{"bias_relu"}));
  EXPECT_EQ(in.fusions[0].bytes_saved, 1024);
  EXPECT_DOUBLE_EQ(in.fusions[0].memory_s_saved, 1024 / 3.35e12);
  EXPECT_EQ(in.fusions[1].tensor, "a");
  EXPECT_EQ(in.fusions[1].bytes_saved, 1024);
  EXPECT_EQ(in.fusions[2].tensor, "u");
  EXPECT_EQ(in.fusions[2].bytes_saved, 256);
  // fc1: 2 * 2,048 MACs = 4,096 FLOPs over x 256 + w1 2,048 + z 512 = 2,816 bytes; its rate is
  // the fp32 vector rate 67e12, so its ridge is 67e12 / 3.35e12 = 20 FLOP/byte: memory-bound.
  ASSERT_EQ(in.bottlenecks.size(), 4u);
  EXPECT_EQ(in.bottlenecks[0].node, "fc1");
  EXPECT_EQ(in.bottlenecks[0].bottleneck, Bottleneck::Memory);
  EXPECT_DOUBLE_EQ(in.bottlenecks[0].intensity_flops_per_byte, 4096.0 / 2816.0);
  EXPECT_DOUBLE_EQ(in.bottlenecks[0].ridge_flops_per_byte, 67e12 / 3.35e12);
}

TEST(Insights, IntermediateReadTwiceIsNoChain) {
  // T feeds two contractions: reordering would still have to compute T, so no chain.
  const std::string text = std::string(kChain).replace(std::string(kChain).find("output Y"), 8,
                                                       "output Z : f32[I, L]\noutput Y") +
                           "kernel again {\n  for i in 0..I, l in 0..L, k in 0..K:\n"
                           "    Z[i, l] += T[i, k] * C[k, l]\n}\n";
  EXPECT_TRUE(insights_of(lift_text(text)).chains.empty());
}

TEST(Headroom, RatiosAndViolation) {
  const einsum::Graph g = lift_text(R"(size N = 4
input x : f32[N]
output y : f32[N]
kernel k {
  for i in 0..N:
    y[i] = x[i] + 1.0
}
)");
  // 4 adds; bytes x 16 + y 16 = 32 at both fidelities, memory-bound on H100-SXM (3.35e12 B/s):
  // SOL = 32 / 3.35e12 s at every fidelity (one node: nothing to fuse).
  const Analysis a = analyze(g, hw::load_builtin_device("H100-SXM"), policy());
  const double sol = 32 / 3.35e12;
  const Headroom h = compute_headroom(a, "H100-SXM", {1e-6, "H100-SXM", "test"});
  ASSERT_EQ(h.fidelities.size(), a.results.size());
  for (const FidelityHeadroom& f : h.fidelities) {
    EXPECT_DOUBLE_EQ(f.sol_s, sol);
    EXPECT_DOUBLE_EQ(f.headroom, 1e-6 / sol);
  }
  EXPECT_FALSE(h.what_if);
  EXPECT_FALSE(h.violation);
  EXPECT_DOUBLE_EQ(h.bound_s, sol);
  // Below the bound: a violation. Another device: a what-if. Not stated: no what-if.
  EXPECT_TRUE(compute_headroom(a, "H100-SXM", {sol / 2, "", ""}).violation);
  EXPECT_TRUE(compute_headroom(a, "H100-SXM", {1e-6, "cpu-x", ""}).what_if);
  EXPECT_FALSE(compute_headroom(a, "H100-SXM", {1e-6, "", ""}).what_if);
  EXPECT_THROW(compute_headroom(a, "H100-SXM", {0, "", ""}), UserError);
  EXPECT_THROW(compute_headroom(a, "H100-SXM", {-1, "", ""}), UserError);
}

}  // namespace
}  // namespace solar::sol
