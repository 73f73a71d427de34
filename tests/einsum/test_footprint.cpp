// Footprints by structure (src/einsum/footprint.h): hand-checked images of affine forms over
// boxes, triangles and guarded (padded) maps, unions of maps, and property tests against brute
// force enumeration (also of padded views composed with slices, permutes and pads).
#include "../../src/einsum/footprint.h"

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "../../src/einsum/view.h"

namespace solar::einsum::detail {
namespace {

using ir::AffineDomain;
using ir::AffineForm;

AffineForm form(int64_t constant, std::map<std::string, int64_t> coeffs) {
  return AffineForm{constant, std::move(coeffs)};
}

// A loop `var in lo..hi` with constant bounds.
ir::AffineLoop box(const std::string& var, int64_t lo, int64_t hi) {
  return {var, form(lo, {}), form(hi, {})};
}

int64_t count(const AffineForm& f, const AffineDomain& d) {
  const Image img = affine_image(f, d);
  EXPECT_TRUE(img.exact);
  return img.count;
}

// Every value of f over the domain, by enumeration; only the points where `keep` holds.
std::set<int64_t> brute_force(const AffineForm& f, const AffineDomain& d,
                              const std::function<bool(const ir::SymbolValues&)>& keep) {
  std::set<int64_t> values;
  ir::SymbolValues point;
  auto rec = [&](auto& self, size_t k) -> void {
    if (k == d.size()) {
      if (keep(point)) values.insert(ir::evaluate(f, point));
      return;
    }
    const int64_t hi = ir::evaluate(d[k].hi, point);
    for (int64_t x = ir::evaluate(d[k].lo, point); x < hi; ++x) {
      point[d[k].var] = x;
      self(self, k + 1);
    }
  };
  rec(rec, 0);
  return values;
}

// A guarded map of a 1-D tensor of `extent` elements (stride 1) read at `index`.
AccessMap guarded_1d(const AffineForm& index, int64_t extent, const AffineDomain& d) {
  AccessMap m;
  m.domain = d;
  m.index = {index};
  m.strides = {1};
  m.extent = {extent};
  m.guarded = true;
  return m;
}

TEST(AffineImage, BoxLoopsThatDoNotOverlapMultiply) {
  // GEMM A[i, k] at 16*i + k, i in 0..64, k in 0..16: k spans 0..15 < 16, so 64 * 16 = 1024.
  EXPECT_EQ(
      count(form(0, {{"i", 16}, {"k", 1}}), {box("i", 0, 64), box("j", 0, 32), box("k", 0, 16)}),
      1024);
  // B[k, j] at 32*k + j: 16 * 32 = 512; loop i is not used.
  EXPECT_EQ(
      count(form(0, {{"k", 32}, {"j", 1}}), {box("i", 0, 64), box("j", 0, 32), box("k", 0, 16)}),
      512);
  // A broadcast (coefficient 0) and a negative coefficient: 7 - i over 0..5 is {3..7}, 5 values.
  EXPECT_EQ(count(form(7, {{"i", -1}}), {box("i", 0, 5), box("b", 0, 9)}), 5);
}

TEST(AffineImage, ConvolutionWindows) {
  // Rows 2*oh + kh, oh in 0..3, kh in 0..3 (H = 8, stride 2, kernel 3): {0..6}, 7 of 8 rows.
  EXPECT_EQ(count(form(0, {{"oh", 2}, {"kh", 1}}), {box("oh", 0, 3), box("kh", 0, 3)}), 7);
  // Dilation 2, stride 1: oh + 2*kh, oh in 0..4, kh in 0..3: {0..7}, 8 values.
  EXPECT_EQ(count(form(0, {{"oh", 1}, {"kh", 2}}), {box("oh", 0, 4), box("kh", 0, 3)}), 8);
  // Stride 3 > kernel 2: 3*oh + kh, oh in 0..4: {0,1, 3,4, 6,7, 9,10}, 4 * 2 = 8 values.
  EXPECT_EQ(count(form(0, {{"oh", 3}, {"kh", 1}}), {box("oh", 0, 4), box("kh", 0, 2)}), 8);
  // Whole 2-D windows on an 8x8 image with rows of 8: rows 7 x cols 7 = 49.
  EXPECT_EQ(count(form(0, {{"oh", 16}, {"kh", 8}, {"ow", 2}, {"kw", 1}}),
                  {box("oh", 0, 3), box("ow", 0, 3), box("kh", 0, 3), box("kw", 0, 3)}),
            49);
}

TEST(AffineImage, OverlappingGroupInABitset) {
  // 2a + 3b, a in 0..4, b in 0..3: {0,2,4,6} + {0,3,6} = {0,2,3,4,5,6,7,8,9,10,12}: 11 values
  // (6 = 6 + 0 = 0 + 6 once), not an interval (1 and 11 are missing).
  const Image img = affine_image(form(0, {{"a", 2}, {"b", 3}}), {box("a", 0, 4), box("b", 0, 3)});
  EXPECT_EQ(img.count, 11);
  EXPECT_TRUE(img.exact);
  ASSERT_EQ(img.groups.size(), 1u);
  EXPECT_FALSE(img.groups[0].bits.empty());
}

TEST(AffineImage, Triangles) {
  // Causal attention, T = 16, D = 8, j in 0..i+1:
  const AffineDomain causal = {
      box("i", 0, 16), {"j", form(0, {}), form(1, {{"i", 1}})}, box("d", 0, 8)};
  EXPECT_EQ(count(form(0, {{"i", 16}, {"j", 1}}), causal), 136);  // S[i, j]: 16 * 17 / 2
  EXPECT_EQ(count(form(0, {{"j", 8}, {"d", 1}}), causal), 128);   // K[j, d]: all 16 rows
  EXPECT_EQ(count(form(0, {{"i", 8}, {"d", 1}}), causal), 128);   // Q[i, d]
  // i + j over the same triangle: i + j in i..2i for each i, so {0..30}: 31 values.
  EXPECT_EQ(count(form(0, {{"i", 1}, {"j", 1}}), causal), 31);
}

TEST(AffineImage, LargeInjectiveTriangleIsCountedNotEnumerated) {
  // i in 0..A, j in 0..i+1, k in 0..j+1 with A = 2900 has A(A+1)/2 = 4206450 > 2^22 points
  // (i, j) to enumerate; A^2*i + A*j + k is injective (k < A, j < A), so the footprint is the
  // number of points, A(A+1)(A+2)/6 = 2900 * 2901 * 2902 / 6 = 4069039300.
  const int64_t a = 2900;
  const AffineDomain tetra = {box("i", 0, a),
                              {"j", form(0, {}), form(1, {{"i", 1}})},
                              {"k", form(0, {}), form(1, {{"j", 1}})}};
  const Image img = affine_image(form(0, {{"i", a * a}, {"j", a}, {"k", 1}}), tetra);
  EXPECT_TRUE(img.exact);
  EXPECT_EQ(img.count, 4069039300);
  EXPECT_FALSE(img.listed());
  // A*(2i + j) + k collides ((i, j) = (3, 0) and (2, 2)): only a lower bound is known.
  const Image bound = affine_image(form(0, {{"i", 2 * a}, {"j", a}, {"k", 1}}), tetra);
  EXPECT_FALSE(bound.exact);
  EXPECT_GT(bound.count, 0);
  EXPECT_LT(bound.count, 4069039300);
}

TEST(MapImage, GuardedReadCountsOnlyInBoundsIndices) {
  // A 3-tap window with padding 1 on a row of 5: oh + r - 1, oh in 0..5, r in 0..3, ranges
  // over -1..5; in bounds: 0..4, all 5 elements.
  const AffineDomain d = {box("oh", 0, 5), box("r", 0, 3)};
  EXPECT_EQ(map_image(guarded_1d(form(-1, {{"oh", 1}, {"r", 1}}), 5, d)).count, 5);
  // Unguarded, the same index would count its 7 values -1..5.
  AccessMap m = guarded_1d(form(-1, {{"oh", 1}, {"r", 1}}), 5, d);
  m.guarded = false;
  EXPECT_EQ(map_image(m).count, 7);
  // Stride 2 with padding 2: 2*oh + r - 2, oh in 0..3, r in 0..3 ranges over -2..4; in bounds
  // of a row of 4: {0, 1, 2, 3}: 4.
  EXPECT_EQ(
      map_image(guarded_1d(form(-2, {{"oh", 2}, {"r", 1}}), 4, {box("oh", 0, 3), box("r", 0, 3)}))
          .count,
      4);
}

TEST(MapImage, GuardedReadOverATriangleIsEnumerated) {
  // x[i + j - 2] with j in 0..i+1, i in 0..4, x of 3 elements: i + j - 2 ranges over -2..4;
  // in bounds {0, 1, 2}: 3 (the loops are not a box, so the points are enumerated).
  const AffineDomain d = {box("i", 0, 4), {"j", form(0, {}), form(1, {{"i", 1}})}};
  const Image img = map_image(guarded_1d(form(-2, {{"i", 1}, {"j", 1}}), 3, d));
  EXPECT_TRUE(img.exact);
  EXPECT_EQ(img.count, 3);
  // In a tensor of 2^30 elements (offsets listed, not in a bitset): {0, 1, 2, 3, 4}, 5 values.
  const Image big = map_image(guarded_1d(form(-2, {{"i", 1}, {"j", 1}}), int64_t{1} << 30, d));
  EXPECT_TRUE(big.exact);
  EXPECT_EQ(big.count, 5);
}

TEST(UnionFootprint, DisjointOverlappingAndFull) {
  const AffineDomain row = {box("i", 0, 8)};
  AccessMap a;  // x[i], x of 16 elements
  a.domain = row;
  a.index = {form(0, {{"i", 1}})};
  a.strides = {1};
  a.extent = {16};
  AccessMap b = a;  // x[i + 8]: disjoint from a
  b.index = {form(8, {{"i", 1}})};
  AccessMap c = a;  // x[i + 1]: overlaps a in 7 elements
  c.index = {form(1, {{"i", 1}})};
  EXPECT_EQ(union_footprint({&a, &b}, 16).elements, 16);  // 8 + 8, all of x
  EXPECT_EQ(union_footprint({&a, &c}, 16).elements, 9);   // {0..7} u {1..8}
  EXPECT_EQ(union_footprint({&a, &a}, 16).elements, 8);   // the same map once
  AccessMap gathered;  // 5 elements moved by a take: added as distinct, up to the size
  gathered.data_dependent = true;
  gathered.moved = 5;
  EXPECT_EQ(union_footprint({&a, &gathered}, 16).elements, 13);
  EXPECT_EQ(union_footprint({&a, &b, &gathered}, 16).elements, 16);
  // Overlapping progressions of one step in a tensor of more than 2^28 elements: exact, per
  // residue, as at any size ({0..7} u {1..8}).
  const Footprint big = union_footprint({&a, &c}, int64_t{1} << 30);
  EXPECT_TRUE(big.exact);
  EXPECT_EQ(big.elements, 9);
  // x[2 i] ({0, 2, ..., 14}) beside x[i] ({0..7}): two steps, no bitset above 2^28: the larger
  // map, 8, a lower bound (the union is 8 + 4 = 12: 8, 10, 12, 14 more).
  AccessMap d = a;
  d.index = {form(0, {{"i", 2}})};
  const Footprint steps = union_footprint({&a, &d}, int64_t{1} << 30);
  EXPECT_FALSE(steps.exact);
  EXPECT_EQ(steps.elements, 8);
  EXPECT_EQ(union_footprint({&a, &d}, 16).elements, 12);  // in the bitset: exact
}

// The columns of y[4, 8] (row-major, 32 elements) written one at a time, as the steps of a scan
// along dim 1 write them: y[i, t] for i in 0..4 is {t, t + 8, t + 16, t + 24}, a progression of
// step 8. Unions of such progressions are counted per residue modulo 8 (no bitset).
TEST(UnionFootprint, ColumnsOfAScan) {
  const auto column = [](int64_t t, int64_t rows_lo, int64_t rows_hi) {
    AccessMap m;  // y[i, t], i in rows_lo..rows_hi
    m.domain = {box("i", rows_lo, rows_hi)};
    m.index = {form(0, {{"i", 1}}), form(t, {})};
    m.strides = {8, 1};
    m.extent = {4, 8};
    return m;
  };
  std::vector<AccessMap> all;
  for (int64_t t = 0; t < 8; ++t) all.push_back(column(t, 0, 4));
  std::vector<const AccessMap*> ptrs;
  for (const AccessMap& m : all) ptrs.push_back(&m);
  const Footprint every = union_footprint(ptrs, 32);
  EXPECT_TRUE(every.exact);
  EXPECT_EQ(every.elements, 32);  // 8 columns of 4, residues 0..7: all of y
  ptrs.pop_back();
  EXPECT_EQ(union_footprint(ptrs, 32).elements, 28);  // the reads y[i, t - 1], t = 1..7: 7 x 4
  // Column 0 ({0, 8, 16, 24}) and rows 1..2 of it ({8, 16}): residue 0, quotients 0..3 and
  // 1..2 merged, 4; with column 2 ({2, 10, 18, 26}), residue 2: 4 + 4 = 8.
  const AccessMap c0 = column(0, 0, 4), c0_mid = column(0, 1, 3), c2 = column(2, 0, 4);
  EXPECT_EQ(union_footprint({&c0, &c0_mid, &c2}, 32).elements, 8);
  // A single element y[3, 7] = 31 and column 7 ({7, 15, 23, 31}): 4.
  const AccessMap c7 = column(7, 0, 4), last = column(7, 3, 4);
  EXPECT_EQ(union_footprint({&c7, &last}, 32).elements, 4);
  // Column 0 and row 0 (y[0, j], j in 0..8: {0..7}, step 1): two steps, taken in the bitset;
  // 4 + 8 - 1 (y[0, 0] in both) = 11.
  AccessMap row;
  row.domain = {box("j", 0, 8)};
  row.index = {form(0, {}), form(0, {{"j", 1}})};
  row.strides = {8, 1};
  row.extent = {4, 8};
  EXPECT_EQ(union_footprint({&c0, &row}, 32).elements, 11);
}

// The same columns of a scan over y [65536, 8192] (536,870,912 elements, above the bitset's
// 2^28): counted per residue as at any size, not as the largest single map (65,536).
TEST(UnionFootprint, ColumnsOfAScanAboveTheBitsetsSize) {
  const int64_t rows = 65536, cols = 8192;
  const auto column = [&](int64_t t) {
    AccessMap m;  // y[i, t], i in 0..65536: {t, t + 8192, ...}, 65,536 values of step 8192
    m.domain = {box("i", 0, rows)};
    m.index = {form(0, {{"i", 1}}), form(t, {})};
    m.strides = {cols, 1};
    m.extent = {rows, cols};
    return m;
  };
  std::vector<AccessMap> all;
  for (int64_t t = 0; t < cols; ++t) all.push_back(column(t));
  std::vector<const AccessMap*> ptrs;
  for (const AccessMap& m : all) ptrs.push_back(&m);
  const Footprint every = union_footprint(ptrs, rows * cols);
  EXPECT_TRUE(every.exact);
  EXPECT_EQ(every.elements, 536870912);  // 8,192 columns of 65,536: all of y, 2^29
  ptrs.pop_back();
  // the columns t = 0..8190: 8,191 x 65,536 = 536,805,376
  EXPECT_EQ(union_footprint(ptrs, rows * cols).elements, int64_t{8191} * 65536);
}

// Random forms over random small nests (boxes, triangles, shifted bounds; up to 4 loops of up to
// 7 values, or 3 of up to 20), read plainly and as a guarded index, against enumeration.
TEST(AffineImage, MatchesBruteForce) {
  std::mt19937 rng(12345);
  const auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int iteration = 0; iteration < 3000; ++iteration) {
    AffineDomain d;
    AffineForm f{pick(-5, 5), {}};
    const int loops = pick(1, iteration % 2 == 0 ? 4 : 3);
    for (int k = 0; k < loops; ++k) {
      const std::string var = "x" + std::to_string(k);
      ir::AffineLoop l = box(var, pick(0, 2), pick(1, iteration % 2 == 0 ? 7 : 20));
      if (k > 0 && pick(0, 2) == 0) {  // a bound tied to an outer loop
        const std::string outer = "x" + std::to_string(pick(0, k - 1));
        (pick(0, 1) ? l.hi : l.lo) = form(pick(0, 2), {{outer, 1}});
      }
      d.push_back(l);
      const int coeff = pick(-7, 7);
      if (coeff != 0) f.coeffs[var] = coeff;
    }
    const auto all = [](const ir::SymbolValues&) { return true; };
    const std::set<int64_t> expected = brute_force(f, d, all);
    const Image img = affine_image(f, d);
    ASSERT_TRUE(img.exact);
    ASSERT_EQ(img.count, static_cast<int64_t>(expected.size())) << "iteration " << iteration;
    if (img.listed()) {
      std::set<int64_t> listed;
      img.for_each([&](int64_t v) { listed.insert(v); });
      ASSERT_EQ(listed, expected) << "iteration " << iteration;
    }
    // The same form read as a guarded 1-D index of a tensor of `extent` elements.
    const int64_t extent = pick(1, 12);
    const std::set<int64_t> in_bounds = brute_force(f, d, [&](const ir::SymbolValues& p) {
      const int64_t v = ir::evaluate(f, p);
      return v >= 0 && v < extent;
    });
    const Image guarded = map_image(guarded_1d(f, extent, d));
    ASSERT_TRUE(guarded.exact);
    ASSERT_EQ(guarded.count, static_cast<int64_t>(in_bounds.size())) << "iteration " << iteration;
  }
}

// Random 2-D maps (guarded or not) of one 6x7 tensor, and unions of two or three of them,
// against enumeration of the in-bounds points.
TEST(UnionFootprint, MatchesBruteForce) {
  std::mt19937 rng(777);
  const auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const std::vector<int64_t> extent = {6, 7};
  for (int iteration = 0; iteration < 3000; ++iteration) {
    std::vector<AccessMap> maps(static_cast<size_t>(pick(1, 3)));
    std::set<int64_t> expected;
    for (AccessMap& m : maps) {
      m.domain = {box("a", 0, pick(1, 5)), box("b", 0, pick(1, 4))};
      if (pick(0, 1) == 0) m.domain[1].hi = form(pick(1, 2), {{"a", 1}});  // a triangle
      m.extent = extent;
      m.strides = {7, 1};
      m.guarded = pick(0, 1) == 1;
      for (int d = 0; d < 2; ++d) {
        AffineForm e{pick(m.guarded ? -2 : 0, 1), {}};
        for (const char* v : {"a", "b"}) {
          if (pick(0, 2) > 0) e.coeffs[v] = pick(m.guarded ? -2 : 0, 2);
        }
        std::erase_if(e.coeffs, [](const auto& t) { return t.second == 0; });
        m.index.push_back(e);
      }
      const auto in_bounds = [&](const ir::SymbolValues& p) {
        for (size_t d = 0; d < 2; ++d) {
          const int64_t v = ir::evaluate(m.index[d], p);
          if (v < 0 || v >= extent[d]) return false;
        }
        return true;
      };
      const std::set<int64_t> values = brute_force(m.flat(), m.domain, in_bounds);
      // Unguarded maps stay in bounds (the checker proves it): guard those that do not.
      if (!brute_force(m.flat(), m.domain, std::not_fn(in_bounds)).empty()) m.guarded = true;
      const Image img = map_image(m);
      ASSERT_TRUE(img.listed());
      std::set<int64_t> listed;
      img.for_each([&](int64_t v) { listed.insert(v); });
      ASSERT_EQ(listed, values) << "iteration " << iteration;
      expected.insert(values.begin(), values.end());
    }
    std::vector<const AccessMap*> ptrs;
    for (const AccessMap& m : maps) ptrs.push_back(&m);
    const Footprint fp = union_footprint(ptrs, 42);
    ASSERT_TRUE(fp.exact);
    ASSERT_EQ(fp.elements, static_cast<int64_t>(expected.size())) << "iteration " << iteration;
  }
}

// Random unions of box slices x[b0 + b, c0 + c, h0 + h, w0 + w] of a 4-D tensor (the writes of
// a channel concatenation, the reads of a split): their offsets interleave, so the union is taken
// in a bitset, where runs that continue one another (w then h then c, when the slice spans whole
// rows and planes) are set as one range. Against enumeration of the offsets.
TEST(UnionFootprint, SlicesOfA4dTensorMatchBruteForce) {
  std::mt19937 rng(4242);
  const auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int iteration = 0; iteration < 2000; ++iteration) {
    const std::vector<int64_t> extent = {pick(1, 3), pick(1, 6), pick(1, 5), pick(1, 70)};
    const std::vector<int64_t> strides = {extent[1] * extent[2] * extent[3], extent[2] * extent[3],
                                          extent[3], 1};
    const int64_t numel = strides[0] * extent[0];
    std::vector<AccessMap> maps(static_cast<size_t>(pick(2, 4)));
    std::set<int64_t> expected;
    for (AccessMap& m : maps) {
      m.extent = extent;
      m.strides = strides;
      for (size_t d = 0; d < 4; ++d) {
        const std::string var = "x" + std::to_string(d);
        // Whole dimensions most of the time, so that runs chain; else a sub-range.
        const int64_t start = pick(0, 2) == 0 ? pick(0, static_cast<int>(extent[d]) - 1) : 0;
        const int64_t size =
            pick(0, 2) == 0 ? pick(1, static_cast<int>(extent[d] - start)) : extent[d] - start;
        const int64_t lo = pick(0, 2);  // loops from lo: x[start - lo + v], lo <= v < lo + size
        m.domain.push_back(box(var, lo, lo + size));
        m.index.push_back(form(start - lo, {{var, 1}}));
      }
      const std::set<int64_t> values =
          brute_force(m.flat(), m.domain, [](const ir::SymbolValues&) { return true; });
      expected.insert(values.begin(), values.end());
    }
    std::vector<const AccessMap*> ptrs;
    for (const AccessMap& m : maps) ptrs.push_back(&m);
    const Footprint fp = union_footprint(ptrs, numel);
    ASSERT_TRUE(fp.exact);
    ASSERT_EQ(fp.elements, static_cast<int64_t>(expected.size())) << "iteration " << iteration;
  }
}

