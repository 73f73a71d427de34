// Affine analysis of kernel index expressions and iteration domains.
//
// Inside a kernel, loop indices are the variables; sizes and repeat indices are constants. An
// integer expression is affine when it is built from constants and loop indices with +, -, unary
// minus, and products in which at most one side mentions a loop index (docs/ir.md). The rule is
// structural: `i * j`, `i / 2`, `i % 4`, `min(i, 3)` are not affine, even where a value would be.
//
// A kernel's iteration domain is its loop nest: `for i in lo_i..hi_i, j in lo_j..hi_j, ...`, each
// bound affine in the loops to its left. This module converts expressions and domains to affine
// forms, bounds affine forms over a domain exactly, and counts a domain's points exactly
// (triangular and other non-box domains included). The checker uses it for static bounds
// checks; einsum lifting uses it for domain sizes.
//
// Arithmetic is overflow-checked: a result outside int64 raises UserError.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "solar/ir/ast.h"
#include "solar/ir/sizes.h"

namespace solar::ir {

// constant + Σ coeffs[v]·v over loop indices v. Zero coefficients are never stored, so two equal
// functions have equal forms.
struct AffineForm {
  int64_t constant = 0;
  std::map<std::string, int64_t> coeffs;

  int64_t coeff(std::string_view var) const;  // 0 for a variable that does not appear
  bool operator==(const AffineForm&) const = default;
};

// Whether `e` is affine in the loop indices (symbols of kind SymKind::Loop), by the rule above.
bool is_affine(const IntExpr& e);

// The affine form of `e`, or nullopt when !is_affine(e). Sub-expressions free of loop indices are
// evaluated with eval_int over `constants` (sizes and repeat indices), which raises UserError for
// a missing value or a division by zero.
std::optional<AffineForm> to_affine(const IntExpr& e, const SymbolValues& constants);

// The value of `f` at `point`, which must give every variable of `f` (InternalError otherwise).
int64_t evaluate(const AffineForm& f, const SymbolValues& point);

// One loop of a domain: var in lo..hi (half-open); lo and hi are affine in the loops to its left.
struct AffineLoop {
  std::string var;
  AffineForm lo, hi;
};
using AffineDomain = std::vector<AffineLoop>;  // outermost first

// The affine domain of a kernel's loop nest, or nullopt when a bound is not affine or uses a loop
// that is not to its left (the checker reports both). Raises as to_affine.
std::optional<AffineDomain> to_affine_domain(const std::vector<Loop>& loops,
                                             const SymbolValues& constants);

// An extreme value of an affine form over a domain.
//   attained: the value is taken at a point of the domain (so it is exact);
//   otherwise it is only a bound (max: an upper bound, min: a lower bound), and the domain may be
//   empty.
// Method: eliminate loops innermost first. Over lo <= x < hi, the maximum of c·x + rest is at
// x = hi - 1 when c > 0 and at x = lo otherwise; substitute that (affine) bound and continue
// outward. The choices define a witness point; the value is attained exactly when every loop
// range is non-empty at the witness. This always holds when every loop's range is non-empty for
// every outer point (boxes, causal `j in 0..i+1`); when some range can be empty (e.g.
// `j in i+1..N`), the result may be only a bound, and says so.
struct Extremum {
  int64_t value = 0;
  bool attained = false;
};
// `f` must mention only variables of `domain` (InternalError otherwise).
Extremum affine_max(const AffineForm& f, const AffineDomain& domain);
Extremum affine_min(const AffineForm& f, const AffineDomain& domain);

// The exact number of integer points of the domain. Loops whose range does not depend on an outer
// loop multiply; a loop whose inner loops depend on it only through the width of the next loop
// (`i in 0..N, j in 0..i+1, k in 0..K`) is summed in closed form; other dependencies are summed
// by enumerating the outer loop, which raises UserError beyond 2^24 iterations.
int64_t count_points(const AffineDomain& domain);

// count_points of a kernel's loop nest. The bounds must be affine in the loops to their left (the
// checker guarantees it; InternalError otherwise).
int64_t count_points(const std::vector<Loop>& loops, const SymbolValues& constants);

}  // namespace solar::ir
