// Kernel compilation and dispatch (see kernel.h).
#include "kernel.h"

#include <algorithm>
#include <cstdlib>
#include <utility>

#include "gemm.h"
#include "solar/ir/diagnostic.h"
#include "solar/util/error.h"
#include "solar/util/text.h"

namespace solar::exec {
namespace {

std::vector<int64_t> row_major_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) strides[d - 1] = strides[d] * shape[d];
  return strides;
}

// Memory cost of running loop l innermost, per access: 0 when l does not move it, 1 when
// contiguous, 4 otherwise (a cache line per element).
int access_cost(const Access& a, size_t l) {
  const int64_t s = a.flat.coef[l];
  return s == 0 ? 0 : (s == 1 || s == -1) ? 1 : 4;
}

int stride_cost(const CompiledKernel& k, size_t l) {
  int cost = access_cost(k.out, l);
  for (const Access& r : k.reads) cost += access_cost(r, l);
  return cost;
}

// Whether distinct values of the output loops write distinct elements: each output loop is alone
// in some dimension of the output index (a sufficient condition).
bool output_one_to_one(const CompiledKernel& k, const std::vector<int>& outs) {
  return std::all_of(outs.begin(), outs.end(), [&](int l) {
    return std::any_of(k.out.dims.begin(), k.out.dims.end(), [&](const Linear& d) {
      for (size_t m = 0; m < d.coef.size(); ++m) {
        if ((d.coef[m] != 0) != (m == static_cast<size_t>(l))) return false;
      }
      return true;
    });
  });
}

// The interpreter's loop order. Moving an output loop innermost reorders the points of the domain
// but not the order in which any one output element receives its values, so the results are the
// same bits; it is done when the loop has a constant extent of at least kMinVectorLoop, no loop
// bound uses it, the output is one-to-one over the output loops, and it makes the accesses
// cheaper than the innermost loop does.
std::vector<int> choose_order(const CompiledKernel& k) {
  constexpr int64_t kMinVectorLoop = 16;
  std::vector<int> order(k.loops.size());
  for (size_t l = 0; l < order.size(); ++l) order[l] = static_cast<int>(l);
  if (order.size() < 2) return order;
  const std::vector<int> outs = k.output_loops();
  if (!output_one_to_one(k, outs)) return order;
  size_t best = order.size() - 1;
  int best_cost = stride_cost(k, best);
  for (int v : outs) {
    const auto l = static_cast<size_t>(v);
    const LoopBounds& b = k.loops[l];
    const bool used_by_bounds =
        std::any_of(k.loops.begin(), k.loops.end(),
                    [&](const LoopBounds& o) { return o.lo.coef[l] != 0 || o.hi.coef[l] != 0; });
    if (used_by_bounds || !b.lo.is_constant() || !b.hi.is_constant() ||
        b.hi.c - b.lo.c < kMinVectorLoop || stride_cost(k, l) >= best_cost) {
      continue;
    }
    best = l;
    best_cost = stride_cost(k, l);
  }
  order.erase(order.begin() + static_cast<ptrdiff_t>(best));
  order.push_back(static_cast<int>(best));
  return order;
}

class Compiler {
 public:
  Compiler(const ir::Kernel& k, const ir::Stmt& s, Env& env) : kernel_(k), env_(env) {
    ck_.name = k.name;
    ck_.file = env.program.file;
    ck_.loc = s.loc;
    ck_.op = k.op;
    ck_.symbols = &env.symbols;
    for (const ir::Loop& l : k.loops) loop_names_.push_back(l.name);
  }

  CompiledKernel compile() {
    for (size_t l = 0; l < kernel_.loops.size(); ++l) ck_.loops.push_back(bounds(l));
    ck_.out = access(kernel_.out, kernel_.out_indices, kernel_.out_loc);
    ck_.root = node(*kernel_.rhs, 0);
    if (ck_.op != ir::AssignOp::Assign) check_reduction_domain();
    ck_.order = choose_order(ck_);
    return std::move(ck_);
  }

 private:
  // The checker guarantees that indices and bounds are affine, and bounds use only the loops to
  // their left.
  Linear linear(const ir::IntExpr& e) {
    std::optional<Linear> f = to_linear(e, loop_names_, env_.symbols, ck_.file);
    SOLAR_CHECK(f.has_value(), "a kernel index or bound is not affine");
    return std::move(*f);
  }

