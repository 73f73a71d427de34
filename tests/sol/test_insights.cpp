// Insights (include/solar/sol/insights.h) and headroom (include/solar/sol/headroom.h): contraction
// orders worked out by hand, fusion opportunities and bottlenecks of examples/mlp.ir, headroom
// ratios and the violation flag.
#include "solar/sol/insights.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <utility>
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

using testing::lift_file;
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

// A reshape that merges permuted dimensions cannot be a view: the lift materialises it as a data
// movement node between the two contractions. The chain runs through it: M[b, t, (h d)] carries
// the indices b, t, h, d of K[b, h, t, d], so the second contraction's f = (h d) lines up.
constexpr const char* kThroughReshape = R"(size B = 2
size T = 32
size R = 8
size H = 4
size D = 16
size F = 64
size E = 8
input c : f32[B, T, R]
weight w : f32[H, R, D]
weight wo : f32[F, E]
tensor k : f32[B, H, T, D]
tensor p : f32[B, T, H, D]
tensor m : f32[B, T, F]
output y : f32[B, T, E]
kernel up {
  for b in 0..B, h in 0..H, t in 0..T, d in 0..D, r in 0..R:
    k[b, h, t, d] += c[b, t, r] * w[h, r, d]
}
p = permute(k, [0, 2, 1, 3])
m = reshape(p)
kernel proj {
  for b in 0..B, t in 0..T, e in 0..E, f in 0..F:
    y[b, t, e] += m[b, t, f] * wo[f, e]
}
)";

TEST(Insights, ChainRunsThroughPermuteAndReshape) {
  const einsum::Graph g = lift_text(kThroughReshape);
  const Insights in = insights_of(g);
  ASSERT_EQ(in.chains.size(), 1u) << (in.notes.empty() ? "" : in.notes[0]);
  const ContractionChain& c = in.chains[0];
  EXPECT_EQ(c.nodes, (std::vector<std::string>{"up", "proj"}));
  EXPECT_EQ(c.via, (std::vector<std::string>{"reshape:m"}));  // the permute folds into it
  EXPECT_EQ(c.operands, (std::vector<std::string>{"c", "w", "wo"}));
  // As written: up B*H*T*D*R = 2*4*32*16*8 = 32,768; proj B*T*E*F = 2*32*8*64 = 32,768: 65,536.
  EXPECT_EQ(c.program.text, "((c w) wo)");
  EXPECT_EQ(c.program.macs, 65536);
  // w wo over d (wo's f is h, d): H*R*D*E = 4*8*16*8 = 4,096; then c (w wo) over r:
  // B*T*R*E = 2*32*8*8 = 4,096. Total 8,192.
  EXPECT_EQ(c.best.text, "(c (w wo))");
  EXPECT_EQ(c.best.macs, 8192);
  EXPECT_EQ(c.flops_saved(), 2 * (65536 - 8192));  // 114,688 FLOPs
  // Letters: the output y[b, t, e] is a, b, c; then c[b, t, r] brings r = d, w[h, r, d] brings
  // h = e and d = f. wo[(h d), e] is "efc"; the program's k[b, h, t, d] "aebf", m "abef".
  EXPECT_EQ(c.indices, (std::vector<std::pair<std::string, int64_t>>{
                           {"a", 2}, {"b", 32}, {"c", 8}, {"d", 8}, {"e", 4}, {"f", 16}}));
  EXPECT_EQ(c.program.steps, (std::vector<std::string>{"abd,edf->aebf", "abef,efc->abc"}));
  // w wo keeps r = d and e = c (increasing label order: "cd"); then c (w wo) -> y.
  EXPECT_EQ(c.best.steps, (std::vector<std::string>{"edf,efc->cd", "abd,cd->abc"}));
  EXPECT_GT(c.compute_s_saved, 0);
  ASSERT_TRUE(c.fused_s.has_value());
  EXPECT_LE(
      *c.fused_s,
      analyze(g, hw::load_builtin_device("H100-SXM"), policy()).result(Fidelity::Fused).time_s);
}

