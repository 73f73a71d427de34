// Views over tensor storage (see view.h).
#include "view.h"

#include <algorithm>
#include <cmath>

#include "solar/ir/printer.h"
#include "solar/util/error.h"

namespace solar::einsum::detail {
namespace {

// f + k * g, without zero coefficients.
void add_scaled(ir::AffineForm& f, const ir::AffineForm& g, int64_t k) {
  f.constant += k * g.constant;
  for (const auto& [v, c] : g.coeffs) {
    if ((f.coeffs[v] += k * c) == 0) f.coeffs.erase(v);
  }
}

std::string index_list(const std::vector<ir::AffineForm>& index, const ir::AffineDomain& domain) {
  std::string s;
  for (const ir::AffineForm& f : index) s += (s.empty() ? "" : ", ") + form_text(f, domain);
  return s;
}

// Where each dimension of a view moves in its base: along one base dimension (the outermost
// whose stride divides its own), q base positions per step; `first` is the base position of the
// view's first element. nullopt when some dimension does not stay within one base dimension over
// the whole view.
struct Placement {
  static constexpr size_t kNone = SIZE_MAX;  // the dimension does not move (stride 0, size <= 1)
  std::vector<int64_t> first;                // per base dimension
  std::vector<size_t> dim;                   // per view dimension: its base dimension, or kNone
  std::vector<int64_t> q;                    // per view dimension: base positions per step
};

std::optional<Placement> placement(const View& v, const TensorInfo& base) {
  const std::vector<int64_t> rb = row_major_strides(base.shape);
  const size_t rank = base.shape.size();
  Placement p{std::vector<int64_t>(rank), std::vector<size_t>(v.shape.size(), Placement::kNone),
              std::vector<int64_t>(v.shape.size(), 0)};
  std::vector<int64_t> lo(rank), hi(rank);
  int64_t rest = v.offset;
  for (size_t k = 0; k < rank; ++k) {
    p.first[k] = lo[k] = hi[k] = rb[k] == 0 ? 0 : rest / rb[k];
    rest -= p.first[k] * rb[k];
  }
  for (size_t d = 0; d < v.shape.size(); ++d) {
    if (v.strides[d] == 0 || v.shape[d] <= 1) continue;
    size_t k = 0;
    // (a base with an empty dimension has row-major strides of 0 outside it: no base
    // dimension to move along there, and no division by 0)
    while (k < rank && (base.shape[k] <= 1 || rb[k] == 0 || v.strides[d] % rb[k] != 0)) ++k;
    if (k == rank) return std::nullopt;
    p.dim[d] = k;
    p.q[d] = v.strides[d] / rb[k];
    (p.q[d] > 0 ? hi[k] : lo[k]) += p.q[d] * (v.shape[d] - 1);
  }
  for (size_t k = 0; k < rank; ++k) {
    if (lo[k] < 0 || hi[k] > base.shape[k] - 1) return std::nullopt;
  }
  return p;
}

// The base's own index per dimension for the view's `index`, when each is affine.
std::optional<std::vector<ir::AffineForm>> base_indices(const View& v, const TensorInfo& base,
                                                        const std::vector<ir::AffineForm>& index) {
  const std::optional<Placement> p = placement(v, base);
  if (!p) return std::nullopt;
  std::vector<ir::AffineForm> out(base.shape.size());
  for (size_t k = 0; k < out.size(); ++k) out[k].constant = p->first[k];
  for (size_t d = 0; d < v.shape.size(); ++d) {
    if (p->dim[d] != Placement::kNone) add_scaled(out[p->dim[d]], index[d], p->q[d]);
  }
  return out;
}

// The valid part of a padded view, as a view of its own (positions shifted by pad_lo).
View valid_part(const View& v) { return View{v.base, v.valid, v.strides, v.offset, {}, {}, 0}; }

// A padded view whose valid box is the whole of its shape is not padded.
View drop_empty_padding(View v) {
  if (v.padded() && v.pad_lo == std::vector<int64_t>(v.shape.size(), 0) && v.valid == v.shape) {
    v.pad_lo.clear();
    v.valid.clear();
    v.pad_value = 0;
  }
  return v;
}

bool padded_dim(const View& v, size_t d) {
  return v.pad_lo[d] != 0 || v.pad_lo[d] + v.valid[d] != v.shape[d];
}

// Whether a read through padded `v` happens exactly where every index of its base access (of
// the valid part, placed by `p`) lies within the base's shape: each padded dimension moves alone
// along a base dimension, one position per step, over the whole of it.
bool guard_is_base_shape(const View& v, const TensorInfo& base, const std::optional<Placement>& p) {
  if (!p) return false;
  for (size_t d = 0; d < v.shape.size(); ++d) {
    if (!padded_dim(v, d)) continue;
    const size_t k = p->dim[d];
    if (k == Placement::kNone || p->q[d] != 1 || p->first[k] != 0 || v.valid[d] != base.shape[k]) {
      return false;
    }
    for (size_t e = 0; e < v.shape.size(); ++e) {
      if (e != d && p->dim[e] == k) return false;
    }
  }
  return true;
}

std::string value_text(double v) { return ir::print(*ir::expr_const(v, false)); }

}  // namespace

std::vector<int64_t> row_major_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) strides[d - 1] = strides[d] * shape[d];
  return strides;
}

