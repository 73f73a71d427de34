// A program held with its check and its einsum graph, each made once, when first asked for: what
// a lowering result (frontend::LowerResult) carries to the analyses of its program, so that one
// analysis checks its program once and lifts it once (tests/python/test_entry_points.py).
#pragma once

#include <mutex>
#include <optional>
#include <utility>

#include "solar/einsum/graph.h"
#include "solar/ir/ast.h"
#include "solar/ir/checker.h"

namespace solar::einsum {

// Neither copied nor moved (its check refers to its program): held by a shared pointer. Safe to
// use from several threads.
class LiftedProgram {
 public:
  explicit LiftedProgram(ir::Program program) : program_(std::move(program)) {}
  LiftedProgram(const LiftedProgram&) = delete;
  LiftedProgram& operator=(const LiftedProgram&) = delete;

  const ir::Program& program() const { return program_; }
  // ir::check_program(program()), made on the first call (DiagnosticError, on every call, for a
  // program that does not pass the checker).
  const ir::CheckedProgram& checked() const;
  // lift(checked()), made on the first call (its routing Balanced, as lift returns it).
  const Graph& graph() const;

 private:
  ir::Program program_;
  mutable std::mutex mutex_;
  mutable std::optional<ir::CheckedProgram> checked_;
  mutable std::optional<Graph> graph_;

  const ir::CheckedProgram& checked_locked() const;
};

}  // namespace solar::einsum
