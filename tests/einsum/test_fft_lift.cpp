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
  // 8 transforms of n = 1024 = 2^10 real points: floor(17/9 * 1024 * 10) = floor(174080 / 9) =
  // floor(19342.2...) = 19342 each (rounded down per transform), 8 * 19342 = 154736 in all, no
  // MACs.
  EXPECT_EQ(r.counts.macs, 0);
  EXPECT_EQ(r.counts.simple, 154736);
  EXPECT_EQ(r.counts.flops(), 154736);
  // Reads x: 8 * 1024 * 4 B = 32768 B; writes h: 8 * 513 complex * 8 B = 32832 B.
  EXPECT_EQ(r.bytes_read(), 32768);
  EXPECT_EQ(r.bytes_written(), 32832);
  // The filter: 8 * 513 * 2 = 8208 multiplies; reads h's pairs (32832 B) and f (513 * 4 =
  // 2052 B), writes yp (32832 B).
  const Node& k = node(g, "filter");
  EXPECT_EQ(k.counts.simple, 8208);
  EXPECT_EQ(k.bytes_read(), 32832 + 2052);
  // irfft: the same 8 transforms of 1024 real points, 154736 ops; reads q (32832 B), writes y
  // (32768 B). Its node reads the kernel's output yp through the folded view_as_complex.
  const Node& ir = node(g, "irfft:y");
  EXPECT_EQ(ir.counts.simple, 154736);
  EXPECT_EQ(ir.bytes_read(), 32832);
  EXPECT_EQ(ir.bytes_written(), 32768);
  EXPECT_EQ(ir.reads.at(0).tensor, "yp");
}

TEST(FftLift, ComplexFftCountsSplitRadix) {
  // fft of c128[4, 6] along 0 (n = 4: floor(34/9 * 4 * 2) = floor(272 / 9) = floor(30.2...) = 30
  // per transform, 6 transforms: 180) and ifft of the result along 1 (n = 6, not a power of
  // two: 34/9 * 6 * log2(6) = 58.59..., rounded down per transform: 58, times 4 transforms: 232).
  const Graph g = lift_text(R"(
input z : c128[4, 6]
tensor a : c128[4, 6]
output b : c128[4, 6]
a = fft(z, dim=0)
b = ifft(a, dim=1)
)");
  EXPECT_EQ(node(g, "fft:a").counts.simple, 180);
  EXPECT_EQ(node(g, "ifft:b").counts.simple, 232);
  // c128: 16 B per element, 24 elements: 384 B read and 384 B written by each.
  EXPECT_EQ(node(g, "fft:a").bytes_read(), 384);
  EXPECT_EQ(node(g, "ifft:b").bytes_written(), 384);
  // The other ops run at the f64 vector rate: the pairs are f64.
  EXPECT_EQ(node(g, "fft:a").compute_dtype, ir::DType::F64);
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
