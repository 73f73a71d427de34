// A dense, row-major (C-contiguous) tensor in one of the IR's dtypes. The storage is either owned
// or borrowed (zero-copy view of memory someone else keeps alive, e.g. a numpy array).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "solar/ir/dtype.h"

namespace solar::exec {

class Tensor {
 public:
  Tensor() = default;
  // Owned, zero-filled.
  Tensor(ir::DType dtype, std::vector<int64_t> shape);
  // Borrowed: `data` must stay valid and unchanged while this Tensor (or a copy of it) is used.
  static Tensor borrow(ir::DType dtype, std::vector<int64_t> shape, void* data);

  ir::DType dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  int64_t numel() const;
  size_t nbytes() const;
  void* data() { return data_; }
  const void* data() const { return data_; }

  double get(int64_t flat) const;    // element as double
  void set(int64_t flat, double v);  // rounds to dtype
  Tensor clone() const;              // owned deep copy

 private:
  ir::DType dtype_ = ir::DType::F32;
  std::vector<int64_t> shape_;
  std::shared_ptr<std::vector<std::byte>> owned_;
  void* data_ = nullptr;
};

}  // namespace solar::exec
