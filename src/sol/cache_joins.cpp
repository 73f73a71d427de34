// The cache-aware optimiser's joins through intermediates (cache_internal.h): every map of a
// tensor written in a segment expressed on groups of its storage dims, and join_tensor's rule.
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

Storage storage_of(const std::vector<int64_t>& shape) {
  Storage st;
  int64_t stride = 1;
  for (size_t k = shape.size(); k-- > 0;) {
    if (shape[k] != 1) {
      st.stride.insert(st.stride.begin(), stride);
      st.size.insert(st.size.begin(), shape[k]);
    }
    stride = sat_mul(stride, shape[k]);
  }
  st.numel = stride;
  return st;
}

int express(const Lin& f, const Storage& st, const std::vector<UVar>& vars, std::vector<Lin>& out) {
  const size_t k = st.stride.size();
  out.assign(k, Lin{});
  for (const auto& [v, c] : f.terms) {
    const int64_t a = c < 0 ? -c : c;
    size_t g = 0;
    while (g < k && st.stride[g] > a) ++g;
    if (g == k) return kOutside;
    if (c % st.stride[g] != 0) return static_cast<int>(g);
    add_term(out[g], v, c / st.stride[g]);
  }
  int64_t base = f.constant, top = f.constant;
  std::vector<std::pair<int64_t, int64_t>> range(k);
  for (size_t g = 0; g < k; ++g) {
    range[g] = lin_range(out[g], vars);
    base = sat_add(base, smul(st.stride[g], range[g].first));
    top = sat_add(top, smul(st.stride[g], range[g].second));
  }
  if (base < 0 || top >= st.numel) return kOutside;
  int64_t rem = base;
  for (size_t g = 0; g < k; ++g) {
    const int64_t digit = rem / st.stride[g];
    rem %= st.stride[g];
    if (digit + range[g].second - range[g].first >= st.size[g]) {
      if (g == 0) return kOutside;  // cannot happen: top < numel bounds the outermost group
      return static_cast<int>(g) - 1;
    }
    out[g].constant = digit - range[g].first;
  }
  return kExpressed;
}

void merge_groups(Storage& st, size_t g) {
  st.size[g] = sat_mul(st.size[g], st.size[g + 1]);
  st.stride[g] = st.stride[g + 1];
  st.size.erase(st.size.begin() + static_cast<std::ptrdiff_t>(g) + 1);
  st.stride.erase(st.stride.begin() + static_cast<std::ptrdiff_t>(g) + 1);
}

Piece piece_of(const Lin& f, const std::vector<UVar>& vars) {
  Piece p;
  p.form = &f;
  std::tie(p.lo, p.hi) = lin_range(f, vars);
  p.plain = f.terms.size() == 1 && f.terms[0].second == 1;
  // Dense: coefficients, by magnitude, 1, e_1, e_1 e_2, ... (e the extents).
  std::vector<std::pair<int64_t, int64_t>> mags;
  for (const auto& [v, c] : f.terms) mags.emplace_back(c < 0 ? -c : c, vars[v].extent);
  std::sort(mags.begin(), mags.end());
  int64_t next = 1;
  p.exact = true;
  for (const auto& [m, e] : mags) {
    if (m != next) p.exact = false;
    next = sat_mul(next, e);
  }
  return p;
}

Overlap overlap(const Piece& r, const Piece& w) {
  if (r.hi < w.lo || r.lo > w.hi) return Overlap::Disjoint;
  if (w.lo <= r.lo && r.hi <= w.hi) return Overlap::Covered;
  return Overlap::Partial;
}

bool matched(const Piece& r, const Piece& w, const std::vector<UVar>& vars) {
  if (!r.plain || !w.plain || r.form->constant != w.form->constant) return false;
  const UVar& a = vars[r.form->terms[0].first];
  const UVar& b = vars[w.form->terms[0].first];
  return a.lo == b.lo && a.extent == b.extent;
}

bool express_merging(const Lin& f, Storage& st, const std::vector<UVar>& vars,
                     std::vector<Lin>& out) {
  while (true) {
    const int r = express(f, st, vars, out);
    if (r == kExpressed) return true;
    if (r == kOutside) return false;
    merge_groups(st, static_cast<size_t>(r));
  }
}

