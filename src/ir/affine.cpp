// Affine forms of kernel index expressions; extremes and point counts over loop-nest domains.
#include "solar/ir/affine.h"

#include <algorithm>

#include "int_util.h"
#include "solar/util/error.h"

namespace solar::ir {

namespace {

[[noreturn]] void overflow() {
  throw UserError("integer overflow: an index or domain computation exceeds the 64-bit range");
}

int64_t must(std::optional<int64_t> r) {
  if (!r) overflow();
  return *r;
}

bool mentions_loop(const IntExpr& e) {
  if (e.op == IntOp::Sym) return e.sym_kind == SymKind::Loop;
  return (e.a && mentions_loop(*e.a)) || (e.b && mentions_loop(*e.b));
}

// f + k·g
AffineForm add_scaled(AffineForm f, const AffineForm& g, int64_t k) {
  f.constant = must(checked_add(f.constant, must(checked_mul(g.constant, k))));
  for (const auto& [var, c] : g.coeffs) {
    const int64_t sum = must(checked_add(f.coeff(var), must(checked_mul(c, k))));
    if (sum == 0) {
      f.coeffs.erase(var);
    } else {
      f.coeffs[var] = sum;
    }
  }
  return f;
}

AffineForm constant_form(int64_t c) { return AffineForm{c, {}}; }

AffineForm scaled(const AffineForm& f, int64_t k) { return add_scaled(AffineForm{}, f, k); }

// f with `var` replaced by g.
AffineForm substitute(AffineForm f, const std::string& var, const AffineForm& g) {
  const int64_t c = f.coeff(var);
  f.coeffs.erase(var);
  return add_scaled(std::move(f), g, c);
}

// Whether every variable of f is a loop of `outer`.
bool uses_only(const AffineForm& f, const AffineDomain& outer) {
  return std::all_of(f.coeffs.begin(), f.coeffs.end(), [&](const auto& entry) {
    return std::any_of(outer.begin(), outer.end(),
                       [&](const AffineLoop& l) { return l.var == entry.first; });
  });
}

// Whether choosing loop k's value as choice[k] (affine in the loops to its left), outermost first,
// gives a point of the domain: every range must be non-empty where it is entered.
bool is_witness(const AffineDomain& domain, const std::vector<AffineForm>& choice) {
  SymbolValues point;
  for (size_t k = 0; k < domain.size(); ++k) {
    if (evaluate(domain[k].lo, point) >= evaluate(domain[k].hi, point)) return false;
    point[domain[k].var] = evaluate(choice[k], point);
  }
  return true;
}

// extremum over a box (every bound a constant), without building forms: the same steps, in the
// same order, so the same value and the same overflow.
std::optional<Extremum> box_extremum(const AffineForm& f, const AffineDomain& domain,
                                     bool maximise) {
  for (const AffineLoop& loop : domain) {
    if (!loop.lo.coeffs.empty() || !loop.hi.coeffs.empty()) return std::nullopt;
  }
  int64_t value = f.constant;
  size_t matched = 0;  // variables of f eliminated
  for (size_t k = domain.size(); k-- > 0;) {
    const AffineLoop& loop = domain[k];
    bool inner = false;  // an inner loop of the same name took the variable already
    for (size_t i = k + 1; i < domain.size() && !inner; ++i) inner = domain[i].var == loop.var;
    const int64_t c = inner ? 0 : f.coeff(loop.var);
    if (c != 0) ++matched;
    const bool take_last = maximise ? c > 0 : c < 0;
    const int64_t choice = take_last ? must(checked_add(loop.hi.constant, -1)) : loop.lo.constant;
    value = must(checked_add(value, must(checked_mul(choice, c))));
  }
  SOLAR_CHECK(matched == f.coeffs.size(), "affine form mentions a variable outside the domain");
  const bool attained = std::all_of(domain.begin(), domain.end(), [](const AffineLoop& l) {
    return l.lo.constant < l.hi.constant;
  });
  return Extremum{value, attained};
}

// See affine_max in the header.
Extremum extremum(const AffineForm& f, const AffineDomain& domain, bool maximise) {
  if (const std::optional<Extremum> box = box_extremum(f, domain, maximise)) return *box;
  AffineForm g = f;
  std::vector<AffineForm> choice(domain.size());
  for (size_t k = domain.size(); k-- > 0;) {
    const AffineLoop& loop = domain[k];
    const int64_t c = g.coeff(loop.var);
    const bool take_last = maximise ? c > 0 : c < 0;
    choice[k] = take_last ? add_scaled(loop.hi, constant_form(1), -1) : loop.lo;
    g = substitute(std::move(g), loop.var, choice[k]);
  }
  SOLAR_CHECK(g.coeffs.empty(), "affine form mentions a variable outside the domain");
  return {g.constant, is_witness(domain, choice)};
}

// Σ_{x=lo}^{hi-1} max(0, a·x + b), in closed form.
int64_t sum_positive(int64_t a, int64_t b, int64_t lo, int64_t hi) {
  if (a < 0) {  // substitute x = -y: y runs over 1-hi .. -lo
    return sum_positive(must(checked_sub(0, a)), b, must(checked_sub(1, hi)),
                        must(checked_sub(1, lo)));
  }
  if (a == 0) return b > 0 ? must(checked_mul(b, must(checked_sub(hi, lo)))) : 0;
  // a·x + b > 0  <=>  x >= floor(-b / a) + 1
  const int64_t first =
      std::max(lo, must(checked_add(must(detail::floor_div(must(checked_sub(0, b)), a)), 1)));
  if (first >= hi) return 0;
  // An arithmetic series: n terms from t0 to t1; (t0 + t1) is even whenever n is odd.
  const int64_t n = must(checked_sub(hi, first));
  const int64_t t0 = must(checked_add(must(checked_mul(a, first)), b));
  const int64_t t1 = must(checked_add(must(checked_mul(a, hi - 1)), b));
  const int64_t ends = must(checked_add(t0, t1));
  return n % 2 == 0 ? must(checked_mul(n / 2, ends)) : must(checked_mul(n, ends / 2));
}

// Counts the points of a domain, loop by loop; see count_points in the header.
class PointCounter {
 public:
  explicit PointCounter(const AffineDomain& domain) : domain_(domain) {}

