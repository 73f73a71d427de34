// Views over tensor storage (see view.h).
#include "view.h"

#include <algorithm>

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

// The base's own index per dimension for the view's `index`, when each is affine: every view
// dimension moves along one base dimension (the outermost whose stride divides its own) and
// stays within it over the whole view.
std::optional<std::vector<ir::AffineForm>> base_indices(const View& v, const TensorInfo& base,
                                                        const std::vector<ir::AffineForm>& index) {
  const std::vector<int64_t> rb = row_major_strides(base.shape);
  const size_t rank = base.shape.size();
  std::vector<ir::AffineForm> out(rank);
  std::vector<int64_t> lo(rank), hi(rank);
  int64_t rest = v.offset;
  for (size_t k = 0; k < rank; ++k) {
    out[k].constant = lo[k] = hi[k] = rb[k] == 0 ? 0 : rest / rb[k];
    rest -= out[k].constant * rb[k];
  }
  for (size_t d = 0; d < v.shape.size(); ++d) {
    if (v.strides[d] == 0 || v.shape[d] <= 1) continue;
    size_t k = 0;
    while (k < rank && (base.shape[k] <= 1 || v.strides[d] % rb[k] != 0)) ++k;
    if (k == rank) return std::nullopt;
    const int64_t q = v.strides[d] / rb[k];
    add_scaled(out[k], index[d], q);
    (q > 0 ? hi[k] : lo[k]) += q * (v.shape[d] - 1);
  }
  for (size_t k = 0; k < rank; ++k) {
    if (lo[k] < 0 || hi[k] > base.shape[k] - 1) return std::nullopt;
  }
  return out;
}

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
  return View{t.name, t.shape, row_major_strides(t.shape), 0};
}

bool is_whole(const View& v, const TensorInfo& base) {
  return v.base == base.name && v.offset == 0 && v.shape == base.shape &&
         v.strides == row_major_strides(base.shape);
}

View slice_view(const View& v, const std::vector<SliceBounds>& slices) {
  SOLAR_CHECK(slices.size() <= v.shape.size(), "slice_view: more slices than dimensions");
  View r{v.base, {}, {}, v.offset};
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

View permute_view(const View& v, const std::vector<int64_t>& perm) {
  View r{v.base, {}, {}, v.offset};
  for (int64_t p : perm) {
    r.shape.push_back(v.shape.at(static_cast<size_t>(p)));
    r.strides.push_back(v.strides.at(static_cast<size_t>(p)));
  }
  return r;
}

View broadcast_view(const View& v, const std::vector<int64_t>& shape,
                    const std::vector<int64_t>& dims) {
  View r{v.base, shape, std::vector<int64_t>(shape.size(), 0), v.offset};
  for (size_t i = 0; i < dims.size(); ++i) {
    if (v.shape[i] != 1) r.strides.at(static_cast<size_t>(dims[i])) = v.strides[i];
  }
  return r;
}

// PyTorch's computeStride (aten/src/ATen/TensorUtils.cpp): walk the view's dimensions from the
// innermost, in chunks that are contiguous among themselves; the new shape must split into the
// same chunks.
std::optional<View> reshape_view(const View& v, const std::vector<int64_t>& shape) {
  View r{v.base, shape, row_major_strides(shape), v.offset};
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

AccessMap view_map(const View& v, const TensorInfo& base, std::vector<ir::AffineForm> index,
                   ir::AffineDomain domain, bool guarded) {
  SOLAR_CHECK(index.size() == v.shape.size(), "view_map: one index per dimension");
  AccessMap m;
  m.text = map_text(v, base, index, domain);
  m.offset = v.offset;
  m.strides = v.strides;
  m.extent = v.shape;
  m.guarded = guarded;
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
                       const std::vector<ir::AffineForm>& index) {
  if (is_whole(v, base)) return {base.name, index};
  if (std::optional<std::vector<ir::AffineForm>> own = base_indices(v, base, index)) {
    return {base.name, std::move(*own)};
  }
  ir::AffineForm flat{v.offset, {}};
  for (size_t d = 0; d < index.size(); ++d) add_scaled(flat, index[d], v.strides[d]);
  return {base.name + ".flat", {flat}};
}

std::string map_text(const View& v, const TensorInfo& base,
                     const std::vector<ir::AffineForm>& index, const ir::AffineDomain& domain) {
  const BaseAccess a = base_access(v, base, index);
  return a.name + "[" + index_list(a.index, domain) + "]";
}

}  // namespace solar::einsum::detail
