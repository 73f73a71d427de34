// The GEMM fast path (see gemm.h).
//
// For each batch point, C (Mt x Nt) = A (Mt x Kt) * B (Kt x Nt), where Mt, Nt, Kt are the
// products of the extents of the M, N, K loops and the element of each matrix at (row, col) is
// at `base + row_offset[row] + col_offset[col]` in its tensor (offset tables, so any affine
// access works). Blocks of A and B are packed into double panels and multiplied by a register-
// blocked micro-kernel (the BLIS scheme, with the block of C kept in a double buffer until every
// K block is added).
#include "gemm.h"

#include <algorithm>
#include <cstdlib>
#include <optional>

#include "elements.h"

namespace solar::exec {
namespace {

constexpr int64_t kMR = 4;          // micro-kernel rows
constexpr int64_t kNR = 8;          // micro-kernel columns
constexpr int64_t kMC = 128;        // rows of a packed A block
constexpr int64_t kKC = 256;        // depth of packed blocks
constexpr int64_t kNC = 512;        // columns of a packed B block
constexpr int64_t kMinWork = 4096;  // smaller problems (M*N*K per batch point) stay generic

struct Dim {
  int loop;
  int64_t lo, extent;
};

struct Plan {
  std::vector<Dim> batch, m, n, k;
  const Access* a = nullptr;
  const Access* b = nullptr;
  // C's index is not known one-to-one over the batch, M and N loops (a transposed convolution
  // scatters: out[s * x + r] += ...): the products are added into a double accumulator.
  bool scatter = false;
};

bool uses(const Access& x, size_t l) {
  return std::any_of(x.dims.begin(), x.dims.end(), [&](const Linear& d) { return d.coef[l] != 0; });
}

int64_t product(const std::vector<Dim>& dims) {
  int64_t p = 1;
  for (const Dim& d : dims) p *= d.extent;
  return p;
}

// Every index of `x` within bounds over the box.
bool in_bounds(const Access& x, const std::vector<Dim>& box) {
  for (size_t d = 0; d < x.dims.size(); ++d) {
    int64_t lo = x.dims[d].c;
    int64_t hi = x.dims[d].c;
    for (const Dim& dim : box) {
      const int64_t c = x.dims[d].coef[static_cast<size_t>(dim.loop)];
      const int64_t first = c * dim.lo;
      const int64_t last = c * (dim.lo + dim.extent - 1);
      lo += std::min(first, last);
      hi += std::max(first, last);
    }
    if (lo < 0 || hi >= x.shape[d]) return false;
  }
  return true;
}

// Sufficient condition for C's offset to be one-to-one over `dims`: ordered by stride, each
// stride exceeds the span of the smaller ones (a mixed-radix numbering).
bool one_to_one(const Access& c, const std::vector<Dim>& dims) {
  std::vector<std::pair<int64_t, int64_t>> strides;  // (|stride|, extent)
  for (const Dim& d : dims) {
    if (d.extent == 1) continue;
    strides.emplace_back(std::llabs(c.flat.coef[static_cast<size_t>(d.loop)]), d.extent);
  }
  std::sort(strides.begin(), strides.end());
  int64_t span = 0;
  for (const auto& [stride, extent] : strides) {
    if (stride <= span) return false;
    span += stride * (extent - 1);
  }
  return true;
}

std::optional<Plan> plan_gemm(const CompiledKernel& k) {
  if (k.op != ir::AssignOp::Sum) return std::nullopt;
  const Node& root = k.nodes[static_cast<size_t>(k.root)];
  if (root.kind != ir::ExprKind::Binary || root.binary != ir::BinaryOp::Mul) return std::nullopt;
  const Node& na = k.nodes[static_cast<size_t>(root.args[0])];
  const Node& nb = k.nodes[static_cast<size_t>(root.args[1])];
  if (na.kind != ir::ExprKind::Read || nb.kind != ir::ExprKind::Read) return std::nullopt;
  Plan p;
  p.a = &k.reads[static_cast<size_t>(na.access)];
  p.b = &k.reads[static_cast<size_t>(nb.access)];
  std::vector<Dim> box;
  for (size_t l = 0; l < k.loops.size(); ++l) {
    const LoopBounds& b = k.loops[l];
    if (!b.lo.is_constant() || !b.hi.is_constant() || b.hi.c <= b.lo.c) return std::nullopt;
    const Dim dim{static_cast<int>(l), b.lo.c, b.hi.c - b.lo.c};
    box.push_back(dim);
    const bool c = uses(k.out, l), a = uses(*p.a, l), bb = uses(*p.b, l);
    if (c && a && bb) {
      p.batch.push_back(dim);
    } else if (c && a && !bb) {
      p.m.push_back(dim);
    } else if (c && !a && bb) {
      p.n.push_back(dim);
    } else if (!c && a && bb) {
      p.k.push_back(dim);
    } else if (dim.extent == 1) {
      p.batch.push_back(dim);  // a single point: any role
    } else {
      return std::nullopt;
    }
  }
  if (product(p.m) * product(p.n) * product(p.k) < kMinWork) return std::nullopt;
  if (!in_bounds(k.out, box) || !in_bounds(*p.a, box) || !in_bounds(*p.b, box)) {
    return std::nullopt;  // the interpreter reports the first out-of-bounds access
  }
  std::vector<Dim> written = p.batch;
  written.insert(written.end(), p.m.begin(), p.m.end());
  written.insert(written.end(), p.n.begin(), p.n.end());
  p.scatter = !one_to_one(k.out, written);
  return p;
}

// The offset contribution of `dims` to `x`'s flat index, for each point of the dims' box in
// row-major order.
std::vector<int64_t> offsets(const Access& x, const std::vector<Dim>& dims) {
  std::vector<int64_t> table{0};
  for (const Dim& d : dims) {
    const int64_t c = x.flat.coef[static_cast<size_t>(d.loop)];
    std::vector<int64_t> next;
    next.reserve(table.size() * static_cast<size_t>(d.extent));
    for (int64_t t : table) {
      for (int64_t i = 0; i < d.extent; ++i) next.push_back(t + c * (d.lo + i));
    }
    table = std::move(next);
  }
  return table;
}

// A matrix view of one operand: element (r, c) at base + rows[r] + cols[c].
struct Matrix {
  const std::byte* data;
  Loader load;
  int64_t base;
  const std::vector<int64_t>& rows;
  const std::vector<int64_t>& cols;
  double at(int64_t r, int64_t c) const {
    return load(data, base + rows[static_cast<size_t>(r)] + cols[static_cast<size_t>(c)]);
  }
};

// Packs rows [r0, r0 + nr) x depth [k0, k0 + kc) of A into panels of kMR rows, each stored
// depth-major (panel[p * kMR + i]); rows past nr are zero.
void pack_a(const Matrix& a, int64_t r0, int64_t nr, int64_t k0, int64_t kc, double* out) {
  for (int64_t p0 = 0; p0 < nr; p0 += kMR) {
    for (int64_t p = 0; p < kc; ++p) {
      for (int64_t i = 0; i < kMR; ++i) {
        *out++ = p0 + i < nr ? a.at(r0 + p0 + i, k0 + p) : 0.0;
      }
    }
  }
}

// Packs depth [k0, k0 + kc) x columns [c0, c0 + nc) of B into panels of kNR columns.
void pack_b(const Matrix& b, int64_t k0, int64_t kc, int64_t c0, int64_t nc, double* out) {
  for (int64_t q0 = 0; q0 < nc; q0 += kNR) {
    for (int64_t p = 0; p < kc; ++p) {
      for (int64_t j = 0; j < kNR; ++j) {
        *out++ = q0 + j < nc ? b.at(k0 + p, c0 + q0 + j) : 0.0;
      }
    }
  }
}

// c[i * ldc + j] += sum_p a[p * kMR + i] * b[p * kNR + j], for a kMR x kNR tile.
void micro_kernel(int64_t kc, const double* a, const double* b, double* c, int64_t ldc) {
  double acc[kMR][kNR] = {};
  for (int64_t p = 0; p < kc; ++p) {
    for (int64_t i = 0; i < kMR; ++i) {
      for (int64_t j = 0; j < kNR; ++j) acc[i][j] += a[p * kMR + i] * b[p * kNR + j];
    }
  }
  for (int64_t i = 0; i < kMR; ++i) {
    for (int64_t j = 0; j < kNR; ++j) c[i * ldc + j] += acc[i][j];
  }
}

int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

class Gemm {
 public:
  Gemm(const CompiledKernel& k, const Plan& p)
      : k_(k),
        a_rows_(offsets(*p.a, p.m)),
        a_cols_(offsets(*p.a, p.k)),
        b_rows_(offsets(*p.b, p.k)),
        b_cols_(offsets(*p.b, p.n)),
        c_rows_(offsets(k.out, p.m)),
        c_cols_(offsets(k.out, p.n)),
        a_batch_(offsets(*p.a, p.batch)),
        b_batch_(offsets(*p.b, p.batch)),
        c_batch_(offsets(k.out, p.batch)),
        a_(*p.a),
        b_(*p.b),
        mt_(static_cast<int64_t>(a_rows_.size())),
        nt_(static_cast<int64_t>(b_cols_.size())),
        kt_(static_cast<int64_t>(a_cols_.size())),
        pa_(static_cast<size_t>(kMC * kKC)),
        pb_(static_cast<size_t>(kKC * kNC)),
        cbuf_(static_cast<size_t>(kMC * kNC)),
        scatter_(p.scatter) {}

