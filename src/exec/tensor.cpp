#include "solar/exec/tensor.h"

#include <cstring>
#include <utility>

#include "solar/util/error.h"

namespace solar::exec {
namespace {

int64_t product(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    SOLAR_CHECK(d >= 0, "tensor dimension is negative");
    n *= d;
  }
  return n;
}

}  // namespace

Tensor::Tensor(ir::DType dtype, std::vector<int64_t> shape)
    : dtype_(dtype), shape_(std::move(shape)) {
  owned_ = std::make_shared<std::vector<std::byte>>(nbytes());
  data_ = owned_->data();
}

Tensor Tensor::borrow(ir::DType dtype, std::vector<int64_t> shape, void* data) {
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  SOLAR_CHECK(data != nullptr || t.numel() == 0, "borrowed tensor without data");
  t.data_ = data;
  return t;
}

int64_t Tensor::numel() const { return product(shape_); }

size_t Tensor::nbytes() const {
  return static_cast<size_t>(numel()) * static_cast<size_t>(ir::dtype_size(dtype_));
}

double Tensor::get(int64_t flat) const {
  SOLAR_CHECK(data_ != nullptr && flat >= 0 && flat < numel(), "tensor element out of range");
  return ir::load_element(static_cast<const std::byte*>(data_) + flat * ir::dtype_size(dtype_),
                          dtype_);
}

void Tensor::set(int64_t flat, double v) {
  SOLAR_CHECK(data_ != nullptr && flat >= 0 && flat < numel(), "tensor element out of range");
  ir::store_element(static_cast<std::byte*>(data_) + flat * ir::dtype_size(dtype_), dtype_, v);
}

Tensor Tensor::clone() const {
  Tensor t(dtype_, shape_);
  if (nbytes() > 0) std::memcpy(t.data_, data_, nbytes());
  return t;
}

}  // namespace solar::exec
