// The GEMM fast path: which kernels take it (white-box, through the executor's private header),
// and that it gives the interpreter's results on random data.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "../../src/exec/gemm.h"
#include "exec_test_util.h"
#include "solar/ir/checker.h"

namespace solar::exec {
namespace {

// Whether the first statement of `text` (a kernel) runs on the fast path.
bool takes_fast_path(const std::string& text) {
  const ir::Program p = ir::parse(text, "t.ir");
  const ir::SymbolValues sizes = ir::check_or_throw(p);
  Env env{p, {}, sizes, true};
  for (const ir::TensorDecl& t : p.tensors) {
    std::vector<int64_t> shape;
    for (const ir::IntExprP& d : t.shape) shape.push_back(ir::eval_int(*d, sizes));
    env.tensors.emplace(t.name, Tensor(t.dtype, shape));
  }
  const ir::Stmt& s = *p.body.at(0);
  return run_gemm(compile_kernel(std::get<ir::Kernel>(s.node), s, env));
}

std::string matmul(const std::string& loops,
                   const std::string& op = "+=", const std::string& rhs = "a[i, k] * b[k, j]",
                   int n = 32) {
  const std::string size = std::to_string(n);
  return "input a : f32[" + size + ", " + size + "]\ninput b : f32[" + size + ", " + size +
         "]\noutput c : f32[" + size + ", " + size + "]\nkernel mm {\n  for " + loops +
         ":\n    c[i, j] " + op + " " + rhs + "\n}\n";
}

TEST(GemmPlan, TakesContractions) {
  EXPECT_TRUE(takes_fast_path(matmul("i in 0..32, j in 0..32, k in 0..32")));
  EXPECT_TRUE(takes_fast_path(matmul("k in 0..32, j in 0..32, i in 0..32")));  // any order
  EXPECT_TRUE(
      takes_fast_path(matmul("i in 0..32, j in 0..32, k in 0..32", "+=", "b[k, j] * a[i, k]")));
}

TEST(GemmPlan, LeavesOtherKernelsToTheInterpreter) {
  EXPECT_FALSE(
      takes_fast_path(matmul("i in 0..4, j in 0..4, k in 0..4", "+=", "a[i, k] * b[k, j]", 4)))
      << "too small to gain";
  EXPECT_FALSE(takes_fast_path(matmul("i in 0..32, j in 0..i+1, k in 0..32"))) << "not a box";
  EXPECT_FALSE(takes_fast_path(matmul("i in 0..32, j in 0..32, k in 0..32", "max="))) << "max=";
  EXPECT_FALSE(
      takes_fast_path(matmul("i in 0..32, j in 0..32, k in 0..32", "+=", "a[i, k] + b[k, j]")))
      << "not a product";
  EXPECT_FALSE(takes_fast_path(
      matmul("i in 0..32, j in 0..32, k in 0..32", "+=", "a[i, k] * b[k, j] * 2.0")))
      << "not a product of two reads";
}

TEST(GemmPlan, TakesAScatterOutput) {
  // c[i + j] is written by several (i, j): the products are added into an accumulator.
  EXPECT_TRUE(takes_fast_path(R"(
input a : f32[32, 32]
input b : f32[32, 32]
output c : f32[63]
kernel band {
  for i in 0..32, j in 0..32, k in 0..32:
    c[i + j] += a[i, k] * b[j, k]
})"));
}

TEST(GemmPlan, NeedsEveryLoopInTwoOperands) {
  EXPECT_FALSE(takes_fast_path(R"(
input a : f32[32, 32, 4]
input b : f32[32, 32]
output c : f32[32, 32]
kernel mm {
  for i in 0..32, j in 0..32, k in 0..32, r in 0..4:
    c[i, j] += a[i, k, r] * b[k, j]
})"));
}

TEST(GemmPlan, TakesConvolutionsAndBatches) {
  EXPECT_TRUE(takes_fast_path(R"(
input w : f32[8, 4, 3]
input x : f32[4, 66]
output y : f32[8, 64]
kernel conv1d {
  for o in 0..8, p in 0..64, c in 0..4, r in 0..3:
    y[o, p] += w[o, c, r] * x[c, p + r]
})"));
  EXPECT_TRUE(takes_fast_path(R"(
input q : f32[2, 32, 8]
input k : f32[2, 32, 8]
output s : f32[2, 32, 32]
kernel scores {
  for b in 0..2, i in 0..32, j in 0..32, d in 0..8:
    s[b, i, j] += q[b, i, d] * k[b, j, d]
})"));
}

// ---- values: the fast path against the interpreter ----------------------------------------

void expect_same_results(const std::string& text, const TensorMap& inputs, double tolerance) {
  RunOptions fast;
  RunOptions generic;
  generic.fast_paths = false;
  const TensorMap a = test::run_text(text, inputs, fast);
  const TensorMap b = test::run_text(text, inputs, generic);
  for (const auto& [name, t] : b) {
    const Tensor& f = a.at(name);
    ASSERT_EQ(f.shape(), t.shape());
    for (int64_t i = 0; i < t.numel(); ++i) {
      ASSERT_NEAR(f.get(i), t.get(i), tolerance * std::max(1.0, std::fabs(t.get(i))))
          << name << " element " << i;
    }
  }
}

TEST(GemmValues, RaggedMatmulSpanningSeveralBlocks) {
  // M = 131 (> one 128-row block, not a multiple of 4), N = 515 (> one 512-column block),
  // K = 300 (> one 256-deep block).
  test::Random r(1);
  const std::string text = R"(
input a : f32[131, 300]
input b : f32[300, 515]
output c : f32[131, 515]
kernel mm {
  for i in 0..131, j in 0..515, k in 0..300:
    c[i, j] += a[i, k] * b[k, j]
})";
  expect_same_results(
      text,
      {{"a", r.tensor(ir::DType::F32, {131, 300})}, {"b", r.tensor(ir::DType::F32, {300, 515})}},
      1e-6);
}

TEST(GemmValues, TransposedOperandsAndOutput) {
  test::Random r(2);
  expect_same_results(
      R"(
input a : f64[40, 30]
input b : f64[20, 40]
output c : f64[30, 20]
kernel mm {
  for i in 0..30, j in 0..20, k in 0..40:
    c[i, j] += a[k, i] * b[j, k]
})",
      {{"a", r.tensor(ir::DType::F64, {40, 30})}, {"b", r.tensor(ir::DType::F64, {20, 40})}},
      1e-13);
}

TEST(GemmValues, BatchedWithBroadcastWeights) {
  test::Random r(3);
  expect_same_results(R"(
input x : f32[3, 17, 20]
input w : f32[20, 19]
input v : f32[3, 20, 19]
output y : f32[3, 17, 19]
output z : f32[3, 17, 19]
kernel shared {
  for b in 0..3, i in 0..17, j in 0..19, k in 0..20:
    y[b, i, j] += x[b, i, k] * w[k, j]
}
kernel batched {
  for b in 0..3, i in 0..17, j in 0..19, k in 0..20:
    z[b, i, j] += x[b, i, k] * v[b, k, j]
})",
                      {{"x", r.tensor(ir::DType::F32, {3, 17, 20})},
                       {"w", r.tensor(ir::DType::F32, {20, 19})},
                       {"v", r.tensor(ir::DType::F32, {3, 20, 19})}},
                      1e-6);
}

TEST(GemmValues, Convolution2d) {
  test::Random r(4);
  expect_same_results(R"(
input w : f32[6, 3, 3, 3]
input x : f32[2, 3, 10, 10]
output y : f32[2, 6, 8, 8]
kernel conv {
  for n in 0..2, o in 0..6, p in 0..8, q in 0..8, c in 0..3, u in 0..3, v in 0..3:
    y[n, o, p, q] += w[o, c, u, v] * x[n, c, p + u, q + v]
})",
                      {{"w", r.tensor(ir::DType::F32, {6, 3, 3, 3})},
                       {"x", r.tensor(ir::DType::F32, {2, 3, 10, 10})}},
                      1e-6);
}

TEST(GemmValues, Scatters) {
  // convt: a strided transposed convolution (stride 2, kernel 5), y[n, o, 2p + r] += x * w,
  // whose output positions receive 2 or 3 products each (M = n, p: 2 x 40; N = o, r: 6 x 5;
  // K = q: 32); y's last 2 positions (2 * 39 + 4 = 82 < 84) are written by no point and keep 0.
  // band: c[i + j] of an f64 output, accumulated in place (no buffer); K = 300 spans two
  // 256-deep blocks, M = 131 two 128-row blocks.
  test::Random r(7);
  expect_same_results(R"(
input x : f32[2, 32, 40]
input w : f32[32, 6, 5]
input a : f64[131, 300]
input b : f64[20, 300]
output y : f32[2, 6, 84]
output c : f64[150]
kernel convt {
  for n in 0..2, o in 0..6, p in 0..40, r in 0..5, q in 0..32:
    y[n, o, 2 * p + r] += x[n, q, p] * w[q, o, r]
}
kernel band {
  for i in 0..131, j in 0..20, k in 0..300:
    c[i + j] += a[i, k] * b[j, k]
})",
                      {{"x", r.tensor(ir::DType::F32, {2, 32, 40})},
                       {"w", r.tensor(ir::DType::F32, {32, 6, 5})},
                       {"a", r.tensor(ir::DType::F64, {131, 300})},
                       {"b", r.tensor(ir::DType::F64, {20, 300})}},
                      1e-6);
}

TEST(GemmValues, NarrowDtypes) {
  test::Random r(5);
  expect_same_results(
      R"(
input a : bf16[24, 33]
input b : f16[33, 40]
output c : bf16[24, 40]
kernel low {
  for i in 0..24, j in 0..40, k in 0..33:
    c[i, j] += a[i, k] * b[k, j]
})",
      {{"a", r.tensor(ir::DType::BF16, {24, 33})}, {"b", r.tensor(ir::DType::F16, {33, 40})}},
      // the addition order may move a sum across a bf16 rounding boundary
      1e-2);
}

TEST(GemmValues, IntegerOperand) {
  test::Random r(6);
  Tensor n(ir::DType::I32, {24, 33});
  for (int64_t i = 0; i < n.numel(); ++i) n.set(i, std::floor(10 * r.next()));
  expect_same_results(R"(
input n : i32[24, 33]
input b : f16[33, 40]
output d : f64[24, 40]
kernel mixed {
  for i in 0..24, j in 0..40, k in 0..33:
    d[i, j] += n[i, k] * b[k, j]
})",
                      {{"n", n}, {"b", r.tensor(ir::DType::F16, {33, 40})}}, 1e-13);
}

}  // namespace
}  // namespace solar::exec
