#include "linear.h"

#include <algorithm>
#include <utility>

#include "solar/ir/diagnostic.h"

namespace solar::exec {
namespace {

using ir::IntOp;

[[noreturn]] void fail(const ir::IntExpr& e, const std::string& file, const std::string& what) {
  throw ir::DiagnosticError({ir::Diagnostic{file, e.loc, what}});
}

Linear constant(int64_t c, size_t loops) {
  Linear f;
  f.c = c;
  f.coef.assign(loops, 0);
  return f;
}

Linear scaled(Linear f, int64_t k) {
  f.c *= k;
  for (int64_t& x : f.coef) x *= k;
  return f;
}

Linear summed(Linear a, const Linear& b, int64_t sign) {
  a.c += sign * b.c;
  for (size_t l = 0; l < a.coef.size(); ++l) a.coef[l] += sign * b.coef[l];
  return a;
}

Linear symbol(const ir::IntExpr& e, const std::vector<std::string>& loops,
              const ir::SymbolValues& symbols, const std::string& file) {
  if (e.sym_kind == ir::SymKind::Loop) {
    const auto it = std::find(loops.begin(), loops.end(), e.name);
    if (it == loops.end()) fail(e, file, "'" + e.name + "' is not a loop of this kernel");
    Linear f = constant(0, loops.size());
    f.coef[static_cast<size_t>(it - loops.begin())] = 1;
    return f;
  }
  const auto it = symbols.find(e.name);
  if (it == symbols.end()) fail(e, file, "'" + e.name + "' has no value here");
  return constant(it->second, loops.size());
}

// min, max, floor division and modulo of two constants.
Linear nonlinear(const ir::IntExpr& e, const Linear& a, const Linear& b, const std::string& file) {
  if ((e.op == IntOp::FloorDiv || e.op == IntOp::Mod) && b.c == 0) {
    fail(e, file, "division by zero");
  }
  switch (e.op) {
    case IntOp::FloorDiv:
      return constant(floor_div(a.c, b.c), a.coef.size());
    case IntOp::Mod:
      return constant(floor_mod(a.c, b.c), a.coef.size());
    case IntOp::Min:
      return constant(std::min(a.c, b.c), a.coef.size());
    case IntOp::Max:
      return constant(std::max(a.c, b.c), a.coef.size());
    case IntOp::Const:
    case IntOp::Sym:
    case IntOp::Neg:
    case IntOp::Add:
    case IntOp::Sub:
    case IntOp::Mul:
      break;
  }
  SOLAR_CHECK(false, "nonlinear() on an affine operator");
  return a;
}

}  // namespace

bool Linear::is_constant() const {
  return std::all_of(coef.begin(), coef.end(), [](int64_t x) { return x == 0; });
}

int64_t floor_div(int64_t a, int64_t b) {
  const int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

int64_t floor_mod(int64_t a, int64_t b) { return a - floor_div(a, b) * b; }

std::optional<Linear> to_linear(const ir::IntExpr& e, const std::vector<std::string>& loops,
                                const ir::SymbolValues& symbols, const std::string& file) {
  if (e.op == IntOp::Const) return constant(e.value, loops.size());
  if (e.op == IntOp::Sym) return symbol(e, loops, symbols, file);
  std::optional<Linear> a = to_linear(*e.a, loops, symbols, file);
  if (!a) return std::nullopt;
  if (e.op == IntOp::Neg) return scaled(std::move(*a), -1);
  std::optional<Linear> b = to_linear(*e.b, loops, symbols, file);
  if (!b) return std::nullopt;
  switch (e.op) {
    case IntOp::Add:
      return summed(std::move(*a), *b, 1);
    case IntOp::Sub:
      return summed(std::move(*a), *b, -1);
    case IntOp::Mul:
      if (b->is_constant()) return scaled(std::move(*a), b->c);
      if (a->is_constant()) return scaled(std::move(*b), a->c);
      return std::nullopt;
    case IntOp::FloorDiv:
    case IntOp::Mod:
    case IntOp::Min:
    case IntOp::Max:
      if (!a->is_constant() || !b->is_constant()) return std::nullopt;
      return nonlinear(e, *a, *b, file);
    case IntOp::Const:
    case IntOp::Sym:
    case IntOp::Neg:
      break;
  }
  SOLAR_CHECK(false, "to_linear: unexpected operator");
  return std::nullopt;
}

}  // namespace solar::exec
