// Diagnostics: formatting and the exception that carries them.
#include "solar/ir/diagnostic.h"

#include "solar/util/error.h"

namespace solar::ir {

namespace {

std::string first_message(const std::vector<Diagnostic>& diags) {
  SOLAR_CHECK(!diags.empty(), "DiagnosticError without diagnostics");
  return diags.front().str();
}

}  // namespace

std::string Diagnostic::str() const {
  std::string out = file;
  if (loc.line != 0) {
    out += ":" + std::to_string(loc.line) + ":" + std::to_string(loc.col);
  }
  return out + ": error: " + message;
}

DiagnosticError::DiagnosticError(std::vector<Diagnostic> diags)
    : UserError(first_message(diags)), diags_(std::move(diags)) {}

}  // namespace solar::ir
