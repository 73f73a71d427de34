// The cache-aware optimiser's search (cache_internal.h): untiled and streamed segments, and the
// dynamic programming over segments (CacheOptimizer::search).
#include "cache_internal.h"
#include "solar/sol/analysis.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <set>
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
  const int64_t numel = g.tensors[u.tensor].numel;
  const einsum::ElementBits& size = elem_sizes[u.tensor];
  const int64_t ws = sat_bytes(std::min(numel, sat_add(u.read, u.write)), size);
  int64_t traffic = u.first_read ? sat_bytes(std::min(numel, u.read), size) : 0;
  if (u.write > 0 && needed_after(u.tensor, last)) {
    traffic = sat_add(traffic, sat_bytes(std::min(numel, u.write), size));
  }
  return {ws, traffic};
}

// One tensor of an untiled segment: its footprint, DRAM traffic, role.
GroupTensor CacheOptimizer::Impl::untiled_tensor(const UntiledUse& u, size_t last) const {
  const int64_t numel = g.tensors[u.tensor].numel;
  const einsum::ElementBits& size = elem_size(u.tensor);
  GroupTensor gt;
  gt.name = g.tensors[u.tensor].name;
  gt.footprint_bytes = sat_bytes(std::min(numel, sat_add(u.read, u.write)), size);
  const bool out = u.write > 0 && needed_after(u.tensor, last);
  gt.fetches = 0;
  if (u.first_read) {
    gt.role = TensorRole::Input;
    gt.traffic_bytes = sat_bytes(std::min(numel, u.read), size);
    gt.fetches = 1;
  } else {
    gt.role = out ? (u.read > 0 ? TensorRole::OnChipOut : TensorRole::Output) : TensorRole::OnChip;
  }
  if (out) {
    gt.traffic_bytes = sat_add(gt.traffic_bytes, sat_bytes(std::min(numel, u.write), size));
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
        if (read < node.points && !counted_[t]) count(t, sat_bytes(e, im_.elem_size(t)));
      }
    } else if (!contraction) {
      for (size_t k = 0; k < node.reads.size(); ++k) {
        if (broadcast(node, node.reads[k]) && !counted_[im_.node_reads[n][k].first]) {
          const auto [t, e] = im_.node_reads[n][k];
          count(t, sat_bytes(e, im_.elem_size(t)));
        }
      }
    }
    const size_t run = im_.run_start[n];
    if (im_.run_end[n] - run > 1 &&
        std::find(carried_.begin(), carried_.end(), run) == carried_.end()) {
      carried_.push_back(run);
      int64_t step = 0;
      for (const auto& [t, e] : im_.node_writes[n])
        step = sat_add(step, sat_bytes(e, im_.elem_size(t)));
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
    for (const auto& [t, e] : *list) traffic = sat_add(traffic, sat_bytes(e, elem_size(t)));
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
                     relabel ? 0 : sat_bytes(e, elem_size(t))};
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

CacheSchedule CacheOptimizer::optimize(int64_t capacity_bytes) {
  std::optional<CacheSchedule> s = try_optimize(capacity_bytes);
  if (!s) {
    throw UserError("no cache-aware schedule fits in an on-chip capacity of " +
                    std::to_string(capacity_bytes) +
                    " bytes (some node's smallest tile is larger; give a larger --capacity)");
  }
  return std::move(*s);
}