void coalesce_copy(Unit& u, const einsum::Graph& g) {
  if (u.reads.size() != 1 || u.reads[0].maps.size() != 1 || u.run) return;
  std::vector<std::pair<size_t, UMap*>> maps;  // (tensor, map), the read first
  for (auto* list : {&u.reads, &u.writes}) {
    for (UAccess& a : *list) {
      for (UMap& m : a.maps) {
        if (m.guarded || m.chosen || m.data_dependent) return;
        maps.emplace_back(a.tensor, &m);
      }
    }
  }
  Storage st = storage_of(g.tensors[maps[0].first].shape);
  std::vector<Lin> forms;
  if (!express_merging(maps[0].second->flat, st, u.vars, forms)) return;
  // The mixes to coalesce, each by coefficient (1, e_0, e_0 e_1, ...): (coefficient, loop).
  std::vector<std::vector<std::pair<int64_t, uint32_t>>> mixes;
  for (const Lin& f : forms) {
    if (f.terms.size() < 2) continue;
    std::vector<std::pair<int64_t, uint32_t>> mix;
    for (const auto& [v, c] : f.terms) mix.emplace_back(c, v);
    std::sort(mix.begin(), mix.end());
    int64_t next = 1;
    bool ok = true;
    for (const auto& [c, v] : mix) {
      ok = ok && c == next && u.vars[v].lo == 0;
      next = sat_mul(next, u.vars[v].extent);
    }
    for (size_t k = 0; k < maps.size() && ok; ++k) {  // every map: the same mix, scaled
      int64_t scale = 0;
      for (const auto& [c, v] : mix) {
        int64_t got = 0;
        for (const auto& term : maps[k].second->flat.terms) {
          if (term.first == v) got = term.second;
        }
        if (c == 1) scale = got;
        ok = ok && got == smul(scale, c);
      }
    }
    if (ok) mixes.push_back(std::move(mix));
  }
  if (mixes.empty()) return;
  Unit out = u;
  std::vector<UMap*> out_maps;
  for (auto* list : {&out.reads, &out.writes}) {
    for (UAccess& a : *list) {
      for (UMap& m : a.maps) out_maps.push_back(&m);
    }
  }
  for (const auto& mix : mixes) {
    const uint32_t keep = mix[0].second;  // the mix's first loop becomes the whole mix
    std::string name;
    int64_t extent = 1;
    for (auto it = mix.rbegin(); it != mix.rend(); ++it) {
      name += (name.empty() ? "" : "*") + u.vars[it->second].name;
      extent = sat_mul(extent, u.vars[it->second].extent);
    }
    for (UMap* m : out_maps) {
      int64_t scale = 0;
      for (const auto& [v, c] : m->flat.terms) {
        if (v == keep) scale = c;
      }
      for (const auto& [c, v] : mix) {
        if (v != keep) add_term(m->flat, v, -smul(scale, c));
      }
    }
    out.vars[keep].name = name;
    out.vars[keep].extent = extent;
    out.vars[keep].hi_form.constant = extent;
    for (const auto& [c, v] : mix) {
      if (v != keep) {
        out.vars[v].extent = 1;  // no map uses it now: one value
        out.vars[v].hi_form.constant = 1;
      }
    }
  }
  for (size_t k = 0; k < out_maps.size(); ++k) {
    Storage ms = storage_of(g.tensors[maps[k].first].shape);
    std::vector<Lin> groups;
    if (!express_merging(out_maps[k]->flat, ms, out.vars, groups)) return;
    out_maps[k]->offset = 0;
    out_maps[k]->index = std::move(groups);
    out_maps[k]->strides = ms.stride;
    out_maps[k]->extent = ms.size;
  }
  u = std::move(out);
}

void join_unit_loops(const SegMap& r, const SegMap& w, const std::vector<UVar>& vars,
                     UnionFind& uf) {
  const UMap& a = *r.map;
  const UMap& b = *w.map;
  if (a.offset != b.offset || a.strides != b.strides || a.extent != b.extent ||
      a.index.size() != b.index.size()) {
    return;
  }
  for (size_t d = 0; d < a.index.size(); ++d) {
    const Lin& x = a.index[d];
    const Lin& y = b.index[d];
    if (x.constant != 0 || y.constant != 0 || x.terms.size() != 1 || y.terms.size() != 1 ||
        x.terms[0].second != 1 || y.terms[0].second != 1) {
      continue;
    }
    const uint32_t u = r.base + x.terms[0].first, v = w.base + y.terms[0].first;
    if (vars[u].extent == 1 && vars[v].extent == 1 && vars[u].lo == vars[v].lo) uf.unite(u, v);
  }
}

