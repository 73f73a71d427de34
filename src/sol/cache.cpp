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
// left out of the order (one iteration: no factor in any count); a tiled segment that fails for a
// structural reason (a unit that cannot tile, a write that is not one to one, a read neither
// inside nor outside the segment's writes, two loops of one unit joined) fails extended by more
// units, so its tiled extension stops; an untiled segment's working set only grows when the
// segment grows, so extending it stops once it exceeds the capacity and no tiled one remains;
// the longest untiled segment that fits is kept as a sliding window over the nodes (not regrown
// from each start), and the untiled segments between a start's scan and that window are skipped
// when a lower bound of their traffic cannot beat the best known schedule of their prefix
// (search(), "Untiled segments from j").
//
// Segments are made of units (a node, or a run of translated nodes folded into one with a step
// loop) joined through the intermediates they write and read: join_tensor states the rule.
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
namespace {

constexpr int64_t kInf = std::numeric_limits<int64_t>::max() / 4;
__extension__ typedef __int128 Int128;  // exact sums of terms in [0, kInf]
constexpr size_t kMaxTiledDims = 12;    // common dims of a tiled segment (2^12 loop subsets)

// Sizes, traffic and map coefficients saturate at kInf (coefficients and constants of maps can be
// negative: clamped to [-kInf, kInf]).
int64_t sat_mul(int64_t a, int64_t b) { return saturating_mul(a, b, kInf); }
int64_t sat_add(int64_t a, int64_t b) { return saturating_add(a, b, kInf); }
int64_t smul(int64_t a, int64_t b) { return saturating_mul(a, b, kInf); }

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
struct DimSpan {
  int64_t base = 1;
  std::vector<std::pair<size_t, int64_t>> terms;   // (common dim, coeff), sorted
  std::vector<std::pair<int64_t, int64_t>> fixed;  // other loops: (coeff, extent), sorted
  int64_t extent = 1;
  int64_t cmin = 0, cmax = 0;

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

  bool merges_with(const MapShape& o) const {
    if (offset != o.offset || strides != o.strides || dims.size() != o.dims.size()) return false;
    for (size_t d = 0; d < dims.size(); ++d) {
      if (!dims[d].same_linear_part(o.dims[d])) return false;
    }
    return true;
  }
};

// Whether dimension `a` of a map holds every value 0..extent - 1 whatever the tiles: no tiled
// variable, and whole loops that fill the dimension (coefficients 1, e1, e1 e2, ... by size).
bool covers_whole(const DimSpan& a) {
  if (!a.terms.empty() || a.cmin > 0) return false;
  std::vector<std::pair<int64_t, int64_t>> mags;
  for (const auto& [coeff, extent] : a.fixed) mags.emplace_back(coeff < 0 ? -coeff : coeff, extent);
  std::sort(mags.begin(), mags.end());
  int64_t next = 1;
  for (const auto& [m, e] : mags) {
    if (m != next) return false;
    next = sat_mul(next, e);
  }
  return sat_add(a.cmin, next - 1) >= a.extent - 1;
}

// Whether every element map `b` touches in a tile, `a` touches too, for every tile.
bool contains(const MapShape& a, const MapShape& b) {
  if (a.offset != b.offset || a.strides != b.strides || a.dims.size() != b.dims.size()) {
    return false;
  }
  for (size_t d = 0; d < a.dims.size(); ++d) {
    const DimSpan& x = a.dims[d];
    const DimSpan& y = b.dims[d];
    if (covers_whole(x) && y.extent <= x.extent) continue;
    if (!x.same_linear_part(y) || x.cmin > y.cmin || x.cmax < y.cmax) return false;
  }
  return true;
}

struct SegTensor {
  std::string name;
  TensorRole role = TensorRole::Input;
  int64_t elem_size = 4;
  int64_t numel = 0;
  std::vector<MapShape> shapes;
  uint32_t rel = 0;          // common dims its index uses
  bool reduction = false;    // written by a node with a reduction (partial sums)
  size_t tensor = 0;         // in the graph
  bool written = false;      // the maps that write it (else: an input, or parts read from DRAM)
  bool read_inside = false;  // written, and read back inside the segment
  std::vector<size_t> depends_on;  // written: the segment's written tensors it is computed from
};

// A segment as a tiled group: its common dims and tensors. `tileable` false: why not.
struct Space {
  bool tileable = false;
  bool extendable = true;  // false: no segment that extends this one at its end is tileable
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

// A Pareto frontier of (working set, traffic): ws increasing, traffic strictly decreasing.
struct Pareto {
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

// The frontier of a segment's tilings, and that of the tilings whose traffic is a schedule's
// (not a lower bound: see lower_bound_reason): on a tie in traffic the schedule wins.
struct Frontier {
  Pareto all, exact;
  bool tileable = false, extendable = true;  // as the segment's Space