int64_t numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

View whole_view(const TensorInfo& t) {
  return View{t.name, t.shape, row_major_strides(t.shape), 0, {}, {}, 0};
}

bool is_whole(const View& v, const TensorInfo& base) {
  return !v.padded() && v.base == base.name && v.offset == 0 && v.shape == base.shape &&
         v.strides == row_major_strides(base.shape);
}

std::optional<View> slice_view(const View& v, const std::vector<SliceBounds>& slices) {
  SOLAR_CHECK(slices.size() <= v.shape.size(), "slice_view: more slices than dimensions");
  View r{v.base, {}, {}, v.offset, {}, {}, v.pad_value};
  if (!v.padded()) {
    for (size_t d = 0; d < v.shape.size(); ++d) {
      if (d >= slices.size()) {
        r.shape.push_back(v.shape[d]);
        r.strides.push_back(v.strides[d]);
        continue;
      }
      const SliceBounds& s = slices[d];
      r.offset += s.start * v.strides[d];
      if (s.is_index) continue;
      r.shape.push_back(s.stop <= s.start ? 0 : (s.stop - s.start - 1) / s.step + 1);
      r.strides.push_back(s.step * v.strides[d]);
    }
    return r;
  }
  bool in_padding = false;  // a single index fell in the padding: no element is valid
  for (size_t d = 0; d < v.shape.size(); ++d) {
    const int64_t lo = v.pad_lo[d];
    const int64_t valid = v.valid[d];
    SliceBounds s{false, 0, v.shape[d], 1};
    if (d < slices.size()) s = slices[d];
    if (s.is_index) {
      in_padding = in_padding || s.start < lo || s.start >= lo + valid;
      r.offset += (s.start - lo) * v.strides[d];
      continue;
    }
    const int64_t n = s.stop <= s.start ? 0 : (s.stop - s.start - 1) / s.step + 1;
    // The new positions u whose old position s.start + s.step * u lies in lo .. lo + valid.
    const auto first_at_or_above = [&](int64_t p) {  // least u >= 0 with s.start + s.step*u >= p
      return p <= s.start ? 0 : (p - s.start + s.step - 1) / s.step;
    };
    const int64_t u_lo = std::min(n, first_at_or_above(lo));
    const int64_t u_hi = std::max(u_lo, std::min(n, first_at_or_above(lo + valid)));
    if (u_hi > u_lo) r.offset += (s.start + s.step * u_lo - lo) * v.strides[d];
    r.shape.push_back(n);
    r.strides.push_back(s.step * v.strides[d]);
    r.pad_lo.push_back(u_lo);
    r.valid.push_back(u_hi - u_lo);
  }
  if (in_padding) {
    if (r.shape.empty()) return std::nullopt;
    r.offset = v.offset;  // not read
    std::fill(r.pad_lo.begin(), r.pad_lo.end(), 0);
    std::fill(r.valid.begin(), r.valid.end(), 0);
  }
  return drop_empty_padding(std::move(r));
}