namespace {

// A schedule's traffic with each output whose values repeat written once (repeated_outputs): its
// repeated copies are taken off the group that writes it. Every schedule writes each output whole
// at least once, so the traffic stays a lower bound, and above the fused bytes, which take the
// same copies off.
std::optional<CacheSchedule> repeated_written_once(const std::vector<RepeatedOutput>& repeated,
                                                   std::optional<CacheSchedule> s) {
  if (!s) return s;
  for (const RepeatedOutput& r : repeated) {
    const int64_t save = r.bytes - r.once_bytes;
    for (CacheGroup& grp : s->groups) {
      if (r.writer < grp.first || r.writer >= grp.last) continue;
      grp.traffic_bytes = std::max<int64_t>(grp.traffic_bytes - save, 0);
      grp.min_traffic_bytes = std::max<int64_t>(grp.min_traffic_bytes - save, 0);
      s->traffic_bytes = std::max<int64_t>(s->traffic_bytes - save, 0);
    }
  }
  return s;
}

std::optional<CacheSchedule> decoded_fp4_on_chip(const std::map<std::string, std::string>& decoded,
                                                 std::optional<CacheSchedule> s) {
  if (!s || decoded.empty()) return s;
  for (CacheGroup& grp : s->groups) {
    int64_t save = 0;
    std::string writer;
    for (GroupTensor& t : grp.tensors) {
      const auto it = decoded.find(t.name);
      if (it == decoded.end() || t.traffic_bytes == 0) continue;
      save += t.traffic_bytes;
      if (writer.empty()) writer = it->second;
      t.traffic_bytes = 0;
    }
    if (save == 0) continue;
    grp.traffic_bytes = std::max<int64_t>(grp.traffic_bytes - save, 0);
    grp.min_traffic_bytes = std::min(grp.min_traffic_bytes, grp.traffic_bytes);
    s->traffic_bytes = std::max<int64_t>(s->traffic_bytes - save, 0);
    if (!grp.lower_bound) {
      grp.lower_bound = true;
      grp.lower_bound_reason = "values decoded from packed fp4 (first by " + writer +
                               ") stay on chip, as an fp4 kernel keeps them (their " +
                               std::to_string(save) + " B of DRAM traffic taken off)";
    }
  }
  return s;
}

}  // namespace

// The intermediates that hold values decoded from packed fp4 pairs: written by a node without
// MACs that reads packed fp4 (a tensor of dtype f4e2m1x2) or such decoded values, whatever else
// it reads (the block scales, a table), in node order; a product ends the chain. An fp4 kernel
// (the tensor core of an NVFP4 _scaled_mm, or a kernel that dequantises a packed weight tile by
// tile into its GEMM) keeps them in registers, but a table lookup ends a stream, so the mapspace's
// schedules move them through DRAM (an N = K = 7,168 weight decoded to 205 MB of f32). Their
// traffic is taken off every schedule the search returns, and the group's traffic is a lower
// bound (docs/fidelities.md, "Lower bounds"). By tensor, with the node that wrote it.
inline namespace cache_detail {
std::map<std::string, std::string> decoded_fp4(const einsum::Graph& g) {
  std::map<std::string, std::string> out;
  for (const einsum::Node& n : g.nodes) {
    if (n.counts.macs > 0) continue;
    const bool decodes = std::any_of(n.reads.begin(), n.reads.end(), [&](const einsum::Access& r) {
      const einsum::TensorInfo* t = g.find_tensor(r.tensor);
      return out.contains(r.tensor) || (t != nullptr && t->dtype == ir::DType::F4E2M1X2);
    });
    if (!decodes) continue;
    for (const einsum::Access& w : n.writes) {
      const einsum::TensorInfo* t = g.find_tensor(w.tensor);
      if (t != nullptr && t->role == ir::TensorRole::Intermediate) out.emplace(w.tensor, n.name);
    }
  }
  return out;
}
}  // namespace cache_detail

std::optional<CacheSchedule> CacheOptimizer::try_optimize(int64_t capacity_bytes) {
  return decoded_fp4_on_chip(impl_->decoded_fp4,
                             repeated_written_once(impl_->repeated, search(capacity_bytes, false)));
}

std::optional<CacheSchedule> CacheOptimizer::try_optimize_exhaustive(int64_t capacity_bytes) {
  return decoded_fp4_on_chip(impl_->decoded_fp4,
                             repeated_written_once(impl_->repeated, search(capacity_bytes, true)));
}

namespace {

// Segments starting inside a run above which the search is not run (about a run of 8,192 steps;
// KernelBench's cumsum problems, runs of 4,096 steps over 512 MB, are searched in seconds).
constexpr Int128 kMaxRunSegments = Int128{1} << 25;

}  // namespace

