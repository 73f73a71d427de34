// Element types: names, sizes, rounding (round-to-nearest-even, subnormals, overflow), integer
// casts, and storage bit patterns. Each expected value is worked out by hand in a comment.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>

#include "solar/ir/dtype.h"

namespace {

using namespace solar::ir;

const double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();

uint32_t bits_of(DType t, double x) {
  uint32_t b = 0;  // little-endian: the element's bytes are the low bytes of b
  store_element(&b, t, x);
  return b;
}

double from_bits(DType t, uint32_t b) { return load_element(&b, t); }

TEST(DType, NamesAndSizes) {
#define SOLAR_X(e, s, n, k)                                    \
  EXPECT_EQ(dtype_name(DType::e), s);                          \
  EXPECT_EQ(dtype_from_name(s), DType::e);                     \
  EXPECT_EQ(dtype_size(DType::e), n);                          \
  EXPECT_EQ(dtype_is_float(DType::e), k == 'f');               \
  EXPECT_EQ(dtype_is_integer(DType::e), k == 'i' || k == 'u'); \
  EXPECT_NE(dtype_all_names().find(s), std::string_view::npos);
  SOLAR_DTYPES(SOLAR_X)
#undef SOLAR_X
  EXPECT_EQ(dtype_from_name("fp32"), std::nullopt);
  EXPECT_EQ(dtype_all_names(),
            "f64, f32, f16, bf16, f8e4m3, f8e5m2, i64, i32, i8, u8, f4e2m1x2, bool, c64, c128");
}

// f4e2m1x2 (torch.float4_e2m1fn_x2): one byte holds a pair of e2m1 codes, and its value is the
// byte, 0..255, as u8's: 0x3A = 58 (codes 0xA, -1.0, in the low 4 bits and 0x3, 1.5, in the
// high 4). Casts wrap modulo 2^8 (263 -> 7) and truncate (200.7 -> 200); storage is the byte.
TEST(DType, PackedFp4PairIsItsByte) {
  EXPECT_EQ(round_to_dtype(0x3A, DType::F4E2M1X2), 58.0);
  EXPECT_EQ(round_to_dtype(263.0, DType::F4E2M1X2), 7.0);
  EXPECT_EQ(round_to_dtype(200.7, DType::F4E2M1X2), 200.0);
  uint8_t byte = 0;
  store_element(&byte, DType::F4E2M1X2, 200.0);
  EXPECT_EQ(byte, 200);
  EXPECT_EQ(load_element(&byte, DType::F4E2M1X2), 200.0);
  EXPECT_EQ(dtype_size(DType::F4E2M1X2), 1);  // one byte a pair: two fp4 values
}

TEST(DType, BF16) {
  // 8 exponent bits, 7 mantissa bits: next to 1.0 the spacing is 2^-7.
  // 1 + 2^-8 lies halfway between 1 (mantissa 0000000, even) and 1 + 2^-7 (odd): rounds to 1.
  EXPECT_EQ(round_to_dtype(1.0 + std::ldexp(1, -8), DType::BF16), 1.0);
  // 1 + 3*2^-8 lies halfway between 1 + 2^-7 (mantissa 1, odd) and 1 + 2^-6 (2, even).
  EXPECT_EQ(round_to_dtype(1.0 + 3 * std::ldexp(1, -8), DType::BF16), 1.0 + std::ldexp(1, -6));
  // Just above the halfway point rounds up.
  EXPECT_EQ(round_to_dtype(1.0 + std::ldexp(1, -8) + std::ldexp(1, -30), DType::BF16),
            1.0 + std::ldexp(1, -7));
  // Max = (2 - 2^-7) * 2^127; the spacing there is 2^120, so max + 2^119 is a tie, and the
  // max's mantissa 1111111 is odd: it rounds up to 2^128, which overflows to inf.
  const double max = (2.0 - std::ldexp(1, -7)) * std::ldexp(1, 127);
  EXPECT_EQ(round_to_dtype(max, DType::BF16), max);
  EXPECT_EQ(round_to_dtype(max + std::ldexp(1, 118), DType::BF16), max);
  EXPECT_EQ(round_to_dtype(max + std::ldexp(1, 119), DType::BF16), kInf);
  // Smallest subnormal: 2^(-126 - 7) = 2^-133. Half of it ties to 0 (even); 3/4 of it rounds up.
  EXPECT_EQ(round_to_dtype(std::ldexp(1, -133), DType::BF16), std::ldexp(1, -133));
  EXPECT_EQ(round_to_dtype(std::ldexp(1, -134), DType::BF16), 0.0);
  EXPECT_EQ(round_to_dtype(0.75 * std::ldexp(1, -133), DType::BF16), std::ldexp(1, -133));
  // bf16 is the top half of f32: 1.0 = 0x3F80, -2 = 0xC000.
  EXPECT_EQ(bits_of(DType::BF16, 1.0), 0x3F80u);
  EXPECT_EQ(bits_of(DType::BF16, -2.0), 0xC000u);
}

TEST(DType, F16) {
  // 5 exponent bits (bias 15), 10 mantissa bits. Max = (2 - 2^-10) * 2^15 = 65504; the spacing
  // there is 32. 65519 is below the halfway point 65520; 65520 is a tie with an odd max
  // mantissa (all ones), so it rounds up to 65536: inf.
  EXPECT_EQ(round_to_dtype(65504, DType::F16), 65504);
  EXPECT_EQ(round_to_dtype(65519, DType::F16), 65504);
  EXPECT_EQ(round_to_dtype(65520, DType::F16), kInf);
  EXPECT_EQ(round_to_dtype(-65520, DType::F16), -kInf);
  // 1/3 is in [2^-2, 2^-1): spacing 2^-12; 4096/3 = 1365.33 -> 1365; 1365/4096 = 0.333251953125.
  EXPECT_EQ(round_to_dtype(1.0 / 3.0, DType::F16), 0.333251953125);
  // Subnormals: spacing 2^-24 below 2^-14. 2^-25 ties to 0; 3 * 2^-26 = 0.75 * 2^-24 rounds up.
  EXPECT_EQ(round_to_dtype(std::ldexp(1, -24), DType::F16), std::ldexp(1, -24));
  EXPECT_EQ(round_to_dtype(std::ldexp(1, -25), DType::F16), 0.0);
  EXPECT_EQ(round_to_dtype(3 * std::ldexp(1, -26), DType::F16), std::ldexp(1, -24));
  // 1.5 * 2^-24 ties between 1 and 2 (times 2^-24): 2 is even.
  EXPECT_EQ(round_to_dtype(1.5 * std::ldexp(1, -24), DType::F16), std::ldexp(1, -23));
  // The largest subnormal rounds up to the smallest normal 2^-14 when just above halfway.
  EXPECT_EQ(round_to_dtype(std::ldexp(1, -14) - std::ldexp(1, -26), DType::F16),
            std::ldexp(1, -14));
  // Bit patterns: 1.0 = 0x3C00, 65504 = 0x7BFF, inf = 0x7C00, 2^-24 = 0x0001, -0 = 0x8000.
  EXPECT_EQ(bits_of(DType::F16, 1.0), 0x3C00u);
  EXPECT_EQ(bits_of(DType::F16, 65504), 0x7BFFu);
  EXPECT_EQ(bits_of(DType::F16, 1e9), 0x7C00u);
  EXPECT_EQ(bits_of(DType::F16, std::ldexp(1, -24)), 0x0001u);
  EXPECT_EQ(bits_of(DType::F16, -0.0), 0x8000u);
  EXPECT_EQ(bits_of(DType::F16, kNaN), 0x7E00u);
  EXPECT_EQ(from_bits(DType::F16, 0x3555), 0.333251953125);
  EXPECT_TRUE(std::isnan(from_bits(DType::F16, 0x7C01)));
}

TEST(DType, F8E4M3) {
  // The "fn" variant: bias 7, 3 mantissa bits, no infinities; only S.1111.111 is NaN, so the
  // largest finite value is 1.110b * 2^8 = 448 (0x7E), and exponent 1111 is otherwise finite.
  EXPECT_EQ(round_to_dtype(448, DType::F8E4M3), 448);
  // Spacing at 2^8 is 32. 464 is halfway between 448 (mantissa 110, even) and 480 (111, odd;
  // that pattern is NaN): ties-to-even gives 448. Anything above 464 rounds to 480, which does
  // not exist: NaN. This is PyTorch's float8_e4m3fn conversion (round to nearest even; values
  // that round beyond 448 become NaN; the saturating variant is not used).
  EXPECT_EQ(round_to_dtype(464, DType::F8E4M3), 448);
  EXPECT_TRUE(std::isnan(round_to_dtype(465, DType::F8E4M3)));
  EXPECT_TRUE(std::isnan(round_to_dtype(kInf, DType::F8E4M3)));
  EXPECT_TRUE(std::isnan(round_to_dtype(-1e6, DType::F8E4M3)));
  // 0.1 is in [2^-4, 2^-3): spacing 2^-7; 12.8 -> 13; 13/128 = 0.1015625.
  EXPECT_EQ(round_to_dtype(0.1, DType::F8E4M3), 0.1015625);
  // Subnormals: spacing 2^(-6 - 3) = 2^-9. 2^-10 ties to 0; 0.75 * 2^-9 rounds up to 2^-9.
  EXPECT_EQ(round_to_dtype(std::ldexp(1, -9), DType::F8E4M3), std::ldexp(1, -9));
  EXPECT_EQ(round_to_dtype(std::ldexp(1, -10), DType::F8E4M3), 0.0);
  EXPECT_EQ(round_to_dtype(0.75 * std::ldexp(1, -9), DType::F8E4M3), std::ldexp(1, -9));
  // Bits: 1.0 = 0.0111.000 = 0x38; 448 = 0x7E; 256 = 0.1111.000 = 0x78 (finite); NaN = 0x7F.
  EXPECT_EQ(bits_of(DType::F8E4M3, 1.0), 0x38u);
  EXPECT_EQ(bits_of(DType::F8E4M3, 448), 0x7Eu);
  EXPECT_EQ(bits_of(DType::F8E4M3, -448), 0xFEu);
  EXPECT_EQ(from_bits(DType::F8E4M3, 0x78), 256);
  EXPECT_EQ(bits_of(DType::F8E4M3, 1000), 0x7Fu);
  EXPECT_EQ(bits_of(DType::F8E4M3, -1000), 0xFFu);
  EXPECT_TRUE(std::isnan(from_bits(DType::F8E4M3, 0x7F)));
  EXPECT_TRUE(std::isnan(from_bits(DType::F8E4M3, 0xFF)));
  EXPECT_EQ(from_bits(DType::F8E4M3, 0x01), std::ldexp(1, -9));
}

TEST(DType, F8E5M2) {
  // IEEE-like: bias 15, 2 mantissa bits, infinities. Max = 1.11b * 2^15 = 57344; spacing 8192.
  // 61440 is halfway to 65536 and the max's mantissa 11 is odd: rounds up, overflows to inf.
  EXPECT_EQ(round_to_dtype(57344, DType::F8E5M2), 57344);
  EXPECT_EQ(round_to_dtype(61439, DType::F8E5M2), 57344);
  EXPECT_EQ(round_to_dtype(61440, DType::F8E5M2), kInf);
  // 1.125 is halfway between 1 (mantissa 00) and 1.25 (01): 1. 1.375 -> 1.5 (10, even).
  EXPECT_EQ(round_to_dtype(1.125, DType::F8E5M2), 1.0);
  EXPECT_EQ(round_to_dtype(1.375, DType::F8E5M2), 1.5);
  // Smallest subnormal 2^(-14 - 2) = 2^-16.
  EXPECT_EQ(round_to_dtype(std::ldexp(1, -16), DType::F8E5M2), std::ldexp(1, -16));
  EXPECT_EQ(round_to_dtype(std::ldexp(1, -17), DType::F8E5M2), 0.0);
  // Bits: 1.0 = 0.01111.00 = 0x3C; max = 0x7B; inf = 0x7C; NaN = 0x7E.
  EXPECT_EQ(bits_of(DType::F8E5M2, 1.0), 0x3Cu);
  EXPECT_EQ(bits_of(DType::F8E5M2, 57344), 0x7Bu);
  EXPECT_EQ(bits_of(DType::F8E5M2, kInf), 0x7Cu);
  EXPECT_EQ(bits_of(DType::F8E5M2, -kInf), 0xFCu);
  EXPECT_EQ(bits_of(DType::F8E5M2, kNaN), 0x7Eu);
}

TEST(DType, F32AndF64) {
  // f32: 1 + 2^-24 ties to 1; 1 + 3 * 2^-24 ties to 1 + 2^-22 (even).
  EXPECT_EQ(round_to_dtype(1.0 + std::ldexp(1, -24), DType::F32), 1.0);
  EXPECT_EQ(round_to_dtype(1.0 + 3 * std::ldexp(1, -24), DType::F32), 1.0 + std::ldexp(1, -22));
  const double max = std::numeric_limits<float>::max();  // (2 - 2^-23) * 2^127
  EXPECT_EQ(round_to_dtype(max + std::ldexp(1, 102), DType::F32), max);
  EXPECT_EQ(round_to_dtype(max + std::ldexp(1, 103), DType::F32), kInf);
  EXPECT_EQ(round_to_dtype(std::ldexp(1, -149), DType::F32), std::ldexp(1, -149));
  EXPECT_EQ(round_to_dtype(std::ldexp(1, -150), DType::F32), 0.0);
  // 3 * 2^-150 lies halfway between 2^-149 (subnormal mantissa 1, odd) and 2^-148 (2, even).
  EXPECT_EQ(round_to_dtype(3 * std::ldexp(1, -150), DType::F32), std::ldexp(1, -148));
  // Negative values round as their magnitudes: -(1 + 3 * 2^-24) to -(1 + 2^-22); -1e300 (above
  // the max) to -inf; -2^-151 (a quarter of the smallest subnormal) to -0, its sign kept.
  EXPECT_EQ(round_to_dtype(-1.0 - 3 * std::ldexp(1, -24), DType::F32), -1.0 - std::ldexp(1, -22));
  EXPECT_EQ(round_to_dtype(-1e300, DType::F32), -kInf);
  const double tiny = round_to_dtype(-std::ldexp(1, -151), DType::F32);
  EXPECT_EQ(tiny, 0.0);
  EXPECT_TRUE(std::signbit(tiny));
  EXPECT_TRUE(std::signbit(round_to_dtype(-0.0, DType::F32)));
  EXPECT_TRUE(std::isnan(round_to_dtype(kNaN, DType::F32)));
  // 0.1 (a double) to the nearest f32, 13421773 * 2^-27 = 0.100000001490116...
  EXPECT_EQ(round_to_dtype(0.1, DType::F32), 13421773 * std::ldexp(1, -27));
  float f = 0;
  store_element(&f, DType::F32, 1e300);  // no undefined narrowing: stored as inf
  EXPECT_EQ(f, std::numeric_limits<float>::infinity());
  EXPECT_EQ(round_to_dtype(0.1, DType::F64), 0.1);
  double d = 0;
  store_element(&d, DType::F64, -0.1);
  EXPECT_EQ(load_element(&d, DType::F64), -0.1);
}

TEST(DType, Integers) {
  // Truncation toward zero, then wrap-around modulo 2^bits.
  EXPECT_EQ(round_to_dtype(3.9, DType::I32), 3);
  EXPECT_EQ(round_to_dtype(-3.9, DType::I32), -3);
  EXPECT_EQ(round_to_dtype(300, DType::I8), 44);    // 300 - 256
  EXPECT_EQ(round_to_dtype(-129, DType::I8), 127);  // -129 + 256
  EXPECT_EQ(round_to_dtype(-1, DType::U8), 255);    // -1 + 256
  EXPECT_EQ(round_to_dtype(256.5, DType::U8), 0);   // 256 - 256
  EXPECT_EQ(round_to_dtype(std::ldexp(1, 32) + 5, DType::I32), 5);
  EXPECT_EQ(round_to_dtype(std::ldexp(1, 31), DType::I32), -std::ldexp(1, 31));
  EXPECT_EQ(round_to_dtype(std::ldexp(1, 63), DType::I64), -std::ldexp(1, 63));
  EXPECT_EQ(round_to_dtype(std::ldexp(1, 64) + std::ldexp(1, 12), DType::I64), std::ldexp(1, 12));
  // NaN and +-inf have no defined remainder: both give 0.
  EXPECT_EQ(round_to_dtype(kNaN, DType::I64), 0);
  EXPECT_EQ(round_to_dtype(kInf, DType::I32), 0);
  EXPECT_EQ(round_to_dtype(-kInf, DType::U8), 0);
  // bool: x != 0 (NaN is true).
  EXPECT_EQ(round_to_dtype(0.5, DType::Bool), 1);
  EXPECT_EQ(round_to_dtype(-0.0, DType::Bool), 0);
  EXPECT_EQ(round_to_dtype(kNaN, DType::Bool), 1);
  int64_t i = 0;
  store_element(&i, DType::I64, -std::ldexp(1, 63));
  EXPECT_EQ(i, std::numeric_limits<int64_t>::min());
  store_element(&i, DType::I64, std::ldexp(1, 62) + std::ldexp(1, 10));  // exact in a double
  EXPECT_EQ(i, (int64_t{1} << 62) + 1024);
  int8_t b = 0;
  store_element(&b, DType::I8, 200);
  EXPECT_EQ(b, -56);
  EXPECT_EQ(load_element(&b, DType::I8), -56);
  uint8_t flag = 7;
  EXPECT_EQ(load_element(&flag, DType::Bool), 1);  // any non-zero byte reads as true
}

// Every bit pattern of the narrow float types decodes to a value that rounds to itself and
// encodes back to the same pattern (NaNs to the canonical NaN); positive patterns increase.
void check_all_patterns(DType t, int bits) {
  double previous = -1;
  for (uint32_t b = 0; b < (1u << bits); ++b) {
    const double v = from_bits(t, b);
    if (std::isnan(v)) continue;
    EXPECT_EQ(round_to_dtype(v, t), v) << b;
    EXPECT_EQ(bits_of(t, v), b) << b;
    if (b < (1u << (bits - 1))) {
      EXPECT_GT(v, previous) << b;
      previous = v;
    }
  }
}

TEST(DType, AllPatternsRoundTrip) {
  check_all_patterns(DType::F16, 16);
  check_all_patterns(DType::BF16, 16);
  check_all_patterns(DType::F8E4M3, 8);
  check_all_patterns(DType::F8E5M2, 8);
}

}  // namespace
