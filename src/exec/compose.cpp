// Composition statements (see compose.h). Most are a strided copy between views: a view is an
// offset and a stride per dimension into a tensor's storage, so slices, permutations,
// broadcasts and concatenations are all copies between suitably built views.
#include "compose.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstring>
#include <string>
#include <vector>

#include "elements.h"
#include "fft.h"
#include "solar/ir/diagnostic.h"
#include "solar/util/error.h"
#include "solar/util/text.h"
#include "value_ops.h"

namespace solar::exec {
namespace {

using ir::ComposeOp;

struct View {
  std::byte* data = nullptr;
  ir::DType dtype = ir::DType::F32;
  int64_t offset = 0;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
};

std::vector<int64_t> row_major_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) strides[d - 1] = strides[d] * shape[d];
  return strides;
}

int64_t numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

View whole(Tensor& t) {
  return View{static_cast<std::byte*>(t.data()), t.dtype(), 0, t.shape(),
              row_major_strides(t.shape())};
}

// Copies n elements (strided) between storages, exactly when the dtypes agree.
void copy_run(const View& src, int64_t so, int64_t ss, const View& dst, int64_t doff, int64_t ds,
              int64_t n) {
  if (src.dtype == dst.dtype) {
    const int64_t size = ir::dtype_size(src.dtype);
    if (ss == 1 && ds == 1) {
      std::memmove(dst.data + doff * size, src.data + so * size, static_cast<size_t>(n * size));
      return;
    }
    for (int64_t l = 0; l < n; ++l) {
      std::memcpy(dst.data + (doff + l * ds) * size, src.data + (so + l * ss) * size,
                  static_cast<size_t>(size));
    }
    return;
  }
  const Loader load = loader_for(src.dtype);
  const Storer store = storer_for(dst.dtype);
  for (int64_t l = 0; l < n; ++l) store(dst.data, doff + l * ds, load(src.data, so + l * ss));
}

// dst = src, element by element over their common shape.
void copy_view(const View& src, const View& dst) {
  SOLAR_CHECK(src.shape == dst.shape, "copy between views of different shapes");
  if (numel(dst.shape) == 0) return;
  const size_t rank = dst.shape.size();
  if (rank == 0) return copy_run(src, src.offset, 1, dst, dst.offset, 1, 1);
  std::vector<int64_t> pos(rank, 0);
  while (true) {
    int64_t so = src.offset, doff = dst.offset;
    for (size_t d = 0; d + 1 < rank; ++d) {
      so += pos[d] * src.strides[d];
      doff += pos[d] * dst.strides[d];
    }
    copy_run(src, so, src.strides[rank - 1], dst, doff, dst.strides[rank - 1], dst.shape[rank - 1]);
    size_t d = rank - 1;  // odometer over all dimensions but the last
    while (d > 0 && ++pos[d - 1] == dst.shape[d - 1]) pos[--d] = 0;
    if (d == 0) return;
  }
}

