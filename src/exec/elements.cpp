#include "elements.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>

namespace solar::exec {
namespace {

template <typename T>
T load_raw(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

template <typename T>
void store_raw(std::byte* p, T v) {
  std::memcpy(p, &v, sizeof v);
}

// A dtype whose values a C++ arithmetic type holds exactly, read with a plain conversion. The
// common unmasked strides (1: contiguous, 0: one element for every lane) get their own loops,
// which the compiler vectorises.
template <typename T>
void load_native(const std::byte* data, int64_t off, int64_t stride, int64_t n, double* out,
                 const uint8_t* mask) {
  const auto size = static_cast<int64_t>(sizeof(T));
  const std::byte* p = data + off * size;
  if (mask != nullptr) {
    for (int64_t l = 0; l < n; ++l) {
      out[l] = mask[l] ? static_cast<double>(load_raw<T>(p + l * stride * size)) : 0.0;
    }
  } else if (stride == 1) {
    for (int64_t l = 0; l < n; ++l) out[l] = static_cast<double>(load_raw<T>(p + l * size));
  } else if (stride == 0) {
    std::fill_n(out, n, static_cast<double>(load_raw<T>(p)));
  } else {
    for (int64_t l = 0; l < n; ++l)
      out[l] = static_cast<double>(load_raw<T>(p + l * stride * size));
  }
}

void load_generic(const std::byte* data, ir::DType t, int64_t off, int64_t stride, int64_t n,
                  double* out, const uint8_t* mask) {
  const int64_t size = ir::dtype_size(t);
  for (int64_t l = 0; l < n; ++l) {
    out[l] =
        (mask == nullptr || mask[l]) ? ir::load_element(data + (off + l * stride) * size, t) : 0.0;
  }
}

template <typename T>
double load_one(const std::byte* data, int64_t off) {
  return static_cast<double>(load_raw<T>(data + off * static_cast<int64_t>(sizeof(T))));
}

template <ir::DType kT>
double load_one_generic(const std::byte* data, int64_t off) {
  return ir::load_element(data + off * ir::dtype_size(kT), kT);
}

template <ir::DType kT>
void store_one_generic(std::byte* data, int64_t off, double v) {
  ir::store_element(data + off * ir::dtype_size(kT), kT, v);
}

void store_one_f64(std::byte* data, int64_t off, double v) { store_raw<double>(data + off * 8, v); }

// A finite double within f32's range converts with round-to-nearest-even, as ir::store_element
// rounds; the rest (overflow, inf, NaN) goes through ir::store_element.
void store_one_f32(std::byte* data, int64_t off, double v) {
  std::byte* p = data + off * 4;
  if (std::fabs(v) <= FLT_MAX) {
    store_raw<float>(p, static_cast<float>(v));
  } else {
    ir::store_element(p, ir::DType::F32, v);
  }
}

void store_f32(std::byte* data, int64_t off, int64_t stride, int64_t n, const double* in) {
  for (int64_t l = 0; l < n; ++l) store_one_f32(data, off + l * stride, in[l]);
}

}  // namespace

void load_strided(const std::byte* data, ir::DType t, int64_t off, int64_t stride, int64_t n,
                  double* out, const uint8_t* mask) {
  switch (t) {
    case ir::DType::F64:
      return load_native<double>(data, off, stride, n, out, mask);
    case ir::DType::F32:
      return load_native<float>(data, off, stride, n, out, mask);
    case ir::DType::I64:
      return load_native<int64_t>(data, off, stride, n, out, mask);
    case ir::DType::I32:
      return load_native<int32_t>(data, off, stride, n, out, mask);
    case ir::DType::I8:
      return load_native<int8_t>(data, off, stride, n, out, mask);
    case ir::DType::U8:
    case ir::DType::F4E2M1X2:
      return load_native<uint8_t>(data, off, stride, n, out, mask);
    case ir::DType::F16:
    case ir::DType::BF16:
    case ir::DType::F8E4M3:
    case ir::DType::F8E5M2:
    case ir::DType::Bool:
    case ir::DType::C64:  // refused by load_element: kernels never read complex tensors
    case ir::DType::C128:
      return load_generic(data, t, off, stride, n, out, mask);
  }
}

void store_strided(std::byte* data, ir::DType t, int64_t off, int64_t stride, int64_t n,
                   const double* in) {
  if (t == ir::DType::F64) {
    for (int64_t l = 0; l < n; ++l) store_raw<double>(data + (off + l * stride) * 8, in[l]);
  } else if (t == ir::DType::F32) {
    store_f32(data, off, stride, n, in);
  } else {
    const int64_t size = ir::dtype_size(t);
    for (int64_t l = 0; l < n; ++l) ir::store_element(data + (off + l * stride) * size, t, in[l]);
  }
}

Loader loader_for(ir::DType t) {
  switch (t) {
    case ir::DType::F64:
      return load_one<double>;
    case ir::DType::F32:
      return load_one<float>;
    case ir::DType::I64:
      return load_one<int64_t>;
    case ir::DType::I32:
      return load_one<int32_t>;
    case ir::DType::I8:
      return load_one<int8_t>;
    case ir::DType::U8:
    case ir::DType::F4E2M1X2:
      return load_one<uint8_t>;
    case ir::DType::F16:
      return load_one_generic<ir::DType::F16>;
    case ir::DType::BF16:
      return load_one_generic<ir::DType::BF16>;
    case ir::DType::F8E4M3:
      return load_one_generic<ir::DType::F8E4M3>;
    case ir::DType::F8E5M2:
      return load_one_generic<ir::DType::F8E5M2>;
    case ir::DType::Bool:
      return load_one_generic<ir::DType::Bool>;
    case ir::DType::C64:  // a complex element is no double
    case ir::DType::C128:
      break;
  }
  return nullptr;
}

Storer storer_for(ir::DType t) {
  switch (t) {
    case ir::DType::F64:
      return store_one_f64;
    case ir::DType::F32:
      return store_one_f32;
    case ir::DType::F16:
      return store_one_generic<ir::DType::F16>;
    case ir::DType::BF16:
      return store_one_generic<ir::DType::BF16>;
    case ir::DType::F8E4M3:
      return store_one_generic<ir::DType::F8E4M3>;
    case ir::DType::F8E5M2:
      return store_one_generic<ir::DType::F8E5M2>;
    case ir::DType::I64:
      return store_one_generic<ir::DType::I64>;
    case ir::DType::I32:
      return store_one_generic<ir::DType::I32>;
    case ir::DType::I8:
      return store_one_generic<ir::DType::I8>;
    case ir::DType::U8:
      return store_one_generic<ir::DType::U8>;
    case ir::DType::F4E2M1X2:
      return store_one_generic<ir::DType::F4E2M1X2>;
    case ir::DType::Bool:
      return store_one_generic<ir::DType::Bool>;
    case ir::DType::C64:  // a complex element is no double
    case ir::DType::C128:
      break;
  }
  return nullptr;
}

}  // namespace solar::exec
