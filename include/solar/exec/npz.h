// .npz files (numpy's zip of .npy arrays), the array format of `solar ir run --inputs/--out`.
// Reads stored and deflate-compressed members (np.savez and np.savez_compressed, zip64 included),
// C-order arrays of dtypes f8 f4 f2 i8 i4 i1 u1 b1, each read as the IR dtype of the same values
// (f8 -> f64, f4 -> f32, f2 -> f16, i8 -> i64, i4 -> i32, i1 -> i8, u1 -> u8, b1 -> bool).
// Writes stored (uncompressed) archives with deterministic bytes (fixed timestamps, sorted member
// names), which numpy reads.
//
// bf16 and f8 have no numpy dtype, so they travel as raw bits:
//  - bf16 is written as '<u2' (uint16) holding the bits; '<u2' and '<V2'/'|V2' (ml_dtypes'
//    bfloat16 as numpy saves it) are read as bf16. In numpy: `a.view(ml_dtypes.bfloat16)`.
//  - f8e4m3 and f8e5m2 are written as '|u1' (uint8) holding the bits, and '|u1' and '|V1' are read
//    as u8: the program's declared dtype says which f8 the bits are (reinterpret_bits in
//    executor.h).
// A malformed file (truncated, corrupt, Fortran order, an unsupported dtype) is a UserError
// naming the file, the member and what is wrong.
#pragma once

#include <string>

#include "solar/exec/executor.h"

namespace solar::exec {

TensorMap read_npz(const std::string& path);
// Writes atomically: to a temporary file beside `path`, renamed into place when complete.
void write_npz(const std::string& path, const TensorMap& tensors);

}  // namespace solar::exec
