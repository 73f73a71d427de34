// Kernels: compilation to affine accesses and an expression program, and the generic
// interpreter (private to the executor).
//
// A kernel is compiled once per execution (sizes and repeat indices are then constants): every
// loop bound and tensor index becomes a Linear form, every access a base pointer plus per-dim
// forms, and the right side a flat list of Nodes. The interpreter evaluates the right side over
// chunks of the innermost loop (up to kChunk points at once), so the cost of interpreting the
// tree is paid once per chunk, not once per point.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "env.h"
#include "linear.h"
#include "solar/ir/ast.h"

namespace solar::exec {

inline constexpr int64_t kChunk = 256;

// One tensor access, affine in the loop indices.
struct Access {
  std::string tensor;
  ir::Loc loc;
  ir::DType dtype = ir::DType::F32;
  std::byte* data = nullptr;  // storage (for reads of the kernel's own output: a snapshot)
  std::vector<int64_t> shape;
  std::vector<Linear> dims;  // the index of each dimension
  Linear flat;               // the row-major element offset

  bool in_bounds_at(const int64_t* idx) const;
};

struct LoopBounds {
  std::string name;
  Linear lo, hi;  // affine in the loops to the left
};

// A node of the right side. Children are indices into CompiledKernel::nodes.
struct Node {
  ir::ExprKind kind = ir::ExprKind::Const;
  ir::UnaryOp unary = ir::UnaryOp::Neg;
  ir::BinaryOp binary = ir::BinaryOp::Add;
  ir::DType cast = ir::DType::F64;
  double value = 0.0;                       // Const
  std::optional<Linear> index;              // Index, when affine in the loop indices
  const ir::IntExpr* index_expr = nullptr;  // Index (evaluated per point when not affine)
  int access = -1;                          // Read: index into CompiledKernel::reads
  std::vector<int> args;
};

struct CompiledKernel {
  std::string name;
  std::string file;
  ir::Loc loc;
  ir::AssignOp op = ir::AssignOp::Assign;
  const ir::SymbolValues* symbols = nullptr;  // the run's, for Index nodes that are not affine
  std::vector<LoopBounds> loops;
  Access out;
  std::vector<Access> reads;
  std::vector<Node> nodes;
  int root = 0;
  int depth = 1;  // scratch registers the evaluator needs

  // The order in which the interpreter runs the loops: the kernel's own, or with one output loop
  // moved innermost when that makes the accesses contiguous (see choose_order in kernel.cpp).
  std::vector<int> order;
  // The loops whose index appears in the output index, in nest order.
  std::vector<int> output_loops() const;
};

// Compiles `k` against the tensors of `env` (every access on the tensor's own storage:
// run_kernel points a read of the output at a snapshot where it may touch an element written).
CompiledKernel compile_kernel(const ir::Kernel& k, const ir::Stmt& s, Env& env);

// Runs a compiled kernel that is a copy (its right side one read of the output's dtype) as
// element moves, without the interpreter's round trip through double; false when it is not one.
bool run_copy(const CompiledKernel& k);

// Runs a compiled kernel on the generic interpreter.
void run_generic(const CompiledKernel& k);

// A closed range of integers [lo, hi].
struct Interval {
  int64_t lo = 0, hi = 0;
};

// The range of each loop of `k` over its domain (a loop's bounds may use the loops to its left:
// the ranges of those bound it); empty when some loop can run no iteration. The ranges contain
// every value a loop takes and may be wider (a triangular nest gives its bounding box).
std::vector<Interval> loop_ranges(const CompiledKernel& k);

// The range of `f` when each loop l takes values in ranges[l] (interval arithmetic: it contains
// every value of f over the box, exactly its minimum and maximum).
Interval range_of(const Linear& f, const std::vector<Interval>& ranges);

// Whether the read `read` of k's output may touch an element that k writes: false when, in some
// dimension, the indices it reads and those k writes have disjoint ranges, or no point runs.
bool may_overlap(const CompiledKernel& k, const Access& read);

// Runs `repeat var in lo..hi { s }` (s a kernel statement) with its steps interchanged with the
// kernel's loop 0 where that gives the same results (runs_by_blocks in kernel.cpp: each point
// of the loop nest touches its own elements of the output), so a scan along a row's contiguous
// dimension walks memory a block of rows at a time instead of one strided column per step.
// Returns false, having run nothing, where it does not apply (the caller runs the steps).
bool run_repeated_kernel(const ir::Stmt& s, const std::string& var, int64_t lo, int64_t hi,
                         Env& env);

// Runs the kernel statement `s` (compile, then the GEMM fast path or the interpreter).
void run_kernel(const ir::Stmt& s, Env& env);

// Throws the UserError for an out-of-bounds access of `a` at the loop indices `idx`.
[[noreturn]] void throw_out_of_bounds(const CompiledKernel& k, const Access& a, const int64_t* idx,
                                      bool write);

// `file:line:col: error: what` at `loc` (or at the kernel when loc has no line).
[[noreturn]] void throw_at(const CompiledKernel& k, ir::Loc loc, const std::string& what);

}  // namespace solar::exec
