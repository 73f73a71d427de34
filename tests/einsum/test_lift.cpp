// Lifting whole programs (include/solar/einsum/graph.h): every count and byte figure below is
// worked out by hand in the comment next to it. f32 is 4 bytes, bf16 2, i64 8.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "solar/einsum/graph.h"
#include "solar/ir/diagnostic.h"
#include "solar/ir/parser.h"
#include "solar/util/error.h"

namespace solar::einsum {
namespace {

Graph lift_text(const std::string& text, const ir::SymbolValues& sizes = {}) {
  return lift(ir::parse(text, "test.ir"), sizes);
}

const Node& node(const Graph& g, const std::string& name) {
  const auto it =
      std::find_if(g.nodes.begin(), g.nodes.end(), [&](const Node& n) { return n.name == name; });
  if (it == g.nodes.end()) throw std::runtime_error("no node " + name);
  return *it;
}

const Access& access(const std::vector<Access>& accesses, const std::string& tensor) {
  const auto it = std::find_if(accesses.begin(), accesses.end(),
                               [&](const Access& a) { return a.tensor == tensor; });
  if (it == accesses.end()) throw std::runtime_error("no access of " + tensor);
  return *it;
}

const Access& read(const Graph& g, const std::string& n, const std::string& t) {
  return access(node(g, n).reads, t);
}

const Access& write(const Graph& g, const std::string& n, const std::string& t) {
  return access(node(g, n).writes, t);
}

std::vector<std::string> node_names(const Graph& g) {
  std::vector<std::string> names;
  for (const Node& n : g.nodes) names.push_back(n.name);
  return names;
}

TEST(Lift, Gemm) {
  const Graph g = lift_text(R"(size M = 64
size N = 32
size K = 16
input A : f32[M, K]
weight B : f32[K, N]
output C : f32[M, N]
kernel matmul {
  for i in 0..M, j in 0..N, k in 0..K:
    C[i, j] += A[i, k] * B[k, j]
}
)");
  ASSERT_EQ(g.nodes.size(), 1u);
  const Node& n = g.nodes[0];
  EXPECT_EQ(n.kind, NodeKind::Einsum);
  EXPECT_EQ(n.einsum, "for i in 0..64, j in 0..32, k in 0..16: C[i, j] += A[i, k] * B[k, j]");
  EXPECT_EQ(n.points, 32768);       // 64 * 32 * 16
  EXPECT_EQ(n.counts.macs, 32768);  // one MAC per point
  EXPECT_EQ(n.counts.flops(), 65536);
  EXPECT_EQ(n.counts.other_ops(), 0);  // the add is part of the MAC
  EXPECT_EQ(n.reduction, Reduction::Sum);
  EXPECT_EQ(read(g, "matmul", "A").bytes, 4096);   // 64 * 16 * 4
  EXPECT_EQ(read(g, "matmul", "B").bytes, 2048);   // 16 * 32 * 4
  EXPECT_EQ(write(g, "matmul", "C").bytes, 8192);  // 64 * 32 * 4
  EXPECT_EQ(n.mac_lhs_dtype, ir::DType::F32);
  EXPECT_EQ(n.mac_rhs_dtype, ir::DType::F32);
  EXPECT_FALSE(n.conv_like);
  EXPECT_EQ(touched_elements(g, "B"), 512);
}

// Issue 44: a contraction over a dimension of size 0 has no point, but writes its whole output
// (each element starts at 0: an empty sum), as PyTorch's mm of [4, 0] by [0, 5] gives a [4, 5]
// tensor of zeros. The same for a sum over an empty dimension, and every reduction's identity.
TEST(Lift, AReductionOverAnEmptyRangeWritesItsWholeOutput) {
  const Graph g = lift_text(R"(size M = 4
size N = 5
size K = 0
input A : f32[M, K]
input B : f32[K, N]
output C : f32[M, N]
output s : f32[M]
output p : f32[M]
kernel matmul {
  for i in 0..M, j in 0..N, k in 0..K:
    C[i, j] += A[i, k] * B[k, j]
}
kernel total {
  for i in 0..M, k in 0..K:
    s[i] += A[i, k]
}
kernel product {
  for i in 0..M, k in 0..K:
    p[i] *= A[i, k]
}
)");
  const Node& mm = node(g, "matmul");
  EXPECT_EQ(mm.points, 0);  // 4 * 5 * 0
  EXPECT_EQ(mm.counts.macs, 0);
  EXPECT_EQ(read(g, "matmul", "A").bytes, 0);    // 4 * 0 elements
  EXPECT_EQ(read(g, "matmul", "B").bytes, 0);    // 0 * 5 elements
  EXPECT_EQ(write(g, "matmul", "C").bytes, 80);  // 4 * 5 zeros * 4 B
  EXPECT_TRUE(write(g, "matmul", "C").footprint_exact);
  EXPECT_EQ(write(g, "total", "s").bytes, 16);    // 4 zeros * 4 B
  EXPECT_EQ(write(g, "product", "p").bytes, 16);  // 4 ones * 4 B
  EXPECT_EQ(node(g, "total").counts.other_ops(), 0);
  // The domain stays the kernel's own: the einsum says what is computed.
  EXPECT_EQ(mm.einsum, "for i in 0..4, j in 0..5, k in 0..0: C[i, j] += A[i, k] * B[k, j]");
}

// An `=` kernel over an empty domain writes nothing: an elementwise op over a batch of 0 rows.
TEST(Lift, AnElementwiseKernelOverAnEmptyDomainMovesNoBytes) {
  const Graph g = lift_text(R"(size B = 0
input x : f32[B, 8]
output y : f32[B, 8]
kernel relu {
  for b in 0..B, j in 0..8:
    y[b, j] = max(x[b, j], 0.0)
}
)");
  EXPECT_EQ(node(g, "relu").points, 0);
  EXPECT_EQ(node(g, "relu").counts.other_ops(), 0);
  EXPECT_EQ(read(g, "relu", "x").bytes, 0);
  EXPECT_EQ(write(g, "relu", "y").bytes, 0);
}

TEST(Lift, BatchedGemmWithABroadcastWeightReadsTheWeightOnce) {
  const Graph g = lift_text(R"(size B = 4
size M = 8
size K = 16
size N = 32
input x : f32[B, M, K]
weight w : f32[K, N]
tensor wb : f32[B, K, N]
output y : f32[B, M, N]
wb = broadcast(w, dims=[1, 2])
kernel bmm {
  for b in 0..B, i in 0..M, j in 0..N, k in 0..K:
    y[b, i, j] += x[b, i, k] * wb[b, k, j]
}
)");
  ASSERT_EQ(node_names(g), std::vector<std::string>{"bmm"});  // the broadcast is a view
  const Node& n = g.nodes[0];
  EXPECT_EQ(n.einsum,
            "for b in 0..4, i in 0..8, j in 0..32, k in 0..16: y[b, i, j] += x[b, i, k] * w[k, j]");
  EXPECT_EQ(n.counts.macs, 16384);                // 4 * 8 * 32 * 16
  EXPECT_EQ(read(g, "bmm", "w").footprint, 512);  // 16 * 32 once, not 4 * 512
  EXPECT_EQ(read(g, "bmm", "w").bytes, 2048);
  EXPECT_EQ(read(g, "bmm", "x").bytes, 2048);   // 4 * 8 * 16 * 4
  EXPECT_EQ(write(g, "bmm", "y").bytes, 4096);  // 4 * 8 * 32 * 4
  EXPECT_EQ(touched_elements(g, "w"), 512);
}

TEST(Lift, GroupedConvolutionWithStrideReadsTheWindowImage) {
  // 2 groups of 2 input and 3 output channels, H = W = 8, 3x3 kernel, stride 2, no padding:
  // OH = (8 - 3) / 2 + 1 = 3. Rows read: 2*oh + r for oh in 0..3, r in 0..3 = {0..6}: 7 of the
  // 8 rows (row 7 is never read), and 7 of 8 columns.
  const Graph g = lift_text(R"(size G = 2
size CI = 2
size CO = 3
size H = 8
size R = 3
size OH = (H - R) / 2 + 1
input x : f32[1, G * CI, H, H]
weight w : f32[G * CO, CI, R, R]
output y : f32[1, G * CO, OH, OH]
kernel conv {
  for n in 0..1, g in 0..G, co in 0..CO, oh in 0..OH, ow in 0..OH, ci in 0..CI, r in 0..R, s in 0..R:
    y[n, CO*g + co, oh, ow] += x[n, CI*g + ci, 2*oh + r, 2*ow + s] * w[CO*g + co, ci, r, s]
}
)");
  const Node& n = node(g, "conv");
  EXPECT_EQ(n.counts.macs, 972);  // N*Cout*OH*OW*(Cin/G)*R*R = 1 * 6 * 3 * 3 * 2 * 3 * 3
  EXPECT_EQ(read(g, "conv", "x").footprint, 196);  // 1 * 4 channels * 7 rows * 7 columns
  EXPECT_EQ(read(g, "conv", "x").bytes, 784);
  EXPECT_TRUE(read(g, "conv", "x").footprint_exact);
  EXPECT_EQ(read(g, "conv", "w").footprint, 108);  // 6 * 2 * 3 * 3
  EXPECT_EQ(write(g, "conv", "y").footprint, 54);  // 6 * 3 * 3
  EXPECT_TRUE(n.conv_like);
  EXPECT_EQ(touched_elements(g, "x"), 196);  // of 4 * 8 * 8 = 256
}

TEST(Lift, DepthwiseConvolutionWithDilationAndPaddingByPad) {
  // C = 3, H = W = 9, padded by 1 on each side to 11x11 (a view: no movement node), 3x3 kernel
  // with stride 2 and dilation 2: OH = (11 - 5) / 2 + 1 = 4. Padded rows read: 2*oh + 2*r =
  // {0, 2, ..., 10}; in x's coordinates 2*oh + 2*r - 1 = {-1, 1, 3, 5, 7, 9}, of which {1, 3, 5,
  // 7} lie in 0..9: 4 rows, and 4 columns, of x's 9.
  const Graph g = lift_text(R"(size C = 3
size H = 9
size OH = (H + 2 - 5) / 2 + 1
input x : f32[1, C, H, H]
tensor xp : f32[1, C, H + 2, H + 2]
weight w : f32[C, 3, 3]
output y : f32[1, C, OH, OH]
xp = pad(x, lo=[0, 0, 1, 1], hi=[0, 0, 1, 1], value=0.0)
kernel dw {
  for n in 0..1, c in 0..C, oh in 0..OH, ow in 0..OH, r in 0..3, s in 0..3:
    y[n, c, oh, ow] += xp[n, c, 2*oh + 2*r, 2*ow + 2*s] * w[c, r, s]
}
)");
  ASSERT_EQ(node_names(g), std::vector<std::string>{"dw"});
  const Node& n = node(g, "dw");
  EXPECT_EQ(n.einsum,
            "for n in 0..1, c in 0..3, oh in 0..4, ow in 0..4, r in 0..3, s in 0..3: y[n, c, oh, "
            "ow] += x.or(0.0)[n, c, 2 * oh + 2 * r - 1, 2 * ow + 2 * s - 1] * w[c, r, s]");
  EXPECT_EQ(n.counts.macs, 432);  // 3 * 4 * 4 * 3 * 3, as when the pad moved data
  EXPECT_EQ(n.counts.other_ops(), 0);
  const Access& x = read(g, "dw", "x");
  EXPECT_EQ(x.text, "x.or(0.0)[n, c, 2 * oh + 2 * r - 1, 2 * ow + 2 * s - 1]");
  EXPECT_EQ(x.footprint, 48);  // 3 channels * 4 rows * 4 columns
  EXPECT_EQ(x.bytes, 192);     // not the 3 * 6 * 6 * 4 = 432 of the padded copy's rows
  EXPECT_TRUE(x.footprint_exact);
  ASSERT_EQ(x.maps.size(), 1u);
  EXPECT_TRUE(x.maps[0].guarded);
  EXPECT_EQ(x.maps[0].extent, (std::vector<int64_t>{1, 3, 9, 9}));  // x's own shape
  EXPECT_EQ(read(g, "dw", "w").footprint, 27);
  EXPECT_TRUE(n.conv_like);
  EXPECT_EQ(touched_elements(g, "x"), 48);  // of 3 * 9 * 9 = 243
}

TEST(Lift, APaddedReadOfATrillionRowsIsClippedWithoutListingItsRows) {
  // The hour fuzz run's reproducer (tests/python/models/cnn.py with 10^12 rows: std::bad_alloc
  // after 77 s and 16.7 GB): a 3x3 convolution with padding 1 over x : f32[1, 1, H, 4], H =
  // 10^12. The rows read, oh + r - 1 for oh in 0..H, r in 0..3, range over -1..H; in bounds, all
  // H rows; the columns ow + s - 1 for ow in 0..4, s in 0..3, all 4. So x is read whole: H * 4
  // = 4 * 10^12 elements, exactly, from arithmetic on the rows' progression (they were listed
  // one by one, 8 bytes each).
  const Graph g = lift_text(R"(size H = 1000000000000
input x : f32[1, 1, H, 4]
weight w : f32[3, 3]
output y : f32[1, 1, H, 4]
tensor xp : f32[1, 1, H + 2, 6]
xp = pad(x, lo=[0, 0, 1, 1], hi=[0, 0, 1, 1], value=0.0)
kernel conv {
  for oh in 0..H, ow in 0..4, r in 0..3, s in 0..3:
    y[0, 0, oh, ow] += xp[0, 0, oh + r, ow + s] * w[r, s]
}
)");
  const Access& x = read(g, "conv", "x");
  ASSERT_EQ(x.maps.size(), 1u);
  EXPECT_TRUE(x.maps[0].guarded);
  EXPECT_EQ(x.footprint, int64_t{4} * 1'000'000'000'000);
  EXPECT_TRUE(x.footprint_exact);
}

TEST(Lift, MaxPoolWithPaddingReadsOnlyTheInput) {
  // 2-D max pool, 3x3 window, stride 1, padding 1 (-inf) over x : f32[1, 1, 8, 8]: OH = OW =
  // (8 + 2 - 3) / 1 + 1 = 8. One einsum node and no movement node. Points 8 * 8 * 3 * 3 = 576;
  // `max=` is one compare per point: 576 simple ops, as for the padded copy. The rows read,
  // oh + kh - 1 for oh in 0..8, kh in 0..3, range over -1..8; in bounds 0..7: all 8 rows and 8
  // columns: 64 elements = 256 bytes, not the 10 x 10 x 4 = 400 bytes of the padded copy.
  const Graph g = lift_text(R"(input x : f32[1, 1, 8, 8]
tensor xp : f32[1, 1, 10, 10]
output y : f32[1, 1, 8, 8]
xp = pad(x, lo=[0, 0, 1, 1], hi=[0, 0, 1, 1], value=-inf)
kernel pool {
  for n in 0..1, c in 0..1, oh in 0..8, ow in 0..8, kh in 0..3, kw in 0..3:
    y[n, c, oh, ow] max= xp[n, c, oh + kh, ow + kw]
}
)");
  ASSERT_EQ(node_names(g), std::vector<std::string>{"pool"});
  const Node& n = g.nodes[0];
  EXPECT_EQ(n.einsum,
            "for n in 0..1, c in 0..1, oh in 0..8, ow in 0..8, kh in 0..3, kw in 0..3: y[n, c, oh, "
            "ow] max= x.or(-inf)[n, c, oh + kh - 1, ow + kw - 1]");
  EXPECT_EQ(n.points, 576);
  EXPECT_EQ(n.counts.macs, 0);
  EXPECT_EQ(n.counts.simple, 576);
  EXPECT_EQ(n.counts.special, 0);
  EXPECT_EQ(read(g, "pool", "x").footprint, 64);
  EXPECT_EQ(read(g, "pool", "x").bytes, 256);
  EXPECT_EQ(write(g, "pool", "y").footprint, 64);
  EXPECT_EQ(write(g, "pool", "y").bytes, 256);
  EXPECT_EQ(touched_elements(g, "x"), 64);
}

TEST(Lift, APadThatIsAGraphOutputMovesData) {
  // xp is an output: the padded copy is really written. Reads x's 8 x 8 = 64 elements (256
  // bytes), writes 10 x 10 = 100 (400 bytes).
  const Graph g = lift_text(R"(input x : f32[8, 8]
output xp : f32[10, 10]
xp = pad(x, lo=[1, 1], hi=[1, 1], value=0.0)
)");
  ASSERT_EQ(node_names(g), std::vector<std::string>{"pad:xp"});
  const Node& n = g.nodes[0];
  EXPECT_EQ(n.kind, NodeKind::Movement);
  EXPECT_EQ(n.points, 100);
  EXPECT_EQ(n.counts.flops(), 0);
  EXPECT_EQ(read(g, "pad:xp", "x").text, "x[d0, d1]");
  EXPECT_EQ(read(g, "pad:xp", "x").bytes, 256);
  EXPECT_EQ(write(g, "pad:xp", "xp").bytes, 400);
}

TEST(Lift, AReshapeOfAPaddedTensorMaterialisesIt) {
  // x [4, 4] padded by 1 to xp [6, 6], reshaped to [36]: strides cannot express it, so the
  // reshape is a movement node. It reads x through the padded view (16 elements, 64 bytes: the
  // guard skips the 20 padding positions) and writes r's 36 elements (144 bytes); the kernel then
  // reads r whole (144 bytes). No pad node.
  const Graph g = lift_text(R"(input x : f32[4, 4]
tensor xp : f32[6, 6]
tensor r : f32[36]
output y : f32[36]
xp = pad(x, lo=[1, 1], hi=[1, 1], value=0.0)
r = reshape(xp)
kernel k {
  for i in 0..36:
    y[i] = r[i] * 2.0
}
)");
  ASSERT_EQ(node_names(g), (std::vector<std::string>{"reshape:r", "k"}));
  EXPECT_EQ(read(g, "reshape:r", "x").text, "x.or(0.0)[d0 - 1, d1 - 1]");
  EXPECT_EQ(read(g, "reshape:r", "x").footprint, 16);
  EXPECT_EQ(read(g, "reshape:r", "x").bytes, 64);
  EXPECT_EQ(write(g, "reshape:r", "r").bytes, 144);
  EXPECT_EQ(read(g, "k", "r").bytes, 144);
  EXPECT_EQ(node(g, "k").einsum, "for i in 0..36: y[i] = r[i] * 2.0");
}

TEST(Lift, SlicesOfAPaddedViewStayPadded) {
  // x [8] padded by 2 on each side: xp [12], xp[p] = x[p - 2] for p in 2..10, else 0.
  //   a = xp[1:7]: a[i] = xp[i + 1] = x[i - 1] for i in 1..6 (x[0..4], 5 elements, 20 bytes);
  //     the valid positions are not all of x, so the text spells the guard on a's index.
  //   b = xp[0:12:3]: b[i] = xp[3i], valid where 2 <= 3i < 10: i in 1..4, x[3i - 2] = x[1], x[4],
  //     x[7] (3 elements, 12 bytes).
  //   c = xp[2:10] is exactly x: a plain view, read unguarded (8 elements, 32 bytes).
  const Graph g = lift_text(R"(input x : f32[8]
tensor xp : f32[12]
tensor a : f32[6]
tensor b : f32[4]
tensor c : f32[8]
output ya : f32[6]
output yb : f32[4]
output yc : f32[8]
xp = pad(x, lo=[2], hi=[2], value=0.0)
a = xp[1:7]
b = xp[0:12:3]
c = xp[2:10]
kernel ka {
  for i in 0..6:
    ya[i] = a[i]
}
kernel kb {
  for i in 0..4:
    yb[i] = b[i]
}
kernel kc {
  for i in 0..8:
    yc[i] = c[i]
}
)");
  ASSERT_EQ(node_names(g), (std::vector<std::string>{"ka", "kb", "kc"}));
  EXPECT_EQ(node(g, "ka").einsum, "for i in 0..6: ya[i] = x.or(0.0, 1 <= i < 6)[i - 1]");
  EXPECT_EQ(read(g, "ka", "x").footprint, 5);
  EXPECT_EQ(read(g, "ka", "x").bytes, 20);
  EXPECT_EQ(read(g, "kb", "x").text, "x.or(0.0, 1 <= i < 4)[3 * i - 2]");
  EXPECT_EQ(read(g, "kb", "x").footprint, 3);
  EXPECT_EQ(read(g, "kb", "x").bytes, 12);
  EXPECT_EQ(read(g, "kc", "x").text, "x[i]");
  EXPECT_FALSE(read(g, "kc", "x").maps[0].guarded);
  EXPECT_EQ(read(g, "kc", "x").bytes, 32);
  EXPECT_EQ(touched_elements(g, "x"), 8);  // a, b and c together touch all of x
}

TEST(Lift, PermutesBroadcastsAndPadsOfAPaddedView) {
  // x [2, 3] padded by 1 on both sides of dim 1: xp [2, 5], xp[i, j] = x[i, j - 1].
  //   t = permute(xp, [1, 0]): t[j, i] = x[i, j - 1]: the 6 elements of x (24 bytes).
  //   bb = broadcast(xp, dims=[1, 2]) [4, 2, 5]: bb[b, i, j] = x[i, j - 1], x read once.
  //   p2 = pad(xp, lo=[0, 0], hi=[0, 2], value=0.0) [2, 7]: the same value composes, p2[i, j] =
  //     x[i, j - 1] for j in 1..4.
  //   p3 = pad(xp, ..., value=1.0): another value: a movement node reading x (24 bytes) and
  //     writing p3's 2 x 7 = 14 elements (56 bytes); k3 reads p3 whole (56 bytes).
  const Graph g = lift_text(R"(input x : f32[2, 3]
tensor xp : f32[2, 5]
tensor t : f32[5, 2]
tensor bb : f32[4, 2, 5]
tensor p2 : f32[2, 7]
tensor p3 : f32[2, 7]
output yt : f32[5, 2]
output yb : f32[4, 2, 5]
output y2 : f32[2, 7]
output y3 : f32[2, 7]
xp = pad(x, lo=[0, 1], hi=[0, 1], value=0.0)
t = permute(xp, [1, 0])
bb = broadcast(xp, dims=[1, 2])
p2 = pad(xp, lo=[0, 0], hi=[0, 2], value=0.0)
p3 = pad(xp, lo=[0, 0], hi=[0, 2], value=1.0)
kernel kt {
  for j in 0..5, i in 0..2:
    yt[j, i] = t[j, i]
}
kernel kbb {
  for b in 0..4, i in 0..2, j in 0..5:
    yb[b, i, j] = bb[b, i, j]
}
kernel k2 {
  for i in 0..2, j in 0..7:
    y2[i, j] = p2[i, j]
}
kernel k3 {
  for i in 0..2, j in 0..7:
    y3[i, j] = p3[i, j]
}
)");
  ASSERT_EQ(node_names(g), (std::vector<std::string>{"pad:p3", "kt", "kbb", "k2", "k3"}));
  EXPECT_EQ(read(g, "kt", "x").text, "x.or(0.0)[i, j - 1]");
  EXPECT_EQ(read(g, "kt", "x").bytes, 24);
  EXPECT_EQ(read(g, "kbb", "x").text, "x.or(0.0)[i, j - 1]");
  EXPECT_EQ(read(g, "kbb", "x").bytes, 24);
  EXPECT_EQ(read(g, "k2", "x").text, "x.or(0.0)[i, j - 1]");
  EXPECT_EQ(read(g, "k2", "x").bytes, 24);
  EXPECT_EQ(read(g, "pad:p3", "x").text, "x.or(0.0)[d0, d1 - 1]");
  EXPECT_EQ(read(g, "pad:p3", "x").bytes, 24);
  EXPECT_EQ(write(g, "pad:p3", "p3").bytes, 56);
  EXPECT_EQ(read(g, "k3", "p3").bytes, 56);
}

TEST(Lift, ASingleIndexInThePaddingReadsNothing) {
  // xp = pad(x [2, 3], lo=[1, 0]) [3, 3]: row 0 is all padding, so r = xp[0] reads no element
  // of x (0 bytes); s = xp[2] is x's row 1 (3 elements, 12 bytes).
  const Graph g = lift_text(R"(input x : f32[2, 3]
tensor xp : f32[3, 3]
tensor r : f32[3]
tensor s : f32[3]
output y : f32[3]
xp = pad(x, lo=[1, 0], hi=[0, 0], value=0.0)
r = xp[0]
s = xp[2]
kernel k {
  for j in 0..3:
    y[j] = r[j] + s[j]
}
)");
  ASSERT_EQ(node_names(g), std::vector<std::string>{"k"});
  const Access& x = read(g, "k", "x");
  EXPECT_EQ(x.text, "x.or(0.0, 0 <= j < 0)[0, 0], x[1, j]");
  EXPECT_EQ(x.footprint, 3);
  EXPECT_EQ(x.bytes, 12);
  EXPECT_EQ(node(g, "k").counts.simple, 3);  // one add per point, the guard costs nothing
}

TEST(Lift, DepthwiseConvolutionWithPaddingBySelectCountsInBoundsRows) {
  // Padding 1 written as a guarded read, stride 2, dilation 2, H = W = 8: OH = (8 + 2 - 5) / 2 +
  // 1 = 3. Row index 2*oh + 2*r - 1 for oh, r in 0..3 is {-1, 1, 3, 5, 7}; in bounds: {1, 3, 5,
  // 7}, 4 of 8 rows, and 4 of 8 columns.
  const Graph g = lift_text(R"(size C = 3
size H = 8
size OH = (H + 2 - 5) / 2 + 1
input x : f32[1, C, H, H]
weight w : f32[C, 3, 3]
output y : f32[1, C, OH, OH]
kernel dw {
  for n in 0..1, c in 0..C, oh in 0..OH, ow in 0..OH, r in 0..3, s in 0..3:
    y[n, c, oh, ow] += select(2*oh + 2*r - 1 >= 0 && 2*ow + 2*s - 1 >= 0, x[n, c, 2*oh + 2*r - 1, 2*ow + 2*s - 1], 0.0) * w[c, r, s]
}
)");
  const Node& n = node(g, "dw");
  EXPECT_EQ(n.points, 243);       // 3 * 3 * 3 * 3 * 3
  EXPECT_EQ(n.counts.macs, 243);  // a top-level product under +=
  // Per point: each comparison `2*oh + 2*r - 1 >= 0` is 2 mul + add + sub + compare = 5 simple;
  // two of them, `&&` and the select: 5 + 5 + 1 + 1 = 12; the branches (a read, a constant)
  // cost nothing. 12 * 243 = 2916.
  EXPECT_EQ(n.counts.simple, 2916);
  EXPECT_EQ(n.counts.special, 0);
  EXPECT_EQ(read(g, "dw", "x").footprint, 48);  // 3 channels * 4 rows * 4 columns
  EXPECT_TRUE(read(g, "dw", "x").footprint_exact);
  EXPECT_EQ(touched_elements(g, "x"), 48);  // of 3 * 8 * 8 = 192
}

TEST(Lift, Conv3d) {
  // 2 -> 4 channels, 6x6x6 input, 3x3x3 kernel, stride 1: 4x4x4 output.
  const Graph g = lift_text(R"(input x : f32[1, 2, 6, 6, 6]
weight w : f32[4, 2, 3, 3, 3]
output y : f32[1, 4, 4, 4, 4]
kernel conv3d {
  for n in 0..1, k in 0..4, od in 0..4, oh in 0..4, ow in 0..4, c in 0..2, a in 0..3, b in 0..3, e in 0..3:
    y[n, k, od, oh, ow] += x[n, c, od + a, oh + b, ow + e] * w[k, c, a, b, e]
}
)");
  const Node& n = node(g, "conv3d");
  EXPECT_EQ(n.counts.macs, 13824);                 // 4 * 64 outputs * 2 * 27
  EXPECT_EQ(read(g, "conv3d", "x").bytes, 1728);   // every element: 2 * 216 * 4
  EXPECT_EQ(read(g, "conv3d", "w").bytes, 864);    // 4 * 2 * 27 * 4
  EXPECT_EQ(write(g, "conv3d", "y").bytes, 1024);  // 4 * 64 * 4
  EXPECT_TRUE(n.conv_like);
}

TEST(Lift, TransposedConvolution) {
  // Stride 2, 3x3 kernel, 3x3 input, no padding: output (3 - 1) * 2 + 3 = 7 per side; each input
  // pixel scatters a 3x3 window. Output rows written: 2*ih + kh = {0..6}, all 7.
  const Graph g = lift_text(R"(input x : f32[1, 2, 3, 3]
weight w : f32[2, 4, 3, 3]
output y : f32[1, 4, 7, 7]
kernel convt {
  for n in 0..1, co in 0..4, ih in 0..3, iw in 0..3, kh in 0..3, kw in 0..3, ci in 0..2:
    y[n, co, 2*ih + kh, 2*iw + kw] += x[n, ci, ih, iw] * w[ci, co, kh, kw]
}
)");
  const Node& n = node(g, "convt");
  EXPECT_EQ(n.counts.macs, 648);                     // 4 * 3 * 3 * 3 * 3 * 2
  EXPECT_EQ(write(g, "convt", "y").footprint, 196);  // 4 * 7 * 7, all of y
  EXPECT_EQ(read(g, "convt", "x").footprint, 18);    // 2 * 3 * 3
  EXPECT_EQ(read(g, "convt", "w").footprint, 72);    // 2 * 4 * 3 * 3
  EXPECT_TRUE(n.conv_like);  // the output index 2*ih + kh combines two loops
}

TEST(Lift, CausalAttentionCountsTheTriangle) {
  const Graph g = lift_text(R"(size T = 16
size D = 8
input q : f32[T, D]
input k : f32[T, D]
input v : f32[T, D]
tensor s : f32[T, T]
output o : f32[T, D]
kernel scores {
  for i in 0..T, j in 0..i+1, d in 0..D:
    s[i, j] += q[i, d] * k[j, d]
}
kernel pv {
  for i in 0..T, d in 0..D, j in 0..i+1:
    o[i, d] += s[i, j] * v[j, d]
}
)");
  // T(T+1)/2 = 16 * 17 / 2 = 136 pairs (i, j), times D = 8: 1088 MACs each.
  EXPECT_EQ(node(g, "scores").points, 1088);
  EXPECT_EQ(node(g, "scores").counts.macs, 1088);
  EXPECT_EQ(node(g, "pv").counts.macs, 1088);
  EXPECT_EQ(write(g, "scores", "s").footprint, 136);  // the triangle, not 256
  EXPECT_EQ(read(g, "pv", "s").footprint, 136);
  EXPECT_EQ(read(g, "scores", "k").footprint, 128);  // all T rows of k: 16 * 8
  EXPECT_EQ(read(g, "pv", "v").footprint, 128);
  EXPECT_EQ(node(g, "scores").einsum,
            "for i in 0..16, j in 0..i + 1, d in 0..8: s[i, j] += q[i, d] * k[j, d]");
  // At T = 4096, D = 64: 4096 * 4097 / 2 = 8390656 pairs; * 64 = 537001984 MACs.
  const Graph big = lift_text(
      "size T = 16\nsize D = 8\ninput q : f32[T, D]\ninput k : f32[T, D]\noutput s : f32[T, T]\n"
      "kernel scores {\n  for i in 0..T, j in 0..i+1, d in 0..D:\n    s[i, j] += q[i, d] * k[j, "
      "d]\n}\n",
      {{"T", 4096}, {"D", 64}});
  EXPECT_EQ(big.nodes[0].counts.macs, 537001984);
  EXPECT_EQ(write(big, "scores", "s").footprint, 8390656);
  EXPECT_EQ(touched_elements(big, "s"), 8390656);
}

TEST(Lift, SoftmaxOperationCounts) {
  // N = 4 rows of M = 6: |D| = 24 points in each kernel.
  const Graph g = lift_text(R"(input x : f32[4, 6]
tensor m : f32[4]
tensor s : f32[4]
output y : f32[4, 6]
kernel rowmax {
  for i in 0..4, j in 0..6:
    m[i] max= x[i, j]
}
kernel expsum {
  for i in 0..4, j in 0..6:
    s[i] += exp(x[i, j] - m[i])
}
kernel divide {
  for i in 0..4, j in 0..6:
    y[i, j] = exp(x[i, j] - m[i]) / s[i]
}
)");
  // max= of a plain read: one compare per point.
  EXPECT_EQ(node(g, "rowmax").counts.simple, 24);
  EXPECT_EQ(node(g, "rowmax").counts.special, 0);
  EXPECT_EQ(node(g, "rowmax").reduction, Reduction::Max);
  // exp(x - m) summed: per point 1 sub + 1 add (the combine) simple, 1 exp special.
  EXPECT_EQ(node(g, "expsum").counts.simple, 48);
  EXPECT_EQ(node(g, "expsum").counts.special, 24);
  EXPECT_EQ(node(g, "expsum").counts.macs, 0);  // not a product
  // exp(x - m) / s: 1 sub simple; exp and div special.
  EXPECT_EQ(node(g, "divide").counts.simple, 24);
  EXPECT_EQ(node(g, "divide").counts.special, 48);
  EXPECT_EQ(node(g, "divide").counts.flops(), 72);
  EXPECT_EQ(node(g, "divide").reduction, Reduction::None);
  // Bytes: x 4 * 6 * 4 = 96, m and s 4 * 4 = 16 each.
  EXPECT_EQ(node(g, "rowmax").bytes_read(), 96);
  EXPECT_EQ(node(g, "rowmax").bytes_written(), 16);
  EXPECT_EQ(node(g, "expsum").bytes_read(), 112);  // x + m
  EXPECT_EQ(node(g, "divide").bytes_read(), 128);  // x + m + s
  EXPECT_EQ(node(g, "divide").bytes_written(), 96);
}

TEST(Lift, LayerNorm) {
  // N = 4 rows of D = 8: 32 points per row-wise kernel.
  const Graph g = lift_text(R"(input x : f32[4, 8]
weight gamma : f32[8]
weight beta : f32[8]
tensor sum : f32[4]
tensor mu : f32[4]
tensor var : f32[4]
output y : f32[4, 8]
kernel total {
  for i in 0..4, d in 0..8:
    sum[i] += x[i, d]
}
kernel mean {
  for i in 0..4:
    mu[i] = sum[i] / 8.0
}
kernel variance {
  for i in 0..4, d in 0..8:
    var[i] += (x[i, d] - mu[i]) * (x[i, d] - mu[i])
}
kernel norm {
  for i in 0..4, d in 0..8:
    y[i, d] = (x[i, d] - mu[i]) * rsqrt(var[i] / 8.0 + 1e-05) * gamma[d] + beta[d]
}
)");
  EXPECT_EQ(node(g, "total").counts.simple, 32);     // the combine only
  EXPECT_EQ(node(g, "mean").counts.special, 4);      // one division per row
  EXPECT_EQ(node(g, "variance").counts.macs, 32);    // a product of two operands under +=
  EXPECT_EQ(node(g, "variance").counts.simple, 64);  // the two subtractions
  // norm per point: sub, add, two muls, final add = 5 simple; div and rsqrt = 2 special.
  EXPECT_EQ(node(g, "norm").counts.simple, 160);
  EXPECT_EQ(node(g, "norm").counts.special, 64);
  EXPECT_EQ(read(g, "norm", "x").bytes, 128);  // read twice in the text, counted once
  EXPECT_EQ(node(g, "norm").bytes_read(), 128 + 16 + 16 + 32 + 32);  // x, mu, var, gamma, beta
}

TEST(Lift, MlpChainBytesPerNode) {
  // y = relu(x @ W1 + b1) @ W2 with x [4, 8], W1 [8, 16], W2 [16, 8].
  const Graph g = lift_text(R"(input x : f32[4, 8]
weight W1 : f32[8, 16]
weight b1 : f32[16]
weight W2 : f32[16, 8]
tensor h0 : f32[4, 16]
tensor h : f32[4, 16]
output y : f32[4, 8]
kernel mm1 {
  for i in 0..4, j in 0..16, k in 0..8:
    h0[i, j] += x[i, k] * W1[k, j]
}
kernel bias_relu {
  for i in 0..4, j in 0..16:
    h[i, j] = max(h0[i, j] + b1[j], 0.0)
}
kernel mm2 {
  for i in 0..4, j in 0..8, k in 0..16:
    y[i, j] += h[i, k] * W2[k, j]
}
)");
  EXPECT_EQ(node(g, "mm1").counts.macs, 512);              // 4 * 16 * 8
  EXPECT_EQ(node(g, "mm1").bytes_read(), 128 + 512);       // x 4*8*4, W1 8*16*4
  EXPECT_EQ(node(g, "mm1").bytes_written(), 256);          // h0 4*16*4
  EXPECT_EQ(node(g, "bias_relu").counts.simple, 128);      // add and max on 64 points
  EXPECT_EQ(node(g, "bias_relu").bytes_read(), 256 + 64);  // h0, b1 16*4
  EXPECT_EQ(node(g, "bias_relu").bytes_written(), 256);    // h
  EXPECT_EQ(node(g, "mm2").counts.macs, 512);              // 4 * 8 * 16
  EXPECT_EQ(node(g, "mm2").bytes_read(), 256 + 512);       // h, W2 16*8*4
  EXPECT_EQ(node(g, "mm2").bytes_written(), 128);          // y 4*8*4
  // Inputs, weights and outputs, each touched once: 32 + 128 + 16 + 128 + 32 elements.
  int64_t io = 0;
  for (const char* t : {"x", "W1", "b1", "W2", "y"}) io += touched_elements(g, t) * 4;
  EXPECT_EQ(io, 1344);
}

TEST(Lift, StackOfSlicesReadsEachSliceOnce) {
  // N = 4 slices of 3x5 in one stacked tensor, one kernel per slice (repeat unrolled); each
  // slice is a view: each node reads its own 15 elements, and the stack is read once in all.
  const Graph g = lift_text(R"(input stacked : f32[4, 3, 5]
tensor sl : f32[3, 5]
output out : f32[4, 5]
repeat t in 0..4 {
  sl = stacked[t]
  kernel colsum {
    for c in 0..5, r in 0..3:
      out[t, c] += sl[r, c]
  }
}
)");
  ASSERT_EQ(node_names(g),
            (std::vector<std::string>{"colsum[t=0]", "colsum[t=1]", "colsum[t=2]", "colsum[t=3]"}));
  EXPECT_EQ(node(g, "colsum[t=2]").einsum,
            "for c in 0..5, r in 0..3: out[2, c] += stacked[2, r, c]");
  for (const Node& n : g.nodes) {
    EXPECT_EQ(access(n.reads, "stacked").bytes, 60);  // 3 * 5 * 4
    EXPECT_EQ(n.counts.simple, 15);                   // the combine
  }
  EXPECT_EQ(touched_elements(g, "stacked"), 60);  // 4 disjoint slices of 15
  EXPECT_EQ(touched_elements(g, "out"), 20);
}

TEST(Lift, ViewsFoldIntoOneStorage) {
  // q and k are column slices of one qkv tensor, split into heads and permuted: all views, so
  // the kernel reads qkv directly. The two maps of qkv are disjoint: 2 * 2 * 4 * 6 = 96 of 144.
  const Graph g = lift_text(R"(input qkv : f32[2, 4, 18]
tensor q : f32[2, 4, 6]
tensor k : f32[2, 4, 6]
tensor q4 : f32[2, 4, 2, 3]
tensor k4 : f32[2, 4, 2, 3]
tensor qh : f32[2, 2, 4, 3]
tensor kh : f32[2, 2, 4, 3]
output s : f32[2, 2, 4, 4]
q = qkv[:, :, 0:6]
k = qkv[:, :, 6:12]
q4 = reshape(q)
k4 = reshape(k)
qh = permute(q4, [0, 2, 1, 3])
kh = permute(k4, [0, 2, 1, 3])
kernel scores {
  for b in 0..2, h in 0..2, i in 0..4, j in 0..4, d in 0..3:
    s[b, h, i, j] += qh[b, h, i, d] * kh[b, h, j, d]
}
)");
  ASSERT_EQ(g.nodes.size(), 1u);
  const Access& a = read(g, "scores", "qkv");
  EXPECT_EQ(a.text, "qkv[b, i, 3 * h + d], qkv[b, j, 3 * h + d + 6]");
  EXPECT_EQ(a.maps.size(), 2u);
  EXPECT_EQ(a.footprint, 96);
  EXPECT_FALSE(g.nodes[0].conv_like);  // the indices as written (qh, kh) use one loop each
}

TEST(Lift, ViewsThatMustMoveData) {
  // A permute whose result is a graph output, and a reshape of a permuted (non-contiguous) view,
  // are movement nodes; the reshape reads x through the permute.
  const Graph g = lift_text(R"(input x : f32[2, 3]
tensor xt : f32[3, 2]
tensor flat : f32[6]
output xo : f32[3, 2]
output y : f32[6]
xt = permute(x, [1, 0])
xo = permute(x, [1, 0])
flat = reshape(xt)
kernel k {
  for i in 0..6:
    y[i] = flat[i] * 2.0
}
)");
  ASSERT_EQ(node_names(g), (std::vector<std::string>{"permute:xo", "reshape:flat", "k"}));
  EXPECT_EQ(read(g, "reshape:flat", "x").text, "x[d1, d0]");
  EXPECT_EQ(read(g, "reshape:flat", "x").bytes, 24);
  EXPECT_EQ(write(g, "reshape:flat", "flat").bytes, 24);
  EXPECT_EQ(node(g, "k").einsum, "for i in 0..6: y[i] = flat[i] * 2.0");
}

TEST(Lift, AReshapeOfAnIntermediateIntoAnOutputIsAnAlias) {
  // instance_norm's shape: a kernel writes t [1, 6] (6 f32 = 24 B), the output y [2, 3] is a
  // reshape of it. No copy: the kernel's write counts y's 6 elements (24 B), a later kernel
  // reading t reads y, and y is touched once (24 B written).
  const Graph g = lift_text(R"(input x : f32[1, 6]
tensor t : f32[1, 6]
output y : f32[2, 3]
output z : f32[1, 6]
kernel twice {
  for i in 0..1, j in 0..6:
    t[i, j] = x[i, j] * 2.0
}
y = reshape(t)
kernel again {
  for i in 0..1, j in 0..6:
    z[i, j] = t[i, j] + 1.0
}
)");
  ASSERT_EQ(node_names(g), (std::vector<std::string>{"twice", "again"}));
  EXPECT_EQ(write(g, "twice", "y").bytes, 24);
  EXPECT_EQ(read(g, "again", "y").bytes, 24);
  EXPECT_EQ(touched_elements(g, "y"), 6);
}

TEST(Lift, AnOutputViewThatCannotAliasIsCopied) {
  // A permute is not the intermediate's own order, and an input cannot be written by its
  // producer: both copy (movement nodes, as before).
  const Graph g = lift_text(R"(input x : f32[2, 3]
tensor t : f32[2, 3]
output y : f32[3, 2]
output z : f32[6]
kernel twice {
  for i in 0..2, j in 0..3:
    t[i, j] = x[i, j] * 2.0
}
y = permute(t, [1, 0])
z = reshape(x)
)");
  ASSERT_EQ(node_names(g), (std::vector<std::string>{"twice", "permute:y", "reshape:z"}));
}

TEST(Lift, NodesRecordTheirOpBlock) {
  const Graph g = lift_text(R"(input x : f32[4]
tensor t : f32[4]
output y : f32[4]
op gelu {
  kernel a {
    for i in 0..4:
      t[i] = x[i] * 0.5
  }
  kernel b {
    for i in 0..4:
      y[i] = t[i] + 1.0
  }
}
)");
  ASSERT_EQ(g.nodes.size(), 2u);
  EXPECT_EQ(g.nodes[0].op_block, "gelu");
  EXPECT_EQ(g.nodes[1].op_block, "gelu");
  EXPECT_NE(print_graph(g).find("node a (einsum) in op gelu\n"), std::string::npos);
}

TEST(Lift, ReshapeOfAContiguousSliceFoldsToFlatOffsets) {
  // Rows 1..3 of x [4, 6] are contiguous: reshaped to [12], element i is x.flat[i + 6].
  const Graph g = lift_text(R"(input x : f32[4, 6]
tensor rows : f32[2, 6]
tensor v : f32[12]
output y : f32[12]
rows = x[1:3]
v = reshape(rows)
kernel k {
  for i in 0..12:
    y[i] = v[i]
}
)");
  ASSERT_EQ(g.nodes.size(), 1u);
  EXPECT_EQ(read(g, "k", "x").text, "x.flat[i + 6]");
  EXPECT_EQ(read(g, "k", "x").footprint, 12);
}

TEST(Lift, AViewOfATensorOverwrittenWhileStillReadIsMaterialised) {
  const std::string head = R"(input x : f32[4]
tensor t : f32[4]
tensor v : f32[4]
output y : f32[4]
kernel k1 {
  for i in 0..4:
    t[i] = x[i] * 2.0
}
v = t
)";
  const std::string tail = R"(kernel k3 {
  for i in 0..4:
    y[i] = v[i] + t[i]
}
)";
  // t is overwritten by k2 before v is read: v must hold its own copy.
  const Graph moved =
      lift_text(head + "kernel k2 {\n  for i in 0..4:\n    t[i] = x[i] + 1.0\n}\n" + tail);
  EXPECT_EQ(node_names(moved), (std::vector<std::string>{"k1", "copy:v", "k2", "k3"}));
  EXPECT_EQ(node(moved, "k3").reads.size(), 2u);  // v and t
  // Without k2, v is t: k3 reads t by one map, 16 bytes.
  const Graph folded = lift_text(head + tail);
  EXPECT_EQ(node_names(folded), (std::vector<std::string>{"k1", "k3"}));
  EXPECT_EQ(node(folded, "k3").einsum, "for i in 0..4: y[i] = t[i] + t[i]");
  EXPECT_EQ(node(folded, "k3").bytes_read(), 16);
}

