// The serving report of a decoder's steps assembled from their SOL reports
// (include/solar/report/serving.h: serving_context, serving_report): the context is the first
// step's, steps analysed differently are refused, each row carries its step's verification and
// routed reads. The figures themselves are tests/sol/test_serving.cpp's.
#include "solar/report/serving.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "solar/einsum/graph.h"
#include "solar/hw/device.h"
#include "solar/ir/checker.h"
#include "solar/ir/parser.h"
#include "solar/report/report.h"
#include "solar/sol/analysis.h"
#include "solar/sol/precision.h"
#include "solar/sol/serving.h"
#include "solar/util/error.h"

namespace solar::report {
namespace {

// A top-2-of-8 expert weight w [8, 16, 32] taken by 2 routed ids (distinct=2) and an embedding
// table [100, 4] taken by 3 token ids (not routed): concentrated, w is read at 2 of its 8
// experts, 2 x 16 x 32 = 1024 of its 4096 elements.
constexpr const char* kExperts = R"(input ids : i64[2]
input tokens : i64[3]
weight w : f32[8, 16, 32]
weight table : f32[100, 4]
output r : f32[2, 16, 32]
output emb : f32[3, 4]
r = take(w, ids, dim=0, distinct=2)
emb = take(table, tokens, dim=0)
)";

// No data-dependent read.
constexpr const char* kDense = R"(input x : f32[4, 8]
output y : f32[4, 8]
kernel twice {
  for i in 0..4, j in 0..8:
    y[i, j] = x[i, j] * 2.0
}
)";

Report report_of(const char* text) {
  const ir::Program p = ir::parse(text, "dir/step.ir");
  einsum::Graph g = einsum::lift(p, ir::check_or_throw(p));
  g.source = "dir/step.ir";
  einsum::assume_routing(g, einsum::Routing::Concentrated);
  return make_report(std::move(g), hw::load_builtin_device("H100-SXM"),
                     sol::find_precision_policy(sol::kDefaultPrecisionPolicy),
                     sol::implemented_fidelities());
}

