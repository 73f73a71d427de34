// The `solar.ir_fragment` rule (src/frontend/fragment_rules.cpp): a verified IR program spliced
// into a lowered capture in place of one node. Each spliced program is run by the executor and
// compared with a reference computed here with plain loops.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "../exec/exec_test_util.h"
#include "solar/frontend/lower.h"
#include "solar/ir/printer.h"

namespace solar::frontend {
namespace {

using exec::Tensor;
using exec::TensorMap;
using exec::test::Random;
using nlohmann::json;

// A capture with the given tensors and one fragment node `frag` binding `inputs` and `outputs`.
std::string capture(const json& tensors, const std::string& program,
                    const std::vector<std::string>& inputs,
                    const std::vector<std::string>& outputs) {
  json refs = json::array();
  for (const std::string& name : inputs) refs.push_back({{"tensor", name}});
  json node = {{"name", "frag"},
               {"op", "solar.ir_fragment"},
               {"args", {{"program", program}, {"inputs", refs}, {"replaces", "aten.foo.default"}}},
               {"outputs", outputs},
               {"location", "model.py:3 in forward"}};
  json doc = {{"format", "solar-capture"}, {"version", 1},    {"framework", "torch"},
              {"tensors", tensors},        {"nodes", {node}}, {"outputs", outputs}};
  return doc.dump();
}

json tensor(const std::string& name, const std::string& role, std::vector<int64_t> shape,
            const std::string& dtype = "f32") {
  return {{"name", name}, {"role", role}, {"dtype", dtype}, {"shape", shape}};
}

const char* const kMatmulRelu = R"(# c = relu(a @ b)
size M = 2
size K = 3
size N = 4
input a : f32[M, K]
weight b : f32[K, N]
tensor acc : f32[M, N]
output c : f32[M, N]
kernel mm {
  for i in 0..M, j in 0..N, k in 0..K:
    acc[i, j] += a[i, k] * b[k, j]
}
kernel relu {
  for i in 0..M, j in 0..N:
    c[i, j] = max(acc[i, j], 0.0)
}
)";

std::string matmul_capture() {
  return capture(
      {tensor("x", "input", {2, 3}), tensor("w", "weight", {3, 4}), tensor("y", "output", {2, 4})},
      kMatmulRelu, {"x", "w"}, {"y"});
}

TEST(Fragment, SplicesKernelsWithTheNodesTensorsAndFreshTemporaries) {
  const std::string text = lower_capture_text(matmul_capture(), "m.json");
  // The fragment's `acc` is a temporary named after the node; its kernels too.
  EXPECT_NE(text.find("tensor frag_acc : f32[2, 4]"), std::string::npos) << text;
  EXPECT_NE(text.find("kernel frag_mm {"), std::string::npos) << text;
  EXPECT_NE(text.find("kernel frag_relu {"), std::string::npos) << text;
  EXPECT_EQ(text.find(" a["), std::string::npos) << text;  // no fragment tensor name is left

  Random rng(7);
  const Tensor x = rng.tensor(ir::DType::F32, {2, 3}), w = rng.tensor(ir::DType::F32, {3, 4});
  const TensorMap out = exec::run(ir::parse(text, "m.ir"), {{"x", x}, {"w", w}});
  const Tensor& y = out.at("y");
  ASSERT_EQ(y.numel(), 8);  // 2 x 4
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 4; ++j) {
      double acc = 0;
      for (int k = 0; k < 3; ++k) acc += x.get(i * 3 + k) * w.get(k * 4 + j);
      EXPECT_NEAR(y.get(i * 4 + j), std::max(acc, 0.0), 1e-6) << i << "," << j;
    }
  }
}

