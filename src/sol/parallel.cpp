// The SOL of a program on several devices (include/solar/sol/parallel.h, docs/parallel.md).
#include "solar/sol/parallel.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "solar/ir/dtype.h"
#include "solar/sol/phases.h"
#include "solar/util/error.h"

namespace solar::sol {

ParallelLayout parse_parallel(std::string_view text) {
  ParallelLayout l;
  const std::string whole(text);
  if (whole.empty()) throw UserError("--parallel: empty layout (e.g. tp=8, or tp=2,dp=4,pp=2)");
  std::vector<std::string> seen;
  size_t start = 0;
  while (start <= whole.size()) {
    const size_t comma = whole.find(',', start);
    const std::string item =
        whole.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    start = comma == std::string::npos ? whole.size() + 1 : comma + 1;
    if (item == "sp" || item == "ring") {
      (item == "sp" ? l.sequence_parallel : l.ring) = true;
      continue;
    }
    const size_t eq = item.find('=');
    const std::string key = item.substr(0, eq);
    if (eq == std::string::npos || (key != "tp" && key != "dp" && key != "pp" && key != "mb")) {
      throw UserError("--parallel: '" + item + "' is not tp=N, dp=N, pp=N, mb=N or sp (in '" +
                      whole + "')");
    }
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) {
      throw UserError("--parallel: " + key + " given twice (in '" + whole + "')");
    }
    seen.push_back(key);
    const std::string value = item.substr(eq + 1);
    int64_t n = 0;
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
    if (ec != std::errc() || end != value.data() + value.size() || n < 1 || n > 65536) {
      throw UserError("--parallel: " + key + " must be a whole number from 1 to 65536, not '" +
                      value + "'");
    }
    (key == "tp" ? l.tp : key == "dp" ? l.dp : key == "pp" ? l.pp : l.microbatches) = n;
  }
  return l;
}

ParallelLayout layout_for(int64_t devices, std::string_view parallel) {
  if (parallel.empty()) {
    throw UserError("--devices " + std::to_string(devices) +
                    " needs --parallel, the layout over them (e.g. --parallel tp=" +
                    std::to_string(devices) + "; docs/parallel.md)");
  }
  const ParallelLayout l = parse_parallel(parallel);
  if (devices != 0 && devices != l.devices()) {
    throw UserError("--parallel " + std::string(parallel) + " uses " + std::to_string(l.devices()) +
                    " devices (tp x dp x pp), not --devices " + std::to_string(devices));
  }
  return l;
}

std::string parallel_text(const ParallelLayout& l) {
  std::string s;
  const auto add = [&](const std::string& part) { s += (s.empty() ? "" : ",") + part; };
  if (l.tp > 1) add("tp=" + std::to_string(l.tp));
  if (l.dp > 1) add("dp=" + std::to_string(l.dp));
  if (l.pp > 1) add("pp=" + std::to_string(l.pp));
  if (l.microbatches > 1) add("mb=" + std::to_string(l.microbatches));
  if (l.sequence_parallel) add("sp");
  if (l.ring) add("ring");
  return s.empty() ? "tp=1" : s;
}

std::string_view collective_name(Collective c) {
  switch (c) {
    case Collective::AllReduce:
      return "all-reduce";
    case Collective::AllGather:
      return "all-gather";
    case Collective::ReduceScatter:
      return "reduce-scatter";
    case Collective::AllToAll:
      return "all-to-all";
    case Collective::PointToPoint:
      return "send/recv";
  }
  return "?";
}

std::string_view parallel_bottleneck(const ParallelTerms& t) {
  if (t.comm_s > t.compute_s && t.comm_s > t.memory_s) return "interconnect";
  return t.compute_s > t.memory_s ? "compute" : "memory";
}

