// The executor's estimated time (include/solar/exec/estimate.h), worked out by hand.
#include <gtest/gtest.h>

#include "solar/einsum/graph.h"
#include "solar/exec/estimate.h"
#include "solar/ir/checker.h"
#include "solar/ir/parser.h"

namespace solar::exec {
namespace {

TEST(ExecutorEstimate, AddsEachKindOfWorkAtItsRate) {
  const ir::Program p = ir::parse(R"(input a : f32[64, 32]
input b : f32[32, 16]
output c : f32[64, 16]
kernel mm {
  for i in 0..64, j in 0..16, k in 0..32:
    c[i, j] += a[i, k] * b[k, j]
}
)",
                                  "mm.ir");
  const ExecutorEstimate e = executor_estimate(einsum::lift(ir::check_program(p)));
  // 64 * 16 * 32 = 32768 MACs, no other op; bytes read a + b = (64 * 32 + 32 * 16) * 4 = 10240,
  // written c = 64 * 16 * 4 = 4096. At 1e8 MAC/s and 5e8 B/s:
  // 32768 / 1e8 + (10240 + 4096) / 5e8 = 3.2768e-4 + 2.8672e-5 = 3.56352e-4 s.
  EXPECT_EQ(e.macs, 32768);
  EXPECT_EQ(e.other_ops, 0);
  EXPECT_EQ(e.bytes, 14336);
  EXPECT_DOUBLE_EQ(e.seconds, 3.56352e-4);
  EXPECT_EQ(kExecutorMacsPerS, 1e8);
  EXPECT_EQ(kExecutorOpsPerS, 5e7);
  EXPECT_EQ(kExecutorBytesPerS, 5e8);
}

}  // namespace
}  // namespace solar::exec