TEST(Fragment, UnrollsRepeatsAndNeverClashesWithCaptureNames) {
  // The capture's tensors are named `i` and `t`, like the fragment's loop and repeat indices.
  const char* program = R"(size T = 3
input x : f32[T, 2]
tensor row : f32[2]
output acc : f32[T, 2]
repeat t in 0..T {
  row = x[t]
  kernel twice {
    for i in 0..2:
      acc[t, i] = row[i] * 2.0 + t
  }
}
)";
  const std::string text = lower_capture_text(
      capture({tensor("i", "input", {3, 2}), tensor("t", "output", {3, 2})}, program, {"i"}, {"t"}),
      "m.json");
  // T = 3 iterations: three copies of the slice and of the kernel, each kernel freshly named.
  EXPECT_NE(text.find("frag_row = i[2]"), std::string::npos) << text;
  EXPECT_NE(text.find("kernel frag_twice3 {"), std::string::npos) << text;
  EXPECT_EQ(text.find("kernel frag_twice4 {"), std::string::npos) << text;
  EXPECT_EQ(text.find("repeat"), std::string::npos) << text;

  const Tensor in = Random(3).tensor(ir::DType::F32, {3, 2});
  const TensorMap outputs = exec::run(ir::parse(text, "m.ir"), {{"i", in}});
  const Tensor& out = outputs.at("t");
  for (int r = 0; r < 3; ++r) {
    for (int c = 0; c < 2; ++c) {
      EXPECT_NEAR(out.get(r * 2 + c), in.get(r * 2 + c) * 2.0 + r, 1e-6) << r << "," << c;
    }
  }
}

TEST(Fragment, SplicedProgramPrintsAndReparsesEqual) {
  const ir::Program p = lower_capture(matmul_capture(), "m.json");
  EXPECT_TRUE(ir::equal(ir::parse(ir::print(p), "m.json"), p));
}

TEST(Fragment, InvalidFragmentIsAUserErrorNamingTheNode) {
  std::string program = kMatmulRelu;
  program.replace(program.find("input a :"), 9, "input a  ");  // line 5: `:` missing
  const std::string message = exec::test::user_error([&] {
    lower_capture_text(capture({tensor("x", "input", {2, 3}), tensor("w", "weight", {3, 4}),
                                tensor("y", "output", {2, 4})},
                               program, {"x", "w"}, {"y"}),
                       "m.json");
  });
  EXPECT_EQ(message.rfind("model.py:3 in forward: solar.ir_fragment (node 'frag'): invalid IR "
                          "fragment: fragment:5:11: error: ",
                          0),
            0u)
      << message;
}

TEST(Fragment, CheckerErrorsOfTheFragmentAreReported) {
  std::string program = kMatmulRelu;
  program.replace(program.find("b[k, j]"), 7, "b[k, j + 1]");  // j + 1 reaches 4 = N
  const std::string message = exec::test::user_error([&] {
    lower_capture_text(capture({tensor("x", "input", {2, 3}), tensor("w", "weight", {3, 4}),
                                tensor("y", "output", {2, 4})},
                               program, {"x", "w"}, {"y"}),
                       "m.json");
  });
  EXPECT_NE(message.find("invalid IR fragment: fragment:11:"), std::string::npos) << message;
  EXPECT_NE(message.find("index 'j + 1' of 'b'"), std::string::npos) << message;
}

TEST(Fragment, BindingsMustMatchInDtypeShapeAndCount) {
  const json tensors = {tensor("x", "input", {2, 3}), tensor("w", "weight", {3, 5}),
                        tensor("y", "output", {2, 4})};
  EXPECT_EQ(exec::test::user_error([&] {
              lower_capture_text(capture(tensors, kMatmulRelu, {"x", "w"}, {"y"}), "m.json");
            }),
            "model.py:3 in forward: solar.ir_fragment (node 'frag'): fragment weight 'b' is "
            "f32[3, 4] but it is bound to 'w' of f32[3, 5]");
  EXPECT_EQ(exec::test::user_error(
                [&] { lower_capture_text(capture(tensors, kMatmulRelu, {"x"}, {"y"}), "m.json"); }),
            "model.py:3 in forward: solar.ir_fragment (node 'frag'): the fragment declares 2 "
            "inputs and weights and 1 outputs, but the node binds 1 inputs and 1 outputs");
  const json f16 = {tensor("x", "input", {2, 3}, "f16"), tensor("w", "weight", {3, 4}),
                    tensor("y", "output", {2, 4})};
  EXPECT_EQ(exec::test::user_error([&] {
              lower_capture_text(capture(f16, kMatmulRelu, {"x", "w"}, {"y"}), "m.json");
            }),
            "model.py:3 in forward: solar.ir_fragment (node 'frag'): fragment input 'a' is "
            "f32[2, 3] but it is bound to 'x' of f16[2, 3]");
}

}  // namespace
}  // namespace solar::frontend