// One search (CacheOptimizer::search): the dynamic programming over segments, from the segments
// of each first node in turn to the schedule read back, and the state its phases share.
struct CacheOptimizer::Impl::Search {
  Search(Impl& impl, int64_t capacity_bytes, bool exhaustive)
      : im_(impl),
        n_(impl.g.nodes.size()),
        capacity_bytes_(capacity_bytes),
        exhaustive_(exhaustive),
        best_(n_ + 1, kInf),
        choice_(n_ + 1),
        prefix_(n_ + 1, 0),
        excess_(exhaustive ? 0 : n_ + 1),
        use_of_(impl.g.tensors.size(), -1),
        window_(impl),
        swin_(impl),
        stream_(impl, capacity_bytes),
        pending_(n_ + 1),
        run_reach_(n_, kUnknown),
        plain_run_(n_, 0) {
    best_[0] = 0;
    if (!exhaustive_) set_prefix();
  }

  // The schedule of a program whose runs start too many segments to search, else nullopt.
  static std::optional<CacheSchedule> unsearched(Impl& im, int64_t capacity_bytes) {
    // Long runs in a program that does not fit on chip: a run of N steps (a scan along a
    // 32,000-entry vocabulary) gives the search about N^2 / 2 segments that start inside it, and no
    // rule below skips them (a quarter of an hour at N = 32,000, hours at 152,064). Above
    // kMaxRunSegments such segments the search is not run: the schedule is one stream over the
    // whole graph moving the fused bytes, a lower bound on every schedule (docs/fidelities.md,
    // "Laws"), said in the group. A program that fits is searched whatever its runs: its first
    // segment, the whole graph, ends the search at once.
    const size_t n = im.g.nodes.size();
    Int128 run_segments = 0;
    size_t longest = 0;
    for (size_t r = 0; r < n; r = im.run_end[r]) {
      longest = std::max(longest, im.run_end[r] - r);
      const auto len = static_cast<Int128>(im.run_end[r] - r);
      run_segments += len * (len - 1) / 2;
    }
    if (run_segments > kMaxRunSegments && im.untiled_cost(0, n).first > capacity_bytes) {
      CacheGroup grp = im.stream_group(0, n);
      grp.lower_bound_reason =
          "not searched: the program's runs of one kernel (the longest " + std::to_string(longest) +
          " steps: a scan outside an op block) start " +
          std::to_string(static_cast<int64_t>(run_segments)) +
          " segments, and it does not fit on chip; bounded below by the fused bytes, each input "
          "and weight read and each output written once (docs/fidelities.md, \"Long scans\")";
      CacheSchedule sched;
      sched.capacity_bytes = capacity_bytes;
      sched.traffic_bytes = grp.traffic_bytes;
      im.set_min_traffic(grp);
      sched.groups.push_back(std::move(grp));
      return sched;
    }
    return std::nullopt;
  }

  // The best schedule: the segments from each first node j in turn, then the schedule read back.
  std::optional<CacheSchedule> run() {
    for (size_t j = 0; j < n_; ++j) {
      relax_streams(j);
      // No schedule moves less than the fused bytes (docs/fidelities.md, "Laws": each graph input
      // and weight is read, each output written, at least once), so once the whole graph has a
      // schedule of fused traffic no segment from j or later can replace it: they would only be
      // candidates that come later in the search's order at no lower traffic, and the schedule is
      // read back from choice[n] through segments that start before j, already final.
      if (!exhaustive_ && best_[n_] == im_.fused) break;
      if (best_[j] >= kInf) continue;
      restart(j);
      const auto [scanned, tail] = scan_from(j);
      streams_from(j);
      if (exhaustive_) continue;
      untiled_beyond(j, scanned, tail);
    }
    relax_streams(n_);
    if (best_[n_] >= kInf) return std::nullopt;
    return schedule();
  }

