// Composition statements (docs/ir.md, "Composition statements"), with hand-computed results.
#include <gtest/gtest.h>

#include <string>

#include "exec_test_util.h"

namespace solar::exec {
namespace {

using test::f32;
using test::make;
using test::run_text;
using test::user_error;
using test::values;

// x = [[0, 1, 2, 3], [4, 5, 6, 7]]
Tensor x24() { return f32({2, 4}, {0, 1, 2, 3, 4, 5, 6, 7}); }

std::vector<double> run1(const std::string& decls_and_body, const TensorMap& inputs,
                         const std::string& out = "y") {
  return values(run_text(decls_and_body, inputs).at(out));
}

TEST(Compose, CopyConvertsBetweenDtypes) {
  const TensorMap out = run_text(R"(
input x : f32[3]
output y : i32[3]
output z : bf16[3]
y = x
z = x)",
                                 {{"x", f32({3}, {2.7, -2.7, 1.00390625})}});
  EXPECT_EQ(values(out.at("y")), (std::vector<double>{2, -2, 1}));  // truncation toward zero
  // bf16 keeps 7 mantissa bits: 1 + 2^-8 is a tie, to even: 1
  EXPECT_EQ(values(out.at("z")), (std::vector<double>{2.703125, -2.703125, 1}));
}

TEST(Compose, CopyOfInt64IsExact) {
  Tensor big(ir::DType::I64, {1});
  const int64_t v = (int64_t{1} << 60) + 1;  // not representable as a double
  *static_cast<int64_t*>(big.data()) = v;
  const TensorMap out = run_text("input x : i64[1]\noutput y : i64[1]\ny = x", {{"x", big}});
  EXPECT_EQ(*static_cast<const int64_t*>(out.at("y").data()), v);
}

TEST(Compose, CopyIntoARegion) {
  EXPECT_EQ(run1(R"(
input x : f32[2, 4]
output y : f32[3, 4]
kernel fill { for i in 0..3, j in 0..4: y[i, j] = -1.0 }
y[1:3, :] = x)",
                 {{"x", x24()}}),
            (std::vector<double>{-1, -1, -1, -1, 0, 1, 2, 3, 4, 5, 6, 7}));
}

TEST(Compose, SliceWithStepAndIndex) {
  EXPECT_EQ(run1("input x : f32[2, 4]\noutput y : f32[2]\ny = x[1, 0:4:2]", {{"x", x24()}}),
            (std::vector<double>{4, 6}));
  EXPECT_EQ(run1("input x : f32[2, 4]\noutput y : f32[2, 2]\ny = x[:, 1:3]", {{"x", x24()}}),
            (std::vector<double>{1, 2, 5, 6}));
  EXPECT_EQ(run1("input x : f32[2, 4]\noutput y : f32[4]\ny = x[1]", {{"x", x24()}}),
            (std::vector<double>{4, 5, 6, 7}));
}

TEST(Compose, Reshape) {
  EXPECT_EQ(run1("input x : f32[2, 4]\noutput y : f32[4, 2]\ny = reshape(x)", {{"x", x24()}}),
            (std::vector<double>{0, 1, 2, 3, 4, 5, 6, 7}));
}

