// Kernels on the generic interpreter and their semantics (docs/ir.md, "Kernels" and "Execution
// semantics"), on small programs with hand-computed results.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>

#include "exec_test_util.h"
#include "solar/ir/ast.h"

namespace solar::exec {
namespace {

using test::f32;
using test::make;
using test::run_text;
using test::user_error;
using test::values;

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

TEST(Kernels, ElementwiseArithmetic) {
  const TensorMap out = run_text(R"(
input x : f32[3]
output y : f32[3]
kernel k {
  for i in 0..3:
    y[i] = x[i] * 2.0 + 1 - x[i] / 4
})",
                                 {{"x", f32({3}, {1, 2, -4})}});
  // 1*2+1-0.25 = 2.75; 2*2+1-0.5 = 4.5; -8+1+1 = -6
  EXPECT_EQ(values(out.at("y")), (std::vector<double>{2.75, 4.5, -6}));
}

TEST(Kernels, AnEmptyInnerLoopEndsTheWalkWhateverTheOuterLoops) {
  // The hour fuzz run's reproducer (examples/conv2d.ir with G = 10^12 groups: C / G = 0 channels
  // a group): 10^12 outer steps around an empty loop took hours; the domain is empty, so nothing
  // runs. The reduction's output elements are those its output loops index: none, so y keeps
  // the 7 written before it, and the second kernel (one loop of 3) runs as usual.
  const TensorMap out = run_text(R"(
size G = 1000000000000
size CG = 4 / G
output y : f32[3]
kernel fill {
  for i in 0..3:
    y[i] = 7.0
}
kernel conv {
  for g in 0..G, c in 0..CG, k in 0..G:
    y[g * CG + c] += 1.0
}
)");
  EXPECT_EQ(values(out.at("y")), (std::vector<double>{7, 7, 7}));
}

TEST(Kernels, LoopIndicesAndSizesAsValues) {
  const TensorMap out = run_text(R"(
size N = 3
output y : f64[2, N]
kernel k {
  for i in 0..2, j in 0..N:
    y[i, j] = i * 10 + j + N
})");
  // i*10 + j + 3
  EXPECT_EQ(values(out.at("y")), (std::vector<double>{3, 4, 5, 13, 14, 15}));
}

TEST(Kernels, ScalarKernelWithoutLoops) {
  const TensorMap out = run_text(R"(
input x : f32[2]
output s : f32[]
kernel k { s[] = x[1] * 3.0 })",
                                 {{"x", f32({2}, {5, 7})}});
  EXPECT_EQ(values(out.at("s")), (std::vector<double>{21}));
}

TEST(Kernels, AffineIndicesWithOffsetsAndStrides) {
  const TensorMap out = run_text(R"(
input x : f32[8]
output y : f32[3]
kernel k {
  for i in 0..3:
    y[i] = x[2 * i + 1] - x[7 - i]
})",
                                 {{"x", f32({8}, {0, 1, 2, 3, 4, 5, 6, 7})}});
  // x[1]-x[7] = -6, x[3]-x[6] = -3, x[5]-x[5] = 0
  EXPECT_EQ(values(out.at("y")), (std::vector<double>{-6, -3, 0}));
}

// Chunks hold 256 points: 600 points cover full, partial and offset chunks.
TEST(Kernels, LongLoopsSpanSeveralChunks) {
  Tensor x(ir::DType::F64, {600});
  for (int64_t i = 0; i < 600; ++i) x.set(i, static_cast<double>(i));
  const TensorMap out = run_text(R"(
input x : f64[600]
output y : f64[599]
kernel k {
  for i in 0..599:
    y[i] = x[i + 1] * x[i]
})",
                                 {{"x", x}});
  for (int64_t i = 0; i < 599; ++i) EXPECT_EQ(out.at("y").get(i), (i + 1.0) * i) << i;
}

TEST(Kernels, TransposedWriteOverLongLoops) {
  Tensor x(ir::DType::F32, {3, 40});
  for (int64_t i = 0; i < 120; ++i) x.set(i, static_cast<double>(i));
  const TensorMap out = run_text(R"(
input x : f32[3, 40]
output y : f32[40, 3]
kernel t {
  for i in 0..3, j in 0..40:
    y[j, i] = x[i, j]
})",
                                 {{"x", x}});
  for (int64_t i = 0; i < 3; ++i) {
    for (int64_t j = 0; j < 40; ++j) EXPECT_EQ(out.at("y").get(j * 3 + i), i * 40 + j);
  }
}

