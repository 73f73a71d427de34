// Affine forms, exact extremes over loop-nest domains, and exact point counts.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>

#include "solar/ir/affine.h"
#include "solar/ir/parser.h"
#include "solar/util/error.h"

namespace solar::ir {
namespace {

// A kernel `for LOOPS: y[] += x[INDEX]` in a program with sizes N = 8 and S = 3.
class KernelText {
 public:
  KernelText(const std::string& loops, const std::string& index)
      : p_(parse("size N = 8\nsize S = 3\ninput x : f32[1]\noutput y : f32[]\n"
                 "kernel kern {\n  for " +
                 loops + ":\n    y[] += x[" + index + "]\n}\n")),
        sizes_(bind_sizes(p_)) {}

  const Kernel& kernel() const { return std::get<Kernel>(p_.body.at(0)->node); }
  const IntExpr& index() const { return *kernel().rhs->indices.at(0); }
  std::optional<AffineForm> form() const { return to_affine(index(), sizes_); }
  AffineDomain domain() const { return *to_affine_domain(kernel().loops, sizes_); }
  int64_t count() const { return count_points(kernel().loops, sizes_); }

 private:
  Program p_;
  SymbolValues sizes_;
};

AffineForm form(int64_t constant, std::map<std::string, int64_t> coeffs) {
  return AffineForm{constant, std::move(coeffs)};
}

TEST(ToAffine, LinearCombinations) {
  const std::string loops = "i in 0..N, j in 0..N, k in 0..S";
  EXPECT_EQ(KernelText(loops, "2*i + k - 1").form(), form(-1, {{"i", 2}, {"k", 1}}));
  EXPECT_EQ(KernelText(loops, "S*i").form(), form(0, {{"i", 3}}));
  EXPECT_EQ(KernelText(loops, "(S + 1)*i - i*2").form(), form(0, {{"i", 2}}));  // 4i - 2i
  EXPECT_EQ(KernelText(loops, "-(i - 2*j) + 1").form(), form(1, {{"i", -1}, {"j", 2}}));
  EXPECT_EQ(KernelText(loops, "N / 3 + N % 3 + j").form(), form(4, {{"j", 1}}));  // 2 + 2
  EXPECT_EQ(KernelText(loops, "(N / 2) * i").form(), form(0, {{"i", 4}}));
  EXPECT_EQ(KernelText(loops, "min(N, S) * k").form(), form(0, {{"k", 3}}));
}

TEST(ToAffine, ZeroCoefficientsAreDropped) {
  const std::string loops = "i in 0..N, j in 0..N";
  EXPECT_EQ(KernelText(loops, "i - i + 5").form(), form(5, {}));
  EXPECT_EQ(KernelText(loops, "(S - 3) * i + j").form(), form(0, {{"j", 1}}));
}

TEST(ToAffine, NonAffineExpressions) {
  const std::string loops = "i in 0..N, j in 0..N";
  for (const char* index : {"i * j", "i / 2", "i % 4", "min(i, 3)", "max(i, j)",
                            "(i + 1) * (j - 1)", "2 * (i * j)", "-(i / 2)"}) {
    const KernelText k(loops, index);
    EXPECT_FALSE(is_affine(k.index())) << index;
    EXPECT_EQ(k.form(), std::nullopt) << index;
  }
  EXPECT_TRUE(is_affine(KernelText(loops, "N / 2 + i").index()));
}

TEST(AffineExtremes, BoxDomain) {
  // 2*i + k - 1 over i in 0..8, k in 0..3: min at (0, 0) = -1, max at (7, 2) = 2*7 + 2 - 1 = 15.
  const KernelText k("i in 0..8, k in 0..3", "2*i + k - 1");
  const Extremum lo = affine_min(*k.form(), k.domain());
  const Extremum hi = affine_max(*k.form(), k.domain());
  EXPECT_EQ(lo.value, -1);
  EXPECT_EQ(hi.value, 15);
  EXPECT_TRUE(lo.attained && hi.attained);
}

TEST(AffineExtremes, NegativeCoefficients) {
  // 10 - 3*i over i in 2..6: max at i = 2: 4; min at i = 5: -5.
  const KernelText k("i in 2..6", "10 - 3*i");
  EXPECT_EQ(affine_max(*k.form(), k.domain()).value, 4);
  EXPECT_EQ(affine_min(*k.form(), k.domain()).value, -5);
}

TEST(AffineExtremes, TriangularDomainIsExact) {
  // i in 0..8, j in 0..i+1: j ranges 0..7; i - j ranges 0 (j = i) .. 7 (i = 7, j = 0);
  // i + j ranges 0..14 (i = j = 7), not 0..15 as the bounding box would give.
  const KernelText j("i in 0..N, j in 0..i + 1", "j");
  EXPECT_EQ(affine_max(*j.form(), j.domain()).value, 7);
  const KernelText diff("i in 0..N, j in 0..i + 1", "i - j");
  EXPECT_EQ(affine_min(*diff.form(), diff.domain()).value, 0);
  EXPECT_EQ(affine_max(*diff.form(), diff.domain()).value, 7);
  const KernelText sum("i in 0..N, j in 0..i + 1", "i + j");
  const Extremum hi = affine_max(*sum.form(), sum.domain());
  EXPECT_EQ(hi.value, 14);
  EXPECT_TRUE(hi.attained);
}

TEST(AffineExtremes, PossiblyEmptyRangesGiveBoundsOnly) {
  // i in 0..8, j in i+1..8: the range of j is empty for i = 7, so i only reaches 6. Eliminating j
  // (coefficient 0) then maximising i picks i = 7, where j has no values: a bound, not attained.
  const KernelText i("i in 0..N, j in i + 1..N", "i");
  const Extremum hi = affine_max(*i.form(), i.domain());
  EXPECT_EQ(hi.value, 7);
  EXPECT_FALSE(hi.attained);
  // j's maximum, 7, is taken at (0, 7).
  const KernelText j("i in 0..N, j in i + 1..N", "j");
  EXPECT_EQ(affine_max(*j.form(), j.domain()).value, 7);
  EXPECT_TRUE(affine_max(*j.form(), j.domain()).attained);
}

TEST(AffineExtremes, EmptyAndLoopFreeDomains) {
  const KernelText empty("i in 0..0", "i + 1");
  EXPECT_FALSE(affine_max(*empty.form(), empty.domain()).attained);
  EXPECT_FALSE(affine_min(*empty.form(), empty.domain()).attained);
  const Extremum c = affine_max(form(5, {}), {});
  EXPECT_EQ(c.value, 5);
  EXPECT_TRUE(c.attained);
}

TEST(AffineDomains, BoundsMustUseOuterLoopsAffinely) {
  const SymbolValues none;
  const Loop i{"i", int_const(0), int_const(4), {}};
  const Loop j_uses_k{"j", int_const(0), int_sym("k", SymKind::Loop), {}};
  const Loop k{"k", int_const(0), int_const(4), {}};
  const Loop j_square{
      "j",
      int_const(0),
      int_binary(IntOp::Mul, int_sym("i", SymKind::Loop), int_sym("i", SymKind::Loop)),
      {}};
  EXPECT_TRUE(to_affine_domain({i, k}, none).has_value());
  EXPECT_FALSE(to_affine_domain({i, j_uses_k, k}, none).has_value());  // k is to the right
  EXPECT_FALSE(to_affine_domain({i, j_square}, none).has_value());
  EXPECT_THROW(count_points({i, j_square}, none), InternalError);
}

TEST(CountPoints, BoxesMultiply) {
  EXPECT_EQ(KernelText("i in 0..N, k in 0..S", "i").count(), 24);  // 8 * 3
  EXPECT_EQ(KernelText("i in 2..N, k in 1..S", "i").count(), 12);  // 6 * 2
  EXPECT_EQ(KernelText("i in 5..2, k in 0..S", "i").count(), 0);   // empty outer range
  EXPECT_EQ(count_points(AffineDomain{}), 1);                      // a loop-free kernel runs once
}

TEST(CountPoints, TriangularDomainsCountTheTriangle) {
  // i in 0..N, j in 0..i+1: 1 + 2 + ... + N = N(N+1)/2 = 8 * 9 / 2 = 36 (the box has 64).
  EXPECT_EQ(KernelText("i in 0..N, j in 0..i + 1", "i").count(), 36);
  // Strictly upper: j in i+1..N: 7 + 6 + ... + 0 = N(N-1)/2 = 28.
  EXPECT_EQ(KernelText("i in 0..N, j in i + 1..N", "i").count(), 28);
  // Decreasing widths: j in 0..N-i: 8 + 7 + ... + 1 = 36.
  EXPECT_EQ(KernelText("i in 0..N, j in 0..N - i", "i").count(), 36);
  // Causal attention with trailing batch and head loops: S * (1 + ... + N) * N = 3 * 36 * 8 = 864.
  EXPECT_EQ(KernelText("b in 0..S, i in 0..N, j in 0..i + 1, d in 0..N", "i").count(), 864);
}

TEST(CountPoints, WidthsClampedAtZero) {
  // j in 0..5-i over i in 0..10: widths 5, 4, 3, 2, 1, then empty: 15.
  EXPECT_EQ(KernelText("i in 0..10, j in 0..5 - i", "i").count(), 15);
  // j in 0..i-3 over i in 0..10: empty for i <= 3, then 1..6: 21.
  EXPECT_EQ(KernelText("i in 0..10, j in 0..i - 3", "i").count(), 21);
  // j in 2*i..i+4 over i in 0..8: widths 4 - i for i < 4: 4 + 3 + 2 + 1 = 10.
  EXPECT_EQ(KernelText("i in 0..N, j in 2*i..i + 4", "i").count(), 10);
}

TEST(CountPoints, ClosedFormsScale) {
  // N = 4096: N(N+1)/2 = 4096 * 4097 / 2 = 8390656, without enumerating the triangle.
  const SymbolValues sizes{{"N", 4096}};
  const Loop i{"i", int_const(0), int_sym("N", SymKind::Size), {}};
  const Loop j{
      "j", int_const(0), int_binary(IntOp::Add, int_sym("i", SymKind::Loop), int_const(1)), {}};
  EXPECT_EQ(count_points({i, j}, sizes), 8390656);
}

TEST(CountPoints, NestedDependenciesEnumerate) {
  // Tetrahedron i in 0..N, j in 0..i+1, k in 0..j+1: Σ_i (i+1)(i+2)/2 = C(N+2, 3) = 10*9*8/6 = 120.
  EXPECT_EQ(KernelText("i in 0..N, j in 0..i + 1, k in 0..j + 1", "i").count(), 120);
}

TEST(CountPoints, LimitsAreUserErrors) {
  const Loop big{"i", int_const(0), int_sym("N", SymKind::Size), {}};
  const Loop j{
      "j", int_const(0), int_binary(IntOp::Add, int_sym("i", SymKind::Loop), int_const(1)), {}};
  const Loop k{
      "k", int_const(0), int_binary(IntOp::Add, int_sym("j", SymKind::Loop), int_const(1)), {}};
  // The tetrahedron needs one enumeration step per value of i: 2^25 is over the 2^24 limit.
  EXPECT_THROW(count_points({big, j, k}, {{"N", int64_t{1} << 25}}), UserError);
  // (2^32)^2 = 2^64 points overflow int64.
  const Loop wide{"w", int_const(0), int_sym("N", SymKind::Size), {}};
  EXPECT_THROW(count_points({big, wide}, {{"N", int64_t{1} << 32}}), UserError);
}

// ---- Property tests: random small domains against brute-force enumeration ----

struct Random {
  std::mt19937 rng{12345};
  int64_t in(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); }
};

// A random domain of up to 3 loops; each bound is c + Σ a·(outer var), small coefficients.
AffineDomain random_domain(Random& r) {
  AffineDomain d;
  const int64_t depth = r.in(1, 3);
  for (int64_t k = 0; k < depth; ++k) {
    AffineLoop loop{"v" + std::to_string(k), form(r.in(-2, 2), {}), form(r.in(0, 6), {})};
    for (const AffineLoop& outer : d) {
      for (AffineForm* bound : {&loop.lo, &loop.hi}) {
        const int64_t c = r.in(-1, 1);
        if (c != 0) bound->coeffs[outer.var] = c;
      }
    }
    d.push_back(std::move(loop));
  }
  return d;
}

// Calls visit(point) for every point of the domain.
template <typename F>
void for_each_point(const AffineDomain& d, size_t k, SymbolValues& point, F&& visit) {
  if (k == d.size()) return visit(point);
  for (int64_t x = evaluate(d[k].lo, point); x < evaluate(d[k].hi, point); ++x) {
    point[d[k].var] = x;
    for_each_point(d, k + 1, point, visit);
  }
  point.erase(d[k].var);
}

TEST(AffineProperties, MatchBruteForce) {
  Random r;
  int attained = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    const AffineDomain d = random_domain(r);
    AffineForm f = form(r.in(-3, 3), {});
    for (const AffineLoop& l : d) {
      if (const int64_t c = r.in(-3, 3)) f.coeffs[l.var] = c;
    }
    int64_t points = 0;
    int64_t lo = INT64_MAX;
    int64_t hi = INT64_MIN;
    SymbolValues point;
    for_each_point(d, 0, point, [&](const SymbolValues& p) {
      ++points;
      lo = std::min(lo, evaluate(f, p));
      hi = std::max(hi, evaluate(f, p));
    });
    ASSERT_EQ(count_points(d), points) << "trial " << trial;
    const Extremum mn = affine_min(f, d);
    const Extremum mx = affine_max(f, d);
    if (points == 0) {
      EXPECT_FALSE(mn.attained || mx.attained) << "trial " << trial;
      continue;
    }
    // Always sound bounds; exact whenever attained.
    EXPECT_LE(mn.value, lo) << "trial " << trial;
    EXPECT_GE(mx.value, hi) << "trial " << trial;
    if (mn.attained) {
      EXPECT_EQ(mn.value, lo) << "trial " << trial;
    }
    if (mx.attained) {
      EXPECT_EQ(mx.value, hi) << "trial " << trial;
    }
    attained += mn.attained + mx.attained;
  }
  EXPECT_GT(attained, 2000);  // most random extremes are exact, so the exact path is exercised
}

}  // namespace
}  // namespace solar::ir
