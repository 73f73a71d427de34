// Composition statements: data movement between tensors (private to the executor).
#pragma once

#include "env.h"
#include "solar/ir/ast.h"

namespace solar::exec {

// Runs the composition statement `s` (docs/ir.md, "Composition statements"). Values move
// exactly between tensors of one dtype and are rounded to the destination's dtype otherwise.
// Shapes that do not fit and data-dependent indices out of range are UserErrors at s's position.
void run_compose(const ir::Stmt& s, Env& env);

}  // namespace solar::exec
