// The per-node table as CSV (include/solar/report/exports.h).
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "solar/report/exports.h"
#include "solar/report/provenance.h"

namespace solar::report {
namespace {

constexpr const char* kColumns[] = {"name",          "kind",          "op",         "precision",
                                    "macs",          "other_ops",     "flops",      "bytes_read",
                                    "bytes_written", "bytes_unfused", "compute_s",  "memory_s",
                                    "sol_unfused_s", "bottleneck",    "cache_state"};

// A field, quoted when it holds a comma, a quote or a line break (quotes doubled).
std::string field(const nlohmann::json& v) {
  const std::string s = v.is_string() ? v.get<std::string>() : v.dump();
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string q = "\"";
  for (const char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

}  // namespace

std::string render_csv(const nlohmann::json& report) {
  std::string s;
  for (const char* c : kColumns) s += (s.empty() ? "" : ",") + std::string(c);
  s += "\n";
  for (const nlohmann::json& n : report.at("nodes")) {
    std::string line;
    for (const char* c : kColumns) {
      // The report's cache state on every row: each row's times are in that state.
      const nlohmann::json& v = std::string_view(c) == "cache_state" ? report.at(c) : n.at(c);
      line += (line.empty() ? "" : ",") + field(v);
    }
    s += line + "\n";
  }
  // Operators left out of the analysis: listed, with no numbers (their work is not counted).
  for (const UnsupportedOp& u :
       provenance_of_report(report).coverage.value_or(Coverage{}).unsupported_ops) {
    std::string line;
    for (const char* c : kColumns) {
      const std::string_view col = c;
      const nlohmann::json v = col == "name"          ? nlohmann::json(u.node)
                               : col == "kind"        ? nlohmann::json("unsupported")
                               : col == "op"          ? nlohmann::json(u.op)
                               : col == "bottleneck"  ? nlohmann::json("not analysed")
                               : col == "cache_state" ? report.at(c)
                                                      : nlohmann::json("");
      line += (line.empty() ? "" : ",") + field(v);
    }
    s += line + "\n";
  }
  return s;
}

}  // namespace solar::report