TEST(Lift, ConcatAndCopiesAreMovement) {
  const Graph g = lift_text(R"(input a : f32[2, 3]
input b : f32[2, 5]
output cat : f32[2, 8]
output half : bf16[2, 3]
output part : f32[2, 8]
cat = concat(a, b, dim=1)
half = a
part[:, 0:3] = a
)");
  ASSERT_EQ(node_names(g), (std::vector<std::string>{"concat:cat", "copy:half", "copy:part"}));
  const Node& c = node(g, "concat:cat");
  EXPECT_EQ(c.kind, NodeKind::Movement);
  EXPECT_EQ(c.points, 16);  // 2 * 8 elements moved
  EXPECT_EQ(c.counts.flops(), 0);
  EXPECT_EQ(c.bytes_read(), 24 + 40);                  // a 2*3*4, b 2*5*4
  EXPECT_EQ(write(g, "concat:cat", "cat").bytes, 64);  // 2 * 8 * 4, both parts
  EXPECT_EQ(write(g, "concat:cat", "cat").text, "cat[d0, d1], cat[d0, d1 + 3]");
  EXPECT_EQ(write(g, "copy:half", "half").bytes, 12);  // 6 bf16 elements
  EXPECT_EQ(node(g, "copy:half").compute_dtype, ir::DType::F32);
  EXPECT_EQ(write(g, "copy:part", "part").footprint, 6);  // the region only
  EXPECT_EQ(write(g, "copy:part", "part").text, "part[d0, d1]");
  EXPECT_EQ(touched_elements(g, "part"), 6);
}

