// Outputs whose values repeat along some dimensions (einsum::repeated_copies,
// sol::repeated_outputs, docs/fidelities.md "Repeated values"): the fused and cache-aware models
// write each distinct value once, as a kernel that returns a broadcast view does; the unfused
// model writes every copy, as eager's `.contiguous()` does.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sol_test_util.h"
#include "solar/einsum/graph.h"
#include "solar/hw/device.h"
#include "solar/sol/analysis.h"

namespace solar::sol {
namespace {

using testing::lift_text;

const PrecisionPolicy& default_policy() { return find_precision_policy(kDefaultPrecisionPolicy); }

// H100-SXM without its kernel floor: the tests count bytes and nanoseconds below it.
hw::Device h100() {
  hw::Device d = hw::load_builtin_device("H100-SXM");
  d.min_kernel_s.reset();
  return d;
}

// The copies repeated_copies gives the tensor named `name`.
int64_t copies_of(const einsum::Graph& g, const std::string& name) {
  const std::vector<int64_t> copies = einsum::repeated_copies(g);
  for (size_t t = 0; t < g.tensors.size(); ++t) {
    if (g.tensors[t].name == name) return copies[t];
  }
  ADD_FAILURE() << "no tensor " << name;
  return 0;
}

// A sliding-window causal mask combined with a padding mask and broadcast over the heads, as an
// attention-mask preparation writes it: mask[b, h, i, j] = (j <= i) && (j > i - 2) && keep[b, j]
// at B = 2, H = 3, L = 5; the heads are a `.expand(...).contiguous()` of a [B, 1, L, L] value.
const char* const kMaskOverHeads = R"(size B = 2
size H = 3
size L = 5
input keep : bool[B, L]
tensor allowed : bool[L, L]
tensor one : bool[B, 1, L, L]
output mask : bool[B, H, L, L]
kernel window {
  for i in 0..L, j in 0..L:
    allowed[i, j] = (j <= i) && (j > i - 2)
}
kernel combine {
  for b in 0..B, o in 0..1, i in 0..L, j in 0..L:
    one[b, o, i, j] = allowed[i, j] && keep[b, j]
}
kernel heads {
  for b in 0..B, h in 0..H, i in 0..L, j in 0..L:
    mask[b, h, i, j] = one[b, 0, i, j]
}
)";

TEST(RepeatedValues, AMaskBroadcastOverHeadsIsWrittenOnceWhenFused) {
  const einsum::Graph g = lift_text(kMaskOverHeads);
  // mask's value at (b, h, i, j) reads one[b, 0, i, j]: no read uses h, so it repeats along H
  // (3 copies); b, i and j each index a read along a dimension that does not repeat.
  EXPECT_EQ(copies_of(g, "mask"), 3);
  EXPECT_EQ(copies_of(g, "one"), 1);
  // allowed[i, j] uses i and j as values (the comparisons): no repeats.
  EXPECT_EQ(copies_of(g, "allowed"), 1);

  const std::vector<RepeatedOutput> rep = repeated_outputs(g);
  ASSERT_EQ(rep.size(), 1u);
  EXPECT_EQ(rep[0].tensor, "mask");
  EXPECT_EQ(rep[0].copies, 3);
  EXPECT_EQ(rep[0].bytes, 2 * 3 * 5 * 5);   // 150 bool elements
  EXPECT_EQ(rep[0].once_bytes, 2 * 5 * 5);  // 50: one copy of each value
  EXPECT_EQ(g.nodes[rep[0].writer].name, "heads");

  const Analysis a = analyze(g, h100(), default_policy());
  // Fused: keep 2*5 = 10 B + mask once 50 B = 60 B (every copy: 10 + 150 = 160 B).
  EXPECT_EQ(a.result(Fidelity::Fused).bytes, 10 + 50);
  // Unfused writes every copy, as eager's contiguous copy does:
  //   window  allowed 25                         =  25
  //   combine allowed 25 + keep 10 + one 50      =  85
  //   heads   one 50 + mask 150                  = 200
  EXPECT_EQ(a.result(Fidelity::Unfused).bytes, 25 + 85 + 200);
  // Cache-aware: the whole graph fits on chip; the same 60 B.
  EXPECT_EQ(a.result(Fidelity::Cache).bytes, 10 + 50);
  ASSERT_EQ(a.repeated_outputs.size(), 1u);
}

TEST(RepeatedValues, TheWriterComputesEachDistinctValueOnceWhenFused) {
  // out[b, h, l] = x[b, l] * 2 + 1 at B = 2, H = 4, L = 8: 2*4*8 = 64 points of 2 ops each
  // (128 ops) in the unfused model; its values repeat along H, so the fused and cache-aware
  // models compute each of the 2*8 = 16 distinct values once: 32 ops, a quarter.
  const einsum::Graph g = lift_text(R"(size B = 2
size H = 4
size L = 8
input x : f32[B, L]
output out : f32[B, H, L]
kernel affine {
  for b in 0..B, h in 0..H, l in 0..L:
    out[b, h, l] = x[b, l] * 2.0 + 1.0
}
)");
  EXPECT_EQ(copies_of(g, "out"), 4);
  const Analysis a = analyze(g, h100(), default_policy());
  ASSERT_EQ(a.nodes.size(), 1u);
  EXPECT_EQ(a.totals.other_ops(), 128);
  ASSERT_GT(a.nodes[0].compute_s, 0);
  EXPECT_DOUBLE_EQ(a.nodes[0].fused_compute_s, a.nodes[0].compute_s / 4);
  EXPECT_DOUBLE_EQ(a.result(Fidelity::Fused).compute_s, a.nodes[0].compute_s / 4);
  EXPECT_DOUBLE_EQ(a.result(Fidelity::Unfused).compute_s, a.nodes[0].compute_s);
  // Bytes: x 2*8*4 = 64; out once 2*8*4 = 64 fused, every copy 2*4*8*4 = 256 unfused.
  EXPECT_EQ(a.result(Fidelity::Fused).bytes, 64 + 64);
  EXPECT_EQ(a.result(Fidelity::Unfused).bytes, 64 + 256);
}

TEST(RepeatedValues, AValueThatUsesTheLoopDoesNotRepeatAlongIt) {
  // y[h, i] = h + x[i]: h is a value of the right side, so y does not repeat along H; x[i] reads
  // along i, so not along I either.
  const einsum::Graph g = lift_text(R"(size H = 4
size I = 8
input x : f32[I]
output y : f32[H, I]
kernel k {
  for h in 0..H, i in 0..I:
    y[h, i] = h + x[i]
}
)");
  EXPECT_EQ(copies_of(g, "y"), 1);
  EXPECT_TRUE(repeated_outputs(g).empty());
  // Fused bytes: x 8*4 = 32 + y 4*8*4 = 128.
  EXPECT_EQ(analyze(g, h100(), default_policy()).result(Fidelity::Fused).bytes, 32 + 128);
}

TEST(RepeatedValues, AnIndexValueRepeatsAlongTheLoopsItDoesNotUse) {
  // y[h, i] = h (an arange over H broadcast along I): its value uses h, not i: 8 copies along I.
  // Fused bytes: y once, 4 values * 4 B = 16 (every copy: 4*8*4 = 128).
  const einsum::Graph g = lift_text(R"(size H = 4
size I = 8
output y : f32[H, I]
kernel k {
  for h in 0..H, i in 0..I:
    y[h, i] = h
}
)");
  EXPECT_EQ(copies_of(g, "y"), 8);
  EXPECT_EQ(analyze(g, h100(), default_policy()).result(Fidelity::Fused).bytes, 16);
}

TEST(RepeatedValues, AZerosTensorRepeatsAlongEveryDimensionAndPassesItOn) {
  // out = zeros(B, H, L).masked_fill(m, -1) with m[b, 0, l] broadcast over H: zero repeats
  // along all three dimensions (2*3*4 = 24 copies of its one value), and out along H only
  // (its reads of zero repeat along every dimension, its read of m uses b and l).
  const einsum::Graph g = lift_text(R"(size B = 2
size H = 3
size L = 4
input m : bool[B, 1, L]
tensor zero : f32[B, H, L]
output out : f32[B, H, L]
kernel zeros {
  for b in 0..B, h in 0..H, l in 0..L:
    zero[b, h, l] = 0.0
}
kernel fill {
  for b in 0..B, h in 0..H, l in 0..L:
    out[b, h, l] = select(m[b, 0, l], -1.0, zero[b, h, l])
}
)");
  EXPECT_EQ(copies_of(g, "zero"), 2 * 3 * 4);
  EXPECT_EQ(copies_of(g, "out"), 3);
  // Fused: m 2*4*1 = 8 B + out once 2*4*4 = 32 B = 40 (every copy: out 2*3*4*4 = 96).
  EXPECT_EQ(analyze(g, h100(), default_policy()).result(Fidelity::Fused).bytes, 8 + 32);
}

TEST(RepeatedValues, AnOutputWrittenTwiceDoesNotRepeatButAReductionCan) {
  // Written by two kernels (a copy then an add into it): no node writes it whole alone.
  const einsum::Graph two = lift_text(R"(size H = 3
size I = 4
input x : f32[I]
output y : f32[H, I]
kernel first {
  for h in 0..H, i in 0..I:
    y[h, i] = x[i]
}
kernel second {
  for h in 0..H, i in 0..I:
    y[h, i] = y[h, i] + h
}
)");
  EXPECT_EQ(copies_of(two, "y"), 1);
  // A reduction into the output, written by that node alone: y[h, i] = sum over k of x[i, k]
  // does not depend on h, so it repeats along H (3 copies).
  const einsum::Graph sum = lift_text(R"(size H = 3
size I = 4
size K = 5
input x : f32[I, K]
output y : f32[H, I]
kernel reduce {
  for h in 0..H, i in 0..I, k in 0..K:
    y[h, i] += x[i, k]
}
)");
  EXPECT_EQ(copies_of(sum, "y"), 3);
  // Fused: x 4*5*4 = 80 B + y once 4*4 = 16 B.
  EXPECT_EQ(analyze(sum, h100(), default_policy()).result(Fidelity::Fused).bytes, 80 + 16);
}

TEST(RepeatedValues, AReadThroughAReshapeIsCheckedAtTheElementsItReads) {
  // y[b, h, 0, j] = v[b, h, 0, j] * 2 where v = reshape(s), s : [6, 1, 4] and v : [2, 3, 1, 4]
  // (a batched product's [B*H, 1, T] result viewed as [B, H, 1, T], as attention scores are):
  // the element read is s[3b + h, 0, j], so y depends on b, h and j and repeats along none. (The
  // read's second index is h while s's second dimension has size 1: it is not a broadcast.)
  const einsum::Graph g = lift_text(R"(size B = 2
size H = 3
size T = 4
input x : f32[6, 1, T]
tensor s : f32[6, 1, T]
tensor v : f32[B, H, 1, T]
output y : f32[B, H, 1, T]
kernel first {
  for i in 0..6, o in 0..1, j in 0..T:
    s[i, o, j] = x[i, o, j] + 1.0
}
v = reshape(s)
kernel second {
  for b in 0..B, h in 0..H, o in 0..1, j in 0..T:
    y[b, h, o, j] = v[b, h, o, j] * 2.0
}
)");
  EXPECT_EQ(copies_of(g, "s"), 1);
  EXPECT_EQ(copies_of(g, "y"), 1);
  // Fused: x 6*4*4 = 96 B + y 2*3*4*4 = 96 B.
  EXPECT_EQ(analyze(g, h100(), default_policy()).result(Fidelity::Fused).bytes, 96 + 96);
}

TEST(RepeatedValues, AnInPlaceWriteIntoAnInputWritesEveryCopy) {
  // cache[[1, 5]] = v with v one row of 16 f32 broadcast into the two rows: the capture's
  // record of the in-place write, graph output `cache_written`, holds v twice, and both copies
  // land in cache's storage: no broadcast view can stand for them. Fused: v 16*4 = 64 B + the
  // two rows written 2*16*4 = 128 B.
  const einsum::Graph g = lift_text(R"(input cache : f32[8, 16]
input v : f32[16]
tensor spread : f32[2, 16]
output cache_written : f32[2, 16]
spread = broadcast(v)
kernel cache_written_copy {
  for r in 0..2, j in 0..16:
    cache_written[r, j] = spread[r, j]
}
)");
  EXPECT_EQ(copies_of(g, "cache_written"), 1);
  EXPECT_EQ(analyze(g, h100(), default_policy()).result(Fidelity::Fused).bytes, 64 + 128);
}

}  // namespace
}  // namespace solar::sol
