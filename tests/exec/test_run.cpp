// Whole runs: repetition, input validation, the memory limit, and run-time bounds checks.
#include <gtest/gtest.h>

#include <string>

#include "exec_test_util.h"
#include "solar/ir/diagnostic.h"

namespace solar::exec {
namespace {

using test::f32;
using test::make;
using test::run_text;
using test::user_error;
using test::values;

constexpr const char* kAffine = R"(
size M = 2
size K = 4
input x : f32[M, K]
weight w : f32[K]
output y : f32[M]
kernel dot {
  for i in 0..M, k in 0..K:
    y[i] += x[i, k] * w[k]
})";

TensorMap affine_inputs() {
  return {{"x", f32({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8})}, {"w", f32({4}, {1, 0, -1, 2})}};
}

TEST(Run, ReturnsOnlyTheOutputs) {
  const TensorMap out = run_text(kAffine, affine_inputs());
  ASSERT_EQ(out.size(), 1u);
  // 1 - 3 + 8 = 6; 5 - 7 + 16 = 14
  EXPECT_EQ(values(out.at("y")), (std::vector<double>{6, 14}));
}

TEST(Run, SizeOverrides) {
  RunOptions o;
  o.size_overrides["M"] = 1;
  const TensorMap out =
      run_text(kAffine, {{"x", f32({1, 4}, {1, 1, 1, 1})}, {"w", f32({4}, {1, 2, 3, 4})}}, o);
  EXPECT_EQ(values(out.at("y")), (std::vector<double>{10}));
}

TEST(Run, BorrowedInputs) {
  float x[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  TensorMap in = affine_inputs();
  in["x"] = Tensor::borrow(ir::DType::F32, {2, 4}, x);
  EXPECT_EQ(values(run_text(kAffine, in).at("y")), (std::vector<double>{6, 14}));
}

TEST(Run, MissingInput) {
  TensorMap in = affine_inputs();
  in.erase("w");
  EXPECT_EQ(user_error([&] { run_text(kAffine, in); }), "missing weight 'w' (f32[4])");
}

TEST(Run, InputOfTheWrongShape) {
  TensorMap in = affine_inputs();
  in["x"] = f32({2, 3}, {});
  EXPECT_EQ(user_error([&] { run_text(kAffine, in); }),
            "input 'x' has shape [2, 3], expected [2, 4]");
}

TEST(Run, InputOfTheWrongDtype) {
  TensorMap in = affine_inputs();
  in["w"] = make(ir::DType::F64, {4}, {});
  EXPECT_EQ(user_error([&] { run_text(kAffine, in); }), "weight 'w' has dtype f64, expected f32");
}

TEST(Run, UnknownInputName) {
  TensorMap in = affine_inputs();
  in["z"] = f32({1}, {});
  EXPECT_EQ(user_error([&] { run_text(kAffine, in); }),
            "unexpected input 'z': the program declares no tensor of that name");
}

TEST(Run, AnOutputGivenAsInput) {
  TensorMap in = affine_inputs();
  in["y"] = f32({2}, {});
  EXPECT_EQ(user_error([&] { run_text(kAffine, in); }),
            "unexpected input 'y': it is declared as output, and only inputs and weights are "
            "supplied");
}

TEST(Run, CheckerErrorsStopTheRun) {
  EXPECT_THROW(run_text("output y : f32[2]\nkernel k { for i in 0..3: y[i] = 1.0 }"),
               ir::DiagnosticError);
}

TEST(Run, IntermediatesStartAtZero) {
  const TensorMap out = run_text(R"(
tensor t : f32[2]
output y : f32[2]
kernel k { for i in 0..2: y[i] = t[i] + 1 })");
  EXPECT_EQ(values(out.at("y")), (std::vector<double>{1, 1}));
}

TEST(Run, RepeatRunsTheBodyInOrder) {
  const TensorMap out = run_text(R"(
input x : f32[3, 2]
tensor h : f32[2]
output ys : f32[3, 2]
repeat t in 0..3 {
  kernel step {
    for i in 0..2:
      h[i] = h[i] * 2.0 + x[t, i]
  }
  ys[t, :] = h
})",
                                 {{"x", f32({3, 2}, {1, 2, 3, 4, 5, 6})}});
  // h: [1, 2] -> [2+3, 4+4] = [5, 8] -> [10+5, 16+6] = [15, 22]
  EXPECT_EQ(values(out.at("ys")), (std::vector<double>{1, 2, 5, 8, 15, 22}));
}

TEST(Run, RepeatIndexInLoopBounds) {
  const TensorMap out = run_text(R"(
output y : f32[4]
repeat t in 1..4 {
  kernel fill {
    for i in t-1..t:
      y[i] = t * 10
  }
})");
  EXPECT_EQ(values(out.at("y")), (std::vector<double>{10, 20, 30, 0}));
}

// Row i of a [600, 3] result.
std::vector<double> row3(const Tensor& y, int i) {
  const std::vector<double> v = values(y);
  return {v.begin() + 3 * i, v.begin() + 3 * i + 3};
}

// Runs y[i, 0] = x[i, 0], then y[i, t] = `step` for t = 1, 2 (a repeat of one kernel), over 600
// rows with x[i, j] = i + j. The executor runs such steps on a block of 256 rows before the next
// block where each row touches only its own elements (run_repeated_kernel): 600 rows are 3
// blocks (0-255, 256-511, 512-599).
Tensor run_steps(const std::string& step) {
  std::vector<double> x;
  for (int i = 0; i < 600; ++i) {
    for (int j = 0; j < 3; ++j) x.push_back(i + j);
  }
  return run_text(R"(
input x : f32[600, 3]
output y : f32[600, 3]
kernel first { for i in 0..600: y[i, 0] = x[i, 0] }
repeat t in 1..3 {
  kernel step { for i in 0..600: y[i, t] = )" +
                      step + R"( }
})",
                  {{"x", f32({600, 3}, x)}})
      .at("y");
}

