// Where a report's program came from and how far it was checked: the `capture`, `coverage` and
// `verification` sections of every report (docs/report.md, "Capture, coverage, verification").
// One schema for every frontend: an IR file analysed directly fills them too (frontend "ir",
// no coverage, verification not_verified). The frontends (python/solar) compute the values, but
// for the coverage's counts and shares (coverage_of, from the lowering's); the report holds and
// renders them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace solar::report {

// The program's origin. `framework`: "torch", "jax" or "ir" (an IR file); `method`: how it was
// captured ("torch.export", "make_fx", "jaxpr", "llm", "ir_file"); `source`: the model file's
// (or IR file's) name, without directories. Empty `framework_version`: none (null in JSON).
struct CaptureInfo {
  std::string framework = "ir";
  std::string framework_version;
  std::string method = "ir_file";
  std::string source;  // empty: the graph's source
};

// A captured node without a lowering rule, left out of the analysis: its outputs are read as
// program inputs, so its work is not in the numbers.
struct UnsupportedOp {
  std::string node;
  std::string op;
  std::string location;  // where the model called it; empty when unknown
  std::string reason;
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
  int64_t output_bytes = 0;
};

// How much of the captured graph was lowered. Shares: of the captured nodes, and of the bytes
// they write.
struct Coverage {
  int64_t nodes = 0;
  int64_t lowered = 0;
  std::vector<UnsupportedOp> unsupported_ops;
  int64_t unsupported_bytes = 0;
  double share_nodes = 0;
  double share_bytes = 0;
};

// The coverage of a captured graph of `nodes` nodes whose outputs are `node_output_bytes` bytes,
// `unsupported_ops` of them (in node order) not lowered: lowered = nodes - unsupported_ops;
// unsupported_bytes, their output bytes summed; share_nodes = (nodes - lowered) / nodes and
// share_bytes = unsupported_bytes / node_output_bytes, each 0 when what it divides by is 0. The
// `coverage` section of a program lowered from a capture (_core.LoweringResult.coverage).
Coverage coverage_of(int64_t nodes, int64_t node_output_bytes,
                     std::vector<UnsupportedOp> unsupported_ops);

enum class VerificationStatus { Passed, Failed, Partial, NotRun, NotVerified };

// "passed", "failed", "partial", "not_run", "not_verified".
std::string_view verification_status_name(VerificationStatus s);

// One output of SOLAR's executor compared with the framework's: |solar - framework| <= atol *
// max(1, max|framework|) + rtol * |framework|. Errors absent (null) when the shapes differ
// (`error` says how).
struct OutputCheck {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  double rtol = 0;
  double atol = 0;
  std::optional<double> max_abs_err;
  std::optional<double> max_rel_err;
  bool passed = false;
  std::string error;       // empty: none
  std::string err_reason;  // why an error is null though the shapes agree (exec/verify.h)
};

// The float64 recheck after a failed whole-program check: `result` "float64_agrees" (the
// float32 mismatch is ill-conditioning; status becomes passed), "float64_disagrees" (a lowering
// bug) or "not_possible", and `verdict`, the sentence that says so.
struct Conditioning {
  std::optional<double> float32_max_rel_err;
  std::optional<double> float64_max_rel_err;
  std::vector<OutputCheck> float64_outputs;
  std::string result;
  std::string verdict;
};

// How the program was checked against the framework. `mode`: "whole_program", "per_op" or
// empty (not run); `why`: why that mode; `ops`: the per-op checks (docs/capture.md,
// "Verification"), as the frontend wrote them: op, nodes, example_node, size, result, reason,
// outputs, shapes, real_shapes.
struct Verification {
  VerificationStatus status = VerificationStatus::NotVerified;
  std::string mode;
  std::string detail = "IR file analysed directly";
  std::string why;
  std::vector<std::string> notes;
  std::vector<OutputCheck> outputs;
  std::vector<std::string> not_compared;
  std::optional<Conditioning> conditioning;
  nlohmann::json ops = nlohmann::json::array();
};

// The sections together, as a frontend hands them to the analysis. `agent`: the parts the LLM
// agent wrote (docs/llm.md: scope, name, op, attempts, tokens, cached, model), as the frontend
// wrote them; null when no agent was asked (the report then has no `agent` key).
struct Provenance {
  CaptureInfo capture;
  std::optional<Coverage> coverage;  // absent: the program was not lowered from a capture
  Verification verification;
  nlohmann::json agent;
};

// JSON forms (docs/report.md): every key always present, null where absent.
nlohmann::json capture_to_json(const CaptureInfo& c, const std::string& graph_source);
nlohmann::json coverage_to_json(const std::optional<Coverage>& c);
nlohmann::json verification_to_json(const Verification& v);

// The sections from their JSON form (what the frontends write); UserError naming the bad key.
// `coverage` null gives none; a key left out of `verification` keeps its default.
Provenance provenance_from_json(const nlohmann::json& capture, const nlohmann::json& coverage,
                                const nlohmann::json& verification);

// The sections of a report's JSON form (report_to_json): the renderers of the JSON (HTML, CSV,
// trace) read them back with this. A report without them is an IR file's.
Provenance provenance_of_report(const nlohmann::json& report);

// The capture line of a captured program: "captured from MODEL.py by torch.export (torch
// 2.5.1)"; empty for an IR file.
std::string capture_line(const CaptureInfo& c);

// The one-line status of the table's header: "passed: whole program, 1 output(s) compared ...",
// "not verified: IR file analysed directly".
std::string verification_line(const Verification& v);

// The verification's lines in a report's header, each starting with `indent`: the status line
// "verification: passed (per_op; 15 of 15 ...)", then indented under it the notes, the float64
// recheck's verdict, and each output and per-op configuration that failed or was not verified;
// `details` (`--details`): every output and per-op configuration, as the JSON lists them.
std::string render_verification(const Verification& v, bool details = false,
                                const std::string& indent = "");

// The terminal lines above a captured program's report when some of its operators were not
// lowered: the coverage headline, loud, and one line per unsupported operator; empty otherwise
// (an IR file analysed directly included).
std::string render_coverage(const Provenance& p);

// The sentence that opens the coverage lines: "UNSUPPORTED: 1 of 3 nodes (33.3%) were not
// lowered; they write 64 B (12.5% of the bytes the nodes write)."
std::string coverage_headline(const Coverage& c);

}  // namespace solar::report
