// Diagnostics: `file:line:col: error: message`, one line each.
#pragma once

#include <string>
#include <vector>

#include "solar/ir/ast.h"
#include "solar/util/error.h"

namespace solar::ir {

struct Diagnostic {
  std::string file;
  Loc loc;
  std::string message;  // lower-case start, no trailing period, no newline
  // "file:line:col: error: message" (or "file: error: message" when loc.line == 0)
  std::string str() const;
};

// A UserError whose message is the first diagnostic's str(); keeps all of them.
class DiagnosticError : public UserError {
 public:
  explicit DiagnosticError(std::vector<Diagnostic> diags);
  const std::vector<Diagnostic>& diagnostics() const { return diags_; }

 private:
  std::vector<Diagnostic> diags_;
};

}  // namespace solar::ir