TEST(Lift, ConcatOfSlicesOfOneTensorReadsTheSlices) {
  // Rows 0..2 and 4..6 of x [8, 3], concatenated: 12 elements of x read, in two disjoint maps.
  const Graph g = lift_text(R"(input x : f32[8, 3]
tensor lo : f32[2, 3]
tensor hi : f32[2, 3]
output y : f32[4, 3]
lo = x[0:2]
hi = x[4:6]
y = concat(lo, hi, dim=0)
)");
  EXPECT_EQ(read(g, "concat:y", "x").text, "x[d0, d1], x[d0 + 4, d1]");
  EXPECT_EQ(read(g, "concat:y", "x").footprint, 12);
  EXPECT_EQ(touched_elements(g, "x"), 12);
}

TEST(Lift, TakeOfAnEmbeddingReadsTheIndicesAndOneRowPerIndex) {
  // ids [2, 3] of i64 pick rows of a [10, 4] table: reads ids (6 * 8 = 48 bytes) and 6 rows
  // (6 * 4 * 4 = 96 bytes), writes emb [2, 3, 4] (96 bytes).
  const Graph g = lift_text(R"(input ids : i64[2, 3]
weight table : f32[10, 4]
output emb : f32[2, 3, 4]
emb = take(table, ids, dim=0)
)");
  const Node& n = node(g, "take:emb");
  EXPECT_EQ(n.kind, NodeKind::Movement);
  EXPECT_EQ(read(g, "take:emb", "ids").bytes, 48);
  EXPECT_EQ(read(g, "take:emb", "table").bytes, 96);
  EXPECT_EQ(read(g, "take:emb", "table").text, "table[ids[d0, d1], d2]");
  EXPECT_TRUE(read(g, "take:emb", "table").maps[0].data_dependent);
  EXPECT_EQ(write(g, "take:emb", "emb").bytes, 96);
  EXPECT_EQ(touched_elements(g, "table"), 24);  // 6 rows of 4, of 40
}

