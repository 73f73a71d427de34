#include "value_ops.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <numbers>

namespace solar::exec {
namespace {

template <typename F>
void map1(double* out, int64_t n, F f) {
  for (int64_t l = 0; l < n; ++l) out[l] = f(out[l]);
}

template <typename F>
void map2(double* out, const double* b, int64_t n, F f) {
  for (int64_t l = 0; l < n; ++l) out[l] = f(out[l], b[l]);
}

double truth(bool c) { return c ? 1.0 : 0.0; }

double sign(double x) {
  if (x > 0) return 1.0;
  if (x < 0) return -1.0;
  return x;  // +-0 and NaN
}

// Floor modulo: the result has the sign of the divisor (Python's %, torch.remainder).
double floor_mod_value(double a, double b) {
  const double r = std::fmod(a, b);
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// Bitwise operations act on values as 64-bit two's-complement integers: a value is truncated
// toward zero first (integer tensors hold integers; NaN is 0, infinities saturate).
int64_t as_int(double x) {
  if (std::isnan(x)) return 0;
  if (x >= 9223372036854775807.0) return std::numeric_limits<int64_t>::max();
  if (x <= -9223372036854775808.0) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(x);
}

double bits(int64_t v) { return static_cast<double>(v); }

// x << y on 64 bits (wrapping); a shift by a negative amount or by 64 or more gives 0.
double shift_left(double x, double y) {
  const int64_t s = as_int(y);
  if (s < 0 || s >= 64) return 0.0;
  return bits(static_cast<int64_t>(static_cast<uint64_t>(as_int(x)) << s));
}

// x >> y, arithmetic (the sign fills in, as for PyTorch's signed integers); a shift by a negative
// amount or by 64 or more gives the sign: -1 or 0.
double shift_right(double x, double y) {
  const int64_t v = as_int(x);
  const int64_t s = as_int(y);
  if (s < 0 || s >= 64) return v < 0 ? -1.0 : 0.0;
  return bits(v >> s);
}

// Starting point for erfinv: M. Giles, "Approximating the erfinv function" (single precision).
double erfinv_guess(double y) {
  double w = -std::log((1.0 - y) * (1.0 + y));
  double p = 0;
  if (w < 5.0) {
    w -= 2.5;
    p = 2.81022636e-08;
    for (double c : {3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503,
                     -0.00417768164, 0.246640727, 1.50140941}) {
      p = c + p * w;
    }
  } else {
    w = std::sqrt(w) - 3.0;
    p = -0.000200214257;
    for (double c : {0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613,
                     0.00943887047, 1.00167406, 2.83297682}) {
      p = c + p * w;
    }
  }
  return p * y;
}

}  // namespace

double erfinv(double y) {
  if (std::isnan(y) || std::fabs(y) > 1.0) return std::numeric_limits<double>::quiet_NaN();
  if (std::fabs(y) == 1.0) return std::copysign(std::numeric_limits<double>::infinity(), y);
  double x = erfinv_guess(y);
  for (int i = 0; i < 2; ++i) {  // Newton steps on erf(x) - y, to double precision
    x -= (std::erf(x) - y) / (2.0 / std::sqrt(std::numbers::pi) * std::exp(-x * x));
  }
  return x;
}

void apply_unary(ir::UnaryOp op, double* out, int64_t n) {
  using U = ir::UnaryOp;
  switch (op) {
    case U::Neg:
      return map1(out, n, [](double x) { return -x; });
    case U::Not:
      return map1(out, n, [](double x) { return truth(x == 0); });
    case U::Abs:
      return map1(out, n, [](double x) { return std::fabs(x); });
    case U::Sign:
      return map1(out, n, sign);
    case U::Floor:
      return map1(out, n, [](double x) { return std::floor(x); });
    case U::Ceil:
      return map1(out, n, [](double x) { return std::ceil(x); });
    // Half to even, as torch.round and numpy.round (the default rounding mode).
    case U::Round:
      return map1(out, n, [](double x) { return std::nearbyint(x); });
    case U::Exp:
      return map1(out, n, [](double x) { return std::exp(x); });
    case U::Exp2:
      return map1(out, n, [](double x) { return std::exp2(x); });
    case U::Expm1:
      return map1(out, n, [](double x) { return std::expm1(x); });
    case U::Log:
      return map1(out, n, [](double x) { return std::log(x); });
    case U::Log2:
      return map1(out, n, [](double x) { return std::log2(x); });
    case U::Log1p:
      return map1(out, n, [](double x) { return std::log1p(x); });
    case U::Sqrt:
      return map1(out, n, [](double x) { return std::sqrt(x); });
    case U::Rsqrt:
      return map1(out, n, [](double x) { return 1.0 / std::sqrt(x); });
    case U::Recip:
      return map1(out, n, [](double x) { return 1.0 / x; });
    case U::Tanh:
      return map1(out, n, [](double x) { return std::tanh(x); });
    case U::Sigmoid:
      return map1(out, n, sigmoid);
    case U::Erf:
      return map1(out, n, [](double x) { return std::erf(x); });
    case U::Erfinv:
      return map1(out, n, erfinv);
    case U::Sin:
      return map1(out, n, [](double x) { return std::sin(x); });
    case U::Cos:
      return map1(out, n, [](double x) { return std::cos(x); });
    case U::IsNan:
      return map1(out, n, [](double x) { return truth(std::isnan(x)); });
    case U::BitNot:
      return map1(out, n, [](double x) { return static_cast<double>(~as_int(x)); });
  }
}

void apply_binary(ir::BinaryOp op, double* out, const double* b, int64_t n) {
  using B = ir::BinaryOp;
  switch (op) {
    case B::Add:
      return map2(out, b, n, [](double x, double y) { return x + y; });
    case B::Sub:
      return map2(out, b, n, [](double x, double y) { return x - y; });
    case B::Mul:
      return map2(out, b, n, [](double x, double y) { return x * y; });
    case B::Div:
      return map2(out, b, n, [](double x, double y) { return x / y; });
    case B::Mod:
      return map2(out, b, n, floor_mod_value);
    case B::Lt:
      return map2(out, b, n, [](double x, double y) { return truth(x < y); });
    case B::Le:
      return map2(out, b, n, [](double x, double y) { return truth(x <= y); });
    case B::Gt:
      return map2(out, b, n, [](double x, double y) { return truth(x > y); });
    case B::Ge:
      return map2(out, b, n, [](double x, double y) { return truth(x >= y); });
    case B::Eq:
      return map2(out, b, n, [](double x, double y) { return truth(x == y); });
    case B::Ne:
      return map2(out, b, n, [](double x, double y) { return truth(x != y); });
    case B::And:
      return map2(out, b, n, [](double x, double y) { return truth(x != 0 && y != 0); });
    case B::Or:
      return map2(out, b, n, [](double x, double y) { return truth(x != 0 || y != 0); });
    case B::Pow:
      return map2(out, b, n, [](double x, double y) { return std::pow(x, y); });
    case B::Min:
      return map2(out, b, n, nan_min);
    case B::Max:
      return map2(out, b, n, nan_max);
    case B::Atan2:
      return map2(out, b, n, [](double x, double y) { return std::atan2(x, y); });
    case B::BitAnd:
      return map2(out, b, n, [](double x, double y) { return bits(as_int(x) & as_int(y)); });
    case B::BitOr:
      return map2(out, b, n, [](double x, double y) { return bits(as_int(x) | as_int(y)); });
    case B::BitXor:
      return map2(out, b, n, [](double x, double y) { return bits(as_int(x) ^ as_int(y)); });
    case B::Shl:
      return map2(out, b, n, shift_left);
    case B::Shr:
      return map2(out, b, n, shift_right);
  }
}

}  // namespace solar::exec
