// The cache-aware fused optimiser (include/solar/sol/cache.h, docs/fidelities.md).
//
// Three levels of search, each exact for its part of the mapspace:
//   1. Segments: dynamic programming over the cut points of the node list (best[e] = min over j
//      of best[j] + cost of [j, e) as one group). Exact over every partition into consecutive
//      segments.
//   2. Tile sizes of a tiled segment: every vector of divisors is evaluated. The working set of
//      a tile vector does not depend on the loop order (each tensor keeps one tile; an
//      intermediate's tile is fixed by the order rule), so each tile vector gives one point
//      (working set, least traffic over orders); the points are kept as a Pareto frontier, and
//      a capacity's answer is the least traffic of a point that fits.
//   3. Loop order for one tile vector: a tensor's traffic depends only on the set of loops at
//      or outside its innermost relevant loop (the prefix in which its last relevant dim is
//      placed), so the least total over all permutations is a shortest path over subsets
//      (dynamic programming on the set of dims placed so far: 2^m states instead of m!).
// Pruning rules (each proven in docs/fidelities.md): dims whose tile equals their extent are
// left out of the order (one iteration: no factor in any count); an untiled segment's working
// set only grows when the segment grows, so extending it stops once it exceeds the capacity.
#include "solar/sol/cache.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "solar/ir/affine.h"
#include "solar/ir/dtype.h"
#include "solar/sol/analysis.h"
#include "solar/util/error.h"
#include "solar/util/text.h"

namespace solar::sol {
namespace {

constexpr int64_t kInf = std::numeric_limits<int64_t>::max() / 4;
constexpr size_t kMaxTiledDims = 12;  // common dims of a tiled segment (2^12 loop subsets)

int64_t sat_mul(int64_t a, int64_t b) {
  if (a == 0 || b == 0) return 0;
  if (a >= kInf / b) return kInf;
  return a * b;
}
int64_t sat_add(int64_t a, int64_t b) { return std::min(kInf, a + b); }

std::vector<int64_t> divisors(int64_t n) {
  std::vector<int64_t> small, large;
  for (int64_t d = 1; d * d <= n; ++d) {
    if (n % d != 0) continue;
    small.push_back(d);
    if (d != n / d) large.push_back(n / d);
  }
  small.insert(small.end(), large.rbegin(), large.rend());
  return small;
}

// One dimension of a tensor's index over a tile: span = min(extent, base + (cmax - cmin) +
// sum coeff x (tile[dim] - 1)), where [cmin, cmax] are the constants of the maps merged into it.
// A tile's indices run from cmin + first + sum |coeff| x tile[dim] x t[dim] (t: the tile's
// position along each common dim) over `span` values; when a guarded map's indices leave
// 0..extent (`clip`), only the part of that run in bounds counts.
struct DimSpan {
  int64_t base = 1;
  std::vector<std::pair<size_t, int64_t>> terms;   // (common dim, coeff), sorted
  std::vector<std::pair<int64_t, int64_t>> fixed;  // other loops: (coeff, extent), sorted
  int64_t extent = 1;
  int64_t cmin = 0, cmax = 0;
  int64_t first = 0;  // the common terms' least value over the first tile positions
  bool clip = false;

  bool same_linear_part(const DimSpan& o) const {
    return terms == o.terms && fixed == o.fixed && extent == o.extent;
  }
};

// The maps of one tensor that share a layout and linear part (they differ only by constants,
// or not at all, e.g. the same `s[h, i, j]` written by one node and read by three): their tile
// is the product of per-dimension spans, each widened to hold every map's constant.
struct MapShape {
  int64_t offset = 0;
  std::vector<int64_t> strides;
  std::vector<DimSpan> dims;
  bool guarded = false;  // one of its maps is guarded

  bool merges_with(const MapShape& o) const {
    if (offset != o.offset || strides != o.strides || dims.size() != o.dims.size()) return false;
    for (size_t d = 0; d < dims.size(); ++d) {
      if (!dims[d].same_linear_part(o.dims[d])) return false;
    }
    return true;
  }
};

struct SegTensor {
  std::string name;
  TensorRole role = TensorRole::Input;
  int64_t elem_size = 4;
  int64_t numel = 0;
  std::vector<MapShape> shapes;
  uint32_t rel = 0;        // common dims its index uses
  bool reduction = false;  // written by a node with a reduction (partial sums)
};

// A segment as a tiled group: its common dims and tensors. `tileable` false: why not.
struct Space {
  bool tileable = false;
  std::vector<GroupDim> dims;
  std::vector<std::vector<int64_t>> candidates;
  std::vector<SegTensor> tensors;
  bool reduced = false;
};

struct FrontierPoint {
  int64_t ws = 0;
  int64_t traffic = 0;
  std::vector<int64_t> tiles;
};

// The Pareto frontier of (working set, traffic): ws increasing, traffic strictly decreasing.
struct Frontier {
  std::vector<FrontierPoint> points;

