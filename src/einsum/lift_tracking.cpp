// Origin precision, fp4 codes and expanded values per storage tensor, as the lift writes them
// (Tracking in lift_internal.h; docs/precision.md, "Origin precision").
#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "lift_internal.h"
#include "solar/ir/dtype.h"

namespace solar::einsum::detail {
namespace {

// Whether every value of dtype `o` is exactly a value of dtype `t` (docs/precision.md, "Origin
// precision"): a narrower float in a wider one (f8 in f16, bf16 and f32; f16 and bf16 in f32),
// 8-bit integers and bool in every float of 16 bits or more (bf16 holds 8 significant bits).
// An origin of f4e2m1x2 stands for e2m1 values (decoded from packed fp4 pairs: see
// Tracking::track_movement), which every float of 16 bits or more holds.
bool fits_exactly(ir::DType o, ir::DType t) {
  if (o == t) return true;
  const bool byte = o == ir::DType::F8E4M3 || o == ir::DType::F8E5M2 || o == ir::DType::I8 ||
                    o == ir::DType::U8 || o == ir::DType::Bool || o == ir::DType::F4E2M1X2;
  switch (t) {
    case ir::DType::F64:
      return o != ir::DType::I64;
    case ir::DType::F32:
      return byte || o == ir::DType::F16 || o == ir::DType::BF16;
    case ir::DType::F16:
    case ir::DType::BF16:
      return byte;
    default:
      return false;
  }
}

// The origin of a value of origin `o` stored in (or cast to) dtype `t`: `o` when t holds it
// exactly, else t (a cast to a narrower dtype makes values of that dtype).
ir::DType stored_origin(ir::DType o, ir::DType t) { return fits_exactly(o, t) ? o : t; }

// The origin of a tensor written twice, with origins a then b: the wider when one holds the
// other, else `t` (the tensor's own dtype).
ir::DType joined_origin(ir::DType a, ir::DType b, ir::DType t) {
  if (fits_exactly(a, b)) return b;
  return fits_exactly(b, a) ? a : t;
}

// The read under casts and negations of `e`, or nullptr.
const ir::Expr* stripped_read(const ir::Expr& e) {
  const ir::Expr* x = &e;
  while (x->kind == ir::ExprKind::Cast ||
         (x->kind == ir::ExprKind::Unary && x->unary_op == ir::UnaryOp::Neg)) {
    x = x->args[0].get();
  }
  return x->kind == ir::ExprKind::Read ? x : nullptr;
}

}  // namespace

// Whether the values of storage tensor `base` are packed fp4 pairs (f4e2m1x2), or integers
// computed from such values alone (masks and shifts of the bytes: 4-bit codes).
bool Tracking::fp4_data(const std::string& base) const {
  return tensor(base).dtype == ir::DType::F4E2M1X2 || fp4_codes_.contains(base);
}

// After `out` was written from the tensors `reads` (names as read): it holds fp4 codes when
// it is an integer tensor and every read is of fp4 data.
void Tracking::track_fp4_codes(const std::string& out, const std::vector<std::string>& reads) {
  const bool codes = !reads.empty() && ir::dtype_is_integer(tensor(out).dtype) &&
                     std::all_of(reads.begin(), reads.end(),
                                 [&](const std::string& r) { return fp4_data(binding(r).base); });
  if (codes) {
    fp4_codes_.insert(out);
  } else {
    fp4_codes_.erase(out);
  }
}

ir::DType Tracking::tensor_origin(const std::string& base) const {
  const auto it = origin_.find(base);
  return it == origin_.end() ? tensor(base).dtype : it->second;
}

void Tracking::set_origin(const std::string& name, ir::DType o) {
  const ir::DType t = tensor(name).dtype;
  o = stored_origin(o, t);
  const auto it = origin_.find(name);
  if (it != origin_.end()) o = joined_origin(it->second, o, t);
  origin_[name] = o;
}

// The loops (nonzero coefficient) by which the reads of `e` reach their storage, per storage
// tensor.
std::map<std::string, std::set<std::string>> Tracking::read_loops_by_tensor(
    const ir::Expr& e, const Step& s, const ir::AffineDomain& domain) const {
  std::vector<std::pair<std::string, AccessMap>> maps;
  read_maps(tensors_, bindings_, e, s, domain, false, maps);
  std::map<std::string, std::set<std::string>> loops;
  for (const auto& [t, m] : maps) {
    std::set<std::string>& l = loops[t];
    if (m.data_dependent) continue;
    for (const auto& [var, c] : m.flat().coeffs) {
      if (c != 0) l.insert(var);
    }
  }
  return loops;
}

// The loops by which the reads of `e` reach their storage, all tensors together.
std::set<std::string> Tracking::read_loops(const ir::Expr& e, const Step& s,
                                           const ir::AffineDomain& domain) const {
  std::set<std::string> loops;
  for (const auto& entry : read_loops_by_tensor(e, s, domain)) {
    loops.insert(entry.second.begin(), entry.second.end());
  }
  return loops;
}

// Whether `f` scales `of`: the same at every point (a constant), a read of an expanded
// tensor, or a read that reaches its storage with fewer loops than `of` does (a per-tensor,
// per-row, per-channel or per-block scale: constant over a block of `of`'s elements).
bool Tracking::is_scale(const ir::Expr& f, const ir::Expr& of, const Step& s,
                        const ir::AffineDomain& domain) const {
  if (!has_read_or_index(f)) return true;
  const ir::Expr* r = stripped_read(f);
  if (r == nullptr) return false;
  if (expanded_.contains(binding(r->tensor).base)) return true;
  const std::set<std::string> a = read_loops(*r, s, domain);
  const std::set<std::string> b = read_loops(of, s, domain);
  return a.size() < b.size() && std::includes(b.begin(), b.end(), a.begin(), a.end());
}

// The origin of an expression's value: a read's tensor origin; a cast keeps its operand's
// origin when the target holds it exactly; a product or quotient by a scale keeps the other
// operand's; anything else has its own dtype. nullopt for constants and indices.
std::optional<ir::DType> Tracking::origin_of(const ir::Expr& e, const Step& s,
                                             const ir::AffineDomain& domain) const {
  switch (e.kind) {
    case ir::ExprKind::Const:
    case ir::ExprKind::Index:
      return std::nullopt;
    case ir::ExprKind::Read:
      return tensor_origin(binding(e.tensor).base);
    case ir::ExprKind::Cast: {
      const std::optional<ir::DType> o = origin_of(*e.args[0], s, domain);
      return o ? stored_origin(*o, e.cast_to) : e.cast_to;
    }
    case ir::ExprKind::Unary:
      if (e.unary_op == ir::UnaryOp::Neg) return origin_of(*e.args[0], s, domain);
      break;
    case ir::ExprKind::Binary: {
      const ir::Expr& a = *e.args[0];
      const ir::Expr& b = *e.args[1];
      const bool mul = e.binary_op == ir::BinaryOp::Mul;
      if ((mul || e.binary_op == ir::BinaryOp::Div) && has_read_or_index(a) &&
          is_scale(b, a, s, domain)) {
        return origin_of(a, s, domain);
      }
      if (mul && has_read_or_index(b) && is_scale(a, b, s, domain)) {
        return origin_of(b, s, domain);
      }
      break;
    }
    case ir::ExprKind::Select:
      break;
  }
  return value_dtype(e, [&](const std::string& t) { return tensor(t).dtype; });
}

std::optional<std::pair<ir::DType, ir::DType>> Tracking::mac_origins(
    const MacOperands& m, const Step& s, const ir::AffineDomain& domain) const {
  std::vector<const ir::Expr*> factors = {m.lhs, m.rhs};
  factors.insert(factors.end(), m.others.begin(), m.others.end());
  std::vector<const ir::Expr*> rest;
  for (const ir::Expr* f : factors) {
    const ir::Expr* r = stripped_read(*f);
    const bool always_scale =
        !has_read_or_index(*f) || (r != nullptr && expanded_.contains(binding(r->tensor).base));
    if (!always_scale) rest.push_back(f);
  }
  if (rest.size() < 2) return std::nullopt;
  std::vector<size_t> loops;
  for (const ir::Expr* f : rest) loops.push_back(read_loops(*f, s, domain).size());
  std::vector<size_t> order(rest.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t x, size_t y) { return loops[x] > loops[y]; });
  const ir::Expr* lhs = rest[std::min(order[0], order[1])];
  const ir::Expr* rhs = rest[std::max(order[0], order[1])];
  for (size_t k = 2; k < order.size(); ++k) {
    const ir::Expr& f = *rest[order[k]];
    if (!is_scale(f, *lhs, s, domain) && !is_scale(f, *rhs, s, domain)) return std::nullopt;
  }
  const std::optional<ir::DType> a = origin_of(*lhs, s, domain);
  const std::optional<ir::DType> b = origin_of(*rhs, s, domain);
  if (!a || !b) return std::nullopt;
  return std::pair{*a, *b};
}

