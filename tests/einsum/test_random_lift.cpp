// `random` tensors and argsort in the einsum graph (docs/ir.md, docs/einsum.md): counts worked
// out by hand in the comments. f32 is 4 bytes, i64 8.
#include <gtest/gtest.h>

#include <string>

#include "solar/einsum/graph.h"
#include "solar/ir/parser.h"

namespace solar::einsum {
namespace {

Graph lift_text(const std::string& text) { return lift(ir::parse(text, "test.ir"), {}); }

TEST(RandomDraw, IsGeneratedOnChipByANodeBeforeItsFirstReader) {
  const Graph g = lift_text(R"(
input x : f32[4, 8]
random r : f32[4, 8]
output y : f32[4, 8]
kernel k { for i in 0..4, j in 0..8: y[i, j] = x[i, j] * r[i, j] })");
  ASSERT_EQ(g.nodes.size(), 2u);
  const Node& draw = g.nodes[0];
  EXPECT_EQ(draw.name, "draw:r");
  EXPECT_EQ(draw.op, "random");
  EXPECT_EQ(draw.points, 32);                   // 4 x 8 elements
  EXPECT_EQ(draw.counts.simple, 32);            // one operation per element
  EXPECT_TRUE(draw.reads.empty());              // nothing from DRAM
  EXPECT_EQ(draw.bytes_written(), 32 * 4);      // the draw, when it leaves the chip: 128 B
  EXPECT_EQ(g.nodes[1].bytes_read(), 2 * 128);  // x and r, 128 B each
  // In the graph the draw is an intermediate: fused, it stays on chip.
  EXPECT_EQ(g.find_tensor("r")->role, ir::TensorRole::Intermediate);
}

TEST(RandomDraw, AnUnreadDrawCostsNothing) {
  const Graph g = lift_text(R"(
input x : f32[4]
random r : f32[4]
output y : f32[4]
kernel k { for i in 0..4: y[i] = x[i] })");
  ASSERT_EQ(g.nodes.size(), 1u);
  EXPECT_EQ(g.nodes[0].name, "k");
}

TEST(Argsort, MovesItsInputAndThePermutation) {
  const Graph g = lift_text(R"(
input x : f32[4, 8]
output i : i64[4, 8]
i = argsort(x, dim=1, descending=1))");
  ASSERT_EQ(g.nodes.size(), 1u);
  EXPECT_EQ(g.nodes[0].kind, NodeKind::Movement);
  EXPECT_EQ(g.nodes[0].bytes_read(), 32 * 4);     // x: 128 B
  EXPECT_EQ(g.nodes[0].bytes_written(), 32 * 8);  // i64 indices: 256 B
  EXPECT_EQ(g.nodes[0].counts.flops(), 0);        // comparisons not counted (a lower bound)
}

}  // namespace
}  // namespace solar::einsum
