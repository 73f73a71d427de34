// Lifting FFTs and complex tensors (docs/einsum.md, "Complex tensors and FFTs"): every count and
// byte figure below is worked out by hand. A complex tensor is lifted as its (real, imaginary)
// pairs: c64[s] is f32[s, 2], 8 bytes per complex element.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "solar/einsum/graph.h"
#include "solar/ir/parser.h"

namespace solar::einsum {
namespace {

Graph lift_text(const std::string& text) { return lift(ir::parse(text, "test.ir"), {}); }

const Node& node(const Graph& g, const std::string& name) {
  const auto it =
      std::find_if(g.nodes.begin(), g.nodes.end(), [&](const Node& n) { return n.name == name; });
  if (it == g.nodes.end()) throw std::runtime_error("no node " + name);
  return *it;
}

TEST(FftLift, RfftFilterIrfftCountsAndBytes) {
  // x [8, 1024] f32 -> rfft along 1 -> times a real filter f [513] -> irfft back to [8, 1024].
  const Graph g = lift_text(R"(
input x : f32[8, 1024]
weight f : f32[513]
tensor h : c64[8, 513]
tensor hp : f32[8, 513, 2]
tensor yp : f32[8, 513, 2]
tensor q : c64[8, 513]
output y : f32[8, 1024]
h = rfft(x, dim=1)
hp = view_as_real(h)
kernel filter {
  for i in 0..8, j in 0..513, c in 0..2:
    yp[i, j, c] = hp[i, j, c] * f[j]
}
q = view_as_complex(yp)
y = irfft(q, dim=1, norm=2)
)");
  // Three nodes: the views fold (the complex tensors are their pairs).
  ASSERT_EQ(g.nodes.size(), 3u);
  const Node& r = node(g, "rfft:h");
  // 8 transforms of n = 1024 = 2^10 real points (m = 10, (-1)^m = 1), Johnson & Frigo's real
  // count times 27: 51 * 1024 * 10 - 89 * 1024 - 27 * 10 - 3 * 10 + 8 + 162 = 522240 - 91136 -
  // 270 - 30 + 170 = 430974 = 27 * 15962: 15962 each, 8 * 15962 = 127696 in all, no MACs.
  EXPECT_EQ(r.counts.macs, 0);
  EXPECT_EQ(r.counts.simple, 127696);
  EXPECT_EQ(r.counts.flops(), 127696);
  // Reads x: 8 * 1024 * 4 B = 32768 B; writes h: 8 * 513 complex * 8 B = 32832 B.
  EXPECT_EQ(r.bytes_read(), 32768);
  EXPECT_EQ(r.bytes_written(), 32832);
  // The filter: 8 * 513 * 2 = 8208 multiplies; reads h's pairs (32832 B) and f (513 * 4 =
  // 2052 B), writes yp (32832 B).
  const Node& k = node(g, "filter");
  EXPECT_EQ(k.counts.simple, 8208);
  EXPECT_EQ(k.bytes_read(), 32832 + 2052);
  // irfft: the same 8 transforms of 1024 real points, 127696 ops; reads q (32832 B), writes y
  // (32768 B). Its node reads the kernel's output yp through the folded view_as_complex.
  const Node& ir = node(g, "irfft:y");
  EXPECT_EQ(ir.counts.simple, 127696);
  EXPECT_EQ(ir.bytes_read(), 32832);
  EXPECT_EQ(ir.bytes_written(), 32768);
  EXPECT_EQ(ir.reads.at(0).tensor, "yp");
}

TEST(FftLift, ComplexFftCountsSplitRadix) {
  // fft of c128[4, 6] along 0: n = 4 = 2^2, 16 real additions per transform (4 complex ones,
  // x0 +- x2 and x1 +- x3, then 4 more, the -i a swap), 6 transforms: 96. ifft of the result
  // along 1: n = 6 is not a power of two and counts as 4, the largest power of two below it:
  // 16 per transform (the 6-point DFT takes 2 3-point DFTs of 16 and 3 2-point ones of 4, 44),
  // 4 transforms: 64.
  const Graph g = lift_text(R"(
input z : c128[4, 6]
tensor a : c128[4, 6]
output b : c128[4, 6]
a = fft(z, dim=0)
b = ifft(a, dim=1)
)");
  EXPECT_EQ(node(g, "fft:a").counts.simple, 96);
  EXPECT_EQ(node(g, "ifft:b").counts.simple, 64);
  // c128: 16 B per element, 24 elements: 384 B read and 384 B written by each.
  EXPECT_EQ(node(g, "fft:a").bytes_read(), 384);
  EXPECT_EQ(node(g, "ifft:b").bytes_written(), 384);
  // The other ops run at the f64 vector rate: the pairs are f64.
  EXPECT_EQ(node(g, "fft:a").compute_dtype, ir::DType::F64);
}

TEST(FftLift, SmallTransformsCountTheirAdditionsAndMultiplications) {
  // One transform each, the count by hand from the DFT's definition (s = (-1)^m, n = 2^m):
  const Graph g = lift_text(R"(
input c2 : c64[2]
input c4 : c64[4]
input c8 : c64[8]
input c3 : c64[3]
input r2 : f32[2]
input r4 : f32[4]
input r8 : f32[8]
input r3 : f32[3]
output f2 : c64[2]
output f4 : c64[4]
output f8 : c64[8]
output f3 : c64[3]
output h2 : c64[2]
output h4 : c64[3]
output h8 : c64[5]
output h3 : c64[2]
f2 = fft(c2, dim=0)
f4 = fft(c4, dim=0)
f8 = fft(c8, dim=0)
f3 = fft(c3, dim=0)
h2 = rfft(r2, dim=0)
h4 = rfft(r4, dim=0)
h8 = rfft(r8, dim=0)
h3 = rfft(r3, dim=0)
)");
  // Complex, 27 x (34/9 n m - 124/27 n - 2 m - 2/9 s m + 16/27 s + 8):
  // n = 2: 204 - 248 - 54 + 6 - 16 + 216 = 108 = 27 * 4: x0 + x1, x0 - x1, 2 real adds each.
  EXPECT_EQ(node(g, "fft:f2").counts.simple, 4);
  // n = 4: 816 - 496 - 108 - 12 + 16 + 216 = 432 = 27 * 16: 8 complex additions, 16 real.
  EXPECT_EQ(node(g, "fft:f4").counts.simple, 16);
  // n = 8: 2448 - 992 - 162 + 18 - 16 + 216 = 1512 = 27 * 56: 52 real additions and 4
  // multiplications (the two twiddles (+-1 - i)/sqrt(2): 2 additions and 2 multiplications
  // each), the split radix's count 4 n m - 6 n + 8 = 96 - 48 + 8 = 56.
  EXPECT_EQ(node(g, "fft:f8").counts.simple, 56);
  // n = 3 is not a power of two: counted as n = 2, 4; the 3-point DFT takes 12 real additions
  // and 4 multiplications (16), so 4 is below it.
  EXPECT_EQ(node(g, "fft:f3").counts.simple, 4);
  // Real input, 27 x (17/9 n m - 89/27 n - m - 1/9 s m + 8/27 s + 6):
  // n = 2: 102 - 178 - 27 + 3 - 8 + 162 = 54 = 27 * 2: x0 + x1, x0 - x1.
  EXPECT_EQ(node(g, "rfft:h2").counts.simple, 2);
  // n = 4: 408 - 356 - 54 - 6 + 8 + 162 = 162 = 27 * 6: a = x0 + x2, b = x1 + x3, a + b, a - b,
  // x0 - x2 and x1 - x3 (X1's real and imaginary parts, X3 its conjugate): 6 additions.
  EXPECT_EQ(node(g, "rfft:h4").counts.simple, 6);
  // n = 8: 1224 - 712 - 81 + 9 - 8 + 162 = 594 = 27 * 22: 20 additions and 2 multiplications.
  EXPECT_EQ(node(g, "rfft:h8").counts.simple, 22);
  // n = 3: counted as n = 2, 2; the real 3-point DFT takes 4 additions and 2 multiplications
  // (x1 + x2, x0 + that, x0 - 1/2 of it, sqrt(3)/2 (x1 - x2)), 6.
  EXPECT_EQ(node(g, "rfft:h3").counts.simple, 2);
}

TEST(FftLift, ViewAsRealOfAGraphInputFolds) {
  // view_as_real of an input and a kernel on its pairs: one node reading z's 3 * 8 = 24 B.
  const Graph g = lift_text(R"(
input z : c64[3]
tensor r : f32[3, 2]
output s : f32[3]
r = view_as_real(z)
kernel re {
  for i in 0..3:
    s[i] = r[i, 0] + r[i, 1]
}
)");
  ASSERT_EQ(g.nodes.size(), 1u);
  // The kernel reads the 3 pairs of z: 6 f32 values, 24 B.
  EXPECT_EQ(g.nodes[0].reads.at(0).tensor, "z");
  EXPECT_EQ(g.nodes[0].bytes_read(), 24);
}

}  // namespace
}  // namespace solar::einsum
