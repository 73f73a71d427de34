// argsort, the bitwise functions and `random` tensors (docs/ir.md), with hand-computed results.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "exec_test_util.h"

namespace solar::exec {
namespace {

using test::f32;
using test::run_text;
using test::values;

// The message of the error running `text` gives ("" when it runs).
std::string user_error(const std::string& text) {
  return test::user_error([&] { run_text(text, {{"x", f32({4}, {1, 2, 3, 4})}}); });
}

TEST(Argsort, AscendingIsStableAndPutsNanLast) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  // Row 0: 3 1 nan 1 -> the two 1s at positions 1 and 3 keep their order, then 3 (pos 0), then
  // NaN (pos 2). Row 1: 0 -2 5 -2 -> -2 (1), -2 (3), 0 (0), 5 (2).
  const TensorMap out = run_text(R"(
input x : f32[2, 4]
output i : i64[2, 4]
i = argsort(x, dim=1))",
                                 {{"x", f32({2, 4}, {3, 1, nan, 1, 0, -2, 5, -2})}});
  EXPECT_EQ(values(out.at("i")), (std::vector<double>{1, 3, 0, 2, 1, 3, 0, 2}));
}

TEST(Argsort, DescendingPutsNanFirstAndAlongDimZero) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  // Column 0: 1, nan, 4 -> nan (1), 4 (2), 1 (0). Column 1: 2, 2, 0 -> 2 (0), 2 (1), 0 (2).
  const TensorMap out = run_text(R"(
input x : f32[3, 2]
output i : i32[3, 2]
output v : f32[3, 2]
i = argsort(x, dim=0, descending=1)
v = gather(x, i, dim=0))",
                                 {{"x", f32({3, 2}, {1, 2, nan, 2, 4, 0})}});
  EXPECT_EQ(values(out.at("i")), (std::vector<double>{1, 0, 2, 1, 0, 2}));
  const std::vector<double> v = values(out.at("v"));
  EXPECT_TRUE(std::isnan(v[0]));
  EXPECT_EQ((std::vector<double>{v[1], v[2], v[3], v[4], v[5]}),
            (std::vector<double>{2, 4, 2, 1, 0}));
}

TEST(Argsort, CheckerRejectsAFloatResultAndABadFlag) {
  EXPECT_NE(user_error("input x : f32[4]\noutput i : f32[4]\ni = argsort(x, dim=0)")
                .find("must have an integer dtype"),
            std::string::npos);
  EXPECT_NE(user_error("input x : f32[4]\noutput i : i64[4]\ni = argsort(x, dim=0, descending=2)")
                .find("descending must be 0 or 1"),
            std::string::npos);
}

TEST(Take, CheckerBoundsDistinct) {
  // distinct=D is at most min(X's size along dim, I's elements): w [8, 4] by 3 ids: 1..3.
  const std::string head = "input ids : i64[3]\nweight w : f32[8, 4]\noutput y : f32[3, 4]\n";
  EXPECT_NE(
      user_error(head + "y = take(w, ids, dim=0, distinct=4)").find("distinct must be in 1..3"),
      std::string::npos);
  EXPECT_NE(
      user_error(head + "y = take(w, ids, dim=0, distinct=0)").find("distinct must be in 1..3"),
      std::string::npos);
}

TEST(Bitwise, AndOrXorNotShiftsOnIntegers) {
  // 12 = 0b1100, 10 = 0b1010: and 8, or 14, xor 6; not 12 = -13; 12 << 2 = 48; -12 >> 2 = -3
  // (arithmetic: -12 / 4 = -3 exactly); a shift by 64 gives 0 (shl) and the sign (shr).
  const TensorMap out = run_text(
      R"(
input a : i32[1]
input b : i32[1]
output y : i64[8]
kernel k0 { y[0] = bitand(a[0], b[0]) }
kernel k1 { y[1] = bitor(a[0], b[0]) }
kernel k2 { y[2] = bitxor(a[0], b[0]) }
kernel k3 { y[3] = bitnot(a[0]) }
kernel k4 { y[4] = shl(a[0], 2) }
kernel k5 { y[5] = shr(-a[0], 2) }
kernel k6 { y[6] = shl(a[0], 64) }
kernel k7 { y[7] = shr(-a[0], 64) })",
      {{"a", test::make(ir::DType::I32, {1}, {12})}, {"b", test::make(ir::DType::I32, {1}, {10})}});
  EXPECT_EQ(values(out.at("y")), (std::vector<double>{8, 14, 6, -13, 48, -3, 0, -1}));
}

TEST(Bitwise, NotOfAUint8Wraps) {
  // ~5 = -6 as an integer; stored to u8 it wraps to 256 - 6 = 250, as torch's ~ on uint8.
  const TensorMap out =
      run_text("input a : u8[1]\noutput y : u8[1]\nkernel k { y[0] = bitnot(a[0]) }",
               {{"a", test::make(ir::DType::U8, {1}, {5})}});
  EXPECT_EQ(values(out.at("y")), (std::vector<double>{250}));
}

TEST(RandomTensor, IsSuppliedLikeAnInputAndReadOnly) {
  const TensorMap out = run_text(R"(
input x : f32[3]
random r : f32[3]
output y : f32[3]
kernel k { for i in 0..3: y[i] = x[i] * r[i] })",
                                 {{"x", f32({3}, {1, 2, 3})}, {"r", f32({3}, {0.5, 0, 2})}});
  EXPECT_EQ(values(out.at("y")), (std::vector<double>{0.5, 0, 6}));
  EXPECT_NE(user_error("input x : f32[4]\nrandom r : f32[3]\noutput y : f32[3]\nkernel k { for i "
                       "in 0..3: r[i] = 1.0 }\n"
                       "y = r")
                .find("cannot write random 'r'; random draws are read-only"),
            std::string::npos);
}

}  // namespace
}  // namespace solar::exec