// Evaluation context of one statement: positions and messages.
class Statement {
 public:
  Statement(const ir::Stmt& s, Env& env) : s_(s), c_(std::get<ir::Compose>(s.node)), env_(env) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw ir::DiagnosticError({ir::Diagnostic{
        env_.program.file, s_.loc, std::string(ir::compose_op_name(c_.op)) + ": " + what}});
  }

  const ir::Compose& compose() const { return c_; }
  Tensor& dst() const { return env_.tensor(c_.dst); }

  int64_t eval(const ir::IntExpr& e) const {
    return ir::eval_int(e, env_.symbols, env_.program.file);
  }

  const ir::ComposeAttr* attr(std::string_view key) const {
    for (const ir::ComposeAttr& a : c_.attrs) {
      if (a.key == key) return &a;
    }
    return nullptr;
  }

  std::vector<int64_t> ints(std::string_view key) const {
    std::vector<int64_t> v;
    if (const ir::ComposeAttr* a = attr(key)) {
      for (const ir::IntExprP& e : a->ints) v.push_back(eval(*e));
    }
    return v;
  }

  // The `dim=` attribute, a dimension of a tensor of rank `rank`.
  size_t dim(size_t rank) const {
    const std::vector<int64_t> v = ints("dim");
    const int64_t d = v.empty() ? -1 : v[0];
    if (d < 0 || d >= static_cast<int64_t>(rank)) {
      fail("dim=" + std::to_string(d) + " is not a dimension of a rank-" + std::to_string(rank) +
           " tensor");
    }
    return static_cast<size_t>(d);
  }

  void expect_shape(const std::vector<int64_t>& got, const std::vector<int64_t>& want,
                    const std::string& what) const {
    if (got != want) {
      fail(what + " has shape " + shape_text(got) + ", expected " + shape_text(want));
    }
  }

  // The view of `v` selected by `slices` (missing trailing dimensions whole; an index drops its
  // dimension).
  View slice(View v, const std::vector<ir::SliceSpec>& slices) const {
    if (slices.size() > v.shape.size()) fail("more slices than dimensions");
    View out{v.data, v.dtype, v.offset, {}, {}};
    for (size_t d = 0; d < v.shape.size(); ++d) {
      if (d >= slices.size()) {
        out.shape.push_back(v.shape[d]);
        out.strides.push_back(v.strides[d]);
        continue;
      }
      slice_dim(slices[d], d, v, out);
    }
    return out;
  }

 private:
  void slice_dim(const ir::SliceSpec& sl, size_t d, const View& v, View& out) const {
    const int64_t size = v.shape[d];
    const int64_t start = sl.start ? eval(*sl.start) : 0;
    if (sl.is_index) {
      if (start < 0 || start >= size) {
        fail("index " + std::to_string(start) + " is out of range for dimension " +
             std::to_string(d) + " of size " + std::to_string(size));
      }
      out.offset += start * v.strides[d];
      return;
    }
    const int64_t stop = sl.stop ? eval(*sl.stop) : size;
    const int64_t step = sl.step ? eval(*sl.step) : 1;
    if (step <= 0) fail("slice step " + std::to_string(step) + " is not positive");
    if (start < 0 || start > size || stop < 0 || stop > size) {
      fail("slice " + std::to_string(start) + ":" + std::to_string(stop) +
           " is out of range for dimension " + std::to_string(d) + " of size " +
           std::to_string(size));
    }
    out.offset += start * v.strides[d];
    out.shape.push_back(stop <= start ? 0 : (stop - start - 1) / step + 1);
    out.strides.push_back(step * v.strides[d]);
  }

  const ir::Stmt& s_;
  const ir::Compose& c_;
  Env& env_;
};

void run_copy(const Statement& st, Tensor& x) {
  const View src = whole(x);
  const View dst = st.slice(whole(st.dst()), st.compose().dst_region);
  st.expect_shape(src.shape, dst.shape, "'" + st.compose().srcs[0] + "'");
  copy_view(src, dst);
}

void run_slice(const Statement& st, Tensor& x) {
  const View src = st.slice(whole(x), st.compose().src_slices);
  const View dst = whole(st.dst());
  st.expect_shape(src.shape, dst.shape, "the slice of '" + st.compose().srcs[0] + "'");
  copy_view(src, dst);
}

void run_reshape(const Statement& st, Tensor& x) {
  Tensor& y = st.dst();
  if (x.numel() != y.numel()) {
    st.fail("'" + st.compose().srcs[0] + "' has " + std::to_string(x.numel()) + " elements, '" +
            st.compose().dst + "' has " + std::to_string(y.numel()));
  }
  View src = whole(x);
  src.shape = y.shape();
  src.strides = row_major_strides(y.shape());
  copy_view(src, whole(y));
}

void run_permute(const Statement& st, Tensor& x) {
  const View xv = whole(x);
  const size_t rank = xv.shape.size();
  View src{xv.data, xv.dtype, 0, {}, {}};
  std::vector<bool> seen(rank, false);
  for (const ir::IntExprP& e : st.compose().list) {
    const int64_t p = st.eval(*e);
    if (p < 0 || p >= static_cast<int64_t>(rank) || seen[static_cast<size_t>(p)]) {
      st.fail("the list is not a permutation of 0.." + std::to_string(rank - 1));
    }
    seen[static_cast<size_t>(p)] = true;
    src.shape.push_back(xv.shape[static_cast<size_t>(p)]);
    src.strides.push_back(xv.strides[static_cast<size_t>(p)]);
  }
  if (src.shape.size() != rank) {
    st.fail("the list is not a permutation of 0.." + std::to_string(rank - 1));
  }
  const View dst = whole(st.dst());
  st.expect_shape(dst.shape, src.shape, "'" + st.compose().dst + "'");
  copy_view(src, dst);
}

