// Translations of access maps and nodes (include/solar/einsum/translation.h): the shifts below
// are worked out by hand in the comment next to each.
#include "solar/einsum/translation.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace solar::einsum {
namespace {

ir::AffineForm form(int64_t constant, std::map<std::string, int64_t> coeffs = {}) {
  return ir::AffineForm{constant, std::move(coeffs)};
}

// A loop `var in lo..hi` with constant bounds.
ir::AffineLoop loop(const std::string& var, int64_t lo, int64_t hi) {
  return {var, form(lo), form(hi)};
}

// An affine map of a row-major [4, 8] tensor (strides 8, 1) at `offset`.
AccessMap map(std::vector<ir::AffineForm> index, int64_t offset = 0) {
  AccessMap m;
  m.offset = offset;
  m.index = std::move(index);
  m.strides = {8, 1};
  m.extent = {4, 8};
  return m;
}

TEST(SameDomain, TheSameLoopsInTheSameOrder) {
  const ir::AffineDomain d = {loop("i", 0, 4), loop("j", 0, 8)};
  EXPECT_TRUE(same_domain(d, d));
  EXPECT_TRUE(same_domain({}, {}));
  EXPECT_FALSE(same_domain(d, {loop("i", 0, 4)}));                   // fewer loops
  EXPECT_FALSE(same_domain(d, {loop("j", 0, 8), loop("i", 0, 4)}));  // another order
  EXPECT_FALSE(same_domain(d, {loop("i", 0, 4), loop("k", 0, 8)}));  // another variable
  EXPECT_FALSE(same_domain(d, {loop("i", 1, 4), loop("j", 0, 8)}));  // another lower bound
  EXPECT_FALSE(same_domain(d, {loop("i", 0, 4), loop("j", 0, 9)}));  // another upper bound
}

TEST(MapShift, TheIndexConstantsAndTheOffsetMove) {
  // x: a[i + 1, 2 * j]; y: a[i + 3, 2 * j + 2]. Index shifts: 3 - 1 = 2 and 2 - 0 = 2; offsets
  // 0 and 0: shift 0.
  const AccessMap x = map({form(1, {{"i", 1}}), form(0, {{"j", 2}})});
  const AccessMap y = map({form(3, {{"i", 1}}), form(2, {{"j", 2}})});
  const std::optional<MapShift> s = map_shift(x, y);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->offset, 0);
  EXPECT_EQ(s->index, (std::vector<int64_t>{2, 2}));
  EXPECT_TRUE(s->moves());
  // Back from y to x: 1 - 3 = -2 and 0 - 2 = -2.
  EXPECT_EQ(map_shift(y, x)->index, (std::vector<int64_t>{-2, -2}));
  // The same index through views at offsets 8 (row 1) and 24 (row 3): 24 - 8 = 16, index 0, 0.
  const std::optional<MapShift> rows = map_shift(map(x.index, 8), map(x.index, 24));
  ASSERT_TRUE(rows);
  EXPECT_EQ(rows->offset, 16);
  EXPECT_EQ(rows->index, (std::vector<int64_t>{0, 0}));
  EXPECT_TRUE(rows->moves());
  // A map against itself: every shift 0, no move.
  const std::optional<MapShift> none = map_shift(x, x);
  ASSERT_TRUE(none);
  EXPECT_EQ(none->offset, 0);
  EXPECT_EQ(none->index, (std::vector<int64_t>{0, 0}));
  EXPECT_FALSE(none->moves());
}

