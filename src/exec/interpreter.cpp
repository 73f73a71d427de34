// The generic kernel interpreter (see kernel.h): the right side is evaluated over chunks of the
// innermost loop, into double registers of kChunk lanes.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <utility>

#include "elements.h"
#include "kernel.h"
#include "solar/util/error.h"
#include "value_ops.h"

namespace solar::exec {
namespace {

// Calls fn(idx, inner, n) for each chunk of the iteration space of `nest` (loops of k, in nest
// order, whose bounds use only loops of `nest`): idx holds every nest loop's value, the innermost
// (`inner`) at the chunk's first point; the chunk is n consecutive values of that loop. A nest
// without loops is one point: inner == -1 and n == 1.
template <typename Fn>
void walk(const CompiledKernel& k, const std::vector<int>& nest, size_t level, int64_t* idx,
          Fn& fn) {
  const int l = nest[level];
  const LoopBounds& b = k.loops[static_cast<size_t>(l)];
  const int64_t lo = b.lo.eval(idx);
  const int64_t hi = b.hi.eval(idx);
  if (level + 1 < nest.size()) {
    for (idx[l] = lo; idx[l] < hi; ++idx[l]) walk(k, nest, level + 1, idx, fn);
    return;
  }
  for (int64_t t = lo; t < hi; t += kChunk) {
    idx[l] = t;
    fn(static_cast<const int64_t*>(idx), l, std::min(kChunk, hi - t));
  }
}

template <typename Fn>
void for_each_chunk(const CompiledKernel& k, const std::vector<int>& nest, Fn fn) {
  std::vector<int64_t> idx(k.loops.size(), 0);
  if (nest.empty()) {
    fn(static_cast<const int64_t*>(idx.data()), -1, int64_t{1});
    return;
  }
  // A walked loop of constant bounds with no values empties the walk: nothing to visit, however
  // many values the loops around it have (10^12 groups of 0 channels each took hours).
  for (const int l : nest) {
    const LoopBounds& b = k.loops[static_cast<size_t>(l)];
    if (b.lo.is_constant() && b.hi.is_constant() && b.hi.c <= b.lo.c) return;
  }
  walk(k, nest, 0, idx.data(), fn);
}

// Throws when `a` is out of bounds at lane `first` or `last` of a chunk. Indices are affine in
// the chunk's loop, so the extremes over any lanes in between are at these two.
void check_lanes(const CompiledKernel& k, const Access& a, const int64_t* idx, int inner,
                 int64_t first, int64_t last, bool write) {
  for (size_t d = 0; d < a.dims.size(); ++d) {
    const int64_t v0 = a.dims[d].eval(idx);
    const int64_t c = a.dims[d].at(inner);
    const int64_t lo = v0 + std::min(c * first, c * last);
    const int64_t hi = v0 + std::max(c * first, c * last);
    if (lo >= 0 && hi < a.shape[d]) continue;
    std::vector<int64_t> point(idx, idx + k.loops.size());
    if (inner >= 0) {
      const auto l = static_cast<size_t>(inner);
      point[l] += first;
      if (a.in_bounds_at(point.data())) point[l] += last - first;  // then the last lane is out
    }
    throw_out_of_bounds(k, a, point.data(), write);
  }
}

class Evaluator {
 public:
  explicit Evaluator(const CompiledKernel& k)
      : k_(k),
        regs_(static_cast<size_t>(k.depth * kChunk)),
        masks_(static_cast<size_t>(2 * k.depth * kChunk)),
        result_(kChunk) {}

  // The right side at the n points of a chunk (see walk()).
  const double* eval(const int64_t* idx, int inner, int64_t n) {
    idx_ = idx;
    inner_ = inner;
    n_ = n;
    eval_node(k_.root, result_.data(), nullptr, 0);
    return result_.data();
  }

 private:
  double* reg(int depth) { return regs_.data() + static_cast<size_t>(depth) * kChunk; }
  uint8_t* mask_reg(int i) { return masks_.data() + static_cast<size_t>(i) * kChunk; }

  // Evaluates node `id` into out[0, n_) at the lanes where mask is set (all when null), using
  // registers from `depth` on.
  void eval_node(int id, double* out, const uint8_t* mask, int depth) {
    const Node& n = k_.nodes[static_cast<size_t>(id)];
    switch (n.kind) {
      case ir::ExprKind::Const:
        std::fill_n(out, n_, n.value);
        return;
      case ir::ExprKind::Index:
        return eval_index(n, out, mask);
      case ir::ExprKind::Read:
        return eval_read(n, out, mask);
      case ir::ExprKind::Unary:
        eval_node(n.args[0], out, mask, depth);
        return apply_unary(n.unary, out, n_);
      case ir::ExprKind::Cast:
        eval_node(n.args[0], out, mask, depth);
        for (int64_t l = 0; l < n_; ++l) out[l] = ir::round_to_dtype(out[l], n.cast);
        return;
      case ir::ExprKind::Binary:
        eval_node(n.args[0], out, mask, depth);
        eval_node(n.args[1], reg(depth), mask, depth + 1);
        return apply_binary(n.binary, out, reg(depth), n_);
      case ir::ExprKind::Select:
        return eval_select(n, out, mask, depth);
    }
  }

