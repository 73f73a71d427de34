// Minimal bytes and origin precision (issue 29, items 7 and 8) on IR fixtures of our own
// (tests/fixtures/dead_code.ir, expand_output.ir, fp8_dequant_gemm.ir), each number worked out
// by hand. Device: a made-up one with DRAM 1e12 B/s, fp32 vector 1e13 FLOP/s and fp8 tensor
// 1e15 FLOP/s, so that the arithmetic stays round.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "sol_test_util.h"
#include "solar/einsum/graph.h"
#include "solar/hw/device.h"
#include "solar/sol/analysis.h"
#include "solar/util/file.h"

namespace solar::sol {
namespace {

using testing::lift_text;
using testing::make_device;

const PrecisionPolicy& policy() { return find_precision_policy(kDefaultPrecisionPolicy); }

hw::Device round_device() {
  hw::Device d = make_device("round",
                             {{hw::ComputeUnit::Vector, hw::Precision::Fp32, 1e13},
                              {hw::ComputeUnit::Tensor, hw::Precision::Fp8, 1e15}},
                             1e12);
  d.level(hw::MemoryLevel::L2).capacity_bytes = hw::Figure{50e6, "test"};
  return d;
}

einsum::Graph fixture(const std::string& name) {
  const std::string path =
      (std::filesystem::path(SOLAR_SOURCE_DIR) / "tests/fixtures" / name).string();
  return lift_text(read_text_file(path), name);
}

TEST(DeadCode, ValuesThatReachNoOutputAreRemovedBeforeCounting) {
  const einsum::Graph g = fixture("dead_code.ir");
  // `dead` writes t, which nothing reads: removed. Only `live` is left.
  ASSERT_EQ(g.nodes.size(), 1U);
  EXPECT_EQ(g.nodes[0].name, "live");
  ASSERT_EQ(g.dead_nodes.size(), 1U);
  EXPECT_EQ(g.dead_nodes[0], "dead");
  // w (4096 B) is read only by the dead kernel: never read. x 1024 x 4 = 4096 B read, y 4096 B
  // written: 8192 B at every fidelity (with `dead`: fused 12,288, unfused 8192 + 12,288).
  EXPECT_EQ(einsum::touched_elements(g, "w"), 0);
  const Analysis a = analyze(g, round_device(), policy());
  EXPECT_EQ(a.result(Fidelity::Unfused).bytes, 8192);
  EXPECT_EQ(a.result(Fidelity::Fused).bytes, 8192);
  EXPECT_EQ(a.result(Fidelity::Cache).bytes, 8192);
  // 1024 adds at 1e13: 102.4 ps of compute; 8192 B / 1e12 = 8.192 ns.
  EXPECT_DOUBLE_EQ(a.result(Fidelity::Fused).time_s, 8192 / 1e12);
  // The text form lists the removed node.
  EXPECT_NE(einsum::print_graph(g).find("dead code (removed, values reach no output): dead"),
            std::string::npos);
}

TEST(DeadCode, AChainIsDeadBackToItsFirstNode) {
  // t1 = x * 2, t2 = t1 + 1 (nothing reads t2): both dead; y = x - 1 live.
  const einsum::Graph g = lift_text(R"(size N = 8
input x : f32[N]
tensor t1 : f32[N]
tensor t2 : f32[N]
output y : f32[N]
kernel a {
  for i in 0..N:
    t1[i] = x[i] * 2.0
}
kernel b {
  for i in 0..N:
    t2[i] = t1[i] + 1.0
}
kernel c {
  for i in 0..N:
    y[i] = x[i] - 1.0
}
)");
  ASSERT_EQ(g.nodes.size(), 1U);
  EXPECT_EQ(g.nodes[0].name, "c");
  EXPECT_EQ(g.dead_nodes, (std::vector<std::string>{"a", "b"}));
}

TEST(ExpandedOutput, CostsItsBaseBytes) {
  const einsum::Graph g = fixture("expand_output.ir");
  // Fused: dt 2*8*4 = 64 f32 = 256 B, A 4 f32 = 16 B, and the output: a stride-0 view of da,
  // its 64 elements = 256 B (not 2*8*4*16*8 = 8192 elements = 32,768 B). 528 B.
  EXPECT_EQ(einsum::touched_elements(g, "y"), 64);
  const Analysis a = analyze(g, round_device(), policy());
  EXPECT_EQ(a.result(Fidelity::Fused).bytes, 528);
  // Cache-aware: the same 528 B (the L2 holds everything).
  EXPECT_EQ(a.result(Fidelity::Cache).bytes, 528);
  // Unfused: disc reads 272 B and writes da, 256 B (read by the broadcast after it) = 528 B;
  // the broadcast of an intermediate into an output is a view (a relabelling): 0 B.
  EXPECT_EQ(a.result(Fidelity::Unfused).bytes, 528);
  ASSERT_EQ(g.nodes.size(), 2U);
  EXPECT_TRUE(g.nodes[1].relabel);
}

TEST(ExpandedOutput, OfAnInputIsACopyOfTheBase) {
  // y = broadcast(x) with x an input [4] and y [3, 4]: the input's layout is given, so the
  // movement reads x (16 B) and writes y's storage, a stride-0 view: 4 elements (16 B): 32 B.
  const einsum::Graph g = lift_text(R"(input x : f32[4]
output y : f32[3, 4]
y = broadcast(x)
)");
  ASSERT_EQ(g.nodes.size(), 1U);
  EXPECT_FALSE(g.nodes[0].relabel);
  EXPECT_EQ(g.nodes[0].bytes_read(), 16);
  EXPECT_EQ(g.nodes[0].bytes_written(), 16);
}

TEST(OneKernelFloor, FusedAndCacheNeverBelowOneKernel) {
  // dead_code.ir: fused 8192 B / 1e12 = 8.192 ns. With min_kernel_s = 1 us and the kernel floor
  // on: fused = cache-aware = max(8.192 ns, 1 us) = 1 us; unfused: one op, max(8.192 ns, 1 us).
  hw::Device d = round_device();
  d.min_kernel_s = hw::Figure{1e-6, "test"};
  AnalysisOptions on;
  on.kernel_floor = true;
  const einsum::Graph g = fixture("dead_code.ir");
  const Analysis a = analyze(g, d, policy(), implemented_fidelities(), on);
  EXPECT_DOUBLE_EQ(a.program_floor_s, 1e-6);
  EXPECT_DOUBLE_EQ(a.result(Fidelity::Fused).time_s, 1e-6);
  EXPECT_TRUE(a.result(Fidelity::Fused).floored);
  EXPECT_DOUBLE_EQ(a.result(Fidelity::Cache).time_s, 1e-6);
  EXPECT_DOUBLE_EQ(a.result(Fidelity::Unfused).time_s, 1e-6);
  EXPECT_FALSE(a.result(Fidelity::Unfused).floored);  // floored per op instead
  // A time above the floor keeps its value: min_kernel_s = 1 ns < 8.192 ns.
  d.min_kernel_s = hw::Figure{1e-9, "test"};
  const Analysis b = analyze(g, d, policy(), implemented_fidelities(), on);
  EXPECT_FALSE(b.result(Fidelity::Fused).floored);
  EXPECT_DOUBLE_EQ(b.result(Fidelity::Fused).time_s, 8192 / 1e12);
  // No figure: no floor (none is invented).
  d.min_kernel_s.reset();
  const Analysis c = analyze(g, d, policy(), implemented_fidelities(), on);
  EXPECT_DOUBLE_EQ(c.program_floor_s, 0);
  EXPECT_DOUBLE_EQ(c.result(Fidelity::Fused).time_s, 8192 / 1e12);
}

TEST(OriginPrecision, ADequantisedFp8GemmIsPricedAtFp8WhenFused) {
  const einsum::Graph g = fixture("fp8_dequant_gemm.ir");
  const einsum::Node& gemm = g.nodes.at(2);
  ASSERT_EQ(gemm.name, "gemm");
  EXPECT_EQ(*gemm.mac_lhs_dtype, ir::DType::F32);
  EXPECT_EQ(*gemm.mac_lhs_origin, ir::DType::F8E4M3);
  EXPECT_EQ(*gemm.mac_rhs_origin, ir::DType::F8E4M3);
  const Analysis a = analyze(g, round_device(), policy());
  // 256 x 128 x 512 = 16,777,216 MACs. Unfused: the fp32 vector rate, 2 x 16,777,216 / 1e13
  // = 3.3554 us. Fused: the fp8 tensor rate, 33,554,432 / 1e15 = 33.554 ns.
  const NodeCost& c = a.nodes.at(2);
  EXPECT_DOUBLE_EQ(c.compute_s, 33554432 / 1e13);
  ASSERT_TRUE(c.origin_mac_rate.has_value());
  EXPECT_EQ(c.origin_mac_rate->label, "fp8 tensor");
  EXPECT_DOUBLE_EQ(c.fused_compute_s, 33554432 / 1e15);
  // Fused compute: the gemm 33.554 ns + deq_a 256*512 = 131,072 multiplies / 1e13 = 13.107 ns
  // + deq_b 512*128 = 65,536 / 1e13 = 6.5536 ns = 53.215 ns. Bytes: a 131,072 B + b 65,536 B
  // (fp8) + sa 1024 + sb 512 + c 256*128*4 = 131,072: 329,216 B = 329.216 ns: memory-bound.
  EXPECT_NEAR(a.result(Fidelity::Fused).compute_s, 33554432 / 1e15 + 196608 / 1e13, 1e-18);
  EXPECT_EQ(a.result(Fidelity::Fused).bytes, 329216);
  EXPECT_DOUBLE_EQ(a.result(Fidelity::Fused).time_s, 329216 / 1e12);
  // Unfused keeps what eager runs: the gemm op alone is compute-bound at 3.3554 us.
  EXPECT_DOUBLE_EQ(a.ops.at(2).compute_s, 33554432 / 1e13);
}

TEST(OriginPrecision, AnElementwiseProductIsNotAScale) {
  // ad = f32(a) * m with m a full [M, K] f32 tensor (not a scale: as many loops as a): ad's
  // values are not upcasts of fp8, so the product stays at the fp32 rate.
  const einsum::Graph g = lift_text(R"(size M = 4
size K = 8
size N = 2
input a : f8e4m3[M, K]
input m : f32[M, K]
input b : f8e4m3[K, N]
tensor ad : f32[M, K]
output c : f32[M, N]
kernel deq {
  for i in 0..M, k in 0..K:
    ad[i, k] = f32(a[i, k]) * m[i, k]
}
kernel gemm {
  for i in 0..M, j in 0..N, k in 0..K:
    c[i, j] += ad[i, k] * f32(b[k, j])
}
)");
  // ad's origin is its own f32; b's is f8e4m3: f32 x f8 is an f32 contraction, no faster.
  EXPECT_EQ(*g.nodes.at(1).mac_lhs_origin, ir::DType::F32);
  EXPECT_EQ(*g.nodes.at(1).mac_rhs_origin, ir::DType::F8E4M3);
  const Analysis a = analyze(g, round_device(), policy());
  EXPECT_FALSE(a.nodes.at(1).origin_mac_rate.has_value());
  EXPECT_DOUBLE_EQ(a.nodes.at(1).fused_compute_s, a.nodes.at(1).compute_s);
}

TEST(OriginPrecision, ACastToANarrowerDtypeIsItsOrigin) {
  // Fake quantisation: f32(bf16(x)) has bf16 values; times an fp8 upcast: bf16 x f8 is a bf16
  // contraction (the wider float wins), priced at a bf16 tensor rate the device gets: 1e14.
  hw::Device d = round_device();
  d.peak(hw::ComputeUnit::Tensor, hw::Precision::Bf16) = hw::Figure{1e14, "test"};
  const einsum::Graph g = lift_text(R"(size M = 4
size K = 8
size N = 2
input x : f32[M, K]
input b : f8e4m3[K, N]
output c : f32[M, N]
kernel gemm {
  for i in 0..M, j in 0..N, k in 0..K:
    c[i, j] += f32(bf16(x[i, k])) * f32(b[k, j])
}
)");
  EXPECT_EQ(*g.nodes.at(0).mac_lhs_origin, ir::DType::BF16);
  EXPECT_EQ(*g.nodes.at(0).mac_rhs_origin, ir::DType::F8E4M3);
  const Analysis a = analyze(g, d, policy());
  // 4 x 2 x 8 = 64 MACs: 128 / 1e14 = 1.28 ps at bf16 (12.8 ps at fp32 vector).
  EXPECT_EQ(a.nodes.at(0).origin_mac_rate->label, "bf16 tensor");
  EXPECT_DOUBLE_EQ(a.nodes.at(0).fused_compute_s, 128 / 1e14);
}

}  // namespace
}  // namespace solar::sol