std::vector<int64_t> broadcast_dims(const Statement& st, size_t from_rank, size_t to_rank) {
  const std::string& x = st.compose().srcs[0];
  std::vector<int64_t> dims = st.ints("dims");
  if (!st.attr("dims")) {
    if (from_rank > to_rank) {
      st.fail("'" + x + "' has more dimensions than '" + st.compose().dst + "'");
    }
    for (size_t i = 0; i < from_rank; ++i) {
      dims.push_back(static_cast<int64_t>(to_rank - from_rank + i));
    }
  }
  if (dims.size() != from_rank) st.fail("dims= must have one entry per dimension of '" + x + "'");
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] < 0 || dims[i] >= static_cast<int64_t>(to_rank) ||
        (i > 0 && dims[i] <= dims[i - 1])) {
      st.fail("dims= must be increasing dimensions of '" + st.compose().dst + "'");
    }
  }
  return dims;
}

// X's dimension i goes to Y's dimension dims[i] (by default the last ones, as numpy aligns
// them); a size-1 dimension repeats, others must match.
void run_broadcast(const Statement& st, Tensor& x) {
  const View xv = whole(x);
  const View dst = whole(st.dst());
  const std::vector<int64_t> dims = broadcast_dims(st, xv.shape.size(), dst.shape.size());
  View src{xv.data, xv.dtype, 0, dst.shape, std::vector<int64_t>(dst.shape.size(), 0)};
  for (size_t i = 0; i < dims.size(); ++i) {
    const auto d = static_cast<size_t>(dims[i]);
    const int64_t n = xv.shape[i];
    if (n != 1 && n != dst.shape[d]) {
      st.fail("dimension " + std::to_string(i) + " of '" + st.compose().srcs[0] + "' has size " +
              std::to_string(n) + ", which does not broadcast to " + std::to_string(dst.shape[d]));
    }
    if (n != 1) src.strides[d] = xv.strides[i];
  }
  copy_view(src, dst);
}

void run_concat(const Statement& st, const std::vector<Tensor*>& srcs) {
  const View y = whole(st.dst());
  const size_t d = st.dim(y.shape.size());
  int64_t total = 0;
  for (size_t i = 0; i < srcs.size(); ++i) {
    std::vector<int64_t> want = y.shape;
    want[d] = srcs[i]->shape().size() == want.size() ? srcs[i]->shape()[d] : -1;
    st.expect_shape(srcs[i]->shape(), want, "'" + st.compose().srcs[i] + "'");
    total += want[d];
  }
  if (total != y.shape[d]) {
    st.fail("the inputs have " + std::to_string(total) + " positions along dimension " +
            std::to_string(d) + ", '" + st.compose().dst + "' has " + std::to_string(y.shape[d]));
  }
  int64_t at = 0;
  for (Tensor* x : srcs) {
    View part = y;
    part.offset = at * y.strides[d];
    part.shape[d] = x->shape()[d];
    copy_view(whole(*x), part);
    at += part.shape[d];
  }
}

// The `value=` of pad: a number, or an integer expression; 0 when absent.
double pad_value(const Statement& st) {
  const ir::ComposeAttr* a = st.attr("value");
  if (a == nullptr) return 0.0;
  if (a->number) return *a->number;
  return a->ints.size() == 1 ? static_cast<double>(st.eval(*a->ints[0])) : 0.0;
}