TEST(Lift, GatherAndScatter) {
  const Graph g = lift_text(R"(input x : f32[4, 6]
input idx : i64[4, 2]
input src : f32[4, 3]
tensor acc : f32[4, 6]
output picked : f32[4, 2]
output y : f32[4, 6]
output z : f32[4, 6]
picked = gather(x, idx, dim=1)
acc = x
acc = scatter(acc, idx, src, dim=1, reduce=add)
y = scatter(x, idx, src, dim=1)
kernel use {
  for i in 0..4, j in 0..6:
    z[i, j] = acc[i, j] + 1.0
}
)");
  // (`use` reads acc into an output, so the scatter is live: a value that reaches no output is
  // dead code, removed by the lift; docs/einsum.md, "Dead code".)
  // gather: idx (8 * 8 bytes), one x element per output (8 * 4), writes picked (8 * 4).
  EXPECT_EQ(read(g, "gather:picked", "idx").bytes, 64);
  EXPECT_EQ(read(g, "gather:picked", "x").bytes, 32);
  EXPECT_EQ(read(g, "gather:picked", "x").text, "x[d0, idx[d0, d1]]");
  // acc = x is a view of x, so `acc = scatter(acc, ...)` is not in place: x is copied (24 * 4
  // bytes), idx read (64 bytes), and src at idx's 4x2 positions (8 * 4 = 32 bytes).
  EXPECT_EQ(node(g, "scatter:acc").bytes_read(), 96 + 64 + 32);
  EXPECT_EQ(node(g, "scatter:acc").bytes_written(), 96);
  EXPECT_EQ(read(g, "scatter:acc", "src").text, "src[d0, d1]");
  EXPECT_EQ(node(g, "scatter:y").bytes_written(), 96);
}