  void run() {
    if (scatter_) start_scatter();
    for (size_t t = 0; t < c_batch_.size(); ++t) {
      const Matrix a{a_.data, loader_for(a_.dtype), a_.flat.c + a_batch_[t], a_rows_, a_cols_};
      const Matrix b{b_.data, loader_for(b_.dtype), b_.flat.c + b_batch_[t], b_rows_, b_cols_};
      for (int64_t c0 = 0; c0 < nt_; c0 += kNC) {
        for (int64_t r0 = 0; r0 < mt_; r0 += kMC) {
          block(a, b, r0, std::min(kMC, mt_ - r0), c0, std::min(kNC, nt_ - c0));
          store(k_.out.flat.c + c_batch_[t], r0, std::min(kMC, mt_ - r0), c0,
                std::min(kNC, nt_ - c0));
        }
      }
    }
    if (scatter_) finish_scatter();
  }

 private:
  // cbuf_ = rows [r0, r0 + mc) x columns [c0, c0 + nc) of A * B, over all of K.
  void block(const Matrix& a, const Matrix& b, int64_t r0, int64_t mc, int64_t c0, int64_t nc) {
    const int64_t ldc = round_up(nc, kNR);
    std::fill(cbuf_.begin(), cbuf_.end(), 0.0);
    for (int64_t k0 = 0; k0 < kt_; k0 += kKC) {
      const int64_t kc = std::min(kKC, kt_ - k0);
      pack_a(a, r0, mc, k0, kc, pa_.data());
      pack_b(b, k0, kc, c0, nc, pb_.data());
      for (int64_t j = 0; j < nc; j += kNR) {
        for (int64_t i = 0; i < mc; i += kMR) {
          micro_kernel(kc, pa_.data() + i * kc, pb_.data() + j * kc, cbuf_.data() + i * ldc + j,
                       ldc);
        }
      }
    }
  }

