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

// The phases of build_space over one segment: its units and their variables, the joins of its
// maps into classes of variables and the common dims among those, then the space's tensors, each
// phase filling `s_` and the state the later ones read. A phase that returns false leaves the
// segment untiled.
struct CacheOptimizer::Impl::SpaceBuilder {
  SpaceBuilder(Impl& impl, Space& s, size_t first, size_t last)
      : im_(impl), s_(s), first_(first), last_(last) {}

  // Gathers the segment's units (runs cut at its ends); false: too many.
  bool add_units() {
    for (size_t n = first_; n < last_;) {
      const size_t b = std::min(im_.run_end[n], last_);
      us_.push_back(&im_.unit(n, b));
      n = b;
    }
    return us_.size() <= kMaxTiledUnits;
  }

  // Numbers the units' variables, one list for the segment; false: a unit cannot be tiled.
  bool add_variables() {
    // The segment's variables; a map's flat form over them.
    base_.assign(us_.size(), 0);
    step_of_.assign(us_.size(), UINT32_MAX);
    for (size_t u = 0; u < us_.size(); ++u) {
      if (!us_[u]->tileable) return false;
      base_[u] = static_cast<uint32_t>(vars_.size());
      if (us_[u]->run) step_of_[u] = base_[u] + static_cast<uint32_t>(us_[u]->vars.size()) - 1;
      for (const UVar& v : us_[u]->vars) {
        vars_.push_back(v);
        for (Lin* b : {&vars_.back().lo_form, &vars_.back().hi_form}) {
          for (auto& term : b->terms) term.first += base_[u];
        }
        unit_of_.push_back(u);
      }
      if (!us_[u]->vars.empty()) ++looped_;
    }
    return true;
  }

  // Gathers the maps of the tensors the segment writes, its writes then its reads; false: a map
  // the segment cannot tile.
  bool add_maps() {
    for (size_t u = 0; u < us_.size(); ++u) {
      for (const UAccess& a : us_[u]->writes) {
        if (a.maps.size() != 1 || a.maps[0].data_dependent) return false;
        writes_[a.tensor].push_back(
            {u, &a.maps[0], global(u, a.maps[0].flat), us_[u]->full_writes, base_[u]});
      }
    }
    for (size_t u = 0; u < us_.size(); ++u) {
      for (const UAccess& a : us_[u]->reads) {
        for (const UMap& m : a.maps) {
          if (writes_.count(a.tensor) == 0) {
            // Rows chosen from a table in DRAM (a take or gather read) join: the tile reads the
            // rows its indices name (DimSpan::chosen). Other data-dependent reads: the node
            // streams alone.
            if (m.data_dependent) return false;
            continue;
          }
          reads_[a.tensor].push_back(
              {u, &m, m.data_dependent ? Lin{} : global(u, m.flat), true, base_[u]});
        }
      }
    }
    return true;
  }

  // Joins the variables through each tensor the segment writes; false: a join fails.
  bool join_tensors() {
    uf_ = UnionFind(vars_.size());
    whole_.assign(vars_.size(), false);
    for (size_t v = 0; v < vars_.size(); ++v) whole_[v] = vars_[v].chosen;
    read_inside_.assign(im_.g.tensors.size(), false);
    for (const auto& [t, ws] : writes_) {
      bool inside = false;
      if (!join_tensor(im_.g.tensors[t].shape, ws, reads_[t], vars_, step_of_, uf_, whole_,
                       external_, inside)) {
        return false;
      }
      read_inside_[t] = inside;
    }
    std::sort(external_.begin(), external_.end());
    return true;
  }