namespace {

constexpr size_t kNone = SIZE_MAX;
constexpr size_t kTp = 0, kDp = 1;
constexpr std::string_view kAxisName[2] = {"tp", "dp"};

// Bytes one device sends in collective `c` over `group` devices on a buffer of `s` bytes; an
// all-reduce over switches that reduce in the network sends the buffer once.
double sent_bytes(Collective c, int64_t group, double s, bool in_network) {
  const double a = static_cast<double>(group);
  switch (c) {
    case Collective::AllReduce:
      return in_network ? std::min(s, 2 * (a - 1) / a * s) : 2 * (a - 1) / a * s;
    case Collective::AllGather:
    case Collective::ReduceScatter:
      return (a - 1) / a * s;
    case Collective::AllToAll:
      return (a - 1) / (a * a) * s;
    case Collective::PointToPoint:
      return s;
  }
  return s;
}

// Contiguous blocks of a tensor's storage, one per device of an axis: the blocks a loop of
// extent E and flat coefficient c cuts (span c x E, block c x E / A). Two loops cut the same
// blocks when both divide evenly and span the same storage; an uneven split is its own.
struct Block {
  int64_t span = 0, block = 0;
  int64_t coeff = 0;  // the loop's flat coefficient (not compared: the blocks are what matter)
  bool operator==(const Block& o) const { return span == o.span && block == o.block; }
};

Block block_of(int64_t coeff, int64_t extent, int64_t axis) {
  const int64_t c = coeff < 0 ? -coeff : coeff;
  if (extent % axis == 0) return {c * extent, c * extent / axis, c};
  return {c * extent, -extent, c};
}

// What a tensor is on one axis: its available layouts.
struct Layout {
  bool free = false;  // a weight: any layout, no communication
  // Sharded along a dimension that a weight's output loop writes (a column-parallel product, or
  // what follows it elementwise): permuting the weight's columns ahead of time permutes that
  // dimension, so any blocks of it are free (Megatron's fused QKV projection: each device gets
  // its heads' queries, keys and values). `flex` is the blocks it was written in; a block of
  // coefficient >= flex.coeff within flex.span is free, until one is asked for.
  std::optional<Block> flex;
  bool replicated = false;  // also: never written (nothing to move)
  bool partial = false;
  std::vector<Block> sharded;
  double written_fraction = 1;  // of the tensor one device holds (for the other axis's buffers)
};

// The flat coefficient of loop `v` in map `m` (0: the map does not involve it).
int64_t flat_coeff(const einsum::AccessMap& m, const std::string& v) {
  int64_t c = 0;
  for (size_t d = 0; d < m.index.size() && d < m.strides.size(); ++d) {
    c += m.strides[d] * m.index[d].coeff(v);
  }
  return c;
}

// The blocks access `a` reads or writes when loop `v` (extent `e`) is split over `axis`
// devices; nullopt when no map of it involves `v`.
std::optional<Block> access_block(const einsum::Access& a, const std::string& v, int64_t e,
                                  int64_t axis) {
  for (const einsum::AccessMap& m : a.maps) {
    const int64_t c = flat_coeff(m, v);
    if (c != 0) return block_of(c, e, axis);
  }
  return std::nullopt;
}

// The blocks read access `r` of node `n` reads when loop `v` of extent `e` is split over `axis`
// devices. A reshape's read walks the source's view in its own row-major order, which is the
// destination's (its loops are the destination's dimensions): the destination's blocks of span
// c x e are the source's blocks along the view dimension j that spans as much (row-major stride
// x extent = c x e), when each block is whole rows of it.
std::optional<Block> read_block(const einsum::Node& n, const einsum::Access& r,
                                const std::string& v, int64_t e, int64_t axis) {
  if (n.kind != einsum::NodeKind::Movement || n.op != "reshape") {
    return access_block(r, v, e, axis);
  }
  if (n.writes.size() != 1 || r.maps.size() != 1) return std::nullopt;
  const std::optional<Block> out = access_block(n.writes[0], v, e, axis);
  const einsum::AccessMap& m = r.maps[0];
  if (!out || out->block <= 0 || m.extent.size() != m.strides.size()) return std::nullopt;
  int64_t row_major = 1;
  for (size_t j = m.extent.size(); j-- > 0;) {
    const int64_t span = row_major * m.extent[j];
    if (span == out->span && m.extent[j] % axis == 0 && out->block % row_major == 0) {
      return block_of(m.strides[j], m.extent[j], axis);
    }
    row_major = span;
  }
  return std::nullopt;
}

// The collective that gives a tensor of layout `l` the layout wanted (a block, or nullopt:
// replicated), or nullopt when it already has it; `l` gains the layout.
bool flex_allows(const Layout& l, const Block& want) {
  return l.flex && want.coeff >= l.flex->coeff && want.span <= l.flex->span &&
         want.coeff % l.flex->coeff == 0;
}

std::optional<Collective> convert(Layout& l, const std::optional<Block>& want) {
  if (l.free || l.replicated) return std::nullopt;
  if (want && flex_allows(l, *want)) {
    if (!(*want == *l.flex)) l.flex.reset();  // the weight's columns are permuted for this one
    l.sharded.push_back(*want);
    return std::nullopt;
  }
  if (!want) {
    const Collective c = l.partial ? Collective::AllReduce : Collective::AllGather;
    if (!l.partial && l.sharded.empty()) return std::nullopt;
    l.partial = false;
    l.replicated = true;
    return c;
  }
  if (std::find(l.sharded.begin(), l.sharded.end(), *want) != l.sharded.end()) {
    return std::nullopt;
  }
  const Collective c = l.partial ? Collective::ReduceScatter : Collective::AllToAll;
  if (!l.partial && l.sharded.empty()) return std::nullopt;
  l.partial = false;
  l.sharded.push_back(*want);
  return c;
}

struct Loop {
  std::string var;
  int64_t extent = 0;
};

// The loops of `n` a split can cut: constant bounds, at least `axis` iterations.
std::vector<Loop> splittable(const einsum::Node& n, int64_t axis) {
  std::vector<Loop> loops;
  for (const ir::AffineLoop& l : n.domain) {
    if (!l.lo.coeffs.empty() || !l.hi.coeffs.empty()) continue;
    const int64_t e = l.hi.constant - l.lo.constant;
    if (e >= axis && e >= 2) loops.push_back({l.var, e});
  }
  return loops;
}

class Planner {
 public:
  Planner(const einsum::Graph& g, const hw::Device& d, const Analysis& one,
          const ParallelLayout& layout)
      : g_(g), layout_(layout), bandwidth_(one.dram_bandwidth_bytes_per_s), costs_(one.nodes) {
    for (size_t i = 0; i < g.tensors.size(); ++i) index_[g.tensors[i].name] = i;
    find_weight_slices();
    splits_.resize(g.nodes.size());
    access_fraction_.resize(g.nodes.size());
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      access_fraction_[i].assign(g.nodes[i].reads.size() + g.nodes[i].writes.size(), 1.0);
    }
    if (const hw::LinkSpec& up = d.link(hw::Link::ScaleUp); up.exists()) {
      link_ = up.link;
      link_bw_ = up.per_direction_bytes_per_s();
      in_network_ = !up.in_network_reduction.empty() && !layout.ring;
    }
  }

  void plan() {
    if (layout_.dp > 1) plan_axis(kDp, layout_.dp);
    if (layout_.tp > 1) plan_axis(kTp, layout_.tp);
  }