// Multi-head latent attention, decode step (one query), whole: keys and values up-projected from
// the latent cache c, scores scaled, a softmax over t, then the values. The scale commutes with
// the products (a relabeling); the softmax cuts the program in two chains, each reordered on its
// own: the scores s (and the softmax over them) and the softmax's output p stay as they are.
constexpr const char* kMlaDecode = R"(size H = 4
size T = 64
size R = 16
size D = 8
input q : f32[H, D]
input c : f32[T, R]
weight wuk : f32[R, H, D]
weight wuv : f32[R, H, D]
tensor k : f32[H, T, D]
tensor s : f32[H, T]
tensor ss : f32[H, T]
tensor mx : f32[H]
tensor e : f32[H, T]
tensor z : f32[H]
tensor p : f32[H, T]
tensor v : f32[H, T, D]
output o : f32[H, D]
kernel up_k {
  for h in 0..H, t in 0..T, d in 0..D, r in 0..R:
    k[h, t, d] += c[t, r] * wuk[r, h, d]
}
kernel scores {
  for h in 0..H, t in 0..T, d in 0..D:
    s[h, t] += q[h, d] * k[h, t, d]
}
kernel scale {
  for h in 0..H, t in 0..T:
    ss[h, t] = s[h, t] * 0.25
}
kernel smax {
  for h in 0..H, t in 0..T:
    mx[h] max= ss[h, t]
}
kernel sexp {
  for h in 0..H, t in 0..T:
    e[h, t] = exp(ss[h, t] - mx[h])
}
kernel ssum {
  for h in 0..H, t in 0..T:
    z[h] += e[h, t]
}
kernel snorm {
  for h in 0..H, t in 0..T:
    p[h, t] = e[h, t] / z[h]
}
kernel up_v {
  for h in 0..H, t in 0..T, d in 0..D, r in 0..R:
    v[h, t, d] += c[t, r] * wuv[r, h, d]
}
kernel out {
  for h in 0..H, d in 0..D, t in 0..T:
    o[h, d] += p[h, t] * v[h, t, d]
}
)";

TEST(Insights, AttentionWithUpProjectedValuesAcrossSoftmax) {
  const Insights in = insights_of(lift_text(kMlaDecode));
  ASSERT_EQ(in.chains.size(), 2u) << (in.notes.empty() ? "" : in.notes[0]);
  // Scores: up_k H*T*D*R = 4*64*8*16 = 32,768; scores H*T*D = 4*64*8 = 2,048: 34,816.
  // Absorbed: q wuk over d: H*D*R = 4*8*16 = 512; then with c over r: H*T*R = 4*64*16 = 4,096:
  // 4,608.
  const ContractionChain& sc = in.chains[0];
  EXPECT_EQ(sc.nodes, (std::vector<std::string>{"up_k", "scores"}));
  EXPECT_EQ(sc.via, (std::vector<std::string>{"scale"}));
  EXPECT_EQ(sc.operands, (std::vector<std::string>{"c", "wuk", "q"}));
  EXPECT_EQ(sc.program.text, "(q (c wuk))");
  EXPECT_EQ(sc.program.macs, 34816);
  EXPECT_EQ(sc.best.text, "(c (wuk q))");
  EXPECT_EQ(sc.best.macs, 4608);
  // ss[h, t] = ab; c[t, r] = bc; wuk[r, h, d] = cad; q[h, d] = ad.
  EXPECT_EQ(sc.program.steps, (std::vector<std::string>{"bc,cad->abd", "ad,abd->ab"}));
  EXPECT_EQ(sc.best.steps, (std::vector<std::string>{"cad,ad->ac", "bc,ac->ab"}));
  // Values: up_v 32,768 + out H*D*T = 2,048: 34,816. Absorbed: p c over t: H*T*R = 4,096; then
  // wuv over r: H*R*D = 512: 4,608.
  const ContractionChain& va = in.chains[1];
  EXPECT_EQ(va.nodes, (std::vector<std::string>{"up_v", "out"}));
  EXPECT_TRUE(va.via.empty());
  EXPECT_EQ(va.operands, (std::vector<std::string>{"c", "wuv", "p"}));
  EXPECT_EQ(va.program.text, "(p (c wuv))");
  EXPECT_EQ(va.program.macs, 34816);
  EXPECT_EQ(va.best.text, "((c p) wuv)");
  EXPECT_EQ(va.best.macs, 4608);
  // o[h, d] = ab; c[t, r] = cd; wuv[r, h, d] = dab; p[h, t] = ac.
  EXPECT_EQ(va.best.steps, (std::vector<std::string>{"cd,ac->ad", "ad,dab->ab"}));
}

