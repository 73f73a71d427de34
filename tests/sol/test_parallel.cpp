// The SOL of a program on several devices (include/solar/sol/parallel.h, docs/parallel.md), on
// hand-written programs and a device of round figures: every rate 1 TFLOP/s, DRAM 1 TB/s, a
// scale-up link of 200 GB/s (100 GB/s each way).
#include "solar/sol/parallel.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "sol_test_util.h"
#include "solar/util/error.h"

namespace solar::sol {
namespace {

hw::Device round_device() {
  using hw::ComputeUnit;
  using hw::Precision;
  hw::Device d = testing::make_device("round",
                                      {{ComputeUnit::Tensor, Precision::Fp32, 1e12},
                                       {ComputeUnit::Tensor, Precision::Tf32, 1e12},
                                       {ComputeUnit::Vector, Precision::Fp32, 1e12}},
                                      1e12);
  d.link(hw::Link::ScaleUp) = {"test link", hw::Figure{200e9, "test"}, ""};
  return d;
}

// A Megatron-style MLP: 64 tokens of width 128, a hidden layer of 512.
constexpr const char* kMlp = R"(input x : f32[64, 128]
weight w1 : f32[128, 512]
weight w2 : f32[512, 128]
tensor h : f32[64, 512]
tensor a : f32[64, 512]
output y : f32[64, 128]
kernel fc1 { for i in 0..64, j in 0..512, k in 0..128: h[i, j] += x[i, k] * w1[k, j] }
kernel relu { for i in 0..64, j in 0..512: a[i, j] = max(h[i, j], 0.0) }
kernel fc2 { for i in 0..64, j in 0..128, k in 0..512: y[i, j] += a[i, k] * w2[k, j] }
)";

const PrecisionPolicy& policy() { return find_precision_policy(kDefaultPrecisionPolicy); }

// `layout` of `g` on `d`, from its one-device analysis at `fidelities`.
ParallelAnalysis parallel(const einsum::Graph& g, const hw::Device& d, const std::string& layout,
                          const std::vector<Fidelity>& fidelities) {
  return analyze_parallel(g, d, analyze(g, d, policy(), fidelities), parse_parallel(layout));
}

TEST(Parallel, ParsesLayouts) {
  const ParallelLayout l = parse_parallel("tp=2,dp=4,pp=2,mb=8");
  EXPECT_EQ(l.tp, 2);
  EXPECT_EQ(l.dp, 4);
  EXPECT_EQ(l.pp, 2);
  EXPECT_EQ(l.microbatches, 8);
  EXPECT_EQ(l.devices(), 16);
  EXPECT_EQ(parallel_text(l), "tp=2,dp=4,pp=2,mb=8");
  EXPECT_TRUE(parse_parallel("tp=8,sp").sequence_parallel);
  for (const char* bad : {"", "tp", "tp=0", "tp=x", "tq=2", "tp=2,tp=4", "tp=2,"}) {
    EXPECT_THROW(parse_parallel(bad), UserError) << bad;
  }
}

TEST(Parallel, MegatronMlpAllReducesItsOutputOnce) {
  const einsum::Graph g = testing::lift_text(kMlp);
  const ParallelAnalysis p =
      parallel(g, round_device(), "tp=4", {Fidelity::Unfused, Fidelity::Fused});
  // fc1 column-parallel (splits j, w1's output loop), relu follows, fc2 row-parallel (splits k,
  // w2's reduced loop): y is partial, all-reduced once at the end.
  ASSERT_EQ(p.nodes.size(), 3U);
  EXPECT_EQ(p.nodes[0].tp_loop, "j");
  EXPECT_EQ(p.nodes[1].tp_loop, "j");
  EXPECT_EQ(p.nodes[2].tp_loop, "k");
  ASSERT_EQ(p.comms.size(), 1U);
  const Communication& c = p.comms[0];
  EXPECT_EQ(c.kind, Collective::AllReduce);
  EXPECT_EQ(c.tensor, "y");
  EXPECT_EQ(c.buffer_bytes, 64 * 128 * 4);  // 32,768 B
  // Ring all-reduce: 2 (4 - 1) / 4 x 32,768 = 49,152 B per device, at 100 GB/s each way.
  EXPECT_DOUBLE_EQ(c.sent_bytes, 49152);
  EXPECT_DOUBLE_EQ(c.time_s, 49152 / 100e9);  // 491.52 ns

  // Compute per device: fc1 and fc2 are 64 x 512 x 128 = 4,194,304 MACs each, 8,388,608 FLOP,
  // 8.388608 us at 1 TFLOP/s, a quarter each: 2.097152 us; relu 64 x 512 = 32,768 ops, 32.768
  // ns, a quarter: 8.192 ns. Sum 4.202496 us.
  const ParallelResult& fused = p.results[1];
  EXPECT_EQ(fused.fidelity, Fidelity::Fused);
  EXPECT_NEAR(fused.terms.compute_s, 4.202496e-6, 1e-15);
  // Fused bytes per device: x whole (fc1's slice of it is all of it) 32,768, w1 and w2 a quarter
  // each 65,536 + 65,536, y whole 32,768 (fc2 writes partial sums of all of it): 196,608 B.
  EXPECT_EQ(fused.terms.bytes, 196608);
  EXPECT_NEAR(fused.terms.memory_s, 196.608e-9, 1e-18);
  EXPECT_NEAR(fused.terms.comm_s, 491.52e-9, 1e-18);
  EXPECT_NEAR(fused.time_s, 4.202496e-6, 1e-15);  // compute bound
  EXPECT_EQ(parallel_bottleneck(fused.terms), "compute");

  // Unfused: fc1 max(2.097152 us, (32,768 + 65,536 + 32,768) B / 1 TB/s) = 2.097152 us; relu
  // max(8.192 ns, (32,768 + 32,768) B / 1 TB/s = 65.536 ns); fc2 2.097152 us; then the
  // all-reduce, which starts when fc2 ends: 4.259840 + 0.49152 = 4.75136 us.
  const ParallelResult& unfused = p.results[0];
  EXPECT_NEAR(unfused.time_s, 4.75136e-6, 1e-15);
  EXPECT_EQ(unfused.terms.bytes, 131072 + 65536 + 131072);

  // Any layout on 4 devices: max(16.809984 us / 4, fused bytes of one device / 4).
  EXPECT_NEAR(p.floor_s, 4.202496e-6, 1e-15);
}

TEST(Parallel, RoutedExpertsAreShardedAsTheirWeightsAre) {
  // A top-2 mixture of experts' up projection, as the capture lowers a grouped product: the
  // router's two picks gather their experts' weights (take with distinct=2), and the product
  // reads the gathered slices. T = 4 tokens, width H = 64, E = 8 experts of inner width I = 128,
  // f32. Under tp=2 each device holds half of every expert (Megatron shards each expert as it
  // shards a dense layer), so it gathers half of each picked expert: the fused bytes of one
  // device must be about half of one device's, never above the unfused ones (issue 39: Mixtral's
  // tp=2 fused step read the whole picked experts on every device).
  const einsum::Graph g = testing::lift_text(R"(input x : f32[4, 64]
input ids : i64[2]
weight w : f32[8, 64, 128]
tensor sel : f32[2, 64, 128]
output y : f32[2, 4, 128]
sel = take(w, ids, dim=0, distinct=2)
kernel up { for e in 0..2, t in 0..4, n in 0..128, k in 0..64: y[e, t, n] += x[t, k] * sel[e, k, n] }
)");
  const ParallelAnalysis p =
      parallel(g, round_device(), "tp=2", {Fidelity::Unfused, Fidelity::Fused});
  // One device, fused: x 4*64*4 = 1,024 + ids 2*8 = 16 + the two picked experts 2*64*128*4 =
  // 65,536 + y 2*4*128*4 = 4,096 = 70,672 B.
  // Per device under tp=2: x whole 1,024 (every shard of the product reads all of it), ids 16,
  // half of each picked expert 32,768, half of y 2,048 = 35,856 B.
  const ParallelResult& fused = p.results[1];
  EXPECT_EQ(fused.terms.bytes, 1024 + 16 + 32768 + 2048);
  // Unfused per device: the take reads its half of the picked experts 32,768 and ids 16 and
  // writes its half of sel 32,768; the product reads x 1,024 and its half of sel 32,768 and
  // writes its half of y 2,048: 101,392 B.
  const ParallelResult& unfused = p.results[0];
  EXPECT_EQ(unfused.terms.bytes, 32768 + 16 + 32768 + 1024 + 32768 + 2048);
  EXPECT_LE(fused.time_s, unfused.time_s);
}

TEST(Parallel, TheAllReduceGrowsWithTheGroup) {
  const einsum::Graph g = testing::lift_text(kMlp);
  // Ring all-reduce of y's 32,768 B: 2 (T - 1) / T of it per device.
  for (const auto& [tp, sent] :
       std::vector<std::pair<int, double>>{{2, 32768}, {4, 49152}, {8, 57344}}) {
    const ParallelAnalysis p =
        parallel(g, round_device(), "tp=" + std::to_string(tp), {Fidelity::Fused});
    ASSERT_EQ(p.comms.size(), 1U) << tp;
    EXPECT_EQ(p.comms[0].kind, Collective::AllReduce);
    EXPECT_DOUBLE_EQ(p.comms[0].sent_bytes, sent) << tp;
    // 16.809984 us of compute on one device, shared by tp.
    EXPECT_NEAR(p.results[0].terms.compute_s, 16.809984e-6 / tp, 1e-15) << tp;
  }
}

TEST(Parallel, SwitchesThatReduceInTheNetworkSendTheBufferOnce) {
  const einsum::Graph g = testing::lift_text(kMlp);
  hw::Device d = round_device();
  d.link(hw::Link::ScaleUp).in_network_reduction = "test";
  // Each device sends y's 32,768 B once to the switch and receives the sum, below the ring's
  // 2 x 3/4 x 32,768 = 49,152 B; `ring` asks for the ring bound anyway.
  const ParallelAnalysis p = parallel(g, d, "tp=4", {Fidelity::Fused});
  ASSERT_EQ(p.comms.size(), 1U);
  EXPECT_TRUE(p.comms[0].in_network);
  EXPECT_DOUBLE_EQ(p.comms[0].sent_bytes, 32768);
  const ParallelAnalysis ring = parallel(g, d, "tp=4,ring", {Fidelity::Fused});
  EXPECT_FALSE(ring.comms[0].in_network);
  EXPECT_DOUBLE_EQ(ring.comms[0].sent_bytes, 49152);
}

// A training step of y = x @ w, loss sum(y), SGD: x [64, 512] is a batch of 64 rows.
constexpr const char* kStep = R"(input x : f32[64, 512]
weight w : f32[512, 256]
tensor y : f32[64, 256]
output loss : f32[]
tensor dy : f32[64, 256]
output dw : f32[512, 256]
output w_new : f32[512, 256]
kernel fwd { for i in 0..64, j in 0..256, k in 0..512: y[i, j] += x[i, k] * w[k, j] }
kernel sum { for i in 0..64, j in 0..256: loss[] += y[i, j] }
kernel seed { for i in 0..64, j in 0..256: dy[i, j] = y[i, j] * 2.0 }
kernel bwd { for k in 0..512, j in 0..256, i in 0..64: dw[k, j] += x[i, k] * dy[i, j] }
kernel sgd { for k in 0..512, j in 0..256: w_new[k, j] = w[k, j] - dw[k, j] * 0.1 }
)";