  const std::vector<NodeCost>& costs() const { return costs_; }
  const std::vector<std::pair<std::string, std::string>>& splits() const { return splits_; }
  double node_fraction(size_t i) const { return fraction_of(i); }
  // The fraction of access k (reads first, then writes) of node i one device touches.
  double access_fraction(size_t i, size_t k) const { return access_fraction_[i][k]; }
  // The fraction of `tensor` one device holds on axis `ax` as written (1: replicated or partial).
  double axis_fraction(const std::string& tensor, size_t ax) const {
    const auto it = layouts_[ax].find(index_.at(tensor));
    return it == layouts_[ax].end() ? 1.0 : it->second.written_fraction;
  }
  double written_fraction(const std::string& tensor) const {
    return axis_fraction(tensor, kTp) * axis_fraction(tensor, kDp);
  }
  // The buffer S of a collective of `tensor` on axis `ax`: its bytes on the axis's group, divided
  // by its sharding on the other axis.
  double buffer_bytes(const std::string& tensor, size_t ax) const {
    return static_cast<double>(g_.tensors[index_.at(tensor)].bytes) * axis_fraction(tensor, 1 - ax);
  }
  std::vector<Communication>& comms() { return comms_; }
  double link_bw() const { return link_bw_; }
  bool in_network() const { return in_network_; }
  const std::string& link() const { return link_; }

 private:
  int64_t axis_size(size_t ax) const { return ax == kTp ? layout_.tp : layout_.dp; }

  double fraction_of(size_t i) const {
    double f = 1;
    if (!splits_[i].first.empty()) f /= static_cast<double>(layout_.tp);
    if (!splits_[i].second.empty()) f /= static_cast<double>(layout_.dp);
    return f;
  }

  const std::string& split_of(size_t i, size_t ax) const {
    return ax == kTp ? splits_[i].first : splits_[i].second;
  }

  // A weight, or slices of weights that a node gathers without arithmetic (weight_slice_).
  bool is_weight(const std::string& tensor) const {
    const size_t t = index_.at(tensor);
    return g_.tensors[t].role == ir::TensorRole::Weight || weight_slice_[t];
  }

  // The intermediates that hold slices of weights, as weights are laid out: those a router's
  // take writes (the experts a top-k router picks: a routed read of a weight), and those an
  // operation without products computes from such slices and weights alone (a dequantisation
  // of the picked experts by their scales). A plain weight's cast stays as it was planned. Tensor
  // parallelism shards them as it shards the weights they come from: each device gathers its shard
  // of every picked expert, in the layout the product that reads them wants, so they cost no
  // collective.
  void find_weight_slices() {
    weight_slice_.assign(g_.tensors.size(), false);
    for (const einsum::Node& n : g_.nodes) {
      if (n.writes.size() != 1 || n.counts.macs > 0 || n.reads.empty()) continue;
      bool routed_weight = false;
      bool only_weights = true;
      bool reads_slice = false;
      for (const einsum::Access& r : n.reads) {
        const bool weight = is_weight(r.tensor);
        only_weights = only_weights && weight;
        reads_slice = reads_slice || weight_slice_[index_.at(r.tensor)];
        for (const einsum::AccessMap& m : r.maps)
          routed_weight = routed_weight || (weight && m.routed);
      }
      const size_t t = index_.at(n.writes[0].tensor);
      if (g_.tensors[t].role != ir::TensorRole::Intermediate) continue;
      if (routed_weight || (only_weights && reads_slice)) weight_slice_[t] = true;
    }
  }

  Layout& layout_of(size_t ax, const std::string& tensor) {
    const size_t t = index_.at(tensor);
    auto it = layouts_[ax].find(t);
    if (it != layouts_[ax].end()) return it->second;
    Layout l;
    const einsum::TensorInfo& info = g_.tensors[t];
    if (info.role == ir::TensorRole::Weight) {
      l.free = true;
    } else if (ax == kDp && info.role == ir::TensorRole::Input && batch_ > 0 &&
               !info.shape.empty() && info.shape[0] == batch_ && batch_ % layout_.dp == 0) {
      // A batch of the data: each replica reads its own rows.
      l.sharded.push_back({info.numel, info.numel / layout_.dp});
      l.written_fraction = 1.0 / static_cast<double>(layout_.dp);
    } else {
      l.replicated = true;
    }
    return layouts_[ax].emplace(t, std::move(l)).first->second;
  }

  // The time of moving `tensor` by collective `c` on axis `ax`.
  double comm_time(Collective c, size_t ax, const std::string& tensor) const {
    const double s = buffer_bytes(tensor, ax);
    return link_bw_ > 0 ? sent_bytes(c, axis_size(ax), s, in_network_) / link_bw_ : 0;
  }

  // What a candidate costs: `total` orders them, `immediate` (the collectives its reads need
  // now) breaks ties, so that communication is put off (a row-parallel product after a sharded
  // input, not a gather of it).
  struct Cost {
    double total = 0, immediate = 0;
    bool operator<(const Cost& o) const {
      const double eps = 1e-12 * std::max(total, o.total);
      if (total < o.total - eps) return true;
      if (total > o.total + eps) return false;
      return immediate < o.immediate - 1e-12 * std::max(immediate, o.immediate);
    }
  };

  // The least a partial output will still cost (the planner's lookahead): a reduction,
  // all-reduce on dp and on tp, reduce-scatter where it may stay sharded.
  double lookahead(size_t ax, const std::string& tensor) const {
    const bool scatter = ax == kTp && may_stay_sharded(g_.tensors[index_.at(tensor)]);
    return comm_time(scatter ? Collective::ReduceScatter : Collective::AllReduce, ax, tensor);
  }