// The message of the UserError `f` throws ("" when it throws none).
template <typename F>
std::string user_error(F f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

const char* const kDifferent =
    "serving steps analysed on different devices, policies or cache "
    "states";

TEST(ServingReport, TheContextIsTheFirstStepsWithEachStepsRoutedReads) {
  const Report one = report_of(kExperts);
  const Report two = report_of(kExperts);
  const ServingContext c = serving_context({{1, &one}, {2, &two}});
  EXPECT_EQ(c.source, "dir/step.ir");  // as the graph has it; the report shows "step.ir"
  EXPECT_EQ(c.device, "H100-SXM");
  EXPECT_EQ(c.dram_bandwidth_bytes_per_s, one.analysis.dram_bandwidth_bytes_per_s);
  EXPECT_EQ(c.policy, sol::kDefaultPrecisionPolicy);
  EXPECT_EQ(c.cache_state, sol::CacheState::Cold);
  EXPECT_TRUE(c.verification.empty());  // serving_report's
  EXPECT_FALSE(c.after_step_report);
  EXPECT_EQ(c.routing, "concentrated");
  ASSERT_EQ(c.routed.size(), 2u);  // one row per step
  for (const std::vector<RoutedRead>& row : c.routed) {
    ASSERT_EQ(row.size(), 1u);  // w; the table's read is not routed
    EXPECT_EQ(row[0].tensor, "w");
    EXPECT_EQ(row[0].slices, 2);      // 1024 elements / 512 an expert
    EXPECT_EQ(row[0].of, 8);          // w's experts
    EXPECT_EQ(row[0].counted, 1024);  // 2 x 16 x 32
  }
}

TEST(ServingReport, WithoutARoutedReadThereIsNoRouting) {
  const Report one = report_of(kDense);
  const ServingContext c = serving_context({{1, &one}, {4, &one}});
  EXPECT_EQ(c.routing, "");
  ASSERT_EQ(c.routed.size(), 2u);  // an empty row per step
  EXPECT_TRUE(c.routed[0].empty());
  EXPECT_TRUE(c.routed[1].empty());
}

TEST(ServingReport, StepsAnalysedDifferentlyAreRefused) {
  const Report first = report_of(kDense);
  EXPECT_EQ(user_error([] { serving_context({}); }), "no serving step to report");
  Report device = first;
  device.device.name = "B200";
  Report policy = first;
  policy.analysis.policy = "fp8-serving";
  Report warm = first;
  warm.analysis.memory.state = sol::CacheState::Warm;
  for (const Report* other : {&device, &policy, &warm}) {
    EXPECT_EQ(user_error([&] { serving_context({{1, &first}, {2, other}}); }), kDifferent);
    EXPECT_EQ(user_error([&] { serving_context({{1, other}, {2, &first}}); }), kDifferent);
  }
  EXPECT_THROW(serving_context({{1, &first}, {2, nullptr}}), InternalError);
  EXPECT_THROW(serving_context({{1, nullptr}}), InternalError);
}

TEST(ServingReport, IsTheFiguresOfTheStepsWithTheirContextAndVerification) {
  const Report one = report_of(kExperts);
  const Report two = report_of(kExperts);
  const std::string passed =
      R"({"status": "passed", "mode": "whole_program", "detail": "1 output(s) compared"})";
  const ServingReport s = serving_report("decode", 64, {{1, &one}, {2, &two}}, {passed, ""});
  // What the parts make, assembled by hand.
  ServingContext c = serving_context({{1, &one}, {2, &two}});
  c.verification = {nlohmann::json::parse(passed), nullptr};
  const sol::Serving figures = sol::summarize_serving(
      sol::ServePhase::Decode, 64, {{1, one.analysis.results}, {2, two.analysis.results}});
  EXPECT_EQ(s.json, serving_to_json(figures, c));
  EXPECT_EQ(s.table, render_serving(figures, c));
  c.after_step_report = true;
  EXPECT_EQ(s.table_after_step, render_serving(figures, c));
  // Row 1 passed, row 2's verification is unknown (empty text).
  EXPECT_EQ(s.json["rows"][0]["verification"]["status"], "passed");
  EXPECT_TRUE(s.json["rows"][1]["verification"].is_null());
  EXPECT_EQ(s.json["source"], "step.ir");
  EXPECT_EQ(s.json["routing"], "concentrated");
  EXPECT_NE(s.table.find("  batch 1: passed (whole_program): 1 output(s) compared\n"),
            std::string::npos)
      << s.table;
  EXPECT_NE(s.table.find("  precision policy: pytorch-cuda-default\n"), std::string::npos);
  // After the step's own report: no policy, cache state or verification again.
  EXPECT_EQ(s.table_after_step.find("precision policy"), std::string::npos) << s.table_after_step;
  EXPECT_EQ(s.table_after_step.find("batch 1: passed"), std::string::npos);
}

TEST(ServingReport, ErrorsComeInOrderStepsVerificationPhase) {
  const Report first = report_of(kDense);
  Report device = first;
  device.device.name = "B200";
  const std::vector<std::string> bad = {"{not json"};
  // Steps first, then a verification that is not JSON, then the phase.
  EXPECT_EQ(user_error([&] {
              serving_report("generate", 64, {{1, &first}, {2, &device}}, bad);
            }),
            kDifferent);
  EXPECT_EQ(user_error([&] { serving_report("generate", 64, {}, bad); }),
            "no serving step to report");
  EXPECT_EQ(user_error([&] {
              serving_report("generate", 64, {{1, &first}}, bad);
            }).rfind("the 'verification' section is not JSON: ", 0),
            0u);
  EXPECT_EQ(user_error([&] {
              serving_report("generate", 64, {{1, &first}}, {});
            }),
            user_error([] { sol::parse_serve_phase("generate"); }));
  // Then the figures' own: batches by increasing size.
  EXPECT_EQ(user_error([&] {
              serving_report("decode", 64, {{2, &first}, {2, &first}}, {});
            }),
            user_error([&] {
              sol::summarize_serving(sol::ServePhase::Decode, 64,
                                     {{2, first.analysis.results}, {2, first.analysis.results}});
            }));
}

}  // namespace
}  // namespace solar::report