// Y = value everywhere, then X copied to Y[lo[0]:, lo[1]:, ...].
void run_pad(const Statement& st, Tensor& x) {
  const View xv = whole(x);
  const View yv = whole(st.dst());
  const size_t rank = yv.shape.size();
  const std::vector<int64_t> lo = st.ints("lo");
  const std::vector<int64_t> hi = st.ints("hi");
  if (xv.shape.size() != rank || lo.size() != rank || hi.size() != rank) {
    st.fail("'" + st.compose().srcs[0] + "', '" + st.compose().dst +
            "', lo= and hi= must all have " + std::to_string(rank) + " dimensions");
  }
  std::vector<int64_t> want(rank);
  View dst = yv;
  dst.shape = xv.shape;
  for (size_t d = 0; d < rank; ++d) {
    if (lo[d] < 0 || hi[d] < 0) st.fail("padding must be non-negative");
    want[d] = lo[d] + xv.shape[d] + hi[d];
    dst.offset += lo[d] * yv.strides[d];
  }
  st.expect_shape(yv.shape, want, "'" + st.compose().dst + "'");
  const double fill = pad_value(st);
  const Storer store = storer_for(yv.dtype);
  for (int64_t i = 0; i < numel(yv.shape); ++i) store(yv.data, i, fill);
  copy_view(xv, dst);
}

// Calls fn(pos, flat) for every position of `shape`, in row-major order.
template <typename Fn>
void for_each_position(const std::vector<int64_t>& shape, Fn fn) {
  const int64_t n = numel(shape);
  std::vector<int64_t> pos(shape.size(), 0);
  for (int64_t flat = 0; flat < n; ++flat) {
    fn(static_cast<const std::vector<int64_t>&>(pos), flat);
    for (size_t d = shape.size(); d-- > 0;) {
      if (++pos[d] < shape[d]) break;
      pos[d] = 0;
    }
  }
}

std::vector<int64_t> unravel(int64_t flat, const std::vector<int64_t>& shape) {
  std::vector<int64_t> pos(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    pos[d] = shape[d] ? flat % shape[d] : 0;
    flat = shape[d] ? flat / shape[d] : 0;
  }
  return pos;
}

// Data-dependent indices: an integer tensor whose elements must lie in [0, bound).
class Indices {
 public:
  Indices(const Statement& st, Tensor& t, const std::string& name, int64_t bound, size_t dim)
      : st_(st), t_(t), name_(name), bound_(bound), dim_(dim), load_(loader_for(t.dtype())) {
    if (!ir::dtype_is_integer(t.dtype())) {
      st.fail("index tensor '" + name + "' has dtype " + std::string(ir::dtype_name(t.dtype())) +
              "; indices must have an integer dtype");
    }
  }

  int64_t at(int64_t flat) const {
    const double v = load_(static_cast<const std::byte*>(t_.data()), flat);
    if (v < 0 || v >= static_cast<double>(bound_)) {
      st_.fail("index " + name_ + shape_text(unravel(flat, t_.shape())) + " = " +
               std::to_string(static_cast<int64_t>(v)) + " is out of range for dimension " +
               std::to_string(dim_) + " of size " + std::to_string(bound_));
    }
    return static_cast<int64_t>(v);
  }

 private:
  const Statement& st_;
  Tensor& t_;
  const std::string& name_;
  int64_t bound_;
  size_t dim_;
  Loader load_;
};

// `Y[a.., i.., b..] = X[a.., I[i..], b..]`
void run_take(const Statement& st, Tensor& x, Tensor& index) {
  const View xv = whole(x);
  const View yv = whole(st.dst());
  const size_t d = st.dim(xv.shape.size());
  std::vector<int64_t> want(xv.shape.begin(), xv.shape.begin() + static_cast<ptrdiff_t>(d));
  want.insert(want.end(), index.shape().begin(), index.shape().end());
  want.insert(want.end(), xv.shape.begin() + static_cast<ptrdiff_t>(d) + 1, xv.shape.end());
  st.expect_shape(yv.shape, want, "'" + st.compose().dst + "'");
  const Indices idx(st, index, st.compose().srcs[1], xv.shape[d], d);
  const int64_t outer = numel({xv.shape.begin(), xv.shape.begin() + static_cast<ptrdiff_t>(d)});
  const int64_t inner = xv.shape.size() > d ? xv.strides[d] : 1;
  const int64_t ni = index.numel();
  for (int64_t a = 0; a < outer; ++a) {
    for (int64_t i = 0; i < ni; ++i) {
      copy_run(xv, (a * xv.shape[d] + idx.at(i)) * inner, 1, yv, (a * ni + i) * inner, 1, inner);
    }
  }
}