TEST(Parallel, DataParallelAllReducesTheGradient) {
  const einsum::Graph g = testing::lift_text(kStep);
  const ParallelAnalysis p = parallel(g, round_device(), "dp=8", {Fidelity::Fused});
  // Every node of the batch splits its rows i; the update reads the whole gradient.
  EXPECT_EQ(p.nodes[0].dp_loop, "i");
  EXPECT_EQ(p.nodes[3].dp_loop, "i");  // dW = x^T dY sums over the batch: partial
  EXPECT_EQ(p.nodes[4].dp_loop, "");   // every replica updates all of w
  ASSERT_EQ(p.comms.size(), 2U);
  // dW: 512 x 256 x 4 = 524,288 B, all-reduced before the update: 2 x 7/8 x 524,288 = 917,504 B
  // per device, 9.17504 us at 100 GB/s.
  EXPECT_EQ(p.comms[0].kind, Collective::AllReduce);
  EXPECT_EQ(p.comms[0].tensor, "dw");
  EXPECT_EQ(p.comms[0].buffer_bytes, 524288);
  EXPECT_DOUBLE_EQ(p.comms[0].time_s, 917504 / 100e9);
  // The loss, a sum over the batch: 4 B all-reduced, 2 x 7/8 x 4 = 7 B.
  EXPECT_EQ(p.comms[1].tensor, "loss");
  EXPECT_DOUBLE_EQ(p.comms[1].sent_bytes, 7);
  // Compute per device: fwd and bwd 64 x 256 x 512 = 8,388,608 MACs each, 16.777216 us, an
  // eighth each 2.097152 us; sum and seed 16,384 ops each, an eighth 2.048 ns; the update
  // 131,072 x 2 ops (a multiply, a subtract) = 262.144 ns on every replica: 4.460544 us.
  const double compute = 2 * 2.097152e-6 + 2 * 2.048e-9 + 262.144e-9;
  EXPECT_NEAR(p.results[0].terms.compute_s, compute, 1e-15);
  // The all-reduces are the largest term: 9.17504 us + 7 B / 100 GB/s.
  EXPECT_NEAR(p.results[0].terms.comm_s, 9.17504e-6 + 0.07e-9, 1e-15);
  EXPECT_EQ(parallel_bottleneck(p.results[0].terms), "interconnect");
  EXPECT_NEAR(p.results[0].time_s, 9.17511e-6, 1e-15);
  // The link at which they stop being the wall: 917,511 B per 4.460544 us, 205.7 GB/s each way.
  EXPECT_NEAR(p.link_needed_bytes_per_s, 917511 / compute, 1);
}