// A value is rounded to the destination's dtype on every store.
struct StoreCase {
  const char* dtype;
  double in, stored;
};

class StoreRounding : public ::testing::TestWithParam<StoreCase> {};

TEST_P(StoreRounding, RoundsToTheDtype) {
  const StoreCase c = GetParam();
  const TensorMap out = run_text(std::string(R"(
input x : f64[]
output y : )") + c.dtype + R"([]
kernel k { y[] = x[] })",
                                 {{"x", make(ir::DType::F64, {}, {c.in})}});
  const double got = out.at("y").get(0);
  if (std::isnan(c.stored)) {
    EXPECT_TRUE(std::isnan(got)) << c.dtype << " " << c.in;
  } else {
    EXPECT_EQ(got, c.stored) << c.dtype << " " << c.in;
  }
}

INSTANTIATE_TEST_SUITE_P(
    EveryDtype, StoreRounding,
    ::testing::Values(StoreCase{"f64", 0.1, 0.1},
                      StoreCase{"f32", 1 + 0x1p-30, 1.0},  // below half an f32 ulp (2^-24)
                      StoreCase{"f32", 0.1, static_cast<double>(0.1f)},
                      StoreCase{"f32", 1e39, kInf},
                      StoreCase{"f16", 1 + 0x1p-11, 1.0},             // tie: to the even mantissa 0
                      StoreCase{"f16", 1 + 3 * 0x1p-11, 1 + 0x1p-9},  // tie: to the even mantissa 2
                      StoreCase{"f16", 70000, kInf},                  // max 65504
                      StoreCase{"bf16", 1 + 0x1p-8, 1.0},             // tie: to even
                      StoreCase{"bf16", 1 + 3 * 0x1p-8, 1 + 0x1p-6},  // tie: to even
                      StoreCase{"f8e4m3", 1.0625, 1.0},               // tie between 1 and 1.125
                      StoreCase{"f8e4m3", 448, 448},                  // the largest value
                      StoreCase{"f8e4m3", 500, kNaN},     // no infinities: overflow is NaN
                      StoreCase{"f8e5m2", 1.375, 1.5},    // tie between 1.25 and 1.5
                      StoreCase{"f8e5m2", 60000, 57344},  // rounds down to the largest value
                      StoreCase{"i64", -3.9, -3},         // truncation toward zero
                      StoreCase{"i32", 2.7, 2},
                      StoreCase{"i32", 2147483648.0, -2147483648.0},  // 2^31 wraps
                      StoreCase{"i8", 130, -126},                     // 130 - 256
                      StoreCase{"u8", 259, 3},                        // 259 - 256
                      StoreCase{"u8", -1, 255}, StoreCase{"i32", kNaN, 0},
                      StoreCase{"bool", 0.5, 1}, StoreCase{"bool", 0, 0}));

TEST(Kernels, NarrowIntermediatesReallyLosePrecision) {
  const TensorMap out = run_text(R"(
input x : f64[]
tensor t : bf16[]
output y : f64[]
kernel a { t[] = x[] }
kernel b { y[] = t[] * 3 })",
                                 {{"x", make(ir::DType::F64, {}, {1 + 0x1p-9})}});
  // bf16 keeps 7 mantissa bits: 1 + 2^-9 rounds to 1, then 1 * 3
  EXPECT_EQ(values(out.at("y")), (std::vector<double>{3}));
}

TEST(Kernels, CastRoundsWithinAnExpression) {
  const TensorMap out = run_text(R"(
input x : f64[]
output y : f64[]
kernel k { y[] = f16(x[]) - x[] })",
                                 {{"x", make(ir::DType::F64, {}, {1 + 0x1p-12})}});
  // f16(1 + 2^-12) = 1 (below half an ulp of 2^-10), so the difference is -2^-12
  EXPECT_EQ(values(out.at("y")), (std::vector<double>{-0x1p-12}));
}

// ---- select -------------------------------------------------------------------------------

TEST(Kernels, SelectDoesNotPerformTheReadOfABranchNotTaken) {
  const TensorMap out = run_text(R"(
input x : f32[4]
output y : f32[4]
kernel shift {
  for i in 0..4:
    y[i] = select(i < 3, x[i + 1], -1.0)
})",
                                 {{"x", f32({4}, {10, 20, 30, 40})}});
  // x[4] (i = 3) is out of bounds but its branch is not taken
  EXPECT_EQ(values(out.at("y")), (std::vector<double>{20, 30, 40, -1}));
}