TEST(MapShift, OnlyConstantsMayDiffer) {
  const AccessMap x = map({form(1, {{"i", 1}}), form(0, {{"j", 2}})});
  AccessMap y = map({form(1, {{"i", 1}}), form(0, {{"j", 3}})});  // 3 * j: another coefficient
  EXPECT_FALSE(map_shift(x, y));
  y = map({form(1, {{"i", 1}}), form(0, {{"i", 1}, {"j", 2}})});  // i + 2 * j: another loop
  EXPECT_FALSE(map_shift(x, y));
  y = x;
  y.strides = {1, 4};
  EXPECT_FALSE(map_shift(x, y));
  y = x;
  y.extent = {4, 4};
  EXPECT_FALSE(map_shift(x, y));
  y = x;
  y.guarded = true;
  EXPECT_FALSE(map_shift(x, y));
  y = x;
  y.index.pop_back();  // rank 1 against rank 2
  EXPECT_FALSE(map_shift(x, y));
  y = x;
  y.data_dependent = true;
  EXPECT_FALSE(map_shift(x, y));
  EXPECT_FALSE(map_shift(y, x));
  // Neither the text nor the domain is compared: another tensor's name, another domain.
  y = x;
  y.text = "b[i + 1, 2 * j]";
  y.domain = {loop("i", 0, 2)};
  ASSERT_TRUE(map_shift(x, y));
  EXPECT_FALSE(map_shift(x, y)->moves());
}

Access access(const std::string& tensor, std::vector<AccessMap> maps) {
  Access a;
  a.tensor = tensor;
  a.maps = std::move(maps);
  return a;
}

// Step t of a scan over the columns of [4, 8] tensors, for i in 0..4:
//   y[i, t] = y[i, t - 1] + x[i, t]   (reads x then y, writes y)
Node scan_step(int64_t t) {
  Node n;
  n.name = "cumsum[t=" + std::to_string(t) + "]";
  n.domain = {loop("i", 0, 4)};
  n.reads = {access("x", {map({form(0, {{"i", 1}}), form(t)})}),
             access("y", {map({form(0, {{"i", 1}}), form(t - 1)})})};
  n.writes = {access("y", {map({form(0, {{"i", 1}}), form(t)})})};
  return n;
}

TEST(Translation, ThePerMapShiftsOfTheReadsThenTheWrites) {
  // From t = 1 to t = 2, per map its offset shift then its two index shifts:
  //   x[i, 1] -> x[i, 2]:  0, 0, 2 - 1 = 1
  //   y[i, 0] -> y[i, 1]:  0, 0, 1 - 0 = 1
  //   y[i, 1] -> y[i, 2]:  0, 0, 2 - 1 = 1 (the write moves)
  EXPECT_EQ(translation(scan_step(1), scan_step(2)),
            (std::vector<int64_t>{0, 0, 1, 0, 0, 1, 0, 0, 1}));
  // From t = 1 to t = 4: every column shift 4 - 1 = 3.
  EXPECT_EQ(translation(scan_step(1), scan_step(4)),
            (std::vector<int64_t>{0, 0, 3, 0, 0, 3, 0, 0, 3}));
  // x read through a view one row further on (offset 8, x[i, 2] from row 1): its offset shift is
  // 8 - 0 = 8, its index shifts 0 and 2 - 1 = 1.
  Node b = scan_step(2);
  b.reads[0].maps[0].offset = 8;
  EXPECT_EQ(translation(scan_step(1), b), (std::vector<int64_t>{8, 0, 1, 0, 0, 1, 0, 0, 1}));
}

TEST(Translation, NoneWithoutAMovedWriteOrWithAnotherEinsum) {
  const Node a = scan_step(1);
  EXPECT_FALSE(translation(a, a));  // nothing moves
  Node b = scan_step(2);
  b.writes = a.writes;  // the reads move, the write does not
  EXPECT_FALSE(translation(a, b));
  b = scan_step(2);
  b.domain = {loop("i", 0, 5)};
  EXPECT_FALSE(translation(a, b));
  b = scan_step(2);
  b.reduction = Reduction::Sum;
  EXPECT_FALSE(translation(a, b));
  b = scan_step(2);
  b.kind = NodeKind::Movement;
  EXPECT_FALSE(translation(a, b));
  b = scan_step(2);
  std::swap(b.reads[0], b.reads[1]);  // the tensors read in another order
  EXPECT_FALSE(translation(a, b));
  b = scan_step(2);
  b.reads[0].maps.push_back(b.reads[0].maps[0]);  // one more map of x
  EXPECT_FALSE(translation(a, b));
  b = scan_step(2);
  b.reads.pop_back();
  EXPECT_FALSE(translation(a, b));
  b = scan_step(2);
  b.reads[1].maps[0].data_dependent = true;
  EXPECT_FALSE(translation(a, b));
}

}  // namespace
}  // namespace solar::einsum
