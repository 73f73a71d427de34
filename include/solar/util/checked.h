// Overflow-checked and saturating integer arithmetic, for counts and sizes that the user's
// numbers can make arbitrarily large.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>

namespace solar {

// The exact result, or nullopt when it does not fit in the type.
inline std::optional<int64_t> checked_add(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}
inline std::optional<int64_t> checked_sub(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_sub_overflow(a, b, &r)) return std::nullopt;
  return r;
}
inline std::optional<int64_t> checked_mul(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// The exact result clamped to [-limit, limit] (limit >= 0), even when it does not fit in int64:
// "at least `limit`" stays at least `limit`.
inline int64_t saturating_add(int64_t a, int64_t b,
                              int64_t limit = std::numeric_limits<int64_t>::max()) {
  int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) return a < 0 ? -limit : limit;
  return r > limit ? limit : (r < -limit ? -limit : r);
}
inline int64_t saturating_mul(int64_t a, int64_t b,
                              int64_t limit = std::numeric_limits<int64_t>::max()) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) return (a < 0) == (b < 0) ? limit : -limit;
  return r > limit ? limit : (r < -limit ? -limit : r);
}

// Unsigned: the exact result, or the type's maximum when it does not fit.
inline uint64_t saturating_add(uint64_t a, uint64_t b) {
  uint64_t r = 0;
  return __builtin_add_overflow(a, b, &r) ? std::numeric_limits<uint64_t>::max() : r;
}
inline uint64_t saturating_mul(uint64_t a, uint64_t b) {
  uint64_t r = 0;
  return __builtin_mul_overflow(a, b, &r) ? std::numeric_limits<uint64_t>::max() : r;
}

}  // namespace solar
