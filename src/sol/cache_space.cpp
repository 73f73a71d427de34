// The cache-aware optimiser's space of a segment (cache_internal.h): its units joined into
// common dims, its tensors and their maps; CacheOptimizer::Impl::build_space.
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

Space CacheOptimizer::Impl::build_space(size_t first, size_t last) {
  Space s;
  if (unit_count(first, last) > kMaxTiledUnits) {  // the units' count, without building them
    s.extendable = false;
    return s;
  }
  std::vector<const Unit*> us;
  for (size_t n = first; n < last;) {
    const size_t b = std::min(run_end[n], last);
    us.push_back(&unit(n, b));
    n = b;
  }
  s.extendable = false;  // every failure below stays when the segment grows (docs/fidelities.md)
  if (us.size() > kMaxTiledUnits) return s;
  // The segment's variables; a map's flat form over them.
  std::vector<UVar> vars;
  std::vector<uint32_t> base(us.size()), step_of(us.size(), UINT32_MAX);
  std::vector<size_t> unit_of;
  size_t looped = 0;
  for (size_t u = 0; u < us.size(); ++u) {
    if (!us[u]->tileable) return s;
    base[u] = static_cast<uint32_t>(vars.size());
    if (us[u]->run) step_of[u] = base[u] + static_cast<uint32_t>(us[u]->vars.size()) - 1;
    for (const UVar& v : us[u]->vars) {
      vars.push_back(v);
      for (Lin* b : {&vars.back().lo_form, &vars.back().hi_form}) {
        for (auto& term : b->terms) term.first += base[u];
      }
      unit_of.push_back(u);
    }
    if (!us[u]->vars.empty()) ++looped;
  }
  const auto global = [&](size_t u, const Lin& f) {
    Lin r = f;
    for (auto& term : r.terms) term.first += base[u];
    // A loop of one value is a constant.
    for (size_t k = r.terms.size(); k-- > 0;) {
      const UVar& v = vars[r.terms[k].first];
      if (v.extent == 1) {
        r.constant = sat_add(r.constant, smul(r.terms[k].second, v.lo));
        r.terms.erase(r.terms.begin() + static_cast<std::ptrdiff_t>(k));
      }
    }
    return r;
  };
  std::map<size_t, std::vector<SegMap>> writes, reads;  // tensor written in the segment
  for (size_t u = 0; u < us.size(); ++u) {
    for (const UAccess& a : us[u]->writes) {
      if (a.maps.size() != 1 || a.maps[0].data_dependent) return s;
      writes[a.tensor].push_back(
          {u, &a.maps[0], global(u, a.maps[0].flat), us[u]->full_writes, base[u]});
    }
  }
  for (size_t u = 0; u < us.size(); ++u) {
    for (const UAccess& a : us[u]->reads) {
      for (const UMap& m : a.maps) {
        if (writes.count(a.tensor) == 0) {
          // Rows chosen from a table in DRAM (a take or gather read) join: the tile reads the
          // rows its indices name (DimSpan::chosen). Other data-dependent reads: the node
          // streams alone.
          if (m.data_dependent) return s;
          continue;
        }
        reads[a.tensor].push_back(
            {u, &m, m.data_dependent ? Lin{} : global(u, m.flat), true, base[u]});
      }
    }
  }
  UnionFind uf(vars.size());
  std::vector<bool> whole(vars.size(), false);
  for (size_t v = 0; v < vars.size(); ++v) whole[v] = vars[v].chosen;
  std::vector<const UMap*> external;
  std::vector<bool> read_inside(g.tensors.size(), false);
  for (const auto& [t, ws] : writes) {
    bool inside = false;
    if (!join_tensor(g.tensors[t].shape, ws, reads[t], vars, step_of, uf, whole, external,
                     inside)) {
      return s;
    }
    read_inside[t] = inside;
  }
  std::sort(external.begin(), external.end());
  // Siblings: two units of which neither depends on the other (through the segment's tensors)
  // and that read one tensor the segment does not write with the same variable in the same
  // storage group can run in one loop over it (horizontal fusion). Their variables are joined
  // unless that would put two variables of one unit in one class.
  std::vector<uint64_t> deps(us.size(), 0);  // units each unit depends on, transitively
  for (size_t u = 0; u < us.size(); ++u) {
    for (const UAccess& a : us[u]->reads) {
      const auto w = writes.find(a.tensor);
      if (w == writes.end()) continue;
      for (const SegMap& m : w->second) {
        if (m.unit < u) deps[u] |= (uint64_t{1} << m.unit) | deps[m.unit];
      }
    }
  }
  std::vector<uint64_t> unit_mask(vars.size(), 0);  // per class root: the units it has
  for (size_t v = 0; v < vars.size(); ++v) unit_mask[uf.find(v)] |= uint64_t{1} << unit_of[v];
  std::map<size_t, std::vector<SegMap>> shared;  // tensors not written here: their reads
  for (size_t u = 0; u < us.size(); ++u) {
    for (const UAccess& a : us[u]->reads) {
      if (writes.count(a.tensor) > 0) continue;
      for (const UMap& m : a.maps) {
        if (!m.data_dependent && !m.chosen && !m.guarded) {
          shared[a.tensor].push_back({u, &m, global(u, m.flat), true, base[u]});
        }
      }
    }
  }
  for (const auto& [t, ms] : shared) {
    const Storage st0 = storage_of(g.tensors[t].shape);
    for (size_t a = 0; a < ms.size(); ++a) {
      for (size_t b = a + 1; b < ms.size(); ++b) {
        const size_t ua = ms[a].unit, ub = ms[b].unit;
        if (ua == ub || (deps[ub] >> ua & 1) != 0) continue;
        Storage st = st0;
        std::vector<Lin> fa, fb;
        bool ok = true;
        for (bool again = true; again && ok;) {
          again = false;
          for (const auto& [f, out] : {std::pair{&ms[a].flat, &fa}, std::pair{&ms[b].flat, &fb}}) {
            const int r = express(*f, st, vars, *out);
            if (r == kOutside) ok = false;
            if (r >= 0) {
              merge_groups(st, static_cast<size_t>(r));
              again = true;
              break;
            }
          }
        }
        if (!ok) continue;
        for (size_t gi = 0; gi < fa.size(); ++gi) {
          const Piece pa = piece_of(fa[gi], vars), pb = piece_of(fb[gi], vars);
          if (!matched(pa, pb, vars)) continue;
          const size_t ra = uf.find(fa[gi].terms[0].first), rb = uf.find(fb[gi].terms[0].first);
          if (ra == rb || (unit_mask[ra] & unit_mask[rb]) != 0) continue;
          uf.unite(ra, rb);
          unit_mask[uf.find(ra)] = unit_mask[ra] | unit_mask[rb];
        }
      }
    }
  }
  // Free units: one that reads nothing the segment writes, writes one to one (no reduction) and
  // is not a run (a cast of a per-head weight, a small table): it may lack a common dim, and
  // then runs whole in every tile, rewriting the same values (its tile of each tensor is whole
  // along the loops it lacks; the repeated work is not counted, which errs low). A bound of the
  // q/k RMSNorm of issue 40: its weights' casts no longer cut the normalisation in two.
  std::vector<bool> free_unit(us.size(), false);
  size_t looped_bound = 0;  // units with loops that are not free: every common dim is in each
  for (size_t u = 0; u < us.size(); ++u) {
    const Unit& x = *us[u];
    free_unit[u] = !x.vars.empty() && !x.reduction && !x.run && x.full_writes &&
                   std::none_of(x.reads.begin(), x.reads.end(),
                                [&](const UAccess& a) { return writes.count(a.tensor) > 0; });
    if (!x.vars.empty() && !free_unit[u]) ++looped_bound;
  }
  // Classes: one variable per unit; common: in every unit with loops that is not free (and in
  // at least one unit), whole nowhere.
  std::map<size_t, std::vector<size_t>> members;
  for (size_t v = 0; v < vars.size(); ++v) members[uf.find(v)].push_back(v);
  std::vector<int> common_of(vars.size(), -1);
  std::vector<size_t> common_roots;
  for (const auto& [root, vs] : members) {
    std::vector<bool> seen(us.size(), false);
    bool runs_whole = false;
    size_t bound = 0;  // units in the class that are not free
    for (const size_t v : vs) {
      if (vars[v].lo != vars[root].lo || vars[v].extent != vars[root].extent) return s;
      if (seen[unit_of[v]]) return s;
      seen[unit_of[v]] = true;
      runs_whole = runs_whole || whole[v];
      bound += free_unit[unit_of[v]] ? 0 : 1;
    }
    const bool in_all = looped_bound > 0 ? bound == looped_bound : vs.size() == looped;
    if (in_all && !runs_whole) common_roots.push_back(root);
  }
  // No common dim, or too many: a later unit can still join classes (a node reading two
  // intermediates that nothing joined before), so a longer segment may be tileable.
  s.extendable = true;
  if (common_roots.empty() || common_roots.size() > kMaxTiledDims) return s;
  // Common dims in the order of their first variable (the first unit with loops).
  std::sort(common_roots.begin(), common_roots.end());
  for (size_t c = 0; c < common_roots.size(); ++c) {
    const UVar& v = vars[common_roots[c]];
    for (const size_t m : members[common_roots[c]]) common_of[m] = static_cast<int>(c);
    s.dims.push_back({v.name, v.extent, 0});
    s.candidates.push_back(divisors(v.extent));
  }
  // Tensors, by first appearance: a tensor the segment writes is one tensor for the maps that
  // write it and, when the segment also reads parts of it written before, one more (an input)
  // for those reads.
  std::map<std::pair<size_t, bool>, size_t> slot;
  const auto add_map = [&](size_t u, size_t t, bool outside, const UMap& m, bool write) {
    const bool table = m.chosen && writes.count(t) == 0;  // rows chosen from DRAM
    auto [it, fresh] = slot.emplace(std::make_pair(t, outside), s.tensors.size());
    if (fresh) {
      SegTensor st;
      st.name = g.tensors[t].name;
      st.elem_size = elem_size(t);
      st.numel = g.tensors[t].numel;
      st.written = writes.count(t) > 0 && !outside;
      st.read_inside = read_inside[t];
      st.tensor = t;
      s.tensors.push_back(std::move(st));
    }
    SegTensor& st = s.tensors[it->second];
    if (write) st.reduction = st.reduction || us[u]->reduction;
    MapShape shape;
    shape.offset = m.offset;
    for (size_t d = 0; d < m.index.size(); ++d) {
      if (m.strides[d] == 0) continue;  // a broadcast dimension touches one element
      shape.strides.push_back(m.strides[d]);
      DimSpan span;
      span.extent = m.extent[d];
      if (table && static_cast<int64_t>(d) == m.data_dim) {
        span.chosen = true;
        span.fewest = m.fewest_rows;
        for (const uint32_t lv : m.choosers) {
          const size_t v = base[u] + lv;
          if (common_of[v] >= 0) {
            span.rows_of.emplace_back(static_cast<size_t>(common_of[v]), vars[v].extent);
          } else {
            span.rows_fixed = sat_mul(span.rows_fixed, vars[v].extent);
          }
        }
        std::sort(span.rows_of.begin(), span.rows_of.end());
        shape.dims.push_back(std::move(span));
        continue;
      }
      span.cmin = span.cmax = m.index[d].constant;
      for (const auto& [lv, coeff] : m.index[d].terms) {
        const size_t v = base[u] + lv;
        const int64_t c = coeff < 0 ? -coeff : coeff;
        if (common_of[v] >= 0) {
          span.terms.emplace_back(static_cast<size_t>(common_of[v]), coeff);
          st.rel |= 1u << common_of[v];
        } else {
          // The loop's whole range [lo, lo + extent): its lowest value shifts the constant.
          const int64_t low =
              coeff < 0 ? coeff * (vars[v].lo + vars[v].extent - 1) : coeff * vars[v].lo;
          span.cmin = span.cmax = sat_add(span.cmin, low);
          span.fixed.emplace_back(coeff, vars[v].extent);
          span.base = sat_add(span.base, sat_mul(c, vars[v].extent - 1));
        }
      }
      std::sort(span.terms.begin(), span.terms.end());
      std::sort(span.fixed.begin(), span.fixed.end());
      shape.dims.push_back(std::move(span));
    }
    const auto same = std::find_if(st.shapes.begin(), st.shapes.end(),
                                   [&](const MapShape& x) { return x.merges_with(shape); });
    if (same == st.shapes.end()) {
      st.shapes.push_back(std::move(shape));
      return;
    }
    for (size_t d = 0; d < shape.dims.size(); ++d) {
      same->dims[d].cmin = std::min(same->dims[d].cmin, shape.dims[d].cmin);
      same->dims[d].cmax = std::max(same->dims[d].cmax, shape.dims[d].cmax);
    }
  };
  for (size_t u = 0; u < us.size(); ++u) {
    for (const UAccess& a : us[u]->reads) {
      for (const UMap& m : a.maps) {
        if (writes.count(a.tensor) == 0) {
          add_map(u, a.tensor, false, m, false);
        } else if (std::binary_search(external.begin(), external.end(), &m)) {
          add_map(u, a.tensor, true, m, false);
        }
      }
    }
    for (const UAccess& a : us[u]->writes) add_map(u, a.tensor, false, a.maps[0], true);
  }
  // What each written tensor is computed from, through the segment's units (program order).
  for (size_t u = 0; u < us.size(); ++u) {
    std::vector<size_t> from;
    for (const UAccess& a : us[u]->reads) {
      if (writes.count(a.tensor) == 0) continue;
      const bool inside = std::any_of(a.maps.begin(), a.maps.end(), [&](const UMap& m) {
        return !std::binary_search(external.begin(), external.end(), &m);
      });
      if (!inside) continue;
      const size_t x = slot.at({a.tensor, false});
      from.push_back(x);
      from.insert(from.end(), s.tensors[x].depends_on.begin(), s.tensors[x].depends_on.end());
    }
    for (const UAccess& a : us[u]->writes) {
      std::vector<size_t>& sources = s.tensors[slot.at({a.tensor, false})].depends_on;
      sources.insert(sources.end(), from.begin(), from.end());
      std::sort(sources.begin(), sources.end());
      sources.erase(std::unique(sources.begin(), sources.end()), sources.end());
    }
  }
  for (SegTensor& st : s.tensors) {
    // A map inside another adds nothing to the tile (a column read beside the whole row); the
    // relevant dims are those of the maps that remain.
    for (size_t k = st.shapes.size(); k-- > 0;) {
      for (size_t o = 0; o < st.shapes.size(); ++o) {
        if (o != k && contains(st.shapes[o], st.shapes[k])) {
          st.shapes.erase(st.shapes.begin() + static_cast<std::ptrdiff_t>(k));
          break;
        }
      }
    }
    st.rel = 0;
    for (const MapShape& shape : st.shapes) {
      for (const DimSpan& d : shape.dims) {
        for (const auto& [dim, coeff] : d.terms) st.rel |= 1u << dim;
        for (const auto& [dim, extent] : d.rows_of) st.rel |= 1u << dim;
      }
    }
    const bool after = needed_after(st.tensor, last);
    if (!st.written) {
      st.role = TensorRole::Input;
      // the routed takes' maps alone: their rows, whole in the other dimensions (copied only
      // for a tensor that has them: build_space runs for every segment the search tries)
      SegTensor routed;
      routed.numel = st.numel;
      for (const MapShape& m : st.shapes) {
        if (std::any_of(m.dims.begin(), m.dims.end(),
                        [](const DimSpan& d) { return d.chosen && d.fewest > 0; })) {
          routed.shapes.push_back(m);
        }
      }
      if (!routed.shapes.empty()) {
        std::vector<int64_t> extents;
        for (const GroupDim& d : s.dims) extents.push_back(d.extent);
        st.least = footprint(routed, extents);
      }
    } else if (st.read_inside) {
      st.role = after ? TensorRole::OnChipOut : TensorRole::OnChip;
    } else {
      st.role = after ? TensorRole::Output : TensorRole::OnChip;
    }
  }
  // The search budget: tile vectors x 2^m x m states at most.
  const auto states = [&] {
    double total = 1;
    for (const auto& c : s.candidates) total *= static_cast<double>(c.size());
    const double m = static_cast<double>(s.dims.size());
    return total * std::exp2(m) * m;
  };
  if (states() > static_cast<double>(kSearchBudget)) {
    s.reduced = true;
    for (size_t c = 0; c < s.dims.size(); ++c) {
      std::vector<int64_t> kept;
      for (const int64_t t : s.candidates[c]) {
        if ((t & (t - 1)) == 0 || t == s.dims[c].extent) kept.push_back(t);
      }
      s.candidates[c] = std::move(kept);
    }
  }
  s.tileable = true;
  return s;
}

}  // namespace solar::sol
