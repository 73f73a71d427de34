// The cache state and the kernel floor (include/solar/sol/analysis.h, docs/cache-state.md), each
// checked against numbers worked out by hand on tests/fixtures/round-gpu.yaml: DRAM 1e12 B/s, L2
// 1e6 B at 4e12 B/s, fp32 vector 1e15 FLOP/s, min_kernel_s 5e-6 s.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "sol_test_util.h"
#include "solar/hw/device.h"
#include "solar/sol/analysis.h"
#include "solar/sol/curve.h"
#include "solar/util/error.h"
#include "solar/util/file.h"

namespace solar::sol {
namespace {

using testing::lift_text;

const PrecisionPolicy& policy() { return find_precision_policy(kDefaultPrecisionPolicy); }

hw::Device round_gpu() {
  return hw::load_device_file(
      (std::filesystem::path(SOLAR_SOURCE_DIR) / "tests/fixtures/round-gpu.yaml").string());
}

// y = x + 1 over N f32 elements: one op, bytes_io = 8N (read x, write y), N other ops.
std::string add_one(int64_t n) {
  return "size N = " + std::to_string(n) +
         "\ninput x : f32[N]\noutput y : f32[N]\n"
         "kernel add {\n  for i in 0..N:\n    y[i] = x[i] + 1.0\n}\n";
}

AnalysisOptions state(CacheState s, bool floor = false) {
  AnalysisOptions o;
  o.cache_state = s;
  o.kernel_floor = floor;
  return o;
}

TEST(CacheState, Names) {
  EXPECT_EQ(cache_state_name(CacheState::Cold), "cold");
  EXPECT_EQ(cache_state_name(CacheState::Warm), "warm");
  EXPECT_EQ(parse_cache_state("warm"), CacheState::Warm);
  EXPECT_EQ(parse_cache_state("cold"), CacheState::Cold);
  try {
    parse_cache_state("hot");
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()), "unknown cache state 'hot' (valid: cold, warm)");
  }
}

