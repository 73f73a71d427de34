// Per-node headroom (include/solar/sol/headroom.h): attribution of graph nodes to measured
// nodes and the ratios, on a hand-made graph whose node times are set by hand.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "solar/sol/headroom.h"
#include "solar/util/error.h"

namespace solar::sol {
namespace {

// Graph: mm[t=1], mm[t=2] (kernel "mm" of a repeat block), copy:y (movement writing y), tail.
struct Fixture {
  einsum::Graph g;
  Analysis a;
  Fixture() {
    const std::vector<std::string> names = {"mm[t=1]", "mm[t=2]", "copy:y", "tail"};
    const std::vector<double> times = {2e-9, 3e-9, 1e-9, 4e-9};
    for (size_t i = 0; i < names.size(); ++i) {
      einsum::Node n;
      n.name = names[i];
      if (names[i] == "copy:y") {
        n.kind = einsum::NodeKind::Movement;
        n.writes.push_back({"y", "y[i]"});
      }
      g.nodes.push_back(n);
      NodeCost c;
      c.time_s = times[i];
      a.nodes.push_back(c);
    }
  }
};

TEST(NodeHeadroom, AttributesKernelsAndMovementAndSortsByMeasuredTime) {
  const Fixture f;
  const std::vector<NodeMeasurement> m = {
      {"matmul", "aten.mm", 1e-6, true, {"mm"}, {}},
      {"copy", "aten.copy", 2e-6, true, {}, {"y"}},
      {"reshape", "aten.view", 5e-7, true, {}, {"r"}},
      {"other", "aten.x", 3e-6, false, {}, {}},
  };
  const NodeHeadrooms h = compute_node_headroom(f.g, f.a, m, "by hand");
  ASSERT_EQ(h.nodes.size(), 4u);
  // Longest first: other 3 us, copy 2 us, matmul 1 us, reshape 0.5 us.
  EXPECT_EQ(h.nodes[0].node, "other");
  EXPECT_EQ(h.nodes[0].status, "not lowered");
  EXPECT_FALSE(h.nodes[0].headroom.has_value());
  EXPECT_EQ(h.nodes[1].node, "copy");
  EXPECT_DOUBLE_EQ(h.nodes[1].sol_s, 1e-9);
  EXPECT_DOUBLE_EQ(*h.nodes[1].headroom, 2e-6 / 1e-9);  // 2000
  EXPECT_EQ(h.nodes[2].node, "matmul");
  // Both iterations of mm: 2 ns + 3 ns = 5 ns; 1 us / 5 ns = 200.
  EXPECT_EQ(h.nodes[2].graph_nodes, (std::vector<std::string>{"mm[t=1]", "mm[t=2]"}));
  EXPECT_DOUBLE_EQ(h.nodes[2].sol_s, 5e-9);
  EXPECT_DOUBLE_EQ(*h.nodes[2].headroom, 200.0);
  EXPECT_EQ(h.nodes[3].status, "view (no work)");
  EXPECT_FALSE(h.nodes[3].headroom.has_value());
  // tail (4 ns) is claimed by nobody. Attributed: mm 5 ns + copy 1 ns = 6 ns; with the 4 ns
  // unattributed, 10 ns: the whole unfused SOL (2 + 3 + 1 + 4).
  EXPECT_EQ(h.unattributed, (std::vector<std::string>{"tail"}));
  EXPECT_DOUBLE_EQ(h.unattributed_sol_s, 4e-9);
  EXPECT_DOUBLE_EQ(h.sol_s, 6e-9);
  EXPECT_EQ(h.method, "by hand");
}

TEST(NodeHeadroom, RejectsBadInput) {
  const Fixture f;
  EXPECT_THROW(compute_node_headroom(f.g, f.a, {{"a", "", -1.0, true, {}, {}}}, ""), UserError);
  EXPECT_THROW(compute_node_headroom(f.g, f.a, {{"a", "", 1.0, true, {"nope"}, {}}}, ""),
               UserError);
  EXPECT_THROW(
      compute_node_headroom(
          f.g, f.a, {{"a", "", 1.0, true, {"mm"}, {}}, {"b", "", 1.0, true, {"mm"}, {}}}, ""),
      UserError);
  EXPECT_THROW(compute_node_headroom(
                   f.g, f.a, {{"a", "", 1.0, true, {}, {}}, {"a", "", 1.0, true, {}, {}}}, ""),
               UserError);
}

}  // namespace
}  // namespace solar::sol
