// A program with its check and its graph, each made once (include/solar/einsum/lifted_program.h).
#include "solar/einsum/lifted_program.h"

#include <mutex>

namespace solar::einsum {

const ir::CheckedProgram& LiftedProgram::checked_locked() const {
  if (!checked_) checked_.emplace(ir::check_program(program_));
  return *checked_;
}

const ir::CheckedProgram& LiftedProgram::checked() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return checked_locked();
}

const Graph& LiftedProgram::graph() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  if (!graph_) graph_.emplace(lift(checked_locked()));
  return *graph_;
}

}  // namespace solar::einsum
