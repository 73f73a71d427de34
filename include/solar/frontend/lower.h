// Lowering of a captured framework graph (a `solar-capture` JSON file, docs/lowering.md) to an
// Affine Loop IR program (docs/ir.md).
//
// Each operator has one lowering rule, registered by its ATen name; a rule writes the IR text of
// its node (declarations of temporaries, kernels, composition statements). The lowering joins
// them, parses the text and checks it. An operator without a rule is a UserError naming it, the
// node and where it was called; a rule that produces invalid IR is an InternalError.
#pragma once

#include <string>
#include <vector>

#include "solar/ir/ast.h"

namespace solar::frontend {

// The IR text of the capture `json_text` (read from `file`, used in messages), checked: it
// parses and passes the checker. Throws UserError for a malformed capture or an unsupported
// operator, InternalError when a rule produced invalid IR.
std::string lower_capture_text(const std::string& json_text, const std::string& file);

// lower_capture_text, parsed: the program's file name is `file`.
ir::Program lower_capture(const std::string& json_text, const std::string& file);

// The operator names with a lowering rule, sorted.
std::vector<std::string> registered_ops();

}  // namespace solar::frontend