TEST(Lift, ScatterInPlaceMovesOnlyTheUpdates) {
  const Graph g = lift_text(R"(input idx : i64[4, 2]
input src : f32[4, 3]
output acc : f32[4, 6]
kernel zero {
  for i in 0..4, j in 0..6:
    acc[i, j] = 0.0
}
acc = scatter(acc, idx, src, dim=1, reduce=add)
)");
  // In place with reduce=add: reads idx (64 bytes), src at 8 positions (32 bytes) and the 8
  // updated elements of acc (32 bytes); writes those 8 (32 bytes).
  const Node& n = node(g, "scatter:acc");
  EXPECT_EQ(n.points, 8);
  EXPECT_EQ(n.bytes_read(), 64 + 32 + 32);
  EXPECT_EQ(n.bytes_written(), 32);
  EXPECT_EQ(write(g, "scatter:acc", "acc").text, "acc[d0, idx[d0, d1]]");
}

// An in-place update read afterwards, as a capture writes `cache[:, 3] = k; cache.sum()` and
// `cache.index_copy_(1, idx, v); cache.sum()` (docs/einsum.md, "In-place updates of inputs"):
// the output `*_written`, a copy of the values written, is the record of the in-place write,
// a relabelling that the unfused model charges nothing; a copy of values no in-place write
// reads stays a kernel.
TEST(Lift, TheRecordOfAnInPlaceWriteIsARelabelling) {
  const Graph g = lift_text(R"(input cache : f32[4, 64]
input k : f32[4]
input state : f32[4, 8]
input idx : i64[4, 2]
input v : f32[4, 2]
input other : f32[4]
tensor s : f32[4, 64]
tensor t : f32[4, 8]
output cache_written : f32[4]
output state_written : f32[4, 2]
output other_copy : f32[4]
output total : f32[]
s = cache
s[:, 3] = k
t = scatter(state, idx, v, dim=1)
kernel cache_written_copy {
  for i in 0..4:
    cache_written[i] = k[i]
}
kernel state_written_copy {
  for i in 0..4, j in 0..2:
    state_written[i, j] = v[i, j]
}
kernel other_copy_copy {
  for i in 0..4:
    other_copy[i] = other[i]
}
kernel sum {
  for i in 0..4, j in 0..64, c in 0..8:
    total[] += s[i, j] + t[i, c]
}
)");
  // The region copy reads k 4 f32 (16 B) and writes 16 B of the cache in place; its record
  // moves the same 16 + 16 B as a kernel, and nothing as a relabelling.
  EXPECT_EQ(node(g, "copy:s").bytes_read(), 16);
  EXPECT_EQ(write(g, "copy:s", "cache").bytes, 16);
  EXPECT_EQ(node(g, "cache_written_copy").bytes_read(), 16);
  EXPECT_TRUE(node(g, "cache_written_copy").relabel);
  // The scatter reads idx 8 x 8 = 64 B and v 8 f32 = 32 B, writes 32 B of the state in place.
  EXPECT_EQ(node(g, "scatter:t").bytes_read(), 64 + 32);
  EXPECT_EQ(write(g, "scatter:t", "state").bytes, 32);
  EXPECT_TRUE(node(g, "state_written_copy").relabel);
  EXPECT_FALSE(node(g, "other_copy_copy").relabel);  // no in-place write reads `other`
  EXPECT_FALSE(node(g, "sum").relabel);
}

