// The GEMM fast path for contractions (private to the executor).
#pragma once

#include "kernel.h"

namespace solar::exec {

// Runs `k` on a cache-blocked matrix multiply when it is a contraction `C[..] += A[..] * B[..]`
// over a box domain whose loops each index exactly two of C, A, B (M: C and A; N: C and B;
// K: A and B) or all three (batch), with every access in bounds. Several loops may share a role
// (a convolution is a GEMM over its im2col matrices). When C's index is one-to-one over the
// batch, M and N loops, each block of C is stored once; otherwise (a transposed convolution's
// scatter, out[s * x + r] += ..., the col2im of its GEMM) the blocks are added, in a fixed
// order, into a double accumulator. Accumulates in double and rounds once per element, like the
// interpreter; only the order of the additions differs. Returns false, having done nothing, when
// `k` does not qualify or is too small to gain from it.
bool run_gemm(const CompiledKernel& k);

}  // namespace solar::exec
