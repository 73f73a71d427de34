// Private to the cache-aware optimiser (src/sol/cache*.cpp; include/solar/sol/cache.h is its
// public face): the types its files share (the space of a segment, units, joins, the Pareto
// frontier), the helpers one file defines and another calls, and CacheOptimizer::Impl. Each
// helper is defined in the file of its seam: cache_tiling.cpp (tiles, traffic, loop orders),
// cache_units.cpp (units), cache_joins.cpp (joins through intermediates); cache_space.cpp builds
// a segment's space, cache_search.cpp holds the search. See cache.cpp for the method.
#pragma once

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

#include "solar/einsum/translation.h"
#include "solar/ir/affine.h"
#include "solar/ir/dtype.h"
#include "solar/sol/analysis.h"
#include "solar/util/checked.h"
#include "solar/util/error.h"
#include "solar/util/text.h"

namespace solar::sol {
inline namespace cache_detail {

constexpr int64_t kInf = std::numeric_limits<int64_t>::max() / 4;

__extension__ typedef __int128 Int128;  // exact sums of terms in [0, kInf]

constexpr size_t kMaxTiledDims = 12;  // common dims of a tiled segment (2^12 loop subsets)

// Sizes, traffic and map coefficients saturate at kInf (coefficients and constants of maps can be
// negative: clamped to [-kInf, kInf]).
inline int64_t sat_mul(int64_t a, int64_t b) { return saturating_mul(a, b, kInf); }

inline int64_t sat_add(int64_t a, int64_t b) { return saturating_add(a, b, kInf); }

// The bytes of `elements` elements of size `w` (einsum::ElementBits::bytes), saturating at kInf.
inline int64_t sat_bytes(int64_t elements, const einsum::ElementBits& w) {
  if (w.per == 1 && w.bits % 8 == 0) return sat_mul(elements, w.bits / 8);
  const Int128 b = static_cast<Int128>(elements) * w.bits / (8 * static_cast<Int128>(w.per));
  return b >= kInf ? kInf : static_cast<int64_t>(b);
}

inline int64_t smul(int64_t a, int64_t b) { return saturating_mul(a, b, kInf); }

std::vector<int64_t> divisors(int64_t n);

// One dimension of a tensor's index over a tile: span = min(extent, base + (cmax - cmin) +
// sum coeff x (tile[dim] - 1)), where [cmin, cmax] are the constants of the maps merged into it.
struct DimSpan {
  int64_t base = 1;
  std::vector<std::pair<size_t, int64_t>> terms;   // (common dim, coeff), sorted
  std::vector<std::pair<int64_t, int64_t>> fixed;  // other loops: (coeff, extent), sorted
  int64_t extent = 1;
  int64_t cmin = 0, cmax = 0;
  // The dimension a take or gather chooses in a table in DRAM (docs/fidelities.md, "Gathers from
  // DRAM"): its span is the rows the tile's indices name, not a range. rows_of: the common dims of
  // the loops over the index's positions (with their extents), rows_fixed: the product of the
  // extents of the others (whole in a tile). Every index distinct: min(extent, rows_fixed x the
  // tiles of rows_of). A routed take under concentrated routing (fewest = D, the different values
  // the whole index holds): max(1, D / the number of index tiles), floored: a tile's share of
  // the D rows a sweep of the index tiles reads at least, never above what a run that reads each
  // of its D rows once reads. Summed over n tiles it is below D when n does not divide D: the
  // table's traffic is then raised to the D rows (SegTensor::least).
  bool chosen = false;
  std::vector<std::pair<size_t, int64_t>> rows_of;
  int64_t rows_fixed = 1;
  int64_t fewest = 0;

  bool same_linear_part(const DimSpan& o) const {
    return terms == o.terms && fixed == o.fixed && extent == o.extent && chosen == o.chosen &&
           rows_of == o.rows_of && rows_fixed == o.rows_fixed && fewest == o.fewest;
  }
};

// The span of a chosen dimension (DimSpan::chosen) over a tile.
int64_t chosen_span(const DimSpan& d, const std::vector<int64_t>& tiles);

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
bool covers_whole(const DimSpan& a);

// Whether every element map `b` touches in a tile, `a` touches too, for every tile.
bool contains(const MapShape& a, const MapShape& b);

struct SegTensor {
  std::string name;
  TensorRole role = TensorRole::Input;
  einsum::ElementBits elem_size;
  int64_t numel = 0;
  std::vector<MapShape> shapes;
  uint32_t rel = 0;          // common dims its index uses
  bool reduction = false;    // written by a node with a reduction (partial sums)
  size_t tensor = 0;         // in the graph
  bool written = false;      // the maps that write it (else: an input, or parts read from DRAM)
  bool read_inside = false;  // written, and read back inside the segment
  std::vector<size_t> depends_on;  // written: the segment's written tensors it is computed from
  // An input read through a routed take under concentrated routing (DimSpan::fewest): the
  // elements every schedule reads at least (its footprint with every dim whole: the D rows the
  // index names), a floor under its traffic; 0 for every other tensor.
  int64_t least = 0;
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
int64_t footprint(const SegTensor& t, const std::vector<int64_t>& tiles);

// The traffic (bytes) of tensor `t` whose tile is `fp` elements, when the loops at or outside
// its innermost relevant loop run `visits` times in all, of which `distinct` distinct tiles.
int64_t tensor_traffic(const SegTensor& t, int64_t fp, int64_t visits, int64_t distinct);

// For a tensor whose relevant common dims are `rel`, under the loop order `order` (tiled dims,
// outermost first): how many times the loops at or outside its innermost relevant loop run, and
// how many distinct tiles of the tensor they visit.
std::pair<int64_t, int64_t> prefix_counts(const Space& s, const std::vector<int64_t>& tiles,
                                          const std::vector<size_t>& order, uint32_t rel);

inline bool on_chip(TensorRole r) { return r == TensorRole::OnChip || r == TensorRole::OnChipOut; }

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
void fill_view(const Space& s, const std::vector<int64_t>& tiles, TiledView& v);

TiledView make_view(const Space& s, const std::vector<int64_t>& tiles);

// The least traffic over loop orders (subset DP); `order_out` receives an order attaining it.
int64_t best_order(const Space& s, const TiledView& v, std::vector<size_t>* order_out);

// Why a tiling's traffic is only a lower bound, or "": a statistic reduced over tiled dims and
// combined online feeds an output that leaves the chip tile by tile along them (docs/
// fidelities.md, "Lower bounds"). Combining online is a schedule when what depends on it and
// leaves the chip is itself accumulated over those dims (attention's output, rescaled at the
// end); an output written tile by tile before the statistic is complete (softmax's normalised
// rows with the row split) would need a second pass.
std::string lower_bound_reason(const Space& s, const TiledView& v);

int64_t working_set(const Space& s, const TiledView& v);

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

void add_term(Lin& f, uint32_t v, int64_t c);

struct UVar {
  std::string name;
  int64_t lo = 0, extent = 1;
  Lin lo_form, hi_form;  // its bounds, over the loops before it
  bool chosen = false;   // not a loop: the index a gather's index tensor chooses (runs whole)
};

// The least and greatest value of `f` over the box of its variables' ranges.
std::pair<int64_t, int64_t> lin_range(const Lin& f, const std::vector<UVar>& vars);

// One access map of a unit, over the unit's variables.
struct UMap {
  int64_t offset = 0;
  std::vector<Lin> index;  // per index dimension (a run whose offset moves: one more, its step)
  std::vector<int64_t> strides, extent;
  Lin flat;  // offset + sum of strides[d] x index[d]
  bool guarded = false;
  bool data_dependent = false;  // positions from an index tensor, none known
  bool chosen = false;          // a take or gather read: one dimension chosen (UVar::chosen)
  // Chosen maps: the dimension chosen, the unit's loops over the index's positions (those no
  // other dimension uses), and under concentrated routing of a routed take the different values
  // the index holds (AccessMap::fewest in rows; 0: every index distinct).
  int64_t data_dim = -1;
  std::vector<uint32_t> choosers;
  int64_t fewest_rows = 0;
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

using einsum::same_domain;  // include/solar/einsum/translation.h

// A movement node that copies with affine maps over its own elements (a materialised reshape,
// permute, slice or dtype copy): it can run inside a tiled group like an elementwise kernel.
// A take or gather reads one element of a row chosen by its index tensor: it can run there too,
// the chosen dimension held whole.
bool copies_over_own_elements(const einsum::Node& n);

// The name of a run's step loop: the innermost repeat index in the first node's name
// ("step[t=1,u=2]": u), made distinct from the node's loops.
std::string step_name(const einsum::Node& n);

// ---------------------------------------------------------------------------------------------
// Joins through intermediates. Every affine map of a tensor written in a segment is expressed on
// groups of consecutive dimensions of the tensor's row-major storage (its dimensions of size 1
// left out), merged where a map needs it (a reshape that splits or merges dimensions): the map is
// sum over groups g of stride[g] x form[g], each form in [0, size[g]) over the loops' ranges.

struct Storage {
  std::vector<int64_t> stride, size;  // per group, outermost first
  int64_t numel = 1;
};

Storage storage_of(const std::vector<int64_t>& shape);

constexpr int kExpressed = -1;

constexpr int kOutside = -2;

// Expresses `f` on `st`'s groups. kExpressed, kOutside (the map leaves the tensor), or g >= 0:
// groups g and g + 1 must merge first.
int express(const Lin& f, const Storage& st, const std::vector<UVar>& vars, std::vector<Lin>& out);

void merge_groups(Storage& st, size_t g);

// One group's form of a map, classified.
struct Piece {
  int64_t lo = 0, hi = 0;  // the interval of its values
  bool plain = false;      // one variable, coefficient 1
  bool exact = false;      // its values fill [lo, hi] (a constant, a variable, a dense mix)
  const Lin* form = nullptr;
};

Piece piece_of(const Lin& f, const std::vector<UVar>& vars);

enum class Overlap : uint8_t { Disjoint, Covered, Partial };

Overlap overlap(const Piece& r, const Piece& w);

// Whether a read piece and a write piece index the tensor with the same variable in the same
// way: then the two variables are one group dimension.
bool matched(const Piece& r, const Piece& w, const std::vector<UVar>& vars);

// Expresses `f` on `st`, merging groups until it fits; false when it leaves the tensor.
bool express_merging(const Lin& f, Storage& st, const std::vector<UVar>& vars,
                     std::vector<Lin>& out);

// A movement copy re-expressed in the loops of the tensor it reads: where its read takes a dense
// mix of loops in one storage group (a reshape copy of x[n * C + c, ...] reads 64 d0 + d1) and
// every map of the copy uses those loops in the same mix, they become one loop (loop
// coalescing: the copy then joins the writer's loop over that group). Each map's dimensions are
// then its tensor's storage groups.
void coalesce_copy(Unit& u, const einsum::Graph& g);

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
                     UnionFind& uf);

// The joins through one tensor written in a segment (its write maps `ws` and read maps `rs`, in
// unit order): false when the segment cannot be tiled. Unites joined variables in `uf`, marks
// variables that must run whole in `whole`, and collects the reads that lie outside every write
// of the segment (`external`, read from DRAM) and whether some read lies inside (`read_inside`).
bool join_tensor(const std::vector<int64_t>& shape, const std::vector<SegMap>& ws,
                 const std::vector<SegMap>& rs, const std::vector<UVar>& vars,
                 const std::vector<uint32_t>& step_of, UnionFind& uf, std::vector<bool>& whole,
                 std::vector<const UMap*>& external, bool& read_inside);

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

}  // namespace cache_detail

inline namespace cache_detail {
// The intermediates that hold values decoded from packed fp4, by name, with the node that wrote
// each (cache_search.cpp).
std::map<std::string, std::string> decoded_fp4(const einsum::Graph& g);
}  // namespace cache_detail

struct CacheOptimizer::Impl {
  const einsum::Graph& g;
  std::map<std::string, size_t> tensor_index;
  std::vector<int64_t> last_reader;  // per tensor: last node reading it (-1: none)
  std::vector<std::vector<std::pair<size_t, int64_t>>> node_reads, node_writes;  // (tensor, elems)
  int64_t fused = 0;
  // The outputs whose values repeat (repeated_outputs), found once per graph: every schedule the
  // search returns takes their repeated copies off.
  std::vector<RepeatedOutput> repeated;
  // The intermediates that hold values decoded from packed fp4 (decoded_fp4), by tensor, with
  // their operation: every schedule the search returns takes their traffic off.
  std::map<std::string, std::string> decoded_fp4;
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
    for (const einsum::TensorInfo& t : g.tensors) elem_sizes.push_back(t.element_bits());
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
    repeated = repeated_outputs(g);
    decoded_fp4 = cache_detail::decoded_fp4(g);
    const size_t n_nodes = g.nodes.size();
    run_start.assign(n_nodes, 0);
    run_end.assign(n_nodes, 0);
    for (size_t n = 0; n < n_nodes;) {
      size_t e = n + 1;
      const std::optional<std::vector<int64_t>> d =
          e < n_nodes ? einsum::translation(g.nodes[n], g.nodes[e]) : std::nullopt;
      if (d) {
        while (e + 1 < n_nodes && einsum::translation(g.nodes[e], g.nodes[e + 1]) == d) ++e;
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
  std::vector<einsum::ElementBits> elem_sizes;  // per tensor
  const einsum::ElementBits& elem_size(size_t t) const { return elem_sizes[t]; }
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
  struct Search;
  struct SpaceBuilder;
};

}  // namespace solar::sol