// Every dimension of `small` but `skip` is at most that of `big` (torch's gather/scatter rule).
void expect_within(const Statement& st, const std::vector<int64_t>& small,
                   const std::vector<int64_t>& big, size_t skip, const std::string& what) {
  bool ok = small.size() == big.size();
  for (size_t e = 0; ok && e < small.size(); ++e) ok = e == skip || small[e] <= big[e];
  if (!ok) st.fail(what + ": shape " + shape_text(small) + " does not fit in " + shape_text(big));
}

// The offset in `v` of `pos` with dimension d replaced by j.
int64_t offset_with(const View& v, const std::vector<int64_t>& pos, size_t d, int64_t j) {
  int64_t off = v.offset;
  for (size_t e = 0; e < pos.size(); ++e) off += (e == d ? j : pos[e]) * v.strides[e];
  return off;
}

// torch.gather: Y[p] = X[p with dimension d replaced by I[p]]; Y has I's shape.
void run_gather(const Statement& st, Tensor& x, Tensor& index) {
  const View xv = whole(x);
  const View yv = whole(st.dst());
  const size_t d = st.dim(xv.shape.size());
  st.expect_shape(yv.shape, index.shape(), "'" + st.compose().dst + "'");
  expect_within(st, index.shape(), xv.shape, d, "index '" + st.compose().srcs[1] + "'");
  const Indices idx(st, index, st.compose().srcs[1], xv.shape[d], d);
  for_each_position(index.shape(), [&](const std::vector<int64_t>& p, int64_t flat) {
    copy_run(xv, offset_with(xv, p, d, idx.at(flat)), 1, yv, flat, 1, 1);
  });
}

double combine(const std::string& reduce, double old, double v) {
  if (reduce == "add") return old + v;
  if (reduce == "max") return nan_max(old, v);
  return nan_min(old, v);
}

// torch.scatter / scatter_reduce (include_self): Y = X, then for every position p of I, in
// row-major order, Y[p with dimension d replaced by I[p]] op= S[p], rounded to Y's dtype each
// time.
void run_scatter(const Statement& st, Tensor& x, Tensor& index, Tensor& s) {
  const ir::ComposeAttr* r = st.attr("reduce");
  const std::string reduce = r ? r->word : "none";
  if (reduce != "none" && reduce != "add" && reduce != "max" && reduce != "min") {
    st.fail("unknown reduce=" + reduce + "; expected none, add, max or min");
  }
  const View yv = whole(st.dst());
  const View sv = whole(s);
  const std::string& iname = st.compose().srcs[1];
  st.expect_shape(x.shape(), yv.shape, "'" + st.compose().srcs[0] + "'");
  const size_t d = st.dim(yv.shape.size());
  expect_within(st, index.shape(), yv.shape, d, "index '" + iname + "'");
  expect_within(st, index.shape(), sv.shape, sv.shape.size(), "index '" + iname + "'");
  const Indices idx(st, index, iname, yv.shape[d], d);
  copy_view(whole(x), yv);
  const Loader load_y = loader_for(yv.dtype);
  const Loader load_s = loader_for(sv.dtype);
  const Storer store = storer_for(yv.dtype);
  for_each_position(index.shape(), [&](const std::vector<int64_t>& p, int64_t flat) {
    const int64_t at = offset_with(yv, p, d, idx.at(flat));
    const int64_t from = offset_with(sv, p, sv.shape.size(), 0);  // no dimension replaced
    if (reduce == "none") return copy_run(sv, from, 1, yv, at, 1, 1);
    store(yv.data, at, combine(reduce, load_y(yv.data, at), load_s(sv.data, from)));
  });
}

