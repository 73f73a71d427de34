// Operation counts and dtypes of a kernel, by the conventions of graph.h (docs/einsum.md,
// "Counting conventions").
//
// Internal to the einsum module; not part of the public API.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "solar/einsum/graph.h"
#include "solar/ir/ast.h"

namespace solar::einsum::detail {

// The two operands of a kernel whose points are MACs: a `+=` whose right side is a product in
// which exactly two factors read tensors (`A[i, k] * B[k, j]`, also `q[..] * k[..] * rsqrt(D)`).
// Factors that are the same at every point (constants, sizes: no reads, no loop indices) are
// folded into the result and cost nothing. nullopt when the kernel is not a contraction.
struct MacOperands {
  const ir::Expr* lhs = nullptr;
  const ir::Expr* rhs = nullptr;
  std::vector<const ir::Expr*> others;  // further factors that vary per point (each one multiply)
};
std::optional<MacOperands> mac_operands(const ir::Kernel& k);

// Whether a kernel is `=` of one tensor read times or divided by invariant factors (no reads,
// no loop indices): Node::scales_a_read.
bool scales_a_read(const ir::Kernel& k);

// MACs and other operations of a kernel over `points` points of its domain.
OpCounts count_ops(const ir::Kernel& k, int64_t points);

// The operations of `transforms` FFTs of length n (a signal of n points), simple ops (no MACs):
// per transform of n = 2^m points, the exact real additions and multiplications of Johnson &
// Frigo's modified split radix (S. G. Johnson, M. Frigo, "A modified split-radix FFT with fewer
// arithmetic operations", IEEE Trans. Signal Processing 55(1), 111-119, 2007), the fewest
// published: complex (fft, ifft) 34/9 n m - 124/27 n - 2 m - 2/9 (-1)^m m + 16/27 (-1)^m + 8
// (n = 2, 4, 8, 64, 1024: 4, 16, 56, 1152, 33968); real input or output (rfft, irfft, n the real
// signal's length) 17/9 n m - 89/27 n - m - 1/9 (-1)^m m + 8/27 (-1)^m + 6 (2, 6, 22, 514,
// 15962), Sorensen et al.'s real split radix 2 n m - 4 n + 6 less half the complex savings.
// A length that is not a power of two counts as the largest power of two below it, a floor
// under the published counts (n = 3: 4 against the 16 of the 3-point DFT, 12 additions and 4
// multiplications; docs/fidelities.md, "FFTs"): every figure errs small.
OpCounts fft_counts(int64_t transforms, int64_t n, bool real);

// The dtype two values of dtypes a and b combine to: a float over an integer over bool; the wider
// of two floats (or of two integers); f16 with bf16 gives f32, the two f8 give f16, i8 with u8
// gives i32 (no narrower dtype holds both).
ir::DType promote(ir::DType a, ir::DType b);

using DTypeOf = std::function<ir::DType(const std::string& tensor)>;

// The dtype an expression's value has before it is stored: a read has its tensor's dtype, a cast
// its target, an operation the promotion of its operands (a select: of its two branches);
// nullopt for constants and indices, which take the dtype of what they combine with.
std::optional<ir::DType> value_dtype(const ir::Expr& e, const DTypeOf& dtype_of);

// The widest floating dtype among the tensors read, the casts and the output; the promotion of
// all of them when none is floating.
ir::DType compute_dtype(const ir::Expr& rhs, ir::DType out, const DTypeOf& dtype_of);

}  // namespace solar::einsum::detail
