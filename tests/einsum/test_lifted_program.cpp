// A program held with its check and its graph (include/solar/einsum/lifted_program.h): each
// made once, however often asked for, and the same as a check and a lift made apart.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "solar/einsum/graph.h"
#include "solar/einsum/lift_count.h"
#include "solar/einsum/lifted_program.h"
#include "solar/ir/checker.h"
#include "solar/ir/diagnostic.h"
#include "solar/ir/parse_count.h"
#include "solar/ir/parser.h"

namespace solar::einsum {
namespace {

const char* const kMatmul = R"(size M = 64
input a : f32[M, 32]
input b : f32[32, 16]
output c : f32[M, 16]
kernel mm {
  for i in 0..M, j in 0..16, k in 0..32:
    c[i, j] += a[i, k] * b[k, j]
}
)";

TEST(LiftedProgram, ChecksOnceAndLiftsOnce) {
  const LiftedProgram p(ir::parse(kMatmul, "mm.ir"));
  const int64_t checks = ir::check_count();
  const int64_t lifts = lift_count();
  EXPECT_EQ(p.checked().sizes().at("M"), 64);
  EXPECT_EQ(ir::check_count() - checks, 1);
  EXPECT_EQ(lift_count() - lifts, 0);  // not lifted until asked for
  const Graph& g = p.graph();
  EXPECT_EQ(&p.graph(), &g);
  (void)p.checked();
  EXPECT_EQ(ir::check_count() - checks, 1);
  EXPECT_EQ(lift_count() - lifts, 1);
  // 64 * 16 * 32 multiply-adds, as a graph lifted apart has them.
  const Graph apart = lift(ir::check_program(p.program()));
  ASSERT_EQ(g.nodes.size(), apart.nodes.size());
  EXPECT_EQ(g.nodes[0].counts.macs, 32768);
  EXPECT_EQ(g.nodes[0].counts.macs, apart.nodes[0].counts.macs);
  EXPECT_EQ(g.nodes[0].bytes_read(), apart.nodes[0].bytes_read());
  EXPECT_EQ(g.routing, Routing::Balanced);
}

TEST(LiftedProgram, AProgramThatFailsTheCheckerFailsEachTime) {
  const LiftedProgram p(ir::parse("input a : f32[4]\noutput c : f32[4]\n", "bad.ir"));
  EXPECT_THROW((void)p.checked(), ir::DiagnosticError);  // c is never written
  EXPECT_THROW((void)p.graph(), ir::DiagnosticError);
}

TEST(Counters, CountEveryParseCheckAndLift) {
  const int64_t parses = ir::parse_count();
  const int64_t checks = ir::check_count();
  const int64_t lifts = lift_count();
  const ir::Program p = ir::parse(kMatmul, "mm.ir");
  const Graph g = lift(p, {});  // checks it (again), then lifts it
  EXPECT_EQ(ir::parse_count() - parses, 1);
  EXPECT_EQ(ir::check_count() - checks, 1);
  EXPECT_EQ(lift_count() - lifts, 1);
  (void)ir::check(p, ir::check_or_throw(p));
  EXPECT_EQ(ir::check_count() - checks, 3);
}

}  // namespace
}  // namespace solar::einsum
