// The capture, coverage and verification sections (include/solar/report/provenance.h).
#include "solar/report/provenance.h"

#include <cstdint>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "json_parts.h"
#include "solar/util/error.h"
#include "solar/util/text.h"

namespace solar::report {
namespace {

constexpr VerificationStatus kStatuses[] = {VerificationStatus::Passed, VerificationStatus::Failed,
                                            VerificationStatus::Partial, VerificationStatus::NotRun,
                                            VerificationStatus::NotVerified};

nlohmann::json nullable(const std::string& s) {
  return s.empty() ? nlohmann::json(nullptr) : nlohmann::json(s);
}

nlohmann::json nullable(const std::optional<double>& x) {
  return x ? nlohmann::json(*x) : nlohmann::json(nullptr);
}

nlohmann::json output_to_json(const OutputCheck& o) {
  nlohmann::json j = {{"name", o.name},
                      {"dtype", o.dtype},
                      {"shape", o.shape},
                      {"rtol", o.rtol},
                      {"atol", o.atol},
                      {"max_abs_err", nullable(o.max_abs_err)},
                      {"max_rel_err", nullable(o.max_rel_err)},
                      {"passed", o.passed},
                      {"error", nullable(o.error)}};
  if (!o.err_reason.empty()) j["err_reason"] = o.err_reason;
  return j;
}

nlohmann::json outputs_to_json(const std::vector<OutputCheck>& outputs) {
  nlohmann::json j = nlohmann::json::array();
  for (const OutputCheck& o : outputs) j.push_back(output_to_json(o));
  return j;
}

// Reading the frontends' JSON: every error names the key.
std::string str_or_empty(const nlohmann::json& j, const char* key) {
  if (!j.contains(key) || j[key].is_null()) return "";
  return j[key].get<std::string>();
}

std::optional<double> opt_double(const nlohmann::json& j, const char* key) {
  if (!j.contains(key) || j[key].is_null()) return std::nullopt;
  return j[key].get<double>();
}

OutputCheck output_from_json(const nlohmann::json& j) {
  OutputCheck o;
  o.name = j.at("name").get<std::string>();
  o.dtype = j.at("dtype").get<std::string>();
  o.shape = j.at("shape").get<std::vector<int64_t>>();
  o.rtol = j.at("rtol").get<double>();
  o.atol = j.at("atol").get<double>();
  o.max_abs_err = opt_double(j, "max_abs_err");
  o.max_rel_err = opt_double(j, "max_rel_err");
  o.passed = j.at("passed").get<bool>();
  o.error = str_or_empty(j, "error");
  o.err_reason = str_or_empty(j, "err_reason");
  return o;
}

std::vector<OutputCheck> outputs_from_json(const nlohmann::json& j) {
  std::vector<OutputCheck> out;
  for (const nlohmann::json& o : j) out.push_back(output_from_json(o));
  return out;
}

VerificationStatus parse_status(const std::string& s) {
  std::string valid;
  for (const VerificationStatus v : kStatuses) {
    if (verification_status_name(v) == s) return v;
    valid += (valid.empty() ? "" : ", ") + std::string(verification_status_name(v));
  }
  throw UserError("unknown verification status '" + s + "' (valid: " + valid + ")");
}

// Python's "%.3g" and "%g".
std::string fmt(const char* spec, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, spec, v);
  return buf;
}

// "1.5 MB", "512 B" (powers of 1000, four significant digits).
std::string short_bytes(double n) {
  static constexpr std::pair<const char*, double> kUnits[] = {
      {"GB", 1e9}, {"MB", 1e6}, {"kB", 1e3}};
  for (const auto& [unit, scale] : kUnits) {
    if (n >= scale) return fmt("%.4g", n / scale) + " " + unit;
  }
  return std::to_string(static_cast<int64_t>(n)) + " B";
}

std::string output_line(const OutputCheck& o) {
  const auto err = [](const std::optional<double>& x) {
    return x ? fmt("%.3g", *x) : std::string("undefined");
  };
  std::string errors =
      !o.error.empty() ? o.error
                       : "max_abs_err=" + err(o.max_abs_err) + " max_rel_err=" + err(o.max_rel_err);
  if (o.error.empty() && !o.err_reason.empty()) errors += " (" + o.err_reason + ")";
  return o.name + ": " + o.dtype + shape_text(o.shape) + " " + errors +
         " rtol=" + fmt("%g", o.rtol) + " atol=" + fmt("%g", o.atol) + " " +
         (o.passed ? "ok" : "MISMATCH");
}

std::string coverage_lines(const Coverage& c) {
  if (c.unsupported_ops.empty()) return "";
  std::string s = coverage_headline(c) + "\n" +
                  "  Their outputs are read as program inputs: their work is NOT in the numbers "
                  "below.\n";
  for (const UnsupportedOp& u : c.unsupported_ops) {
    s += "  " + u.op + " (node '" + u.node + "'" + (u.location.empty() ? "" : " at " + u.location) +
         "): " + u.reason + "; writes " + short_bytes(static_cast<double>(u.output_bytes)) + "\n";
  }
  return s;
}

// The lines under the verification's status line, each indented by `in`: its notes, every
// output compared (`details`; else those that failed), the float64 recheck's verdict with its
// outputs (the same way), and every per-op configuration (`details`; else those that failed or
// were not verified: a user must see what failed).
std::string verification_items(const Verification& v, bool details, const std::string& in) {
  std::string s;
  for (const std::string& note : v.notes) s += in + "note: " + note + "\n";
  for (const OutputCheck& o : v.outputs) {
    if (details || !o.passed) s += in + output_line(o) + "\n";
  }
  if (v.conditioning) {
    s += in + "float64 recheck: " + v.conditioning->verdict + "\n";
    for (const OutputCheck& o : v.conditioning->float64_outputs) {
      if (details || !o.passed) s += in + "  " + output_line(o) + "\n";
    }
  }
  for (const nlohmann::json& check : v.ops) {
    const int64_t nodes = check.value("nodes", int64_t{1});
    const std::string count = nodes > 1 ? " x" + std::to_string(nodes) : "";
    const std::string op = check.value("op", "") + count;
    const std::string result = check.value("result", "");
    if (result == "not_verified") {
      s += in + op + ": NOT VERIFIED (" + str_or_empty(check, "reason") + ")\n";
      continue;
    }
    if (result == "passed" && !details) continue;
    s += in + op + ": " + str_or_empty(check, "size") + ", " +
         (result == "passed" ? "ok" : "MISMATCH") + "\n";
    if (result == "failed" && check.contains("outputs")) {
      for (const OutputCheck& o : outputs_from_json(check["outputs"])) {
        s += in + "  " + output_line(o) + "\n";
      }
    }
  }
  return s;
}

}  // namespace