// A padded view, element by element: per position (row-major), the base's flat offset or -1 (the
// pad value). The reference the view arithmetic of view.cpp is checked against.
struct Table {
  std::vector<int64_t> shape;
  std::vector<int64_t> at;
};

Table table_pad(const Table& t, const std::vector<int64_t>& lo, const std::vector<int64_t>& hi) {
  Table r{{t.shape[0] + lo[0] + hi[0], t.shape[1] + lo[1] + hi[1]}, {}};
  for (int64_t i = 0; i < r.shape[0]; ++i) {
    for (int64_t j = 0; j < r.shape[1]; ++j) {
      const int64_t a = i - lo[0], b = j - lo[1];
      const bool in = a >= 0 && a < t.shape[0] && b >= 0 && b < t.shape[1];
      r.at.push_back(in ? t.at[static_cast<size_t>(a * t.shape[1] + b)] : -1);
    }
  }
  return r;
}

Table table_slice(const Table& t, const std::vector<SliceBounds>& s) {
  Table r;
  for (size_t d = 0; d < 2; ++d) {
    r.shape.push_back(s[d].stop <= s[d].start ? 0 : (s[d].stop - s[d].start - 1) / s[d].step + 1);
  }
  for (int64_t i = 0; i < r.shape[0]; ++i) {
    for (int64_t j = 0; j < r.shape[1]; ++j) {
      const int64_t a = s[0].start + s[0].step * i, b = s[1].start + s[1].step * j;
      r.at.push_back(t.at[static_cast<size_t>(a * t.shape[1] + b)]);
    }
  }
  return r;
}

