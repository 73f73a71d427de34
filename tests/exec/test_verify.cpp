// Verification's one comparison and tolerance table (exec/verify.h), with hand arithmetic.
#include "solar/exec/verify.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "exec_test_util.h"
#include "solar/ir/parser.h"

namespace solar::exec {
namespace {

using test::f32;
using test::make;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(Verify, ToleranceTable) {
  EXPECT_EQ(tolerance(ir::DType::F32).rtol, 1e-4);
  EXPECT_EQ(tolerance(ir::DType::F32).atol, 1e-5);
  EXPECT_EQ(tolerance(ir::DType::F64).rtol, 1e-9);
  EXPECT_EQ(tolerance(ir::DType::BF16).rtol, 2e-2);
  EXPECT_EQ(tolerance(ir::DType::F8E5M2).rtol, 2.5e-1);
  EXPECT_EQ(tolerance(ir::DType::I64).rtol, 0.0);  // integers exact
  EXPECT_EQ(tolerance(ir::DType::Bool).atol, 0.0);
}

TEST(Verify, AnElementPassesWithinAtolTimesScalePlusRtolTimesExpected) {
  // expected [1, 2, 4]: scale = max(1, 4) = 4. For the element 2 the allowance is
  // 1e-5 * 4 + 1e-4 * 2 = 2.4e-4. Off by 2^-13 = 1.220703125e-4 (exact in f32): passes, relative
  // error 2^-13 / 2 = 2^-14 = 6.103515625e-5. Off by 2^-12 = 2.44140625e-4 > 2.4e-4: fails.
  const Tensor expected = f32({3}, {1, 2, 4});
  const OutputCheck near =
      compare_output("y", f32({3}, {1, 2 + std::ldexp(1.0, -13), 4}), expected);
  EXPECT_TRUE(near.passed);
  EXPECT_EQ(*near.max_abs_err, std::ldexp(1.0, -13));
  EXPECT_EQ(*near.max_rel_err, std::ldexp(1.0, -14));
  EXPECT_EQ(near.shape, (std::vector<int64_t>{3}));
  const OutputCheck far = compare_output("y", f32({3}, {1, 2 + std::ldexp(1.0, -12), 4}), expected);
  EXPECT_FALSE(far.passed);
  EXPECT_EQ(*far.max_abs_err, std::ldexp(1.0, -12));
  EXPECT_EQ(far.error, "");
}

TEST(Verify, EqualInfinitiesAndNaNsAgreeOtherNaNsFail) {
  const OutputCheck same = compare_output("y", f32({2}, {kNaN, kInf}), f32({2}, {kNaN, kInf}));
  EXPECT_TRUE(same.passed);
  EXPECT_EQ(*same.max_abs_err, 0.0);
  const OutputCheck nan = compare_output("y", f32({2}, {kNaN, 1}), f32({2}, {1, 1}));
  EXPECT_FALSE(nan.passed);
  // a NaN against 1: no error is a number (JSON would have no way to write it)
  EXPECT_FALSE(nan.max_abs_err.has_value());
  EXPECT_FALSE(nan.max_rel_err.has_value());
  EXPECT_EQ(nan.err_reason, "errors undefined: a NaN where the other side has a number");
  const OutputCheck inf = compare_output("y", f32({1}, {kInf}), f32({1}, {-kInf}));
  EXPECT_FALSE(inf.passed);
  // rtol * |inf| = inf would let any finite value through: an infinity agrees only with itself
  EXPECT_FALSE(compare_output("y", f32({1}, {1}), f32({1}, {kInf})).passed);
  EXPECT_FALSE(compare_output("y", f32({1}, {kInf}), f32({1}, {1})).passed);
}

TEST(Verify, AnErrorThatIsNoFiniteNumberIsEmptyWithItsReason) {
  // inf against -inf: the difference is infinite, so are both errors
  const OutputCheck inf = compare_output("y", f32({1}, {kInf}), f32({1}, {-kInf}));
  EXPECT_FALSE(inf.max_abs_err.has_value());
  EXPECT_FALSE(inf.max_rel_err.has_value());
  EXPECT_EQ(inf.err_reason,
            "errors undefined: an infinity where the other side is finite or the opposite "
            "infinity");
  // Under a custom tolerance of atol 0 an output that differs where the expected value is 0 has
  // no relative error: 1e-3 / max(0, (0 / 1e-4) * 1) divides by 0.
  const OutputCheck zero =
      compare_output("y", f32({2}, {0, 1e-3}), f32({2}, {0, 0}), Tolerance{1e-4, 0.0});
  EXPECT_FALSE(zero.passed);
  EXPECT_EQ(*zero.max_abs_err, static_cast<double>(1e-3F));
  EXPECT_FALSE(zero.max_rel_err.has_value());
  EXPECT_EQ(zero.err_reason,
            "relative error undefined: the outputs differ where the expected value is 0");
  EXPECT_EQ(render_checks({zero}),
            "y f32[2]: max abs err 0.001, max rel err undefined (relative error undefined: the "
            "outputs differ where the expected value is 0) (rtol 0.0001, atol 0): FAILED\n");
  // agreeing outputs keep both errors and no reason
  const OutputCheck ok = compare_output("y", f32({1}, {2}), f32({1}, {2}));
  EXPECT_EQ(*ok.max_rel_err, 0.0);
  EXPECT_EQ(ok.err_reason, "");
}

// Near an expected 0 the relative error is relative to the absolute allowance's reference,
// (atol / rtol) * scale, not to |expected| (which made it ~1e300 against the smallest normal
// double); pass and fail are unchanged.
TEST(Verify, TheRelativeErrorNearZeroIsAgainstTheAbsoluteAllowance) {
  // f32 (rtol 1e-4, atol 1e-5), expected [0, 1]: scale = max(1, 1) = 1, reference floor
  // (1e-5 / 1e-4) * 1 = 0.1. Off by 2^-20 = 9.5367431640625e-7 at the 0: passes (<= 1e-5 * 1 +
  // 1e-4 * 0 = 1e-5); relative 2^-20 / 0.1 = 9.5367431640625e-6 (was 2^-20 / 2.2e-308 = 4e301).
  const OutputCheck near =
      compare_output("y", f32({2}, {std::ldexp(1.0, -20), 1}), f32({2}, {0, 1}));
  EXPECT_TRUE(near.passed);
  EXPECT_EQ(*near.max_abs_err, std::ldexp(1.0, -20));
  EXPECT_DOUBLE_EQ(*near.max_rel_err, std::ldexp(1.0, -20) / 0.1);
  EXPECT_EQ(near.err_reason, "");
  // Off by 2^-16 = 1.52587890625e-5 > 1e-5 at the 0: fails; relative 2^-16 / 0.1 =
  // 1.52587890625e-4, above rtol 1e-4 as every failing element's.
  const OutputCheck far =
      compare_output("y", f32({2}, {std::ldexp(1.0, -16), 1}), f32({2}, {0, 1}));
  EXPECT_FALSE(far.passed);
  EXPECT_DOUBLE_EQ(*far.max_rel_err, std::ldexp(1.0, -16) / 0.1);
  EXPECT_GT(*far.max_rel_err, 1e-4);
  // A tiny expected value, 1e-30 (expected [1e-30, 100]: scale 100, floor 0.1 * 100 = 10), got
  // 1e-30 + 2^-20: relative 2^-20 / 10 = 9.5367431640625e-8 (not 2^-20 / 1e-30 = 9.5e23).
  const OutputCheck tiny =
      compare_output("y", make(ir::DType::F64, {2}, {1e-30 + std::ldexp(1.0, -20), 100}),
                     make(ir::DType::F64, {2}, {1e-30, 100}), Tolerance{1e-4, 1e-5});
  EXPECT_DOUBLE_EQ(*tiny.max_rel_err, std::ldexp(1.0, -20) / 10);
  // i64 indices [0, 28] against [0, 0] (a sort's indices among ties): exact, so the reference
  // is scale = max(1, 0) = 1: relative 28 / 1 = 28, defined (was undefined).
  const OutputCheck ties =
      compare_output("i", make(ir::DType::I64, {2}, {0, 28}), make(ir::DType::I64, {2}, {0, 0}));
  EXPECT_FALSE(ties.passed);
  EXPECT_EQ(*ties.max_abs_err, 28.0);
  EXPECT_EQ(*ties.max_rel_err, 28.0);
  EXPECT_EQ(render_checks({ties}), "i i64[2]: max abs err 28, max rel err 28 (exact): FAILED\n");
}

TEST(Verify, IntegersAreExactAndShapesMustMatch) {
  const OutputCheck off =
      compare_output("i", make(ir::DType::I64, {2}, {3, 4}), make(ir::DType::I64, {2}, {3, 5}));
  EXPECT_FALSE(off.passed);
  EXPECT_EQ(*off.max_abs_err, 1.0);
  // compared by value: an i32 output against i64 expected values (numpy's default)
  EXPECT_TRUE(
      compare_output("i", make(ir::DType::I32, {2}, {3, 4}), make(ir::DType::I64, {2}, {3, 4}))
          .passed);
  const OutputCheck shape = compare_output("y", f32({3}, {1, 2, 3}), f32({1, 3}, {1, 2, 3}));
  EXPECT_FALSE(shape.passed);
  EXPECT_EQ(shape.error, "shape [3] != [1, 3]");
  EXPECT_FALSE(shape.max_abs_err.has_value());
}

TEST(Verify, F8ExpectedAsRawBitsIsReadAsTheOutputsF8) {
  // f8e4m3 0x38 = 0 0111 000: exponent 7 - bias 7 = 0, mantissa 1.0: the value 1.0; 0x40 = 2.0.
  const Tensor got = make(ir::DType::F8E4M3, {2}, {1.0, 2.0});
  const Tensor bits = make(ir::DType::U8, {2}, {0x38, 0x40});
  const OutputCheck c = compare_output("y", got, bits);
  EXPECT_TRUE(c.passed);
  EXPECT_EQ(*c.max_abs_err, 0.0);
  EXPECT_EQ(c.dtype, ir::DType::F8E4M3);
}

TEST(Verify, EveryOutputOfTheProgramIsCompared) {
  const ir::Program p = ir::parse(R"(input x : f32[2]
output y : f32[2]
output z : f32[2]
kernel k {
  for i in 0..2:
    y[i] = x[i] * 2.0
}
kernel l {
  for i in 0..2:
    z[i] = x[i] + 1.0
}
)",
                                  "t.ir");
  TensorMap inputs;
  inputs.emplace("x", f32({2}, {1, 2}));
  const TensorMap outputs = run(p, inputs);
  TensorMap expected;
  expected.emplace("y", f32({2}, {2, 4}));
  const std::vector<OutputCheck> checks = compare_outputs(p, outputs, expected);
  ASSERT_EQ(checks.size(), 2u);
  EXPECT_TRUE(checks[0].passed);
  EXPECT_EQ(checks[1].name, "z");
  EXPECT_EQ(checks[1].error, "no expected value given");
  EXPECT_FALSE(all_passed(checks));
  EXPECT_EQ(render_checks(checks),
            "y f32[2]: max abs err 0, max rel err 0 (rtol 0.0001, atol 1e-05): ok\n"
            "z f32[2]: no expected value given: FAILED\n");
}

}  // namespace
}  // namespace solar::exec
