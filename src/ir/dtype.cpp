// Element types: names, sizes, rounding to a type's values, and storage as raw bit patterns.
//
// Floating-point formats narrower than f64 are handled by one routine parameterised by the
// format (exponent bits, mantissa bits, whether infinities exist), with exact arithmetic on
// doubles (scaling by powers of two and an explicit round-half-to-even), so results do not depend
// on the FPU rounding mode or on compiler support for narrow types.
#include "solar/ir/dtype.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>
#include <string>

#include "solar/util/error.h"

namespace solar::ir {

namespace {

struct DTypeInfo {
  DType type;
  std::string_view name;
  int size;
  char kind;
};

constexpr DTypeInfo kDTypes[] = {
#define SOLAR_X(e, s, n, k) {DType::e, s, n, k},
    SOLAR_DTYPES(SOLAR_X)
#undef SOLAR_X
};

const DTypeInfo& info(DType t) {
  const auto i = static_cast<size_t>(t);
  SOLAR_CHECK(i < std::size(kDTypes), "dtype out of range");
  return kDTypes[i];
}

std::string make_all_names() {
  std::string out;
  for (const DTypeInfo& d : kDTypes) {
    if (!out.empty()) out += ", ";
    out += d.name;
  }
  return out;
}

// A binary floating-point format narrower than f64.
struct FloatFormat {
  int exp_bits;
  int man_bits;  // explicit mantissa bits
  bool has_inf;  // IEEE-like; false: the "fn" variant (all-ones exponent is finite except NaN)
  uint32_t nan;  // canonical quiet NaN bit pattern (positive sign)

