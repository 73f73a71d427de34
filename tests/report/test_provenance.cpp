// The capture, coverage and verification sections (include/solar/report/provenance.h): their
// JSON form, read back from what a frontend writes, in the terminal table, the HTML page, the
// CSV and the trace.
#include "solar/report/provenance.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "solar/einsum/graph.h"
#include "solar/hw/device.h"
#include "solar/ir/checker.h"
#include "solar/ir/parser.h"
#include "solar/report/exports.h"
#include "solar/report/html.h"
#include "solar/report/report.h"
#include "solar/sol/precision.h"
#include "solar/util/error.h"

namespace solar::report {
namespace {

using nlohmann::json;

// What `solar analyze --allow-unsupported` hands over for a model of 4 captured nodes, one of
// them (writing 64 of the 512 bytes the nodes write) without a rule.
const json kCapture = {{"framework", "torch"},
                       {"framework_version", "2.5.1"},
                       {"method", "torch.export"},
                       {"source", "model.py"}};
const json kCoverage = {{"nodes", 4},
                        {"lowered", 3},
                        {"unsupported_ops",
                         {{{"node", "sort"},
                           {"op", "aten.sort.default"},
                           {"location", "model.py:12"},
                           {"reason", "no lowering rule"},
                           {"inputs", {"x"}},
                           {"outputs", {"sort"}},
                           {"output_bytes", 64}}}},
                        {"unsupported_bytes", 64},
                        {"share_nodes", 0.25},
                        {"share_bytes", 0.125}};
const json kVerification = {{"status", "passed"},
                            {"mode", "whole_program"},
                            {"detail", "1 output(s) compared with PyTorch on the same inputs"},
                            {"why", "the whole program fits the verification budget"},
                            {"outputs",
                             {{{"name", "y"},
                               {"dtype", "f32"},
                               {"shape", {4, 8}},
                               {"rtol", 1e-4},
                               {"atol", 1e-5},
                               {"max_abs_err", 5.96e-08},
                               {"max_rel_err", 2.95e-06},
                               {"passed", true}}}}};

Report captured_report() {
  const ir::Program p = ir::parse_file(SOLAR_SOURCE_DIR "/examples/mlp.ir");
  einsum::Graph g = einsum::lift(p, ir::check_or_throw(p));
  g.source = "model.py";
  Report r = make_report(std::move(g), hw::load_builtin_device("H100-SXM"),
                         sol::find_precision_policy(sol::kDefaultPrecisionPolicy),
                         sol::implemented_fidelities());
  r.provenance = provenance_from_json(kCapture, kCoverage, kVerification);
  return r;
}

TEST(Provenance, CoverageCountsTheNodesLeftOutAndTheirBytes) {
  // 8 captured nodes writing 1024 B; 2 left out, writing 96 B and 160 B.
  const Coverage c = coverage_of(
      8, 1024,
      {{"sort", "aten.sort.default", "model.py:12", "no lowering rule", {"x"}, {"sort"}, 96},
       {"topk", "aten.topk.default", "", "no lowering rule", {"sort"}, {"topk", "idx"}, 160}});
  EXPECT_EQ(c.nodes, 8);
  EXPECT_EQ(c.lowered, 6);                  // 8 - 2
  EXPECT_EQ(c.unsupported_bytes, 256);      // 96 + 160
  EXPECT_DOUBLE_EQ(c.share_nodes, 0.25);    // (8 - 6) / 8
  EXPECT_DOUBLE_EQ(c.share_bytes, 0.25);    // 256 / 1024
  ASSERT_EQ(c.unsupported_ops.size(), 2u);  // kept, in node order
  EXPECT_EQ(c.unsupported_ops[1].node, "topk");
  EXPECT_EQ(c.unsupported_ops[1].outputs, (std::vector<std::string>{"topk", "idx"}));
  // kCoverage's model: 4 nodes writing 512 B, one (64 B) left out: 3 lowered, 1 / 4 = 0.25 of
  // the nodes, 64 / 512 = 0.125 of the bytes; its JSON is what the frontend hands over.
  const Coverage one = coverage_of(
      4, 512,
      {{"sort", "aten.sort.default", "model.py:12", "no lowering rule", {"x"}, {"sort"}, 64}});
  EXPECT_EQ(coverage_to_json(one), kCoverage);
  // Every node lowered: 5 - 0 = 5, shares 0 / 5 and 0 / 640.
  const Coverage all = coverage_of(5, 640, {});
  EXPECT_EQ(all.lowered, 5);
  EXPECT_EQ(all.unsupported_bytes, 0);
  EXPECT_EQ(all.share_nodes, 0.0);
  EXPECT_EQ(all.share_bytes, 0.0);
  // Nothing to divide by (no node, no byte): shares 0, not NaN.
  const Coverage empty = coverage_of(0, 0, {});
  EXPECT_EQ(empty.share_nodes, 0.0);  // 0 nodes: 0, not 0 / 0
  EXPECT_EQ(empty.share_bytes, 0.0);  // 0 bytes: 0, not 0 / 0
  // A node left out that writes nothing (bytes 0 in all): share of the nodes 1 / 1, of bytes 0.
  const Coverage nothing_written = coverage_of(1, 0, {{"n", "aten.x", "", "no rule", {}, {}, 0}});
  EXPECT_EQ(nothing_written.lowered, 0);
  EXPECT_DOUBLE_EQ(nothing_written.share_nodes, 1.0);  // (1 - 0) / 1
  EXPECT_EQ(nothing_written.share_bytes, 0.0);
}

TEST(Provenance, JsonHoldsEverySectionWithOneSchema) {
  const json j = report_to_json(captured_report());
  EXPECT_EQ(j["capture"], kCapture);
  EXPECT_EQ(j["coverage"], kCoverage);
  const json& v = j["verification"];
  EXPECT_EQ(v["status"], "passed");
  EXPECT_EQ(v["mode"], "whole_program");
  EXPECT_EQ(v["outputs"][0]["max_rel_err"], 2.95e-06);
  EXPECT_TRUE(v["outputs"][0]["error"].is_null());
  // Keys the frontend left out are there, empty: one schema whatever the frontend wrote.
  EXPECT_EQ(v["notes"], json::array());
  EXPECT_EQ(v["ops"], json::array());
  EXPECT_EQ(v["not_compared"], json::array());
  EXPECT_TRUE(v["conditioning"].is_null());
  // The same keys as an IR file's report.
  const ir::Program p = ir::parse_file(SOLAR_SOURCE_DIR "/examples/mlp.ir");
  const json ir_file = report_to_json(make_report(
      einsum::lift(p, ir::check_or_throw(p)), hw::load_builtin_device("H100-SXM"),
      sol::find_precision_policy(sol::kDefaultPrecisionPolicy), sol::implemented_fidelities()));
  std::vector<std::string> keys, ir_keys;
  for (const auto& [k, _] : v.items()) keys.push_back(k);
  for (const auto& [k, _] : ir_file["verification"].items()) ir_keys.push_back(k);
  EXPECT_EQ(keys, ir_keys);
  EXPECT_EQ(ir_file["verification"]["status"], "not_verified");
  // Read back, written again: the same JSON.
  const Provenance back = provenance_of_report(j);
  EXPECT_EQ(verification_to_json(back.verification), v);
  EXPECT_EQ(coverage_to_json(back.coverage), kCoverage);
}

TEST(Provenance, AnUndefinedErrorIsNullWithItsReason) {
  // A sort's i64 indices [0, 28] against [0, 0]: the relative error is no number (exec/verify.h);
  // the report writes null and the reason, reads them back, and prints "undefined".
  json v = kVerification;
  v["status"] = "failed";
  v["outputs"][0] = {{"name", "idx"},
                     {"dtype", "i64"},
                     {"shape", {2}},
                     {"rtol", 0.0},
                     {"atol", 0.0},
                     {"max_abs_err", 28.0},
                     {"max_rel_err", nullptr},
                     {"passed", false},
                     {"err_reason",
                      "relative error undefined: the outputs differ where the "
                      "expected value is 0"}};
  const Provenance p = provenance_from_json(kCapture, kCoverage, v);
  const json out = verification_to_json(p.verification)["outputs"][0];
  EXPECT_TRUE(out["max_rel_err"].is_null());
  EXPECT_EQ(out["max_abs_err"], 28.0);
  EXPECT_EQ(out["err_reason"], v["outputs"][0]["err_reason"]);
  // A failed output is listed without --details too.
  EXPECT_NE(
      render_verification(p.verification)
          .find("  idx: i64[2] max_abs_err=28 max_rel_err=undefined (relative error undefined: "
                "the outputs differ where the expected value is 0) rtol=0 atol=0 MISMATCH\n"),
      std::string::npos)
      << render_verification(p.verification);
}

TEST(Provenance, TerminalListsUnsupportedOpsFirstThenTheHeaderWithTheVerification) {
  const std::string s = render_report(captured_report());
  // 1 of 4 nodes = 25.0%; 64 of 512 bytes = 12.5%.
  EXPECT_EQ(s.rfind("UNSUPPORTED: 1 of 4 nodes (25.0%) were not lowered; they write 64 B (12.5% "
                    "of the bytes the nodes write).\n",
                    0),
            0u)
      << s;
  EXPECT_NE(s.find("  aten.sort.default (node 'sort' at model.py:12): no lowering rule; writes "
                   "64 B\n"),
            std::string::npos)
      << s;
  // The verification is one status line of the header; the outputs that passed only with
  // --details.
  EXPECT_NE(s.find("\n  passed: whole program, 1 output(s) compared with PyTorch "
                   "on the same inputs\n  work: "),
            std::string::npos)
      << s;
  EXPECT_EQ(s.find("  y: f32[4, 8]"), std::string::npos) << s;
  EXPECT_LT(s.find("UNSUPPORTED"), s.find("SOL of model.py"));
  EXPECT_LT(s.find("SOL of model.py"), s.find("passed: whole program"));
  EXPECT_LT(s.find("passed: whole program"), s.find("fidelity  SOL time"));
  const std::string details = render_report(captured_report(), 10, true);
  EXPECT_NE(details.find("\n  passed: whole program, 1 output(s) compared with "
                         "PyTorch on the same inputs\n    y: f32[4, 8] max_abs_err=5.96e-08 "
                         "max_rel_err=2.95e-06 rtol=0.0001 atol=1e-05 ok\n  work: "),
            std::string::npos)
      << details;
}

// Per-op checks (docs/capture.md, "Verification"): the passed configurations only with
// --details; a failed one with its outputs, and one not verified with its reason, always.
TEST(Provenance, PerOpChecksThatPassedAreListedOnlyWithDetails) {
  json v = kVerification;
  v["status"] = "failed";
  v["mode"] = "per_op";
  v["detail"] = "1 of 3 distinct op configuration(s) failed, 1 NOT verified";
  v["outputs"] = json::array();
  v["ops"] = {{{"op", "aten.addmm.default"}, {"nodes", 4}, {"size", "real"}, {"result", "passed"}},
              {{"op", "aten.gelu.default"},
               {"size", "reduced (exact, sizes / 16)"},
               {"result", "failed"},
               {"outputs", json::array({kVerification["outputs"][0]})}},
              {{"op", "aten.sort.default"}, {"result", "not_verified"}, {"reason", "no rule"}}};
  v["ops"][1]["outputs"][0]["passed"] = false;
  const Verification p = provenance_from_json(kCapture, kCoverage, v).verification;
  const std::string brief = render_verification(p, false, "  ");
  EXPECT_EQ(brief,
            "  failed: per op, 1 of 3 distinct op configuration(s) failed, 1 NOT verified\n"
            "    aten.gelu.default: reduced (exact, sizes / 16), MISMATCH\n"
            "      y: f32[4, 8] max_abs_err=5.96e-08 max_rel_err=2.95e-06 rtol=0.0001 "
            "atol=1e-05 MISMATCH\n"
            "    aten.sort.default: NOT VERIFIED (no rule)\n");
  const std::string details = render_verification(p, true, "  ");
  EXPECT_EQ(details.find("  failed: per op"), 0u) << details;
  EXPECT_NE(details.find("\n    aten.addmm.default x4: real, ok\n    aten.gelu.default: "),
            std::string::npos)
      << details;
}

TEST(Provenance, HtmlCsvAndTraceShowTheSections) {
  const json j = report_to_json(captured_report());
  const std::string html = render_html(j, nullptr);
  EXPECT_NE(html.find("Unsupported operators"), std::string::npos);
  EXPECT_NE(html.find("<td>aten.sort.default</td><td>sort</td><td>model.py:12</td>"),
            std::string::npos);
  EXPECT_NE(html.find("captured from model.py by torch.export (torch 2.5.1)"), std::string::npos);
  EXPECT_NE(html.find("<td>y</td><td>f32[4, 8]</td>"), std::string::npos);
  const std::string csv = render_csv(j);
  EXPECT_NE(csv.find("\nsort,unsupported,aten.sort.default,,,,,,,,,,,not analysed,cold\n"),
            std::string::npos)
      << csv;
  const json trace = json::parse(render_trace(j));
  EXPECT_EQ(trace["otherData"]["unsupported_ops"],
            json::array({"aten.sort.default (node 'sort'): no lowering rule"}));
  EXPECT_EQ(trace["otherData"]["verification"],
            "passed: whole program, 1 output(s) compared with PyTorch on the same inputs");
}

TEST(Provenance, AnIrFileIsNotVerifiedAndRendersNoBlock) {
  const Provenance p;
  EXPECT_EQ(verification_line(p.verification), "not verified: IR file analysed directly");
  EXPECT_EQ(render_coverage(p), "");
  EXPECT_EQ(render_verification(p.verification), "not verified: IR file analysed directly\n");
}

TEST(Provenance, ABadSectionIsAUserError) {
  json v = kVerification;
  v["status"] = "fine";
  EXPECT_THROW(provenance_from_json(kCapture, kCoverage, v), UserError);
  EXPECT_THROW(provenance_from_json(kCapture, json{{"nodes", 4}}, kVerification), UserError);
}

}  // namespace
}  // namespace solar::report