TEST(Kernels, SelectElseBranchIsLazyToo) {
  const TensorMap out = run_text(R"(
input x : f32[4]
output y : f32[4]
kernel shift {
  for i in 0..4:
    y[i] = select(i == 0, 0.0, x[i - 1])
})",
                                 {{"x", f32({4}, {10, 20, 30, 40})}});
  EXPECT_EQ(values(out.at("y")), (std::vector<double>{0, 10, 20, 30}));
}

TEST(Kernels, AReadInATakenBranchIsBoundsChecked) {
  const std::string message = user_error([] {
    run_text(R"(
input x : f32[4]
output y : f32[4]
kernel shift {
  for i in 0..4:
    y[i] = select(i < 4, x[i + 1], -1.0)
})",
             {{"x", f32({4}, {10, 20, 30, 40})}});
  });
  EXPECT_NE(message.find("test.ir:6:"), std::string::npos) << message;
  EXPECT_NE(message.find("kernel 'shift' reads x[4], out of bounds for its shape [4] (at i=3)"),
            std::string::npos)
      << message;
}

// A kernel that only copies (its right side one read of its own dtype) moves the elements as
// they are: the transpose of an i64 matrix keeps 2^53 + 1, which the interpreter's round trip
// through double would make 2^53 (it does, with the fast paths off).
TEST(Kernels, ACopyKernelMovesElementsExactly) {
  Tensor x(ir::DType::I64, {3, 2});
  auto* xs = static_cast<int64_t*>(x.data());
  const int64_t big = (int64_t{1} << 53) + 1;           // 9,007,199,254,740,993
  for (int64_t k = 0; k < 6; ++k) xs[k] = big + 2 * k;  // odd: none a double
  const std::string text = R"(
input x : i64[3, 2]
output y : i64[2, 3]
kernel t {
  for i in 0..2, j in 0..3:
    y[i, j] = x[j, i]
})";
  const TensorMap out = run_text(text, {{"x", x}});
  const auto* ys = static_cast<const int64_t*>(out.at("y").data());
  // y[i, j] = x[j, i] = big + 2 (2 j + i): y row 0 = big, big + 4, big + 8; row 1 = big + 2, ...
  EXPECT_EQ(ys[0], big);
  EXPECT_EQ(ys[1], big + 4);
  EXPECT_EQ(ys[2], big + 8);
  EXPECT_EQ(ys[3], big + 2);
  EXPECT_EQ(ys[5], big + 10);
  RunOptions generic;
  generic.fast_paths = false;
  const TensorMap rounded = run_text(text, {{"x", x}}, generic);
  EXPECT_EQ(static_cast<const int64_t*>(rounded.at("y").data())[0], big - 1);  // 2^53
}

// The copy of a bf16 slice and transpose across several chunks equals the interpreter's, bit for
// bit.
TEST(Kernels, ACopyKernelAgreesWithTheInterpreter) {
  test::Random r(3);
  const Tensor x = r.tensor(ir::DType::BF16, {600, 3});
  const std::string text = R"(
input x : bf16[600, 3]
output y : bf16[2, 600]
kernel t {
  for i in 0..2, j in 0..600:
    y[i, j] = x[j, i + 1]
})";
  RunOptions generic;
  generic.fast_paths = false;
  const Tensor fast = run_text(text, {{"x", x}}).at("y");
  const Tensor slow = run_text(text, {{"x", x}}, generic).at("y");
  ASSERT_EQ(fast.nbytes(), slow.nbytes());
  EXPECT_EQ(std::memcmp(fast.data(), slow.data(), fast.nbytes()), 0);
  EXPECT_EQ(fast.get(1 * 600 + 599), x.get(599 * 3 + 2));  // y[1, 599] = x[599, 2]
}

TEST(Kernels, NestedSelectsMaskLanesAcrossChunks) {
  // A 3-point stencil over 700 points, guarded at both ends by nested selects.
  Tensor x(ir::DType::F64, {700});
  for (int64_t i = 0; i < 700; ++i) x.set(i, static_cast<double>(i * i));
  const TensorMap out = run_text(R"(
input x : f64[700]
output y : f64[700]
kernel stencil {
  for i in 0..700:
    y[i] = select(i > 0, select(i < 699, x[i + 1] - x[i - 1], 2.0), x[i + 1])
})",
                                 {{"x", x}});
  const Tensor& y = out.at("y");
  EXPECT_EQ(y.get(0), 1.0);    // x[1]
  EXPECT_EQ(y.get(699), 2.0);  // the inner else branch
  for (int64_t i = 1; i < 699; ++i) EXPECT_EQ(y.get(i), 4.0 * static_cast<double>(i)) << i;
}