 private:
  // choice[e]: the segment [first, e) ending the best schedule of the first e nodes.
  struct Choice {
    size_t first = 0;
    GroupMode mode = GroupMode::Untiled;
    const FrontierPoint* point = nullptr;  // tiled
  };
  Impl& im_;
  const size_t n_;
  const int64_t capacity_bytes_;
  const bool exhaustive_;
  std::vector<int64_t> best_;
  std::vector<Choice> choice_;
  // Bytes that every untiled segment moves in proportion to its nodes: per node the reads of the
  // tensors no node writes and no segment reads more of than they hold (a read-only tensor is
  // fetched whenever it is read, and below its size its term is the sum of its reads), as prefix
  // sums; and best[e] - prefix[e] per e, for the range maxima of the skip rule below.
  std::vector<Int128> prefix_;
  MaxTree excess_;
  // The untiled segments from j, grown one node at a time (the uses of untiled_uses, kept), with
  // the sums of their tensors' working sets and traffic kept too: a node changes the terms of
  // the tensors it touches only (untiled_tensor depends on `last` through needed_after, which
  // changes at a tensor's last reader: a tensor the node reads). Every term is in [0, kInf], so
  // the sat_add fold over the uses equals min(kInf, their exact sum), kept in 128 bits.
  std::vector<UntiledUse> uses_;
  std::vector<int64_t> use_of_;
  std::vector<std::pair<int64_t, int64_t>> term_;  // per use: its (ws, traffic) terms
  std::vector<size_t> touched_;                    // uses the current node changes
  Int128 ws_sum_ = 0, traffic_sum_ = 0;
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
  std::vector<Widest> widest_;  // per use
  Int128 bound_sum_ = 0;
  // Untiled segments from j that the scan below does not reach. The window holds [j, reach) for
  // the largest reach seen so far whose segment fits: every [j, e) with e <= reach fits (the
  // working set grows with the segment). A scan from j relaxes [j, e) for e up to where it stops;
  // the window relaxes the longer ones that fit, beyond `reach_`, and those in between are
  // skipped when none can be taken. For e' in (e, reach], the traffic of [j, e') is at least
  // the floor: per tensor of [j, e) its traffic term with `reach_` as the end (floor_sum_: a read
  // tensor is fetched at least as much as in [j, e), a written one needed after reach is needed
  // after e'), raised for a written tensor needed after e' but not after reach (`dying_`) to its
  // term with its last reader as the end, plus prefix[e'] - prefix[e] (the proportional reads of
  // the nodes added). When best[j] + floor - prefix[e] >= best[e'] - prefix[e'], [j, e') is not
  // below best[e'] (relax takes strictly less traffic only; best only decreases).
  Impl::Window window_;
  Impl::Window swin_;  // the stream segments' traffic
  Impl::StreamScan stream_;
  size_t reach_ = 0;
  std::vector<int64_t> floor_term_;  // per use: its term of floor_sum_
  Int128 floor_sum_ = 0;
  std::vector<size_t> dying_;  // uses written and needed after some end before reach, not after it
  std::vector<bool> listed_;   // per use: in `dying_`
  // Stream candidates, by end: relaxed once every other segment ending there has been, so that
  // at a tie in traffic a schedule wins over a stream (a bound).
  std::vector<std::vector<std::pair<size_t, int64_t>>> pending_;
  // Streams from a step of a run of one elementwise step (a scan: every node a translation of
  // the first, none a reduction or a contraction, no data-dependent map, the same elements read
  // and written; `plain`) reach the same end from every step of the run: adding such a step
  // leaves the scan state the same whatever steps of the run came before it (every tensor the
  // steps read is among the inputs of what they write, no statistic, the carry and the
  // broadcast tensors counted once), and it fails, if at all, at the first step, where the state
  // is empty. The reach is found once per run by the scan (run_reach_: the last end it relaxes),
  // and from each later step only the ends whose segment no longer fits are visited: the working
  // set grows with the end and shrinks with the start, so the last end that fits (`fit`) never
  // moves back and the window is kept from one start to the next. This saves the N^2 / 2
  // additions of a run of N steps (a 32,000-entry cumsum: half a billion); the candidates that do
  // not fit are still one per end (quadratic where the program does not fit: the bound below).
  static constexpr size_t kUnknown = std::numeric_limits<size_t>::max();
  std::vector<size_t> run_reach_;
  std::vector<char> plain_run_;  // per run start: 0 not yet asked, 1 plain, 2 not

