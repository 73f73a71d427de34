// Preparing the inputs of a run from what a user supplies. Shared by the `solar ir run` command
// and the Python package's `solar.run`, so both accept and refuse the same data.
#pragma once

#include <cstdint>

#include "solar/exec/executor.h"
#include "solar/ir/ast.h"
#include "solar/ir/sizes.h"

namespace solar::exec {

// Returns `given` with every array whose dtype differs from its declaration converted to the
// declared dtype, but only when the conversion is exact: every element's value is representable
// in the declared dtype (e.g. numpy's default int64 indices for an `i32` input, or float64 data
// that holds bf16 values for a `bf16` input; NaN converts between float dtypes). Anything else is
// a UserError naming the tensor, both dtypes and the first element that would change; the user
// converts explicitly. Arrays of the declared dtype are passed through without copying. A u8
// array given for an f8 tensor holds its raw bits (how f8 travels in .npz files and numpy
// arrays). Names that are not declared inputs or weights are left alone (the executor reports
// them).
TensorMap conform_inputs(const ir::Program& p, TensorMap given);

// Seeded random values for every input and weight of `p` at `sizes`, deterministic for a seed
// (the same bytes on every platform; each tensor's stream depends only on the seed and its name):
//  - floating-point tensors: standard normal samples, rounded to the dtype;
//  - integer tensors used as indices by take/gather/scatter: uniform in [0, n), n the size of the
//    indexed dimension (the smallest, when used several times), so every index is in range;
//  - other integer tensors: uniform in [0, 10);  bool tensors: 0 or 1 with equal probability.
TensorMap random_inputs(const ir::Program& p, const ir::SymbolValues& sizes, uint64_t seed);

}  // namespace solar::exec