// A reference fp8 GEMM (tests/fixtures/fp8_dequant_gemm.ir's program): fp8 operands
// dequantised to f32 by per-row and per-column scales, multiplied in f32.
constexpr const char* kFp8Gemm = R"(input a : f8e4m3[256, 512]
input sa : f32[256]
input b : f8e4m3[512, 128]
input sb : f32[128]
tensor ad : f32[256, 512]
tensor bd : f32[512, 128]
output c : f32[256, 128]
kernel deq_a { for i in 0..256, k in 0..512: ad[i, k] = f32(a[i, k]) * sa[i] }
kernel deq_b { for k in 0..512, j in 0..128: bd[k, j] = f32(b[k, j]) * sb[j] }
kernel gemm { for i in 0..256, j in 0..128, k in 0..512: c[i, j] += ad[i, k] * bd[k, j] }
)";

TEST(Parallel, FusedComputePricesProductsAtTheirOriginPrecision) {
  // The per-device fused fidelity and the floor take the one-device fused compute (products of
  // upcast operands at their origin precision, docs/precision.md), not the unfused one's.
  hw::Device d = testing::make_device("fp8",
                                      {{hw::ComputeUnit::Vector, hw::Precision::Fp32, 1e13},
                                       {hw::ComputeUnit::Tensor, hw::Precision::Fp8, 1e15}},
                                      1e15);
  d.link(hw::Link::ScaleUp) = {"test link", hw::Figure{200e9, "test"}, ""};
  const einsum::Graph g = testing::lift_text(kFp8Gemm);
  const ParallelAnalysis p = parallel(g, d, "dp=2", {Fidelity::Unfused, Fidelity::Fused});
  // The gemm: 256 x 128 x 512 = 16,777,216 MACs; at the fp8 tensor rate 33,554,432 / 1e15 =
  // 33.554432 ns, at the f32 vector rate 33,554,432 / 1e13 = 3.3554432 us. The scale
  // multiplies: deq_a 256 x 512 = 131,072 ops, deq_b 512 x 128 = 65,536 ops, at 1e13: 13.1072
  // and 6.5536 ns. One-device fused compute 33.554432 + 19.6608 = 53.215232 ns; bytes a 131,072
  // + sa 1,024 + b 65,536 + sb 512 + c 131,072 = 329,216 B = 0.329216 ns at 1e15 B/s.
  // The floor of any layout on 2 devices: max(53.215232 / 2, 0.329216 / 2) = 26.607616 ns (the
  // f32 rate would give (3.3554432 us + 19.6608 ns) / 2 = 1.687552 us).
  EXPECT_NEAR(p.floor_s, 26.607616e-9, 1e-18);
  // dp splits the rows i of deq_a and of the gemm; deq_b (no i) runs whole on each replica:
  // fused compute per device 13.1072 / 2 + 6.5536 + 33.554432 / 2 = 29.884416 ns.
  EXPECT_EQ(p.nodes[0].dp_loop, "i");
  EXPECT_EQ(p.nodes[1].dp_loop, "");
  EXPECT_EQ(p.nodes[2].dp_loop, "i");
  ASSERT_EQ(p.results.size(), 2U);
  EXPECT_EQ(p.results[1].fidelity, Fidelity::Fused);
  EXPECT_NEAR(p.results[1].terms.compute_s, 29.884416e-9, 1e-18);
  // Unfused keeps eager's f32 rate: 6.5536 + 6.5536 + 3.3554432 us / 2 = 1.6908288 us.
  EXPECT_EQ(p.results[0].fidelity, Fidelity::Unfused);
  EXPECT_NEAR(p.results[0].terms.compute_s, 1.6908288e-6, 1e-15);
}