// A nonlinearity between two matmuls cuts the chain even where reordering would be cheaper if
// it were not there: x (w1 w2) costs J*K*L + I*J*L = 10*100*10 + 100*10*10 = 20,000 MACs
// against (x w1) w2 = I*J*K + I*K*L = 100,000 + 100,000; a constant scale in its place commutes,
// and the chain is found.
std::string mlp_with(const std::string& act) {
  return R"(size I = 100
size J = 10
size K = 100
size L = 10
input x : f32[I, J]
weight w1 : f32[J, K]
weight w2 : f32[K, L]
tensor z : f32[I, K]
tensor a : f32[I, K]
output y : f32[I, L]
kernel fc1 {
  for i in 0..I, k in 0..K, j in 0..J:
    z[i, k] += x[i, j] * w1[j, k]
}
kernel act {
  for i in 0..I, k in 0..K:
    a[i, k] = )" +
         act + R"(
}
kernel fc2 {
  for i in 0..I, l in 0..L, k in 0..K:
    y[i, l] += a[i, k] * w2[k, l]
}
)";
}

TEST(Insights, NonlinearityCutsTheChainAScaleDoesNot) {
  EXPECT_TRUE(insights_of(lift_text(mlp_with("tanh(z[i, k])"))).chains.empty());
  EXPECT_TRUE(insights_of(lift_text(mlp_with("z[i, k] * z[i, k]"))).chains.empty());
  EXPECT_TRUE(insights_of(lift_text(mlp_with("z[i, k] + 1.0"))).chains.empty());
  const Insights in = insights_of(lift_text(mlp_with("0.5 * z[i, k]")));
  ASSERT_EQ(in.chains.size(), 1u);
  EXPECT_EQ(in.chains[0].via, (std::vector<std::string>{"act"}));
  EXPECT_EQ(in.chains[0].program.macs, 200000);
  EXPECT_EQ(in.chains[0].best.macs, 20000);
  EXPECT_EQ(in.chains[0].best.text, "(x (w1 w2))");
}

TEST(Insights, OptimalProgramOrderIsKept) {
  // kChain with the sizes of MatrixChainLeftToRight: (A B) C = 7,500 is already the cheapest.
  std::string text = kChain;
  for (const auto& [from, to] : {std::pair<std::string, std::string>{"I = 50", "I = 10"},
                                 {"J = 5", "J = 100"},
                                 {"K = 100", "K = 5"},
                                 {"L = 10", "L = 50"}}) {
    text.replace(text.find(from), from.size(), to);
  }
  const Insights in = insights_of(lift_text(text));
  ASSERT_EQ(in.chains.size(), 1u);
  const ContractionChain& c = in.chains[0];
  // ab: I*K*J = 10*5*100 = 5,000; abc: I*L*K = 10*50*5 = 2,500.
  EXPECT_EQ(c.program.macs, 7500);
  EXPECT_EQ(c.best.macs, 7500);
  EXPECT_EQ(c.best.text, c.program.text);
  EXPECT_EQ(c.best.steps, c.program.steps);
  EXPECT_EQ(c.flops_saved(), 0);
  EXPECT_EQ(c.compute_s_saved, 0);
}

