// The value operators of kernel right sides, on doubles (private to the executor).
// Semantics are in docs/ir.md ("Value expressions", "Execution semantics").
#pragma once

#include <cstdint>

#include "solar/ir/ast.h"

namespace solar::exec {

// out[l] = op(out[l]) for l in [0, n).
void apply_unary(ir::UnaryOp op, double* out, int64_t n);
// out[l] = op(out[l], b[l]) for l in [0, n).
void apply_binary(ir::BinaryOp op, double* out, const double* b, int64_t n);

// Element-wise maximum and minimum that propagate NaN (as torch.maximum and jnp.maximum).
inline double nan_max(double a, double b) { return (a != a || a > b) ? a : b; }
inline double nan_min(double a, double b) { return (a != a || a < b) ? a : b; }

// The inverse error function (erf(erfinv(y)) == y up to rounding; +-1 -> +-inf; |y| > 1 -> NaN).
double erfinv(double y);

}  // namespace solar::exec
