// Complex tensors and FFTs (docs/ir.md, "Complex tensors"): the executor's transforms against a
// naive DFT written here, the views, the checker's rules and the canonical text.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <numbers>
#include <string>
#include <utility>
#include <vector>

#include "exec_test_util.h"
#include "solar/ir/printer.h"

namespace solar::exec {
namespace {

using test::f32;
using test::run_text;
using test::values;
using C = std::complex<double>;

// X[k] = sum_j x[j] exp(sign 2 pi i j k / n), the definition, term by term.
std::vector<C> naive_dft(const std::vector<C>& x, int sign) {
  const auto n = static_cast<int64_t>(x.size());
  std::vector<C> out(x.size());
  for (int64_t k = 0; k < n; ++k) {
    for (int64_t j = 0; j < n; ++j) {
      const double a = sign * 2.0 * std::numbers::pi * static_cast<double>(j * k) / n;
      out[static_cast<size_t>(k)] += x[static_cast<size_t>(j)] * C(std::cos(a), std::sin(a));
    }
  }
  return out;
}

// The complex values of a c64 or c128 tensor (its pairs, through view_as_real's layout).
std::vector<C> complex_values(const Tensor& t) {
  std::vector<C> v;
  const bool wide = t.dtype() == ir::DType::C128;
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (wide) {
      const auto* p = static_cast<const double*>(t.data());
      v.emplace_back(p[2 * i], p[2 * i + 1]);
    } else {
      const auto* p = static_cast<const float*>(t.data());
      v.emplace_back(p[2 * i], p[2 * i + 1]);
    }
  }
  return v;
}

Tensor c64(std::vector<int64_t> shape, const std::vector<C>& v) {
  Tensor t(ir::DType::C64, std::move(shape));
  auto* p = static_cast<float*>(t.data());
  for (size_t i = 0; i < v.size(); ++i) {
    p[2 * i] = static_cast<float>(v[i].real());
    p[2 * i + 1] = static_cast<float>(v[i].imag());
  }
  return t;
}

void expect_near(const std::vector<C>& got, const std::vector<C>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i].real(), want[i].real(), tol) << "element " << i;
    EXPECT_NEAR(got[i].imag(), want[i].imag(), tol) << "element " << i;
  }
}

TEST(Fft, RfftOfALineIsItsDftHalf) {
  // x = 1, 2, 3, 4: X[0] = 10, X[1] = (1-3) + (4-2)i = -2+2i, X[2] = 1-2+3-4 = -2.
  const TensorMap out = run_text(R"(
input x : f32[4]
output y : c64[3]
y = rfft(x, dim=0))",
                                 {{"x", f32({4}, {1, 2, 3, 4})}});
  expect_near(complex_values(out.at("y")), {C(10, 0), C(-2, 2), C(-2, 0)}, 1e-6);
}

TEST(Fft, RfftAndFftMatchANaiveDftOnEveryLine) {
  // Lengths 8 (radix 2) and 6 (the direct sum) along dim 1 of [3, n]; rfft's whole spectrum
  // (y has n points) and fft of the complex signal, normalised by 1/n (norm=2) and 1/sqrt(n).
  for (const int64_t n : {8, 6}) {
    test::Random rng(7);
    const Tensor x = rng.tensor(ir::DType::F32, {3, n});
    std::vector<C> z;
    for (int64_t i = 0; i < 3 * n; ++i) z.emplace_back(rng.next(), rng.next());
    const std::string len = std::to_string(n);
    const TensorMap out = run_text("input x : f32[3, " + len + "]\ninput z : c64[3, " + len +
                                       "]\noutput full : c64[3, " + len + "]\noutput f : c64[3, " +
                                       len + "]\noutput b : c64[3, " + len +
                                       "]\nfull = rfft(x, dim=1, norm=2)\nf = fft(z, dim=1, "
                                       "norm=1)\nb = ifft(z, dim=1)",
                                   {{"x", x}, {"z", c64({3, n}, z)}});
    const Tensor zs = c64({3, n}, z);  // z as stored (f32 parts)
    const std::vector<C> zq = complex_values(zs);
    std::vector<C> want_full, want_f, want_b;
    for (int64_t r = 0; r < 3; ++r) {
      std::vector<C> xr, zr;
      for (int64_t j = 0; j < n; ++j) {
        xr.emplace_back(x.get(r * n + j), 0.0);
        zr.push_back(zq[static_cast<size_t>(r * n + j)]);
      }
      for (const C& v : naive_dft(xr, -1)) want_full.push_back(v / static_cast<double>(n));
      for (const C& v : naive_dft(zr, -1)) want_f.push_back(v / std::sqrt(static_cast<double>(n)));
      for (const C& v : naive_dft(zr, 1)) want_b.push_back(v);
    }
    expect_near(complex_values(out.at("full")), want_full, 1e-5);
    expect_near(complex_values(out.at("f")), want_f, 1e-5);
    expect_near(complex_values(out.at("b")), want_b, 1e-5);
  }
}