// A fusion opportunity names framework operations (an op block, or a node outside any), once
// each, and never the producer's own.
TEST(Insights, FusionOpportunitiesNameOperations) {
  const Insights in = insights_of(lift_file(SOLAR_SOURCE_DIR "/tests/fixtures/op_blocks.ir"));
  // op a (kernels twice: t = x * 2, inc: u = t + 1), then kernel b: y = t * u. t crosses from a
  // to b (inc, inside a, is no consumer of its own): written with 64 x 4 = 256 bytes and read
  // with 256 by b = 512 (a's inc reads t on chip in the unfused model already: fusing does not
  // save that read; 768 before); u from a to b: 256 + 256 = 512.
  ASSERT_EQ(in.fusions.size(), 2u);
  EXPECT_EQ(in.fusions[0].tensor, "t");
  EXPECT_EQ(in.fusions[0].producer, "a");
  EXPECT_EQ(in.fusions[0].consumers, (std::vector<std::string>{"b"}));
  EXPECT_EQ(in.fusions[0].bytes_saved, 512);
  EXPECT_EQ(in.fusions[1].tensor, "u");
  EXPECT_EQ(in.fusions[1].producer, "a");
  EXPECT_EQ(in.fusions[1].consumers, (std::vector<std::string>{"b"}));
  EXPECT_EQ(in.fusions[1].bytes_saved, 512);
}

// An intermediate relabelled into a graph output (an expanded view, no kernel in the framework)
// must reach DRAM: no opportunity, and no "fuse disc -> broadcast" claiming the 256 + 256 bytes
// of a relabelling the unfused model never charged (tests/fixtures/expand_output.ir).
TEST(Insights, ARelabellingIsNoFusionOpportunity) {
  const Insights in = insights_of(lift_file(SOLAR_SOURCE_DIR "/tests/fixtures/expand_output.ir"));
  EXPECT_TRUE(in.fusions.empty());
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
  // 32 / 3.35e12 = 9.55 ps, below H100-SXM's min_kernel_s 0.4 us, so the kernel floor (on by
  // default) sets SOL = 0.4 us at every fidelity (one operation, one kernel: nothing to fuse);
  // the headroom of a 1 us run is 1 / 0.4 = 2.5.
  const Analysis a = analyze(g, hw::load_builtin_device("H100-SXM"), policy());
  const double sol = 0.4e-6;
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

// Issue 44: a program over a batch of 0 rows (y = relu(x * 2 + b), x f32[0, 8]) has no work and
// moves no bytes at every fidelity; its empty intermediates are no fusion opportunity ("fuse
// mul -> add: saves 0 B" was listed).
// The contraction of the same program over K = 0 still writes its [4, 5] output of zeros.
TEST(Insights, AnEmptyProgramHasNoWorkNoBytesAndNoFusionOpportunity) {
  const einsum::Graph g = lift_text(R"(size B = 0
input x : f32[B, 8]
weight b : f32[8]
tensor t : f32[B, 8]
tensor u : f32[B, 8]
output y : f32[B, 8]
kernel mul { for i in 0..B, j in 0..8: t[i, j] = x[i, j] * 2.0 }
kernel add { for i in 0..B, j in 0..8: u[i, j] = t[i, j] + b[j] }
kernel relu { for i in 0..B, j in 0..8: y[i, j] = max(u[i, j], 0.0) }
)");
  const Analysis a = analyze(g, hw::load_builtin_device("H100-SXM"), policy());
  ASSERT_EQ(a.results.size(), 3u);  // unfused, fused, cache-aware
  for (const FidelityResult& r : a.results) {
    EXPECT_EQ(r.bytes, 0) << fidelity_name(r.fidelity);
    EXPECT_EQ(r.compute_s, 0) << fidelity_name(r.fidelity);
  }
  EXPECT_TRUE(find_insights(g, a).fusions.empty());
}

TEST(Insights, AContractionOverAnEmptyRangeWritesItsOutputAtEveryFidelity) {
  const einsum::Graph g = lift_text(R"(input a : f32[4, 0]
input b : f32[0, 5]
output c : f32[4, 5]
kernel mm { for i in 0..4, j in 0..5, k in 0..0: c[i, j] += a[i, k] * b[k, j] }
)");
  const Analysis a = analyze(g, hw::load_builtin_device("H100-SXM"), policy());
  ASSERT_EQ(a.results.size(), 3u);
  for (const FidelityResult& r : a.results) {
    // reads a and b: 0 elements; writes c: 4 * 5 zeros * 4 B = 80 B; no MAC.
    EXPECT_EQ(r.bytes, 80) << fidelity_name(r.fidelity);
    EXPECT_DOUBLE_EQ(r.memory_s, 80 / 3.35e12) << fidelity_name(r.fidelity);
  }
}

}  // namespace
}  // namespace solar::sol
