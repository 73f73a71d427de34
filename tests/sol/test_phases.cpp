// A training step's phases (include/solar/sol/phases.h, docs/training.md), on a hand-written
// step of y = x @ w with loss sum(y): the forward writes y (an activation only if the backward
// reads it), the backward dW = x^T dY, the optimizer w' = w - 0.1 * dW. Sizes: x [4, 8], w [8, 2].
#include "solar/sol/phases.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "sol_test_util.h"

namespace solar::sol {
namespace {

// dY = y * 2 (the backward reads the forward's y: an activation of 4 x 2 f32 = 32 B).
constexpr const char* kStep = R"(input x : f32[4, 8]
weight w : f32[8, 2]
tensor y : f32[4, 2]
output loss : f32[]
tensor dy : f32[4, 2]
output dw : f32[8, 2]
output w_new : f32[8, 2]
kernel fwd { for i in 0..4, j in 0..2, k in 0..8: y[i, j] += x[i, k] * w[k, j] }
kernel sum { for i in 0..4, j in 0..2: loss[] += y[i, j] }
kernel seed { for i in 0..4, j in 0..2: dy[i, j] = y[i, j] * 2.0 }
kernel bwd { for k in 0..8, j in 0..2, i in 0..4: dw[k, j] += x[i, k] * dy[i, j] }
kernel sgd { for k in 0..8, j in 0..2: w_new[k, j] = w[k, j] - dw[k, j] * 0.1 }
)";

const std::map<std::string, std::string> kPhases = {{"y", "forward"},
                                                    {"loss", "forward"},
                                                    {"dy", "backward"},
                                                    {"dw", "backward"},
                                                    {"w_new", "optimizer"}};

TEST(Phases, NodesTakeThePhaseOfTheTensorTheyWrite) {
  const einsum::Graph g = testing::lift_text(kStep);
  EXPECT_EQ(node_phases(g, kPhases),
            (std::vector<std::string>{"forward", "forward", "backward", "backward", "optimizer"}));
}

TEST(Phases, RolesSeenFromEachPhase) {
  const einsum::Graph g = testing::lift_text(kStep);
  const std::vector<std::string> ph = node_phases(g, kPhases);
  const einsum::Graph fw = phase_graph(g, ph, "forward");
  const einsum::Graph bw = phase_graph(g, ph, "backward");
  const einsum::Graph opt = phase_graph(g, ph, "optimizer");
  EXPECT_EQ(fw.nodes.size(), 2U);
  EXPECT_EQ(fw.find_tensor("y")->role, ir::TensorRole::Output);  // the backward reads it
  EXPECT_EQ(bw.find_tensor("y")->role, ir::TensorRole::Input);
  EXPECT_EQ(bw.find_tensor("dw")->role, ir::TensorRole::Output);
  EXPECT_EQ(opt.find_tensor("dw")->role, ir::TensorRole::Input);
  EXPECT_EQ(opt.find_tensor("y")->role, ir::TensorRole::Intermediate);  // untouched there
  // fused bytes, f32: forward reads x (32 x 4 = 128) and w (16 x 4 = 64), writes y (8 x 4 = 32)
  // and loss (4): 228; backward reads x (128) and y (32), writes dw (64): 224 (dy stays on
  // chip); the optimizer reads w and dw, writes w_new: 3 x 64 = 192.
  EXPECT_EQ(fused_bytes(fw), 228);
  EXPECT_EQ(fused_bytes(bw), 224);
  EXPECT_EQ(fused_bytes(opt), 192);
}

TEST(Phases, StepAnalysisAndActivations) {
  const einsum::Graph g = testing::lift_text(kStep);
  const hw::Device d = hw::resolve_device("H100-SXM");
  const PrecisionPolicy& policy = find_precision_policy(kDefaultPrecisionPolicy);
  const StepAnalysis s = analyze_step(g, kPhases, d, policy, {Fidelity::Unfused, Fidelity::Fused});
  ASSERT_EQ(s.phases.size(), 3U);
  EXPECT_EQ(s.phases[0].phase, "forward");
  EXPECT_EQ(s.phases[0].analysis.totals.macs, 4 * 2 * 8);  // 64
  EXPECT_EQ(s.phases[1].analysis.totals.macs, 8 * 2 * 4);  // 64
  EXPECT_EQ(s.phases[2].analysis.totals.macs, 0);
  ASSERT_EQ(s.activations.size(), 1U);  // y: the forward writes it, the backward reads it
  EXPECT_EQ(s.activations[0].tensor, "y");
  EXPECT_EQ(s.activation_bytes, 4 * 2 * 4);  // 32 B
  // the whole step fused moves x, w, loss, dw, w_new once: 128 + 64 + 4 + 64 + 64 = 324 B,
  // less than the phases' 228 + 224 + 192 = 644 B run apart
  EXPECT_EQ(fused_bytes(g), 324);
  const Analysis whole = analyze(g, d, policy, {Fidelity::Unfused, Fidelity::Fused});
  double unfused_sum = 0;
  for (const PhaseAnalysis& p : s.phases)
    unfused_sum += p.analysis.result(Fidelity::Unfused).time_s;
  EXPECT_DOUBLE_EQ(whole.result(Fidelity::Unfused).time_s, unfused_sum);
}

TEST(Phases, NoPhasesGivesForwardOnly) {
  const einsum::Graph g = testing::lift_text(kStep);
  const std::vector<std::string> ph = node_phases(g, {});
  for (const std::string& p : ph) EXPECT_EQ(p, "forward");
}

}  // namespace
}  // namespace solar::sol