  // The cost of running node i with loop `v` (nullptr: replicated) split on axis `ax`: its time
  // per device, the communication its reads need, and the lookahead of what it writes. nullopt:
  // the split is not possible (a loop that is neither reduced nor written).
  std::optional<Cost> cost(size_t i, size_t ax, const Loop* v) {
    const einsum::Node& n = g_.nodes[i];
    const int64_t a = axis_size(ax);
    const double split = v ? 1.0 / static_cast<double>(a) : 1.0;
    const double compute = costs_[i].compute_s * fraction_of(i) * split;
    double bytes = 0;
    double now = 0;
    double later = 0;
    size_t k = 0;
    for (const einsum::Access& r : n.reads) {
      const std::optional<Block> b = v ? read_block(n, r, v->var, v->extent, a) : std::nullopt;
      bytes += static_cast<double>(r.bytes) * access_fraction_[i][k++] * (b ? split : 1.0);
      if (is_weight(r.tensor)) continue;
      Layout l = layout_of(ax, r.tensor);  // a copy: costing changes nothing
      if (const auto c = convert(l, b)) now += comm_time(*c, ax, r.tensor);
    }
    for (const einsum::Access& w : n.writes) {
      const std::optional<Block> b = v ? access_block(w, v->var, v->extent, a) : std::nullopt;
      bytes += static_cast<double>(w.bytes) * access_fraction_[i][k++] * (b ? split : 1.0);
      if (v && !b && n.reduction == einsum::Reduction::None) return std::nullopt;
      if (v && !b) later += lookahead(ax, w.tensor);
    }
    return Cost{std::max(compute, bytes / bandwidth_) + now + later, now};
  }

  // Runs node i with loop `v` split on axis `ax`: the collectives its reads need, the layouts of
  // what it writes.
  void apply(size_t i, size_t ax, const Loop* v) {
    const einsum::Node& n = g_.nodes[i];
    const int64_t a = axis_size(ax);
    const double split = 1.0 / static_cast<double>(a);
    (ax == kTp ? splits_[i].first : splits_[i].second) = v ? v->var : "";
    // Whether the output may be flexible: v reaches a weight or a flexible input, and every other
    // input it reaches is replicated (slicing it any way is free).
    bool flexible = ax == kTp && v != nullptr;
    bool reaches = false;
    if (flexible) {
      for (const einsum::Access& r : n.reads) {
        const std::optional<Block> b = read_block(n, r, v->var, v->extent, a);
        if (!b) continue;
        if (is_weight(r.tensor)) {
          reaches = true;
          continue;
        }
        const Layout& have = layout_of(ax, r.tensor);
        if (flex_allows(have, *b)) {
          reaches = true;
        } else if (!have.replicated) {
          flexible = false;
        }
      }
    }
    flexible = flexible && reaches;
    size_t k = 0;
    for (const einsum::Access& r : n.reads) {
      const std::optional<Block> b = v ? read_block(n, r, v->var, v->extent, a) : std::nullopt;
      if (b) access_fraction_[i][k] *= split;
      ++k;
      if (is_weight(r.tensor)) continue;
      if (const auto c = convert(layout_of(ax, r.tensor), b)) add_comm(*c, ax, r.tensor, i);
    }
    for (const einsum::Access& w : n.writes) {
      const std::optional<Block> b = v ? access_block(w, v->var, v->extent, a) : std::nullopt;
      if (b) access_fraction_[i][k] *= split;
      ++k;
      Layout l;
      if (!v) {
        l.replicated = true;
      } else if (b) {
        l.sharded.push_back(*b);
        l.written_fraction = split;
        if (flexible) l.flex = *b;
      } else {
        l.partial = true;
      }
      layouts_[ax][index_.at(w.tensor)] = std::move(l);
    }
  }

  void add_comm(Collective c, size_t ax, const std::string& tensor, size_t before) {
    Communication m;
    m.kind = c;
    m.axis = std::string(kAxisName[ax]);
    m.group = axis_size(ax);
    m.tensor = tensor;
    m.before_node = before;
    const auto w = writer_.find(tensor);
    m.after_node = w == writer_.end() ? kNone : w->second;
    comms_.push_back(std::move(m));
  }

  // Whether a graph output may stay sharded on tp: sequence parallelism, or the shape of a
  // weight (a gradient, an updated parameter: each device keeps its shard).
  bool may_stay_sharded(const einsum::TensorInfo& t) const {
    if (layout_.sequence_parallel) return true;
    for (const einsum::TensorInfo& w : g_.tensors) {
      if (w.role == ir::TensorRole::Weight && w.shape == t.shape) return true;
    }
    return false;
  }

