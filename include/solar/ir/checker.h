// Semantic checker for Affine Loop IR programs.
//
// Reports, with file:line:col: unknown or wrongly-used names, non-affine indices or bounds inside
// kernels, index-count (rank) mismatches, dtype mismatches (e.g. a float used as a gather index,
// a bool tensor written with arithmetic), shape mismatches in composition statements, statically
// provable out-of-bounds accesses (checked exactly over the kernel's domain for the bound sizes),
// `=` kernels whose output index omits a loop (a write race), outputs never written, inputs or
// weights written, and more (docs/ir.md lists them all).
#pragma once

#include <vector>

#include "solar/ir/ast.h"
#include "solar/ir/diagnostic.h"
#include "solar/ir/sizes.h"

namespace solar::ir {

// All problems found, in source order. Empty means the program is valid for these sizes.
std::vector<Diagnostic> check(const Program& p, const SymbolValues& sizes);

// bind_sizes(p, overrides) then check; throws DiagnosticError if anything is wrong.
SymbolValues check_or_throw(const Program& p, const SymbolValues& overrides = {});

}  // namespace solar::ir
