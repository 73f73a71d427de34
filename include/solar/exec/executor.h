// Reference executor for Affine Loop IR programs.
//
// Faithful to declared dtypes: every tensor is stored in its dtype; values are loaded as double,
// expressions are evaluated in double, and each store rounds to the destination dtype (so a bf16
// intermediate really loses precision). Reductions accumulate in double and round once, when the
// result is stored. See docs/ir.md, "Execution semantics".
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "solar/exec/tensor.h"
#include "solar/ir/ast.h"
#include "solar/ir/checker.h"
#include "solar/ir/sizes.h"

namespace solar::exec {

using TensorMap = std::map<std::string, Tensor, std::less<>>;

struct RunOptions {
  // Refuse (UserError, before allocating anything) when the program's tensors would need more
  // bytes than this, counting inputs, weights, outputs and intermediates at their dtype sizes.
  uint64_t memory_limit_bytes = 8ull << 30;
  // Contractions of the form `C[..] += A[..] * B[..]` may run on a blocked GEMM path. Off: every
  // kernel runs on the generic interpreter (tests compare both).
  bool fast_paths = true;
  ir::SymbolValues size_overrides;
};

// Runs `p` (which must pass the checker) on `inputs` (every input and weight, by name, with the
// declared dtype and shape) and returns the outputs by name. Missing, extra, or mis-shaped inputs,
// out-of-range data-dependent indices, and exceeding the memory limit are UserErrors.
TensorMap run(const ir::Program& p, const TensorMap& inputs, const RunOptions& options = {});

// run on a program already checked (ir::check_program) at its sizes, without checking it again
// (options.size_overrides unused: the sizes are p's).
TensorMap run(const ir::CheckedProgram& p, const TensorMap& inputs, const RunOptions& options = {});

// Bytes `run` would allocate for `p` at these sizes (the number compared with the memory limit):
// every declared tensor at its dtype size, plus the largest scratch buffer one statement needs
// (a double accumulator for a reduction into a non-f64 tensor; a snapshot of a tensor that a
// statement both reads and writes).
uint64_t required_bytes(const ir::Program& p, const ir::SymbolValues& sizes);

// `t` converted to `dtype`, every value rounded as a store to `dtype` rounds (an exact copy when
// the dtype is already `dtype`).
Tensor convert_to(const Tensor& t, ir::DType dtype);

// A copy of `t`'s bytes read as `dtype`, which must have the same element size (UserError
// otherwise). This is how bf16 and f8 arrays travel in .npz files: as their raw bits in 2- and
// 1-byte integer arrays (see npz.h).
Tensor reinterpret_bits(const Tensor& t, ir::DType dtype);

}  // namespace solar::exec
