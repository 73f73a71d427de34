// .npz files (numpy's zip of .npy arrays), the array format of `solar ir run --inputs/--out`.
// Reads stored and deflate-compressed members (np.savez and np.savez_compressed), C-order arrays of
// dtypes f8 f4 f2 i8 i4 i1 u1 b1 and ml_dtypes' bfloat16/float8 (stored as void 'V2'/'V1' by
// numpy: we read their raw bits by the declared IR dtype). Writes stored (uncompressed) archives
// with deterministic bytes (fixed timestamps, sorted member names).
#pragma once

#include <string>

#include "solar/exec/executor.h"

namespace solar::exec {

TensorMap read_npz(const std::string& path);
// Writes atomically: to a temporary file beside `path`, renamed into place when complete.
void write_npz(const std::string& path, const TensorMap& tensors);

}  // namespace solar::exec
