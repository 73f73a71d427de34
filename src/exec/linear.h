// Affine forms of a kernel's integer expressions (private to the executor).
//
// Inside a kernel, sizes and repeat indices are constants, so every index and loop bound the
// checker accepts is `c + sum_l coef[l] * loop_l`. The executor compiles each one to this form
// once per kernel execution and evaluates it with a dot product.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "solar/ir/ast.h"
#include "solar/ir/sizes.h"

namespace solar::exec {

struct Linear {
  int64_t c = 0;
  std::vector<int64_t> coef;  // one per loop of the kernel, outermost first

  // Value at the loop indices `idx` (one per loop).
  int64_t eval(const int64_t* idx) const {
    int64_t v = c;
    for (size_t l = 0; l < coef.size(); ++l) v += coef[l] * idx[l];
    return v;
  }
  // Coefficient of loop `l`; 0 when l < 0 (a kernel without loops has no vector loop).
  int64_t at(int l) const { return l < 0 ? 0 : coef[static_cast<size_t>(l)]; }
  bool is_constant() const;
};

// The affine form of `e` over `loops` (the kernel's loop names, outermost first), with sizes and
// repeat indices taken from `symbols`; nullopt when `e` is not affine in the loop indices.
// A missing symbol or a division by zero is a UserError at e's position in `file`.
std::optional<Linear> to_linear(const ir::IntExpr& e, const std::vector<std::string>& loops,
                                const ir::SymbolValues& symbols, const std::string& file);

// Floor division and floor modulo (Python semantics); b != 0.
int64_t floor_div(int64_t a, int64_t b);
int64_t floor_mod(int64_t a, int64_t b);

}  // namespace solar::exec