  int bias() const { return (1 << (exp_bits - 1)) - 1; }
  int emin() const { return 1 - bias(); }  // exponent of the smallest normal number
  int emax() const { return (1 << exp_bits) - (has_inf ? 2 : 1) - bias(); }
  // Largest finite value: all-ones mantissa, except in fn formats where that pattern is NaN.
  double max_finite() const {
    const int top_mantissa = (1 << man_bits) - (has_inf ? 1 : 2);
    return std::ldexp(1.0 + std::ldexp(top_mantissa, -man_bits), emax());
  }
  uint32_t sign_bit() const { return 1u << (exp_bits + man_bits); }
};

constexpr FloatFormat kF32{8, 23, true, 0x7FC00000u};
constexpr FloatFormat kF16{5, 10, true, 0x7E00u};
constexpr FloatFormat kBF16{8, 7, true, 0x7FC0u};
constexpr FloatFormat kF8E4M3{4, 3, false, 0x7Fu};
constexpr FloatFormat kF8E5M2{5, 2, true, 0x7Eu};

const FloatFormat* narrow_format(DType t) {
  switch (t) {
    case DType::F32:
      return &kF32;
    case DType::F16:
      return &kF16;
    case DType::BF16:
      return &kBF16;
    case DType::F8E4M3:
      return &kF8E4M3;
    case DType::F8E5M2:
      return &kF8E5M2;
    case DType::F64:
    case DType::I64:
    case DType::I32:
    case DType::I8:
    case DType::U8:
    case DType::F4E2M1X2:
    case DType::Bool:
    case DType::C64:
    case DType::C128:
      return nullptr;
  }
  return nullptr;
}

// Rounds r >= 0 (< 2^53) to the nearest integer, ties to even. Exact: r - floor(r) is exact.
double round_half_even(double r) {
  const double fl = std::floor(r);
  const double frac = r - fl;
  if (frac > 0.5) return fl + 1.0;
  if (frac < 0.5) return fl;
  return std::fmod(fl, 2.0) == 0.0 ? fl : fl + 1.0;
}

// Exponent (power of two) of the spacing between representable values around |x| (x finite).
int quantum_exponent(double ax, const FloatFormat& f) {
  int e2 = 0;
  std::frexp(ax, &e2);  // ax = m * 2^e2, m in [0.5, 1): floor(log2(ax)) = e2 - 1
  const int e = std::max(e2 - 1, f.emin());
  return e - f.man_bits;
}

double round_to_format(double x, const FloatFormat& f) {
  if (std::isnan(x)) return x;
  // Overflow gives inf, or NaN (keeping the sign) in formats without infinities.
  const double overflow = std::copysign(f.has_inf ? INFINITY : NAN, x);
  if (std::isinf(x)) return overflow;
  if (x == 0.0) return x;
  const double ax = std::fabs(x);
  const int q = quantum_exponent(ax, f);
  const double rounded = std::ldexp(round_half_even(std::ldexp(ax, -q)), q);
  return rounded > f.max_finite() ? overflow : std::copysign(rounded, x);
}

// Bit pattern of a value already representable in the format (output of round_to_format).
uint32_t encode(double v, const FloatFormat& f) {
  const uint32_t sign = std::signbit(v) ? f.sign_bit() : 0u;
  if (std::isnan(v)) return sign | f.nan;
  const uint32_t exp_all_ones = (1u << f.exp_bits) - 1u;
  if (std::isinf(v)) return sign | (exp_all_ones << f.man_bits);
  const double av = std::fabs(v);
  if (av == 0.0) return sign;
  int e2 = 0;
  std::frexp(av, &e2);
  const int e = e2 - 1;
  if (e < f.emin()) {  // subnormal: exponent field 0, mantissa = av / 2^(emin - M)
    return sign | static_cast<uint32_t>(std::ldexp(av, f.man_bits - f.emin()));
  }
  const auto mantissa = static_cast<uint32_t>(std::ldexp(av, f.man_bits - e)) - (1u << f.man_bits);
  const auto biased = static_cast<uint32_t>(e + f.bias());
  return sign | (biased << f.man_bits) | mantissa;
}

double decode(uint32_t bits, const FloatFormat& f) {
  const uint32_t man_mask = (1u << f.man_bits) - 1u;
  const uint32_t exp_all_ones = (1u << f.exp_bits) - 1u;
  const uint32_t biased = (bits >> f.man_bits) & exp_all_ones;
  const uint32_t mantissa = bits & man_mask;
  const double sign = (bits & f.sign_bit()) ? -1.0 : 1.0;
  if (biased == exp_all_ones) {
    if (f.has_inf) return mantissa == 0 ? sign * INFINITY : std::nan("");
    if (mantissa == man_mask) return std::nan("");
  }
  if (biased == 0) return sign * std::ldexp(static_cast<double>(mantissa), f.emin() - f.man_bits);
  const double significand = 1.0 + std::ldexp(static_cast<double>(mantissa), -f.man_bits);
  return sign * std::ldexp(significand, static_cast<int>(biased) - f.bias());
}

// Truncates toward zero and wraps modulo 2^64, as an unsigned value. NaN and +-inf give 0: an
// infinity has no remainder modulo 2^bits that could be defined, and 0 matches NaN (hardware
// results differ: x86 gives INT_MIN, ARM saturates).
uint64_t wrap_to_u64(double x) {
  if (!std::isfinite(x)) return 0;
  const double m = std::fmod(std::trunc(x), 18446744073709551616.0);  // exact, |m| < 2^64
  const auto magnitude = static_cast<uint64_t>(std::fabs(m));
  return m < 0 ? (~magnitude + 1u) : magnitude;  // two's complement negation, modular
}

double round_to_integer(double x, DType t) {
  const uint64_t u = wrap_to_u64(x);
  switch (t) {
    case DType::I64:
      return static_cast<double>(static_cast<int64_t>(u));
    case DType::I32:
      return static_cast<double>(static_cast<int32_t>(static_cast<uint32_t>(u)));
    case DType::I8:
      return static_cast<double>(static_cast<int8_t>(static_cast<uint8_t>(u)));
    case DType::U8:
    case DType::F4E2M1X2:
      return static_cast<double>(static_cast<uint8_t>(u));
    case DType::F64:
    case DType::F32:
    case DType::F16:
    case DType::BF16:
    case DType::F8E4M3:
    case DType::F8E5M2:
    case DType::Bool:
    case DType::C64:
    case DType::C128:
      break;
  }
  SOLAR_CHECK(false, "round_to_integer on a non-integer dtype");
  return 0.0;
}

template <typename T>
T load_raw(const void* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

template <typename T>
void store_raw(void* p, T v) {
  std::memcpy(p, &v, sizeof v);
}

}  // namespace

std::string_view dtype_name(DType t) { return info(t).name; }

std::optional<DType> dtype_from_name(std::string_view name) {
  for (const DTypeInfo& d : kDTypes) {
    if (d.name == name) return d.type;
  }
  return std::nullopt;
}

int dtype_size(DType t) { return info(t).size; }
bool dtype_is_float(DType t) { return info(t).kind == 'f'; }
bool dtype_is_integer(DType t) { return info(t).kind == 'i' || info(t).kind == 'u'; }
bool dtype_is_complex(DType t) { return info(t).kind == 'c'; }
DType complex_part(DType t) {
  if (t == DType::C64) return DType::F32;
  if (t == DType::C128) return DType::F64;
  return t;
}

std::string_view dtype_all_names() {
  static const std::string names = make_all_names();
  return names;
}

double round_to_dtype(double x, DType t) {
  SOLAR_CHECK(!dtype_is_complex(t), "a complex element is no double");
  if (t == DType::F64) return x;
  // f32: the hardware's double -> float conversion, which rounds to nearest, ties to even, with
  // f32's subnormals and overflow to infinity: the value round_to_format(x, kF32) computes, in
  // one instruction (the executor rounds every f32 value it stores). NaN kept as it is.
  if (t == DType::F32) return std::isnan(x) ? x : static_cast<double>(static_cast<float>(x));
  if (t == DType::Bool) return x != 0.0 ? 1.0 : 0.0;  // NaN != 0: true, as in C++ and PyTorch
  if (const FloatFormat* f = narrow_format(t)) return round_to_format(x, *f);
  return round_to_integer(x, t);
}

double load_element(const void* p, DType t) {
  switch (t) {
    case DType::F64:
      return load_raw<double>(p);
    case DType::F32:
      return load_raw<float>(p);
    case DType::F16:
      return decode(load_raw<uint16_t>(p), kF16);
    case DType::BF16:
      return decode(load_raw<uint16_t>(p), kBF16);
    case DType::F8E4M3:
      return decode(load_raw<uint8_t>(p), kF8E4M3);
    case DType::F8E5M2:
      return decode(load_raw<uint8_t>(p), kF8E5M2);
    case DType::I64:
      return static_cast<double>(load_raw<int64_t>(p));
    case DType::I32:
      return load_raw<int32_t>(p);
    case DType::I8:
      return load_raw<int8_t>(p);
    case DType::U8:
    case DType::F4E2M1X2:
      return load_raw<uint8_t>(p);
    case DType::Bool:
      return load_raw<uint8_t>(p) != 0 ? 1.0 : 0.0;
    case DType::C64:
    case DType::C128:
      break;  // the checker keeps kernels away from complex tensors
  }
  SOLAR_CHECK(false, "load_element: dtype out of range");
  return 0.0;
}

void store_element(void* p, DType t, double x) {
  const double v = round_to_dtype(x, t);
  switch (t) {
    case DType::F64:
      return store_raw<double>(p, v);
    // v is a float value (or +-inf, NaN) after rounding, so this conversion is exact and defined.
    case DType::F32:
      return store_raw<float>(p, static_cast<float>(v));
    case DType::F16:
      return store_raw<uint16_t>(p, static_cast<uint16_t>(encode(v, kF16)));
    case DType::BF16:
      return store_raw<uint16_t>(p, static_cast<uint16_t>(encode(v, kBF16)));
    case DType::F8E4M3:
      return store_raw<uint8_t>(p, static_cast<uint8_t>(encode(v, kF8E4M3)));
    case DType::F8E5M2:
      return store_raw<uint8_t>(p, static_cast<uint8_t>(encode(v, kF8E5M2)));
    // v is an integer in the type's range after rounding.
    case DType::I64:
      return store_raw<int64_t>(p, static_cast<int64_t>(wrap_to_u64(x)));
    case DType::I32:
      return store_raw<int32_t>(p, static_cast<int32_t>(v));
    case DType::I8:
      return store_raw<int8_t>(p, static_cast<int8_t>(v));
    case DType::U8:
    case DType::F4E2M1X2:
      return store_raw<uint8_t>(p, static_cast<uint8_t>(v));
    case DType::Bool:
      return store_raw<uint8_t>(p, static_cast<uint8_t>(v));
    case DType::C64:
    case DType::C128:
      break;  // round_to_dtype refused it
  }
  SOLAR_CHECK(false, "store_element: dtype out of range");
}

}  // namespace solar::ir