// A scan: each step reads the column the step before wrote, in its own row.
TEST(Run, ScanStepsRunByBlocksOfRows) {
  const Tensor y = run_steps("y[i, t - 1] + x[i, t]");
  // y[i, 0] = i, y[i, 1] = i + (i + 1) = 2i + 1, y[i, 2] = 2i + 1 + (i + 2) = 3i + 3
  EXPECT_EQ(row3(y, 0), (std::vector<double>{0, 1, 3}));
  EXPECT_EQ(row3(y, 255), (std::vector<double>{255, 511, 768}));
  EXPECT_EQ(row3(y, 256), (std::vector<double>{256, 513, 771}));
  EXPECT_EQ(row3(y, 599), (std::vector<double>{599, 1199, 1800}));
}

// A step that reads another row's element of the step before cannot run by blocks of rows:
// row 0 reads row 599, which a later block writes. The steps run one after the other.
TEST(Run, StepsReadingOtherRowsRunOneAfterTheOther) {
  const Tensor y = run_steps("y[599 - i, t - 1] + 1.0");
  // y[i, 1] = y[599 - i, 0] + 1 = 600 - i; y[i, 2] = y[599 - i, 1] + 1 = 600 - (599 - i) + 1
  // = i + 2 (by blocks, row 0 would read y[599, 1] before it is written: 0 + 1 = 1, not 2)
  EXPECT_EQ(row3(y, 0), (std::vector<double>{0, 600, 2}));
  EXPECT_EQ(row3(y, 300), (std::vector<double>{300, 300, 302}));
  EXPECT_EQ(row3(y, 599), (std::vector<double>{599, 1, 601}));
}

// Past its budget the checker stops checking repeat iterations; the executor still checks
// every access when it runs.
TEST(Run, WritesOutOfBoundsAreCaughtAtRunTime) {
  const std::string message = user_error([] {
    run_text(R"(
output y : f32[69999]
repeat t in 0..70000 {
  kernel put { y[t] = 1.0 }
})");
  });
  EXPECT_NE(message.find("kernel 'put' writes y[69999], out of bounds for its shape [69999]"),
            std::string::npos)
      << message;
}

constexpr const char* kHuge = R"(
size N = 1000000
input x : f32[N, N]
tensor t : f32[N, N]
output y : f32[N]
kernel k { for i in 0..N, j in 0..N: t[i, j] = x[i, j] }
kernel r { for i in 0..N, j in 0..N: y[i] += t[i, j] })";

TEST(Run, RefusesProgramsOverTheMemoryLimitBeforeAllocating) {
  // 4e12 bytes for x and for t: the check must come before any allocation or input validation.
  const std::string message = user_error([] { run_text(kHuge, {}); });
  EXPECT_EQ(message,
            "program needs 7.3 TiB for its tensors (inputs and weights 3.6 TiB, outputs 3.8 MiB, "
            "intermediates 3.6 TiB, scratch 7.6 MiB), more than the memory limit of 8.0 GiB; set "
            "a larger limit with --memory-limit or run at smaller sizes (--size N=...)");
}

TEST(Run, MemoryLimitIsConfigurable) {
  RunOptions o;
  // x: 2*4*4 = 32, w: 16, y: 8, and a double accumulator for y: 16; 72 bytes in all
  o.memory_limit_bytes = 72;
  EXPECT_EQ(values(run_text(kAffine, affine_inputs(), o).at("y")), (std::vector<double>{6, 14}));
  o.memory_limit_bytes = 71;
  EXPECT_NE(user_error([&] { run_text(kAffine, affine_inputs(), o); }), "");
}

TEST(Run, RequiredBytesCountsTensorsAndTheLargestScratch) {
  const ir::Program p = ir::parse(R"(
input x : f32[2, 3]
tensor a : bf16[5]
tensor b : f32[4]
output y : f64[4]
kernel r1 { for i in 0..4, k in 0..3: b[i] += x[0, k] }
kernel r2 { for i in 0..4, k in 0..3: y[i] += x[1, k] }
kernel s { for i in 0..5: a[i] = a[4 - i] * 2 }
kernel u { for i in 0..4: y[i] = b[i] + a[i] })",
                                  "t.ir");
  // tensors: 24 + 10 + 16 + 32 = 82; scratch: max(r1: 4 doubles = 32, r2: f64 output = 0,
  // s: a snapshot of a = 10) = 32
  EXPECT_EQ(required_bytes(p, ir::bind_sizes(p)), 82u + 32u);
}

}  // namespace
}  // namespace solar::exec
