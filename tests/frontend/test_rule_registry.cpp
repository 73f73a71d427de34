// The lowering rule registry (src/frontend/rules.cpp): a name registered twice is an internal
// error, never a silent replacement of one family's rule by another's.
#include <gtest/gtest.h>

#include <string>

#include "../../src/frontend/rules.h"
#include "solar/util/error.h"

namespace solar::frontend {
namespace {

void first_rule(NodeLowering& n) { n.stmt("first"); }
void second_rule(NodeLowering& n) { n.stmt("second"); }

TEST(RuleRegistry, RefusesADuplicateName) {
  RuleTable table;
  table["aten.my_op.default"] = first_rule;
  table["aten.my_op.Tensor"] = second_rule;
  // Two distinct names: both kept.
  EXPECT_EQ(table.table().size(), 2U);
  try {
    table["aten.my_op.default"] = second_rule;
    FAIL() << "a duplicate name was accepted";
  } catch (const InternalError& e) {
    EXPECT_NE(std::string(e.what()).find("lowering rule registered twice: aten.my_op.default"),
              std::string::npos)
        << e.what();
  }
  // The first registration stands: still two rules, the first one under the name.
  EXPECT_EQ(table.table().size(), 2U);
  EXPECT_EQ(table.table().count("aten.my_op.default"), 1U);
}

TEST(RuleRegistry, EveryFamilyRegistersWithoutClash) {
  // Building the real registry runs every family's registration through the same check: it must
  // not throw, and it holds rules of each family's file (one name from each).
  const auto& all = rules();
  for (const char* op :
       {"aten.view.default", "aten.add.Tensor", "aten.mm.default", "aten.convolution.default",
        "aten.sum.dim_IntList", "aten.max_pool2d_with_indices.default",
        "aten.scaled_dot_product_attention.default", "aten.cumsum.default"}) {
    EXPECT_EQ(all.count(op), 1U) << op;
  }
}

}  // namespace
}  // namespace solar::frontend