  void plan_axis(size_t ax, int64_t a) {
    writer_.clear();
    batch_ = 0;
    for (const einsum::TensorInfo& t : g_.tensors) {
      if (t.role == ir::TensorRole::Input && !t.shape.empty()) {
        batch_ = t.shape[0];
        break;
      }
    }
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      const einsum::Node& n = g_.nodes[i];
      const std::string& taken = split_of(i, 1 - ax);
      std::vector<Loop> loops;
      for (Loop& l : splittable(n, a)) {
        if (l.var != taken) loops.push_back(std::move(l));
      }
      // Tensor parallelism shards a contraction's weights: it splits a loop of a weight.
      const auto reads_weight_with = [&](const Loop& l) {
        for (const einsum::Access& r : n.reads) {
          if (is_weight(r.tensor) && read_block(n, r, l.var, l.extent, a)) return true;
        }
        return false;
      };
      const auto follows = [&](const Loop& l) {
        for (const einsum::Access& r : n.reads) {
          if (is_weight(r.tensor)) continue;
          const std::optional<Block> b = read_block(n, r, l.var, l.extent, a);
          const Layout& have = layout_of(ax, r.tensor);
          if (b && (flex_allows(have, *b) || std::find(have.sharded.begin(), have.sharded.end(),
                                                       *b) != have.sharded.end())) {
            return true;
          }
        }
        return false;
      };
      bool weight_contraction = false;
      if (ax == kTp && n.counts.macs > 0) {
        for (const Loop& l : loops) weight_contraction = weight_contraction || reads_weight_with(l);
      }
      // Which loops it may split. A contraction of a weight on tp: row-parallel (a reduced loop
      // of the weight) when its input arrives sharded along that loop, else column-parallel (an
      // output loop of the weight), as Megatron alternates them; never replicated. Any other
      // node: a loop along which an input arrives sharded (the cheapest), else replicated.
      const auto reduced = [&](const Loop& l) {
        for (const einsum::Access& w : n.writes) {
          if (access_block(w, l.var, l.extent, a)) return false;
        }
        return true;
      };
      std::vector<const Loop*> candidates;
      if (weight_contraction) {
        for (const Loop& l : loops) {
          if (reads_weight_with(l) && reduced(l) && follows(l)) candidates.push_back(&l);
        }
        if (candidates.empty()) {
          for (const Loop& l : loops) {
            if (reads_weight_with(l) && !reduced(l)) candidates.push_back(&l);
          }
        }
        if (candidates.empty()) {
          for (const Loop& l : loops) {
            if (reads_weight_with(l)) candidates.push_back(&l);
          }
        }
      } else if (ax == kTp && n.writes.size() == 1 && is_weight(n.writes[0].tensor)) {
        // Slices of weights: sharded as the weights are, along any loop of a weight it reads in
        // blocks (the product that reads them takes its shard); replicated when none.
        for (const Loop& l : loops) {
          if (reads_weight_with(l)) candidates.push_back(&l);
        }
        if (candidates.empty()) candidates.push_back(nullptr);
      } else {
        for (const Loop& l : loops) {
          if (follows(l)) candidates.push_back(&l);
        }
        if (candidates.empty()) candidates.push_back(nullptr);  // replicated
      }
      const Loop* best = nullptr;
      std::optional<Cost> best_cost;
      for (const Loop* c : candidates) {
        const std::optional<Cost> t = cost(i, ax, c);
        if (t && (!best_cost || *t < *best_cost)) {
          best_cost = *t;
          best = c;
        }
      }
      apply(i, ax, best);
      for (const einsum::Access& w : n.writes) writer_[w.tensor] = i;
    }
    // Every graph output ends complete.
    for (const einsum::TensorInfo& t : g_.tensors) {
      if (t.role != ir::TensorRole::Output || !writer_.count(t.name)) continue;
      Layout& l = layout_of(ax, t.name);
      if (ax == kDp || may_stay_sharded(t) || layout_.serving) {
        if (l.partial) {
          const Collective c = ax == kDp ? Collective::AllReduce : Collective::ReduceScatter;
          add_comm(c, ax, t.name, kNone);
          l.partial = false;
          l.replicated = ax == kDp;
        }
      } else if (const auto c = convert(l, std::nullopt)) {
        add_comm(*c, ax, t.name, kNone);
      }
    }
  }

  const einsum::Graph& g_;
  ParallelLayout layout_;
  double bandwidth_ = 0;
  std::string link_;
  double link_bw_ = 0;
  bool in_network_ = false;
  std::map<std::string, size_t> index_;
  const std::vector<NodeCost>& costs_;  // the one-device analysis's, one per node
  std::vector<std::pair<std::string, std::string>> splits_;  // (tp loop, dp loop) per node
  std::vector<bool> weight_slice_;  // per tensor: slices of weights (find_weight_slices)
  std::vector<std::vector<double>> access_fraction_;
  std::map<size_t, Layout> layouts_[2];
  std::map<std::string, size_t> writer_;
  std::vector<Communication> comms_;
  int64_t batch_ = 0;
};

// The framework operations' cut into `stages` contiguous stages of least maximum weight (each
// stage at least one operation).
std::vector<size_t> cut_stages(const std::vector<double>& weights, size_t stages) {
  const auto pack = [&](double limit) {
    std::vector<size_t> starts = {0};
    double sum = 0;
    for (size_t u = 0; u < weights.size(); ++u) {
      if (u > starts.back() && sum + weights[u] > limit) {
        starts.push_back(u);
        sum = 0;
      }
      sum += weights[u];
    }
    return starts;
  };
  double lo = 0, hi = 0;
  for (double w : weights) {
    lo = std::max(lo, w);
    hi += w;
  }
  for (int it = 0; it < 100 && hi - lo > 1e-15 * hi; ++it) {
    const double mid = (lo + hi) / 2;
    (pack(mid).size() <= stages ? hi : lo) = mid;
  }
  std::vector<size_t> starts = pack(hi);
  // Fewer stages than asked: split the heaviest stages at their heaviest-balanced point until
  // there are `stages` (every stage keeps at least one operation).
  while (starts.size() < stages) {
    size_t best = SIZE_MAX;
    double best_w = -1;
    for (size_t s = 0; s < starts.size(); ++s) {
      const size_t end = s + 1 < starts.size() ? starts[s + 1] : weights.size();
      if (end - starts[s] < 2) continue;
      double w = 0;
      for (size_t u = starts[s]; u < end; ++u) w += weights[u];
      if (w > best_w) {
        best_w = w;
        best = s;
      }
    }
    SOLAR_CHECK(best != SIZE_MAX, "no stage to split");
    const size_t end = best + 1 < starts.size() ? starts[best + 1] : weights.size();
    double w = 0;
    size_t at = starts[best] + 1;
    for (size_t u = starts[best]; u + 1 < end; ++u) {
      w += weights[u];
      at = u + 1;
      if (w >= best_w / 2) break;
    }
    starts.insert(starts.begin() + static_cast<std::ptrdiff_t>(best) + 1, at);
  }
  return starts;
}