  // Siblings: two units of which neither depends on the other (through the segment's tensors)
  // and that read one tensor the segment does not write with the same variable in the same
  // storage group can run in one loop over it (horizontal fusion). Their variables are joined
  // unless that would put two variables of one unit in one class.
  void join_siblings() {
    std::vector<uint64_t> deps(us_.size(), 0);  // units each unit depends on, transitively
    for (size_t u = 0; u < us_.size(); ++u) {
      for (const UAccess& a : us_[u]->reads) {
        const auto w = writes_.find(a.tensor);
        if (w == writes_.end()) continue;
        for (const SegMap& m : w->second) {
          if (m.unit < u) deps[u] |= (uint64_t{1} << m.unit) | deps[m.unit];
        }
      }
    }
    std::vector<uint64_t> unit_mask(vars_.size(), 0);  // per class root: the units it has
    for (size_t v = 0; v < vars_.size(); ++v) unit_mask[uf_.find(v)] |= uint64_t{1} << unit_of_[v];
    std::map<size_t, std::vector<SegMap>> shared;  // tensors not written here: their reads
    for (size_t u = 0; u < us_.size(); ++u) {
      for (const UAccess& a : us_[u]->reads) {
        if (writes_.count(a.tensor) > 0) continue;
        for (const UMap& m : a.maps) {
          if (!m.data_dependent && !m.chosen && !m.guarded) {
            shared[a.tensor].push_back({u, &m, global(u, m.flat), true, base_[u]});
          }
        }
      }
    }
    for (const auto& [t, ms] : shared) {
      const Storage st0 = storage_of(im_.g.tensors[t].shape);
      for (size_t a = 0; a < ms.size(); ++a) {
        for (size_t b = a + 1; b < ms.size(); ++b) {
          const size_t ua = ms[a].unit, ub = ms[b].unit;
          if (ua == ub || (deps[ub] >> ua & 1) != 0) continue;
          Storage st = st0;
          std::vector<Lin> fa, fb;
          bool ok = true;
          for (bool again = true; again && ok;) {
            again = false;
            for (const auto& [f, out] :
                 {std::pair{&ms[a].flat, &fa}, std::pair{&ms[b].flat, &fb}}) {
              const int r = express(*f, st, vars_, *out);
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
            const Piece pa = piece_of(fa[gi], vars_), pb = piece_of(fb[gi], vars_);
            if (!matched(pa, pb, vars_)) continue;
            const size_t ra = uf_.find(fa[gi].terms[0].first), rb = uf_.find(fb[gi].terms[0].first);
            if (ra == rb || (unit_mask[ra] & unit_mask[rb]) != 0) continue;
            uf_.unite(ra, rb);
            unit_mask[uf_.find(ra)] = unit_mask[ra] | unit_mask[rb];
          }
        }
      }
    }
  }

  // The classes of joined variables, and which of them are common dims; false: a class that
  // cannot be one loop.
  bool find_classes() {
    // Free units: one that reads nothing the segment writes, writes one to one (no reduction) and
    // is not a run (a cast of a per-head weight, a small table): it may lack a common dim, and
    // then runs whole in every tile, rewriting the same values (its tile of each tensor is whole
    // along the loops it lacks; the repeated work is not counted, which errs low). A bound of the
    // q/k RMSNorm of issue 40: its weights' casts no longer cut the normalisation in two.
    std::vector<bool> free_unit(us_.size(), false);
    size_t looped_bound = 0;  // units with loops that are not free: every common dim is in each
    for (size_t u = 0; u < us_.size(); ++u) {
      const Unit& x = *us_[u];
      free_unit[u] = !x.vars.empty() && !x.reduction && !x.run && x.full_writes &&
                     std::none_of(x.reads.begin(), x.reads.end(),
                                  [&](const UAccess& a) { return writes_.count(a.tensor) > 0; });
      if (!x.vars.empty() && !free_unit[u]) ++looped_bound;
    }
    // Classes: one variable per unit; common: in every unit with loops that is not free (and in
    // at least one unit), whole nowhere.
    for (size_t v = 0; v < vars_.size(); ++v) members_[uf_.find(v)].push_back(v);
    common_of_.assign(vars_.size(), -1);
    for (const auto& [root, vs] : members_) {
      std::vector<bool> seen(us_.size(), false);
      bool runs_whole = false;
      size_t bound = 0;  // units in the class that are not free
      for (const size_t v : vs) {
        if (vars_[v].lo != vars_[root].lo || vars_[v].extent != vars_[root].extent) return false;
        if (seen[unit_of_[v]]) return false;
        seen[unit_of_[v]] = true;
        runs_whole = runs_whole || whole_[v];
        bound += free_unit[unit_of_[v]] ? 0 : 1;
      }
      const bool in_all = looped_bound > 0 ? bound == looped_bound : vs.size() == looped_;
      if (in_all && !runs_whole) common_roots_.push_back(root);
    }
    return true;
  }

  // The space's dims, the common dims; false: none, or too many.
  bool add_common_dims() {
    // No common dim, or too many: a later unit can still join classes (a node reading two
    // intermediates that nothing joined before), so a longer segment may be tileable.
    s_.extendable = true;
    if (common_roots_.empty() || common_roots_.size() > kMaxTiledDims) return false;
    // Common dims in the order of their first variable (the first unit with loops).
    std::sort(common_roots_.begin(), common_roots_.end());
    for (size_t c = 0; c < common_roots_.size(); ++c) {
      const UVar& v = vars_[common_roots_[c]];
      for (const size_t m : members_[common_roots_[c]]) common_of_[m] = static_cast<int>(c);
      s_.dims.push_back({v.name, v.extent, 0});
      s_.candidates.push_back(divisors(v.extent));
    }
    return true;
  }

  // Tensors, by first appearance: a tensor the segment writes is one tensor for the maps that
  // write it and, when the segment also reads parts of it written before, one more (an input)
  // for those reads.
  void add_tensors() {
    for (size_t u = 0; u < us_.size(); ++u) {
      for (const UAccess& a : us_[u]->reads) {
        for (const UMap& m : a.maps) {
          if (writes_.count(a.tensor) == 0) {
            add_map(u, a.tensor, false, m, false);
          } else if (std::binary_search(external_.begin(), external_.end(), &m)) {
            add_map(u, a.tensor, true, m, false);
          }
        }
      }
      for (const UAccess& a : us_[u]->writes) add_map(u, a.tensor, false, a.maps[0], true);
    }
  }

  // Adds map `m` of unit u to tensor t's tile (`outside`: a read of parts written before).
  void add_map(size_t u, size_t t, bool outside, const UMap& m, bool write) {
    const bool table = m.chosen && writes_.count(t) == 0;  // rows chosen from DRAM
    auto [it, fresh] = slot_.emplace(std::make_pair(t, outside), s_.tensors.size());
    if (fresh) {
      SegTensor st;
      st.name = im_.g.tensors[t].name;
      st.elem_size = im_.elem_size(t);
      st.numel = im_.g.tensors[t].numel;
      st.written = writes_.count(t) > 0 && !outside;
      st.read_inside = read_inside_[t];
      st.tensor = t;
      s_.tensors.push_back(std::move(st));
    }
    SegTensor& st = s_.tensors[it->second];
    if (write) st.reduction = st.reduction || us_[u]->reduction;
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
          const size_t v = base_[u] + lv;
          if (common_of_[v] >= 0) {
            span.rows_of.emplace_back(static_cast<size_t>(common_of_[v]), vars_[v].extent);
          } else {
            span.rows_fixed = sat_mul(span.rows_fixed, vars_[v].extent);
          }
        }
        std::sort(span.rows_of.begin(), span.rows_of.end());
        shape.dims.push_back(std::move(span));
        continue;
      }
      span.cmin = span.cmax = m.index[d].constant;
      for (const auto& [lv, coeff] : m.index[d].terms) {
        const size_t v = base_[u] + lv;
        const int64_t c = coeff < 0 ? -coeff : coeff;
        if (common_of_[v] >= 0) {
          span.terms.emplace_back(static_cast<size_t>(common_of_[v]), coeff);
          st.rel |= 1u << common_of_[v];
        } else {
          // The loop's whole range [lo, lo + extent): its lowest value shifts the constant.
          const int64_t low =
              coeff < 0 ? coeff * (vars_[v].lo + vars_[v].extent - 1) : coeff * vars_[v].lo;
          span.cmin = span.cmax = sat_add(span.cmin, low);
          span.fixed.emplace_back(coeff, vars_[v].extent);
          span.base = sat_add(span.base, sat_mul(c, vars_[v].extent - 1));
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
  }

  // What each written tensor is computed from, through the segment's units (program order).
  void add_dependencies() {
    for (size_t u = 0; u < us_.size(); ++u) {
      std::vector<size_t> from;
      for (const UAccess& a : us_[u]->reads) {
        if (writes_.count(a.tensor) == 0) continue;
        const bool inside = std::any_of(a.maps.begin(), a.maps.end(), [&](const UMap& m) {
          return !std::binary_search(external_.begin(), external_.end(), &m);
        });
        if (!inside) continue;
        const size_t x = slot_.at({a.tensor, false});
        from.push_back(x);
        from.insert(from.end(), s_.tensors[x].depends_on.begin(), s_.tensors[x].depends_on.end());
      }
      for (const UAccess& a : us_[u]->writes) {
        std::vector<size_t>& sources = s_.tensors[slot_.at({a.tensor, false})].depends_on;
        sources.insert(sources.end(), from.begin(), from.end());
        std::sort(sources.begin(), sources.end());
        sources.erase(std::unique(sources.begin(), sources.end()), sources.end());
      }
    }
  }

  // Per tensor: the maps that add to its tile, its relevant dims, its role and its least traffic.
  void finish_tensors() {
    for (SegTensor& st : s_.tensors) {
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
      const bool after = im_.needed_after(st.tensor, last_);
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
          for (const GroupDim& d : s_.dims) extents.push_back(d.extent);
          st.least = footprint(routed, extents);
        }
      } else if (st.read_inside) {
        st.role = after ? TensorRole::OnChipOut : TensorRole::OnChip;
      } else {
        st.role = after ? TensorRole::Output : TensorRole::OnChip;
      }
    }
  }

  // Restricts the tile sizes when the search budget is exceeded.
  void limit_candidates() {
    // The search budget: tile vectors x 2^m x m states at most.
    const auto states = [&] {
      double total = 1;
      for (const auto& c : s_.candidates) total *= static_cast<double>(c.size());
      const double m = static_cast<double>(s_.dims.size());
      return total * std::exp2(m) * m;
    };
    if (states() > static_cast<double>(kSearchBudget)) {
      s_.reduced = true;
      for (size_t c = 0; c < s_.dims.size(); ++c) {
        std::vector<int64_t> kept;
        for (const int64_t t : s_.candidates[c]) {
          if ((t & (t - 1)) == 0 || t == s_.dims[c].extent) kept.push_back(t);
        }
        s_.candidates[c] = std::move(kept);
      }
    }
  }

 private:
  // A map's flat form over the segment's variables: loops of one value folded into the constant.
  Lin global(size_t u, const Lin& f) const {
    Lin r = f;
    for (auto& term : r.terms) term.first += base_[u];
    // A loop of one value is a constant.
    for (size_t k = r.terms.size(); k-- > 0;) {
      const UVar& v = vars_[r.terms[k].first];
      if (v.extent == 1) {
        r.constant = sat_add(r.constant, smul(r.terms[k].second, v.lo));
        r.terms.erase(r.terms.begin() + static_cast<std::ptrdiff_t>(k));
      }
    }
    return r;
  }

  Impl& im_;
  Space& s_;
  size_t first_, last_;
  std::vector<const Unit*> us_;
  std::vector<UVar> vars_;  // the segment's variables
  std::vector<uint32_t> base_, step_of_;
  std::vector<size_t> unit_of_;
  size_t looped_ = 0;
  std::map<size_t, std::vector<SegMap>> writes_, reads_;  // tensor written in the segment
  UnionFind uf_{0};
  std::vector<bool> whole_;
  std::vector<const UMap*> external_;
  std::vector<bool> read_inside_;
  std::map<size_t, std::vector<size_t>> members_;  // per class root: its variables
  std::vector<int> common_of_;
  std::vector<size_t> common_roots_;
  std::map<std::pair<size_t, bool>, size_t> slot_;  // (tensor, outside): its index in s_.tensors
};

Space CacheOptimizer::Impl::build_space(size_t first, size_t last) {
  Space s;
  if (unit_count(first, last) > kMaxTiledUnits) {  // the units' count, without building them
    s.extendable = false;
    return s;
  }
  SpaceBuilder b(*this, s, first, last);
  s.extendable = false;  // every failure below stays when the segment grows (docs/fidelities.md)
  if (!b.add_units() || !b.add_variables() || !b.add_maps() || !b.join_tensors()) return s;
  b.join_siblings();
  if (!b.find_classes() || !b.add_common_dims()) return s;
  b.add_tensors();
  b.add_dependencies();
  b.finish_tensors();
  b.limit_candidates();
  s.tileable = true;
  return s;
}

}  // namespace solar::sol
