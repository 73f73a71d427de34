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
                           CacheState::Cold, {},         {},      {}};
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
                           CacheState::Cold, {},         {},      {}};
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

// A step laid out over 2 devices (tp=2): one device computes for 1 s, reads 30 B in 3 s and
// sends in two all-reduces of 100 B each for 5 s in all; the fused per-device step is
// max(1, 3, 5) = 5 s, bound by the interconnect; the one-device results are not used.
ParallelAnalysis two_devices() {
  ParallelAnalysis p;
  p.layout.tp = 2;
  p.link = "NVLink 4";
  p.link_bytes_per_s = 40;  // 2 x 100 B / 40 B/s = 5 s
  ParallelResult r;
  r.fidelity = Fidelity::Fused;
  r.terms = {1, 3, 30, 5, 5};  // compute, memory, bytes, communication, time
  r.time_s = 5;
  p.results.push_back(r);
  for (int i = 0; i < 2; ++i) {
    Communication c;
    c.buffer_bytes = 100;
    c.sent_bytes = 100;
    c.time_s = 2.5;
    p.comms.push_back(c);
  }
  return p;
}

TEST(Serving, InParallelEveryFigureIsOneDevices) {
  const Serving s =
      summarize_serving(ServePhase::Decode, 64, {{4, {fused(2, 6, 60)}, two_devices()}});
  ASSERT_TRUE(s.parallel.has_value());
  const ServeFigures& f = s.rows[0].figures.at(0);
  EXPECT_DOUBLE_EQ(f.step_s, 5);              // the per-device step, not the one-device 6 s
  EXPECT_DOUBLE_EQ(f.tokens_per_s, 4.0 / 5);  // the group makes batch 4 tokens a step
  EXPECT_EQ(f.bytes, 30);
  EXPECT_DOUBLE_EQ(f.comm_s, 5);
  EXPECT_TRUE(f.interconnect_bound);
  EXPECT_EQ(f.bottleneck, Bottleneck::Memory);  // of compute (1 s) and memory (3 s)
  EXPECT_EQ(s.rows[0].collectives, 2u);
  EXPECT_DOUBLE_EQ(s.rows[0].sent_bytes, 200);  // 2 x 100 B
  report::ServingContext c{"m.py",           "H100-SXM", 3.35e12, "pytorch-cuda-default",
                           CacheState::Cold, {},         {},      {}};
  const nlohmann::json j = report::serving_to_json(s, c);
  EXPECT_EQ(j["parallel"]["layout"], "tp=2");
  EXPECT_EQ(j["parallel"]["devices"], 2);
  EXPECT_EQ(j["rows"][0]["fidelities"]["fused"]["bottleneck"], "interconnect");
  EXPECT_DOUBLE_EQ(j["rows"][0]["fidelities"]["fused"]["communication_s"].get<double>(), 5);
  EXPECT_EQ(j["rows"][0]["collectives"]["count"], 2);
  EXPECT_NE(report::render_serving(s, c).find("every figure is per device"), std::string::npos);
  // One device: no parallel object, no communication keys.
  const nlohmann::json one = report::serving_to_json(
      summarize_serving(ServePhase::Decode, 64, {{4, {fused(2, 6, 60)}}}), c);
  EXPECT_TRUE(one["parallel"].is_null());
  EXPECT_FALSE(one["rows"][0]["fidelities"]["fused"].contains("communication_s"));
}

TEST(Serving, TakesTensorParallelismOnly) {
  EXPECT_EQ(serving_layout(4, "tp=4").tp, 4);
  EXPECT_EQ(serving_layout(0, "tp=2").tp, 2);
  EXPECT_THROW(serving_layout(4, "tp=2,dp=2"), UserError);
  EXPECT_THROW(serving_layout(2, "pp=2"), UserError);
  EXPECT_THROW(serving_layout(2, "tp=2,sp"), UserError);
  EXPECT_THROW(serving_layout(4, "tp=2"), UserError);  // 2 devices, not 4
  // Steps laid out on different devices (one with a layout, one without) are refused.
  EXPECT_THROW(summarize_serving(ServePhase::Decode, 64,
                                 {{1, {fused(1, 2, 3)}, two_devices()}, {2, {fused(1, 2, 3)}}}),
               UserError);
}

}  // namespace
}  // namespace solar::sol