  const std::vector<FrontierPoint>& points() const { return all.points; }
  const FrontierPoint* query(int64_t capacity) const {
    const FrontierPoint* any = all.query(capacity);
    const FrontierPoint* schedule = exact.query(capacity);
    return schedule && any && schedule->traffic <= any->traffic ? schedule : any;
  }
};

// Elements of a tensor's tile.
int64_t footprint(const SegTensor& t, const std::vector<int64_t>& tiles) {
  int64_t total = 0;
  for (const MapShape& s : t.shapes) {
    int64_t prod = 1;
    for (const DimSpan& d : s.dims) {
      int64_t span = sat_add(d.base, d.cmax - d.cmin);
      for (const auto& [dim, coeff] : d.terms) {
        span = sat_add(span, sat_mul(coeff < 0 ? -coeff : coeff, tiles[dim] - 1));
      }
      prod = sat_mul(prod, std::min(span, d.extent));
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
    v.fp.push_back(footprint(t, tiles));
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

// Why a tiling's traffic is only a lower bound, or "": a statistic reduced over tiled dims and
// combined online feeds an output that leaves the chip tile by tile along them (docs/
// fidelities.md, "Lower bounds"). Combining online is a schedule when what depends on it and
// leaves the chip is itself accumulated over those dims (attention's output, rescaled at the
// end); an output written tile by tile before the statistic is complete (softmax's normalised
// rows with the row split) would need a second pass.
std::string lower_bound_reason(const Space& s, const TiledView& v) {
  uint32_t tiled = 0;
  for (const size_t c : v.tiled) tiled |= 1u << c;
  for (size_t i = 0; i < s.tensors.size(); ++i) {
    const SegTensor& t = s.tensors[i];
    const uint32_t reduced = tiled & ~t.rel;
    if (!on_chip(t.role) || !t.reduction || reduced == 0) continue;
    for (const SegTensor& x : s.tensors) {
      if ((x.role != TensorRole::Output && x.role != TensorRole::OnChipOut) ||
          (x.rel & reduced) == 0 ||
          !std::binary_search(x.depends_on.begin(), x.depends_on.end(), i)) {
        continue;
      }
      std::string dims;
      for (size_t c = 0; c < s.dims.size(); ++c) {
        if (reduced & (1u << c)) dims += (dims.empty() ? "" : ", ") + s.dims[c].name;
      }
      return t.name + " is combined online over the tiled " + dims + " but " + x.name +
             ", computed from it, leaves the chip tile by tile: no one-pass schedule moves " +
             "this little";
    }
  }
  return "";
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

// ---------------------------------------------------------------------------------------------
// Units (include/solar/sol/cache.h): a node, or a run of translated nodes folded into one unit
// whose last loop counts the steps.

// constant + sum of coeff x var over loop variables (indices into a list of UVar).
struct Lin {
  int64_t constant = 0;
  std::vector<std::pair<uint32_t, int64_t>> terms;  // (var, coeff), coeff != 0, var increasing
};

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

struct UVar {
  std::string name;
  int64_t lo = 0, extent = 1;
  Lin lo_form, hi_form;  // its bounds, over the loops before it
  bool chosen = false;   // not a loop: the index a gather's index tensor chooses (runs whole)
};

// The least and greatest value of `f` over the box of its variables' ranges.
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

// One access map of a unit, over the unit's variables.
struct UMap {
  int64_t offset = 0;
  std::vector<Lin> index;  // per index dimension (a run whose offset moves: one more, its step)
  std::vector<int64_t> strides, extent;
  Lin flat;  // offset + sum of strides[d] x index[d]
  bool guarded = false;
  bool data_dependent = false;  // positions from an index tensor, none known
  bool chosen = false;          // a take or gather read: one dimension chosen (UVar::chosen)
};

struct UAccess {
  size_t tensor = 0;
  std::vector<UMap> maps;
};

struct Unit {
  size_t first = 0, last = 0;  // its nodes
  bool tileable = false;       // an einsum node, or a movement node copying over its own elements
  // Its writes cover the whole box of the loops they use: those loops have constant bounds and
  // every other loop runs at least once at every point (a causal `k in 0..j+1` does).
  bool full_writes = true;
  bool reduction = false;
  bool run = false;  // a run of translated nodes: its last variable counts the steps
  std::vector<UVar> vars;
  std::vector<UAccess> reads, writes;
};

bool same_domain(const ir::AffineDomain& a, const ir::AffineDomain& b) {
  if (a.size() != b.size()) return false;
  for (size_t k = 0; k < a.size(); ++k) {
    if (a[k].var != b[k].var || !(a[k].lo == b[k].lo) || !(a[k].hi == b[k].hi)) return false;
  }
  return true;
}

// A movement node that copies with affine maps over its own elements (a materialised reshape,
// permute, slice or dtype copy): it can run inside a tiled group like an elementwise kernel.
// A take or gather reads one element of a row chosen by its index tensor: it can run there too,
// the chosen dimension held whole.
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

// When `b` is `a` translated (the same einsum, every map's offset and index constants shifted by
// the same amounts at every point, and at least one write moved): the shifts, per map (reads
// then writes) its offset shift then one per index dimension.
std::optional<std::vector<int64_t>> translation(const einsum::Node& a, const einsum::Node& b) {
  if (a.kind != einsum::NodeKind::Einsum || b.kind != einsum::NodeKind::Einsum ||
      a.reduction != b.reduction || !same_domain(a.domain, b.domain) ||
      a.reads.size() != b.reads.size() || a.writes.size() != b.writes.size()) {
    return std::nullopt;
  }
  std::vector<int64_t> delta;
  bool moves = false;
  for (const bool write : {false, true}) {
    const auto& xs = write ? a.writes : a.reads;
    const auto& ys = write ? b.writes : b.reads;
    for (size_t i = 0; i < xs.size(); ++i) {
      if (xs[i].tensor != ys[i].tensor || xs[i].maps.size() != ys[i].maps.size()) {
        return std::nullopt;
      }
      for (size_t k = 0; k < xs[i].maps.size(); ++k) {
        const einsum::AccessMap& x = xs[i].maps[k];
        const einsum::AccessMap& y = ys[i].maps[k];
        if (x.data_dependent || y.data_dependent || x.guarded != y.guarded ||
            x.strides != y.strides || x.extent != y.extent || x.index.size() != y.index.size()) {
          return std::nullopt;
        }
        delta.push_back(y.offset - x.offset);
        moves = moves || (write && y.offset != x.offset);
        for (size_t d = 0; d < x.index.size(); ++d) {
          if (x.index[d].coeffs != y.index[d].coeffs) return std::nullopt;
          delta.push_back(y.index[d].constant - x.index[d].constant);
          moves = moves || (write && delta.back() != 0);
        }
      }
    }
  }
  if (!moves) return std::nullopt;
  return delta;
}

// The name of a run's step loop: the innermost repeat index in the first node's name
// ("step[t=1,u=2]": u), made distinct from the node's loops.
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

// ---------------------------------------------------------------------------------------------
// Joins through intermediates. Every affine map of a tensor written in a segment is expressed on
// groups of consecutive dimensions of the tensor's row-major storage (its dimensions of size 1
// left out), merged where a map needs it (a reshape that splits or merges dimensions): the map is
// sum over groups g of stride[g] x form[g], each form in [0, size[g]) over the loops' ranges.

struct Storage {
  std::vector<int64_t> stride, size;  // per group, outermost first
  int64_t numel = 1;
};

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

constexpr int kExpressed = -1;
constexpr int kOutside = -2;

// Expresses `f` on `st`'s groups. kExpressed, kOutside (the map leaves the tensor), or g >= 0:
// groups g and g + 1 must merge first.
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

// One group's form of a map, classified.
struct Piece {
  int64_t lo = 0, hi = 0;  // the interval of its values
  bool plain = false;      // one variable, coefficient 1
  bool exact = false;      // its values fill [lo, hi] (a constant, a variable, a dense mix)
  const Lin* form = nullptr;
};

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

enum class Overlap : uint8_t { Disjoint, Covered, Partial };

Overlap overlap(const Piece& r, const Piece& w) {
  if (r.hi < w.lo || r.lo > w.hi) return Overlap::Disjoint;
  if (w.lo <= r.lo && r.hi <= w.hi) return Overlap::Covered;
  return Overlap::Partial;
}

// Whether a read piece and a write piece index the tensor with the same variable in the same
// way: then the two variables are one group dimension.
bool matched(const Piece& r, const Piece& w, const std::vector<UVar>& vars) {
  if (!r.plain || !w.plain || r.form->constant != w.form->constant) return false;
  const UVar& a = vars[r.form->terms[0].first];
  const UVar& b = vars[w.form->terms[0].first];
  return a.lo == b.lo && a.extent == b.extent;
}

// Expresses `f` on `st`, merging groups until it fits; false when it leaves the tensor.
bool express_merging(const Lin& f, Storage& st, const std::vector<UVar>& vars,
                     std::vector<Lin>& out) {
  while (true) {
    const int r = express(f, st, vars, out);
    if (r == kExpressed) return true;
    if (r == kOutside) return false;
    merge_groups(st, static_cast<size_t>(r));
  }
}

// A movement copy re-expressed in the loops of the tensor it reads: where its read takes a dense
// mix of loops in one storage group (a reshape copy of x[n * C + c, ...] reads 64 d0 + d1) and
// every map of the copy uses those loops in the same mix, they become one loop (loop
// coalescing: the copy then joins the writer's loop over that group). Each map's dimensions are
// then its tensor's storage groups.
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

// A map of a segment: its unit, its flat form over the segment's variables, and where it is.
struct SegMap {
  size_t unit = 0;
  const UMap* map = nullptr;
  Lin flat;
  bool full = true;   // a write: it covers the whole box of its loops
  uint32_t base = 0;  // the segment's index of its unit's first variable
};

// Loops of one value that index the same dimension of the same layout in a read and a write
// (h in s[h, i, j] at H = 1): one group dimension, of extent 1, as for longer loops (the joins
// below see them as constants).
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

// The joins through one tensor written in a segment (its write maps `ws` and read maps `rs`, in
// unit order): false when the segment cannot be tiled. Unites joined variables in `uf`, marks
// variables that must run whole in `whole`, and collects the reads that lie outside every write
// of the segment (`external`, read from DRAM) and whether some read lies inside (`read_inside`).
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
  // A write over a domain that is not a box in its loops (a causal triangle): the only write of
  // its tensor, and every read matches it loop for loop over the same bounds.
  if (std::any_of(ws.begin(), ws.end(), [](const SegMap& w) { return !w.full; })) {
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
  // Writes: each group a constant, a variable or a dense mix of variables, no variable in two
  // groups (so a write is one-to-one and a tile's writes are the product of its groups), and no
  // two writes of one element.
  for (size_t w = 0; w < ws.size(); ++w) {
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
    std::vector<std::pair<int64_t, int64_t>> spans;
    for (const auto& [w, g] : partial) {
      if (g != star) return false;
      spans.emplace_back(pieces[w][static_cast<size_t>(g)].lo,
                         pieces[w][static_cast<size_t>(g)].hi);
    }
    std::sort(spans.begin(), spans.end());
    const Piece& need = pieces[r][static_cast<size_t>(star)];
    int64_t reach = need.lo - 1;  // covered so far: [need.lo, reach]
    for (const auto& [lo, hi] : spans) {
      if (lo > reach + 1) break;
      reach = std::max(reach, hi);
    }
    if (reach < need.hi) return false;
    for (const auto& [w, g] : partial) join(r, w, star);
    read_inside = true;
  }
  return true;
}

// A vector of values that change one at a time, searched by range for the first value above a
// threshold (a segment tree of maxima). Values are above kLeast.
class MaxTree {
 public:
  static constexpr Int128 kLeast = -(static_cast<Int128>(1) << 120);

  explicit MaxTree(size_t n) {
    while (size_ < n) size_ *= 2;
    v_.assign(2 * size_, kLeast);
  }
  void set(size_t i, Int128 x) {
    size_t k = i + size_;
    v_[k] = x;
    for (k /= 2; k > 0; k /= 2) v_[k] = std::max(v_[2 * k], v_[2 * k + 1]);
  }
  // The first index of [lo, hi) whose value is above x; hi when none is.
  size_t first_above(size_t lo, size_t hi, Int128 x) const {
    return first_above(1, 0, size_, lo, hi, x);
  }

 private:
  size_t first_above(size_t k, size_t k_lo, size_t k_hi, size_t lo, size_t hi, Int128 x) const {
    if (k_hi <= lo || hi <= k_lo || v_[k] <= x) return hi;
    if (k_hi - k_lo == 1) return k_lo;
    const size_t mid = k_lo + (k_hi - k_lo) / 2;
    const size_t left = first_above(2 * k, k_lo, mid, lo, hi, x);
    return left < hi ? left : first_above(2 * k + 1, mid, k_hi, lo, hi, x);
  }

  size_t size_ = 1;
  std::vector<Int128> v_;
};

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
  // Runs of translated nodes: per node the run [run_start, run_end) holding it (a node alone:
  // [n, n + 1)); per run of two or more nodes (by its first node) the translation of one step.
  std::vector<size_t> run_start, run_end;
  std::vector<size_t> starts_before;  // per n: how many nodes before n start a run
  std::map<size_t, std::vector<int64_t>> run_delta;
  std::map<std::pair<size_t, size_t>, Unit> units;

  explicit Impl(const einsum::Graph& graph) : g(graph) {
    for (size_t t = 0; t < g.tensors.size(); ++t) tensor_index[g.tensors[t].name] = t;
    last_reader.assign(g.tensors.size(), -1);
    for (const einsum::TensorInfo& t : g.tensors) elem_sizes.push_back(ir::dtype_size(t.dtype));
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
    const size_t n_nodes = g.nodes.size();
    run_start.assign(n_nodes, 0);
    run_end.assign(n_nodes, 0);
    for (size_t n = 0; n < n_nodes;) {
      size_t e = n + 1;
      const std::optional<std::vector<int64_t>> d =
          e < n_nodes ? translation(g.nodes[n], g.nodes[e]) : std::nullopt;
      if (d) {
        while (e + 1 < n_nodes && translation(g.nodes[e], g.nodes[e + 1]) == d) ++e;
        ++e;
        run_delta[n] = *d;
      }
      for (size_t k = n; k < e; ++k) {
        run_start[k] = n;
        run_end[k] = e;
      }
      n = e;
    }
    starts_before.assign(n_nodes + 1, 0);
    for (size_t n = 0; n < n_nodes; ++n) {
      starts_before[n + 1] = starts_before[n] + (run_start[n] == n ? 1 : 0);
    }
  }

  // Units of the segment [j, e): runs cut at its ends count once each.
  size_t unit_count(size_t j, size_t e) const {
    return 1 + starts_before[e] - starts_before[j + 1];
  }
  bool inside_run(size_t n) const { return n < g.nodes.size() && run_start[n] < n; }

  size_t index_of(const std::string& name) const {
    const auto it = tensor_index.find(name);
    SOLAR_CHECK(it != tensor_index.end(), "tensor '" + name + "' is not declared");
    return it->second;
  }
  std::vector<int64_t> elem_sizes;  // per tensor
  int64_t elem_size(size_t t) const { return elem_sizes[t]; }
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

  const Unit& unit(size_t a, size_t b);
  Space build_space(size_t first, size_t last);
  const Frontier& frontier(size_t first, size_t last);
  CacheGroup tiled_group(size_t first, size_t last, const FrontierPoint& p);
  std::vector<UntiledUse> untiled_uses(size_t first, size_t last) const;
  GroupTensor untiled_tensor(const UntiledUse& u, size_t last) const;
  std::pair<int64_t, int64_t> untiled_terms(const UntiledUse& u, size_t last) const;
  std::pair<int64_t, int64_t> untiled_cost(size_t first, size_t last) const;  // (ws, traffic)
  CacheGroup untiled_group(size_t first, size_t last) const;
  int64_t streamed_traffic(size_t n) const;
  CacheGroup streamed_group(size_t n) const;
  std::optional<CacheGroup> best(size_t first, size_t last, int64_t capacity, bool untiled);
  void set_min_traffic(CacheGroup& grp);
  CacheGroup stream_group(size_t first, size_t last);
  // Whether node n, a contraction, reaches its own least traffic alone within `capacity`.
  bool contraction_streams(size_t n, int64_t capacity);
  struct Window;
  struct StreamScan;
};

// The untiled segment [start, end) kept as a sliding window over the node list: nodes join at the
// end and leave at the start, each changing only the terms of the tensors it touches (as in the
// search's incremental segments; a tensor's first access in the window is found from its list of
// touching nodes). Its working set and traffic are untiled_cost(start, end)'s, except for the
// whole graph (the fused bytes: the caller's case).
struct CacheOptimizer::Impl::Window {
  explicit Window(const Impl& impl) : im_(impl) {
    const size_t tensors = im_.g.tensors.size();
    touches_.resize(tensors);
    state_.resize(tensors);
    for (size_t n = 0; n < im_.g.nodes.size(); ++n) {
      for (const auto* list : {&im_.node_reads[n], &im_.node_writes[n]}) {
        for (const auto& [t, e] : *list) {
          if (touches_[t].empty() || touches_[t].back().first != n) {
            touches_[t].emplace_back(n, list == &im_.node_reads[n]);
          }
        }
      }
    }
  }

  // Drops the nodes before `j` (an empty window starts again at j).
  void start_at(size_t j) {
    if (end <= j) {
      for (size_t n = start; n < end; ++n) apply(n, -1);  // leaves every tensor untouched
      start = end = j;
      return;
    }
    while (start < j) {
      const size_t n = start++;
      apply(n, -1);
    }
  }
  // Appends node `end`.
  void push() {
    const size_t n = end++;
    apply(n, 1);
  }
  // Removes the last node (a push that did not fit).
  void pop() {
    const size_t n = --end;
    apply(n, -1);
  }
  int64_t ws() const { return clamp(ws_sum_); }
  int64_t traffic() const { return clamp(traffic_sum_); }

  size_t start = 0, end = 0;

 private:
  struct TensorState {
    Int128 read = 0, write = 0;  // exact sums of the window's accesses (elements)
    int64_t accesses = 0;
    size_t head = 0;  // into touches_: the first touching node not before `start`, once advanced
    std::pair<int64_t, int64_t> term{0, 0};  // (ws, traffic) in the sums
  };

  static int64_t clamp(Int128 v) { return static_cast<int64_t>(v < kInf ? v : kInf); }

  // Adds (+1) or removes (-1) node n's accesses, then recounts the terms of the tensors it
  // touches (needed_after changes with `end` only for the tensors of the node at `end`).
  void apply(size_t n, int sign) {
    for (const auto* list : {&im_.node_reads[n], &im_.node_writes[n]}) {
      const bool read = list == &im_.node_reads[n];
      for (const auto& [t, e] : *list) {
        TensorState& st = state_[t];
        (read ? st.read : st.write) += sign * static_cast<Int128>(e);
        st.accesses += sign;
      }
    }
    for (const auto* list : {&im_.node_reads[n], &im_.node_writes[n]}) {
      for (const auto& [t, e] : *list) recount(t);
    }
  }

  void recount(size_t t) {
    TensorState& st = state_[t];
    std::pair<int64_t, int64_t> term{0, 0};
    if (st.accesses > 0) {
      while (touches_[t][st.head].first < start) ++st.head;
      const UntiledUse u{t, clamp(st.read), clamp(st.write), touches_[t][st.head].second};
      term = im_.untiled_terms(u, end);
    }
    ws_sum_ += term.first - st.term.first;
    traffic_sum_ += term.second - st.term.second;
    st.term = term;
  }

  const Impl& im_;
  std::vector<std::vector<std::pair<size_t, bool>>> touches_;  // per tensor: (node, reads it)
  std::vector<TensorState> state_;
  Int128 ws_sum_ = 0, traffic_sum_ = 0;
};

const Unit& CacheOptimizer::Impl::unit(size_t a, size_t b) {
  const auto key = std::make_pair(a, b);
  const auto found = units.find(key);
  if (found != units.end()) return found->second;
  const einsum::Node& node = g.nodes[a];
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
          // Elements chosen from a tensor in DRAM: not modelled in a tiled group (its whole
          // rows would count); the node streams alone.
          if (m.data_dependent || m.chosen) return s;
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
        if (!m.data_dependent && !m.guarded) {
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
  // Classes: one variable per unit; common: in every unit with loops, whole nowhere.
  std::map<size_t, std::vector<size_t>> members;
  for (size_t v = 0; v < vars.size(); ++v) members[uf.find(v)].push_back(v);
  std::vector<int> common_of(vars.size(), -1);
  std::vector<size_t> common_roots;
  for (const auto& [root, vs] : members) {
    std::vector<bool> seen(us.size(), false);
    bool runs_whole = false;
    for (const size_t v : vs) {
      if (vars[v].lo != vars[root].lo || vars[v].extent != vars[root].extent) return s;
      if (seen[unit_of[v]]) return s;
      seen[unit_of[v]] = true;
      runs_whole = runs_whole || whole[v];
    }
    if (vs.size() == looped && !runs_whole) common_roots.push_back(root);
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
      }
    }
    const bool after = needed_after(st.tensor, last);
    if (!st.written) {
      st.role = TensorRole::Input;
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

const Frontier& CacheOptimizer::Impl::frontier(size_t first, size_t last) {
  const auto key = std::make_pair(first, last);
  const auto found = frontiers.find(key);
  if (found != frontiers.end()) return found->second;
  Frontier fr;
  // The search keeps no Space (segments are many); tiled_group rebuilds the chosen ones.
  const auto cached = spaces.find(key);
  const Space s = cached != spaces.end() ? cached->second : build_space(first, last);
  fr.tileable = s.tileable;
  fr.extendable = s.extendable;
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
      if (traffic < kInf) {
        fr.all.insert(ws, traffic, tiles);
        if (lower_bound_reason(s, v).empty()) fr.exact.insert(ws, traffic, tiles);
      }
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
    if (on_chip(t.role) && t.reduction) {
      for (const size_t c : order) {
        if (!(t.rel & (1u << c))) {
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
  grp.lower_bound_reason = lower_bound_reason(s, v);
  grp.lower_bound = !grp.lower_bound_reason.empty();
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

// untiled_tensor's footprint and traffic (bytes) alone, with no name: the search's inner loop.
std::pair<int64_t, int64_t> CacheOptimizer::Impl::untiled_terms(const UntiledUse& u,
                                                                size_t last) const {
  const int64_t numel = g.tensors[u.tensor].numel, size = elem_sizes[u.tensor];
  const int64_t ws = sat_mul(std::min(numel, sat_add(u.read, u.write)), size);
  int64_t traffic = u.first_read ? sat_mul(std::min(numel, u.read), size) : 0;
  if (u.write > 0 && needed_after(u.tensor, last)) {
    traffic = sat_add(traffic, sat_mul(std::min(numel, u.write), size));
  }
  return {ws, traffic};
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

// A stream segment (docs/fidelities.md, "Streaming chains"), grown one node at a time from its
// first node: add(n) is false once the segment [first, n] is not a stream within the capacity;
// every longer segment from the same first node is not one either (a second pass, a node that
// cannot stream, or a resident state above the capacity stay when nodes are appended).
//   - No second pass: a node that reads a statistic (a tensor depending, inside the segment, on
//     a reduction R) and data that R read (an input of the segment that R depends on, reached
//     through no reduction's output) would read that data again once R is complete, unless it
//     is itself a reduction over R's domain: then both are combined in one pass (Welford's mean
//     and variance).
//   - Resident state: every tensor a kernel other than a contraction reads with a broadcast (a
//     loop of its write missing from the read: a rotary table, a norm weight, a per-block scale,
//     a statistic), the sources of a copy that writes more elements than it reads (repeat_kv's
//     expand), and one step's write of a scan (its carry), counted once each, within the
//     capacity.
//   - A contraction reads only tensors from outside the segment, tensors the segment computes
//     from those without a reduction (a materialised view: repeat_kv's expand + reshape; a
//     prologue: an fp8 operand dequantised by its block scales), recomputed from their sources
//     per tile, or, as the second reduction of a one-pass pair, a statistic of the first; and
//     alone reaches its own least traffic within the capacity.
struct CacheOptimizer::Impl::StreamScan {
  StreamScan(Impl& impl, int64_t capacity) : im_(impl), capacity_(capacity) {
    const size_t tensors = im_.g.tensors.size();
    written_.assign(tensors, 0);
    rereadable_.assign(tensors, 0);
    reds_.resize(tensors);
    exts_.resize(tensors);
    counted_.assign(tensors, 0);
  }

  void reset() {
    for (const size_t t : touched_) {
      written_[t] = rereadable_[t] = counted_[t] = 0;
      reds_[t].clear();
      exts_[t].clear();
    }
    touched_.clear();
    red_exts_.clear();
    carried_.clear();
    resident = 0;
  }

  bool add(size_t n) {
    const einsum::Node& node = im_.g.nodes[n];
    for (const auto* list : {&node.reads, &node.writes}) {
      for (const einsum::Access& a : *list) {
        for (const einsum::AccessMap& m : a.maps) {
          if (m.data_dependent || m.data_dim >= 0) return false;
        }
      }
    }
    const bool contraction = node.counts.macs > 0;
    if (contraction && !im_.contraction_streams(n, capacity_)) return false;
    std::vector<size_t> reds, exts, derived;
    bool rereadable = node.reduction == einsum::Reduction::None && !contraction;
    for (const auto& [t, e] : im_.node_reads[n]) {
      if (written_[t]) {
        rereadable = rereadable && rereadable_[t];
        if (contraction && !rereadable_[t]) derived.push_back(t);
        reds.insert(reds.end(), reds_[t].begin(), reds_[t].end());
        exts.insert(exts.end(), exts_[t].begin(), exts_[t].end());
      } else {
        exts.push_back(t);
      }
    }
    sort_unique(reds);
    sort_unique(exts);
    const bool reduction = node.reduction != einsum::Reduction::None;
    const auto again = [&](size_t r) {
      const std::vector<size_t>& seen = red_exts_.at(r);
      return std::any_of(exts.begin(), exts.end(),
                         [&](size_t t) { return std::binary_search(seen.begin(), seen.end(), t); });
    };
    const auto paired = [&](size_t r) {  // one pass with R (Welford)
      return reduction && same_extents(im_.g.nodes[r], node);
    };
    for (const size_t r : reds) {
      if (again(r) && !paired(r)) return false;
    }
    // A contraction reads another kernel's output only as the second reduction of a one-pass
    // pair: `Σ (x - mean)^2` beside `Σ x` (its product counts as a MAC).
    for (const size_t t : derived) {
      if (std::none_of(reds_[t].begin(), reds_[t].end(),
                       [&](size_t r) { return again(r) && paired(r); })) {
        return false;
      }
    }
    if (node.kind == einsum::NodeKind::Movement) {
      // A copy that writes more elements than it reads (its maps are over the source's and the
      // destination's own boxes): a broadcast of its sources, held on chip.
      int64_t read = 0;
      for (const auto& [t, e] : im_.node_reads[n]) read = sat_add(read, e);
      for (const auto& [t, e] : im_.node_reads[n]) {
        if (read < node.points && !counted_[t]) count(t, sat_mul(e, im_.elem_size(t)));
      }
    } else if (!contraction) {
      for (size_t k = 0; k < node.reads.size(); ++k) {
        if (broadcast(node, node.reads[k]) && !counted_[im_.node_reads[n][k].first]) {
          const auto [t, e] = im_.node_reads[n][k];
          count(t, sat_mul(e, im_.elem_size(t)));
        }
      }
    }
    const size_t run = im_.run_start[n];
    if (im_.run_end[n] - run > 1 &&
        std::find(carried_.begin(), carried_.end(), run) == carried_.end()) {
      carried_.push_back(run);
      int64_t step = 0;
      for (const auto& [t, e] : im_.node_writes[n])
        step = sat_add(step, sat_mul(e, im_.elem_size(t)));
      resident = sat_add(resident, step);
    }
    if (resident > capacity_) return false;
    if (reduction) {
      reds.push_back(n);
      red_exts_[n] = exts;
    }
    for (const auto& [t, e] : im_.node_writes[n]) {
      touch(t);
      written_[t] = 1;
      rereadable_[t] = rereadable ? 1 : 0;
      reds_[t] = reds;
      if (reduction) {
        exts_[t].clear();  // a statistic: what reads it re-reads none of R's inputs through it
      } else {
        exts_[t] = exts;
      }
    }
    return true;
  }

  int64_t resident = 0;

 private:
  static void sort_unique(std::vector<size_t>& v) {
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
  }
  static bool same_extents(const einsum::Node& a, const einsum::Node& b) {
    if (a.domain.size() != b.domain.size()) return false;
    for (size_t k = 0; k < a.domain.size(); ++k) {
      if (a.domain[k].lo.constant != b.domain[k].lo.constant ||
          a.domain[k].hi.constant != b.domain[k].hi.constant) {
        return false;
      }
    }
    return true;
  }
  // A read whose maps miss a loop (of extent above 1) that the node's writes use.
  static bool broadcast(const einsum::Node& node, const einsum::Access& read) {
    for (const ir::AffineLoop& l : node.domain) {
      if (l.hi.constant - l.lo.constant <= 1 || !l.hi.coeffs.empty() || !l.lo.coeffs.empty()) {
        continue;
      }
      const auto uses = [&](const std::vector<einsum::Access>& list) {
        for (const einsum::Access& a : list) {
          for (const einsum::AccessMap& m : a.maps) {
            for (const ir::AffineForm& f : m.index) {
              if (f.coeff(l.var) != 0) return true;
            }
          }
        }
        return false;
      };
      if (uses(node.writes) && !uses({read})) return true;
    }
    return false;
  }
  void touch(size_t t) { touched_.push_back(t); }
  void count(size_t t, int64_t bytes) {
    touch(t);
    counted_[t] = 1;
    resident = sat_add(resident, bytes);
  }

  Impl& im_;
  int64_t capacity_;
  std::vector<char> written_, rereadable_, counted_;
  std::vector<std::vector<size_t>> reds_, exts_;    // per written tensor: reductions, inputs
  std::map<size_t, std::vector<size_t>> red_exts_;  // per reduction node: the inputs it read
  std::vector<size_t> touched_, carried_;
};

bool CacheOptimizer::Impl::contraction_streams(size_t n, int64_t capacity) {
  const auto [ws, traffic] = untiled_cost(n, n + 1);
  if (ws <= capacity) return true;
  const FrontierPoint* p = frontier(n, n + 1).query(capacity);
  return p != nullptr && p->traffic <= traffic;
}

CacheGroup CacheOptimizer::Impl::stream_group(size_t first, size_t last) {
  CacheGroup grp = untiled_group(first, last);
  grp.mode = GroupMode::Stream;
  StreamScan scan(*this, kInf);
  for (size_t n = first; n < last; ++n) scan.add(n);
  grp.working_set_bytes = scan.resident;
  grp.lower_bound = true;
  grp.lower_bound_reason =
      "a stream: each tensor from outside read once, each tensor needed after written once; "
      "broadcast tensors, statistics and scan carries held on chip (docs/fidelities.md, "
      "\"Streaming chains\")";
  return grp;
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
  if (g.nodes[n].relabel) return 0;  // as streamed_group
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
  // A relabelling reshape (einsum::Node::relabel) alone moves nothing: any implementation can have
  // its producer write the layout its consumer reads.
  const bool relabel = g.nodes[n].relabel;
  for (const auto* list : {&node_reads[n], &node_writes[n]}) {
    for (const auto& [t, e] : *list) {
      GroupTensor gt{g.tensors[t].name,
                     list == &node_reads[n] ? TensorRole::Input : TensorRole::Output, 0, 1,
                     relabel ? 0 : sat_mul(e, elem_size(t))};
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
    for (const FrontierPoint& p : frontier(grp.first, grp.last).points()) {
      consider(p.traffic, p.ws);
    }
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
  return search(capacity_bytes, false);
}

std::optional<CacheSchedule> CacheOptimizer::try_optimize_exhaustive(int64_t capacity_bytes) {
  return search(capacity_bytes, true);
}

std::optional<CacheSchedule> CacheOptimizer::search(int64_t capacity_bytes, bool exhaustive) {
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
  // Bytes that every untiled segment moves in proportion to its nodes: per node the reads of the
  // tensors no node writes and no segment reads more of than they hold (a read-only tensor is
  // fetched whenever it is read, and below its size its term is the sum of its reads), as prefix
  // sums; and best[e] - prefix[e] per e, for the range maxima of the skip rule below.
  std::vector<Int128> prefix(n + 1, 0);
  MaxTree excess(exhaustive ? 0 : n + 1);
  if (!exhaustive) {
    std::vector<Int128> reads(im.g.tensors.size(), 0);
    std::vector<bool> written(im.g.tensors.size(), false);
    for (size_t k = 0; k < n; ++k) {
      for (const auto& [t, e] : im.node_reads[k]) reads[t] += e;
      for (const auto& [t, e] : im.node_writes[k]) written[t] = true;
    }
    std::vector<bool> proportional(im.g.tensors.size(), false);
    for (size_t t = 0; t < im.g.tensors.size(); ++t) {
      proportional[t] =
          !written[t] && reads[t] <= im.g.tensors[t].numel && reads[t] * im.elem_size(t) < kInf;
    }
    for (size_t k = 0; k < n; ++k) {
      prefix[k + 1] = prefix[k];
      for (const auto& [t, e] : im.node_reads[k]) {
        if (proportional[t]) prefix[k + 1] += static_cast<Int128>(e) * im.elem_size(t);
      }
    }
    for (size_t e = 0; e <= n; ++e) excess.set(e, static_cast<Int128>(best[e]) - prefix[e]);
  }
  const auto relax = [&](size_t j, size_t e, int64_t traffic, Choice c) {
    if (sat_add(best[j], traffic) < best[e]) {
      best[e] = sat_add(best[j], traffic);
      choice[e] = c;
      if (!exhaustive) excess.set(e, static_cast<Int128>(best[e]) - prefix[e]);
    }
  };
  // The untiled segments from j, grown one node at a time (the uses of untiled_uses, kept), with
  // the sums of their tensors' working sets and traffic kept too: a node changes the terms of
  // the tensors it touches only (untiled_tensor depends on `last` through needed_after, which
  // changes at a tensor's last reader: a tensor the node reads). Every term is in [0, kInf], so
  // the sat_add fold over the uses equals min(kInf, their exact sum), kept in 128 bits.
  std::vector<UntiledUse> uses;
  std::vector<int64_t> use_of(im.g.tensors.size(), -1);
  std::vector<std::pair<int64_t, int64_t>> term;  // per use: its (ws, traffic) terms
  std::vector<size_t> touched;                    // uses the current node changes
  Int128 ws_sum = 0, traffic_sum = 0;
  // A lower bound on the traffic of every tiling of the same segment, kept the same way: per
  // tensor the widest access of one node, read (a tensor the segment does not write: every
  // element read is fetched at least once) or written (a tensor the segment writes and that is
  // needed after it: every element written leaves the chip at least once). A tiled candidate
  // whose bound cannot beat the best schedule found so far of its prefix is not searched: it
  // would not be taken (relax takes strictly less traffic only).
  struct Widest {
    int64_t read = 0, write = 0, term = 0;
    bool written = false;
  };
  std::vector<Widest> widest;  // per use
  Int128 bound_sum = 0;
  // Untiled segments from j that the scan below does not reach. The window holds [j, reach) for
  // the largest reach seen so far whose segment fits: every [j, e) with e <= reach fits (the
  // working set grows with the segment). A scan from j relaxes [j, e) for e up to where it stops;
  // the window relaxes the longer ones that fit, beyond `reach`, and those in between are
  // skipped when none can be taken. For e' in (e, reach], the traffic of [j, e') is at least
  // the floor: per tensor of [j, e) its traffic term with `reach` as the end (floor_sum: a read
  // tensor is fetched at least as much as in [j, e), a written one needed after reach is needed
  // after e'), raised for a written tensor needed after e' but not after reach (`dying`) to its
  // term with its last reader as the end, plus prefix[e'] - prefix[e] (the proportional reads of
  // the nodes added). When best[j] + floor - prefix[e] >= best[e'] - prefix[e'], [j, e') is not
  // below best[e'] (relax takes strictly less traffic only; best only decreases).
  Impl::Window window(im);
  Impl::Window swin(im);  // the stream segments' traffic
  Impl::StreamScan stream(im, capacity_bytes);
  size_t reach = 0;
  std::vector<int64_t> floor_term;  // per use: its term of floor_sum
  Int128 floor_sum = 0;
  std::vector<size_t> dying;  // uses written and needed after some end before reach, not after it
  std::vector<bool> listed;   // per use: in `dying`
  // The first end in (e, reach] whose [j, end) the floor does not rule out; reach + 1 if none.
  const auto first_not_ruled_out = [&](size_t j, size_t e) {
    std::vector<std::pair<int64_t, int64_t>> raise;  // (last reader, floor raise) per dying use
    size_t kept = 0;
    for (const size_t k : dying) {
      const int64_t last_reader = im.last_reader[uses[k].tensor];
      if (last_reader <= static_cast<int64_t>(e)) {
        listed[k] = false;  // needed after no end beyond e
        continue;
      }
      dying[kept++] = k;
      raise.emplace_back(
          last_reader,
          im.untiled_terms(uses[k], static_cast<size_t>(last_reader)).second - floor_term[k]);
    }
    dying.resize(kept);
    std::sort(raise.begin(), raise.end());
    const Int128 base = static_cast<Int128>(best[j]) + floor_sum - prefix[e];
    Int128 raised = 0;
    for (const auto& [last_reader, r] : raise) raised += r;
    size_t lo = e + 1;
    for (const auto& [last_reader, r] : raise) {  // ends up to last_reader: raised by r
      const auto hi = static_cast<size_t>(last_reader) + 1;
      if (lo < hi) {
        const size_t p = excess.first_above(lo, hi, base + raised);
        if (p < hi) return p;
        lo = hi;
      }
      raised -= r;
    }
    return excess.first_above(lo, reach + 1, base);
  };
  const auto untiled_step = [&](size_t node, size_t last) {
    touched.clear();
    const auto use = [&](size_t t, bool read) -> UntiledUse& {
      if (use_of[t] < 0) {
        use_of[t] = static_cast<int64_t>(uses.size());
        uses.push_back({t, 0, 0, read});
        term.emplace_back(0, 0);
        widest.emplace_back();
        floor_term.push_back(0);
        listed.push_back(false);
      }
      const auto k = static_cast<size_t>(use_of[t]);
      if (std::find(touched.begin(), touched.end(), k) == touched.end()) touched.push_back(k);
      return uses[k];
    };
    for (const auto& [t, e] : im.node_reads[node]) {
      UntiledUse& u = use(t, true);
      u.read = sat_add(u.read, e);
      Widest& w = widest[static_cast<size_t>(use_of[t])];
      w.read = std::max(w.read, e);
    }
    for (const auto& [t, e] : im.node_writes[node]) {
      UntiledUse& u = use(t, false);
      u.write = sat_add(u.write, e);
      Widest& w = widest[static_cast<size_t>(use_of[t])];
      w.write = std::max(w.write, e);
      w.written = true;
    }
    for (const size_t k : touched) {
      const std::pair<int64_t, int64_t> t = im.untiled_terms(uses[k], last);
      ws_sum += t.first - term[k].first;
      traffic_sum += t.second - term[k].second;
      term[k] = t;
      const UntiledUse& u = uses[k];
      Widest& w = widest[k];
      const int64_t elems = w.written ? (im.needed_after(u.tensor, last) ? w.write : 0) : w.read;
      const int64_t b = sat_mul(elems, im.elem_size(u.tensor));
      bound_sum += b - w.term;
      w.term = b;
      if (!exhaustive) {
        const int64_t f = im.untiled_terms(u, reach).second;
        floor_sum += f - floor_term[k];
        floor_term[k] = f;
        if (!listed[k] && u.write > 0 && im.needed_after(u.tensor, last) &&
            !im.needed_after(u.tensor, reach)) {
          listed[k] = true;
          dying.push_back(k);
        }
      }
    }
    const auto clamp = [](Int128 v) { return static_cast<int64_t>(v < kInf ? v : kInf); };
    return std::make_pair(clamp(ws_sum), clamp(traffic_sum));
  };
  // Stream candidates, by end: relaxed once every other segment ending there has been, so that
  // at a tie in traffic a schedule wins over a stream (a bound).
  std::vector<std::vector<std::pair<size_t, int64_t>>> pending(n + 1);
  const auto relax_streams = [&](size_t e) {
    for (const auto& [first, traffic] : pending[e]) {
      relax(first, e, traffic, {first, GroupMode::Stream, nullptr});
    }
  };
  for (size_t j = 0; j < n; ++j) {
    relax_streams(j);
    // No schedule moves less than the fused bytes (docs/fidelities.md, "Laws": each graph input
    // and weight is read, each output written, at least once), so once the whole graph has a
    // schedule of fused traffic no segment from j or later can replace it: they would only be
    // candidates that come later in the search's order at no lower traffic, and the schedule is
    // read back from choice[n] through segments that start before j, already final.
    if (!exhaustive && best[n] == im.fused) break;
    if (best[j] >= kInf) continue;
    for (const UntiledUse& u : uses) use_of[u.tensor] = -1;
    uses.clear();
    term.clear();
    widest.clear();
    floor_term.clear();
    dying.clear();
    listed.clear();
    ws_sum = traffic_sum = bound_sum = floor_sum = 0;
    if (!exhaustive) window.start_at(j);
    reach = window.end;
    size_t scanned = j;       // the last end the scan relaxed
    size_t tail = reach + 1;  // the first end past the scan the skip rule leaves (none: reach + 1)
    // Tiled segments from j: until a structural failure that no longer segment escapes
    // (docs/fidelities.md, "The search").
    bool tiled_alive = true;
    const auto tiled_ahead = [&](size_t e) {
      return tiled_alive && im.unit_count(j, e) <= kMaxTiledUnits &&
             (e - j < kMaxTiledGroup || !im.inside_run(j));
    };
    for (size_t e = j + 1; e <= n; ++e) {
      auto [ws, traffic] = untiled_step(e - 1, e);  // the state of [j, e); relaxed below
      if (exhaustive) std::tie(ws, traffic) = im.untiled_cost(j, e);  // recounted
      if (e - j == 1 && im.g.nodes[j].kind == einsum::NodeKind::Movement) {
        relax(j, e, im.streamed_traffic(j), {j, GroupMode::Streamed, nullptr});
      }
      const bool cut = im.inside_run(e);  // e splits a run
      // Not searched: a segment whose every tiling moves at least best[e] - best[j]. Its frontier
      // is not needed for the extension either: when it is tileable the extension goes on, and
      // when it fails for a reason that no longer segment escapes, the longer ones have no
      // tiling (the pruning rule above), so searching them adds no candidate.
      const bool hopeless = !exhaustive && static_cast<Int128>(best[j]) + bound_sum >= best[e];
      if (!hopeless && tiled_ahead(e) && (e - j <= kMaxTiledGroup || !cut)) {
        const Frontier& fr = im.frontier(j, e);
        if (const FrontierPoint* p = fr.query(capacity_bytes)) {
          relax(j, e, p->traffic, {j, GroupMode::Tiled, p});
        }
        if (!cut && !fr.extendable) tiled_alive = false;
      }
      // The whole graph at once: each input, weight and output exactly once (the fused model).
      if (j == 0 && e == n) traffic = im.fused;
      scanned = e;
      if (ws <= capacity_bytes) {
        relax(j, e, traffic, {j, GroupMode::Untiled, nullptr});
      } else if (e == n || !tiled_ahead(e + 1)) {
        break;  // longer segments hold all of this one: their working set is larger still
      }
      // Only untiled segments remain (checked at every end for 16 nodes, then every 16th): stop
      // once the window holds the rest, those the skip rule leaves from the first end p where
      // it does not hold (when counting them back from reach costs less than scanning to p).
      if (!exhaustive && j > 0 && e < n && !tiled_ahead(e + 1) &&
          (e - j < 16 || (e - j) % 16 == 0 || e >= reach)) {
        if (e >= reach) break;
        const size_t p = first_not_ruled_out(j, e);
        if (reach + 1 - p <= p - e) {
          tail = p;
          break;
        }
      }
    }
    // Stream segments from j (docs/fidelities.md, "Streaming chains"): a lower bound, taken only
    // where no untiled segment of the same nodes fits (an untiled one is a schedule).
    stream.reset();
    if (!exhaustive) {
      swin.start_at(j);
      while (swin.end > j) swin.pop();
    }
    for (size_t e = j + 1; e <= n && stream.add(e - 1); ++e) {
      int64_t ws = 0, traffic = 0;
      if (exhaustive) {
        std::tie(ws, traffic) = im.untiled_cost(j, e);
      } else {
        swin.push();
        ws = swin.ws();
        traffic = j == 0 && e == n ? im.fused : swin.traffic();
      }
      if (ws <= capacity_bytes || e - j < 2) continue;
      if (j == 0 && e == n) {  // the fused bytes: nothing beats it; taken now, ending the search
        relax(j, e, traffic, {j, GroupMode::Stream, nullptr});
      } else {
        pending[e].emplace_back(j, traffic);
      }
    }
    if (exhaustive) continue;
    // The untiled segments [j, e) for e from tail to reach: the window taken back to tail, then
    // forward again.
    if (tail <= reach) {
      while (window.end > tail) window.pop();
      while (true) {
        relax(j, window.end, j == 0 && window.end == n ? im.fused : window.traffic(),
              {j, GroupMode::Untiled, nullptr});
        if (window.end == reach) break;
        window.push();
      }
    }
    // The untiled segments beyond the scan and the window that fit, through the window.
    while (window.end < n) {
      window.push();
      if (window.ws() > capacity_bytes) {
        window.pop();
        break;
      }
      if (window.end <= scanned) continue;
      const int64_t traffic = j == 0 && window.end == n ? im.fused : window.traffic();
      relax(j, window.end, traffic, {j, GroupMode::Untiled, nullptr});
    }
  }
  relax_streams(n);
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
      case GroupMode::Stream:
        sched.groups.push_back(im.stream_group(c.first, e));
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
    const int64_t fp = footprint(t, tiles);
    cost.working_set_bytes = sat_add(cost.working_set_bytes, sat_mul(fp, t.elem_size));
    const auto [visits, distinct] = prefix_counts(s, tiles, order, t.rel);
    cost.traffic_bytes = sat_add(cost.traffic_bytes, tensor_traffic(t, fp, visits, distinct));
  }
  return cost;
}

int64_t parse_capacity(std::string_view text) {
  constexpr uint64_t kMaxCapacity = uint64_t{1} << 60;
  const std::optional<uint64_t> bytes = parse_bytes(text);
  if (!bytes || *bytes < 1 || *bytes > kMaxCapacity) {
    throw UserError("'" + std::string(text) +
                    "' is not a capacity (examples: 32MiB, 50MB, 256KiB, 4096)");
  }
  return static_cast<int64_t>(*bytes);
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
    case GroupMode::Stream:
      return "stream";
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
