// The einsum graph's small functions, and the union of a tensor's accesses over a graph.
#include "solar/einsum/graph.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "footprint.h"
#include "solar/ir/dtype.h"
#include "solar/util/error.h"

namespace solar::einsum {

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

// "einsum", "movement": the enum's name in lower case.
std::string_view node_kind_name(NodeKind k) {
  switch (k) {
#define SOLAR_X(e)                             \
  case NodeKind::e: {                          \
    static const std::string name = lower(#e); \
    return name;                               \
  }
    SOLAR_NODE_KINDS(SOLAR_X)
#undef SOLAR_X
  }
  SOLAR_CHECK(false, "unknown NodeKind");
}

std::string_view routing_name(Routing r) {
  return r == Routing::Concentrated ? "concentrated" : "balanced";
}

Routing parse_routing(std::string_view name) {
  if (name == "balanced") return Routing::Balanced;
  if (name == "concentrated") return Routing::Concentrated;
  throw UserError("unknown routing '" + std::string(name) + "' (balanced or concentrated)");
}

void assume_routing(Graph& g, Routing r) {
  if (g.routing == r) return;  // the footprints already count it
  g.routing = r;
  for (Node& n : g.nodes) {
    for (auto* list : {&n.reads, &n.writes}) {
      for (Access& a : *list) {
        bool dependent = false;
        for (AccessMap& m : a.maps) {
          if (!m.data_dependent) continue;
          m.concentrated = r == Routing::Concentrated && m.routed;
          dependent = true;
        }
        if (!dependent) continue;
        const TensorInfo* t = g.find_tensor(a.tensor);
        SOLAR_CHECK(t != nullptr, "assume_routing: unknown tensor '" + a.tensor + "'");
        detail::count_access(a, *t);
      }
    }
  }
}

std::string_view reduction_name(Reduction r) {
  switch (r) {
    case Reduction::None:
      return "none";
    case Reduction::Sum:
      return "sum";
    case Reduction::Prod:
      return "prod";
    case Reduction::Max:
      return "max";
    case Reduction::Min:
      return "min";
  }
  SOLAR_CHECK(false, "unknown Reduction");
}

ir::AffineForm AccessMap::flat() const {
  SOLAR_CHECK(!data_dependent, "AccessMap::flat of a data-dependent map");
  ir::AffineForm f{offset, {}};
  for (size_t d = 0; d < index.size(); ++d) {
    f.constant += strides[d] * index[d].constant;
    for (const auto& [v, c] : index[d].coeffs) {
      if ((f.coeffs[v] += strides[d] * c) == 0) f.coeffs.erase(v);
    }
  }
  return f;
}

int64_t ElementBits::bytes(int64_t elements) const {
  if (per == 1 && bits % 8 == 0) return elements * (bits / 8);
  // floor(elements * bits / (8 * per)) without overflow: whole groups of 8 x per elements take
  // exactly `bits` bytes each.
  const int64_t group = 8 * per;
  return elements / group * bits + elements % group * bits / group;
}

ElementBits TensorInfo::element_bits() const {
  if (stored_bits) return *stored_bits;
  return {8 * int64_t{ir::dtype_size(dtype)}, 1};
}

int64_t TensorInfo::bytes_of(int64_t elements) const { return element_bits().bytes(elements); }

int64_t Node::bytes_read() const {
  int64_t n = 0;
  for (const Access& a : reads) n += a.bytes;
  return n;
}

int64_t Node::bytes_written() const {
  int64_t n = 0;
  for (const Access& a : writes) n += a.bytes;
  return n;
}

const TensorInfo* Graph::find_tensor(std::string_view name) const {
  for (const TensorInfo& t : tensors) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

Footprint touched_footprint(const Graph& g, std::string_view tensor) {
  const TensorInfo* t = g.find_tensor(tensor);
  if (t == nullptr) throw UserError("no tensor '" + std::string(tensor) + "' in the graph");
  const bool read = t->role == ir::TensorRole::Input || t->role == ir::TensorRole::Weight;
  std::vector<const AccessMap*> maps;
  for (const Node& n : g.nodes) {
    for (const Access& a : read ? n.reads : n.writes) {
      if (a.tensor != tensor) continue;
      for (const AccessMap& m : a.maps) maps.push_back(&m);
    }
  }
  return detail::union_footprint(maps, t->numel);
}

std::vector<Footprint> touched_footprints(const Graph& g) {
  std::map<std::string_view, size_t> index;  // the first tensor of each name, as find_tensor
  for (size_t t = 0; t < g.tensors.size(); ++t) index.emplace(g.tensors[t].name, t);
  std::vector<std::vector<const AccessMap*>> maps(g.tensors.size());
  for (const Node& n : g.nodes) {
    for (const auto* list : {&n.reads, &n.writes}) {
      for (const Access& a : *list) {
        const auto it = index.find(a.tensor);
        if (it == index.end()) continue;
        const ir::TensorRole role = g.tensors[it->second].role;
        const bool read = role == ir::TensorRole::Input || role == ir::TensorRole::Weight;
        if (read != (list == &n.reads)) continue;
        for (const AccessMap& m : a.maps) maps[it->second].push_back(&m);
      }
    }
  }
  std::vector<Footprint> out;
  out.reserve(g.tensors.size());
  for (size_t t = 0; t < g.tensors.size(); ++t) {
    out.push_back(detail::union_footprint(maps[t], g.tensors[t].numel));
  }
  return out;
}

namespace {

// Whether graph output `name` is the record of an in-place write into an input X: `X_written`.
bool in_place_record(const Graph& g, const std::string& name) {
  constexpr std::string_view kSuffix = "_written";
  if (!name.ends_with(kSuffix)) return false;
  const TensorInfo* into =
      g.find_tensor(std::string_view(name).substr(0, name.size() - kSuffix.size()));
  return into != nullptr && into->role == ir::TensorRole::Input;
}

// Whether map `m` indexes `shape`'s own dimensions: one index per dimension, at the tensor's
// row-major strides (a dimension of size 1 at any stride: every index reads its one element).
bool own_dims(const AccessMap& m, const std::vector<int64_t>& shape) {
  if (m.data_dependent || m.index.size() != shape.size() || m.strides.size() != shape.size()) {
    return false;
  }
  int64_t stride = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    if (shape[d] > 1 && m.strides[d] != stride) return false;
    stride *= shape[d];
  }
  return true;
}

// Whether loop `v` decides the value node `n` computes (repeated_copies): a value of the right
// side, a bound of another loop or a non-constant bound of its own, or a read whose element
// depends on v, unless only along dimensions along which the read's tensor repeats.
bool decides_value(const Node& n, const std::string& v,
                   const std::map<std::string_view, size_t>& index,
                   const std::vector<std::vector<bool>>& repeats,
                   const std::vector<TensorInfo>& tensors) {
  if (std::find(n.value_loops.begin(), n.value_loops.end(), v) != n.value_loops.end()) return true;
  for (const ir::AffineLoop& l : n.domain) {
    if (!l.lo.coeffs.empty() || !l.hi.coeffs.empty()) {
      if (l.var == v || l.lo.coeff(v) != 0 || l.hi.coeff(v) != 0) return true;
    }
  }
  for (const Access& a : n.reads) {
    const auto it = index.find(a.tensor);
    for (const AccessMap& m : a.maps) {
      if (m.data_dependent) {
        for (const ir::AffineForm& f : m.index) {
          if (f.coeff(v) != 0) return true;
        }
        continue;
      }
      if (m.flat().coeff(v) == 0) continue;  // the element read does not depend on v
      if (it == index.end() || !own_dims(m, tensors[it->second].shape)) return true;
      const std::vector<int64_t>& shape = tensors[it->second].shape;
      for (size_t d = 0; d < m.index.size(); ++d) {
        if (m.index[d].coeff(v) != 0 && shape[d] > 1 && !repeats[it->second][d]) return true;
      }
    }
  }
  return false;
}

}  // namespace

std::vector<int64_t> repeated_copies(const Graph& g) {
  std::map<std::string_view, size_t> index;  // the first tensor of each name, as find_tensor
  for (size_t t = 0; t < g.tensors.size(); ++t) index.emplace(g.tensors[t].name, t);
  std::vector<int> writers(g.tensors.size(), 0);
  for (const Node& n : g.nodes) {
    for (const Access& a : n.writes) {
      if (const auto it = index.find(a.tensor); it != index.end()) ++writers[it->second];
    }
  }
  std::vector<std::vector<bool>> repeats(g.tensors.size());
  for (size_t t = 0; t < g.tensors.size(); ++t) repeats[t].assign(g.tensors[t].shape.size(), false);
  for (const Node& n : g.nodes) {
    // (A node over an empty range reads nothing: its output is its initial value, counted whole.)
    if (n.kind != NodeKind::Einsum || n.points == 0 || n.writes.size() != 1 ||
        n.writes[0].maps.size() != 1) {
      continue;
    }
    const auto it = index.find(n.writes[0].tensor);
    if (it == index.end() || writers[it->second] != 1) continue;
    const TensorInfo& t = g.tensors[it->second];
    const ir::TensorRole role = t.role;
    if (role == ir::TensorRole::Input || role == ir::TensorRole::Weight) continue;
    // The record of an in-place write into input X (graph output `X_written`, docs/einsum.md
    // "In-place updates of inputs"): its values land in X's storage, every copy of them.
    if (n.relabel || in_place_record(g, t.name)) continue;
    const bool reads_itself = std::any_of(n.reads.begin(), n.reads.end(),
                                          [&](const Access& a) { return a.tensor == t.name; });
    const AccessMap& w = n.writes[0].maps[0];
    if (reads_itself || w.guarded || !own_dims(w, t.shape)) continue;
    for (size_t d = 0; d < w.index.size(); ++d) {
      const ir::AffineForm& f = w.index[d];
      if (f.constant != 0 || f.coeffs.size() != 1 || f.coeffs.begin()->second != 1) continue;
      const std::string& v = f.coeffs.begin()->first;
      const auto loop = std::find_if(n.domain.begin(), n.domain.end(),
                                     [&](const ir::AffineLoop& l) { return l.var == v; });
      if (loop == n.domain.end() || loop->lo.constant != 0 || loop->hi.constant != t.shape[d]) {
        continue;
      }
      bool alone = true;  // no other index of the write uses v
      for (size_t e = 0; e < w.index.size(); ++e)
        alone = alone && (e == d || w.index[e].coeff(v) == 0);
      if (alone && !decides_value(n, v, index, repeats, g.tensors)) repeats[it->second][d] = true;
    }
  }
  std::vector<int64_t> copies(g.tensors.size(), 1);
  for (size_t t = 0; t < g.tensors.size(); ++t) {
    for (size_t d = 0; d < repeats[t].size(); ++d) {
      if (repeats[t][d]) copies[t] *= std::max<int64_t>(g.tensors[t].shape[d], 1);
    }
  }
  return copies;
}

int64_t touched_elements(const Graph& g, std::string_view tensor) {
  return touched_footprint(g, tensor).elements;
}

namespace {

// The DRAM bytes of the nodes [u.first, u.last) run as one kernel (OpUnit).
// Per tensor, the nodes that read it and the nodes that write it, in order.
struct Events {
  std::vector<size_t> reads, writes;
};

// Whether the value `name` holds after the nodes before `last` is read later: its first read at
// or after `last` comes before its first write there (a node reads before it writes).
bool read_later(const std::map<std::string, Events, std::less<>>& events, const std::string& name,
                size_t last) {
  const auto it = events.find(name);
  if (it == events.end()) return false;
  const auto first_at = [last](const std::vector<size_t>& v) {
    const auto at = std::lower_bound(v.begin(), v.end(), last);
    return at == v.end() ? SIZE_MAX : *at;
  };
  const size_t read = first_at(it->second.reads);
  return read != SIZE_MAX && read <= first_at(it->second.writes);
}

void unit_bytes(const Graph& g, const std::map<std::string, Events, std::less<>>& events,
                const std::map<std::string, const TensorInfo*, std::less<>>& tensors, OpUnit& u) {
  if (u.last - u.first == 1) {  // one node: all it reads and writes, as it runs alone
    const Node& n = g.nodes[u.first];
    if (n.relabel) return;  // no kernel: a view of its input in the framework
    u.bytes_read = n.bytes_read();
    u.bytes_written = n.bytes_written();
    for (const auto* list : {&n.reads, &n.writes}) {
      for (const Access& a : *list) u.bytes_exact = u.bytes_exact && a.footprint_exact;
    }
    return;
  }
  // Per tensor, in order of first appearance: its read maps before its first write inside the
  // unit (a node that reads and writes a tensor reads it first), its write maps, and whether a
  // node of the unit reads it after it was written there (then it is consumed on chip).
  struct Use {
    std::vector<const AccessMap*> reads, writes;
    bool consumed = false;
  };
  std::vector<std::string> order;
  std::map<std::string, Use, std::less<>> uses;
  const auto use = [&](const std::string& t) -> Use& {
    const auto [it, fresh] = uses.try_emplace(t);
    if (fresh) order.push_back(t);
    return it->second;
  };
  for (size_t i = u.first; i < u.last; ++i) {
    for (const Access& a : g.nodes[i].reads) {
      Use& x = use(a.tensor);
      if (!x.writes.empty()) {
        x.consumed = true;
        continue;
      }
      for (const AccessMap& m : a.maps) x.reads.push_back(&m);
    }
    for (const Access& a : g.nodes[i].writes) {
      Use& x = use(a.tensor);
      for (const AccessMap& m : a.maps) x.writes.push_back(&m);
    }
  }
  for (const std::string& name : order) {
    const Use& x = uses.at(name);
    const auto found = tensors.find(name);
    SOLAR_CHECK(found != tensors.end(), "op_units: unknown tensor '" + name + "'");
    const TensorInfo* t = found->second;
    if (!x.reads.empty()) {
      const Footprint fp = detail::union_footprint(x.reads, t->numel);
      u.bytes_read += t->bytes_of(fp.elements);
      u.bytes_exact = u.bytes_exact && fp.exact;
    }
    // Written: an output of the op (nothing inside it reads it), or needed after it.
    const bool needed_after = t->role == ir::TensorRole::Output || read_later(events, name, u.last);
    if (!x.writes.empty() && (needed_after || !x.consumed)) {
      const Footprint fp = detail::union_footprint(x.writes, t->numel);
      u.bytes_written += t->bytes_of(fp.elements);
      u.bytes_exact = u.bytes_exact && fp.exact;
    }
  }
}

}  // namespace

std::vector<OpUnit> op_units(const Graph& g) {
  std::map<std::string, Events, std::less<>> events;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    for (const Access& a : g.nodes[i].reads) events[a.tensor].reads.push_back(i);
    for (const Access& a : g.nodes[i].writes) events[a.tensor].writes.push_back(i);
  }
  std::map<std::string, const TensorInfo*, std::less<>> tensors;  // by name, once
  for (const TensorInfo& t : g.tensors) tensors.emplace(t.name, &t);
  std::vector<OpUnit> units;
  for (size_t i = 0; i < g.nodes.size();) {
    const Node& n = g.nodes[i];
    size_t end = i + 1;
    while (!n.op_block.empty() && end < g.nodes.size() && g.nodes[end].op_block == n.op_block) {
      ++end;
    }
    OpUnit u;
    u.name = n.op_block.empty() ? n.name : n.op_block;
    u.first = i;
    u.last = end;
    unit_bytes(g, events, tensors, u);
    units.push_back(std::move(u));
    i = end;
  }
  return units;
}

}  // namespace solar::einsum