// ---- reductions ---------------------------------------------------------------------------

TEST(Kernels, ReductionsIgnoreTheOldContentsOfTheirOutput) {
  const TensorMap out = run_text(R"(
input x : f32[2, 3]
tensor t : f32[2]
output y : f32[2]
kernel prefill {
  for i in 0..2:
    t[i] = 100.0
}
kernel rowsum {
  for i in 0..2, k in 0..3:
    t[i] += x[i, k]
}
kernel copy {
  for i in 0..2:
    y[i] = t[i]
})",
                                 {{"x", f32({2, 3}, {1, 2, 3, 4, 5, 6})}});
  // 1+2+3 = 6 and 4+5+6 = 15: the 100 is not read
  EXPECT_EQ(values(out.at("y")), (std::vector<double>{6, 15}));
}

TEST(Kernels, EveryReductionStartsAtItsIdentity) {
  const TensorMap out = run_text(R"(
input x : f32[3]
output s : f32[]
output p : f32[]
output hi : f32[]
output lo : f32[]
kernel sum { for k in 0..3: s[] += x[k] }
kernel prod { for k in 0..3: p[] *= x[k] }
kernel max { for k in 0..3: hi[] max= x[k] }
kernel min { for k in 0..3: lo[] min= x[k] })",
                                 {{"x", f32({3}, {-2, -5, -3})}});
  EXPECT_EQ(values(out.at("s")), (std::vector<double>{-10}));  // -2-5-3
  EXPECT_EQ(values(out.at("p")), (std::vector<double>{-30}));  // -2*-5*-3
  EXPECT_EQ(values(out.at("hi")), (std::vector<double>{-2}));  // not 0: the identity is -inf
  EXPECT_EQ(values(out.at("lo")), (std::vector<double>{-5}));
}

TEST(Kernels, AnEmptyReductionRangeLeavesTheIdentity) {
  const TensorMap out = run_text(R"(
input x : f32[3]
output y : f32[3]
output m : f32[3]
kernel exclusive_cumsum {
  for i in 0..3, k in 0..i:
    y[i] += x[k]
}
kernel exclusive_cummax {
  for i in 0..3, k in 0..i:
    m[i] max= x[k]
})",
                                 {{"x", f32({3}, {1, 2, 3})}});
  EXPECT_EQ(values(out.at("y")), (std::vector<double>{0, 1, 3}));
  EXPECT_EQ(values(out.at("m")), (std::vector<double>{-kInf, 1, 2}));
}

TEST(Kernels, TriangularDomain) {
  const TensorMap out = run_text(R"(
input x : f32[3]
output y : f32[3]
kernel cumsum {
  for i in 0..3, j in 0..i+1:
    y[i] += x[j]
})",
                                 {{"x", f32({3}, {1, 2, 3})}});
  EXPECT_EQ(values(out.at("y")), (std::vector<double>{1, 3, 6}));
}

TEST(Kernels, ReductionsAccumulateInDoubleAndRoundOnce) {
  const TensorMap out = run_text(R"(
input x : f16[5]
output y : f16[]
kernel sum { for k in 0..5: y[] += x[k] })",
                                 {{"x", make(ir::DType::F16, {5}, {2048, 1, 1, 1, 1})}});
  // Rounding to f16 after each step would stay at 2048 (ulp 2); in double the sum is 2052.
  EXPECT_EQ(values(out.at("y")), (std::vector<double>{2052}));
}

TEST(Kernels, ReductionLoopOutsideTheOutputLoops) {
  const TensorMap out =
      run_text(R"(
input x : f16[4, 2]
output y : f16[2]
kernel colsum {
  for k in 0..4, j in 0..2:
    y[j] += x[k, j]
})",
               {{"x", make(ir::DType::F16, {4, 2}, {2048, 1, 1, 2, 1, 3, 1, 4})}});
  // column 0: 2048+1+1+1 = 2051, rounded once to f16 (ulp 2, tie to even) = 2052; 1+2+3+4 = 10
  EXPECT_EQ(values(out.at("y")), (std::vector<double>{2052, 10}));
}

