// The graph's text form and DOT (docs/einsum.md, "Text form"), and `solar lift`
// (include/solar/cli/lift_command.h).
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "solar/cli/lift_command.h"
#include "solar/einsum/graph.h"
#include "solar/einsum/lift_count.h"
#include "solar/ir/parse_count.h"
#include "solar/ir/parser.h"

namespace solar::einsum {
namespace {

constexpr const char* kSmall = R"(size N = 4
input x : f32[N, 2]
input ids : i64[3]
weight w : f32[2, 3]
tensor h : f32[N, 3]
output y : f32[N, 3]
output e : f32[3, 2]
kernel mm {
  for i in 0..N, j in 0..3, k in 0..2:
    h[i, j] += x[i, k] * w[k, j]
}
kernel act {
  for i in 0..N, j in 0..3:
    y[i, j] = tanh(h[i, j])
}
e = take(x, ids, dim=0)
)";

Graph lift_text(const std::string& text, const ir::SymbolValues& sizes = {}) {
  return lift(ir::parse(text, "dir/small.ir"), sizes);
}

TEST(PrintGraph, TextForm) {
  // mm: 4 * 3 * 2 = 24 MACs; act: 12 tanh; take: 3 indices (24 bytes), 3 rows of 2 (24 bytes).
  EXPECT_EQ(print_graph(lift_text(kSmall)), R"(graph small.ir
sizes N=4

tensors
  x    input   f32[4, 2]  32 bytes
  ids  input   i64[3]     24 bytes
  w    weight  f32[2, 3]  24 bytes
  h    tensor  f32[4, 3]  48 bytes
  y    output  f32[4, 3]  48 bytes
  e    output  f32[3, 2]  24 bytes

node mm (einsum)
  for i in 0..4, j in 0..3, k in 0..2: h[i, j] += x[i, k] * w[k, j]
  points 24, reduction sum, macs 24, simple 0, special 0, flops 48
  dtypes: mac f32 x f32, out f32, compute f32
  read x[i, k]: 8 elements, 32 bytes
  read w[k, j]: 6 elements, 24 bytes
  write h[i, j]: 12 elements, 48 bytes

node act (einsum)
  for i in 0..4, j in 0..3: y[i, j] = tanh(h[i, j])
  points 12, reduction none, macs 0, simple 0, special 12, flops 12
  dtypes: out f32, compute f32
  read h[i, j]: 12 elements, 48 bytes
  write y[i, j]: 12 elements, 48 bytes

node take:e (movement)
  e = take(x, ids, dim=0)
  elements moved 6
  dtypes: out f32, compute f32
  read ids[d0]: 3 elements, 24 bytes
  read x[ids[d0], d1]: 6 elements (data-dependent), 24 bytes
  write e[d0, d1]: 6 elements, 24 bytes

touched by the graph (inputs and weights read, outputs written; each element once)
  x: 8 of 8 elements, 32 bytes
  ids: 3 of 3 elements, 24 bytes
  w: 6 of 6 elements, 24 bytes
  y: 12 of 12 elements, 48 bytes
  e: 6 of 6 elements, 24 bytes

totals: 3 nodes, macs 24, simple 0, special 12, flops 60, bytes read 152, bytes written 120
)");
}

TEST(PrintGraph, LowerBoundsAreMarked) {
  // x[2 i] and x[i] overlap (progressions of two steps); x has more than 2^28 elements, so their
  // union is not counted in a bitset: the larger map, N = 300000000 elements, is a lower bound
  // (the exact count is N + N / 2 = 450000000: the even elements below 2N and the odd below N).
  const Graph g = lift_text(R"(size N = 300000000
input x : f32[2 * N]
output y : f32[N]
kernel diff {
  for i in 0..N:
    y[i] = x[2 * i] - x[i]
}
)");
  const Access& x = g.nodes[0].reads[0];
  EXPECT_FALSE(x.footprint_exact);
  EXPECT_EQ(x.footprint, 300000000);
  const std::string text = print_graph(g);
  EXPECT_NE(text.find("  read x[2 * i], x[i]: >= 300000000 elements (lower bound), 1200000000 "
                      "bytes\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  x: >= 300000000 of 600000000 elements, 1200000000 bytes\n"),
            std::string::npos)
      << text;
  EXPECT_FALSE(touched_footprint(g, "x").exact);
}

TEST(PrintGraph, Dot) {
  const Graph g = lift_text("input x : f32[2]\noutput y : f32[2]\ny = x\n");
  EXPECT_EQ(graph_to_dot(g), R"(digraph "small.ir" {
  rankdir=LR;
  t0 [shape=ellipse, label="x\ninput f32[2]"];
  t1 [shape=ellipse, label="y\noutput f32[2]"];
  n0 [shape=box, style=dashed, label="copy:y\ncopy, 2 elements"];
  t0 -> n0 [label="8 B"];
  n0 -> t1 [label="8 B"];
}
)");
}