namespace {

// A tensor's maps in a segment, its writes then its reads (`all`), each expressed on the
// `groups` groups of the tensor's storage (`forms`) and classified group by group (`pieces`).
struct GroupForms {
  const std::vector<const SegMap*>& all;
  const std::vector<std::vector<Lin>>& forms;
  const std::vector<std::vector<Piece>>& pieces;
  size_t groups;
};

// join_tensor's joins when a write's domain is not a box in its loops (see there).
bool join_non_box_write(const std::vector<SegMap>& ws, const GroupForms& maps,
                        const std::vector<UVar>& vars, UnionFind& uf, bool& read_inside) {
  const auto& [all, forms, pieces, groups] = maps;
  if (ws.size() > 1) return false;
  for (size_t r = 1; r < all.size(); ++r) {
    if (all[r]->unit <= ws[0].unit) return false;
    std::map<uint32_t, uint32_t> to_writer;
    for (size_t g = 0; g < groups; ++g) {
      if (!matched(pieces[r][g], pieces[0][g], vars)) return false;
      to_writer[forms[r][g].terms[0].first] = forms[0][g].terms[0].first;
    }
    for (const auto& [rv, wv] : to_writer) {
      for (const auto& [rb, wb] : {std::pair{&vars[rv].lo_form, &vars[wv].lo_form},
                                   std::pair{&vars[rv].hi_form, &vars[wv].hi_form}}) {
        Lin mapped;
        mapped.constant = rb->constant;
        for (const auto& [v, c] : rb->terms) {
          const auto it = to_writer.find(v);
          if (it == to_writer.end()) return false;
          add_term(mapped, it->second, c);
        }
        if (mapped.constant != wb->constant || mapped.terms != wb->terms) return false;
      }
    }
    for (const auto& [rv, wv] : to_writer) uf.unite(rv, wv);
    join_unit_loops(*all[r], ws[0], vars, uf);
    read_inside = true;
  }
  return true;
}

// Whether the first `writes` maps of `maps` are one-to-one and no two write one element.
bool writes_one_to_one(size_t writes, const GroupForms& maps) {
  const std::vector<std::vector<Lin>>& forms = maps.forms;
  const std::vector<std::vector<Piece>>& pieces = maps.pieces;
  const size_t groups = maps.groups;
  for (size_t w = 0; w < writes; ++w) {
    std::vector<uint32_t> seen;
    for (size_t g = 0; g < groups; ++g) {
      if (!pieces[w][g].exact) return false;
      for (const auto& [v, c] : forms[w][g].terms) seen.push_back(v);
    }
    std::sort(seen.begin(), seen.end());
    if (std::adjacent_find(seen.begin(), seen.end()) != seen.end()) return false;
    for (size_t o = 0; o < w; ++o) {
      bool apart = false;
      for (size_t g = 0; g < groups && !apart; ++g) {
        apart = overlap(pieces[w][g], pieces[o][g]) == Overlap::Disjoint;
      }
      if (!apart) return false;
    }
  }
  return true;
}

// Whether writes that each cover read `r` except in one group, the same for all (`partial`:
// each write and that group), together cover it there.
bool partial_writes_cover(const std::vector<std::pair<size_t, int>>& partial,
                          const std::vector<std::vector<Piece>>& pieces, size_t r) {
  const int star = partial[0].second;
  std::vector<std::pair<int64_t, int64_t>> spans;
  for (const auto& [w, g] : partial) {
    if (g != star) return false;
    spans.emplace_back(pieces[w][static_cast<size_t>(g)].lo, pieces[w][static_cast<size_t>(g)].hi);
  }
  std::sort(spans.begin(), spans.end());
  const Piece& need = pieces[r][static_cast<size_t>(star)];
  int64_t reach = need.lo - 1;  // covered so far: [need.lo, reach]
  for (const auto& [lo, hi] : spans) {
    if (lo > reach + 1) break;
    reach = std::max(reach, hi);
  }
  return reach >= need.hi;
}

}  // namespace

