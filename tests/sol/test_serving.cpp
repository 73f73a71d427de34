// Serving figures (include/solar/sol/serving.h) and their report (include/solar/report/serving.h),
// on hand-made step results: per-token times, tokens/s and the crossover, worked by hand.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "solar/report/serving.h"
#include "solar/sol/serving.h"
#include "solar/util/error.h"

namespace solar::sol {
namespace {

FidelityResult fused(double compute_s, double memory_s, int64_t bytes) {
  FidelityResult r;
  r.fidelity = Fidelity::Fused;
  r.compute_s = compute_s;
  r.memory_s = memory_s;
  r.time_s = std::max(compute_s, memory_s);
  r.bytes = bytes;
  r.bottleneck = compute_s > memory_s ? Bottleneck::Compute : Bottleneck::Memory;
  return r;
}

// Batch 1: compute 1 s, memory 4 s; batch 2: 2 s, 5 s (memory bound); batch 4: 8 s, 6 s
// (compute bound). compute - memory is -3 at batch 2 and +2 at batch 4: linear between them it
// is 0 at 2 + (4 - 2) x 3 / 5 = 3.2.
std::vector<ServeStep> steps() {
  return {{1, {fused(1, 4, 40)}}, {2, {fused(2, 5, 50)}}, {4, {fused(8, 6, 60)}}};
}

TEST(Serving, DecodeMakesOneTokenPerSequenceAndFindsTheCrossover) {
  const Serving s = summarize_serving(ServePhase::Decode, 128, steps());
  ASSERT_EQ(s.rows.size(), 3u);
  EXPECT_EQ(s.rows[2].tokens, 4);
  EXPECT_DOUBLE_EQ(s.rows[2].figures[0].step_s, 8);
  EXPECT_DOUBLE_EQ(s.rows[2].figures[0].tokens_per_s, 4.0 / 8);  // batch / SOL
  EXPECT_DOUBLE_EQ(s.rows[1].figures[0].tokens_per_s, 2.0 / 5);
  ASSERT_EQ(s.crossovers.size(), 1u);
  EXPECT_EQ(s.crossovers[0].last_memory_bound, 2);
  EXPECT_EQ(s.crossovers[0].first_compute_bound, 4);
  ASSERT_TRUE(s.crossovers[0].estimate.has_value());
  EXPECT_DOUBLE_EQ(*s.crossovers[0].estimate, 3.2);
}

TEST(Serving, PrefillReadsBatchTimesContextTokens) {
  const Serving s = summarize_serving(ServePhase::Prefill, 128, steps());
  EXPECT_EQ(s.rows[1].tokens, 256);                                // 2 x 128
  EXPECT_DOUBLE_EQ(s.rows[1].figures[0].tokens_per_s, 256.0 / 5);  // batch x context / SOL
}

TEST(Serving, MemoryBoundEverywhereHasNoCrossover) {
  const std::vector<ServeStep> memory = {{1, {fused(1, 4, 40)}}, {8, {fused(2, 5, 50)}}};
  const Serving s = summarize_serving(ServePhase::Decode, 16, memory);
  EXPECT_FALSE(s.crossovers[0].first_compute_bound.has_value());
  EXPECT_FALSE(s.crossovers[0].estimate.has_value());
  report::ServingContext c{"m.py",           "H100-SXM", 3.35e12, "pytorch-cuda-default",
                           CacheState::Cold, {}};
  EXPECT_NE(report::render_serving(s, c).find("fused: memory bound at every batch up to 8"),
            std::string::npos);
}

TEST(Serving, BadStepsAreUserErrors) {
  EXPECT_THROW(summarize_serving(ServePhase::Decode, 0, steps()), UserError);
  EXPECT_THROW(summarize_serving(ServePhase::Decode, 16, {}), UserError);
  EXPECT_THROW(summarize_serving(ServePhase::Decode, 16, {{0, {fused(1, 2, 3)}}}), UserError);
  EXPECT_THROW(
      summarize_serving(ServePhase::Decode, 16, {{2, {fused(1, 2, 3)}}, {2, {fused(1, 2, 3)}}}),
      UserError);
  EXPECT_THROW(parse_serve_phase("generate"), UserError);
}

TEST(Serving, JsonHasTheRowsAndTheCrossover) {
  const Serving s = summarize_serving(ServePhase::Decode, 128, steps());
  report::ServingContext c{"dir/m.py",       "H100-SXM", 3.35e12, "pytorch-cuda-default",
                           CacheState::Cold, {}};
  const nlohmann::json j = report::serving_to_json(s, c);
  EXPECT_EQ(j["source"], "m.py");
  EXPECT_EQ(j["phase"], "decode");
  EXPECT_EQ(j["context"], 128);
  EXPECT_EQ(j["rows"][2]["fidelities"]["fused"]["bottleneck"], "compute");
  EXPECT_EQ(j["rows"][2]["fidelities"]["fused"]["bytes"], 60);
  EXPECT_EQ(j["crossover"]["fused"]["first_compute_bound_batch"], 4);
  EXPECT_DOUBLE_EQ(j["crossover"]["fused"]["estimate_batch"].get<double>(), 3.2);
  EXPECT_TRUE(j["rows"][0]["verification"].is_null());
}

}  // namespace
}  // namespace solar::sol
