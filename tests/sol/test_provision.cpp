// The inverse roofline (include/solar/sol/provision.h): hand-computed factors, durations, and the
// laws: provisioning at a device's own SOL gives factor 1, and a device scaled by the factors
// meets the target exactly.
#include "solar/sol/provision.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "sol_test_util.h"
#include "solar/util/error.h"

namespace solar::sol {
namespace {

using testing::lift_gemv;
using testing::lift_text;

const PrecisionPolicy& default_policy() { return find_precision_policy(kDefaultPrecisionPolicy); }

TEST(Provision, GemvOnH100ForTenMicroseconds) {
  // H100: compute C = 33554432 / 67e12 = 0.5008 us, memory M = 67141632 / 3.35e12 = 20.04 us.
  // For L = 10 us: factor = 2.004 (short), compute_factor = 0.05008, bandwidth_factor = 2.004;
  // required 33554432 / 1e-5 = 3.355 TFLOP/s and 67141632 / 1e-5 = 6.714 TB/s; the effective
  // rate is 33554432 / C = 67e12 (all work at the fp32 vector rate).
  const Analysis a = analyze(lift_gemv(), hw::load_builtin_device("H100-SXM"), default_policy());
  const std::vector<Provision> ps = provision(a, 10e-6);
  // Cache-aware at the 50 MB L2: B (64 MiB) streams through in tiles, A and C stay on chip:
  // each moved once, 67141632 B, the same as the other two.
  ASSERT_EQ(ps.size(), 3u);
  for (const Provision& p : ps) {
    EXPECT_DOUBLE_EQ(p.factor, 67141632 / 3.35e12 / 10e-6) << fidelity_name(p.fidelity);
    EXPECT_DOUBLE_EQ(p.compute_factor, 33554432 / 67e12 / 10e-6);
    EXPECT_DOUBLE_EQ(p.bandwidth_factor, 67141632 / 3.35e12 / 10e-6);
    EXPECT_DOUBLE_EQ(p.required_flops_per_s, 33554432 / 10e-6);
    EXPECT_DOUBLE_EQ(p.required_bandwidth_bytes_per_s, 67141632 / 10e-6);
    EXPECT_DOUBLE_EQ(p.effective_flops_per_s, 67e12);
    EXPECT_FALSE(p.meets());
  }
  // 25 us: factor 20.04 / 25 = 0.8016, met.
  EXPECT_TRUE(provision(a, 25e-6).front().meets());
}

TEST(Provision, Durations) {
  EXPECT_DOUBLE_EQ(parse_duration("2ms"), 2e-3);
  EXPECT_DOUBLE_EQ(parse_duration("1.5us"), 1.5e-6);
  EXPECT_DOUBLE_EQ(parse_duration("0.25s"), 0.25);
  EXPECT_DOUBLE_EQ(parse_duration("800ns"), 800e-9);
  EXPECT_DOUBLE_EQ(parse_duration("3 ms"), 3e-3);
  for (const char* bad : {"2", "ms", "2 min", "-1ms", "0s", "infs", "nanms", "2msx"}) {
    try {
      parse_duration(bad);
      ADD_FAILURE() << bad;
    } catch (const UserError& e) {
      EXPECT_EQ(std::string(e.what()), "'" + std::string(bad) +
                                           "' is not a duration (examples: 2ms, 1.5us, 0.25s, "
                                           "800ns)");
    }
  }
}

// `d` with every rate and the DRAM bandwidth multiplied by `k`.
hw::Device scaled(hw::Device d, double k) {
  for (const hw::FigureEntry& e : hw::list_figures(d)) {
    if (!e.path.starts_with("peak_flops_per_s.") && e.path != "memory.DRAM.bandwidth_bytes_per_s") {
      continue;
    }
    char value[64];
    std::snprintf(value, sizeof value, "%.17g", e.figure.value * k);
    hw::apply_override(d, e.path + "=" + value);
  }
  return d;
}

// Softmax and an MLP, one memory-bound, one with compute: the factors differ by fidelity.
constexpr const char* kMlp = R"(size B = 256
size I = 512
size O = 512
input x : f32[B, I]
weight w : f32[I, O]
weight b : f32[O]
tensor z : f32[B, O]
output y : f32[B, O]
kernel fc {
  for i in 0..B, j in 0..O, k in 0..I:
    z[i, j] += x[i, k] * w[k, j]
}
kernel bias_relu {
  for i in 0..B, j in 0..O:
    y[i, j] = max(z[i, j] + b[j], 0.0)
}
)";

TEST(ProvisionLaws, AtTheDevicesOwnSolTheFactorIsOne) {
  const einsum::Graph g = lift_text(kMlp);
  for (const std::string& name : hw::builtin_device_names()) {
    const Analysis a = analyze(g, hw::load_builtin_device(name), default_policy());
    for (size_t i = 0; i < a.results.size(); ++i) {
      const Provision p = provision(a, a.results[i].time_s)[i];
      EXPECT_NEAR(p.factor, 1.0, 1e-12) << name << " " << fidelity_name(p.fidelity);
      EXPECT_TRUE(p.meets());
      if (p.fidelity == Fidelity::Fused) {
        // Fused: the bottleneck's own factor is the one that is 1.
        EXPECT_NEAR(std::max(p.compute_factor, p.bandwidth_factor), 1.0, 1e-12) << name;
      }
    }
  }
}

TEST(ProvisionLaws, ADeviceScaledByTheFactorMeetsTheTargetExactly) {
  const einsum::Graph g = lift_text(kMlp);
  const double latency = 1e-6;
  for (const std::string& name : hw::builtin_device_names()) {
    const hw::Device d = hw::load_builtin_device(name);
    const Analysis a = analyze(g, d, default_policy());
    for (const Provision& p : provision(a, latency)) {
      const Analysis s = analyze(g, scaled(d, p.factor), default_policy(), {p.fidelity});
      EXPECT_NEAR(s.result(p.fidelity).time_s, latency, 1e-12 * latency)
          << name << " " << fidelity_name(p.fidelity);
    }
  }
}

}  // namespace
}  // namespace solar::sol