  // Fills prefix_ (the proportional reads as prefix sums) and excess_ (best_[e] - prefix_[e]).
  void set_prefix() {
    std::vector<Int128> reads(im_.g.tensors.size(), 0);
    std::vector<bool> written(im_.g.tensors.size(), false);
    for (size_t k = 0; k < n_; ++k) {
      for (const auto& [t, e] : im_.node_reads[k]) reads[t] += e;
      for (const auto& [t, e] : im_.node_writes[k]) written[t] = true;
    }
    std::vector<bool> proportional(im_.g.tensors.size(), false);
    for (size_t t = 0; t < im_.g.tensors.size(); ++t) {
      proportional[t] = !written[t] && reads[t] <= im_.g.tensors[t].numel &&
                        sat_bytes(reads[t], im_.elem_size(t)) < kInf;
    }
    for (size_t k = 0; k < n_; ++k) {
      prefix_[k + 1] = prefix_[k];
      for (const auto& [t, e] : im_.node_reads[k]) {
        if (proportional[t]) prefix_[k + 1] += sat_bytes(e, im_.elem_size(t));
      }
    }
    for (size_t e = 0; e <= n_; ++e) excess_.set(e, static_cast<Int128>(best_[e]) - prefix_[e]);
  }

  // Takes [j, e), moving `traffic`, as the end of the best schedule of the first e nodes when it
  // moves strictly less than the best so far.
  void relax(size_t j, size_t e, int64_t traffic, Choice c) {
    if (sat_add(best_[j], traffic) < best_[e]) {
      best_[e] = sat_add(best_[j], traffic);
      choice_[e] = c;
      if (!exhaustive_) excess_.set(e, static_cast<Int128>(best_[e]) - prefix_[e]);
    }
  }

  // The first end in (e, reach] whose [j, end) the floor does not rule out; reach + 1 if none.
  size_t first_not_ruled_out(size_t j, size_t e) {
    std::vector<std::pair<int64_t, int64_t>> raise;  // (last reader, floor raise) per dying use
    size_t kept = 0;
    for (const size_t k : dying_) {
      const int64_t reader = im_.last_reader[uses_[k].tensor];
      if (reader <= static_cast<int64_t>(e)) {
        listed_[k] = false;  // needed after no end beyond e
        continue;
      }
      dying_[kept++] = k;
      raise.emplace_back(
          reader, im_.untiled_terms(uses_[k], static_cast<size_t>(reader)).second - floor_term_[k]);
    }
    dying_.resize(kept);
    std::sort(raise.begin(), raise.end());
    const Int128 base = static_cast<Int128>(best_[j]) + floor_sum_ - prefix_[e];
    Int128 raised = 0;
    for (const auto& [reader, r] : raise) raised += r;
    size_t lo = e + 1;
    for (const auto& [reader, r] : raise) {  // ends up to reader: raised by r
      const auto hi = static_cast<size_t>(reader) + 1;
      if (lo < hi) {
        const size_t p = excess_.first_above(lo, hi, base + raised);
        if (p < hi) return p;
        lo = hi;
      }
      raised -= r;
    }
    return excess_.first_above(lo, reach_ + 1, base);
  }