TEST(Compose, Permute) {
  EXPECT_EQ(
      run1("input x : f32[2, 4]\noutput y : f32[4, 2]\ny = permute(x, [1, 0])", {{"x", x24()}}),
      (std::vector<double>{0, 4, 1, 5, 2, 6, 3, 7}));
  // x3[a, b, c] = 4a + 2b + c, shape [2, 2, 2]; y[c, a, b] = x3[a, b, c]
  const Tensor x3 = f32({2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  EXPECT_EQ(run1("input x : f32[2, 2, 2]\noutput y : f32[2, 2, 2]\ny = permute(x, [2, 0, 1])",
                 {{"x", x3}}),
            (std::vector<double>{0, 2, 4, 6, 1, 3, 5, 7}));
}

TEST(Compose, BroadcastNumpyRules) {
  EXPECT_EQ(run1("input x : f32[3]\noutput y : f32[2, 3]\ny = broadcast(x)",
                 {{"x", f32({3}, {1, 2, 3})}}),
            (std::vector<double>{1, 2, 3, 1, 2, 3}));
  EXPECT_EQ(run1("input x : f32[2, 1]\noutput y : f32[2, 3]\ny = broadcast(x)",
                 {{"x", f32({2, 1}, {1, 2})}}),
            (std::vector<double>{1, 1, 1, 2, 2, 2}));
}

TEST(Compose, BroadcastWithDims) {
  EXPECT_EQ(run1("input x : f32[2]\noutput y : f32[2, 3]\ny = broadcast(x, dims=[0])",
                 {{"x", f32({2}, {1, 2})}}),
            (std::vector<double>{1, 1, 1, 2, 2, 2}));
}

TEST(Compose, Concat) {
  EXPECT_EQ(run1(R"(
input a : f32[2, 1]
input b : f32[2, 2]
output y : f32[2, 3]
y = concat(a, b, dim=1))",
                 {{"a", f32({2, 1}, {1, 2})}, {"b", f32({2, 2}, {3, 4, 5, 6})}}),
            (std::vector<double>{1, 3, 4, 2, 5, 6}));
  EXPECT_EQ(run1(R"(
input a : f32[1, 2]
output y : f32[3, 2]
y = concat(a, a, a, dim=0))",
                 {{"a", f32({1, 2}, {1, 2})}}),
            (std::vector<double>{1, 2, 1, 2, 1, 2}));
}

TEST(Compose, Pad) {
  EXPECT_EQ(run1("input x : f32[2]\noutput y : f32[5]\ny = pad(x, lo=[1], hi=[2], value=-1.5)",
                 {{"x", f32({2}, {1, 2})}}),
            (std::vector<double>{-1.5, 1, 2, -1.5, -1.5}));
  EXPECT_EQ(run1("input x : f32[1, 2]\noutput y : f32[2, 3]\ny = pad(x, lo=[1, 0], hi=[0, 1])",
                 {{"x", f32({1, 2}, {7, 8})}}),
            (std::vector<double>{0, 0, 0, 7, 8, 0}));
  EXPECT_EQ(run1("input x : f32[1]\noutput y : f32[2]\ny = pad(x, lo=[0], hi=[1], value=3)",
                 {{"x", f32({1}, {7})}}),
            (std::vector<double>{7, 3}));
}

TEST(Compose, TakeIsAnEmbeddingLookup) {
  // table[3, 2]; ids[2, 2] -> y[2, 2, 2] = table[ids]
  EXPECT_EQ(run1(R"(
input table : f32[3, 2]
input ids : i64[2, 2]
output y : f32[2, 2, 2]
y = take(table, ids, dim=0))",
                 {{"table", f32({3, 2}, {0, 1, 10, 11, 20, 21})},
                  {"ids", make(ir::DType::I64, {2, 2}, {2, 0, 1, 1})}}),
            (std::vector<double>{20, 21, 0, 1, 10, 11, 10, 11}));
}

TEST(Compose, TakeAlongAnInnerDimension) {
  EXPECT_EQ(run1(R"(
input x : f32[2, 4]
input i : i32[3]
output y : f32[2, 3]
y = take(x, i, dim=1))",
                 {{"x", x24()}, {"i", make(ir::DType::I32, {3}, {3, 0, 3})}}),
            (std::vector<double>{3, 0, 3, 7, 4, 7}));
}

TEST(Compose, Gather) {
  // torch.gather(x, 1, [[0, 0], [1, 0]]) with x = [[1, 2], [3, 4]] is [[1, 1], [4, 3]]
  EXPECT_EQ(
      run1(R"(
input x : f32[2, 2]
input i : i64[2, 2]
output y : f32[2, 2]
y = gather(x, i, dim=1))",
           {{"x", f32({2, 2}, {1, 2, 3, 4})}, {"i", make(ir::DType::I64, {2, 2}, {0, 0, 1, 0})}}),
      (std::vector<double>{1, 1, 4, 3}));
}

