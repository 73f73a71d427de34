// Parser for the text form of the Affine Loop IR (grammar: docs/ir.md).
#pragma once

#include <string>
#include <string_view>

#include "solar/ir/ast.h"

namespace solar::ir {

// Parses `text`; `file` is used in diagnostics and stored in Program::file. Resolves names
// (sizes, tensors, loop and repeat indices must be declared before use, no redefinition) and
// throws DiagnosticError at the first syntax or name error. Semantic checks (shapes, dtypes,
// affinity, bounds) are the checker's (checker.h).
Program parse(std::string_view text, const std::string& file = "<input>");

// Whether `name` is a reserved word of the IR (a keyword or a dtype name): never a valid name.
bool is_reserved_word(std::string_view name);

// Reads and parses a file; a missing or unreadable file is a UserError naming it.
Program parse_file(const std::string& path);

}  // namespace solar::ir