  void insert(int64_t ws, int64_t traffic, const std::vector<int64_t>& tiles) {
    auto it = std::upper_bound(points.begin(), points.end(), ws,
                               [](int64_t w, const FrontierPoint& p) { return w < p.ws; });
    if (it != points.begin() && std::prev(it)->traffic <= traffic) return;  // dominated
    auto end = it;
    while (end != points.end() && end->traffic >= traffic) ++end;
    // Points with the same ws and more traffic sit just before `it`.
    auto begin = it;
    while (begin != points.begin() && std::prev(begin)->ws == ws) --begin;
    it = points.erase(begin, end);
    points.insert(it, FrontierPoint{ws, traffic, tiles});
  }
  // The point of least traffic that fits, or nullptr.
  const FrontierPoint* query(int64_t capacity) const {
    auto it = std::upper_bound(points.begin(), points.end(), capacity,
                               [](int64_t c, const FrontierPoint& p) { return c < p.ws; });
    return it == points.begin() ? nullptr : &*std::prev(it);
  }
};

// The values of dimension d's index over a tile (a run of that many, gaps included).
int64_t tile_span(const DimSpan& d, const std::vector<int64_t>& tiles) {
  int64_t span = sat_add(d.base, d.cmax - d.cmin);
  for (const auto& [dim, coeff] : d.terms) {
    span = sat_add(span, sat_mul(coeff < 0 ? -coeff : coeff, tiles[dim] - 1));
  }
  return span;
}

// How many of the values a .. a + span - 1 lie in 0..extent.
int64_t in_bounds(int64_t a, int64_t span, int64_t extent) {
  return std::max<int64_t>(0, std::min(sat_add(a, span), extent) - std::max<int64_t>(a, 0));
}

// The span of a clipped dimension: the most values in bounds of any tile. Tiles that move along
// one common dim start at an arithmetic progression, and in_bounds(a) rises up to a = p0 =
// min(0, extent - span), stays at its largest until max(0, extent - span), then falls: the best
// start is the first at or after p0, or the one before it. Tiles that move along two or more
// common dims take the span clipped to the extent (no smaller than any tile's part in bounds).
int64_t clipped_span(const DimSpan& d, int64_t span, const std::vector<int64_t>& tiles,
                     const std::vector<GroupDim>& dims) {
  int64_t step = 0, count = 1;
  for (const auto& [dim, coeff] : d.terms) {
    const int64_t n = dims[dim].extent / tiles[dim];
    if (n == 1) continue;
    if (count > 1) return std::min(span, d.extent);
    step = sat_mul(coeff < 0 ? -coeff : coeff, tiles[dim]);
    count = n;
  }
  const int64_t start = d.cmin + d.first;
  const int64_t p0 = std::min<int64_t>(0, d.extent - span);
  const int64_t t =
      count == 1 || start >= p0 ? 0 : std::min(count - 1, (p0 - start + step - 1) / step);
  int64_t best = in_bounds(start + step * t, span, d.extent);
  if (t > 0) best = std::max(best, in_bounds(start + step * (t - 1), span, d.extent));
  return best;
}

// Elements of a tensor's tile.
int64_t footprint(const SegTensor& t, const std::vector<int64_t>& tiles,
                  const std::vector<GroupDim>& dims) {
  int64_t total = 0;
  for (const MapShape& s : t.shapes) {
    int64_t prod = 1;
    for (const DimSpan& d : s.dims) {
      const int64_t span = tile_span(d, tiles);
      prod = sat_mul(prod, d.clip ? clipped_span(d, span, tiles, dims) : std::min(span, d.extent));
    }
    total = sat_add(total, prod);
  }
  return std::min(total, t.numel);
}

// The traffic (bytes) of tensor `t` whose tile is `fp` elements, when the loops at or outside
// its innermost relevant loop run `visits` times in all, of which `distinct` distinct tiles.
int64_t tensor_traffic(const SegTensor& t, int64_t fp, int64_t visits, int64_t distinct) {
  const int64_t bytes = sat_mul(fp, t.elem_size);
  switch (t.role) {
    case TensorRole::Input:
      return sat_mul(visits, bytes);
    case TensorRole::Output:  // written at every visit; partial sums read back after the first
      return sat_mul(t.reduction ? 2 * visits - distinct : visits, bytes);
    case TensorRole::OnChip:
      return 0;
    case TensorRole::OnChipOut:
      return sat_mul(visits, bytes);
  }
  return 0;
}

// For a tensor whose relevant common dims are `rel`, under the loop order `order` (tiled dims,
// outermost first): how many times the loops at or outside its innermost relevant loop run, and
// how many distinct tiles of the tensor they visit.
std::pair<int64_t, int64_t> prefix_counts(const Space& s, const std::vector<int64_t>& tiles,
                                          const std::vector<size_t>& order, uint32_t rel) {
  size_t end = 0;
  for (size_t pos = 0; pos < order.size(); ++pos) {
    if (rel & (1u << order[pos])) end = pos + 1;
  }
  int64_t visits = 1, distinct = 1;
  for (size_t pos = 0; pos < end; ++pos) {
    const int64_t n = s.dims[order[pos]].extent / tiles[order[pos]];
    visits = sat_mul(visits, n);
    if (rel & (1u << order[pos])) distinct = sat_mul(distinct, n);
  }
  return {visits, distinct};
}

bool on_chip(TensorRole r) { return r == TensorRole::OnChip || r == TensorRole::OnChipOut; }

// Per tile vector: the tiled dims (tile < extent), and per tensor its relevant mask over them.
struct TiledView {
  std::vector<size_t> tiled;    // common dims with tile < extent
  std::vector<int64_t> counts;  // n = extent / tile of each
  std::vector<uint32_t> rel;    // per tensor, over `tiled`
  std::vector<int64_t> fp;      // per tensor, tile elements
  std::vector<uint32_t> need;   // per tiled dim: on-chip rel masks that must precede it
  std::vector<int64_t> prod;    // per subset of `tiled`: product of counts
};

// Fills `v` for `tiles`, reusing its vectors' storage (the search calls this once per tile vector).
void fill_view(const Space& s, const std::vector<int64_t>& tiles, TiledView& v) {
  v.tiled.clear();
  v.counts.clear();
  v.rel.clear();
  v.fp.clear();
  for (size_t c = 0; c < s.dims.size(); ++c) {
    if (tiles[c] < s.dims[c].extent) {
      v.tiled.push_back(c);
      v.counts.push_back(s.dims[c].extent / tiles[c]);
    }
  }
  const size_t m = v.tiled.size();
  for (const SegTensor& t : s.tensors) {
    uint32_t r = 0;
    for (size_t k = 0; k < m; ++k) {
      if (t.rel & (1u << v.tiled[k])) r |= 1u << k;
    }
    v.rel.push_back(r);
    v.fp.push_back(footprint(t, tiles, s.dims));
  }
  v.need.assign(m, 0);
  for (size_t i = 0; i < s.tensors.size(); ++i) {
    if (!on_chip(s.tensors[i].role)) continue;
    for (size_t k = 0; k < m; ++k) {
      if (!(v.rel[i] & (1u << k))) v.need[k] |= v.rel[i];
    }
  }
  v.prod.assign(size_t{1} << m, 1);
  for (uint32_t p = 1; p < (1u << m); ++p) {
    const int low = __builtin_ctz(p);
    v.prod[p] = sat_mul(v.prod[p & (p - 1)], v.counts[static_cast<size_t>(low)]);
  }
}

TiledView make_view(const Space& s, const std::vector<int64_t>& tiles) {
  TiledView v;
  fill_view(s, tiles, v);
  return v;
}

// The least traffic over loop orders (subset DP); `order_out` receives an order attaining it.
int64_t best_order(const Space& s, const TiledView& v, std::vector<size_t>* order_out) {
  const size_t m = v.tiled.size();
  const uint32_t full = (1u << m) - 1;
  thread_local std::vector<int64_t> f;  // storage reused across calls: one per tile vector
  f.assign(size_t{1} << m, kInf);
  std::vector<int8_t> last(order_out ? size_t{1} << m : 0, -1);
  int64_t start = 0;
  for (size_t i = 0; i < s.tensors.size(); ++i) {
    if (v.rel[i] == 0) start = sat_add(start, tensor_traffic(s.tensors[i], v.fp[i], 1, 1));
  }
  f[0] = start;
  for (uint32_t p = 1; p <= full; ++p) {
    for (size_t k = 0; k < m; ++k) {
      const uint32_t bit = 1u << k;
      if (!(p & bit)) continue;
      const uint32_t prev = p ^ bit;
      if (f[prev] >= kInf || (v.need[k] & ~prev) != 0) continue;
      int64_t cost = f[prev];
      for (size_t i = 0; i < s.tensors.size(); ++i) {
        const uint32_t r = v.rel[i];
        if (!(r & bit) || (r & ~p) != 0) continue;  // completes exactly here
        cost = sat_add(cost, tensor_traffic(s.tensors[i], v.fp[i], v.prod[p], v.prod[p & r]));
      }
      if (cost < f[p]) {
        f[p] = cost;
        if (order_out) last[p] = static_cast<int8_t>(k);
      }
    }
  }
  if (order_out && f[full] < kInf) {
    order_out->clear();
    for (uint32_t p = full; p != 0; p ^= 1u << last[p]) {
      order_out->push_back(v.tiled[static_cast<size_t>(last[p])]);
    }
    std::reverse(order_out->begin(), order_out->end());
  }
  return f[full];
}

int64_t working_set(const Space& s, const TiledView& v) {
  int64_t ws = 0;
  for (size_t i = 0; i < s.tensors.size(); ++i) {
    ws = sat_add(ws, sat_mul(v.fp[i], s.tensors[i].elem_size));
  }
  return ws;
}

struct UnionFind {
  std::vector<size_t> parent;
  explicit UnionFind(size_t n) : parent(n) { std::iota(parent.begin(), parent.end(), 0); }
  size_t find(size_t x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  }
  void unite(size_t a, size_t b) {
    a = find(a);
    b = find(b);
    if (a != b) parent[std::max(a, b)] = std::min(a, b);
  }
};

// The variable of a plain index (`i`: one variable, coefficient 1, no constant), or "".
std::string plain_var(const ir::AffineForm& f) {
  if (f.constant != 0 || f.coeffs.size() != 1 || f.coeffs.begin()->second != 1) return "";
  return f.coeffs.begin()->first;
}

bool same_layout(const einsum::AccessMap& a, const einsum::AccessMap& b) {
  return a.offset == b.offset && a.strides == b.strides && a.extent == b.extent &&
         a.index.size() == b.index.size();
}

// Per tensor of [first, last): summed read and write footprints (elements), whether its first
// access is a read, in order of first appearance.
struct UntiledUse {
  size_t tensor = 0;
  int64_t read = 0, write = 0;
  bool first_read = false;
};

}  // namespace

struct CacheOptimizer::Impl {
  const einsum::Graph& g;
  std::map<std::string, size_t> tensor_index;
  std::vector<int64_t> last_reader;  // per tensor: last node reading it (-1: none)
  std::vector<std::vector<std::pair<size_t, int64_t>>> node_reads, node_writes;  // (tensor, elems)
  int64_t fused = 0;
  std::map<std::pair<size_t, size_t>, Space> spaces;
  std::map<std::pair<size_t, size_t>, Frontier> frontiers;

