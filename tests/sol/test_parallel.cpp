// The SOL of a program on several devices (include/solar/sol/parallel.h, docs/parallel.md), on
// hand-written programs and a device of round figures: every rate 1 TFLOP/s, DRAM 1 TB/s, a
// scale-up link of 200 GB/s (100 GB/s each way).
#include "solar/sol/parallel.h"

#include <gtest/gtest.h>

#include <string>
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
  d.link(hw::Link::ScaleUp) = {"test link", hw::Figure{200e9, "test"}};
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
  const ParallelAnalysis p = analyze_parallel(g, round_device(), policy(), parse_parallel("tp=4"),
                                              {Fidelity::Unfused, Fidelity::Fused});
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

}  // namespace
}  // namespace solar::sol
