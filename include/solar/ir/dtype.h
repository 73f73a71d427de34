// Element types of the Affine Loop IR: names, sizes, and rounding of a double to a type's values.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace solar::ir {

// The one list of dtypes: X(enum name, IR spelling, size in bytes, kind)
// kind: 'f' floating point, 'i' signed integer, 'u' unsigned integer, 'b' bool, 'c' complex.
// c64 and c128 are torch.complex64 and complex128: an element is a (real, imaginary) pair of f32
// (f64) values, stored interleaved as torch and numpy store them. Kernels never read or write a
// complex tensor (its element is no double): the FFT operations and the views view_as_real and
// view_as_complex move between complex tensors and their pairs (docs/ir.md, "Complex tensors").
// f4e2m1x2 is torch.float4_e2m1fn_x2: two 4-bit e2m1 values packed in one byte (an element of
// the IR is the pair: a tensor of n elements holds 2n fp4 values in n bytes). As a value it is
// its byte, an unsigned integer 0..255 (the first fp4 value in the low 4 bits), so a program
// unpacks it with integer arithmetic, as torch does after `.view(torch.uint8)`.
// clang-format off
#define SOLAR_DTYPES(X)         \
  X(F64, "f64", 8, 'f')         \
  X(F32, "f32", 4, 'f')         \
  X(F16, "f16", 2, 'f')         \
  X(BF16, "bf16", 2, 'f')       \
  X(F8E4M3, "f8e4m3", 1, 'f')   \
  X(F8E5M2, "f8e5m2", 1, 'f')   \
  X(I64, "i64", 8, 'i')         \
  X(I32, "i32", 4, 'i')         \
  X(I8, "i8", 1, 'i')           \
  X(U8, "u8", 1, 'u')           \
  X(F4E2M1X2, "f4e2m1x2", 1, 'u') \
  X(Bool, "bool", 1, 'b')       \
  X(C64, "c64", 8, 'c')         \
  X(C128, "c128", 16, 'c')
// clang-format on

enum class DType : uint8_t {
#define SOLAR_X(e, s, n, k) e,
  SOLAR_DTYPES(SOLAR_X)
#undef SOLAR_X
};

std::string_view dtype_name(DType t);
std::optional<DType> dtype_from_name(std::string_view name);
int dtype_size(DType t);  // bytes per element
bool dtype_is_float(DType t);
bool dtype_is_integer(DType t);  // signed or unsigned integer (not bool)
bool dtype_is_complex(DType t);
// The dtype of a complex dtype's real and imaginary parts (c64: f32, c128: f64); `t` itself when
// it is not complex.
DType complex_part(DType t);
// Comma-separated list of all spellings, for "unknown dtype" diagnostics.
std::string_view dtype_all_names();

// Rounds a double to the nearest value representable in `t` (round-to-nearest-even for floats;
// f8e4m3 is the "fn" variant: no infinities, max 448, out-of-range -> NaN; f8e5m2 is IEEE-like).
// Integers: truncation toward zero, then wrap-around modulo 2^bits (C++/PyTorch cast semantics);
// NaN -> 0. bool: x != 0.
double round_to_dtype(double x, DType t);

// Storage conversions (bit patterns). `p` points to one element of type `t`.
double load_element(const void* p, DType t);
void store_element(void* p, DType t, double x);  // rounds as round_to_dtype

}  // namespace solar::ir