// argsort: along dimension d, the positions of X's elements in stable sorted order (ascending;
// descending=1: descending), as integers. NaN sorts above every number (last ascending, first
// descending), as torch.sort does; equal elements keep their order.
void run_argsort(const Statement& st, Tensor& x) {
  const View xv = whole(x);
  const View yv = whole(st.dst());
  st.expect_shape(yv.shape, xv.shape, "'" + st.compose().dst + "'");
  const size_t d = st.dim(xv.shape.size());
  const std::vector<int64_t> v = st.ints("descending");
  const bool descending = !v.empty() && v[0] != 0;
  const Loader load = loader_for(xv.dtype);
  const Storer store = storer_for(yv.dtype);
  const int64_t n = xv.shape[d];
  std::vector<int64_t> line_shape = xv.shape;
  line_shape[d] = 1;
  std::vector<double> values(static_cast<size_t>(n));
  std::vector<int64_t> order(static_cast<size_t>(n));
  // a before b in the sorted order (NaN is the largest value).
  const auto before = [&](int64_t a, int64_t b) {
    const double va = values[static_cast<size_t>(a)];
    const double vb = values[static_cast<size_t>(b)];
    const bool na = std::isnan(va);
    const bool nb = std::isnan(vb);
    if (na || nb) return descending ? na && !nb : nb && !na;
    return descending ? va > vb : va < vb;
  };
  for_each_position(line_shape, [&](const std::vector<int64_t>& p, int64_t) {
    for (int64_t j = 0; j < n; ++j) {
      values[static_cast<size_t>(j)] = load(xv.data, offset_with(xv, p, d, j));
      order[static_cast<size_t>(j)] = j;
    }
    std::stable_sort(order.begin(), order.end(), before);
    for (int64_t j = 0; j < n; ++j) {
      store(yv.data, offset_with(yv, p, d, j), static_cast<double>(order[static_cast<size_t>(j)]));
    }
  });
}

// A line of a tensor's elements along one dimension, as complex values in double: a real
// tensor's elements, or a complex tensor's (real, imaginary) pairs of its part dtype.
struct Line {
  const View& v;
  std::vector<int64_t> pos;
  size_t d;

  std::complex<double> get(int64_t j) const {
    const int64_t at = offset_with(v, pos, d, j);
    if (!ir::dtype_is_complex(v.dtype)) return ir::load_element(v.data + at * size(), v.dtype);
    const ir::DType part = ir::complex_part(v.dtype);
    const std::byte* p = v.data + at * size();
    return {ir::load_element(p, part), ir::load_element(p + size() / 2, part)};
  }
  void set(int64_t j, std::complex<double> z) const {
    std::byte* p = v.data + offset_with(v, pos, d, j) * size();
    if (!ir::dtype_is_complex(v.dtype)) return ir::store_element(p, v.dtype, z.real());
    const ir::DType part = ir::complex_part(v.dtype);
    ir::store_element(p, part, z.real());
    ir::store_element(p + size() / 2, part, z.imag());
  }
  int64_t size() const { return ir::dtype_size(v.dtype); }
};

// rfft, irfft, fft, ifft along `dim` (docs/ir.md, "Complex tensors"): each line of the signal
// (n points: X's for rfft, fft, ifft; Y's for irfft) transformed in double, scaled by norm (0:
// none, 1: 1/sqrt(n), 2: 1/n), rounded to Y's parts. irfft reads the one-sided half and takes
// the rest of the spectrum as its Hermitian mirror (X[n - k] conjugated), as torch's c2r does.
void run_fft(const Statement& st, Tensor& x) {
  const ComposeOp op = st.compose().op;
  const View xv = whole(x);
  const View yv = whole(st.dst());
  const size_t d = st.dim(xv.shape.size());
  const int64_t n = (op == ComposeOp::Irfft ? yv : xv).shape[d];
  std::vector<int64_t> signal_shape = op == ComposeOp::Irfft ? yv.shape : xv.shape;
  std::vector<int64_t> half = signal_shape;
  half[d] = n / 2 + 1;
  if (op == ComposeOp::Rfft) {
    if (yv.shape != half) st.expect_shape(yv.shape, signal_shape, "'" + st.compose().dst + "'");
  } else {
    st.expect_shape(op == ComposeOp::Irfft ? xv.shape : yv.shape,
                    op == ComposeOp::Irfft ? half : signal_shape,
                    "'" + (op == ComposeOp::Irfft ? st.compose().srcs[0] : st.compose().dst) + "'");
  }
  const std::vector<int64_t> norm = st.ints("norm");
  const int64_t how = norm.empty() ? 0 : norm[0];
  const double scale = how == 1   ? 1.0 / std::sqrt(static_cast<double>(n))
                       : how == 2 ? 1.0 / static_cast<double>(n)
                                  : 1.0;
  const int sign = op == ComposeOp::Irfft || op == ComposeOp::Ifft ? 1 : -1;
  const int64_t read = op == ComposeOp::Irfft ? n / 2 + 1 : n;
  const int64_t written = yv.shape[d];
  std::vector<int64_t> line_shape = signal_shape;
  line_shape[d] = 1;
  std::vector<std::complex<double>> v(static_cast<size_t>(n));
  for_each_position(line_shape, [&](const std::vector<int64_t>& p, int64_t) {
    const Line in{xv, p, d};
    const Line out{yv, p, d};
    for (int64_t j = 0; j < read; ++j) v[static_cast<size_t>(j)] = in.get(j);
    for (int64_t j = read; j < n; ++j) v[static_cast<size_t>(j)] = std::conj(in.get(n - j));
    dft(v, sign);
    for (int64_t j = 0; j < written; ++j) out.set(j, v[static_cast<size_t>(j)] * scale);
  });
}

