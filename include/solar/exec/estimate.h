// The estimated time of SOLAR's executor on a program, from the counts of its einsum graph: what
// `solar ir run --budget-s` and the verification's time budget (python/solar/verify/budget.py,
// `--verify-budget-s`) refuse a program by, before any tensor is made.
#pragma once

#include "solar/einsum/graph.h"

namespace solar::exec {

// Conservative rates of the executor, per kind of work as the einsum counts split it, each at
// most the slowest figure measured on one core of a loaded machine (bench/README.md,
// "Verification time"): multiply-adds (matmuls, convolutions, transposed convolutions: the GEMM
// fast path), the other ops (elementwise, reductions, selects: the interpreter), and the bytes
// each node reads and writes.
inline constexpr double kExecutorMacsPerS = 1e8;
inline constexpr double kExecutorOpsPerS = 5e7;
inline constexpr double kExecutorBytesPerS = 5e8;

struct ExecutorEstimate {
  double macs = 0;       // the graph's multiply-adds
  double other_ops = 0;  // its other ops
  double bytes = 0;      // the bytes its nodes read and write
  double seconds = 0;    // each at its rate, added
};

// The estimate of the executor's time on the program lifted to `g`.
ExecutorEstimate executor_estimate(const einsum::Graph& g);

}  // namespace solar::exec