View permute_view(const View& v, const std::vector<int64_t>& perm) {
  View r{v.base, {}, {}, v.offset, {}, {}, v.pad_value};
  for (int64_t p : perm) {
    const auto d = static_cast<size_t>(p);
    r.shape.push_back(v.shape.at(d));
    r.strides.push_back(v.strides.at(d));
    if (v.padded()) {
      r.pad_lo.push_back(v.pad_lo.at(d));
      r.valid.push_back(v.valid.at(d));
    }
  }
  return r;
}

View broadcast_view(const View& v, const std::vector<int64_t>& shape,
                    const std::vector<int64_t>& dims) {
  View r{v.base, shape, std::vector<int64_t>(shape.size(), 0), v.offset, {}, {}, v.pad_value};
  if (v.padded()) {
    r.pad_lo.assign(shape.size(), 0);
    r.valid = shape;
  }
  for (size_t i = 0; i < dims.size(); ++i) {
    const auto d = static_cast<size_t>(dims[i]);
    if (v.shape[i] != 1) r.strides.at(d) = v.strides[i];
    if (!v.padded()) continue;
    if (v.shape[i] != 1) {
      r.pad_lo.at(d) = v.pad_lo[i];
      r.valid.at(d) = v.valid[i];
    } else if (v.valid[i] == 0) {  // a repeated padding position
      r.valid.at(d) = 0;
    }
  }
  return drop_empty_padding(std::move(r));
}

// PyTorch's computeStride (aten/src/ATen/TensorUtils.cpp): walk the view's dimensions from the
// innermost, in chunks that are contiguous among themselves; the new shape must split into the
// same chunks.
std::optional<View> reshape_view(const View& v, const std::vector<int64_t>& shape) {
  if (v.padded()) return std::nullopt;
  View r{v.base, shape, row_major_strides(shape), v.offset, {}, {}, 0};
  if (numel(v.shape) <= 1) return r;  // nothing to lay out
  auto view_d = static_cast<int64_t>(shape.size()) - 1;
  int64_t chunk_stride = v.strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (auto d = static_cast<int64_t>(v.shape.size()) - 1; d >= 0; --d) {
    const auto ud = static_cast<size_t>(d);
    tensor_numel *= v.shape[ud];
    const bool chunk_ends =
        d == 0 || (v.shape[ud - 1] != 1 && v.strides[ud - 1] != tensor_numel * chunk_stride);
    if (!chunk_ends) continue;
    while (view_d >= 0 && (view_numel < tensor_numel || shape[static_cast<size_t>(view_d)] == 1)) {
      r.strides[static_cast<size_t>(view_d)] = view_numel * chunk_stride;
      view_numel *= shape[static_cast<size_t>(view_d)];
      --view_d;
    }
    if (view_numel != tensor_numel) return std::nullopt;
    if (d > 0) {
      chunk_stride = v.strides[ud - 1];
      tensor_numel = view_numel = 1;
    }
  }
  if (view_d != -1) return std::nullopt;
  return r;
}

std::optional<View> pad_view(const View& v, const std::vector<int64_t>& lo,
                             const std::vector<int64_t>& hi, double value) {
  SOLAR_CHECK(lo.size() == v.shape.size() && hi.size() == v.shape.size(),
              "pad_view: one amount per dimension");
  const auto same_value = [](double a, double b) {
    return a == b || (std::isnan(a) && std::isnan(b));
  };
  if (v.padded() && !same_value(v.pad_value, value)) return std::nullopt;
  View r = v;
  if (!r.padded()) {
    r.pad_lo.assign(v.shape.size(), 0);
    r.valid = v.shape;
  }
  r.pad_value = value;
  for (size_t d = 0; d < v.shape.size(); ++d) {
    if (lo[d] < 0 || hi[d] < 0) return std::nullopt;
    r.shape[d] += lo[d] + hi[d];
    r.pad_lo[d] += lo[d];
  }
  return drop_empty_padding(std::move(r));
}

AccessMap view_map(const View& v, const TensorInfo& base, std::vector<ir::AffineForm> index,
                   ir::AffineDomain domain, bool guarded) {
  SOLAR_CHECK(index.size() == v.shape.size(), "view_map: one index per dimension");
  AccessMap m;
  m.text = map_text(v, base, index, domain);
  m.offset = v.offset;
  m.strides = v.strides;
  m.extent = v.padded() ? v.valid : v.shape;
  m.guarded = guarded || v.padded();
  if (v.padded()) {
    for (size_t d = 0; d < index.size(); ++d) index[d].constant -= v.pad_lo[d];
  }
  m.index = std::move(index);
  m.domain = std::move(domain);
  return m;
}