Table table_transpose(const Table& t) {
  Table r{{t.shape[1], t.shape[0]}, {}};
  for (int64_t i = 0; i < r.shape[0]; ++i) {
    for (int64_t j = 0; j < r.shape[1]; ++j) {
      r.at.push_back(t.at[static_cast<size_t>(j * t.shape[1] + i)]);
    }
  }
  return r;
}

// Random chains of pads, slices (with steps) and transposes of a 2-D tensor of 3 x 4 elements:
// each position of the view reached through view_map's guarded map must be the table's element
// (or out of bounds where the table holds the pad value), and the footprint of the whole view
// the number of distinct elements of the table.
TEST(PaddedView, ComposesLikeTheElementsItHolds) {
  std::mt19937 rng(2024);
  const auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const TensorInfo x{"x", ir::TensorRole::Input, ir::DType::F32, {3, 4}, 12, 48};
  for (int iteration = 0; iteration < 2000; ++iteration) {
    View v = whole_view(x);
    Table t{{3, 4}, {}};
    for (int64_t e = 0; e < 12; ++e) t.at.push_back(e);
    for (int step = pick(1, 4); step > 0; --step) {
      const int op = pick(0, 2);
      if (op == 0) {
        const std::vector<int64_t> lo = {pick(0, 2), pick(0, 2)}, hi = {pick(0, 2), pick(0, 2)};
        const std::optional<View> p = pad_view(v, lo, hi, 0.0);
        ASSERT_TRUE(p);  // the same value: pads compose
        v = *p;
        t = table_pad(t, lo, hi);
      } else if (op == 1) {
        std::vector<SliceBounds> s;
        for (size_t d = 0; d < 2; ++d) {
          const int64_t n = t.shape[d];
          const int64_t start = n == 0 ? 0 : pick(0, static_cast<int>(n - 1));
          s.push_back(
              {false, start, pick(static_cast<int>(start), static_cast<int>(n)), pick(1, 3)});
        }
        const std::optional<View> sv = slice_view(v, s);
        ASSERT_TRUE(sv);
        v = *sv;
        t = table_slice(t, s);
      } else {
        v = permute_view(v, {1, 0});
        t = table_transpose(t);
      }
      ASSERT_EQ(v.shape, t.shape) << "iteration " << iteration;
    }
    const AccessMap m = box_map(v, x);
    std::set<int64_t> distinct;
    ir::SymbolValues point;
    for (int64_t i = 0; i < t.shape[0]; ++i) {
      for (int64_t j = 0; j < t.shape[1]; ++j) {
        point["d0"] = i;
        point["d1"] = j;
        bool in = true;
        for (size_t d = 0; d < 2; ++d) {
          const int64_t k = ir::evaluate(m.index[d], point);
          in = in && (!m.guarded || (k >= 0 && k < m.extent[d]));
        }
        const int64_t want = t.at[static_cast<size_t>(i * t.shape[1] + j)];
        ASSERT_EQ(in ? ir::evaluate(m.flat(), point) : -1, want)
            << "iteration " << iteration << " at " << i << ", " << j << " (" << m.text << ")";
        if (want >= 0) distinct.insert(want);
      }
    }
    const Image img = map_image(m);
    ASSERT_EQ(img.count, static_cast<int64_t>(distinct.size())) << "iteration " << iteration;
  }
}