  // Points of loops k.. for the values of loops 0..k-1 in point_.
  int64_t count(size_t k) {
    if (k == domain_.size()) return 1;
    const AffineLoop& loop = domain_[k];
    const int64_t lo = evaluate(loop.lo, point_);
    const int64_t hi = evaluate(loop.hi, point_);
    if (lo >= hi) return 0;
    if (!inner_depends(k + 1, loop.var)) {
      return must(checked_mul(must(checked_sub(hi, lo)), count(k + 1)));
    }
    if (!inner_depends(k + 2, loop.var) && !inner_depends(k + 2, domain_[k + 1].var)) {
      return must(checked_mul(next_width_sum(k, lo, hi), count(k + 2)));
    }
    return enumerate(k, lo, hi);
  }

 private:
  static constexpr int64_t kMaxIterations = int64_t{1} << 24;

  // Whether the range of a loop at position >= from depends on `var`.
  bool inner_depends(size_t from, const std::string& var) const {
    return std::any_of(
        domain_.begin() + static_cast<std::ptrdiff_t>(std::min(from, domain_.size())),
        domain_.end(),
        [&](const AffineLoop& l) { return l.lo.coeff(var) != 0 || l.hi.coeff(var) != 0; });
  }

  // Σ over loop k's values x in lo..hi of the width of loop k+1, which is affine in x.
  int64_t next_width_sum(size_t k, int64_t lo, int64_t hi) {
    const AffineLoop& next = domain_[k + 1];
    AffineForm width = add_scaled(next.hi, next.lo, -1);
    const int64_t a = width.coeff(domain_[k].var);
    width.coeffs.erase(domain_[k].var);
    return sum_positive(a, evaluate(width, point_), lo, hi);
  }

  int64_t enumerate(size_t k, int64_t lo, int64_t hi) {
    int64_t total = 0;
    for (int64_t x = lo; x < hi; ++x) {
      if (++iterations_ > kMaxIterations) {
        throw UserError("cannot count the points of the domain exactly: loop '" + domain_[k].var +
                        "' needs more than 2^24 iterations to enumerate");
      }
      point_[domain_[k].var] = x;
      total = must(checked_add(total, count(k + 1)));
    }
    return total;
  }

