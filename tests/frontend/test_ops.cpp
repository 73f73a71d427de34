// One capture (tests/frontend/data/ops.json) that applies many operators to x : f32[2, 3],
// b : f32[3] and ids : i64[4]; each output is compared with a reference computed here.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "../exec/exec_test_util.h"
#include "solar/frontend/lower.h"

namespace solar::frontend {
namespace {

using exec::Tensor;
using exec::TensorMap;

class Ops : public ::testing::Test {
 protected:
  void SetUp() override {
    std::ifstream in(std::string(SOLAR_SOURCE_DIR) + "/tests/frontend/data/ops.json");
    std::stringstream s;
    s << in.rdbuf();
    x_ = exec::test::Random(31).tensor(ir::DType::F32, {2, 3});
    b_ = exec::test::Random(32).tensor(ir::DType::F32, {3});
    ids_ = exec::test::make(ir::DType::I64, {4}, {2, 0, 1, 2});
    out_ = exec::run(lower_capture(s.str(), "ops.json"), {{"x", x_}, {"b", b_}, {"ids", ids_}});
  }
  double x(int i, int j) const { return x_.get(i * 3 + j); }
  double b(int j) const { return b_.get(j); }
  // Checks output `name` (of x's shape) against f(x[i, j], b[j], i, j).
  void expect_map(const std::string& name, const std::function<double(double, double, int, int)>& f,
                  double tol = 1e-6) const {
    const Tensor& got = out_.at(name);
    ASSERT_EQ(got.numel(), 6) << name;
    for (int i = 0; i < 2; ++i) {
      for (int j = 0; j < 3; ++j) {
        const double want = f(x(i, j), b(j), i, j);
        if (std::isinf(want)) {
          EXPECT_EQ(got.get(i * 3 + j), want) << name << " at " << i << j;
        } else {
          EXPECT_NEAR(got.get(i * 3 + j), want, tol) << name << " at " << i << j;
        }
      }
    }
  }
  void expect_values(const std::string& name, const std::vector<double>& want) const {
    const Tensor& got = out_.at(name);
    ASSERT_EQ(got.numel(), static_cast<int64_t>(want.size())) << name;
    for (size_t k = 0; k < want.size(); ++k) {
      EXPECT_NEAR(got.get(static_cast<int64_t>(k)), want[k], 1e-6) << name << " at " << k;
    }
  }