std::string coverage_headline(const Coverage& c) {
  return "UNSUPPORTED: " + std::to_string(c.nodes - c.lowered) + " of " + std::to_string(c.nodes) +
         " nodes (" + fmt("%.1f", 100 * c.share_nodes) + "%) were not lowered; they write " +
         short_bytes(static_cast<double>(c.unsupported_bytes)) + " (" +
         fmt("%.1f", 100 * c.share_bytes) + "% of the bytes the nodes write).";
}

Provenance provenance_of_report(const nlohmann::json& report) {
  const auto section = [&](const char* key) {
    return report.contains(key) ? report[key] : nlohmann::json(nullptr);
  };
  return provenance_from_json(section("capture"), section("coverage"), section("verification"));
}

std::string capture_line(const CaptureInfo& c) {
  if (c.framework == "ir") return "";
  std::string s = "captured from " + c.source + " by " + c.method + " (" + c.framework;
  if (!c.framework_version.empty()) s += " " + c.framework_version;
  return s + ")";
}

std::string_view verification_status_name(VerificationStatus s) {
  switch (s) {
    case VerificationStatus::Passed:
      return "passed";
    case VerificationStatus::Failed:
      return "failed";
    case VerificationStatus::Partial:
      return "partial";
    case VerificationStatus::NotRun:
      return "not_run";
    case VerificationStatus::NotVerified:
      return "not_verified";
  }
  internal_error(__FILE__, __LINE__, "unknown verification status");
}

nlohmann::json capture_to_json(const CaptureInfo& c, const std::string& graph_source) {
  return {{"framework", c.framework},
          {"framework_version", nullable(c.framework_version)},
          {"method", c.method},
          {"source", c.source.empty() ? detail::source_name(graph_source) : c.source}};
}

Coverage coverage_of(int64_t nodes, int64_t node_output_bytes,
                     std::vector<UnsupportedOp> unsupported_ops) {
  Coverage c;
  c.nodes = nodes;
  c.lowered = nodes - static_cast<int64_t>(unsupported_ops.size());
  for (const UnsupportedOp& u : unsupported_ops) c.unsupported_bytes += u.output_bytes;
  c.unsupported_ops = std::move(unsupported_ops);
  c.share_nodes =
      nodes != 0 ? static_cast<double>(nodes - c.lowered) / static_cast<double>(nodes) : 0.0;
  c.share_bytes = node_output_bytes != 0 ? static_cast<double>(c.unsupported_bytes) /
                                               static_cast<double>(node_output_bytes)
                                         : 0.0;
  return c;
}