  // Appends node `node` to the untiled segment from j, ending at `last`: its (ws, traffic).
  std::pair<int64_t, int64_t> untiled_step(size_t node, size_t last) {
    touched_.clear();
    const auto use = [&](size_t t, bool read) -> UntiledUse& {
      if (use_of_[t] < 0) {
        use_of_[t] = static_cast<int64_t>(uses_.size());
        uses_.push_back({t, 0, 0, read});
        term_.emplace_back(0, 0);
        widest_.emplace_back();
        floor_term_.push_back(0);
        listed_.push_back(false);
      }
      const auto k = static_cast<size_t>(use_of_[t]);
      if (std::find(touched_.begin(), touched_.end(), k) == touched_.end()) touched_.push_back(k);
      return uses_[k];
    };
    for (const auto& [t, e] : im_.node_reads[node]) {
      UntiledUse& u = use(t, true);
      u.read = sat_add(u.read, e);
      Widest& w = widest_[static_cast<size_t>(use_of_[t])];
      w.read = std::max(w.read, e);
    }
    for (const auto& [t, e] : im_.node_writes[node]) {
      UntiledUse& u = use(t, false);
      u.write = sat_add(u.write, e);
      Widest& w = widest_[static_cast<size_t>(use_of_[t])];
      w.write = std::max(w.write, e);
      w.written = true;
    }
    for (const size_t k : touched_) {
      const std::pair<int64_t, int64_t> t = im_.untiled_terms(uses_[k], last);
      ws_sum_ += t.first - term_[k].first;
      traffic_sum_ += t.second - term_[k].second;
      term_[k] = t;
      const UntiledUse& u = uses_[k];
      Widest& w = widest_[k];
      const int64_t elems = w.written ? (im_.needed_after(u.tensor, last) ? w.write : 0) : w.read;
      const int64_t b = sat_bytes(elems, im_.elem_size(u.tensor));
      bound_sum_ += b - w.term;
      w.term = b;
      if (!exhaustive_) {
        const int64_t f = im_.untiled_terms(u, reach_).second;
        floor_sum_ += f - floor_term_[k];
        floor_term_[k] = f;
        if (!listed_[k] && u.write > 0 && im_.needed_after(u.tensor, last) &&
            !im_.needed_after(u.tensor, reach_)) {
          listed_[k] = true;
          dying_.push_back(k);
        }
      }
    }
    const auto clamp = [](Int128 v) { return static_cast<int64_t>(v < kInf ? v : kInf); };
    return std::make_pair(clamp(ws_sum_), clamp(traffic_sum_));
  }

  // Relaxes the stream candidates that end at e.
  void relax_streams(size_t e) {
    for (const auto& [first, traffic] : pending_[e]) {
      relax(first, e, traffic, {first, GroupMode::Stream, nullptr});
    }
  }

  // Whether the run starting at r0 is plain (a scan of one elementwise step), asked once per run.
  bool plain(size_t r0) {
    if (plain_run_[r0] == 0) {
      bool ok = im_.run_end[r0] - r0 > 1;
      for (size_t k = r0; ok && k < im_.run_end[r0]; ++k) {
        const einsum::Node& node = im_.g.nodes[k];
        ok = node.kind == einsum::NodeKind::Einsum && node.reduction == einsum::Reduction::None &&
             node.counts.macs == 0 && im_.node_reads[k] == im_.node_reads[r0] &&
             im_.node_writes[k] == im_.node_writes[r0];
        for (const auto* list : {&node.reads, &node.writes}) {
          for (const einsum::Access& a : *list) {
            for (const einsum::AccessMap& m : a.maps) {
              ok = ok && !m.data_dependent && m.data_dim < 0;
            }
          }
        }
      }
      plain_run_[r0] = ok ? 1 : 2;
    }
    return plain_run_[r0] == 1;
  }

  // Empties the untiled segment and its bounds, for the segments from j.
  void restart(size_t j) {
    for (const UntiledUse& u : uses_) use_of_[u.tensor] = -1;
    uses_.clear();
    term_.clear();
    widest_.clear();
    floor_term_.clear();
    dying_.clear();
    listed_.clear();
    ws_sum_ = traffic_sum_ = bound_sum_ = floor_sum_ = 0;
    if (!exhaustive_) window_.start_at(j);
    reach_ = window_.end;
  }

