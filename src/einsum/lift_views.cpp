// Composition statements (Composer in lift_internal.h; docs/einsum.md, "Views"): the view a
// statement gives, folded into its destination's binding or an alias, else a movement node.
#include <algorithm>
#include <cstdint>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "counts.h"
#include "lift_internal.h"
#include "solar/ir/printer.h"
#include "solar/util/error.h"

namespace solar::einsum::detail {
namespace {

// Whether a copy from dtype `a` to `b` keeps every byte as it is, so folds as a view: the same
// dtype, or packed fp4 pairs (f4e2m1x2) to or from a byte dtype (aten.view.dtype: the value of a
// pair is its byte).
bool same_bytes(ir::DType a, ir::DType b) {
  if (a == b) return true;
  const auto byte = [](ir::DType t) { return t == ir::DType::U8 || t == ir::DType::I8; };
  return (a == ir::DType::F4E2M1X2 && byte(b)) || (b == ir::DType::F4E2M1X2 && byte(a));
}

// The first of `positions` (ascending) after i, or `none`.
size_t next_after(const std::vector<size_t>& positions, size_t i, size_t none) {
  const auto it = std::upper_bound(positions.begin(), positions.end(), i);
  return it == positions.end() ? none : *it;
}

// The canonical text of one statement (repeat indices stay symbolic; the node name has them).
std::string statement_text(const ir::Stmt& s) {
  ir::Program one;
  one.body.push_back(std::make_shared<const ir::Stmt>(ir::Stmt{s.node, {}, {}}));
  std::string text = ir::print(one);
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

// The text of a data-dependent access of x (of rank `rank`) over the loops d0, d1, ... of
// the elements moved: "x[d0, idx[d1, d2], d3]" for take (I's loops replace dimension dim),
// "x[d0, idx[d0, d1]]" for gather and scatter (the loops of I's own dimensions).
std::string indexed_text(const std::string& x, size_t rank, size_t dim, const std::string& idx,
                         size_t idx_rank, bool take) {
  const auto var = [](size_t k) { return "d" + std::to_string(k); };
  const size_t first = take ? dim : 0;
  std::string s = x + "[";
  for (size_t d = 0; d < rank; ++d) {
    if (d > 0) s += ", ";
    if (d != dim) {
      s += var(take && d > dim ? d - 1 + idx_rank : d);
      continue;
    }
    s += idx + "[";
    for (size_t k = 0; k < idx_rank; ++k) s += (k ? ", " : "") + var(first + k);
    s += "]";
  }
  return s + "]";
}

}  // namespace

void Composer::compose(size_t i) {
  const Step& s = program_.steps[i];
  const ir::Compose& c = std::get<ir::Compose>(s.stmt->node);
  std::optional<View> v = view_of(c, s);
  if (v && can_fold(i, c.dst, v->base)) {
    bindings_.bind(c.dst, std::move(*v));
    return;
  }
  if (v && alias_into_output(i, c.dst, *v)) return;
  if (v && in_place_alias(i, c, *v)) return;
  if (c.op == ir::ComposeOp::Scatter) in_place_alias(i, c, binding(c.srcs[0]));
  Movement m = movement(c, s, v);
  const TensorInfo& y = tensor(c.dst);
  const bool expanded = v && expanded_output(*v, y, m);
  Node n;
  n.name = names_.unique(std::string(ir::compose_op_name(c.op)) + ":" + c.dst + s.suffix);
  n.kind = NodeKind::Movement;
  n.op = ir::compose_op_name(c.op);
  n.op_block = s.op_block;
  n.einsum = statement_text(*s.stmt);
  n.domain = box_domain(m.points_shape);
  n.points = numel(m.points_shape);
  n.reads = group(m.reads);
  n.writes = group(m.writes);
  n.out_dtype = y.dtype;
  n.compute_dtype = y.dtype;
  n.counts = fft_ops(c, s);
  const bool view_as = c.op == ir::ComposeOp::ViewAsReal || c.op == ir::ComposeOp::ViewAsComplex;
  // A graph output that is a slice or a permutation of an intermediate is a view in the
  // framework (`irfft(...)[..., :L]`): eager returns it without a kernel, so the unfused model
  // charges it nothing (the intermediate's writer wrote every element); the fused model still
  // counts the output's elements written.
  const bool output_view = v && y.role == ir::TensorRole::Output &&
                           (c.op == ir::ComposeOp::Slice || c.op == ir::ComposeOp::Permute);
  n.relabel = (c.op == ir::ComposeOp::Reshape || view_as || expanded || output_view) &&
              tensor(binding(c.srcs.at(0)).base).role == ir::TensorRole::Intermediate;
  for (const Access& a : n.reads)
    n.compute_dtype = promote(n.compute_dtype, tensor(a.tensor).dtype);
  tracking_.track_movement(c, n);
  nodes_.push_back(std::move(n));
  if (!aliased_inputs_.contains(c.dst)) bindings_.materialise(c.dst);
}

int64_t Composer::eval(const ir::IntExpr& e, const Step& s) const {
  return ir::eval_int(e, s.values, program_.file);
}

std::vector<int64_t> Composer::ints(const ir::Compose& c, std::string_view key,
                                    const Step& s) const {
  std::vector<int64_t> v;
  for (const ir::ComposeAttr& a : c.attrs) {
    if (a.key != key) continue;
    for (const ir::IntExprP& e : a.ints) v.push_back(eval(*e, s));
  }
  return v;
}

std::vector<SliceBounds> Composer::slices(const std::vector<ir::SliceSpec>& specs,
                                          const std::vector<int64_t>& shape, const Step& s) const {
  std::vector<SliceBounds> out;
  for (size_t d = 0; d < specs.size(); ++d) {
    const ir::SliceSpec& sp = specs[d];
    SliceBounds b;
    b.is_index = sp.is_index;
    b.start = sp.start ? eval(*sp.start, s) : 0;
    b.stop = sp.stop ? eval(*sp.stop, s) : shape[d];
    b.step = sp.step ? eval(*sp.step, s) : 1;
    out.push_back(b);
  }
  return out;
}

// The `value=` of a pad: a number, or an integer expression; 0 when absent.
double Composer::pad_value(const ir::Compose& c, const Step& s) const {
  for (const ir::ComposeAttr& a : c.attrs) {
    if (a.key != "value") continue;
    if (a.number) return *a.number;
    if (a.ints.size() == 1) return static_cast<double>(eval(*a.ints[0], s));
  }
  return 0.0;
}

// The view a view statement gives, or nullopt when its data must move.
std::optional<View> Composer::view_of(const ir::Compose& c, const Step& s) const {
  const View x = binding(c.srcs.at(0));
  const TensorInfo& y = tensor(c.dst);
  switch (c.op) {
    case ir::ComposeOp::Copy:
      if (!c.dst_region.empty() || !same_bytes(tensor(c.srcs[0]).dtype, y.dtype)) {
        return std::nullopt;
      }
      return x;
    case ir::ComposeOp::Slice:
      return slice_view(x, slices(c.src_slices, x.shape, s));
    case ir::ComposeOp::Reshape:
      return reshape_view(x, y.shape);
    case ir::ComposeOp::Permute: {
      std::vector<int64_t> perm;
      for (const ir::IntExprP& e : c.list) perm.push_back(eval(*e, s));
      // A complex tensor's pairs stay last.
      if (program_.complex.contains(c.dst)) perm.push_back(static_cast<int64_t>(perm.size()));
      return permute_view(x, perm);
    }
    case ir::ComposeOp::Broadcast: {
      std::vector<int64_t> dims = ints(c, "dims", s);
      const bool has_dims = std::any_of(c.attrs.begin(), c.attrs.end(),
                                        [](const ir::ComposeAttr& a) { return a.key == "dims"; });
      for (size_t i = 0; !has_dims && i < x.shape.size(); ++i) {  // numpy: align on the right
        dims.push_back(static_cast<int64_t>(y.shape.size() - x.shape.size() + i));
      }
      return broadcast_view(x, y.shape, dims);
    }
    case ir::ComposeOp::Pad:
      return pad_view(x, ints(c, "lo", s), ints(c, "hi", s), pad_value(c, s));
    case ir::ComposeOp::ViewAsReal:  // the pairs are the complex tensor's lifted form
    case ir::ComposeOp::ViewAsComplex:
      return reshape_view(x, y.shape);
    case ir::ComposeOp::Rfft:
    case ir::ComposeOp::Irfft:
    case ir::ComposeOp::Fft:
    case ir::ComposeOp::Ifft:
    case ir::ComposeOp::Concat:
    case ir::ComposeOp::Take:
    case ir::ComposeOp::Gather:
    case ir::ComposeOp::Scatter:
    case ir::ComposeOp::Argsort:
      return std::nullopt;
  }
  SOLAR_CHECK(false, "unknown ComposeOp");
}

// Whether `dst = view of base` at step i can stay a view: dst is not a graph output, and while
// it holds this value (until dst is next written) and is still read, base is not overwritten.
// A view that a kernel or a region copy later writes into is materialised (they write only
// part of it), unless it is not read before (then it is dead, and dropped).
bool Composer::can_fold(size_t i, const std::string& dst, const std::string& base) const {
  if (tensor(dst).role == ir::TensorRole::Output || base == dst) return false;
  const size_t end = program_.steps.size();
  const size_t next_write = next_after(program_.uses.writes(dst), i, end);
  const std::vector<size_t>& reads = program_.uses.reads(dst);
  // Read after a region copy into it: the elements the copy leaves come from this value.
  if (region_write(next_write) && !reads.empty() && reads.back() > i) return false;
  const auto last = std::lower_bound(reads.begin(), reads.end(), next_write);
  if (last == reads.begin() || *std::prev(last) <= i) return true;  // never read: dead
  const size_t last_read = *std::prev(last);
  if (next_write < end) {
    const ir::Stmt& w = *program_.steps[next_write].stmt;
    if (w.kind() == ir::StmtKind::Kernel || !std::get<ir::Compose>(w.node).dst_region.empty()) {
      return false;
    }
  }
  return next_after(program_.uses.writes(base), i, end) >= last_read;
}

// Whether step i (steps.size(): none) is a copy into a region of its destination.
bool Composer::region_write(size_t i) const {
  const std::vector<Step>& steps = program_.steps;
  if (i >= steps.size() || steps[i].stmt->kind() == ir::StmtKind::Kernel) return false;
  return !std::get<ir::Compose>(steps[i].stmt->node).dst_region.empty();
}

// The functional form of an in-place update of a graph input x (`cache[:, pos] = k`,
// `index_copy_`; docs/capture.md, "In-place updates of inputs") at step i: `dst = x`, a whole
// copy into an intermediate that only region copies write after it, or `dst = scatter(x, ...)`;
// and nothing reads x afterwards. dst becomes an alias of x: the copy moves nothing, the region
// copies and the scatter write x's elements they name, and later reads of dst read x's
// storage, as an in-place kernel leaves it. `v`: x's view (the copy's source, the scatter's
// first operand).
bool Composer::in_place_alias(size_t i, const ir::Compose& c, const View& v) {
  if (!c.dst_region.empty() || (c.op != ir::ComposeOp::Copy && c.op != ir::ComposeOp::Scatter)) {
    return false;
  }
  const TensorInfo& x = tensor(v.base);
  const TensorInfo& y = tensor(c.dst);
  if (x.role != ir::TensorRole::Input || y.role != ir::TensorRole::Intermediate ||
      x.dtype != y.dtype || !is_whole(v, x) || x.shape != y.shape) {
    return false;
  }
  const std::vector<size_t>& x_reads = program_.uses.reads(v.base);
  if (!x_reads.empty() && x_reads.back() > i) return false;
  const std::vector<size_t>& writes = program_.uses.writes(c.dst);
  const auto after = std::upper_bound(writes.begin(), writes.end(), i);
  if (c.op == ir::ComposeOp::Copy && after == writes.end()) return false;
  for (auto w = after; w != writes.end(); ++w) {
    if (!region_write(*w)) return false;
  }
  bindings_.bind(c.dst, v);
  aliased_inputs_.insert(c.dst);
  return true;
}

// `dst = view of an intermediate` at step i, where dst is a graph output and the view lists
// the intermediate's elements in its own row-major order (a reshape, a same-dtype copy): the
// kernels that wrote the intermediate could have written the output's storage directly, so
// no copy is charged (no real kernel makes one). The intermediate becomes an alias of the
// output: the accesses of its storage so far are the output's, and later reads of it read the
// output. Only when nothing else writes either of them and the output is not read before.
bool Composer::alias_into_output(size_t i, const std::string& dst, const View& v) {
  const TensorInfo& y = tensor(dst);
  if (y.role != ir::TensorRole::Output || v.base == dst) return false;
  const TensorInfo& base = tensor(v.base);
  if (v.padded() || base.role != ir::TensorRole::Intermediate || base.dtype != y.dtype ||
      base.numel != y.numel || v.offset != 0 || numel(v.shape) != base.numel ||
      v.strides != row_major_strides(v.shape)) {
    return false;
  }
  const std::vector<size_t>& base_writes = program_.uses.writes(v.base);
  if (base_writes.empty() || base_writes.back() > i ||
      program_.uses.writes(dst) != std::vector{i}) {
    return false;
  }
  const std::vector<size_t>& dst_reads = program_.uses.reads(dst);
  if (!dst_reads.empty() && dst_reads.front() < i) return false;
  for (Node& n : nodes_) {
    for (auto* list : {&n.reads, &n.writes}) {
      for (Access& a : *list) {
        if (a.tensor == v.base) a.tensor = dst;
      }
    }
  }
  bindings_.rebase(v.base, dst);
  View alias = whole_view(base);
  alias.base = dst;
  bindings_.bind(v.base, alias);
  tracking_.alias(dst, v.base);
  return true;
}

// The operations of an FFT statement (none for the other composition statements): one
// transform per line along `dim` of the real signal (rfft: X; irfft: Y; fft, ifft: X), of
// that signal's length n (fft_counts). Lifted shapes end in the pairs' 2.
OpCounts Composer::fft_ops(const ir::Compose& c, const Step& s) const {
  const bool real = c.op == ir::ComposeOp::Rfft || c.op == ir::ComposeOp::Irfft;
  if (!real && c.op != ir::ComposeOp::Fft && c.op != ir::ComposeOp::Ifft) return {};
  std::vector<int64_t> signal = tensor(c.op == ir::ComposeOp::Irfft ? c.dst : c.srcs[0]).shape;
  if (!real) signal.pop_back();  // a complex X: its pairs
  const auto dim = static_cast<size_t>(ints(c, "dim", s).at(0));
  const int64_t n = signal.at(dim);
  return fft_counts(n == 0 ? 0 : numel(signal) / n, n, real);
}

// A map of `v` over the box of `shape`.
std::pair<std::string, AccessMap> Composer::box(const View& v) const {
  return {v.base, box_map(v, tensor(v.base))};
}

std::pair<std::string, AccessMap> Composer::whole(const std::string& name) const {
  return box(whole_view(tensor(name)));
}

// A graph output that is an expanded (broadcast) view of a smaller tensor, `y = expand(b)`:
// PyTorch returns it as a view with stride 0 along the broadcast dimensions, so the output's
// storage holds only the base's elements (docs/einsum.md, "Expanded outputs"). Its write map
// gets stride 0 there: it touches as many elements as the base has, and costs the base's
// bytes. When the base is an intermediate, the node is a relabelling (Node::relabel): the
// kernel that writes the base writes the output's storage, and the view itself moves nothing.
bool Composer::expanded_output(const View& v, const TensorInfo& y, Movement& m) const {
  if (y.role != ir::TensorRole::Output || v.padded() || v.shape != y.shape) return false;
  View w = whole_view(y);
  bool broadcast = false;
  for (size_t d = 0; d < v.shape.size(); ++d) {
    if (v.strides[d] == 0 && v.shape[d] > 1) {
      w.strides[d] = 0;
      broadcast = true;
    }
  }
  if (!broadcast || m.writes.size() != 1) return false;
  m.writes[0] = box(w);
  return true;
}

// A data-dependent map: `moved` elements of `name`, printed as `text`.
std::pair<std::string, AccessMap> Composer::data_dependent(const std::string& name,
                                                           std::string text, int64_t moved) const {
  AccessMap m;
  m.text = std::move(text);
  m.data_dependent = true;
  m.moved = moved;
  return {binding(name).base, std::move(m)};
}

Composer::Movement Composer::movement(const ir::Compose& c, const Step& s,
                                      const std::optional<View>& view) const {
  Movement m;
  const TensorInfo& y = tensor(c.dst);
  m.points_shape = y.shape;
  switch (c.op) {
    case ir::ComposeOp::Copy: {
      // An alias of an input updated in place (in_place_alias): the region of the input.
      const View region =
          *slice_view(aliased_inputs_.contains(c.dst) ? binding(c.dst) : whole_view(y),
                      slices(c.dst_region, y.shape, s));
      m.reads.push_back(box(binding(c.srcs[0])));
      m.writes.push_back(box(region));
      m.points_shape = region.shape;
      return m;
    }
    case ir::ComposeOp::Slice:  // no view: a single element in the padding, nothing read
    case ir::ComposeOp::Permute:
    case ir::ComposeOp::Broadcast:
      if (view) m.reads.push_back(box(*view));
      m.writes.push_back(whole(c.dst));
      return m;
    case ir::ComposeOp::Reshape:
    case ir::ComposeOp::ViewAsReal:
    case ir::ComposeOp::ViewAsComplex:
      m.reads.push_back(box(view ? *view : binding(c.srcs[0])));
      m.writes.push_back(whole(c.dst));
      return m;
    case ir::ComposeOp::Concat:
      concat(c, s, m);
      return m;
    case ir::ComposeOp::Pad:
    case ir::ComposeOp::Rfft:  // reads X, writes Y; its operations: fft_ops
    case ir::ComposeOp::Irfft:
    case ir::ComposeOp::Fft:
    case ir::ComposeOp::Ifft:
    case ir::ComposeOp::Argsort:  // reads X, writes the permutation; comparisons not counted
      m.reads.push_back(box(binding(c.srcs[0])));
      m.writes.push_back(whole(c.dst));
      return m;
    case ir::ComposeOp::Take:
    case ir::ComposeOp::Gather:
      take_or_gather(c, s, m);
      return m;
    case ir::ComposeOp::Scatter:
      scatter(c, s, m);
      return m;
  }
  SOLAR_CHECK(false, "unknown ComposeOp");
}

// Each source is written to its own part of Y along `dim`.
void Composer::concat(const ir::Compose& c, const Step& s, Movement& m) const {
  const TensorInfo& y = tensor(c.dst);
  const auto dim = static_cast<size_t>(ints(c, "dim", s).at(0));
  int64_t at = 0;
  for (const std::string& src : c.srcs) {
    const View x = binding(src);
    m.reads.push_back(box(x));
    View part = whole_view(y);
    part.offset = at * part.strides[dim];
    part.shape = x.shape;
    m.writes.push_back(box(part));
    at += x.shape[dim];
  }
}

// take: Y[a.., i.., b..] = X[a.., I[i..], b..];  gather: Y[p] = X[p with p[dim] = I[p]].
// Reads I, and one element of X per element of Y, at positions I decides.
void Composer::take_or_gather(const ir::Compose& c, const Step& s, Movement& m) const {
  const std::string& x = c.srcs[0];
  const std::string& idx = c.srcs[1];
  const TensorInfo& y = tensor(c.dst);
  const auto dim = static_cast<size_t>(ints(c, "dim", s).at(0));
  const size_t x_rank = tensor(x).shape.size();
  const size_t idx_rank = tensor(idx).shape.size();
  m.reads.push_back(box(binding(idx)));
  const bool take = c.op == ir::ComposeOp::Take;
  const std::string text = indexed_text(x, x_rank, dim, idx, idx_rank, take);
  auto read = data_dependent(x, text, y.numel);
  // A take whose index is a router's choice, known to hold `distinct=D` different values
  // (top-k routing: k experts per token), is routed: under Routing::Concentrated it reads D
  // slices (X's other dimensions over Y's loops: Y's elements / I's each). Other takes and
  // gathers read the rows they name, all taken distinct, under every routing.
  const int64_t chosen = take ? tensor(idx).numel : y.shape[dim];
  const std::vector<int64_t> distinct = take ? ints(c, "distinct", s) : std::vector<int64_t>{};
  read.second.routed = !distinct.empty();
  read.second.fewest = chosen == 0 || distinct.empty() ? 0 : distinct[0] * (y.numel / chosen);
  // The dimensions other than `dim` follow the loops of the elements moved, as in the text.
  const View xv = binding(x);
  read.second.domain = box_domain(y.shape);
  read.second.offset = xv.offset;
  read.second.strides = xv.strides;
  read.second.extent = xv.shape;
  read.second.data_dim = static_cast<int64_t>(dim);
  for (size_t d = 0; d < x_rank; ++d) {
    const size_t loop = take && d > dim ? d - 1 + idx_rank : d;
    read.second.index.push_back(d == dim ? ir::AffineForm{}
                                         : ir::AffineForm{0, {{"d" + std::to_string(loop), 1}}});
  }
  m.reads.push_back(std::move(read));
  m.writes.push_back(whole(c.dst));
}

// Y = X, then Y[.., I[p], ..] op= S[p] for every position p of I. In place (Y is X's own
// storage), only the updates move: I, the elements of S at I's positions, and as many of Y
// (also read first when reduce is not none). Else X is copied to Y first.
void Composer::scatter(const ir::Compose& c, const Step& s, Movement& m) const {
  const View x = binding(c.srcs[0]);
  const TensorInfo& y = tensor(c.dst);
  const TensorInfo& idx = tensor(c.srcs[1]);
  const auto dim = static_cast<size_t>(ints(c, "dim", s).at(0));
  std::vector<SliceBounds> leading;  // I is no larger than S: S is read at I's positions
  for (const int64_t n : idx.shape) leading.push_back({false, 0, n, 1});
  const View s_part = *slice_view(binding(c.srcs[2]), leading);
  m.reads.push_back(box(binding(c.srcs[1])));
  m.reads.push_back(box(s_part));
  const bool in_place = is_whole(x, y) || aliased_inputs_.contains(c.dst);
  if (!in_place) {
    m.reads.push_back(box(x));
    m.writes.push_back(whole(c.dst));
    return;
  }
  std::string reduce = "none";
  for (const ir::ComposeAttr& a : c.attrs) {
    if (a.key == "reduce") reduce = a.word;
  }
  const std::string text =
      indexed_text(c.dst, y.shape.size(), dim, c.srcs[1], idx.shape.size(), false);
  // Every index the same value: one position along dim for each of I's other positions.
  const int64_t along = idx.shape[dim];
  const int64_t fewest = along == 0 ? 0 : idx.numel / along;
  if (reduce != "none") {
    m.reads.push_back(data_dependent(c.dst, text, idx.numel));
    m.reads.back().second.fewest = fewest;
  }
  m.writes.push_back(data_dependent(c.dst, text, idx.numel));
  m.writes.back().second.fewest = fewest;
  m.points_shape = idx.shape;
}

}  // namespace solar::einsum::detail