std::vector<double> scatter(const std::string& reduce) {
  return run1(R"(
input x : f32[2]
input i : i64[3]
input s : f32[3]
output y : f32[2]
y = scatter(x, i, s, dim=0)" +
                  reduce + ")",
              {{"x", f32({2}, {2, 2})},
               {"i", make(ir::DType::I64, {3}, {0, 1, 0})},
               {"s", f32({3}, {1, 2, 3})}});
}

TEST(Compose, ScatterEveryReduction) {
  // updates: y[0] <- 1, y[1] <- 2, y[0] <- 3, in that order, starting from x = [2, 2]
  EXPECT_EQ(scatter(""), (std::vector<double>{3, 2}));  // the last write wins
  EXPECT_EQ(scatter(", reduce=none"), (std::vector<double>{3, 2}));
  EXPECT_EQ(scatter(", reduce=add"), (std::vector<double>{6, 4}));
  EXPECT_EQ(scatter(", reduce=max"), (std::vector<double>{3, 2}));
  EXPECT_EQ(scatter(", reduce=min"), (std::vector<double>{1, 2}));
}

TEST(Compose, Scatter2dIndexSmallerThanSource) {
  // I [1, 2] uses only the first row of S [2, 2]: y[I[0, j], j] += S[0, j]
  EXPECT_EQ(run1(R"(
input x : f32[2, 2]
input i : i64[1, 2]
input s : f32[2, 2]
output y : f32[2, 2]
y = scatter(x, i, s, dim=0, reduce=add))",
                 {{"x", f32({2, 2}, {0, 0, 0, 0})},
                  {"i", make(ir::DType::I64, {1, 2}, {1, 0})},
                  {"s", f32({2, 2}, {5, 6, 7, 8})}}),
            (std::vector<double>{0, 6, 5, 0}));
}

TEST(Compose, AStatementReadsItsDestinationAsItWasBefore) {
  EXPECT_EQ(run1(R"(
input i : i64[2]
input s : f32[2]
tensor t : f32[3]
output y : f32[3]
kernel init { for k in 0..3: t[k] = k + 1 }
t = scatter(t, i, s, dim=0, reduce=add)
y = t)",
                 {{"i", make(ir::DType::I64, {2}, {2, 2})}, {"s", f32({2}, {10, 20})}}),
            (std::vector<double>{1, 2, 33}));
}

TEST(Compose, DataDependentIndexOutOfRange) {
  const std::string message = user_error([] {
    run_text(R"(
input x : f32[3]
input i : i64[2]
output y : f32[2]
y = take(x, i, dim=0))",
             {{"x", f32({3}, {1, 2, 3})}, {"i", make(ir::DType::I64, {2}, {0, 7})}});
  });
  EXPECT_EQ(message,
            "test.ir:5:1: error: take: index i[1] = 7 is out of range for dimension 0 of size 3");
}

TEST(Compose, NegativeIndexIsOutOfRange) {
  const std::string message = user_error([] {
    run_text(R"(
input x : f32[2, 2]
input i : i32[2, 1]
output y : f32[2, 1]
y = gather(x, i, dim=1))",
             {{"x", f32({2, 2}, {1, 2, 3, 4})}, {"i", make(ir::DType::I32, {2, 1}, {0, -1})}});
  });
  EXPECT_NE(message.find("gather: index i[1, 0] = -1 is out of range"), std::string::npos)
      << message;
}

// Inside a long repeat the checker stops checking shapes (its budget); the executor still does.
TEST(Compose, SliceBoundsAreCheckedAtRunTime) {
  const std::string message = user_error([] {
    run_text(R"(
input x : f32[70000]
output y : f32[1]
repeat t in 0..70001 {
  y = x[t:t+1]
})",
             {{"x", Tensor(ir::DType::F32, {70000})}});
  });
  EXPECT_NE(message.find("slice: slice 70000:70001 is out of range for dimension 0 of size 70000"),
            std::string::npos)
      << message;
}

}  // namespace
}  // namespace solar::exec