bool join_tensor(const std::vector<int64_t>& shape, const std::vector<SegMap>& ws,
                 const std::vector<SegMap>& rs, const std::vector<UVar>& vars,
                 const std::vector<uint32_t>& step_of, UnionFind& uf, std::vector<bool>& whole,
                 std::vector<const UMap*>& external, bool& read_inside) {
  if (rs.empty() && ws.size() == 1) return true;  // nothing to join (a transposed conv's output)
  Storage st = storage_of(shape);
  std::vector<const SegMap*> all;
  for (const SegMap& m : ws) all.push_back(&m);
  for (const SegMap& m : rs) {
    if (m.map->data_dependent || m.map->guarded) return false;
    all.push_back(&m);
  }
  std::vector<std::vector<Lin>> forms(all.size());
  for (bool again = true; again;) {
    again = false;
    for (size_t i = 0; i < all.size() && !again; ++i) {
      const int r = express(all[i]->flat, st, vars, forms[i]);
      if (r == kOutside) return false;
      if (r >= 0) {
        merge_groups(st, static_cast<size_t>(r));
        again = true;
      }
    }
  }
  const size_t groups = st.stride.size();
  std::vector<std::vector<Piece>> pieces(all.size());
  for (size_t i = 0; i < all.size(); ++i) {
    for (const Lin& f : forms[i]) pieces[i].push_back(piece_of(f, vars));
  }
  const GroupForms maps{all, forms, pieces, groups};
  // A write over a domain that is not a box in its loops (a causal triangle): the only write of
  // its tensor, and every read matches it loop for loop over the same bounds.
  if (std::any_of(ws.begin(), ws.end(), [](const SegMap& w) { return !w.full; })) {
    return join_non_box_write(ws, maps, vars, uf, read_inside);
  }
  // Writes: each group a constant, a variable or a dense mix of variables, no variable in two
  // groups (so a write is one-to-one and a tile's writes are the product of its groups), and no
  // two writes of one element.
  if (!writes_one_to_one(ws.size(), maps)) return false;
  const auto join = [&](size_t r, size_t w, int star) {
    join_unit_loops(*all[r], ws[w], vars, uf);
    for (size_t g = 0; g < groups; ++g) {
      if (static_cast<int>(g) != star && matched(pieces[r][g], pieces[w][g], vars)) {
        uf.unite(forms[r][g].terms[0].first, forms[w][g].terms[0].first);
        continue;
      }
      for (const size_t i : {r, w}) {
        for (const auto& [v, c] : forms[i][g].terms) whole[v] = true;
      }
    }
  };
  for (size_t r = ws.size(); r < all.size(); ++r) {
    const size_t unit = all[r]->unit;
    std::vector<std::pair<size_t, int>> partial;  // (write, the one group it covers partly)
    int cover = -1;
    for (size_t w = 0; w < ws.size(); ++w) {
      std::vector<size_t> part;
      bool apart = false;
      for (size_t g = 0; g < groups; ++g) {
        const Overlap o = overlap(pieces[r][g], pieces[w][g]);
        apart = apart || o == Overlap::Disjoint;
        if (o == Overlap::Partial) part.push_back(g);
      }
      if (apart) continue;
      if (ws[w].unit > unit) return false;  // read before a later write of the segment
      if (ws[w].unit == unit) {
        // A run reading what its earlier steps wrote: in one group the step variable alone,
        // with the same coefficient, and the read s >= 1 steps behind; covered elsewhere.
        const uint32_t t = step_of[unit];
        if (t == UINT32_MAX || part.size() != 1) return false;
        const Lin& fr = forms[r][part[0]];
        const Lin& fw = forms[w][part[0]];
        if (fr.terms.size() != 1 || fw.terms.size() != 1 || fr.terms[0].first != t ||
            fw.terms[0].first != t || fr.terms[0].second != fw.terms[0].second) {
          return false;
        }
        const int64_t a = fr.terms[0].second, gap = fw.constant - fr.constant;
        if (gap % a != 0 || gap / a < 1) return false;
        partial.emplace_back(w, static_cast<int>(part[0]));
        continue;
      }
      if (part.empty()) {
        cover = static_cast<int>(w);
        continue;
      }
      if (part.size() != 1) return false;
      partial.emplace_back(w, static_cast<int>(part[0]));
    }
    if (cover >= 0) {
      join(r, static_cast<size_t>(cover), -1);
      read_inside = true;
      continue;
    }
    if (partial.empty()) {
      external.push_back(all[r]->map);
      continue;
    }
    // Several writes, each covering the read except in one group, the same for all, where
    // together they cover it.
    const int star = partial[0].second;
    if (!partial_writes_cover(partial, pieces, r)) return false;
    for (const auto& [w, g] : partial) join(r, w, star);
    read_inside = true;
  }
  return true;
}

}  // namespace cache_detail

}  // namespace solar::sol
