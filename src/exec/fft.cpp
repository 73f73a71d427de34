// Discrete Fourier transforms (see fft.h).
#include "fft.h"

#include <cmath>
#include <cstdint>
#include <numbers>
#include <utility>

namespace solar::exec {
namespace {

using C = std::complex<double>;

// exp(sign * 2 pi i m / n) for 0 <= m < n.
C twiddle(int64_t m, int64_t n, int sign) {
  const double angle =
      sign * 2.0 * std::numbers::pi * static_cast<double>(m) / static_cast<double>(n);
  return {std::cos(angle), std::sin(angle)};
}

void radix2(std::vector<C>& v, int sign) {
  const auto n = static_cast<int64_t>(v.size());
  for (int64_t i = 1, j = 0; i < n; ++i) {  // bit-reversal permutation
    int64_t bit = n >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j ^= bit;
    if (i < j) std::swap(v[static_cast<size_t>(i)], v[static_cast<size_t>(j)]);
  }
  for (int64_t len = 2; len <= n; len <<= 1) {
    for (int64_t start = 0; start < n; start += len) {
      for (int64_t k = 0; k < len / 2; ++k) {
        const C w = twiddle(k, len, sign);
        const auto a = static_cast<size_t>(start + k);
        const auto b = static_cast<size_t>(start + k + len / 2);
        const C t = w * v[b];
        v[b] = v[a] - t;
        v[a] += t;
      }
    }
  }
}

}  // namespace

void dft(std::vector<C>& v, int sign) {
  const auto n = static_cast<int64_t>(v.size());
  if (n <= 1) return;
  if ((n & (n - 1)) == 0) return radix2(v, sign);
  std::vector<C> out(v.size());
  for (int64_t k = 0; k < n; ++k) {
    C sum = 0.0;
    for (int64_t j = 0; j < n; ++j) sum += v[static_cast<size_t>(j)] * twiddle(j * k % n, n, sign);
    out[static_cast<size_t>(k)] = sum;
  }
  v = std::move(out);
}

}  // namespace solar::exec