// An in-place write whose updated input only dead code reads: the write is removed as dead, and
// its record is the update's one write (a kernel: k read 16 B, cache_written written 16 B), not
// a relabelling of a write that no longer exists. A copy of the same values into an output of
// another name is a kernel too.
TEST(Lift, TheRecordOfADeadInPlaceWriteIsAKernel) {
  const Graph g = lift_text(R"(input cache : f32[4, 64]
input k : f32[4]
tensor s : f32[4, 64]
tensor unread : f32[4, 64]
output cache_written : f32[4]
output k_copy : f32[4]
s = cache
s[:, 3] = k
kernel dead {
  for i in 0..4, j in 0..64:
    unread[i, j] = s[i, j]
}
kernel cache_written_copy {
  for i in 0..4:
    cache_written[i] = k[i]
}
kernel k_copy_copy {
  for i in 0..4:
    k_copy[i] = k[i]
}
)");
  EXPECT_FALSE(std::any_of(g.nodes.begin(), g.nodes.end(),
                           [](const Node& n) { return n.name == "copy:s" || n.name == "dead"; }));
  EXPECT_EQ(node(g, "cache_written_copy").bytes_read(), 16);
  EXPECT_EQ(node(g, "cache_written_copy").bytes_written(), 16);
  EXPECT_FALSE(node(g, "cache_written_copy").relabel);
  EXPECT_FALSE(node(g, "k_copy_copy").relabel);
}