  Tensor x_, b_, ids_;
  TensorMap out_;
};

double sigmoid(double v) { return 1 / (1 + std::exp(-v)); }
double clamp(double v, double lo, double hi) { return std::min(std::max(v, lo), hi); }

TEST_F(Ops, Unary) {
  const std::map<std::string, std::function<double(double)>> unary = {
      {"neg", [](double v) { return -v; }},
      {"relu", [](double v) { return std::max(v, 0.0); }},
      {"sigmoid", sigmoid},
      {"tanh", [](double v) { return std::tanh(v); }},
      {"exp", [](double v) { return std::exp(v); }},
      {"abs", [](double v) { return std::abs(v); }},
      {"silu", [](double v) { return v * sigmoid(v); }},
      {"erf", [](double v) { return std::erf(v); }},
      {"sin", [](double v) { return std::sin(v); }},
      {"cos", [](double v) { return std::cos(v); }},
      {"floor", [](double v) { return std::floor(v); }},
      {"ceil", [](double v) { return std::ceil(v); }},
      {"sign", [](double v) { return static_cast<double>((v > 0) - (v < 0)); }},
      {"expm1", [](double v) { return std::expm1(v); }},
      {"reciprocal", [](double v) { return 1 / v; }},
      {"gelu", [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); }},
      {"gelu_tanh",
       [](double v) {
         return 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
       }},
      {"leaky", [](double v) { return v > 0 ? v : 0.2 * v; }},
      {"hardtanh", [](double v) { return clamp(v, -0.5, 0.5); }},
      {"hardswish", [](double v) { return v * clamp(v + 3, 0, 6) / 6; }},
      {"hardsigmoid", [](double v) { return clamp(v + 3, 0, 6) / 6; }},
      {"clamp", [](double v) { return std::max(v, -0.3); }},
      {"clamp_min", [](double v) { return std::max(v, 0.1); }},
      {"clamp_max", [](double v) { return std::min(v, 0.1); }},
      {"pow", [](double v) { return v * v; }},
      {"rsub", [](double v) { return 1 - 2 * v; }},
      {"mul_s", [](double v) { return 3 * v; }},
      {"sub_s", [](double v) { return v - 0.5; }},
      {"gt", [](double v) { return v > 0 ? 1.0 : 0.0; }},
      {"masked", [](double v) { return v > 0 ? -INFINITY : v; }},
  };
  for (const auto& entry : unary) {  // no structured binding: clang 14 cannot capture one
    const auto& f = entry.second;
    expect_map(
        entry.first, [&f](double v, double, int, int) { return f(v); }, 1e-6);
  }
}

TEST_F(Ops, BinaryWithBroadcasting) {
  expect_map("add_t", [](double v, double w, int, int) { return v + 2 * w; });
  expect_map(
      "div_t", [](double v, double w, int, int) { return v / w; }, 1e-5);
  expect_map("maximum", [](double v, double w, int, int) { return std::max(v, w); });
  expect_map("minimum", [](double v, double w, int, int) { return std::min(v, w); });
  expect_map("le", [](double v, double w, int, int) { return v <= w ? 1.0 : 0.0; });
  expect_map("where", [](double v, double w, int, int) { return v > 0 ? v : w; });
  expect_map("expand", [](double, double w, int, int) { return w; });
  expect_map("tril", [](double v, double, int i, int j) { return j <= i ? v : 0.0; });
  expect_map("triu", [](double v, double, int i, int j) { return j >= i + 1 ? v : 0.0; });
  expect_map("zeros_like", [](double, double, int, int) { return 0.0; });
}

TEST_F(Ops, ReductionsAndFills) {
  expect_values("sum_keep", {x(0, 0) + x(0, 1) + x(0, 2), x(1, 0) + x(1, 1) + x(1, 2)});
  double all = 0;
  for (int k = 0; k < 6; ++k) all += x_.get(k);
  expect_values("sum_all", {all});
  expect_values("mean0",
                {(x(0, 0) + x(1, 0)) / 2, (x(0, 1) + x(1, 1)) / 2, (x(0, 2) + x(1, 2)) / 2});
  expect_values("amax",
                {std::max({x(0, 0), x(0, 1), x(0, 2)}), std::max({x(1, 0), x(1, 1), x(1, 2)})});
  expect_values(
      "amin", {std::min(x(0, 0), x(1, 0)), std::min(x(0, 1), x(1, 1)), std::min(x(0, 2), x(1, 2))});
  expect_values("full", {1.5, 1.5, 1.5, 1.5});
  expect_values("ones", {1, 1, 1});
}

TEST_F(Ops, MovementAndContractions) {
  expect_values("transpose", {x(0, 0), x(1, 0), x(0, 1), x(1, 1), x(0, 2), x(1, 2)});
  expect_values("unsq", {b(0), b(1), b(2)});
  // stack([x, expand(b)], dim=1): [2, 2, 3]
  expect_values("stack", {x(0, 0), x(0, 1), x(0, 2), b(0), b(1), b(2), x(1, 0), x(1, 1), x(1, 2),
                          b(0), b(1), b(2)});
  // embedding(transpose(x), ids = [2, 0, 1, 2]): rows of x^T, i.e. columns of x
  expect_values("emb", {x(0, 2), x(1, 2), x(0, 0), x(1, 0), x(0, 1), x(1, 1), x(0, 2), x(1, 2)});
  std::vector<double> gram;  // mm(x, x^T) and linear(x, x) are both x x^T
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 2; ++j) {
      gram.push_back(x(i, 0) * x(j, 0) + x(i, 1) * x(j, 1) + x(i, 2) * x(j, 2));
    }
  }
  expect_values("mm", gram);
  expect_values("linear", gram);
}

}  // namespace
}  // namespace solar::frontend