// Four layers of 64 x 128 by 128 x 128.
constexpr const char* kLayers = R"(input x : f32[64, 128]
weight w1 : f32[128, 128]
weight w2 : f32[128, 128]
weight w3 : f32[128, 128]
weight w4 : f32[128, 128]
tensor a1 : f32[64, 128]
tensor a2 : f32[64, 128]
tensor a3 : f32[64, 128]
output y : f32[64, 128]
kernel l1 { for i in 0..64, j in 0..128, k in 0..128: a1[i, j] += x[i, k] * w1[k, j] }
kernel l2 { for i in 0..64, j in 0..128, k in 0..128: a2[i, j] += a1[i, k] * w2[k, j] }
kernel l3 { for i in 0..64, j in 0..128, k in 0..128: a3[i, j] += a2[i, k] * w3[k, j] }
kernel l4 { for i in 0..64, j in 0..128, k in 0..128: y[i, j] += a3[i, k] * w4[k, j] }
)";

TEST(Parallel, FourStagePipeline) {
  const einsum::Graph g = testing::lift_text(kLayers);
  // Each layer: 64 x 128 x 128 = 1,048,576 MACs, 2.097152 us; its input, weight and output
  // 32,768 + 65,536 + 32,768 B = 131.072 ns: a stage is compute bound at 2.097152 us.
  const ParallelAnalysis one = parallel(g, round_device(), "pp=4", {Fidelity::Fused});
  ASSERT_EQ(one.stages.size(), 4U);
  for (size_t s = 0; s < 4; ++s) {
    EXPECT_EQ(one.stages[s].first, s);
    EXPECT_NEAR(one.stages[s].terms[0].time_s, 2.097152e-6, 1e-15);
    EXPECT_EQ(one.stages[s].terms[0].bytes, 131072);
    // Each cut sends the 32,768 B activation: 327.68 ns at 100 GB/s.
    EXPECT_EQ(one.stages[s].send_bytes, s < 3 ? 32768 : 0);
  }
  // One microbatch runs the stages one after another: 4 x 2.097152 us.
  EXPECT_NEAR(one.results[0].time_s, 8.388608e-6, 1e-15);
  // Four: the first goes through every stage (4 x 2.097152 / 4 = 2.097152 us) and each of the
  // other three follows one stage later (0.524288 us): 3.670016 us.
  const ParallelAnalysis four = parallel(g, round_device(), "pp=4,mb=4", {Fidelity::Fused});
  EXPECT_NEAR(four.results[0].time_s, 3.670016e-6, 1e-15);
  EXPECT_EQ(four.comms.size(), 3U);  // three sends
  EXPECT_EQ(four.comms[0].kind, Collective::PointToPoint);
}

TEST(Parallel, UserErrors) {
  const einsum::Graph g = testing::lift_text(kLayers);
  hw::Device no_link = round_device();
  no_link.link(hw::Link::ScaleUp) = {};
  EXPECT_THROW(parallel(g, no_link, "tp=2", {Fidelity::Fused}), UserError);
  // One device needs no link.
  EXPECT_NO_THROW(parallel(g, no_link, "tp=1", {Fidelity::Fused}));
  EXPECT_THROW(parallel(g, round_device(), "pp=5", {Fidelity::Fused}), UserError);
}

}  // namespace
}  // namespace solar::sol