  LoopBounds bounds(size_t l) {
    const ir::Loop& loop = kernel_.loops[l];
    LoopBounds b{loop.name, linear(*loop.lo), linear(*loop.hi)};
    for (size_t m = l; m < loop_names_.size(); ++m) {
      SOLAR_CHECK(b.lo.coef[m] == 0 && b.hi.coef[m] == 0, "a loop bound uses a later loop");
    }
    return b;
  }

  Access access(const std::string& name, const std::vector<ir::IntExprP>& indices, ir::Loc loc) {
    Tensor& t = env_.tensor(name);
    SOLAR_CHECK(indices.size() == t.shape().size(), "access rank differs from the tensor's");
    Access a;
    a.tensor = name;
    a.loc = loc;
    a.dtype = t.dtype();
    a.data = static_cast<std::byte*>(t.data());
    a.shape = t.shape();
    a.flat.coef.assign(loop_names_.size(), 0);
    const std::vector<int64_t> strides = row_major_strides(a.shape);
    for (size_t d = 0; d < indices.size(); ++d) {
      a.dims.push_back(linear(*indices[d]));
      a.flat.c += a.dims[d].c * strides[d];
      for (size_t l = 0; l < loop_names_.size(); ++l) {
        a.flat.coef[l] += a.dims[d].coef[l] * strides[d];
      }
    }
    return a;
  }

  // Appends the node for `e` (and its operands) and returns its index. `depth` is the first
  // scratch register `e` may use; ck_.depth ends as the number of registers needed.
  int node(const ir::Expr& e, int depth) {
    Node n;
    n.kind = e.kind;
    n.unary = e.unary_op;
    n.binary = e.binary_op;
    n.cast = e.cast_to;
    n.value = e.number;
    switch (e.kind) {
      case ir::ExprKind::Const:
        break;
      case ir::ExprKind::Index:
        n.index = to_linear(*e.index, loop_names_, env_.symbols, ck_.file);
        n.index_expr = e.index.get();
        break;
      case ir::ExprKind::Read:
        n.access = static_cast<int>(ck_.reads.size());
        ck_.reads.push_back(access(e.tensor, e.indices, e.loc.line ? e.loc : ck_.loc));
        break;
      case ir::ExprKind::Unary:
      case ir::ExprKind::Cast:
        n.args = {node(*e.args[0], depth)};
        break;
      case ir::ExprKind::Binary:  // a in the result register, b in register `depth`
        n.args = {node(*e.args[0], depth), node(*e.args[1], depth + 1)};
        ck_.depth = std::max(ck_.depth, depth + 1);
        break;
      case ir::ExprKind::Select:  // the condition, then b, in register `depth`; a in the result
        n.args = {node(*e.args[0], depth + 1), node(*e.args[1], depth + 1),
                  node(*e.args[2], depth + 1)};
        ck_.depth = std::max(ck_.depth, depth + 1);
        break;
    }
    ck_.nodes.push_back(std::move(n));
    return static_cast<int>(ck_.nodes.size()) - 1;
  }

  // A reduction initialises the elements indexed by its output loops; that set must not depend
  // on the loops it reduces over.
  void check_reduction_domain() {
    const std::vector<int> outs = ck_.output_loops();
    for (int o : outs) {
      for (size_t r = 0; r < ck_.loops.size(); ++r) {
        if (std::find(outs.begin(), outs.end(), static_cast<int>(r)) != outs.end()) continue;
        const LoopBounds& b = ck_.loops[static_cast<size_t>(o)];
        if (b.lo.coef[r] != 0 || b.hi.coef[r] != 0) {
          throw_at(ck_, kernel_.loops[static_cast<size_t>(o)].loc,
                   "the bounds of output loop '" + b.name + "' depend on reduction loop '" +
                       ck_.loops[r].name +
                       "': a reduction's output elements must not depend on the loops it "
                       "reduces over");
        }
      }
    }
  }

  const ir::Kernel& kernel_;
  Env& env_;
  std::vector<std::string> loop_names_;
  CompiledKernel ck_;
};

}  // namespace

bool Access::in_bounds_at(const int64_t* idx) const {
  for (size_t d = 0; d < dims.size(); ++d) {
    const int64_t v = dims[d].eval(idx);
    if (v < 0 || v >= shape[d]) return false;
  }
  return true;
}

std::vector<int> CompiledKernel::output_loops() const {
  std::vector<int> nest;
  for (size_t l = 0; l < loops.size(); ++l) {
    const bool used = std::any_of(out.dims.begin(), out.dims.end(),
                                  [&](const Linear& d) { return d.coef[l] != 0; });
    if (used) nest.push_back(static_cast<int>(l));
  }
  return nest;
}