// view_as_real, view_as_complex: the same bytes (a complex element is its pair).
void run_view_as(const Statement& st, Tensor& x) {
  Tensor& y = st.dst();
  if (y.nbytes() != x.nbytes()) st.fail("the result does not have the operand's bytes");
  std::memcpy(y.data(), x.data(), x.nbytes());
}

size_t arity(ComposeOp op) {
  switch (op) {
    case ComposeOp::Copy:
    case ComposeOp::Slice:
    case ComposeOp::Reshape:
    case ComposeOp::Permute:
    case ComposeOp::Broadcast:
    case ComposeOp::Pad:
    case ComposeOp::Argsort:
    case ComposeOp::Rfft:
    case ComposeOp::Irfft:
    case ComposeOp::Fft:
    case ComposeOp::Ifft:
    case ComposeOp::ViewAsReal:
    case ComposeOp::ViewAsComplex:
      return 1;
    case ComposeOp::Take:
    case ComposeOp::Gather:
      return 2;
    case ComposeOp::Scatter:
      return 3;
    case ComposeOp::Concat:
      return 0;  // any number but zero
  }
  return 0;
}

}  // namespace

void run_compose(const ir::Stmt& s, Env& env) {
  const Statement st(s, env);
  const ir::Compose& c = st.compose();
  const size_t n = arity(c.op);
  if ((n != 0 && c.srcs.size() != n) || c.srcs.empty()) {
    st.fail("expects " + (n ? std::to_string(n) : std::string("at least one")) +
            " tensor operand(s), got " + std::to_string(c.srcs.size()));
  }
  // Operands are read as they were before the statement, also when one is the destination.
  std::vector<Tensor> snapshots;
  snapshots.reserve(c.srcs.size());
  std::vector<Tensor*> x;
  for (const std::string& name : c.srcs) {
    Tensor& t = env.tensor(name);
    if (name == c.dst) snapshots.push_back(t.clone());
    x.push_back(name == c.dst ? &snapshots.back() : &t);
  }
  switch (c.op) {
    case ComposeOp::Copy:
      return run_copy(st, *x[0]);
    case ComposeOp::Slice:
      return run_slice(st, *x[0]);
    case ComposeOp::Reshape:
      return run_reshape(st, *x[0]);
    case ComposeOp::Permute:
      return run_permute(st, *x[0]);
    case ComposeOp::Broadcast:
      return run_broadcast(st, *x[0]);
    case ComposeOp::Concat:
      return run_concat(st, x);
    case ComposeOp::Pad:
      return run_pad(st, *x[0]);
    case ComposeOp::Take:
      return run_take(st, *x[0], *x[1]);
    case ComposeOp::Gather:
      return run_gather(st, *x[0], *x[1]);
    case ComposeOp::Scatter:
      return run_scatter(st, *x[0], *x[1], *x[2]);
    case ComposeOp::Argsort:
      return run_argsort(st, *x[0]);
    case ComposeOp::Rfft:
    case ComposeOp::Irfft:
    case ComposeOp::Fft:
    case ComposeOp::Ifft:
      return run_fft(st, *x[0]);
    case ComposeOp::ViewAsReal:
    case ComposeOp::ViewAsComplex:
      return run_view_as(st, *x[0]);
  }
}

}  // namespace solar::exec