void Tracking::track_kernel(const ir::Kernel& k, const Step& s, const ir::AffineDomain& domain) {
  const std::string& out = k.out;
  {
    std::vector<std::string> reads;
    collect_reads(*k.rhs, reads);
    track_fp4_codes(out, reads);
  }
  if (k.op != ir::AssignOp::Assign) {
    origin_[out] = tensor(out).dtype;
    expanded_.erase(out);
    return;
  }
  const std::optional<ir::DType> o = origin_of(*k.rhs, s, domain);
  set_origin(out, o ? *o : tensor(out).dtype);
  std::set<std::string> written;
  for (const ir::AffineForm& f : affine_all(k.out_indices, s.values)) {
    for (const auto& [var, c] : f.coeffs) {
      if (c != 0) written.insert(var);
    }
  }
  std::vector<std::string> names;
  collect_reads(*k.rhs, names);
  bool expanded = !names.empty();
  const std::map<std::string, std::set<std::string>> by_tensor =
      read_loops_by_tensor(*k.rhs, s, domain);
  for (const std::string& name : names) {
    const std::string& base = binding(name).base;
    if (expanded_.contains(base)) continue;
    const auto it = by_tensor.find(base);
    const std::set<std::string> loops =
        it == by_tensor.end() ? std::set<std::string>{} : it->second;
    if (!(loops.size() < written.size() &&
          std::includes(written.begin(), written.end(), loops.begin(), loops.end()))) {
      expanded = false;
    }
  }
  if (expanded) {
    expanded_.insert(out);
  } else {
    expanded_.erase(out);
  }
}