AccessMap box_map(const View& v, const TensorInfo& base) {
  ir::AffineDomain domain = box_domain(v.shape);
  std::vector<ir::AffineForm> index;
  for (const ir::AffineLoop& l : domain) index.push_back(ir::AffineForm{0, {{l.var, 1}}});
  return view_map(v, base, std::move(index), std::move(domain), false);
}

ir::AffineDomain box_domain(const std::vector<int64_t>& shape) {
  ir::AffineDomain d;
  for (size_t k = 0; k < shape.size(); ++k) {
    d.push_back({"d" + std::to_string(k), ir::AffineForm{0, {}}, ir::AffineForm{shape[k], {}}});
  }
  return d;
}

ir::IntExprP form_expr(const ir::AffineForm& f, const ir::AffineDomain& domain) {
  std::vector<std::pair<std::string, int64_t>> terms;
  for (const ir::AffineLoop& l : domain) {
    if (f.coeff(l.var) != 0) terms.emplace_back(l.var, f.coeff(l.var));
  }
  for (const auto& term : f.coeffs) {
    const bool in_domain = std::any_of(
        domain.begin(), domain.end(), [&](const ir::AffineLoop& l) { return l.var == term.first; });
    if (!in_domain) terms.push_back(term);
  }
  ir::IntExprP e;
  for (const auto& [v, c] : terms) {
    const int64_t mag = c < 0 ? -c : c;
    ir::IntExprP term = ir::int_sym(v, ir::SymKind::Loop);
    if (mag != 1) term = ir::int_binary(ir::IntOp::Mul, ir::int_const(mag), term);
    if (!e) {
      e = c < 0 ? ir::int_unary(ir::IntOp::Neg, term) : term;
    } else {
      e = ir::int_binary(c < 0 ? ir::IntOp::Sub : ir::IntOp::Add, e, term);
    }
  }
  if (!e) return ir::int_const(f.constant);
  if (f.constant == 0) return e;
  return ir::int_binary(f.constant < 0 ? ir::IntOp::Sub : ir::IntOp::Add, e,
                        ir::int_const(f.constant < 0 ? -f.constant : f.constant));
}

std::string form_text(const ir::AffineForm& f, const ir::AffineDomain& domain) {
  return ir::print(*form_expr(f, domain));
}

BaseAccess base_access(const View& v, const TensorInfo& base,
                       const std::vector<ir::AffineForm>& index, const ir::AffineDomain& domain) {
  if (!v.padded()) {
    if (is_whole(v, base)) return {base.name, index};
    if (std::optional<std::vector<ir::AffineForm>> own = base_indices(v, base, index)) {
      return {base.name, std::move(*own)};
    }
    ir::AffineForm flat{v.offset, {}};
    for (size_t d = 0; d < index.size(); ++d) add_scaled(flat, index[d], v.strides[d]);
    return {base.name + ".flat", {flat}};
  }
  const View inner = valid_part(v);
  std::vector<ir::AffineForm> shifted = index;
  for (size_t d = 0; d < shifted.size(); ++d) shifted[d].constant -= v.pad_lo[d];
  BaseAccess a = base_access(inner, base, shifted, domain);
  std::string guard = value_text(v.pad_value);
  if (!guard_is_base_shape(v, base, placement(inner, base))) {
    for (size_t d = 0; d < v.shape.size(); ++d) {
      if (!padded_dim(v, d)) continue;
      guard += ", " + std::to_string(v.pad_lo[d]) + " <= " + form_text(index[d], domain) + " < " +
               std::to_string(v.pad_lo[d] + v.valid[d]);
    }
  }
  a.name += ".or(" + guard + ")";
  return a;
}

std::string map_text(const View& v, const TensorInfo& base,
                     const std::vector<ir::AffineForm>& index, const ir::AffineDomain& domain) {
  const BaseAccess a = base_access(v, base, index, domain);
  return a.name + "[" + index_list(a.index, domain) + "]";
}

}  // namespace solar::einsum::detail
