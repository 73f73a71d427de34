// The cache-aware optimiser's units (cache_internal.h): a node, or a run of translated nodes
// folded into one unit whose last loop counts the steps; CacheOptimizer::Impl::unit.
#include "cache_internal.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "solar/ir/affine.h"
#include "solar/ir/dtype.h"
#include "solar/sol/analysis.h"
#include "solar/util/checked.h"
#include "solar/util/error.h"
#include "solar/util/text.h"

namespace solar::sol {

inline namespace cache_detail {

void add_term(Lin& f, uint32_t v, int64_t c) {
  if (c == 0) return;
  auto it = std::lower_bound(f.terms.begin(), f.terms.end(), std::make_pair(v, int64_t{0}),
                             [](const auto& a, const auto& b) { return a.first < b.first; });
  if (it != f.terms.end() && it->first == v) {
    it->second += c;
    if (it->second == 0) f.terms.erase(it);
  } else {
    f.terms.insert(it, {v, c});
  }
}

std::pair<int64_t, int64_t> lin_range(const Lin& f, const std::vector<UVar>& vars) {
  int64_t lo = f.constant, hi = f.constant;
  for (const auto& [v, c] : f.terms) {
    const int64_t a = sat_mul(c < 0 ? -c : c, vars[v].extent - 1);
    const int64_t at_lo = smul(c, vars[v].lo);
    lo = sat_add(lo, c < 0 ? at_lo - a : at_lo);
    hi = sat_add(hi, c < 0 ? at_lo : at_lo + a);
  }
  return {lo, hi};
}

bool copies_over_own_elements(const einsum::Node& n) {
  if (n.kind != einsum::NodeKind::Movement) return false;
  for (const auto* list : {&n.reads, &n.writes}) {
    for (const einsum::Access& a : *list) {
      for (const einsum::AccessMap& m : a.maps) {
        const bool chosen = m.data_dependent && m.data_dim >= 0 && list == &n.reads;
        if ((m.data_dependent && !chosen) || !same_domain(m.domain, n.domain)) return false;
      }
    }
  }
  return true;
}

namespace {

// A reshape copy's maps are over two boxes: the read over the source view's shape, the write over
// the destination's. Row-major order is what a reshape keeps, so the element at point d of the
// source box lands at the destination's flat offset rowmajor(d): the same copy with both maps
// over the source's box (the write's dimensions those of the source box, its strides row-major
// over them). A broadcast copy then reshaped (repeat_kv's expand + reshape of the keys) becomes a
// unit that copies over its own elements, which the tiled mode joins with its readers
// (docs/fidelities.md, "The join rule"). nullopt: not such a copy.
std::optional<einsum::Node> reshape_over_source(const einsum::Node& n) {
  if (n.kind != einsum::NodeKind::Movement || n.op != "reshape" || n.reads.size() != 1 ||
      n.writes.size() != 1 || n.reads[0].maps.size() != 1 || n.writes[0].maps.size() != 1) {
    return std::nullopt;
  }
  const einsum::AccessMap& r = n.reads[0].maps[0];
  const einsum::AccessMap& w = n.writes[0].maps[0];
  if (r.data_dependent || w.data_dependent || r.guarded || w.guarded || w.offset != 0 ||
      same_domain(r.domain, n.domain) || !same_domain(w.domain, n.domain) ||
      w.index.size() != n.domain.size()) {
    return std::nullopt;
  }
  int64_t stride = 1;  // the write: every loop once, in order, row-major contiguous
  for (size_t d = w.index.size(); d-- > 0;) {
    const ir::AffineLoop& l = n.domain[d];
    if (!l.lo.coeffs.empty() || !l.hi.coeffs.empty() || l.lo.constant != 0 ||
        l.hi.constant != w.extent[d] || w.index[d].constant != 0 || w.index[d].coeffs.size() != 1 ||
        w.index[d].coeff(l.var) != 1 || (w.extent[d] > 1 && w.strides[d] != stride)) {
      return std::nullopt;
    }
    stride = sat_mul(stride, w.extent[d]);
  }
  einsum::AccessMap out = w;
  out.domain = r.domain;
  out.index.clear();
  out.extent.clear();
  int64_t points = 1;
  for (const ir::AffineLoop& l : r.domain) {
    if (!l.lo.coeffs.empty() || !l.hi.coeffs.empty() || l.lo.constant != 0) return std::nullopt;
    ir::AffineForm f;
    f.coeffs[l.var] = 1;
    out.index.push_back(std::move(f));
    out.extent.push_back(l.hi.constant);
    points = sat_mul(points, l.hi.constant);
  }
  if (points != stride) return std::nullopt;
  out.strides.assign(out.extent.size(), 0);
  int64_t step = 1;
  for (size_t d = out.extent.size(); d-- > 0;) {
    out.strides[d] = step;
    step = sat_mul(step, out.extent[d]);
  }
  einsum::Node copy = n;
  copy.domain = r.domain;
  copy.writes[0].maps[0] = std::move(out);
  return copy;
}

// A take's index is read over the box of the index's own shape (loops d0, d1, ...), while the
// node runs over the elements it moves, whose loops d<dim>, d<dim + 1>, ... are the index's
// positions (docs/einsum.md, take). The same take with the index read over the node's loops (each
// d<k> renamed d<dim + k>: the same elements, the same bounds), so that it copies over its own
// elements and can run inside a tiled group. nullopt: not such a take.
std::optional<einsum::Node> take_over_points(const einsum::Node& n) {
  if (n.kind != einsum::NodeKind::Movement || n.op != "take") return std::nullopt;
  const einsum::AccessMap* chosen = nullptr;
  for (const einsum::Access& a : n.reads) {
    for (const einsum::AccessMap& m : a.maps) {
      if (m.data_dim >= 0) chosen = &m;
    }
  }
  if (chosen == nullptr || chosen->index.size() > n.domain.size() + 1) return std::nullopt;
  const size_t dim = static_cast<size_t>(chosen->data_dim);
  const size_t rank = n.domain.size() + 1 - chosen->index.size();  // the index's
  einsum::Node out = n;
  bool changed = false;
  for (einsum::Access& a : out.reads) {
    for (einsum::AccessMap& m : a.maps) {
      if (m.data_dependent || same_domain(m.domain, n.domain)) continue;
      if (m.domain.size() != rank) return std::nullopt;
      std::map<std::string, std::string> rename;
      for (size_t k = 0; k < rank; ++k) {
        const ir::AffineLoop& l = m.domain[k];
        const ir::AffineLoop& to = n.domain[dim + k];
        if (!(l.lo == to.lo) || !(l.hi == to.hi)) return std::nullopt;
        rename[l.var] = to.var;
      }
      for (ir::AffineForm& f : m.index) {
        std::map<std::string, int64_t> coeffs;
        for (const auto& [v, c] : f.coeffs) coeffs[rename.count(v) ? rename.at(v) : v] = c;
        f.coeffs = std::move(coeffs);
      }
      m.domain = n.domain;
      changed = true;
    }
  }
  if (!changed) return std::nullopt;
  return out;
}

}  // namespace

std::string step_name(const einsum::Node& n) {
  std::string name = "step";
  const size_t open = n.name.rfind('[');
  if (open != std::string::npos && n.name.back() == ']') {
    const std::string inner = n.name.substr(open + 1, n.name.size() - open - 2);
    const size_t comma = inner.rfind(',');
    const std::string last = inner.substr(comma == std::string::npos ? 0 : comma + 1);
    const size_t eq = last.find('=');
    if (eq != std::string::npos && eq > 0) name = last.substr(0, eq);
  }
  const auto taken = [&](const std::string& v) {
    return std::any_of(n.domain.begin(), n.domain.end(),
                       [&](const ir::AffineLoop& l) { return l.var == v; });
  };
  while (taken(name)) name += "'";
  return name;
}

}  // namespace cache_detail

const Unit& CacheOptimizer::Impl::unit(size_t a, size_t b) {
  const auto key = std::make_pair(a, b);
  const auto found = units.find(key);
  if (found != units.end()) return found->second;
  std::optional<einsum::Node> reshaped =
      b - a == 1 ? reshape_over_source(g.nodes[a]) : std::nullopt;
  if (!reshaped && b - a == 1) reshaped = take_over_points(g.nodes[a]);
  const einsum::Node& node = reshaped ? *reshaped : g.nodes[a];
  Unit u;
  u.first = a;
  u.last = b;
  u.reduction = node.reduction != einsum::Reduction::None;
  u.tileable = node.kind == einsum::NodeKind::Einsum || copies_over_own_elements(node);
  std::map<std::string, uint32_t> local;
  std::vector<bool> varying(node.domain.size(), false);  // a loop with a non-constant bound
  for (size_t k = 0; k < node.domain.size(); ++k) {
    const ir::AffineLoop& l = node.domain[k];
    varying[k] = !l.lo.coeffs.empty() || !l.hi.coeffs.empty();
    ir::AffineForm width = l.hi;
    width.constant -= l.lo.constant;
    for (const auto& [v, c] : l.lo.coeffs) {
      width.coeffs[v] -= c;
      if (width.coeffs[v] == 0) width.coeffs.erase(v);
    }
    if (ir::affine_min(width, node.domain).value < 1) u.full_writes = false;
  }
  for (const einsum::Access& acc : node.writes) {
    for (const einsum::AccessMap& m : acc.maps) {
      for (size_t k = 0; k < node.domain.size(); ++k) {
        for (const ir::AffineForm& f : m.index) {
          if (varying[k] && f.coeff(node.domain[k].var) != 0) u.full_writes = false;
        }
      }
    }
  }
  for (const ir::AffineLoop& l : node.domain) {
    ir::AffineForm f;
    f.coeffs[l.var] = 1;
    const int64_t lo = ir::affine_min(f, node.domain).value;
    const int64_t hi = ir::affine_max(f, node.domain).value + 1;
    if (hi <= lo) u.tileable = false;
    const auto bound = [&](const ir::AffineForm& form) {
      Lin out;
      out.constant = form.constant;
      for (const auto& [name, c] : form.coeffs) add_term(out, local.at(name), c);
      return out;
    };
    UVar v{l.var, lo, hi - lo, bound(l.lo), bound(l.hi)};
    local[l.var] = static_cast<uint32_t>(u.vars.size());
    u.vars.push_back(std::move(v));
  }
  if (!u.tileable) return units.emplace(key, std::move(u)).first->second;  // its maps: unused
  const std::vector<int64_t>* delta = nullptr;
  uint32_t step = 0;
  if (b - a > 1) {
    delta = &run_delta.at(run_start[a]);
    u.run = true;
    step = static_cast<uint32_t>(u.vars.size());
    UVar v{step_name(node), 0, static_cast<int64_t>(b - a), {}, {}};
    v.hi_form.constant = v.extent;
    u.vars.push_back(std::move(v));
  }
  size_t at = 0;  // position in *delta
  const auto convert = [&](const einsum::Access& acc) {
    UAccess ua;
    ua.tensor = index_of(acc.tensor);
    for (const einsum::AccessMap& m : acc.maps) {
      UMap um;
      um.offset = m.offset;
      um.guarded = m.guarded;
      um.data_dependent = m.data_dependent && m.data_dim < 0;
      um.chosen = m.data_dim >= 0;
      if (um.chosen) {
        um.data_dim = m.data_dim;
        std::vector<bool> used(node.domain.size(), false);
        for (size_t d = 0; d < m.index.size(); ++d) {
          if (static_cast<int64_t>(d) == m.data_dim) continue;
          for (const auto& [name, c] : m.index[d].coeffs) used[local.at(name)] = true;
        }
        int64_t positions = 1;  // of the index: the points of the loops no other dimension uses
        for (size_t k = 0; k < node.domain.size(); ++k) {
          if (used[k]) continue;
          um.choosers.push_back(static_cast<uint32_t>(k));
          positions = sat_mul(positions, u.vars[k].extent);
        }
        // A routed take under concentrated routing: `fewest` elements are D slices of
        // moved / positions elements each.
        const int64_t slice = positions > 0 ? m.moved / positions : 0;
        if (m.concentrated && slice > 0) um.fewest_rows = m.fewest / slice;
      }
      if (!um.data_dependent) {
        um.flat.constant = m.offset;
        const int64_t moved = delta ? (*delta)[at] : 0;
        for (size_t d = 0; d < m.index.size(); ++d) {
          Lin f;
          f.constant = m.index[d].constant;
          for (const auto& [name, c] : m.index[d].coeffs) add_term(f, local.at(name), c);
          if (static_cast<int64_t>(d) == m.data_dim) {  // the chosen index: a loop of its own
            add_term(f, static_cast<uint32_t>(u.vars.size()), 1);
            u.vars.push_back({"#" + std::to_string(d), 0, m.extent[d], {}, {}, true});
            u.vars.back().hi_form.constant = m.extent[d];
          }
          if (delta) add_term(f, step, (*delta)[at + 1 + d]);
          um.index.push_back(f);
          um.strides.push_back(m.strides[d]);
          um.extent.push_back(m.extent[d]);
        }
        if (moved != 0) {  // the run moves the map's offset: one more dimension, its step
          Lin f;
          add_term(f, step, 1);
          um.index.push_back(f);
          um.strides.push_back(moved);
          um.extent.push_back(static_cast<int64_t>(b - a));
        }
        if (delta) at += 1 + m.index.size();
        // A guard that every point passes (a read in a select branch that stays in bounds).
        bool inside = true;
        for (size_t d = 0; d < um.index.size(); ++d) {
          const auto [lo, hi] = lin_range(um.index[d], u.vars);
          inside = inside && lo >= 0 && hi < um.extent[d];
        }
        if (inside) um.guarded = false;
        for (size_t d = 0; d < um.index.size(); ++d) {
          um.flat.constant = sat_add(um.flat.constant, smul(um.strides[d], um.index[d].constant));
          for (const auto& [v, c] : um.index[d].terms) add_term(um.flat, v, smul(c, um.strides[d]));
        }
      }
      ua.maps.push_back(std::move(um));
    }
    return ua;
  };
  for (const einsum::Access& acc : node.reads) u.reads.push_back(convert(acc));
  for (const einsum::Access& acc : node.writes) u.writes.push_back(convert(acc));
  if (node.kind == einsum::NodeKind::Movement && u.tileable) coalesce_copy(u, g);
  return units.emplace(key, std::move(u)).first->second;
}

}  // namespace solar::sol