// One framework operation's per-device costs.
struct UnitCost {
  double compute = 0, bytes = 0, time = 0;
  double fused_compute = 0;  // with products at their origin precision (NodeCost)
};

// A planned layout's framework operations, their per-device costs and their pipeline stages,
// built and read by the phases of analyze_parallel in turn.
class StagePlan {
 public:
  StagePlan(const einsum::Graph& g, const Analysis& one, const ParallelLayout& l, Planner& planner)
      : g_(g),
        one_(one),
        l_(l),
        planner_(planner),
        units_(einsum::op_units(g)),
        costs_(planner.costs()),
        comms_(planner.comms()),
        unit_of_(g.nodes.size()) {}

  // Per framework operation: its per-device compute, bytes and time.
  void cost_units() {
    const double kernel_floor_s = one_.kernel_floor_s;
    for (size_t u = 0; u < units_.size(); ++u) {
      UnitCost c;
      double least = 1;
      double single = 0;
      for (size_t i = units_[u].first; i < units_[u].last; ++i) {
        unit_of_[i] = u;
        c.compute += costs_[i].compute_s * planner_.node_fraction(i);
        c.fused_compute += costs_[i].fused_compute_s * planner_.node_fraction(i);
        const einsum::Node& n = g_.nodes[i];
        size_t k = 0;
        for (const einsum::Access& a : n.reads) {
          const double f = planner_.access_fraction(i, k++);
          least = std::min(least, f);
          single += static_cast<double>(a.bytes) * f;
        }
        for (const einsum::Access& a : n.writes) {
          const double f = planner_.access_fraction(i, k++);
          least = std::min(least, f);
          single += static_cast<double>(a.bytes) * f;
        }
      }
      // One node: its accesses' slices; several: the unit's bytes at the smallest slice (a lower
      // bound of the slices of the tensors it moves).
      c.bytes = units_[u].last - units_[u].first == 1
                    ? single
                    : static_cast<double>(units_[u].bytes()) * least;
      c.time = std::max(c.compute, mem_s(c.bytes));
      // The unfused fidelity's per-kernel floor (sol/analysis.h), on operations that do something.
      if (kernel_floor_s > 0 && (c.bytes > 0 || c.compute > 0))
        c.time = std::max(c.time, kernel_floor_s);
      unit_costs_.push_back(c);
    }
  }

  // Communication times: each communication's buffer, bytes sent and time.
  void time_comms() {
    for (Communication& c : comms_) {
      c.buffer_bytes = static_cast<int64_t>(
          std::llround(planner_.buffer_bytes(c.tensor, c.axis == "tp" ? kTp : kDp)));
      c.sent_bytes =
          sent_bytes(c.kind, c.group, static_cast<double>(c.buffer_bytes), planner_.in_network());
      c.in_network = planner_.in_network() && c.kind == Collective::AllReduce && c.group > 2;
      c.time_s = c.sent_bytes / planner_.link_bw();
    }
  }

