// The notes of the terminal report (include/solar/report/report.h, render_report): one line per
// kind with its count; `details` (`--details`) one line per node or tensor, as the JSON lists
// them.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "solar/einsum/graph.h"
#include "solar/hw/device.h"
#include "solar/ir/checker.h"
#include "solar/ir/parser.h"
#include "solar/report/report.h"
#include "solar/sol/precision.h"

namespace solar::report {
namespace {

Report report_of(const char* text, const std::string& device,
                 einsum::Routing routing = einsum::Routing::Concentrated) {
  const ir::Program p = ir::parse(text, "notes.ir");
  einsum::Graph g = einsum::lift(p, ir::check_or_throw(p));
  g.source = "notes.ir";
  einsum::assume_routing(g, routing);
  return make_report(std::move(g), hw::load_builtin_device(device),
                     sol::find_precision_policy(sol::kDefaultPrecisionPolicy),
                     sol::implemented_fidelities());
}

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

// Five bf16 elementwise kernels (a product each) on an H100, which has no bf16 vector rate: each
// falls back to fp32 vector, one note; two bf16 additions of another shape, the same note. Five
// and two are seven nodes of one kind: one line "7 nodes: ..." without --details, seven lines
// with it.
constexpr const char* kElementwise = R"(input x : bf16[64]
output y1 : bf16[64]
output y2 : bf16[64]
output y3 : bf16[64]
output y4 : bf16[64]
output y5 : bf16[64]
output z1 : bf16[32]
output z2 : bf16[32]
kernel m1 { for i in 0..64: y1[i] = x[i] * x[i] }
kernel m2 { for i in 0..64: y2[i] = x[i] * x[i] }
kernel m3 { for i in 0..64: y3[i] = x[i] * x[i] }
kernel m4 { for i in 0..64: y4[i] = x[i] * x[i] }
kernel m5 { for i in 0..64: y5[i] = x[i] * x[i] }
kernel a1 { for i in 0..32: z1[i] = x[i] + x[i] }
kernel a2 { for i in 0..32: z2[i] = x[i] + x[i] }
)";

TEST(ReportNotes, PrecisionFallbacksAreOneLinePerKindWithTheirCount) {
  const Report r = report_of(kElementwise, "H100-SXM");
  const std::string label = "bf16 vector->fp32 vector (H100-SXM has no bf16 vector rate)";
  const std::string s = render_report(r);
  EXPECT_NE(s.find("* precision fallbacks (the device lacks the wanted rate; --details lists "
                   "each node):\n  7 nodes: " +
                   label + "\n"),
            std::string::npos)
      << s;
  EXPECT_EQ(count(s, label), 1u) << s;
  const std::string details = render_report(r, 10, true);
  EXPECT_NE(details.find("* precision fallbacks (the device lacks the wanted rate):\n  m1: " +
                         label + "\n  m2: " + label + "\n"),
            std::string::npos)
      << details;
  EXPECT_EQ(count(details, label), 7u) << details;
  // The JSON keeps every node's fallback, with or without --details.
  size_t fallbacks = 0;
  const nlohmann::json j = report_to_json(r);
  for (const nlohmann::json& n : j["nodes"]) {
    fallbacks += n["precision_fallback"].get<bool>() ? 1 : 0;
  }
  EXPECT_EQ(fallbacks, 7u);
}

TEST(ReportNotes, UpToThreeNodesOfAKindAreNamed) {
  const Report r = report_of(R"(input x : bf16[64]
output y1 : bf16[64]
output y2 : bf16[64]
kernel m1 { for i in 0..64: y1[i] = x[i] * x[i] }
kernel m2 { for i in 0..64: y2[i] = x[i] * x[i] }
)",
                             "H100-SXM");
  const std::string s = render_report(r);
  EXPECT_NE(s.find("* precision fallbacks (the device lacks the wanted rate):\n  2 nodes (m1, m2): "
                   "bf16 vector->fp32 vector (H100-SXM has no bf16 vector rate)\n"),
            std::string::npos)
      << s;
}

// Four top-2-of-8 expert weights w [8, 16, 32] (an expert 16 * 32 = 512 elements) taken by 2
// routed ids (distinct=2), and an embedding table [100, 4] taken by 3 token ids (not routed).
// Concentrated: each expert weight reads 2 of its 8 slices, 2 x 512 = 1024 elements of 4096;
// the four: 4096 of 16384. The embedding: its 3 rows, 12 of 400 elements.
constexpr const char* kExperts = R"(input ids : i64[2]
input tokens : i64[3]
weight w0 : f32[8, 16, 32]
weight w1 : f32[8, 16, 32]
weight w2 : f32[8, 16, 32]
weight w3 : f32[8, 16, 32]
weight table : f32[100, 4]
output r0 : f32[2, 16, 32]
output r1 : f32[2, 16, 32]
output r2 : f32[2, 16, 32]
output r3 : f32[2, 16, 32]
output emb : f32[3, 4]
r0 = take(w0, ids, dim=0, distinct=2)
r1 = take(w1, ids, dim=0, distinct=2)
r2 = take(w2, ids, dim=0, distinct=2)
r3 = take(w3, ids, dim=0, distinct=2)
emb = take(table, tokens, dim=0)
)";

TEST(ReportNotes, DataDependentReadsAreOneLinePerKindWithTheirCount) {
  const Report r = report_of(kExperts, "H100-SXM");
  const std::string s = render_report(r);
  // Tensors in name order: the table first.
  EXPECT_NE(s.find("* routing assumption (data-dependent reads; --details lists each tensor):\n"
                   "  table: 12 elements"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("\n  4 tensors: 4096 elements read at data-dependent positions (take/gather), "
                   "counted as 4096 of their 16384 distinct (each 2 of its 8 slices along dim 0): "
                   "routed, concentrated routing"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("\n  table: 12 elements read at data-dependent positions (take/gather), "
                   "counted as 12 of its 400 distinct (3 of its 100 slices along dim 0): every "
                   "index taken different"),
            std::string::npos)
      << s;
  EXPECT_EQ(count(s, "elements read at data-dependent positions"), 2u) << s;
  // --details: one line per tensor, as the JSON's routing_assumptions.
  const std::string details = render_report(r, 10, true);
  EXPECT_EQ(count(details, "elements read at data-dependent positions"), 5u) << details;
  EXPECT_NE(details.find("* routing assumption (data-dependent reads):\n  table: "),
            std::string::npos)
      << details;
  const nlohmann::json j = report_to_json(r);
  ASSERT_EQ(j["routing_assumptions"].size(), 5u);
  for (const nlohmann::json& line : j["routing_assumptions"]) {
    EXPECT_NE(details.find("  " + line.get<std::string>() + "\n"), std::string::npos) << line;
  }
}

}  // namespace
}  // namespace solar::report