  explicit Impl(const einsum::Graph& graph) : g(graph) {
    for (size_t t = 0; t < g.tensors.size(); ++t) tensor_index[g.tensors[t].name] = t;
    last_reader.assign(g.tensors.size(), -1);
    node_reads.resize(g.nodes.size());
    node_writes.resize(g.nodes.size());
    for (size_t n = 0; n < g.nodes.size(); ++n) {
      for (const einsum::Access& a : g.nodes[n].reads) {
        const size_t t = index_of(a.tensor);
        last_reader[t] = static_cast<int64_t>(n);
        node_reads[n].emplace_back(t, a.footprint);
      }
      for (const einsum::Access& a : g.nodes[n].writes) {
        node_writes[n].emplace_back(index_of(a.tensor), a.footprint);
      }
    }
    fused = fused_bytes(g);
  }

  size_t index_of(const std::string& name) const {
    const auto it = tensor_index.find(name);
    SOLAR_CHECK(it != tensor_index.end(), "tensor '" + name + "' is not declared");
    return it->second;
  }
  int64_t elem_size(size_t t) const { return ir::dtype_size(g.tensors[t].dtype); }
  bool needed_after(size_t t, size_t last) const {
    return g.tensors[t].role == ir::TensorRole::Output ||
           last_reader[t] >= static_cast<int64_t>(last);
  }

