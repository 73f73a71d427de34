// Strided loads and stores of tensor elements as doubles (private to the executor). Same values
// as ir::load_element / ir::store_element, with the common dtypes converted in tight loops.
#pragma once

#include <cstddef>
#include <cstdint>

#include "solar/ir/dtype.h"

namespace solar::exec {

// out[l] = element (off + l * stride) of `data`, for l in [0, n). With a mask, only the lanes
// where mask[l] != 0 are read; the others are set to 0.
void load_strided(const std::byte* data, ir::DType t, int64_t off, int64_t stride, int64_t n,
                  double* out, const uint8_t* mask = nullptr);

// Element (off + l * stride) of `data` = in[l] rounded to `t`, for l in [0, n).
void store_strided(std::byte* data, ir::DType t, int64_t off, int64_t stride, int64_t n,
                   const double* in);

// Loads / stores one element at a flat offset, through a function chosen once per dtype.
using Loader = double (*)(const std::byte* data, int64_t off);
using Storer = void (*)(std::byte* data, int64_t off, double v);
Loader loader_for(ir::DType t);
Storer storer_for(ir::DType t);

}  // namespace solar::exec