TEST(Lift, ConcentratedRoutingCountsTheFewestElementsOnlyOfRoutedTakes) {
  // The routed take (distinct=1: a router's choice, at least one value): ids [2, 3] pick rows of
  // table [10, 4]; concentrated, one row, 24 moved elements / 6 indices = 4 (balanced: 6 rows,
  // 24). Every other data-dependent map reads what its index names under both routings: the
  // same ids without the mark pick 6 rows of table2, 24; gather along dim 1 of x [4, 6] by idx
  // [4, 2], 8; the in-place scatter-add by idx [4, 2] along dim 1, 8 read and written. x is
  // also read whole by the copy `y = x` (24 elements): the union is at least that.
  const char* text = R"(input ids : i64[2, 3]
weight table : f32[10, 4]
weight table2 : f32[10, 4]
input x : f32[4, 6]
input idx : i64[4, 2]
input src : f32[4, 3]
output emb : f32[2, 3, 4]
output plain : f32[2, 3, 4]
output picked : f32[4, 2]
output acc : f32[4, 6]
output y : f32[4, 6]
emb = take(table, ids, dim=0, distinct=1)
plain = take(table2, ids, dim=0)
picked = gather(x, idx, dim=1)
kernel zero {
  for i in 0..4, j in 0..6:
    acc[i, j] = 0.0
}
acc = scatter(acc, idx, src, dim=1, reduce=add)
kernel copy_x {
  for i in 0..4, j in 0..6:
    y[i, j] = x[i, j]
}
)";
  Graph g = lift_text(text);
  EXPECT_EQ(g.routing, Routing::Balanced);
  EXPECT_EQ(read(g, "take:emb", "table").footprint, 24);
  EXPECT_EQ(read(g, "gather:picked", "x").footprint, 8);
  EXPECT_EQ(write(g, "scatter:acc", "acc").footprint, 8);
  EXPECT_EQ(touched_elements(g, "table"), 24);
  assume_routing(g, Routing::Concentrated);
  EXPECT_EQ(g.routing, Routing::Concentrated);
  EXPECT_EQ(read(g, "take:emb", "table").footprint, 4);
  EXPECT_EQ(read(g, "take:emb", "table").bytes, 16);   // 4 f32
  EXPECT_EQ(read(g, "take:emb", "ids").footprint, 6);  // the index tensor is read whole
  EXPECT_EQ(read(g, "take:plain", "table2").footprint, 24);
  EXPECT_EQ(read(g, "gather:picked", "x").footprint, 8);
  EXPECT_EQ(read(g, "scatter:acc", "acc").footprint, 8);
  EXPECT_EQ(write(g, "scatter:acc", "acc").footprint, 8);
  EXPECT_EQ(touched_elements(g, "table"), 4);
  EXPECT_EQ(touched_elements(g, "table2"), 24);
  EXPECT_EQ(touched_elements(g, "x"), 24);    // the copy's 24 affine and the 8 gathered
  EXPECT_EQ(touched_elements(g, "acc"), 24);  // the zeroing writes all of it
  assume_routing(g, Routing::Balanced);       // and back: the lifted counts again
  EXPECT_EQ(read(g, "take:emb", "table").footprint, 24);
  EXPECT_EQ(touched_elements(g, "table"), 24);
}

TEST(Lift, TakeWithDistinctIndicesReadsThatManySlicesWhenConcentrated) {
  // A top-2-of-8 layer's expert weights w [8, 16, 32] (an expert 16*32 = 512 elements) gathered
  // by the 2B routed ids, which hold at least 2 different values (distinct=2). Batch 1: 2 ids
  // move 1024 elements; balanced min(8, 2) = 2 experts, 1024; concentrated 2 experts, 1024.
  // Batch 64: 128 ids move 65536; balanced min(8, 128) = 8 experts, 4096; concentrated 2, 1024.
  const char* text = R"(size R = 2
input ids : i64[R]
weight w : f32[8, 16, 32]
output rows : f32[R, 16, 32]
rows = take(w, ids, dim=0, distinct=2)
)";
  for (const auto& [r, balanced] : {std::pair<int64_t, int64_t>{2, 1024}, {128, 4096}}) {
    Graph g = lift_text(text, {{"R", r}});
    EXPECT_EQ(read(g, "take:rows", "w").footprint, balanced) << r;
    assume_routing(g, Routing::Concentrated);
    EXPECT_EQ(read(g, "take:rows", "w").footprint, 1024) << r;
    EXPECT_EQ(read(g, "take:rows", "w").bytes, 4096) << r;  // 1024 f32
  }
}

TEST(Lift, RoutingNames) {
  EXPECT_EQ(parse_routing("balanced"), Routing::Balanced);
  EXPECT_EQ(parse_routing("concentrated"), Routing::Concentrated);
  EXPECT_EQ(routing_name(Routing::Concentrated), "concentrated");
  EXPECT_THROW(parse_routing("skewed"), UserError);
}

TEST(Lift, Dtypes) {
  const Graph g = lift_text(R"(input a : bf16[4, 8]
input b : bf16[8, 2]
output c : f32[4, 2]
output d : f32[4, 2]
input m : i8[4]
input u : u8[4]
output n : i32[4]
input h : f16[4]
output hb : bf16[4]
kernel mm {
  for i in 0..4, j in 0..2, k in 0..8:
    c[i, j] += a[i, k] * b[k, j]
}
kernel mixed {
  for i in 0..4, j in 0..2, k in 0..8:
    d[i, j] += f32(a[i, k]) * a[i, k] * 2.0
}
kernel scaled {
  for i in 0..4, j in 0..2, k in 0..8:
    d[i, j] += a[i, k] * 2.0
}
kernel ints {
  for i in 0..4:
    n[i] = m[i] + u[i]
}
kernel halves {
  for i in 0..4:
    hb[i] = h[i] * a[i, 0]
}
)");
  const Node& mm = node(g, "mm");
  EXPECT_EQ(mm.mac_lhs_dtype, ir::DType::BF16);
  EXPECT_EQ(mm.mac_rhs_dtype, ir::DType::BF16);
  EXPECT_EQ(mm.out_dtype, ir::DType::F32);
  EXPECT_EQ(mm.compute_dtype, ir::DType::F32);  // the widest float: the f32 output
  EXPECT_EQ(read(g, "mm", "a").bytes, 64);      // 4 * 8 * 2
  const Node& mixed = node(g, "mixed");
  EXPECT_EQ(mixed.counts.macs, 64);                // 4 * 2 * 8: two reading factors
  EXPECT_EQ(mixed.counts.other_ops(), 0);          // the invariant factor 2.0 is folded in
  EXPECT_EQ(mixed.mac_lhs_dtype, ir::DType::F32);  // the cast
  EXPECT_EQ(mixed.mac_rhs_dtype, ir::DType::BF16);
  const Node& scaled = node(g, "scaled");  // one reading factor: a multiply and an add, no MAC
  EXPECT_EQ(scaled.counts.macs, 0);
  EXPECT_EQ(scaled.counts.simple, 128);  // (1 multiply + 1 combine) * 64 points
  EXPECT_FALSE(scaled.mac_lhs_dtype.has_value());
  EXPECT_EQ(node(g, "ints").compute_dtype, ir::DType::I32);    // no float: i8, u8 and i32 promote
  EXPECT_EQ(node(g, "halves").compute_dtype, ir::DType::F32);  // f16 with bf16 promotes to f32
  EXPECT_FALSE(node(g, "halves").mac_lhs_dtype.has_value());   // `=`: no MACs
}

TEST(Lift, Sizes) {
  const std::string text = R"(size N = 4
size M = N * 2
input x : f32[M]
output y : f32[M]
kernel k {
  for i in 0..M:
    y[i] = x[i]
}
)";
  EXPECT_EQ(lift_text(text, {{"N", 8}}).nodes[0].points, 16);  // M = 8 * 2
  // The bound sizes themselves (derived ones included) are accepted when consistent.
  EXPECT_EQ(lift_text(text, {{"N", 8}, {"M", 16}}).sizes.at("M"), 16);
  try {
    lift_text(text, {{"N", 8}, {"M", 10}});
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()), "size 'M' is derived from other sizes and is 16 here, not 10");
  }
  EXPECT_THROW(lift_text(text, {{"Q", 1}}), UserError);  // not a size
  // A program the checker rejects is not lifted.
  EXPECT_THROW(lift_text("input x : f32[4]\noutput y : f32[4]\nkernel k {\n  for i in 0..5:\n"
                         "    y[i] = x[i]\n}\n"),
               ir::DiagnosticError);
}

