// lower_capture_detailed: nodes without a rule left out (their outputs fed as program inputs),
// disabled rules, and what the result lists.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "../exec/exec_test_util.h"
#include "solar/frontend/lower.h"

namespace solar::frontend {
namespace {

using exec::Tensor;
using exec::TensorMap;
using exec::test::f32;
using exec::test::values;

std::string fixture(const std::string& name) {
  std::ifstream in(std::string(SOLAR_SOURCE_DIR) + "/tests/frontend/data/" + name);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(LowerDetailed, UnsupportedNodeOutputsBecomeProgramInputs) {
  // unsupported.json: y = relu(x); z = foo(y), z the graph output.
  const LowerResult r =
      lower_capture_detailed(fixture("unsupported.json"), "unsupported.json", {true, {}});
  ASSERT_EQ(r.unsupported.size(), 1u);
  const UnsupportedNode& u = r.unsupported[0];
  EXPECT_EQ(u.node, "foo_1");
  EXPECT_EQ(u.op, "aten.foo.default");
  EXPECT_EQ(u.location, "model.py:12 in forward");
  EXPECT_EQ(u.reason, "no lowering rule");
  EXPECT_EQ(u.index, 1);
  EXPECT_EQ(u.inputs, std::vector<std::string>{"y"});
  EXPECT_EQ(u.outputs, std::vector<std::string>{"z"});
  EXPECT_EQ(u.output_bytes, 8);  // f32[2]: 2 x 4 B
  EXPECT_EQ(r.nodes, 2);
  EXPECT_EQ(r.node_output_bytes, 16);  // y and z, 8 B each
  EXPECT_NE(r.ir.find("input z : f32[2]"), std::string::npos) << r.ir;
  // relu still runs: y = max(x, 0)
  const TensorMap out = exec::run(ir::parse(r.ir, "u.ir"),
                                  {{"x", f32({2}, {-1.5, 2.0})}, {"z", f32({2}, {7.0, 8.0})}});
  EXPECT_EQ(out.count("z"), 0u);  // z is an input now, not an output
  // y, which relu computes and only foo reads, leaves the program for foo: an output, so relu
  // is counted (not dead code), and its value comes back: max(-1.5, 0) = 0, max(2, 0) = 2.
  EXPECT_NE(r.ir.find("output y : f32[2]"), std::string::npos) << r.ir;
  ASSERT_EQ(out.count("y"), 1u);
  EXPECT_EQ(values(out.at("y")), (std::vector<double>{0.0, 2.0}));
}

TEST(LowerDetailed, DisabledRuleIsUnsupported) {
  const std::string capture = fixture("linear_relu.json");
  const LowerResult all = lower_capture_detailed(capture, "l.json", {false, {}});
  EXPECT_TRUE(all.unsupported.empty());
  EXPECT_EQ(all.ir, lower_capture_text(capture, "l.json"));

  const std::string message = exec::test::user_error([&] {
    lower_capture_detailed(capture, "l.json", {false, {"aten.relu.default"}});
  });
  EXPECT_NE(message.find("unsupported operator 'aten.relu.default'"), std::string::npos) << message;

  const LowerResult r = lower_capture_detailed(capture, "l.json", {true, {"aten.relu.default"}});
  ASSERT_EQ(r.unsupported.size(), 1u);
  EXPECT_EQ(r.unsupported[0].reason, "lowering rule disabled");
  EXPECT_EQ(r.unsupported[0].op, "aten.relu.default");

  EXPECT_EQ(exec::test::user_error([&] {
              lower_capture_detailed(capture, "l.json", {true, {"aten.nope.default"}});
            }),
            "cannot disable the rule of 'aten.nope.default': no operator of that name has one");
}

}  // namespace
}  // namespace solar::frontend