  // Relaxes the tiled and untiled segments from j that the scan reaches: the last end it relaxed
  // and the first end past it that the skip rule leaves (reach_ + 1: none).
  std::pair<size_t, size_t> scan_from(size_t j) {
    size_t scanned = j;        // the last end the scan relaxed
    size_t tail = reach_ + 1;  // the first end past the scan the skip rule leaves (none: reach + 1)
    // Tiled segments from j: until a structural failure that no longer segment escapes
    // (docs/fidelities.md, "The search").
    bool tiled_alive = true;
    const auto tiled_ahead = [&](size_t e) {
      return tiled_alive && im_.unit_count(j, e) <= kMaxTiledUnits &&
             (e - j < kMaxTiledGroup || !im_.inside_run(j));
    };
    for (size_t e = j + 1; e <= n_; ++e) {
      auto [ws, traffic] = untiled_step(e - 1, e);  // the state of [j, e); relaxed below
      if (exhaustive_) std::tie(ws, traffic) = im_.untiled_cost(j, e);  // recounted
      if (e - j == 1 && im_.g.nodes[j].kind == einsum::NodeKind::Movement) {
        relax(j, e, im_.streamed_traffic(j), {j, GroupMode::Streamed, nullptr});
      }
      const bool cut = im_.inside_run(e);  // e splits a run
      // Not searched: a segment whose every tiling moves at least best[e] - best[j]. Its frontier
      // is not needed for the extension either: when it is tileable the extension goes on, and
      // when it fails for a reason that no longer segment escapes, the longer ones have no
      // tiling (the pruning rule above), so searching them adds no candidate.
      const bool hopeless = !exhaustive_ && static_cast<Int128>(best_[j]) + bound_sum_ >= best_[e];
      if (!hopeless && tiled_ahead(e) && (e - j <= kMaxTiledGroup || !cut)) {
        const Frontier& fr = im_.frontier(j, e);
        if (const FrontierPoint* p = fr.query(capacity_bytes_)) {
          relax(j, e, p->traffic, {j, GroupMode::Tiled, p});
        }
        if (!cut && !fr.extendable) tiled_alive = false;
      }
      // The whole graph at once: each input, weight and output exactly once (the fused model).
      if (j == 0 && e == n_) traffic = im_.fused;
      scanned = e;
      if (ws <= capacity_bytes_) {
        relax(j, e, traffic, {j, GroupMode::Untiled, nullptr});
      } else if (e == n_ || !tiled_ahead(e + 1)) {
        break;  // longer segments hold all of this one: their working set is larger still
      }
      // Only untiled segments remain (checked at every end for 16 nodes, then every 16th): stop
      // once the window holds the rest, those the skip rule leaves from the first end p where
      // it does not hold (when counting them back from reach costs less than scanning to p).
      if (!exhaustive_ && j > 0 && e < n_ && !tiled_ahead(e + 1) &&
          (e - j < 16 || (e - j) % 16 == 0 || e >= reach_)) {
        if (e >= reach_) break;
        const size_t p = first_not_ruled_out(j, e);
        if (reach_ + 1 - p <= p - e) {
          tail = p;
          break;
        }
      }
    }
    return {scanned, tail};
  }