TEST(Lift, ARepeatTooLongToUnrollIsOneLineBeforeAnyMemory) {
  // The fuzz harness's reproducer (issue 44): examples/rnn.ir with its time steps T = 5 made
  // 10^12 was killed for memory (23 GB) while its 3 x 10^12 steps were unrolled. Refused at the
  // repeat, file:line:col, before anything is unrolled: 2,000,000 steps at most.
  const std::string text =
      "size T = 1000000000000\n"
      "input x : f32[T, 4]\n"
      "tensor h : f32[4]\n"
      "output ys : f32[T, 4]\n"
      "repeat t in 0..T {\n"
      "  kernel cell {\n"
      "    for i in 0..4:\n"
      "      h[i] = tanh(x[t, i])\n"
      "  }\n"
      "  ys[t] = h\n"
      "}\n";
  try {
    lift_text(text);
    FAIL() << "no error";
  } catch (const ir::DiagnosticError& e) {
    EXPECT_EQ(std::string(e.what()),
              "test.ir:5:1: error: repeat t in 0..1000000000000 unrolls into more than 2000000 "
              "steps (statements and iterations), more than SOLAR's einsum graph holds; give "
              "smaller sizes");
  }
  // 666,666 iterations of 2 statements: 3 x 666,666 = 1,999,998 steps, under the limit; counted,
  // not lifted here (T = 666,667: 2,000,001, over it).
  try {
    lift_text(text, {{"T", 666667}});
    FAIL() << "no error";
  } catch (const ir::DiagnosticError& e) {
    EXPECT_NE(std::string(e.what()).find("unrolls into more than 2000000"), std::string::npos);
  }
}

}  // namespace
}  // namespace solar::einsum

namespace solar::einsum {
namespace {

// A cumsum along 6 positions of 3 rows as the op library lowers it: the first position copied,
// then `repeat` of one step kernel (`body` its statement, `first` the first step's position).
std::string scan_program(const std::string& body, int first, bool block = true) {
  const std::string open = block ? "op cumsum {\n" : "";
  const std::string close = block ? "}\n" : "";
  return "input x : f32[3, 6]\noutput y : f32[3, 6]\n" + open +
         "kernel first {\n  for i in 0..3:\n    y[i, " + std::to_string(first == 1 ? 0 : 5) +
         "] = x[i, " + std::to_string(first == 1 ? 0 : 5) + "]\n}\nrepeat t in 1..6 {\n" +
         "kernel step {\n  for i in 0..3:\n    " + body + "\n}\n}\n" + close;
}

// The five steps of a scan are one node: domain t in 1..6 then i in 0..3 (5 x 3 = 15 points),
// one addition a point (15), x read at columns 1..5 (3 x 5 = 15 elements, 60 B), the carry read
// where `first` wrote (column 0: 3 elements, 12 B), y written at columns 1..5 (15 elements, 60 B).
TEST(Lift, TheStepsOfAScanAreOneNode) {
  const Graph g = lift_text(scan_program("y[i, t] = y[i, t - 1] + x[i, t]", 1));
  ASSERT_EQ(g.nodes.size(), size_t{2});
  const Node& n = node(g, "step[t=1..5]");
  ASSERT_EQ(n.domain.size(), size_t{2});
  EXPECT_EQ(n.domain[0].var, "t");
  EXPECT_EQ(n.domain[0].lo.constant, 1);
  EXPECT_EQ(n.domain[0].hi.constant, 6);
  EXPECT_EQ(n.points, 15);
  EXPECT_EQ(n.counts.simple, 15);
  EXPECT_EQ(n.op_block, "cumsum");
  EXPECT_EQ(read(g, "step[t=1..5]", "x").footprint, 15);
  EXPECT_EQ(read(g, "step[t=1..5]", "x").bytes, 60);
  EXPECT_EQ(read(g, "step[t=1..5]", "y").footprint, 3);
  EXPECT_EQ(write(g, "step[t=1..5]", "y").footprint, 15);
  EXPECT_EQ(n.einsum, "for t in 1..6, i in 0..3: y[i, t] = y[i, t - 1] + x[i, t]");
  // the whole program: first reads 3 and writes 3 elements, the steps 15 and 15 more
  EXPECT_EQ(touched_elements(g, "x"), 18);
  EXPECT_EQ(touched_elements(g, "y"), 18);
}

// A reverse scan (the op library's `reverse`: position 5 - t from position 6 - t) moves by -1:
// the loop keeps the repeat's values, the maps run backwards; the carry is column 5.
TEST(Lift, AReverseScanIsOneNode) {
  const Graph g = lift_text(scan_program("y[i, 5 - t] = y[i, 6 - t] + x[i, 5 - t]", 5));
  ASSERT_EQ(g.nodes.size(), size_t{2});
  const Node& n = node(g, "step[t=1..5]");
  EXPECT_EQ(n.points, 15);
  EXPECT_EQ(read(g, "step[t=1..5]", "y").footprint, 3);
  EXPECT_EQ(read(g, "step[t=1..5]", "x").footprint, 15);
  EXPECT_EQ(n.einsum, "for t in 1..6, i in 0..3: y[i, -t + 5] = y[i, -t + 6] + x[i, -t + 5]");
}

// Not a scan, kept step by step: steps outside an op block (each its own operation), a step
// that reads two positions back (not only where the step before wrote), and steps that all
// write the same column (an accumulation: the writes overlap).
TEST(Lift, StepsThatAreNotAScanStayNodes) {
  EXPECT_EQ(lift_text(scan_program("y[i, t] = y[i, t - 1] + x[i, t]", 1, false)).nodes.size(),
            size_t{6});
  const std::string two_back =
      "input x : f32[3, 6]\noutput y : f32[3, 6]\nop s {\n"
      "kernel first {\n  for i in 0..3, j in 0..2:\n"
      "    y[i, j] = x[i, j]\n}\nrepeat t in 2..6 {\n"
      "kernel step {\n  for i in 0..3:\n"
      "    y[i, t] = y[i, t - 2] + x[i, t]\n}\n}\n}\n";
  EXPECT_EQ(lift_text(two_back).nodes.size(), size_t{5});
  EXPECT_EQ(lift_text(scan_program("y[i, 0] = y[i, 0] + x[i, t]", 1)).nodes.size(), size_t{6});
  // each step writes two columns, t and t + 1, reading the two the step before wrote: the carry
  // matches, but the writes overlap (5 steps x 6 elements written, 18 distinct)
  const std::string overlapping =
      "input x : f32[3, 7]\noutput y : f32[3, 7]\nop s {\n"
      "kernel first {\n  for i in 0..3, j in 0..2:\n"
      "    y[i, j] = x[i, j]\n}\nrepeat t in 1..6 {\n"
      "kernel step {\n  for i in 0..3, j in 0..2:\n"
      "    y[i, t + j] = y[i, t + j - 1] + x[i, t]\n}\n}\n}\n";
  EXPECT_EQ(lift_text(overlapping).nodes.size(), size_t{6});
  // two kernels of one op block whose maps are each other's moved by a constant (a complex
  // product's real and imaginary parts: the same op counts, b's columns swapped): not two
  // iterations of one statement, two nodes
  const Graph complex = lift_text(
      "input a : f32[4, 2]\ninput b : f32[4, 2]\noutput p : f32[4, 2]\nop mul {\n"
      "kernel re {\n  for i in 0..4:\n    p[i, 0] = a[i, 0] * b[i, 0] - a[i, 1] * b[i, 1]\n}\n"
      "kernel im {\n  for i in 0..4:\n    p[i, 1] = a[i, 0] * b[i, 1] + a[i, 1] * b[i, 0]\n}\n}\n");
  ASSERT_EQ(complex.nodes.size(), size_t{2});
  EXPECT_EQ(complex.nodes[0].name, "re");
  EXPECT_EQ(complex.nodes[1].name, "im");
}

// A scan inside an outer repeat: one node per outer iteration, named by the inner index (3 steps
// of 2 rows: 6 points, x read 6 elements, the carry 2, y written 6).
TEST(Lift, AScanInsideAnOuterRepeatIsOneNodePerOuterIteration) {
  const Graph g = lift_text(
      "input x : f32[2, 2, 4]\noutput y : f32[2, 2, 4]\nop s {\nrepeat u in 0..2 {\n"
      "kernel first {\n  for i in 0..2:\n    y[u, i, 0] = x[u, i, 0]\n}\n"
      "repeat t in 1..4 {\nkernel step {\n  for i in 0..2:\n"
      "    y[u, i, t] = y[u, i, t - 1] + x[u, i, t]\n}\n}\n}\n}\n");
  ASSERT_EQ(g.nodes.size(), size_t{4});  // first, the scan, twice
  for (const std::string name : {"step[u=0,t=1..3]", "step[u=1,t=1..3]"}) {
    EXPECT_EQ(node(g, name).points, 6) << name;
    EXPECT_EQ(read(g, name, "x").footprint, 6) << name;
    EXPECT_EQ(read(g, name, "y").footprint, 2) << name;
    EXPECT_EQ(write(g, name, "y").footprint, 6) << name;
  }
  EXPECT_EQ(node(g, "step[u=1,t=1..3]").einsum,
            "for t in 1..4, i in 0..2: y[1, i, t] = y[1, i, t - 1] + x[1, i, t]");
}

}  // namespace
}  // namespace solar::einsum