  // Stages: the operations cut into l_.pp stages of balanced time, and each node and
  // communication placed in its stage.
  void cut() {
    std::vector<double> weights;
    for (size_t u = 0; u < units_.size(); ++u) weights.push_back(unit_costs_[u].time);
    for (const Communication& c : comms_) {
      if (c.before_node != kNone) weights[unit_of_[c.before_node]] += c.time_s;
    }
    if (static_cast<size_t>(l_.pp) > units_.size()) {
      throw UserError("--parallel pp=" + std::to_string(l_.pp) + ": more stages than the " +
                      std::to_string(units_.size()) + " framework operations of the program");
    }
    starts_ = l_.pp > 1 ? cut_stages(weights, static_cast<size_t>(l_.pp)) : std::vector<size_t>{0};
    stage_of_unit_.resize(units_.size());
    for (size_t s = 0; s < starts_.size(); ++s) {
      const size_t end = s + 1 < starts_.size() ? starts_[s + 1] : units_.size();
      for (size_t u = starts_[s]; u < end; ++u) stage_of_unit_[u] = s;
    }
    node_stage_.resize(g_.nodes.size());
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      node_stage_[i] = std::to_string(stage_of_unit_[unit_of_[i]]);
    }
    for (Communication& c : comms_) {
      const size_t at = c.before_node != kNone ? c.before_node : c.after_node;
      c.stage = at == kNone ? 0 : stage_of_unit_[unit_of_[at]];
    }
  }

  // The fidelities modelled per device, and the collectives each operation and each stage's end
  // waits for.
  void find_waits() {
    // The fidelities of the one-device analysis that are modelled per device.
    for (const FidelityResult& f : one_.results) {
      if (f.fidelity != Fidelity::Cache) asked_.push_back(f.fidelity);
    }

    // The collectives each framework operation waits for, and those of each stage's end (graph
    // outputs), in the planner's order; when each operation finishes (the unfused run).
    waits_before_.resize(units_.size());
    waits_at_end_.resize(starts_.size());
    for (size_t k = 0; k < comms_.size(); ++k) {
      const Communication& c = comms_[k];
      (c.before_node == kNone ? waits_at_end_[c.stage] : waits_before_[unit_of_[c.before_node]])
          .push_back(k);
    }
    finish_.assign(units_.size(), 0);
  }

  // The number of pipeline stages (after cut).
  size_t stage_count() const { return starts_.size(); }

  // Stage s: its terms per asked fidelity (the unfused run after those of the stages before it);
  // raises `link_needed` to the link its communication needs.
  ParallelStage stage(size_t s, double& link_needed) {
    ParallelStage st;
    st.first = units_[starts_[s]].first;
    st.last = s + 1 < starts_.size() ? units_[starts_[s + 1]].first : g_.nodes.size();
    const size_t u_end = s + 1 < starts_.size() ? starts_[s + 1] : units_.size();
    double compute = 0, unfused_memory = 0, comm = 0;
    double fused_compute = 0;  // the fused fidelity's: products at their origin precision
    double unfused_bytes = 0;
    for (size_t u = starts_[s]; u < u_end; ++u) {
      compute += unit_costs_[u].compute;
      fused_compute += unit_costs_[u].fused_compute;
      unfused_bytes += unit_costs_[u].bytes;
      unfused_memory += mem_s(unit_costs_[u].bytes);
    }
    for (const Communication& c : comms_) {
      if (c.stage == s) comm += c.time_s;
    }
    // Unfused: one compute stream, one communication stream.
    double t_compute = 0, t_comm = 0;
    const auto run_comms = [&](const std::vector<size_t>& which) {
      double ready = 0;
      for (size_t k : which) {
        const Communication& c = comms_[k];
        double produced = 0;
        if (c.after_node != kNone && stage_of_unit_[unit_of_[c.after_node]] == s) {
          produced = finish_[unit_of_[c.after_node]];
        }
        const double start = std::max(t_comm, produced);
        t_comm = start + c.time_s;
        ready = std::max(ready, t_comm);
      }
      return ready;
    };
    for (size_t u = starts_[s]; u < u_end; ++u) {
      const double ready = run_comms(waits_before_[u]);
      t_compute = std::max(t_compute, ready) + unit_costs_[u].time;
      finish_[u] = t_compute;
    }
    const double unfused_time = std::max(t_compute, run_comms(waits_at_end_[s]));

    const double fused_bytes = fused_bytes_of(s, st);
    for (Fidelity f : asked_) {
      ParallelTerms t;
      t.compute_s = f == Fidelity::Unfused ? compute : fused_compute;
      t.comm_s = comm;
      if (f == Fidelity::Unfused) {
        t.memory_s = unfused_memory;
        t.bytes = static_cast<int64_t>(std::llround(unfused_bytes));
        t.time_s = unfused_time;
      } else {
        t.memory_s = mem_s(fused_bytes);
        t.bytes = static_cast<int64_t>(std::llround(fused_bytes));
        t.time_s = std::max({t.compute_s, t.memory_s, t.comm_s});
        // A stage that does work runs at least one kernel (sol/analysis.h, the one-kernel floor).
        if (t.compute_s > 0 || t.memory_s > 0) t.time_s = std::max(t.time_s, one_.program_floor_s);
      }
      st.terms.push_back(t);
    }
    // Fused terms for the link needed, whether or not fused was asked.
    const double others = std::max(fused_compute, mem_s(fused_bytes));
    double sent = 0;
    for (const Communication& c : comms_) {
      if (c.stage == s) sent += c.sent_bytes;
    }
    if (sent > 0 && others > 0) {
      link_needed = std::max(link_needed, sent / others);
    }
    return st;
  }

  // Point to point between stages: every tensor written before the cut and read after it.
  void add_point_to_point(ParallelAnalysis& out) {
    if (out.stages.size() > 1) {
      std::map<std::string, size_t> written_in;
      std::map<std::string, size_t> last_read_in;
      for (size_t i = 0; i < g_.nodes.size(); ++i) {
        const size_t s = stage_of_unit_[unit_of_[i]];
        for (const einsum::Access& a : g_.nodes[i].writes) {
          if (!written_in.count(a.tensor)) written_in[a.tensor] = s;
        }
        for (const einsum::Access& a : g_.nodes[i].reads) last_read_in[a.tensor] = s;
      }
      for (const auto& [tensor, s] : written_in) {
        const auto r = last_read_in.find(tensor);
        if (r == last_read_in.end() || r->second <= s) continue;
        const einsum::TensorInfo* t = g_.find_tensor(tensor);
        const double bytes = static_cast<double>(t->bytes) * planner_.written_fraction(tensor);
        for (size_t b = s; b < r->second; ++b) {
          out.stages[b].send_bytes += static_cast<int64_t>(std::llround(bytes));
          Communication m;
          m.kind = Collective::PointToPoint;
          m.axis = "pp";
          m.group = 2;
          m.tensor = tensor;
          m.buffer_bytes = static_cast<int64_t>(std::llround(bytes));
          m.sent_bytes = bytes;
          m.time_s = bytes / planner_.link_bw();
          m.stage = b;
          comms_.push_back(std::move(m));
        }
      }
      for (ParallelStage& st : out.stages) {
        st.send_s = static_cast<double>(st.send_bytes) / planner_.link_bw();
      }
    }
    out.comms = comms_;
  }

  // The pipeline's step, per fidelity.
  void add_results(ParallelAnalysis& out) const {
    const double m = static_cast<double>(l_.microbatches);
    for (size_t fi = 0; fi < asked_.size(); ++fi) {
      ParallelResult r;
      r.fidelity = asked_[fi];
      double sum = 0, worst = 0, worst_send = 0;
      for (size_t s = 0; s < out.stages.size(); ++s) {
        const double t = out.stages[s].terms[fi].time_s;
        sum += t;
        if (t > worst) {
          worst = t;
          r.bottleneck_stage = s;
        }
        worst_send = std::max(worst_send, out.stages[s].send_s);
      }
      r.time_s = sum / m + (m - 1) * std::max(worst / m, worst_send / m);
      r.terms = out.stages[r.bottleneck_stage].terms[fi];
      // A send between stages longer than every stage bounds the pipeline's steady state.
      if (l_.microbatches > 1) r.terms.comm_s = std::max(r.terms.comm_s, worst_send);
      const FidelityResult& alone = one_.result(r.fidelity);
      if (r.time_s > 0) r.speedup = alone.time_s / r.time_s;
      out.results.push_back(r);
    }
  }

  // The floor of any layout on the devices.
  double floor_s() const {
    double compute = 0;
    for (const NodeCost& c : costs_) compute += c.fused_compute_s;
    const double n = static_cast<double>(l_.devices());
    return std::max(compute / n, mem_s(static_cast<double>(dram_bytes(g_, Fidelity::Fused)) / n));
  }

 private:
  // DRAM time of `bytes` per device: the report's cache state (cold: bytes / DRAM bandwidth).
  double mem_s(double bytes) const {
    return one_.memory.time_s(static_cast<int64_t>(std::llround(bytes)));
  }

  // Fused: the stage's inputs, weights and outputs, each once, at the largest slice read.
  double fused_bytes_of(size_t s, const ParallelStage& st) const {
    einsum::Graph sg = l_.pp > 1 ? phase_graph(g_, node_stage_, std::to_string(s)) : g_;
    std::map<std::string, double> slice;
    for (size_t i = st.first; i < st.last; ++i) {
      size_t k = 0;
      for (const einsum::Access& a : g_.nodes[i].reads) {
        double& f = slice[a.tensor];
        f = std::max(f, planner_.access_fraction(i, k++));
      }
      for (const einsum::Access& a : g_.nodes[i].writes) {
        double& f = slice[a.tensor];
        f = std::max(f, planner_.access_fraction(i, k++));
      }
    }
    const std::vector<einsum::Footprint> touched = einsum::touched_footprints(sg);
    // An output whose values repeat is written once per distinct value (docs/fidelities.md,
    // "Repeated values"); inputs and weights repeat along nothing.
    const std::vector<int64_t> copies = einsum::repeated_copies(sg);
    double fused_bytes = 0;
    for (size_t t = 0; t < sg.tensors.size(); ++t) {
      const einsum::TensorInfo& info = sg.tensors[t];
      if (info.role == ir::TensorRole::Intermediate) continue;
      const auto it = slice.find(info.name);
      if (it == slice.end()) continue;
      fused_bytes +=
          static_cast<double>(info.bytes_of(touched[t].elements / copies[t])) * it->second;
    }
    return fused_bytes;
  }

  const einsum::Graph& g_;
  const Analysis& one_;
  const ParallelLayout& l_;
  Planner& planner_;
  const std::vector<einsum::OpUnit> units_;
  const std::vector<NodeCost>& costs_;
  std::vector<Communication>& comms_;
  std::vector<UnitCost> unit_costs_;
  std::vector<size_t> unit_of_;          // per node: its operation
  std::vector<size_t> starts_;           // per stage: its first operation
  std::vector<size_t> stage_of_unit_;    // per operation
  std::vector<std::string> node_stage_;  // per node: its stage, as phase_graph names it
  std::vector<Fidelity> asked_;
  std::vector<std::vector<size_t>> waits_before_, waits_at_end_;
  std::vector<double> finish_;  // per operation: when it finishes (the unfused run)
};

}  // namespace