// ---------------------------------------------------------------------------------------------
// solar lift

class LiftCommand : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("solar_lift_test_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
            "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& text) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path) << text;
    return path;
  }

  // Runs `solar lift ARGS`: {exit code, stdout, stderr}.
  static std::tuple<int, std::string, std::string> run(const std::vector<std::string>& args) {
    std::ostringstream out, err;
    const int rc = cli::lift_command(args, out, err);
    return {rc, out.str(), err.str()};
  }

  std::filesystem::path dir_;
};

TEST_F(LiftCommand, PrintsTheGraphAtTheGivenSizes) {
  const std::string file = write("small.ir", kSmall);
  const auto [rc, out, err] = run({file, "--size", "N=8"});
  EXPECT_EQ(rc, 0) << err;
  EXPECT_EQ(out, print_graph(lift_text(kSmall, {{"N", 8}})));
  EXPECT_NE(out.find("macs 48,"), std::string::npos);  // 8 * 3 * 2
  EXPECT_EQ(std::get<1>(run({"--size=N=8", file, "--dot"})),
            graph_to_dot(lift_text(kSmall, {{"N", 8}})));
}

// One run parses its file once, checks it once, with the --size overrides (a derived size may be
// given at the value it derives to), and lifts the checked program once (ir/parse_count.h,
// einsum/lift_count.h).
TEST_F(LiftCommand, ParsesChecksAndLiftsOnce) {
  const std::string file = write("derived.ir",
                                 "size N = 4\nsize M = N * 2\ninput x : f32[M]\noutput y : f32[M]\n"
                                 "kernel k {\n  for i in 0..M:\n    y[i] = x[i]\n}\n");
  const std::vector<std::vector<std::string>> runs = {
      {file}, {file, "--size", "N=8"}, {file, "--size", "N=8,M=16"}, {file, "--dot"}};
  for (const std::vector<std::string>& args : runs) {
    const int64_t parses = ir::parse_count();
    const int64_t checks = ir::check_count();
    const int64_t lifts = lift_count();
    const auto [rc, out, err] = run(args);
    EXPECT_EQ(rc, 0) << err;
    EXPECT_EQ(ir::parse_count() - parses, 1) << args.size();
    EXPECT_EQ(ir::check_count() - checks, 1) << args.size();
    EXPECT_EQ(lift_count() - lifts, 1) << args.size();
  }
  // A derived size at another value than it derives to: one check, and no lift.
  const int64_t checks = ir::check_count();
  const int64_t lifts = lift_count();
  EXPECT_EQ(run({file, "--size", "M=9"}),
            std::make_tuple(1, std::string(),
                            std::string("solar lift: error: size 'M' is derived from other sizes "
                                        "and is 8 here, not 9\n")));
  EXPECT_EQ(ir::check_count() - checks, 1);
  EXPECT_EQ(lift_count() - lifts, 0);
}

TEST_F(LiftCommand, Help) {
  const auto [rc, out, err] = run({"--help"});
  EXPECT_EQ(rc, 0);
  EXPECT_EQ(out.rfind("usage: solar lift FILE.ir", 0), 0u);
  EXPECT_EQ(err, "");
}

TEST_F(LiftCommand, Errors) {
  const std::string file = write("small.ir", kSmall);
  EXPECT_EQ(run({}), std::make_tuple(1, std::string(),
                                     std::string("solar lift: error: missing FILE.ir (see "
                                                 "'solar lift --help')\n")));
  EXPECT_EQ(std::get<2>(run({file, "--fast"})),
            "solar lift: error: unknown option '--fast' (valid: --size, --dot)\n");
  EXPECT_EQ(std::get<2>(run({file, "--size", "N=2", "--size", "N=3"})),
            "solar lift: error: --size N is given more than once\n");
  EXPECT_EQ(std::get<2>(run({file, "--size"})), "solar lift: error: --size needs NAME=VALUE\n");
  EXPECT_EQ(std::get<2>(run({file, file})),
            "solar lift: error: one file at a time (got '" + file + "' and '" + file + "')\n");
  const std::string bad = write("bad.ir",
                                "input x : f32[4]\noutput y : f32[4]\n"
                                "kernel k {\n  for i in 0..5:\n    y[i] = x[i]\n}\n");
  const auto [rc, out, err] = run({bad});
  EXPECT_EQ(rc, 1);
  EXPECT_EQ(out, "");
  EXPECT_EQ(err, bad +
                     ":5:7: error: index 'i' of 'y' ranges over 0..4 but dimension 0 has size 4\n" +
                     bad +
                     ":5:14: error: index 'i' of 'x' ranges over 0..4 but dimension 0 has "
                     "size 4\n");
}

}  // namespace
}  // namespace solar::einsum