TEST(CacheState, MemoryModelFormula) {
  const MemoryModel cold = memory_model(round_gpu(), CacheState::Cold);
  // Cold: every byte at 1e12 B/s. 2e6 B -> 2 us.
  EXPECT_EQ(cold.warm_bytes(2'000'000), 0);
  EXPECT_DOUBLE_EQ(cold.time_s(2'000'000), 2e-6);
  const MemoryModel warm = memory_model(round_gpu(), CacheState::Warm);
  EXPECT_EQ(warm.llc_capacity_bytes, 1'000'000);
  EXPECT_DOUBLE_EQ(warm.llc_bandwidth, 4e12);
  // Warm, 400 kB (fits): 4e5 / 4e12 = 100 ns.
  EXPECT_EQ(warm.warm_bytes(400'000), 400'000);
  EXPECT_DOUBLE_EQ(warm.time_s(400'000), 100e-9);
  // Warm, 2 MB (half fits): 1e6 / 4e12 + 1e6 / 1e12 = 250 ns + 1 us = 1.25 us.
  EXPECT_EQ(warm.warm_bytes(2'000'000), 1'000'000);
  EXPECT_DOUBLE_EQ(warm.time_s(2'000'000), 1.25e-6);
}

TEST(CacheState, WarmFusedWhenEverythingFits) {
  // N = 65536: x and y are 262,144 B each, bytes_io = 524,288 B, under the 1 MB L2.
  // Cold: 524,288 / 1e12 = 524.288 ns. Warm: 524,288 / 4e12 = 131.072 ns.
  // Compute: 65,536 adds / 1e15 = 65.536 ps, far below: memory bound in both states.
  const einsum::Graph g = lift_text(add_one(65536));
  // (state() turns the kernel floor off: round-gpu's 5 us would set every time here.)
  const Analysis cold = analyze(g, round_gpu(), policy(), {Fidelity::Unfused, Fidelity::Fused},
                                state(CacheState::Cold));
  const Analysis warm = analyze(g, round_gpu(), policy(), {Fidelity::Unfused, Fidelity::Fused},
                                state(CacheState::Warm));
  EXPECT_EQ(cold.result(Fidelity::Fused).bytes, 524288);
  EXPECT_DOUBLE_EQ(cold.result(Fidelity::Fused).time_s, 524.288e-9);
  EXPECT_EQ(warm.result(Fidelity::Fused).bytes, 524288);
  EXPECT_EQ(warm.result(Fidelity::Fused).warm_bytes, 524288);
  EXPECT_DOUBLE_EQ(warm.result(Fidelity::Fused).time_s, 131.072e-9);
  // One op reading x and writing y: the unfused bound is the same 131.072 ns.
  EXPECT_DOUBLE_EQ(warm.result(Fidelity::Unfused).time_s, 131.072e-9);
  EXPECT_DOUBLE_EQ(warm.result(Fidelity::Fused).compute_s, 65536 / 1e15);
}

TEST(CacheState, WarmFusedWhenInputsOnlyPartlyFit) {
  // N = 262144: x and y are 1,048,576 B each, bytes_io = 2,097,152 B; the L2 holds 1e6 of them.
  // Warm: 1e6 / 4e12 + (2,097,152 - 1e6) / 1e12 = 250 ns + 1,097.152 ns = 1,347.152 ns.
  // Cold: 2,097,152 / 1e12 = 2,097.152 ns.
  const einsum::Graph g = lift_text(add_one(262144));
  const Analysis cold =
      analyze(g, round_gpu(), policy(), {Fidelity::Fused}, state(CacheState::Cold));
  const Analysis warm =
      analyze(g, round_gpu(), policy(), {Fidelity::Fused}, state(CacheState::Warm));
  EXPECT_DOUBLE_EQ(cold.result(Fidelity::Fused).time_s, 2097.152e-9);
  EXPECT_EQ(warm.result(Fidelity::Fused).warm_bytes, 1'000'000);
  EXPECT_NEAR(warm.result(Fidelity::Fused).time_s, 1347.152e-9, 1e-15);
}

TEST(CacheState, WarmCacheAwareIsNeverBelowFusedAndNeverAboveCold) {
  // A 256 x 256 x 256 f32 GEMM: 786,432 B of inputs and output, under the 1 MB L2 (cache
  // capacity: the L2's 1 MB). Laws: fused <= cache-aware in each state; warm <= cold everywhere.
  const einsum::Graph g = testing::lift_gemm("f32", 256, 256, 256);
  const Analysis cold =
      analyze(g, round_gpu(), policy(), implemented_fidelities(), state(CacheState::Cold));
  const Analysis warm =
      analyze(g, round_gpu(), policy(), implemented_fidelities(), state(CacheState::Warm));
  for (const Fidelity f : implemented_fidelities()) {
    EXPECT_LE(warm.result(f).time_s, cold.result(f).time_s) << fidelity_name(f);
  }
  EXPECT_LE(warm.result(Fidelity::Fused).time_s, warm.result(Fidelity::Cache).time_s);
}

TEST(CacheState, ColdIsTheDefaultAndTheKernelFloorIsOn) {
  // The default options are cold: every byte at the DRAM bandwidth, 524,288 B -> 524.288 ns of
  // memory at every fidelity of this one-op graph, no LLC bytes. The kernel floor is on by
  // default: each time is max(524.288 ns, round-gpu's 5 us) = 5 us; off, 524.288 ns.
  const einsum::Graph g = lift_text(add_one(65536));
  const Analysis a = analyze(g, round_gpu(), policy());
  const Analysis off =
      analyze(g, round_gpu(), policy(), implemented_fidelities(), state(CacheState::Cold, false));
  EXPECT_EQ(a.memory.state, CacheState::Cold);
  EXPECT_TRUE(a.kernel_floor);
  for (const FidelityResult& r : a.results) {
    EXPECT_EQ(r.warm_bytes, 0);
    EXPECT_DOUBLE_EQ(r.memory_s, static_cast<double>(r.bytes) / 1e12);
    EXPECT_DOUBLE_EQ(r.time_s, 5e-6) << fidelity_name(r.fidelity);
  }
  EXPECT_TRUE(a.ops.at(0).floored);
  EXPECT_DOUBLE_EQ(off.result(Fidelity::Fused).time_s, 524.288e-9);
  EXPECT_FALSE(off.kernel_floor);
  EXPECT_FALSE(off.ops.at(0).floored);
  EXPECT_DOUBLE_EQ(off.program_floor_s, 0);
}

TEST(CacheState, WarmWithoutAnL2BandwidthCannotBeComputed) {
  hw::Device d = round_gpu();
  d.level(hw::MemoryLevel::L2).bandwidth_bytes_per_s.reset();
  const einsum::Graph g = lift_text(add_one(16));
  try {
    analyze(g, d, policy(), {Fidelity::Fused}, state(CacheState::Warm));
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()),
              "--cache-state warm: the warm bound cannot be computed for round-gpu: its device "
              "file has no L2 bandwidth (l2_bandwidth_bytes_per_s); give one with --set");
  }
  // --set adds it back: the override key of the L2 bandwidth.
  hw::apply_override(d, "l2_bandwidth_bytes_per_s=4e12");
  EXPECT_NO_THROW(analyze(g, d, policy(), {Fidelity::Fused}, state(CacheState::Warm)));
}

TEST(CacheState, AnLlcSlowerThanDramIsTakenAtDramBandwidth) {
  // A device file with an L2 slower than its DRAM: the warm bytes go at DRAM's 1e12 B/s, never
  // slower than cold. 524,288 B -> 524.288 ns either way.
  hw::Device d = round_gpu();
  hw::apply_override(d, "l2_bandwidth_bytes_per_s=1e11");
  const Analysis warm =
      analyze(lift_text(add_one(65536)), d, policy(), {Fidelity::Fused}, state(CacheState::Warm));
  EXPECT_DOUBLE_EQ(warm.result(Fidelity::Fused).time_s, 524.288e-9);
}

// Three tiny framework operations in a chain, 16 f32 elements each: every op reads 64 B and
// writes 64 B (tests/fixtures/tiny_chain.ir, which the Python tests read too).
const std::string kTinyChain = read_text_file(SOLAR_SOURCE_DIR "/tests/fixtures/tiny_chain.ir");

TEST(KernelFloor, ChainOfTinyOps) {
  // Without the floor: each op moves 128 B, 128 B / 1e12 = 128 ps; unfused = 3 x 128 ps = 384 ps.
  // With it: each op takes max(128 ps, 5 us) = 5 us; unfused = 3 x 5 us = 15 us. The fused and
  // cache-aware bounds take it once, for the whole program (one kernel at least): fused =
  // (64 + 64) B / 1e12 = 128 ps off, max(128 ps, 5 us) = 5 us on (issue 29: before, the
  // fused and cache-aware times stayed at 128 ps with the floor on).
  const einsum::Graph g = lift_text(kTinyChain);
  const Analysis off =
      analyze(g, round_gpu(), policy(), implemented_fidelities(), state(CacheState::Cold, false));
  const Analysis on =
      analyze(g, round_gpu(), policy(), implemented_fidelities(), state(CacheState::Cold, true));
  EXPECT_NEAR(off.result(Fidelity::Unfused).time_s, 384e-12, 1e-18);
  EXPECT_DOUBLE_EQ(on.kernel_floor_s, 5e-6);
  ASSERT_EQ(on.ops.size(), 3U);
  for (const OpCost& c : on.ops) {
    EXPECT_TRUE(c.floored) << c.name;
    EXPECT_DOUBLE_EQ(c.time_s, 5e-6);
  }
  EXPECT_DOUBLE_EQ(on.result(Fidelity::Unfused).time_s, 15e-6);
  EXPECT_DOUBLE_EQ(off.result(Fidelity::Fused).time_s, 128e-12);
  EXPECT_FALSE(off.result(Fidelity::Fused).floored);
  EXPECT_DOUBLE_EQ(off.program_floor_s, 0);
  EXPECT_DOUBLE_EQ(on.program_floor_s, 5e-6);
  EXPECT_DOUBLE_EQ(on.result(Fidelity::Fused).time_s, 5e-6);
  EXPECT_TRUE(on.result(Fidelity::Fused).floored);
  // Cache-aware: 128 B of traffic as well (the L2 holds the whole chain), 128 ps off, 5 us on.
  EXPECT_DOUBLE_EQ(off.result(Fidelity::Cache).time_s, 128e-12);
  EXPECT_DOUBLE_EQ(on.result(Fidelity::Cache).time_s, 5e-6);
  EXPECT_TRUE(on.result(Fidelity::Cache).floored);
  EXPECT_DOUBLE_EQ(on.cache_sequential_s, 5e-6);
}

TEST(KernelFloor, AnOpLongerThanTheFloorKeepsItsTime) {
  // N = 1,048,576: 8 MiB of bytes, 8,388,608 / 1e12 = 8.389 us > 5 us: not floored.
  const Analysis on = analyze(lift_text(add_one(1048576)), round_gpu(), policy(),
                              {Fidelity::Unfused}, state(CacheState::Cold, true));
  EXPECT_FALSE(on.ops.at(0).floored);
  EXPECT_DOUBLE_EQ(on.result(Fidelity::Unfused).time_s, 8388608 / 1e12);
}

TEST(KernelFloor, ADeviceWithoutMinKernelHasNoFloorAndSaysWhy) {
  hw::Device d = round_gpu();
  d.min_kernel_s.reset();
  const Analysis on = analyze(lift_text(kTinyChain), d, policy(), {Fidelity::Unfused},
                              state(CacheState::Cold, true));
  EXPECT_EQ(on.kernel_floor_s, 0);
  EXPECT_EQ(on.kernel_floor_skipped,
            "round-gpu has no min_kernel_s in its device file; give one with --set "
            "min_kernel_s=SECONDS");
  EXPECT_NEAR(on.result(Fidelity::Unfused).time_s, 384e-12, 1e-18);
}

TEST(CacheState, CurveCarriesItsState) {
  // Warm: the fused point of the curve is the warm fused bound. N = 1,048,576: bytes_io =
  // 8,388,608 B, 1e6 of them from the L2: 1e6 / 4e12 + 7,388,608 / 1e12 = 250 ns + 7,388.608 ns
  // = 7,638.608 ns, above round-gpu's 5 us kernel floor (on: the curve takes the default options).
  const Curve c = make_curve(lift_text(add_one(1048576)), round_gpu(), policy(), CacheState::Warm);
  EXPECT_EQ(c.cache_state, CacheState::Warm);
  EXPECT_NEAR(c.fused_s, 7638.608e-9, 1e-15);
}

}  // namespace
}  // namespace solar::sol