void throw_at(const CompiledKernel& k, ir::Loc loc, const std::string& what) {
  throw ir::DiagnosticError({ir::Diagnostic{k.file, loc.line ? loc : k.loc, what}});
}

void throw_out_of_bounds(const CompiledKernel& k, const Access& a, const int64_t* idx, bool write) {
  std::vector<int64_t> index;
  for (const Linear& d : a.dims) index.push_back(d.eval(idx));
  std::string at;  // the loops the index uses
  for (size_t l = 0; l < k.loops.size(); ++l) {
    if (a.flat.coef[l] == 0) continue;
    at += (at.empty() ? " (at " : ", ") + k.loops[l].name + "=" + std::to_string(idx[l]);
  }
  throw_at(k, a.loc,
           "kernel '" + k.name + "' " + (write ? "writes " : "reads ") + a.tensor + "[" +
               join_ints(index) + "], out of bounds for its shape [" + join_ints(a.shape) + "]" +
               (at.empty() ? "" : at + ")"));
}

CompiledKernel compile_kernel(const ir::Kernel& k, const ir::Stmt& s, Env& env) {
  return Compiler(k, s, env).compile();
}

std::vector<Interval> loop_ranges(const CompiledKernel& k) {
  std::vector<Interval> ranges;
  for (const LoopBounds& b : k.loops) {
    const Interval lo = range_of(b.lo, ranges);
    const Interval hi = range_of(b.hi, ranges);
    ranges.push_back({lo.lo, hi.hi - 1});  // lo <= i < hi
    if (ranges.back().lo > ranges.back().hi) return {};
  }
  return ranges;
}

Interval range_of(const Linear& f, const std::vector<Interval>& ranges) {
  Interval r{f.c, f.c};
  for (size_t l = 0; l < ranges.size() && l < f.coef.size(); ++l) {
    const int64_t a = f.coef[l] * ranges[l].lo;
    const int64_t b = f.coef[l] * ranges[l].hi;
    r.lo += std::min(a, b);
    r.hi += std::max(a, b);
  }
  return r;
}

bool may_overlap(const CompiledKernel& k, const Access& read) {
  const std::vector<Interval> ranges = loop_ranges(k);
  if (ranges.size() != k.loops.size()) return false;  // an empty loop: no point runs
  for (size_t d = 0; d < read.dims.size() && d < k.out.dims.size(); ++d) {
    const Interval w = range_of(k.out.dims[d], ranges);
    const Interval r = range_of(read.dims[d], ranges);
    if (w.hi < r.lo || r.hi < w.lo) return false;
  }
  return true;
}

namespace {

// A repeat's steps are compiled this many at a time (each compiled kernel holds its accesses).
constexpr int64_t kMaxHeldSteps = 4096;
// About this many points of one step run before the next step's (a block of loop 0).
constexpr int64_t kBlockPoints = 256;

bool same_linear(const Linear& a, const Linear& b) { return a.c == b.c && a.coef == b.coef; }

// Whether `steps` (one kernel compiled at consecutive values of a repeat index) may run block by
// block of their loop 0, every step on a block before the next block: each point p of the loop
// nest must touch, at every step, only elements of the output that no other point touches. It
// holds when the kernel assigns (`=`), its loop bounds are constants the same at every step,
// every loop is alone in some "fiber" dimension of the output index (one that is the same form
// at every step, so distinct points write distinct elements of distinct fibers), every read of
// the output has the write's forms in the fiber dimensions (it stays in its point's fiber), and
// no read of the output may touch an element its own step writes (so no snapshot is needed);
// and only where a step's innermost loop writes strided elements (else the steps already walk
// memory in order).
// Other tensors are only read: the repeat's body is this one kernel. A scan step qualifies:
// y[i, t] = y[i, t - 1] + x[i, t] has fiber dimension 0 (the form i at every t).
bool runs_by_blocks(const std::vector<CompiledKernel>& steps, const std::string& out) {
  const CompiledKernel& k0 = steps.front();
  if (k0.op != ir::AssignOp::Assign || k0.loops.empty()) return false;
  // A step that already writes contiguous elements along its innermost loop gains nothing.
  if (std::abs(k0.out.flat.at(k0.order.back())) == 1) return false;
  std::vector<bool> fiber(k0.out.dims.size(), true);
  for (const CompiledKernel& k : steps) {
    if (k.op != k0.op || k.loops.size() != k0.loops.size()) return false;
    for (size_t l = 0; l < k.loops.size(); ++l) {
      const LoopBounds& b = k.loops[l];
      if (!b.lo.is_constant() || !b.hi.is_constant() || b.lo.c != k0.loops[l].lo.c ||
          b.hi.c != k0.loops[l].hi.c) {
        return false;
      }
    }
    for (size_t d = 0; d < fiber.size(); ++d) {
      fiber[d] = fiber[d] && same_linear(k.out.dims[d], k0.out.dims[d]);
    }
  }
  for (size_t l = 0; l < k0.loops.size(); ++l) {
    bool alone = false;
    for (size_t d = 0; d < fiber.size() && !alone; ++d) {
      if (!fiber[d]) continue;
      alone = true;
      for (size_t m = 0; m < k0.loops.size(); ++m) {
        alone = alone && (k0.out.dims[d].coef[m] != 0) == (m == l);
      }
    }
    if (!alone) return false;
  }
  for (const CompiledKernel& k : steps) {
    for (const Access& a : k.reads) {
      if (a.tensor != out) continue;
      for (size_t d = 0; d < fiber.size(); ++d) {
        if (fiber[d] && !same_linear(a.dims[d], k0.out.dims[d])) return false;
      }
      if (may_overlap(k, a)) return false;
    }
  }
  return true;
}

}  // namespace