  const Space& space(size_t first, size_t last) {
    const auto key = std::make_pair(first, last);
    auto it = spaces.find(key);
    if (it == spaces.end()) it = spaces.emplace(key, build_space(first, last)).first;
    return it->second;
  }

  Space build_space(size_t first, size_t last) const;
  const Frontier& frontier(size_t first, size_t last);
  CacheGroup tiled_group(size_t first, size_t last, const FrontierPoint& p);
  std::vector<UntiledUse> untiled_uses(size_t first, size_t last) const;
  GroupTensor untiled_tensor(const UntiledUse& u, size_t last) const;
  std::pair<int64_t, int64_t> untiled_cost(size_t first, size_t last) const;  // (ws, traffic)
  CacheGroup untiled_group(size_t first, size_t last) const;
  int64_t streamed_traffic(size_t n) const;
  CacheGroup streamed_group(size_t n) const;
  std::optional<CacheGroup> best(size_t first, size_t last, int64_t capacity, bool untiled);
  void set_min_traffic(CacheGroup& grp);
};

Space CacheOptimizer::Impl::build_space(size_t first, size_t last) const {
  Space s;
  if (last - first > kMaxTiledGroup) return s;
  // Loop variables of every node: global ids, ranges.
  struct Var {
    size_t node;
    std::string name;
    int64_t lo, extent;
  };
  std::vector<Var> vars;
  std::vector<std::map<std::string, size_t>> var_id(last - first);
  for (size_t n = first; n < last; ++n) {
    const einsum::Node& node = g.nodes[n];
    if (node.kind != einsum::NodeKind::Einsum) return s;
    for (const ir::AffineLoop& l : node.domain) {
      ir::AffineForm f;
      f.coeffs[l.var] = 1;
      const int64_t lo = ir::affine_min(f, node.domain).value;
      const int64_t hi = ir::affine_max(f, node.domain).value + 1;
      if (hi <= lo) return s;
      var_id[n - first][l.var] = vars.size();
      vars.push_back({n, l.var, lo, hi - lo});
    }
  }
  // Writers and readers of each tensor in the segment.
  std::map<size_t, size_t> writer;
  for (size_t n = first; n < last; ++n) {
    for (const einsum::Access& a : g.nodes[n].writes) {
      if (!writer.emplace(index_of(a.tensor), n).second || a.maps.size() != 1) return s;
    }
  }
  UnionFind uf(vars.size());
  for (size_t n = first; n < last; ++n) {
    for (const einsum::Access& a : g.nodes[n].reads) {
      const auto w = writer.find(index_of(a.tensor));
      if (w == writer.end()) continue;
      if (w->second >= n) return s;  // read before it is written in the segment
      const einsum::AccessMap& wm = g.nodes[w->second].writes[0].maps[0];
      for (const einsum::AccessMap& rm : a.maps) {
        if (rm.data_dependent || wm.data_dependent || !same_layout(rm, wm)) return s;
        for (size_t d = 0; d < rm.index.size(); ++d) {
          const std::string wv = plain_var(wm.index[d]), rv = plain_var(rm.index[d]);
          if (wv.empty() || rv.empty()) return s;
          uf.unite(var_id[w->second - first].at(wv), var_id[n - first].at(rv));
        }
      }
    }
  }
  // Classes: consistent ranges, one variable per node; common: in every node.
  std::map<size_t, std::vector<size_t>> members;
  for (size_t v = 0; v < vars.size(); ++v) members[uf.find(v)].push_back(v);
  std::vector<int> common_of(vars.size(), -1);
  std::vector<size_t> common_roots;
  for (const auto& [root, vs] : members) {
    std::vector<bool> seen(last - first, false);
    for (const size_t v : vs) {
      if (vars[v].lo != vars[root].lo || vars[v].extent != vars[root].extent) return s;
      if (seen[vars[v].node - first]) return s;
      seen[vars[v].node - first] = true;
    }
    if (vs.size() == last - first) common_roots.push_back(root);
  }
  if (common_roots.empty() || common_roots.size() > kMaxTiledDims) return s;
  // Common dims in the first node's loop order (roots are ids of the first node's variables,
  // the smallest ids of their classes).
  std::sort(common_roots.begin(), common_roots.end());
  for (size_t c = 0; c < common_roots.size(); ++c) {
    const Var& v = vars[common_roots[c]];
    for (const size_t m : members[common_roots[c]]) common_of[m] = static_cast<int>(c);
    s.dims.push_back({v.name, v.extent, 0});
    s.candidates.push_back(divisors(v.extent));
  }
  // Tensors, by first appearance.
  std::map<size_t, size_t> slot;
  const auto add_maps = [&](size_t n, const einsum::Access& a, bool write) {
    const size_t t = index_of(a.tensor);
    auto [it, fresh] = slot.emplace(t, s.tensors.size());
    if (fresh) {
      SegTensor st;
      st.name = a.tensor;
      st.elem_size = elem_size(t);
      st.numel = g.tensors[t].numel;
      s.tensors.push_back(std::move(st));
    }
    SegTensor& st = s.tensors[it->second];
    if (write) st.reduction = g.nodes[n].reduction != einsum::Reduction::None;
    for (const einsum::AccessMap& m : a.maps) {
      if (m.data_dependent) return false;
      MapShape shape;
      shape.offset = m.offset;
      shape.strides = m.strides;
      shape.guarded = m.guarded;
      for (size_t d = 0; d < m.index.size(); ++d) {
        DimSpan span;
        span.extent = m.extent[d];
        span.cmin = span.cmax = m.index[d].constant;
        for (const auto& [name, coeff] : m.index[d].coeffs) {
          const size_t v = var_id[n - first].at(name);
          const int64_t c = coeff < 0 ? -coeff : coeff;
          if (common_of[v] >= 0) {
            span.terms.emplace_back(static_cast<size_t>(common_of[v]), coeff);
            span.first = sat_add(span.first, coeff < 0 ? coeff * (vars[v].lo + vars[v].extent - 1)
                                                       : coeff * vars[v].lo);
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
        continue;
      }
      same->guarded = same->guarded || shape.guarded;
      for (size_t d = 0; d < shape.dims.size(); ++d) {
        same->dims[d].cmin = std::min(same->dims[d].cmin, shape.dims[d].cmin);
        same->dims[d].cmax = std::max(same->dims[d].cmax, shape.dims[d].cmax);
      }
    }
    return true;
  };
  for (size_t n = first; n < last; ++n) {
    for (const einsum::Access& a : g.nodes[n].reads) {
      if (!add_maps(n, a, false)) return s;
    }
    for (const einsum::Access& a : g.nodes[n].writes) {
      if (!add_maps(n, a, true)) return s;
    }
  }
  // Guarded maps whose indices leave the tensor over the whole segment are clipped per tile.
  std::vector<int64_t> whole;
  for (const GroupDim& d : s.dims) whole.push_back(d.extent);
  for (SegTensor& st : s.tensors) {
    for (MapShape& shape : st.shapes) {
      for (DimSpan& d : shape.dims) {
        const int64_t low = d.cmin + d.first;
        d.clip = shape.guarded && (low < 0 || sat_add(low, tile_span(d, whole)) > d.extent);
      }
    }
  }
  for (const auto& [t, i] : slot) {
    const bool produced = writer.count(t) > 0;
    bool read = false;
    for (size_t n = first; n < last && produced; ++n) {
      for (const einsum::Access& a : g.nodes[n].reads) read = read || index_of(a.tensor) == t;
    }
    const bool after = needed_after(t, last);
    SegTensor& st = s.tensors[i];
    if (!produced) {
      st.role = TensorRole::Input;
    } else if (read) {
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

const Frontier& CacheOptimizer::Impl::frontier(size_t first, size_t last) {
  const auto key = std::make_pair(first, last);
  const auto found = frontiers.find(key);
  if (found != frontiers.end()) return found->second;
  Frontier fr;
  const Space& s = space(first, last);
  if (s.tileable) {
    const size_t k = s.dims.size();
    std::vector<size_t> digit(k, 0);
    std::vector<int64_t> tiles(k);
    TiledView v;
    while (true) {
      for (size_t c = 0; c < k; ++c) tiles[c] = s.candidates[c][digit[c]];
      fill_view(s, tiles, v);
      const int64_t ws = working_set(s, v);
      const int64_t traffic = best_order(s, v, nullptr);
      if (traffic < kInf) fr.insert(ws, traffic, tiles);
      size_t c = 0;
      while (c < k && ++digit[c] == s.candidates[c].size()) digit[c++] = 0;
      if (c == k) break;
    }
  }
  return frontiers.emplace(key, std::move(fr)).first->second;
}

CacheGroup CacheOptimizer::Impl::tiled_group(size_t first, size_t last, const FrontierPoint& p) {
  const Space& s = space(first, last);
  const TiledView v = make_view(s, p.tiles);
  std::vector<size_t> order;
  const int64_t traffic = best_order(s, v, &order);
  SOLAR_CHECK(traffic == p.traffic, "cache optimiser: order does not reproduce the frontier");
  CacheGroup grp;
  grp.first = first;
  grp.last = last;
  grp.mode = GroupMode::Tiled;
  grp.reduced_mapspace = s.reduced;
  for (size_t c = 0; c < s.dims.size(); ++c) {
    grp.dims.push_back({s.dims[c].name, s.dims[c].extent, p.tiles[c]});
  }
  for (const size_t c : order) grp.loop_order.push_back(s.dims[c].name);
  for (size_t i = 0; i < s.tensors.size(); ++i) {
    const SegTensor& t = s.tensors[i];
    const auto [visits, distinct] = prefix_counts(s, p.tiles, order, t.rel);
    if (on_chip(t.role)) {
      for (const size_t c : order) {
        if (!(t.rel & (1u << c)) && t.reduction) {
          grp.online.push_back(t.name);
          break;
        }
      }
    }
    GroupTensor gt{t.name, t.role, sat_mul(v.fp[i], t.elem_size), visits,
                   tensor_traffic(t, v.fp[i], visits, distinct)};
    if (t.role == TensorRole::OnChip) gt.fetches = 0;
    grp.tensors.push_back(gt);
  }
  grp.working_set_bytes = p.ws;
  grp.traffic_bytes = p.traffic;
  return grp;
}

std::vector<UntiledUse> CacheOptimizer::Impl::untiled_uses(size_t first, size_t last) const {
  std::vector<UntiledUse> uses;
  std::map<size_t, size_t> slot;
  const auto use = [&](size_t t, bool read) -> UntiledUse& {
    const auto [it, fresh] = slot.emplace(t, uses.size());
    if (fresh) uses.push_back({t, 0, 0, read});
    return uses[it->second];
  };
  for (size_t n = first; n < last; ++n) {
    for (const auto& [t, e] : node_reads[n]) {
      UntiledUse& u = use(t, true);
      u.read = sat_add(u.read, e);
    }
    for (const auto& [t, e] : node_writes[n]) {
      UntiledUse& u = use(t, false);
      u.write = sat_add(u.write, e);
    }
  }
  return uses;
}

// One tensor of an untiled segment: its footprint, DRAM traffic, role.
GroupTensor CacheOptimizer::Impl::untiled_tensor(const UntiledUse& u, size_t last) const {
  const int64_t numel = g.tensors[u.tensor].numel, size = elem_size(u.tensor);
  GroupTensor gt;
  gt.name = g.tensors[u.tensor].name;
  gt.footprint_bytes = sat_mul(std::min(numel, sat_add(u.read, u.write)), size);
  const bool out = u.write > 0 && needed_after(u.tensor, last);
  gt.fetches = 0;
  if (u.first_read) {
    gt.role = TensorRole::Input;
    gt.traffic_bytes = sat_mul(std::min(numel, u.read), size);
    gt.fetches = 1;
  } else {
    gt.role = out ? (u.read > 0 ? TensorRole::OnChipOut : TensorRole::Output) : TensorRole::OnChip;
  }
  if (out) {
    gt.traffic_bytes = sat_add(gt.traffic_bytes, sat_mul(std::min(numel, u.write), size));
    gt.fetches = 1;
  }
  return gt;
}

std::pair<int64_t, int64_t> CacheOptimizer::Impl::untiled_cost(size_t first, size_t last) const {
  int64_t ws = 0, traffic = 0;
  for (const UntiledUse& u : untiled_uses(first, last)) {
    const GroupTensor t = untiled_tensor(u, last);
    ws = sat_add(ws, t.footprint_bytes);
    traffic = sat_add(traffic, t.traffic_bytes);
  }
  // The whole graph at once: each input, weight and output exactly once (the fused model).
  if (first == 0 && last == g.nodes.size()) traffic = fused;
  return {ws, traffic};
}

CacheGroup CacheOptimizer::Impl::untiled_group(size_t first, size_t last) const {
  CacheGroup grp;
  grp.first = first;
  grp.last = last;
  grp.mode = GroupMode::Untiled;
  for (const UntiledUse& u : untiled_uses(first, last))
    grp.tensors.push_back(untiled_tensor(u, last));
  std::tie(grp.working_set_bytes, grp.traffic_bytes) = untiled_cost(first, last);
  return grp;
}

int64_t CacheOptimizer::Impl::streamed_traffic(size_t n) const {
  int64_t traffic = 0;
  for (const auto* list : {&node_reads[n], &node_writes[n]}) {
    for (const auto& [t, e] : *list) traffic = sat_add(traffic, sat_mul(e, elem_size(t)));
  }
  return traffic;
}

CacheGroup CacheOptimizer::Impl::streamed_group(size_t n) const {
  CacheGroup grp;
  grp.first = n;
  grp.last = n + 1;
  grp.mode = GroupMode::Streamed;
  for (const auto* list : {&node_reads[n], &node_writes[n]}) {
    for (const auto& [t, e] : *list) {
      GroupTensor gt{g.tensors[t].name,
                     list == &node_reads[n] ? TensorRole::Input : TensorRole::Output, 0, 1,
                     sat_mul(e, elem_size(t))};
      grp.traffic_bytes = sat_add(grp.traffic_bytes, gt.traffic_bytes);
      grp.tensors.push_back(std::move(gt));
    }
  }
  return grp;
}

std::optional<CacheGroup> CacheOptimizer::Impl::best(size_t first, size_t last, int64_t capacity,
                                                     bool untiled) {
  if (last - first == 1 && g.nodes[first].kind == einsum::NodeKind::Movement) {
    return streamed_group(first);
  }
  std::optional<CacheGroup> out;
  if (const FrontierPoint* p = frontier(first, last).query(capacity)) {
    out = tiled_group(first, last, *p);
  }
  if (untiled) {
    const auto [ws, traffic] = untiled_cost(first, last);
    if (ws <= capacity && (!out || traffic < out->traffic_bytes)) out = untiled_group(first, last);
  }
  return out;
}

void CacheOptimizer::Impl::set_min_traffic(CacheGroup& grp) {
  int64_t min_traffic = grp.traffic_bytes, min_ws = grp.working_set_bytes;
  const auto consider = [&](int64_t traffic, int64_t ws) {
    if (traffic < min_traffic || (traffic == min_traffic && ws < min_ws)) {
      min_traffic = traffic;
      min_ws = ws;
    }
  };
  if (grp.mode != GroupMode::Streamed) {
    for (const FrontierPoint& p : frontier(grp.first, grp.last).points) consider(p.traffic, p.ws);
    const auto [ws, traffic] = untiled_cost(grp.first, grp.last);
    consider(traffic, ws);
  }
  grp.min_traffic_bytes = min_traffic;
  grp.capacity_for_min_traffic_bytes = min_ws;
  grp.capacity_limited = grp.traffic_bytes > min_traffic;
}

CacheOptimizer::CacheOptimizer(const einsum::Graph& g) : impl_(std::make_unique<Impl>(g)) {}
CacheOptimizer::~CacheOptimizer() = default;

CacheSchedule CacheOptimizer::optimize(int64_t capacity_bytes) {
  std::optional<CacheSchedule> s = try_optimize(capacity_bytes);
  if (!s) {
    throw UserError("no cache-aware schedule fits in an on-chip capacity of " +
                    std::to_string(capacity_bytes) +
                    " bytes (some node's smallest tile is larger; give a larger --capacity)");
  }
  return std::move(*s);
}

std::optional<CacheSchedule> CacheOptimizer::try_optimize(int64_t capacity_bytes) {
  Impl& im = *impl_;
  const size_t n = im.g.nodes.size();
  // choice[e]: the segment [first, e) ending the best schedule of the first e nodes.
  struct Choice {
    size_t first = 0;
    GroupMode mode = GroupMode::Untiled;
    const FrontierPoint* point = nullptr;  // tiled
  };
  std::vector<int64_t> best(n + 1, kInf);
  std::vector<Choice> choice(n + 1);
  best[0] = 0;
  const auto relax = [&](size_t j, size_t e, int64_t traffic, Choice c) {
    if (sat_add(best[j], traffic) < best[e]) {
      best[e] = sat_add(best[j], traffic);
      choice[e] = c;
    }
  };
  for (size_t j = 0; j < n; ++j) {
    if (best[j] >= kInf) continue;
    for (size_t e = j + 1; e <= n; ++e) {
      if (e - j == 1 && im.g.nodes[j].kind == einsum::NodeKind::Movement) {
        relax(j, e, im.streamed_traffic(j), {j, GroupMode::Streamed, nullptr});
      }
      if (e - j <= kMaxTiledGroup) {
        if (const FrontierPoint* p = im.frontier(j, e).query(capacity_bytes)) {
          relax(j, e, p->traffic, {j, GroupMode::Tiled, p});
        }
      }
      const auto [ws, traffic] = im.untiled_cost(j, e);
      if (ws <= capacity_bytes) {
        relax(j, e, traffic, {j, GroupMode::Untiled, nullptr});
      } else if (e - j >= kMaxTiledGroup) {
        break;  // longer segments hold all of this one: their working set is larger still
      }
    }
  }
  if (best[n] >= kInf) return std::nullopt;
  CacheSchedule sched;
  sched.capacity_bytes = capacity_bytes;
  sched.traffic_bytes = best[n];
  for (size_t e = n; e > 0; e = choice[e].first) {
    const Choice& c = choice[e];
    switch (c.mode) {
      case GroupMode::Tiled:
        sched.groups.push_back(im.tiled_group(c.first, e, *c.point));
        break;
      case GroupMode::Untiled:
        sched.groups.push_back(im.untiled_group(c.first, e));
        break;
      case GroupMode::Streamed:
        sched.groups.push_back(im.streamed_group(c.first));
        break;
    }
  }
  std::reverse(sched.groups.begin(), sched.groups.end());
  for (CacheGroup& grp : sched.groups) im.set_min_traffic(grp);
  return sched;
}

std::optional<CacheGroup> CacheOptimizer::best_group(size_t first, size_t last,
                                                     int64_t capacity_bytes, bool allow_untiled) {
  SOLAR_CHECK(first < last && last <= impl_->g.nodes.size(), "bad segment");
  return impl_->best(first, last, capacity_bytes, allow_untiled);
}

std::optional<std::vector<GroupDim>> CacheOptimizer::tiled_dims(size_t first, size_t last) {
  const Space& s = impl_->space(first, last);
  if (!s.tileable) return std::nullopt;
  return s.dims;
}

std::optional<CacheOptimizer::Cost> CacheOptimizer::tiled_cost(size_t first, size_t last,
                                                               const std::vector<int64_t>& tiles,
                                                               const std::vector<size_t>& order) {
  const Space& s = impl_->space(first, last);
  SOLAR_CHECK(s.tileable && tiles.size() == s.dims.size(), "tiled_cost: not a tiled segment");
  std::vector<size_t> tiled;
  for (size_t c = 0; c < s.dims.size(); ++c) {
    SOLAR_CHECK(tiles[c] >= 1 && s.dims[c].extent % tiles[c] == 0, "tiled_cost: bad tile");
    if (tiles[c] < s.dims[c].extent) tiled.push_back(c);
  }
  std::vector<size_t> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  SOLAR_CHECK(sorted == tiled, "tiled_cost: the order must hold exactly the tiled dims");
  Cost cost;
  uint32_t placed = 0;
  for (size_t pos = 0; pos < order.size(); ++pos) {
    const size_t c = order[pos];
    for (const SegTensor& t : s.tensors) {  // the intermediates' rule
      const uint32_t tiled_rel = [&] {
        uint32_t r = 0;
        for (const size_t d : tiled) r |= t.rel & (1u << d);
        return r;
      }();
      if (on_chip(t.role) && !(t.rel & (1u << c)) && (tiled_rel & ~placed) != 0) {
        return std::nullopt;
      }
    }
    placed |= 1u << c;
  }
  for (const SegTensor& t : s.tensors) {
    const int64_t fp = footprint(t, tiles, s.dims);
    cost.working_set_bytes = sat_add(cost.working_set_bytes, sat_mul(fp, t.elem_size));
    const auto [visits, distinct] = prefix_counts(s, tiles, order, t.rel);
    cost.traffic_bytes = sat_add(cost.traffic_bytes, tensor_traffic(t, fp, visits, distinct));
  }
  return cost;
}

int64_t parse_capacity(std::string_view text) {
  const std::string s(text);
  const auto bad = [&] {
    return UserError("'" + s + "' is not a capacity (examples: 32MiB, 50MB, 256KiB, 4096)");
  };
  size_t digits = 0;
  while (digits < s.size() && (std::isdigit(static_cast<unsigned char>(s[digits])) ||
                               s[digits] == '.' || s[digits] == 'e' || s[digits] == 'E')) {
    if ((s[digits] == 'e' || s[digits] == 'E') &&
        (digits + 1 >= s.size() || !std::isdigit(static_cast<unsigned char>(s[digits + 1])))) {
      break;
    }
    ++digits;
  }
  if (digits == 0) throw bad();
  double value = 0;
  try {
    value = std::stod(s.substr(0, digits));
  } catch (const std::exception&) {
    throw bad();
  }
  std::string unit = to_lower(s.substr(digits));
  std::erase(unit, ' ');
  static constexpr std::pair<std::string_view, double> kUnits[] = {
      {"", 1.0},   {"b", 1.0},      {"kb", 1e3},        {"mb", 1e6},
      {"gb", 1e9}, {"kib", 1024.0}, {"mib", 1048576.0}, {"gib", 1073741824.0}};
  for (const auto& [name, scale] : kUnits) {
    if (unit != name) continue;
    const double bytes = std::floor(value * scale);
    if (!(bytes >= 1) || bytes > 0x1p60) throw bad();
    return static_cast<int64_t>(bytes);
  }
  throw bad();
}

hw::MemoryLevel parse_cache_level(std::string_view text) {
  if (text == "L2") return hw::MemoryLevel::L2;
  if (text == "SMEM") return hw::MemoryLevel::Smem;
  throw UserError("unknown on-chip level '" + std::string(text) + "' (valid: L2, SMEM)");
}

std::optional<int64_t> cache_capacity(const hw::Device& d, const CacheOptions& options) {
  if (options.capacity_bytes) return options.capacity_bytes;
  const hw::MemorySpec& level = d.level(options.level);
  if (!level.capacity_bytes) return std::nullopt;
  return static_cast<int64_t>(level.capacity_bytes->value);
}

std::string capacity_source(const CacheOptions& options) {
  if (options.capacity_bytes) return "--capacity";
  return std::string(hw::memory_level_name(options.level));
}

std::string_view group_mode_name(GroupMode m) {
  switch (m) {
    case GroupMode::Tiled:
      return "tiled";
    case GroupMode::Untiled:
      return "untiled";
    case GroupMode::Streamed:
      return "streamed";
  }
  internal_error(__FILE__, __LINE__, "bad GroupMode");
}

std::string_view tensor_role_name(TensorRole r) {
  switch (r) {
    case TensorRole::Input:
      return "input";
    case TensorRole::Output:
      return "output";
    case TensorRole::OnChip:
      return "on-chip";
    case TensorRole::OnChipOut:
      return "on-chip+output";
  }
  internal_error(__FILE__, __LINE__, "bad TensorRole");
}

}  // namespace solar::sol
