// Tensor storage, and the dtype conversions used to prepare inputs.
#include <gtest/gtest.h>

#include "exec_test_util.h"
#include "solar/util/error.h"

namespace solar::exec {
namespace {

using test::make;
using test::values;

TEST(Tensor, OwnedTensorsStartAtZero) {
  const Tensor t(ir::DType::I32, {2, 3});
  EXPECT_EQ(t.numel(), 6);
  EXPECT_EQ(t.nbytes(), 24u);
  EXPECT_EQ(values(t), std::vector<double>(6, 0.0));
}

TEST(Tensor, ScalarsAndEmptyTensors) {
  EXPECT_EQ(Tensor(ir::DType::F64, {}).numel(), 1);
  EXPECT_EQ(Tensor(ir::DType::F64, {}).nbytes(), 8u);
  EXPECT_EQ(Tensor(ir::DType::F32, {4, 0}).numel(), 0);
  EXPECT_EQ(Tensor(ir::DType::F32, {4, 0}).nbytes(), 0u);
}

TEST(Tensor, SetRoundsToTheDtype) {
  Tensor t(ir::DType::F16, {1});
  t.set(0, 1 + 0x1p-12);  // below half an f16 ulp
  EXPECT_EQ(t.get(0), 1.0);
}

TEST(Tensor, CopiesShareStorageAndCloneDoesNot) {
  Tensor a(ir::DType::F32, {2});
  Tensor shared = a;
  const Tensor deep = a.clone();
  a.set(1, 5);
  EXPECT_EQ(shared.get(1), 5.0);
  EXPECT_EQ(deep.get(1), 0.0);
}

TEST(Tensor, BorrowViewsExternalMemory) {
  double data[3] = {1, 2, 3};
  Tensor t = Tensor::borrow(ir::DType::F64, {3}, data);
  t.set(0, 9);
  EXPECT_EQ(data[0], 9.0);
  EXPECT_EQ(values(t), (std::vector<double>{9, 2, 3}));
}

TEST(Tensor, OutOfRangeElementIsAnInternalError) {
  const Tensor t(ir::DType::F32, {2});
  EXPECT_THROW(t.get(2), InternalError);
}

TEST(Convert, RoundsToTheNewDtype) {
  const Tensor t = make(ir::DType::F64, {3}, {1 + 0x1p-9, 2.5, -1});
  const Tensor b = convert_to(t, ir::DType::BF16);
  EXPECT_EQ(b.dtype(), ir::DType::BF16);
  EXPECT_EQ(b.shape(), t.shape());
  EXPECT_EQ(values(b), (std::vector<double>{1, 2.5, -1}));
  EXPECT_EQ(values(convert_to(t, ir::DType::U8)), (std::vector<double>{1, 2, 255}));
}

TEST(Convert, SameDtypeIsAnIndependentCopy) {
  Tensor t = make(ir::DType::I64, {2}, {1, 2});
  const Tensor c = convert_to(t, ir::DType::I64);
  t.set(0, 7);
  EXPECT_EQ(values(c), (std::vector<double>{1, 2}));
}

TEST(Convert, ReinterpretBits) {
  // 0x38 is 1.0 in f8e4m3 (exponent 7 = bias, mantissa 0); 0x3C is 1.0 in f8e5m2
  const Tensor bits = make(ir::DType::U8, {2}, {0x38, 0x3C});
  EXPECT_EQ(values(reinterpret_bits(bits, ir::DType::F8E4M3)), (std::vector<double>{1, 1.5}));
  EXPECT_EQ(values(reinterpret_bits(bits, ir::DType::F8E5M2)), (std::vector<double>{0.5, 1}));
  EXPECT_THROW(reinterpret_bits(bits, ir::DType::BF16), UserError);
}

}  // namespace
}  // namespace solar::exec
