// Internal helpers for integer expressions: Python's floor division and modulo, overflow-checked,
// and the source position of an expression. Used by sizes.cpp, affine.cpp
// and checker.cpp; not part of the public API.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>

#include "solar/ir/ast.h"
#include "solar/util/checked.h"

namespace solar::ir::detail {

// checked_add, checked_sub and checked_mul: solar/util/checked.h. The divisions return nullopt
// when the exact result does not fit in int64 or on division by zero (callers test the divisor
// first to say which went wrong).

// Floor division, rounding toward negative infinity: -7 / 2 == -4 (Python's //).
inline std::optional<int64_t> floor_div(int64_t a, int64_t b) {
  if (b == 0 || (a == std::numeric_limits<int64_t>::min() && b == -1)) return std::nullopt;
  const int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

// Floor modulo, with the sign of the divisor: -7 % 2 == 1, 7 % -2 == -1 (Python's %).
inline std::optional<int64_t> floor_mod(int64_t a, int64_t b) {
  if (b == 0) return std::nullopt;
  if (b == -1) return 0;  // a % -1 would overflow in C++ for a == INT64_MIN
  const int64_t r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

// Where `e` starts in the source, for diagnostics: the earliest known position in its tree (line 0
// when the whole tree was built without positions).
inline Loc loc_of(const IntExpr& e) {
  Loc best = e.loc;
  for (const IntExprP& operand : {e.a, e.b}) {
    if (!operand) continue;
    const Loc l = loc_of(*operand);
    const bool earlier = l.line < best.line || (l.line == best.line && l.col < best.col);
    if (l.line != 0 && (best.line == 0 || earlier)) best = l;
  }
  return best;
}

}  // namespace solar::ir::detail