nlohmann::json coverage_to_json(const std::optional<Coverage>& c) {
  if (!c) return nullptr;
  nlohmann::json ops = nlohmann::json::array();
  for (const UnsupportedOp& u : c->unsupported_ops) {
    ops.push_back({{"node", u.node},
                   {"op", u.op},
                   {"location", u.location},
                   {"reason", u.reason},
                   {"inputs", u.inputs},
                   {"outputs", u.outputs},
                   {"output_bytes", u.output_bytes}});
  }
  return {{"nodes", c->nodes},
          {"lowered", c->lowered},
          {"unsupported_ops", std::move(ops)},
          {"unsupported_bytes", c->unsupported_bytes},
          {"share_nodes", c->share_nodes},
          {"share_bytes", c->share_bytes}};
}

nlohmann::json verification_to_json(const Verification& v) {
  nlohmann::json conditioning = nullptr;
  if (v.conditioning) {
    const Conditioning& c = *v.conditioning;
    conditioning = {{"float32_max_rel_err", nullable(c.float32_max_rel_err)},
                    {"float64_max_rel_err", nullable(c.float64_max_rel_err)},
                    {"float64_outputs", outputs_to_json(c.float64_outputs)},
                    {"result", c.result},
                    {"verdict", c.verdict}};
  }
  return {{"status", verification_status_name(v.status)},
          {"mode", nullable(v.mode)},
          {"detail", v.detail},
          {"why", nullable(v.why)},
          {"notes", v.notes},
          {"outputs", outputs_to_json(v.outputs)},
          {"not_compared", v.not_compared},
          {"conditioning", std::move(conditioning)},
          {"ops", v.ops}};
}

Provenance provenance_from_json(const nlohmann::json& capture, const nlohmann::json& coverage,
                                const nlohmann::json& verification) {
  Provenance p;
  const char* section = "capture";
  try {
    if (!capture.is_null()) {
      p.capture.framework = capture.at("framework").get<std::string>();
      p.capture.framework_version = str_or_empty(capture, "framework_version");
      p.capture.method = str_or_empty(capture, "method");
      p.capture.source = str_or_empty(capture, "source");
    }
    section = "coverage";
    if (!coverage.is_null()) {
      Coverage c;
      c.nodes = coverage.at("nodes").get<int64_t>();
      c.lowered = coverage.at("lowered").get<int64_t>();
      for (const nlohmann::json& u : coverage.at("unsupported_ops")) {
        c.unsupported_ops.push_back({u.at("node").get<std::string>(), u.at("op").get<std::string>(),
                                     str_or_empty(u, "location"), u.at("reason").get<std::string>(),
                                     u.value("inputs", std::vector<std::string>{}),
                                     u.value("outputs", std::vector<std::string>{}),
                                     u.value("output_bytes", int64_t{0})});
      }
      c.unsupported_bytes = coverage.at("unsupported_bytes").get<int64_t>();
      c.share_nodes = coverage.at("share_nodes").get<double>();
      c.share_bytes = coverage.at("share_bytes").get<double>();
      p.coverage = std::move(c);
    }
    section = "verification";
    if (!verification.is_null()) {
      Verification& v = p.verification;
      v.status = parse_status(verification.at("status").get<std::string>());
      v.mode = str_or_empty(verification, "mode");
      v.detail = verification.at("detail").get<std::string>();
      v.why = str_or_empty(verification, "why");
      v.notes = verification.value("notes", std::vector<std::string>{});
      if (verification.contains("outputs")) v.outputs = outputs_from_json(verification["outputs"]);
      v.not_compared = verification.value("not_compared", std::vector<std::string>{});
      if (verification.contains("conditioning") && !verification["conditioning"].is_null()) {
        const nlohmann::json& c = verification["conditioning"];
        v.conditioning =
            Conditioning{opt_double(c, "float32_max_rel_err"), opt_double(c, "float64_max_rel_err"),
                         outputs_from_json(c.value("float64_outputs", nlohmann::json::array())),
                         c.at("result").get<std::string>(), c.at("verdict").get<std::string>()};
      }
      if (verification.contains("ops")) v.ops = verification["ops"];
    }
  } catch (const nlohmann::json::exception& e) {
    throw UserError("the report's '" + std::string(section) + "' section: " + e.what());
  }
  return p;
}

std::string verification_line(const Verification& v) {
  std::string status(verification_status_name(v.status));
  std::string mode = v.mode;
  for (std::string* s : {&status, &mode}) {
    for (char& c : *s) c = c == '_' ? ' ' : c;
  }
  return status + ": " + (mode.empty() ? "" : mode + ", ") + v.detail;
}

std::string render_verification(const Verification& v, bool details, const std::string& indent) {
  return indent + verification_line(v) + "\n" + verification_items(v, details, indent + "  ");
}

std::string render_coverage(const Provenance& p) {
  return p.coverage ? coverage_lines(*p.coverage) : "";
}

}  // namespace solar::report
