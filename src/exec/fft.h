// Discrete Fourier transforms for the executor's FFT statements (private to the executor).
#pragma once

#include <complex>
#include <vector>

namespace solar::exec {

// v[k] <- sum_j v[j] exp(sign * 2 pi i j k / n), in double, unscaled (sign -1: the forward
// transform, +1: the inverse). Radix 2 when n is a power of two, else the direct sum (O(n^2)),
// with each twiddle's angle reduced to (j k mod n) / n so that large n stays accurate.
void dft(std::vector<std::complex<double>>& v, int sign);

}  // namespace solar::exec