  // Calls fn(offset) for every element of C the kernel writes, in a fixed order.
  template <typename Fn>
  void for_each_written(Fn fn) const {
    for (const int64_t t : c_batch_) {
      for (const int64_t r : c_rows_) {
        const int64_t row = k_.out.flat.c + t + r;
        for (const int64_t c : c_cols_) fn(row + c);
      }
    }
  }

  // A scatter accumulates in double: in the output itself when it is f64, else in a buffer of
  // the output's size that is rounded once into it at the end (as the interpreter does). The
  // written elements start at 0 (a reduction initialises its own output).
  void start_scatter() {
    if (k_.out.dtype == ir::DType::F64) {
      acc_ = reinterpret_cast<double*>(k_.out.data);
    } else {
      int64_t numel = 1;
      for (const int64_t d : k_.out.shape) numel *= d;
      buffer_.assign(static_cast<size_t>(numel), 0.0);
      acc_ = buffer_.data();
    }
    for_each_written([&](int64_t off) { acc_[off] = 0.0; });
  }

  void finish_scatter() {
    if (buffer_.empty()) return;
    const Storer put = storer_for(k_.out.dtype);
    for_each_written([&](int64_t off) { put(k_.out.data, off, acc_[off]); });
  }

  void store(int64_t base, int64_t r0, int64_t mc, int64_t c0, int64_t nc) {
    const Storer put = storer_for(k_.out.dtype);
    const int64_t ldc = round_up(nc, kNR);
    if (scatter_) {
      for (int64_t i = 0; i < mc; ++i) {
        const int64_t row = base + c_rows_[static_cast<size_t>(r0 + i)];
        for (int64_t j = 0; j < nc; ++j) {
          acc_[row + c_cols_[static_cast<size_t>(c0 + j)]] +=
              cbuf_[static_cast<size_t>(i * ldc + j)];
        }
      }
      return;
    }
    for (int64_t i = 0; i < mc; ++i) {
      const int64_t row = base + c_rows_[static_cast<size_t>(r0 + i)];
      for (int64_t j = 0; j < nc; ++j) {
        put(k_.out.data, row + c_cols_[static_cast<size_t>(c0 + j)],
            cbuf_[static_cast<size_t>(i * ldc + j)]);
      }
    }
  }

  const CompiledKernel& k_;
  std::vector<int64_t> a_rows_, a_cols_, b_rows_, b_cols_, c_rows_, c_cols_;
  std::vector<int64_t> a_batch_, b_batch_, c_batch_;
  const Access& a_;
  const Access& b_;
  int64_t mt_, nt_, kt_;
  std::vector<double> pa_, pb_, cbuf_;
  bool scatter_;
  std::vector<double> buffer_;  // a scatter's accumulator, when the output is not f64
  double* acc_ = nullptr;
};

}  // namespace

bool run_gemm(const CompiledKernel& k) {
  const std::optional<Plan> plan = plan_gemm(k);
  if (!plan) return false;
  Gemm(k, *plan).run();
  return true;
}

}  // namespace solar::exec