ParallelAnalysis analyze_parallel(const einsum::Graph& g, const hw::Device& d, const Analysis& one,
                                  const ParallelLayout& l) {
  SOLAR_CHECK(one.nodes.size() == g.nodes.size(), "a one-device analysis of another graph");
  ParallelAnalysis out;
  out.layout = l;
  Planner planner(g, d, one, l);
  if (l.devices() > 1 && planner.link_bw() <= 0) {
    throw UserError("--parallel " + parallel_text(l) + ": device " + d.name +
                    " has no scale-up interconnect figure (docs/devices.md, \"Interconnect\"); "
                    "give one with --set interconnect.scale_up.bandwidth_bytes_per_s=VALUE");
  }
  out.link = planner.link();
  out.link_bytes_per_s = planner.link_bw();
  out.in_network_reduction = planner.in_network();
  planner.plan();

  for (size_t i = 0; i < g.nodes.size(); ++i) {
    out.nodes.push_back(
        {planner.splits()[i].first, planner.splits()[i].second, planner.node_fraction(i)});
  }

  StagePlan plan(g, one, l, planner);
  plan.cost_units();
  plan.time_comms();
  plan.cut();
  plan.find_waits();
  for (size_t s = 0; s < plan.stage_count(); ++s) {
    out.stages.push_back(plan.stage(s, out.link_needed_bytes_per_s));
  }
  plan.add_point_to_point(out);
  plan.add_results(out);
  out.floor_s = plan.floor_s();
  return out;
}

}  // namespace solar::sol
