// The state of one run of a program (private to the executor).
#pragma once

#include <string>

#include "solar/exec/executor.h"
#include "solar/ir/ast.h"
#include "solar/ir/sizes.h"

namespace solar::exec {

struct Env {
  const ir::Program& program;
  TensorMap tensors;         // every declared tensor, by name
  ir::SymbolValues symbols;  // sizes, and the indices of the enclosing repeat blocks
  bool fast_paths = true;

  Tensor& tensor(const std::string& name);  // InternalError when undeclared
};

}  // namespace solar::exec