  void eval_index(const Node& n, double* out, const uint8_t* mask) {
    if (n.index) {
      const int64_t v0 = n.index->eval(idx_);
      const int64_t c = n.index->at(inner_);
      for (int64_t l = 0; l < n_; ++l) out[l] = static_cast<double>(v0 + c * l);
      return;
    }
    // Not affine (only in trees built in code, e.g. Index(i / 2)): evaluated point by point, at
    // the active lanes only.
    ir::SymbolValues values = *k_.symbols;
    for (size_t l = 0; l < k_.loops.size(); ++l) values[k_.loops[l].name] = idx_[l];
    for (int64_t l = 0; l < n_; ++l) {
      out[l] = 0.0;
      if (mask != nullptr && !mask[l]) continue;
      if (inner_ >= 0) values[k_.loops[static_cast<size_t>(inner_)].name] = idx_[inner_] + l;
      out[l] = static_cast<double>(ir::eval_int(*n.index_expr, values, k_.file));
    }
  }

  void eval_read(const Node& n, double* out, const uint8_t* mask) {
    const Access& a = k_.reads[static_cast<size_t>(n.access)];
    int64_t first = 0;
    int64_t last = n_ - 1;
    if (mask != nullptr) {
      while (first < n_ && !mask[first]) ++first;
      while (last >= first && !mask[last]) --last;
    }
    if (first > last) {  // no lane reads
      std::fill_n(out, n_, 0.0);
      return;
    }
    check_lanes(k_, a, idx_, inner_, first, last, /*write=*/false);
    load_strided(a.data, a.dtype, a.flat.eval(idx_), a.flat.at(inner_), n_, out, mask);
  }

  // Only the lanes that take a branch evaluate it: a read in a branch not taken is not performed.
  void eval_select(const Node& n, double* out, const uint8_t* mask, int depth) {
    double* cond = reg(depth);
    eval_node(n.args[0], cond, mask, depth + 1);
    uint8_t* take_a = mask_reg(2 * depth);
    uint8_t* take_b = mask_reg(2 * depth + 1);
    int64_t count_a = 0;
    int64_t count_b = 0;
    for (int64_t l = 0; l < n_; ++l) {
      const bool active = mask == nullptr || mask[l];
      take_a[l] = active && cond[l] != 0;
      take_b[l] = active && cond[l] == 0;
      count_a += take_a[l];
      count_b += take_b[l];
    }
    if (count_a > 0) eval_node(n.args[1], out, count_a == n_ ? nullptr : take_a, depth + 1);
    if (count_b == 0) return;
    double* b = reg(depth);  // the condition is no longer needed
    eval_node(n.args[2], b, count_b == n_ ? nullptr : take_b, depth + 1);
    for (int64_t l = 0; l < n_; ++l) {
      if (take_b[l]) out[l] = b[l];
    }
  }