TEST(Fft, IrfftInvertsRfftAlongDimZero) {
  // irfft(rfft(x)) / n = x (norm=2 on the way back), along dim 0 of [5, 2] (n = 5, odd: the
  // half has 5 / 2 + 1 = 3 points).
  const std::vector<double> x = {1, -1, 2, 0.5, -3, 4, 0, 2, 1.5, -2};
  const TensorMap out = run_text(R"(
input x : f32[5, 2]
tensor h : c64[3, 2]
output y : f32[5, 2]
h = rfft(x, dim=0)
y = irfft(h, dim=0, norm=2))",
                                 {{"x", f32({5, 2}, x)}});
  const std::vector<double> y = values(out.at("y"));
  for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(y[i], x[i], 1e-5);
}

TEST(Fft, ViewsMoveTheSameBytes) {
  // view_as_real of (1+2i, 3-4i) is [[1, 2], [3, -4]]; a kernel doubles it; view_as_complex
  // gives (2+4i, 6-8i).
  const TensorMap out = run_text(R"(
input z : c64[2]
tensor r : f32[2, 2]
tensor d : f32[2, 2]
output w : c64[2]
output rr : f32[2, 2]
r = view_as_real(z)
kernel twice {
  for i in 0..2, c in 0..2:
    d[i, c] = r[i, c] * 2.0
}
w = view_as_complex(d)
rr = r)",
                                 {{"z", c64({2}, {C(1, 2), C(3, -4)})}});
  EXPECT_EQ(values(out.at("rr")), (std::vector<double>{1, 2, 3, -4}));
  expect_near(complex_values(out.at("w")), {C(2, 4), C(6, -8)}, 0.0);
}

std::string check_error(const std::string& text) {
  return test::user_error([&] { run_text(text, {}); });
}

TEST(Fft, CheckerRules) {
  // {program, a fragment of its one-line error}
  const std::pair<const char*, const char*> cases[] = {
      // A kernel reads no complex tensor.
      {"input z : c64[2]\noutput y : f32[2]\nkernel k {\n  for i in 0..2:\n    y[i] = z[i]\n}",
       "kernel 'k' reads complex tensor 'z'"},
      // rfft of [8] gives 5 (8 / 2 + 1) or 8 points, not 4.
      {"input x : f32[8]\noutput y : c64[4]\ny = rfft(x, dim=0)",
       "rfft gives shape [5] (or [8]) but 'y' has shape [4]"},
      // irfft to 8 points reads 5.
      {"input x : c64[4]\noutput y : f32[8]\ny = irfft(x, dim=0)",
       "reads shape [5] but 'x' has shape [4]"},
      // Dtypes: rfft of f64 into c64 (parts f32); fft of a real tensor; norm out of range.
      {"input x : f64[8]\noutput y : c64[5]\ny = rfft(x, dim=0)",
       "needs a real 'x' of parts f32, not f64"},
      {"input x : f32[8]\noutput y : c64[8]\ny = fft(x, dim=0)", "needs a complex 'x'"},
      {"input x : c64[8]\noutput y : c64[8]\ny = fft(x, dim=0, norm=3)",
       "norm must be 0 (none), 1 (by sqrt(n)) or 2 (by n), not 3"},
      // view_as_complex needs a last dimension of 2; pad refuses complex tensors; a copy does
      // not convert them.
      {"input x : f32[3, 3]\noutput y : c64[3]\ny = view_as_complex(x)",
       "needs a last dimension of 2"},
      {"input x : c64[3]\noutput y : c64[5]\ny = pad(x, lo=[1], hi=[1])",
       "'pad' does not take complex tensors"},
      {"input x : c64[3]\noutput y : c128[3]\ny = x",
       "a copy converts complex values only to their own dtype"},
  };
  for (const auto& [program, fragment] : cases) {
    EXPECT_NE(check_error(program).find(fragment), std::string::npos) << program;
  }
}

TEST(Fft, CanonicalTextRoundTrips) {
  const std::string good =
      "input x : f64[4, 8]\ntensor h : c128[4, 5]\ntensor g : c128[4, 5]\noutput r : f64[4, 5, "
      "2]\n\nh = rfft(x, dim=1, norm=1)\ng = ifft(h, dim=0)\nr = view_as_real(g)\n";
  const ir::Program p = ir::parse(good, "t.ir");
  EXPECT_EQ(ir::print(p), good);
  EXPECT_TRUE(ir::equal(ir::parse(ir::print(p), "t.ir"), p));
}

}  // namespace
}  // namespace solar::exec