  // Stream segments from j (docs/fidelities.md, "Streaming chains"): a lower bound, taken only
  // where no untiled segment of the same nodes fits (an untiled one is a schedule).
  void streams_from(size_t j) {
    const size_t r0 = im_.run_start[j];
    const bool in_plain_run = !exhaustive_ && im_.run_end[j] - r0 > 1 && plain(r0);
    if (in_plain_run && run_reach_[r0] != kUnknown) {
      const size_t last = run_reach_[r0];  // found from an earlier step of the run
      swin_.start_at(j);
      while (swin_.end > j && swin_.ws() > capacity_bytes_) swin_.pop();
      while (swin_.end < last) {
        swin_.push();
        if (swin_.ws() > capacity_bytes_) {
          swin_.pop();
          break;
        }
      }
      const size_t fit = swin_.end;
      while (swin_.end < last) {
        swin_.push();
        if (swin_.end - j >= 2) pending_[swin_.end].emplace_back(j, swin_.traffic());
      }
      while (swin_.end > fit) swin_.pop();
    } else {
      stream_.reset();
      if (!exhaustive_) {
        swin_.start_at(j);
        while (swin_.end > j) swin_.pop();
      }
      size_t e = j + 1;
      for (; e <= n_ && stream_.add(e - 1); ++e) {
        int64_t ws = 0, traffic = 0;
        if (exhaustive_) {
          std::tie(ws, traffic) = im_.untiled_cost(j, e);
        } else {
          swin_.push();
          ws = swin_.ws();
          traffic = j == 0 && e == n_ ? im_.fused : swin_.traffic();
        }
        if (ws <= capacity_bytes_ || e - j < 2) continue;
        if (j == 0 && e == n_) {  // the fused bytes: nothing beats it; taken now, ending the search
          relax(j, e, traffic, {j, GroupMode::Stream, nullptr});
        } else {
          pending_[e].emplace_back(j, traffic);
        }
      }
      if (in_plain_run) run_reach_[r0] = e - 1;
    }
  }

  // Relaxes the untiled segments from j past the scan: from tail to reach_, then those that fit.
  void untiled_beyond(size_t j, size_t scanned, size_t tail) {
    // The untiled segments [j, e) for e from tail to reach: the window taken back to tail, then
    // forward again.
    if (tail <= reach_) {
      while (window_.end > tail) window_.pop();
      while (true) {
        relax(j, window_.end, j == 0 && window_.end == n_ ? im_.fused : window_.traffic(),
              {j, GroupMode::Untiled, nullptr});
        if (window_.end == reach_) break;
        window_.push();
      }
    }
    // The untiled segments beyond the scan and the window that fit, through the window.
    while (window_.end < n_) {
      window_.push();
      if (window_.ws() > capacity_bytes_) {
        window_.pop();
        break;
      }
      if (window_.end <= scanned) continue;
      const int64_t traffic = j == 0 && window_.end == n_ ? im_.fused : window_.traffic();
      relax(j, window_.end, traffic, {j, GroupMode::Untiled, nullptr});
    }
  }

  // The best schedule of the whole graph, read back from choice_[n_].
  CacheSchedule schedule() {
    CacheSchedule sched;
    sched.capacity_bytes = capacity_bytes_;
    sched.traffic_bytes = best_[n_];
    for (size_t e = n_; e > 0; e = choice_[e].first) {
      const Choice& c = choice_[e];
      switch (c.mode) {
        case GroupMode::Tiled:
          sched.groups.push_back(im_.tiled_group(c.first, e, *c.point));
          break;
        case GroupMode::Untiled:
          sched.groups.push_back(im_.untiled_group(c.first, e));
          break;
        case GroupMode::Streamed:
          sched.groups.push_back(im_.streamed_group(c.first));
          break;
        case GroupMode::Stream:
          sched.groups.push_back(im_.stream_group(c.first, e));
          break;
      }
    }
    std::reverse(sched.groups.begin(), sched.groups.end());
    for (CacheGroup& grp : sched.groups) im_.set_min_traffic(grp);
    return sched;
  }
};

std::optional<CacheSchedule> CacheOptimizer::search(int64_t capacity_bytes, bool exhaustive) {
  Impl& im = *impl_;
  if (!exhaustive && !im.g.nodes.empty()) {
    std::optional<CacheSchedule> sched = Impl::Search::unsearched(im, capacity_bytes);
    if (sched) return sched;
  }
  return Impl::Search(im, capacity_bytes, exhaustive).run();
}

std::optional<CacheGroup> CacheOptimizer::best_group(size_t first, size_t last,
                                                     int64_t capacity_bytes, bool allow_untiled) {
  SOLAR_CHECK(first < last && last <= impl_->g.nodes.size(), "bad segment");
  return impl_->best(first, last, capacity_bytes, allow_untiled);
}

}  // namespace solar::sol