  const CompiledKernel& k_;
  std::vector<double> regs_;
  std::vector<uint8_t> masks_;
  std::vector<double> result_;
  const int64_t* idx_ = nullptr;
  int inner_ = -1;
  int64_t n_ = 0;
};

// Moves n elements of `size` bytes from `from` (stride `fs` elements) to `to` (stride `ts`).
template <typename T>
void move_strided(std::byte* to, int64_t ts, const std::byte* from, int64_t fs, int64_t n) {
  T* t = reinterpret_cast<T*>(to);
  const T* f = reinterpret_cast<const T*>(from);
  if (ts == 1 && fs == 1) {
    std::copy_n(f, n, t);
    return;
  }
  for (int64_t l = 0; l < n; ++l) t[l * ts] = f[l * fs];
}

void run_assign(const CompiledKernel& k) {
  Evaluator ev(k);
  const Access& out = k.out;
  for_each_chunk(k, k.order, [&](const int64_t* idx, int inner, int64_t n) {
    check_lanes(k, out, idx, inner, 0, n - 1, /*write=*/true);
    const double* v = ev.eval(idx, inner, n);
    store_strided(out.data, out.dtype, out.flat.eval(idx), out.flat.at(inner), n, v);
  });
}

double identity(ir::AssignOp op) {
  switch (op) {
    case ir::AssignOp::Sum:
      return 0.0;
    case ir::AssignOp::Prod:
      return 1.0;
    case ir::AssignOp::Max:
      return -std::numeric_limits<double>::infinity();
    case ir::AssignOp::Min:
      return std::numeric_limits<double>::infinity();
    case ir::AssignOp::Assign:
      break;
  }
  SOLAR_CHECK(false, "identity() of `=`");
  return 0.0;
}

// Folds chunk values v[0, n) into the accumulator: acc[off + l * s] op= v[l]; when s == 0 (the
// chunk's loop is reduced over) the chunk is folded first, in order, then combined once.
template <typename Op>
void fold(double* acc, int64_t off, int64_t s, const double* v, int64_t n, Op op) {
  if (s == 0) {
    double r = acc[off];
    for (int64_t l = 0; l < n; ++l) r = op(r, v[l]);
    acc[off] = r;
    return;
  }
  if (s == 1) {  // contiguous: vectorised
    for (int64_t l = 0; l < n; ++l) acc[off + l] = op(acc[off + l], v[l]);
    return;
  }
  for (int64_t l = 0; l < n; ++l) acc[off + l * s] = op(acc[off + l * s], v[l]);
}

void fold(ir::AssignOp op, double* acc, int64_t off, int64_t s, const double* v, int64_t n) {
  switch (op) {
    case ir::AssignOp::Sum:
      return fold(acc, off, s, v, n, [](double a, double b) { return a + b; });
    case ir::AssignOp::Prod:
      return fold(acc, off, s, v, n, [](double a, double b) { return a * b; });
    case ir::AssignOp::Max:
      return fold(acc, off, s, v, n, nan_max);
    case ir::AssignOp::Min:
      return fold(acc, off, s, v, n, nan_min);
    case ir::AssignOp::Assign:
      break;
  }
  SOLAR_CHECK(false, "fold() of `=`");
}

// Reductions are self-initialising: the elements indexed by the output loops start at the
// identity, then every point of the domain is folded in, in double. An f64 output accumulates in
// place; any other dtype accumulates in a double buffer that is rounded once into the output.
void run_reduction(const CompiledKernel& k) {
  const Access& out = k.out;
  std::vector<double> buffer;
  double* acc = reinterpret_cast<double*>(out.data);
  if (out.dtype != ir::DType::F64) {
    int64_t numel = 1;
    for (int64_t d : out.shape) numel *= d;
    buffer.resize(static_cast<size_t>(numel));
    acc = buffer.data();
  }
  const std::vector<int> outs = k.output_loops();
  const double init = identity(k.op);
  for_each_chunk(k, outs, [&](const int64_t* idx, int inner, int64_t n) {
    check_lanes(k, out, idx, inner, 0, n - 1, /*write=*/true);
    const int64_t off = out.flat.eval(idx);
    const int64_t s = out.flat.at(inner);
    for (int64_t l = 0; l < n; ++l) acc[off + l * s] = init;
  });
  // Every point below writes an element initialised above (checked there).
  Evaluator ev(k);
  for_each_chunk(k, k.order, [&](const int64_t* idx, int inner, int64_t n) {
    const double* v = ev.eval(idx, inner, n);
    fold(k.op, acc, out.flat.eval(idx), out.flat.at(inner), v, n);
  });
  if (buffer.empty()) return;
  std::vector<double> chunk(kChunk);
  for_each_chunk(k, outs, [&](const int64_t* idx, int inner, int64_t n) {
    const int64_t off = out.flat.eval(idx);
    const int64_t s = out.flat.at(inner);
    for (int64_t l = 0; l < n; ++l) chunk[static_cast<size_t>(l)] = acc[off + l * s];
    store_strided(out.data, out.dtype, off, s, n, chunk.data());
  });
}

}  // namespace

// A copy: `=` whose right side is one read of the output's dtype (a slice or a transpose made
// contiguous, a weight selected). Its elements move as they are, without the round trip through
// double (which also keeps integers above 2^53 and NaN payloads exact). False when `k` is not one.
bool run_copy(const CompiledKernel& k) {
  const Node& root = k.nodes[static_cast<size_t>(k.root)];
  if (k.op != ir::AssignOp::Assign || root.kind != ir::ExprKind::Read) return false;
  const Access& in = k.reads[static_cast<size_t>(root.access)];
  const Access& out = k.out;
  if (in.dtype != out.dtype) return false;
  const int64_t size = ir::dtype_size(out.dtype);
  if (size != 1 && size != 2 && size != 4 && size != 8) return false;
  for_each_chunk(k, k.order, [&](const int64_t* idx, int inner, int64_t n) {
    check_lanes(k, out, idx, inner, 0, n - 1, /*write=*/true);
    check_lanes(k, in, idx, inner, 0, n - 1, /*write=*/false);
    std::byte* to = out.data + out.flat.eval(idx) * size;
    const std::byte* from = in.data + in.flat.eval(idx) * size;
    const int64_t ts = out.flat.at(inner);
    const int64_t fs = in.flat.at(inner);
    switch (size) {
      case 1:
        return move_strided<uint8_t>(to, ts, from, fs, n);
      case 2:
        return move_strided<uint16_t>(to, ts, from, fs, n);
      case 4:
        return move_strided<uint32_t>(to, ts, from, fs, n);
      default:
        return move_strided<uint64_t>(to, ts, from, fs, n);
    }
  });
  return true;
}

void run_generic(const CompiledKernel& k) {
  if (k.op == ir::AssignOp::Assign) {
    run_assign(k);
  } else {
    run_reduction(k);
  }
}

}  // namespace solar::exec
