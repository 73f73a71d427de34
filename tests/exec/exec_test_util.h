// Helpers for the executor tests: tensors from value lists, and running IR text.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "solar/exec/executor.h"
#include "solar/ir/parser.h"
#include "solar/util/error.h"

namespace solar::exec::test {

inline Tensor make(ir::DType dtype, std::vector<int64_t> shape, const std::vector<double>& values) {
  Tensor t(dtype, std::move(shape));
  for (size_t i = 0; i < values.size(); ++i) t.set(static_cast<int64_t>(i), values[i]);
  return t;
}

inline Tensor f32(std::vector<int64_t> shape, const std::vector<double>& values) {
  return make(ir::DType::F32, std::move(shape), values);
}

inline std::vector<double> values(const Tensor& t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(t.get(i));
  return v;
}

inline TensorMap run_text(const std::string& text, const TensorMap& inputs = {},
                          const RunOptions& options = {}) {
  return run(ir::parse(text, "test.ir"), inputs, options);
}

// The message of the UserError that `f` throws ("" when it throws none).
template <typename F>
std::string user_error(F&& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

// A deterministic pseudo-random value in [-1, 1) (a linear congruential generator).
class Random {
 public:
  explicit Random(uint64_t seed) : state_(seed) {}
  double next() {
    state_ = state_ * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<double>(state_ >> 11) * 0x1.0p-52 - 1.0;
  }
  Tensor tensor(ir::DType dtype, std::vector<int64_t> shape) {
    Tensor t(dtype, std::move(shape));
    for (int64_t i = 0; i < t.numel(); ++i) t.set(i, next());
    return t;
  }

 private:
  uint64_t state_;
};

}  // namespace solar::exec::test