TEST(PaddedView, DifferentValuesAndReshapesDoNotCompose) {
  const TensorInfo x{"x", ir::TensorRole::Input, ir::DType::F32, {4}, 4, 16};
  const View p = *pad_view(whole_view(x), {1}, {1}, 0.0);
  EXPECT_TRUE(p.padded());
  EXPECT_EQ(p.shape, std::vector<int64_t>{6});
  EXPECT_FALSE(pad_view(p, {1}, {0}, 1.0));  // another value
  EXPECT_TRUE(pad_view(p, {1}, {0}, 0.0));
  EXPECT_FALSE(pad_view(whole_view(x), {-1}, {0}, 0.0));  // negative: a crop, not a pad
  EXPECT_FALSE(reshape_view(p, {2, 3}));
  EXPECT_FALSE(pad_view(whole_view(x), {0}, {0}, 0.0)->padded());  // nothing padded
  // A read of p[i] for i in 0..6 is x[i - 1], guarded by x's 4 elements: 4 distinct elements.
  const AccessMap m = view_map(p, x, {form(0, {{"i", 1}})}, {box("i", 0, 6)}, false);
  EXPECT_TRUE(m.guarded);
  EXPECT_EQ(m.text, "x.or(0.0)[i - 1]");
  EXPECT_EQ(m.extent, std::vector<int64_t>{4});
  EXPECT_EQ(map_image(m).count, 4);
}

}  // namespace
}  // namespace solar::einsum::detail