void Tracking::track_movement(const ir::Compose& c, const Node& n) {
  const std::string& dst = c.dst;
  track_fp4_codes(dst, c.op == ir::ComposeOp::Take || c.op == ir::ComposeOp::Gather
                           ? std::vector<std::string>{}
                           : c.srcs);
  if (c.op == ir::ComposeOp::Scatter || c.op == ir::ComposeOp::Argsort ||
      c.op == ir::ComposeOp::Rfft || c.op == ir::ComposeOp::Irfft || c.op == ir::ComposeOp::Fft ||
      c.op == ir::ComposeOp::Ifft) {
    origin_[dst] = tensor(dst).dtype;
    expanded_.erase(dst);
    return;
  }
  const bool indexed = c.op == ir::ComposeOp::Take || c.op == ir::ComposeOp::Gather;
  const size_t sources = indexed ? 1 : c.srcs.size();
  std::optional<ir::DType> o;
  bool expanded_source = false;
  for (size_t i = 0; i < sources; ++i) {
    const std::string base = binding(c.srcs[i]).base;
    const ir::DType so = stored_origin(tensor_origin(base), tensor(dst).dtype);
    o = o ? joined_origin(*o, so, tensor(dst).dtype) : so;
    expanded_source = expanded_source || expanded_.contains(base);
  }
  if (!c.dst_region.empty()) {
    set_origin(dst, o ? *o : tensor(dst).dtype);
  } else {
    origin_.erase(dst);
    origin_[dst] = o ? *o : tensor(dst).dtype;
  }
  // A floating lookup table of at most 16 entries indexed by 4-bit codes of packed fp4 data
  // decodes fp4 values (the unpacking of an NVFP4 or MXFP4 reference program): their origin
  // is fp4 (f4e2m1x2), whatever the table holds (docs/precision.md, "Packed fp4 tensors").
  if (indexed && c.srcs.size() >= 2 && c.dst_region.empty() &&
      ir::dtype_is_float(tensor(dst).dtype) && tensor(binding(c.srcs[0]).base).numel <= 16 &&
      fp4_data(binding(c.srcs[1]).base)) {
    origin_[dst] = ir::DType::F4E2M1X2;
  }
  int64_t read = 0, written = 0;
  for (const Access& a : n.reads) read += a.footprint;
  for (const Access& a : n.writes) written += a.footprint;
  const bool copies = c.op != ir::ComposeOp::Concat && !indexed && c.dst_region.empty();
  if (copies && (expanded_source || read < written)) {
    expanded_.insert(dst);
  } else {
    expanded_.erase(dst);
  }
}

// Composer::alias_into_output: the origin and expansion of the intermediate go with it.
void Tracking::alias(const std::string& dst, const std::string& base) {
  origin_[dst] = tensor_origin(base);
  if (expanded_.contains(base)) expanded_.insert(dst);
}

}  // namespace solar::einsum::detail
