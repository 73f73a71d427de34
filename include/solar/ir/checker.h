// Semantic checker for Affine Loop IR programs.
//
// Reports, with file:line:col: unknown or wrongly-used names, non-affine indices or bounds inside
// kernels, index-count (rank) mismatches, dtype mismatches (e.g. a float used as a gather index,
// a bool tensor written with arithmetic), shape mismatches in composition statements, statically
// provable out-of-bounds accesses (checked exactly over the kernel's domain for the bound sizes),
// `=` kernels whose output index omits a loop (a write race), outputs never written, inputs or
// weights written, and more (docs/ir.md lists them all).
#pragma once

#include <utility>
#include <vector>

#include "solar/ir/ast.h"
#include "solar/ir/diagnostic.h"
#include "solar/ir/sizes.h"

namespace solar::ir {

// All problems found, in source order. Empty means the program is valid for these sizes.
std::vector<Diagnostic> check(const Program& p, const SymbolValues& sizes);

// bind_sizes(p, overrides) then check; throws DiagnosticError if anything is wrong.
SymbolValues check_or_throw(const Program& p, const SymbolValues& overrides = {});

// A program together with the sizes it passed the checker at. Only check_program makes one, so
// a pass that takes it (einsum::lift) knows the program is valid and need not check it again.
// It refers to the program: the Program must outlive it.
class CheckedProgram {
 public:
  const Program& program() const { return *program_; }
  const SymbolValues& sizes() const { return sizes_; }  // every size, bound

 private:
  friend CheckedProgram check_program(const Program& p, const SymbolValues& overrides);
  CheckedProgram(const Program& p, SymbolValues sizes) : program_(&p), sizes_(std::move(sizes)) {}

  const Program* program_;
  SymbolValues sizes_;
};

// check_or_throw(p, overrides), keeping the program with its bound sizes.
CheckedProgram check_program(const Program& p, const SymbolValues& overrides = {});

}  // namespace solar::ir
