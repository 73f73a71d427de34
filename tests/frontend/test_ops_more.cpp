// One capture (tests/frontend/data/ops_more.json) over fixed small inputs whose results are
// worked out by hand below: scans, reductions with indices, norms, group norm, dropout,
// advanced indexing, rounding division, adaptive pooling, resampling and movement.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "../exec/exec_test_util.h"
#include "solar/frontend/lower.h"
#include "solar/ir/printer.h"

namespace solar::frontend {
namespace {

using exec::Tensor;
using exec::TensorMap;
using exec::test::f32;
using exec::test::make;

std::string fixture() {
  std::ifstream in(std::string(SOLAR_SOURCE_DIR) + "/tests/frontend/data/ops_more.json");
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class OpsMore : public ::testing::Test {
 protected:
  void SetUp() override {
    const TensorMap inputs = {
        {"x", f32({2, 3}, {1, -2, 3, 0.5, 4, -1})},
        {"gx", f32({1, 4, 2}, {1, 2, 3, 4, 5, 6, 7, 8})},
        {"ax", f32({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9})},
        {"ids", make(ir::DType::I64, {2}, {1, -2})},
        {"v", f32({3}, {10, 20, 30})},
        {"gi", make(ir::DType::I64, {2, 2}, {2, 0, 1, 1})},
        {"ax5", f32({1, 1, 1, 5}, {1, 2, 3, 4, 5})},
    };
    out_ = exec::run(lower_capture(fixture(), "ops_more.json"), inputs);
  }
  void expect(const std::string& name, const std::vector<double>& want, double tol = 1e-6) const {
    const Tensor& got = out_.at(name);
    ASSERT_EQ(got.numel(), static_cast<int64_t>(want.size())) << name;
    for (size_t k = 0; k < want.size(); ++k) {
      EXPECT_NEAR(got.get(static_cast<int64_t>(k)), want[k], tol) << name << " at " << k;
    }
  }
  TensorMap out_;
};

// x = [[1, -2, 3], [0.5, 4, -1]] throughout.

TEST_F(OpsMore, ScansAndReductionsWithIndices) {
  expect("cumsum", {1, -1, 2, 0.5, 4.5, 3.5});  // running sums along each row
  expect("cumprod", {1, -2, 3, 0.5, -8, -3});   // row 1 times row 0
  expect("maxv", {3, 4});
  expect("maxi", {2, 1});
  expect("argmin", {1});  // -2 at flat index 1 is the smallest
  // |row|: sqrt(1 + 4 + 9), sqrt(0.25 + 16 + 1)
  expect("norm", {std::sqrt(14.0), std::sqrt(17.25)}, 1e-5);
  // unbiased variance: row 0 mean 2/3, squared deviations (1 + 64 + 49) / 9 = 114/9, over 2;
  // row 1 mean 7/6, deviations -2/3, 17/6, -13/6: (16 + 289 + 169) / 36 = 474/36, over 2.
  expect("var", {114.0 / 9 / 2, 474.0 / 36 / 2}, 1e-5);
}

TEST_F(OpsMore, GroupNorm) {
  // Groups [1, 2, 3, 4] and [5, 6, 7, 8]: means 2.5 and 6.5, variance (2.25 + .25) * 2 / 4 = 1.25.
  const double rstd = 1 / std::sqrt(1.25 + 1e-5);
  std::vector<double> want;
  for (int v = 1; v <= 8; ++v) want.push_back((v - (v <= 4 ? 2.5 : 6.5)) * rstd);
  expect("gn", want, 1e-5);
  expect("gn_mean", {2.5, 6.5});
  expect("gn_rstd", {rstd, rstd}, 1e-5);
}

TEST_F(OpsMore, DropoutUsesTheWeylMask) {
  // (i + 1) * 0.6180339887498949 for i = 0..5: 0.618, 1.236, 1.854, 2.472, 3.090, 3.708; the
  // fractional parts >= 0.5 keep elements 0, 2, 5, scaled by 1 / (1 - 0.5) = 2.
  expect("drop", {2, 0, 6, 0, 0, -2});
  expect("drop_mask", {1, 0, 1, 0, 0, 1});
  expect("drop2", {2, 0, 6, 0, 0, -2});
  // The unread mask (named <node>_out1) is not computed: no kernel writes it.
  const std::string ir = ir::print(lower_capture(fixture(), "ops_more.json"));
  EXPECT_EQ(ir.find("drop2_out1["), std::string::npos);
  EXPECT_NE(ir.find("drop_mask["), std::string::npos);
}

TEST_F(OpsMore, AdvancedIndexingGatherRepeat) {
  expect("index", {0.5, 4, -1, 1, -2, 3});  // rows 1 and -2 (= 0)
  // accumulate: row 1 += v, row 0 += v
  expect("index_put", {11, 18, 33, 10.5, 24, 29});
  expect("gather", {3, 1, 4, 4});  // x[0, 2], x[0, 0], x[1, 1], x[1, 1]
  expect("rep", {1, -2, 3, 1, -2, 3, 0.5, 4, -1, 0.5, 4, -1});
  expect("unfold", {1, -2, -2, 3, 0.5, 4, 4, -1});  // windows of 2, step 1, along the rows
  expect("flip", {3, -2, 1, -1, 4, 0.5});
  expect("roll", {3, 1, -2, -1, 0.5, 4});
}

TEST_F(OpsMore, RoundingDivisionFmodElu) {
  // x / 0.75 = 1.33, -2.67, 4, 0.67, 5.33, -1.33
  expect("div_trunc", {1, -2, 4, 0, 5, -1});
  expect("div_floor", {1, -3, 4, 0, 5, -2});
  // fmod keeps x's sign: 1 - 0.75, -2 + 2 * 0.75, 3 - 4 * 0.75, 0.5, 4 - 5 * 0.75, -1 + 0.75
  expect("fmod", {0.25, -0.5, 0, 0.5, 0.25, -0.25});
  expect("elu", {1, std::expm1(-2.0), 3, 0.5, 4, std::expm1(-1.0)}, 1e-6);
}

TEST_F(OpsMore, AdaptiveAvgPoolAndNearestUpsampling) {
  // 3 -> 2 windows: rows/cols [0, 2) and [1, 3) of [[1, 2, 3], [4, 5, 6], [7, 8, 9]].
  expect("adaptive", {(1 + 2 + 4 + 5) / 4.0, (2 + 3 + 5 + 6) / 4.0, (4 + 5 + 7 + 8) / 4.0,
                      (5 + 6 + 8 + 9) / 4.0});
  // 5 -> 3 windows: [0, ceil(5/3) = 2), [floor(5/3) = 1, ceil(10/3) = 4), [floor(10/3) = 3, 5).
  expect("adaptive2", {(1 + 2) / 2.0, (2 + 3 + 4) / 3.0, (4 + 5) / 2.0});
  std::vector<double> up;  // each value repeated 2 x 2
  for (int h = 0; h < 6; ++h) {
    for (int w = 0; w < 6; ++w) up.push_back(1 + (h / 2) * 3 + w / 2);
  }
  expect("up", up);
}

TEST(OpsMoreText, PrintsAndReparsesEqual) {
  const ir::Program p = lower_capture(fixture(), "ops_more.json");
  EXPECT_TRUE(ir::equal(ir::parse(ir::print(p), "ops_more.json"), p));
}

}  // namespace
}  // namespace solar::frontend