TEST(Kernels, ConvTransposeStyleWritesAccumulate) {
  const TensorMap out = run_text(R"(
input x : f32[3]
input w : f32[2]
output y : f32[4]
kernel convt {
  for i in 0..3, k in 0..2:
    y[i + k] += x[i] * w[k]
})",
                                 {{"x", f32({3}, {1, 2, 3})}, {"w", f32({2}, {10, 1})}});
  // y[0] = 10, y[1] = 1 + 20, y[2] = 2 + 30, y[3] = 3
  EXPECT_EQ(values(out.at("y")), (std::vector<double>{10, 21, 32, 3}));
}

TEST(Kernels, OutputLoopBoundedByAReductionLoopIsAnError) {
  const std::string message = user_error([] {
    run_text(R"(
input x : f32[3]
output y : f32[3]
kernel tri {
  for k in 0..3, i in 0..k:
    y[i] += x[k]
})",
             {{"x", f32({3}, {1, 2, 3})}});
  });
  EXPECT_NE(message.find("the bounds of output loop 'i' depend on reduction loop 'k'"),
            std::string::npos)
      << message;
}

// Reads of the output see its state before the kernel where a read may touch an element the
// kernel writes (a snapshot; a scan step's reads of the column before never do). 600 elements:
// more than one chunk of the interpreter (256 points), so in place a chunk would read what an
// earlier chunk wrote.
TEST(Kernels, AssignReadsTheStateBeforeTheKernel) {
  std::vector<double> x;
  for (int i = 0; i < 600; ++i) x.push_back(i);  // x[i] = i
  const TensorMap out = run_text(R"(
input x : f32[600]
tensor t : f32[600]
output y : f32[600]
output s : f32[600]
kernel init { for i in 0..600: t[i] = x[i] }
kernel reverse { for i in 0..600: t[i] = t[599 - i] * 10.0 }
kernel copy { for i in 0..600: y[i] = t[i] }
kernel s0 { for i in 0..600: s[i] = x[i] }
kernel shift { for i in 1..600: s[i] = s[i - 1] })",
                                 {{"x", f32({600}, x)}});
  // y[i] = 10 (599 - i): y[0] = 5990, y[300] = 2990, y[599] = 0 (in place, t[599] would read the
  // new t[0]: 59900)
  const std::vector<double> y = values(out.at("y"));
  EXPECT_EQ(y[0], 5990);
  EXPECT_EQ(y[300], 2990);
  EXPECT_EQ(y[599], 0);
  // shift reads s[0..598] and writes s[1..599]: ranges that meet, so s[i] = i - 1 (in place, the
  // chunk from i = 257 would read s[256] as written by the chunk before, 255)
  const std::vector<double> s = values(out.at("s"));
  EXPECT_EQ(s[0], 0);
  EXPECT_EQ(s[257], 256);
  EXPECT_EQ(s[599], 598);
}

// The interpreter may run an output loop innermost; each element must still receive its terms
// in the kernel's order, so the result equals a naive loop with double accumulation, bit for bit.
TEST(Kernels, ReductionMatchesNaiveLoopBitForBit) {
  test::Random r(7);
  const Tensor a = r.tensor(ir::DType::F32, {20, 30});
  const Tensor b = r.tensor(ir::DType::F32, {30, 40});
  RunOptions generic;
  generic.fast_paths = false;
  const TensorMap out = run_text(R"(
input a : f32[20, 30]
input b : f32[30, 40]
output c : f32[20, 40]
kernel mm {
  for i in 0..20, j in 0..40, k in 0..30:
    c[i, j] += a[i, k] * b[k, j]
})",
                                 {{"a", a}, {"b", b}}, generic);
  for (int64_t i = 0; i < 20; ++i) {
    for (int64_t j = 0; j < 40; ++j) {
      double sum = 0;
      for (int64_t k = 0; k < 30; ++k) sum += a.get(i * 30 + k) * b.get(k * 40 + j);
      ASSERT_EQ(out.at("c").get(i * 40 + j), static_cast<double>(static_cast<float>(sum)));
    }
  }
}

// ---- value operators ----------------------------------------------------------------------

struct OpCase {
  const char* expr;  // over scalars a and b
  double a, b, expected;
};

class ValueOps : public ::testing::TestWithParam<OpCase> {};