bool run_repeated_kernel(const ir::Stmt& s, const std::string& var, int64_t lo, int64_t hi,
                         Env& env) {
  const auto& k = std::get<ir::Kernel>(s.node);
  if (hi - lo < 2) return false;
  std::vector<CompiledKernel> steps;  // the first two steps decide whether to try at all
  for (int64_t t = lo; t < lo + 2; ++t) {
    env.symbols[var] = t;
    steps.push_back(compile_kernel(k, s, env));
  }
  if (!runs_by_blocks(steps, k.out)) return false;
  for (int64_t first = lo; first < hi; first += kMaxHeldSteps) {
    const int64_t last = std::min(hi, first + kMaxHeldSteps);
    if (first != lo) steps.clear();
    steps.reserve(static_cast<size_t>(last - first));
    for (int64_t t = first + static_cast<int64_t>(steps.size()); t < last; ++t) {
      env.symbols[var] = t;
      steps.push_back(compile_kernel(k, s, env));
    }
    if (!runs_by_blocks(steps, k.out)) {
      if (first == lo) return false;  // nothing has run: the caller runs the steps one by one
      for (int64_t t = first; t < last; ++t) {
        env.symbols[var] = t;
        run_kernel(s, env);
      }
      continue;
    }
    const int64_t begin = steps.front().loops[0].lo.c;
    const int64_t end = steps.front().loops[0].hi.c;
    int64_t inner = 1;  // points of one value of loop 0
    for (size_t l = 1; l < steps.front().loops.size(); ++l) {
      const LoopBounds& b = steps.front().loops[l];
      inner = b.hi.c > b.lo.c ? std::min(inner * (b.hi.c - b.lo.c), kBlockPoints) : 0;
    }
    if (inner == 0) continue;  // no point runs
    const int64_t block = std::max<int64_t>(1, kBlockPoints / inner);
    for (int64_t b = begin; b < end; b += block) {
      for (int64_t t = first; t < last; ++t) {
        CompiledKernel& ck = steps[static_cast<size_t>(t - first)];
        ck.loops[0].lo.c = b;
        ck.loops[0].hi.c = std::min(end, b + block);
        env.symbols[var] = t;  // for index expressions evaluated per point
        run_generic(ck);
      }
    }
  }
  return true;
}

void run_kernel(const ir::Stmt& s, Env& env) {
  const auto& k = std::get<ir::Kernel>(s.node);
  CompiledKernel ck = compile_kernel(k, s, env);
  // Reads of the output see its state before the kernel: a snapshot, taken only when a read may
  // touch an element the kernel writes (a scan step reads row t - 1 and writes row t: none).
  std::optional<Tensor> snapshot;
  for (Access& a : ck.reads) {
    if (a.tensor != k.out || !may_overlap(ck, a)) continue;
    if (!snapshot) snapshot = env.tensor(k.out).clone();
    a.data = static_cast<std::byte*>(snapshot->data());
  }
  if (env.fast_paths && (run_gemm(ck) || run_copy(ck))) return;
  run_generic(ck);
}

}  // namespace solar::exec