  const AffineDomain& domain_;
  SymbolValues point_;
  int64_t iterations_ = 0;
};

}  // namespace

int64_t AffineForm::coeff(std::string_view var) const {
  const auto it = coeffs.find(std::string(var));
  return it == coeffs.end() ? 0 : it->second;
}

bool is_affine(const IntExpr& e) {
  switch (e.op) {
    case IntOp::Const:
    case IntOp::Sym:
      return true;
    case IntOp::Neg:
      return is_affine(*e.a);
    case IntOp::Add:
    case IntOp::Sub:
      return is_affine(*e.a) && is_affine(*e.b);
    case IntOp::Mul:
      return is_affine(*e.a) && is_affine(*e.b) && !(mentions_loop(*e.a) && mentions_loop(*e.b));
    case IntOp::FloorDiv:
    case IntOp::Mod:
    case IntOp::Min:
    case IntOp::Max:
      return !mentions_loop(e);
  }
  SOLAR_CHECK(false, "unknown IntOp");
}

std::optional<AffineForm> to_affine(const IntExpr& e, const SymbolValues& constants) {
  if (!is_affine(e)) return std::nullopt;
  if (!mentions_loop(e)) return constant_form(eval_int(e, constants));
  switch (e.op) {
    case IntOp::Sym:
      return AffineForm{0, {{e.name, 1}}};
    case IntOp::Neg:
      return scaled(*to_affine(*e.a, constants), -1);
    case IntOp::Add:
      return add_scaled(*to_affine(*e.a, constants), *to_affine(*e.b, constants), 1);
    case IntOp::Sub:
      return add_scaled(*to_affine(*e.a, constants), *to_affine(*e.b, constants), -1);
    case IntOp::Mul:  // is_affine: exactly one side mentions a loop
      return mentions_loop(*e.a) ? scaled(*to_affine(*e.a, constants), eval_int(*e.b, constants))
                                 : scaled(*to_affine(*e.b, constants), eval_int(*e.a, constants));
    case IntOp::Const:
    case IntOp::FloorDiv:
    case IntOp::Mod:
    case IntOp::Min:
    case IntOp::Max:
      break;  // constant, or not affine once it mentions a loop: handled above
  }
  SOLAR_CHECK(false, "to_affine: unexpected IntOp");
}

int64_t evaluate(const AffineForm& f, const SymbolValues& point) {
  int64_t v = f.constant;
  for (const auto& [var, c] : f.coeffs) {
    const auto it = point.find(var);
    SOLAR_CHECK(it != point.end(), "evaluate: no value for '" + var + "'");
    v = must(checked_add(v, must(checked_mul(c, it->second))));
  }
  return v;
}

std::optional<AffineDomain> to_affine_domain(const std::vector<Loop>& loops,
                                             const SymbolValues& constants) {
  AffineDomain domain;
  for (const Loop& loop : loops) {
    std::optional<AffineForm> lo = to_affine(*loop.lo, constants);
    std::optional<AffineForm> hi = to_affine(*loop.hi, constants);
    if (!lo || !hi || !uses_only(*lo, domain) || !uses_only(*hi, domain)) return std::nullopt;
    domain.push_back({loop.name, std::move(*lo), std::move(*hi)});
  }
  return domain;
}

Extremum affine_max(const AffineForm& f, const AffineDomain& domain) {
  return extremum(f, domain, true);
}

Extremum affine_min(const AffineForm& f, const AffineDomain& domain) {
  return extremum(f, domain, false);
}

int64_t count_points(const AffineDomain& domain) { return PointCounter(domain).count(0); }

int64_t count_points(const std::vector<Loop>& loops, const SymbolValues& constants) {
  const std::optional<AffineDomain> domain = to_affine_domain(loops, constants);
  SOLAR_CHECK(domain.has_value(), "count_points: a loop bound is not affine in the outer loops");
  return count_points(*domain);
}

}  // namespace solar::ir