TEST_P(ValueOps, Evaluates) {
  const OpCase c = GetParam();
  const TensorMap out = run_text(std::string(R"(
input a : f64[]
input b : f64[]
output y : f64[]
kernel k { y[] = )") + c.expr + " }",
                                 {{"a", make(ir::DType::F64, {}, {c.a})},
                                  {"b", make(ir::DType::F64, {}, {c.b})}});
  const double got = out.at("y").get(0);
  if (std::isnan(c.expected)) {
    EXPECT_TRUE(std::isnan(got)) << c.expr;
  } else if (std::isinf(c.expected)) {
    EXPECT_EQ(got, c.expected) << c.expr;
  } else {
    EXPECT_NEAR(got, c.expected, 1e-15 * std::max(1.0, std::fabs(c.expected))) << c.expr;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Table, ValueOps,
    ::testing::Values(
        OpCase{"a[] % b[]", -7, 3, 2}, OpCase{"a[] % b[]", 7, -3, -2},  // floor modulo
        OpCase{"a[] / b[]", 7, 2, 3.5}, OpCase{"pow(a[], b[])", 2, 10, 1024},
        OpCase{"min(a[], b[])", 1, 2, 1}, OpCase{"max(a[], b[])", 1, 2, 2},
        OpCase{"max(a[], b[])", kNaN, 2, kNaN}, OpCase{"min(a[], b[])", 1, kNaN, kNaN},
        OpCase{"a[] < b[]", 1, 2, 1}, OpCase{"a[] >= b[]", 1, 2, 0},
        OpCase{"a[] == b[]", kNaN, kNaN, 0}, OpCase{"a[] != b[]", kNaN, kNaN, 1},
        OpCase{"a[] && b[]", 2, 0, 0}, OpCase{"a[] || b[]", 0, -1, 1}, OpCase{"!a[]", 0, 0, 1},
        OpCase{"-a[]", 3, 0, -3}, OpCase{"abs(a[])", -3, 0, 3}, OpCase{"sign(a[])", -3, 0, -1},
        OpCase{"floor(a[])", -1.5, 0, -2}, OpCase{"ceil(a[])", -1.5, 0, -1},
        OpCase{"round(a[])", 2.5, 0, 2}, OpCase{"round(a[])", 3.5, 0, 4},  // half to even
        OpCase{"exp(a[])", 0, 0, 1}, OpCase{"exp2(a[])", 3, 0, 8}, OpCase{"expm1(a[])", 0, 0, 0},
        OpCase{"log(a[])", 1, 0, 0}, OpCase{"log2(a[])", 8, 0, 3}, OpCase{"log1p(a[])", 0, 0, 0},
        OpCase{"sqrt(a[])", 9, 0, 3}, OpCase{"rsqrt(a[])", 4, 0, 0.5},
        OpCase{"recip(a[])", 4, 0, 0.25}, OpCase{"tanh(a[])", 0, 0, 0},
        OpCase{"sigmoid(a[])", 0, 0, 0.5}, OpCase{"erf(a[])", 0, 0, 0},
        OpCase{"erfinv(erf(a[]))", 0.5, 0, 0.5}, OpCase{"erfinv(a[])", 1, 0, kInf},
        OpCase{"erfinv(a[])", 1.5, 0, kNaN}, OpCase{"sin(a[])", 0, 0, 0},
        OpCase{"cos(a[])", 0, 0, 1}, OpCase{"isnan(a[])", kNaN, 0, 1},
        OpCase{"atan2(a[], b[])", 1, 1, std::atan(1.0)},
        OpCase{"select(a[], 1.0, 2.0)", kNaN, 0, 1}));  // NaN is non-zero: true

// A value index that is not affine (only built in code: the parser makes `i / 2` a division of
// values) is evaluated per point with floor division.
TEST(Kernels, NonAffineIndexValue) {
  ir::Program p;
  p.tensors.push_back({"y", ir::TensorRole::Output, ir::DType::F64, {ir::int_const(5)}, {}, {}});
  ir::Kernel k;
  k.name = "k";
  k.loops.push_back({"i", ir::int_const(0), ir::int_const(5), {}});
  k.out = "y";
  k.out_indices = {ir::int_sym("i", ir::SymKind::Loop)};
  k.rhs = ir::expr_index(
      ir::int_binary(ir::IntOp::FloorDiv, ir::int_sym("i", ir::SymKind::Loop), ir::int_const(2)));
  p.body.push_back(ir::make_stmt(std::move(k)));
  const TensorMap out = run(p, {});
  EXPECT_EQ(values(out.at("y")), (std::vector<double>{0, 0, 1, 1, 2}));
}

}  // namespace
}  // namespace solar::exec
