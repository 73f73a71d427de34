// The cache-aware optimiser's tiling (cache_internal.h): tile footprints and traffic, the best
// loop order for a tile vector, and the Pareto frontier of a tiled segment.
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

bool covers_whole(const DimSpan& a) {
  if (a.chosen || !a.terms.empty() || a.cmin > 0) return false;
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

int64_t chosen_span(const DimSpan& d, const std::vector<int64_t>& tiles) {
  int64_t named = d.rows_fixed, tiles_of_index = 1;
  for (const auto& [dim, extent] : d.rows_of) {
    named = sat_mul(named, tiles[dim]);
    tiles_of_index = sat_mul(tiles_of_index, extent / tiles[dim]);
  }
  if (d.fewest > 0) named = std::min(named, std::max<int64_t>(1, d.fewest / tiles_of_index));
  return std::min(named, d.extent);
}

int64_t footprint(const SegTensor& t, const std::vector<int64_t>& tiles) {
  int64_t total = 0;
  for (const MapShape& s : t.shapes) {
    int64_t prod = 1;
    for (const DimSpan& d : s.dims) {
      if (d.chosen) {
        prod = sat_mul(prod, chosen_span(d, tiles));
        continue;
      }
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

int64_t tensor_traffic(const SegTensor& t, int64_t fp, int64_t visits, int64_t distinct) {
  const int64_t bytes = sat_bytes(fp, t.elem_size);
  switch (t.role) {
    case TensorRole::Input:  // at least the rows a routed take names (SegTensor::least)
      return std::max(sat_mul(visits, bytes), sat_bytes(t.least, t.elem_size));
    case TensorRole::Output:  // written at every visit; partial sums read back after the first
      return sat_mul(t.reduction ? 2 * visits - distinct : visits, bytes);
    case TensorRole::OnChip:
      return 0;
    case TensorRole::OnChipOut:
      return sat_mul(visits, bytes);
  }
  return 0;
}

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
    ws = sat_add(ws, sat_bytes(v.fp[i], s.tensors[i].elem_size));
  }
  return ws;
}

}  // namespace cache_detail

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
    GroupTensor gt{t.name, t.role, sat_bytes(v.fp[i], t.elem_size), visits,
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
    cost.working_set_bytes = sat_add(cost.working_set_bytes, sat_bytes(fp, t.elem_size));
    const auto [visits, distinct] = prefix_counts(s, tiles, order, t.rel);
    cost.traffic_bytes = sat_add(cost.traffic_bytes, tensor_traffic(t, fp, visits, distinct));
  }
  return cost;
}

}  // namespace solar::sol
