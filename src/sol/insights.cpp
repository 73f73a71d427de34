// Contraction order, fusion opportunities and bottlenecks (include/solar/sol/insights.h).
#include "solar/sol/insights.h"

#include <algorithm>
#include <bitset>
#include <cstdint>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "solar/util/checked.h"
#include "solar/util/error.h"

namespace solar::sol {
namespace {

constexpr int64_t kSaturated = std::numeric_limits<int64_t>::max();
constexpr size_t kMaxLabels = 256;
using LabelSet = std::bitset<kMaxLabels>;

int64_t product(const LabelSet& s, const std::vector<int64_t>& extents) {
  int64_t p = 1;
  for (size_t l = 0; l < extents.size(); ++l) {
    if (s.test(l)) p = saturating_mul(p, extents[l]);
  }
  return p;
}

int find_root(std::vector<int>& parent, int x) {
  while (parent[x] != x) x = parent[x] = parent[parent[x]];
  return x;
}

// Chains through relabelings. Every access map of a chain's nodes is read as mixed-radix
// digits: a loop of extent e > 1 is the digit [rm, rm * e) of the node's points (rm: its
// row-major stride in the map's own box) and the digit [c, c * e) of the tensor's storage (c: its
// coefficient in the map's flat offset; 0 when the tensor does not move with it, a broadcast).
// A reshape reads and writes the same points in row-major order through two boxes, so its two
// maps cut the points differently; a permute or a copy reads and writes through one box.
struct Digit {
  int64_t point = 0;  // row-major stride in the map's box
  int64_t coeff = 0;  // stride in the tensor (0: broadcast)
  int64_t extent = 0;
};

struct DigitMap {
  std::string tensor;
  std::vector<Digit> digits;
  int64_t size = 0;  // the storage the digits span: the product of the moving digits' extents
};

// The digits of `m` over its box (the node's domain when the map has none). `whole`: the map
// must reach every element of the tensor once (offset 0, the moving digits tiling its `numel`
// elements), as an intermediate's write and read must to be one tensor; else only its moving
// digits must not overlap (a leaf operand may be a strided window), and they are renumbered
// densely. nullopt for anything else (guarded, data-dependent, sliding windows, negative
// strides).
std::optional<DigitMap> digit_map(const einsum::AccessMap& m, const std::string& tensor,
                                  int64_t numel, const ir::AffineDomain& node_domain, bool whole) {
  if (m.guarded || m.data_dependent) return std::nullopt;
  const ir::AffineDomain& domain = m.domain.empty() ? node_domain : m.domain;
  std::map<std::string, std::pair<int64_t, int64_t>> box;  // var -> (row-major stride, extent)
  int64_t rm = 1;
  for (auto l = domain.rbegin(); l != domain.rend(); ++l) {
    if (!l->lo.coeffs.empty() || !l->hi.coeffs.empty() || l->lo.constant != 0) return {};
    if (l->hi.constant < 1) return std::nullopt;
    box[l->var] = {rm, l->hi.constant};
    rm = saturating_mul(rm, l->hi.constant);
  }
  const ir::AffineForm flat = m.flat();
  if (whole && flat.constant != 0) return std::nullopt;
  DigitMap dm{tensor, {}, 1};
  for (const auto& [var, c] : flat.coeffs) {
    if (!box.count(var) || c < 0) return std::nullopt;
  }
  for (const auto& [var, at] : box) {
    if (at.second == 1) continue;
    dm.digits.push_back({at.first, flat.coeff(var), at.second});
  }
  std::vector<Digit*> moving;
  for (Digit& d : dm.digits) {
    if (d.coeff > 0) moving.push_back(&d);
  }
  std::sort(moving.begin(), moving.end(),
            [](const Digit* x, const Digit* y) { return x->coeff < y->coeff; });
  int64_t next = 1;  // whole: the stride the next digit must have; else the least it may have
  int64_t dense = 1;
  for (Digit* d : moving) {
    if (whole ? d->coeff != next : d->coeff < next) return std::nullopt;
    next = saturating_mul(d->coeff, d->extent);
    d->coeff = dense;
    dense = saturating_mul(dense, d->extent);
  }
  if (whole && dense != numel) return std::nullopt;
  dm.size = dense;
  return dm;
}

int64_t numel_of(const einsum::Graph& g, const std::string& tensor) {
  const einsum::TensorInfo* t = g.find_tensor(tensor);
  return t ? t->numel : -1;
}

// A node a chain may hold: a contraction (one product of two operands under a sum, over a box
// from zero) or a relabeling (one tensor copied by permute, reshape, broadcast or copy, by a copy
// kernel (a clone), or scaled by a constant). Each read and the write as digits, both ways (see
// digit_map).
struct Member {
  bool contraction = false;
  struct Map {
    std::optional<DigitMap> whole, window;
  };
  std::vector<Map> reads;  // a contraction: its two operands, in the order read
  Map write;
  int64_t points = 0;
};

std::optional<Member> chain_member(const einsum::Graph& g, const einsum::Node& n) {
  Member m;
  m.points = n.points;
  if (n.writes.size() != 1 || n.writes.front().maps.size() != 1) return std::nullopt;
  const auto maps = [&](const einsum::Access& a, bool write) -> std::optional<Member::Map> {
    if (a.maps.size() != 1) return std::nullopt;
    const int64_t numel = numel_of(g, a.tensor);
    Member::Map mm{digit_map(a.maps.front(), a.tensor, numel, n.domain, true),
                   digit_map(a.maps.front(), a.tensor, numel, n.domain, false)};
    if (!mm.window) return std::nullopt;
    // Every point is one element of a relabeling's output: no digit the write does not move.
    const auto still = [](const Digit& d) { return d.coeff == 0; };
    if (write && !m.contraction &&
        std::any_of(mm.window->digits.begin(), mm.window->digits.end(), still)) {
      return std::nullopt;
    }
    return mm;
  };
  if (n.kind == einsum::NodeKind::Einsum && n.reduction == einsum::Reduction::Sum) {
    if (n.counts.macs == 0 || n.counts.macs != n.points || n.counts.other_ops() != 0) return {};
    if (n.reads.size() != 2) return std::nullopt;
    m.contraction = true;
  } else if (n.kind == einsum::NodeKind::Movement) {
    if (n.op != "permute" && n.op != "reshape" && n.op != "broadcast" && n.op != "copy") return {};
    if (n.reads.size() != 1) return std::nullopt;
  } else if (n.kind == einsum::NodeKind::Einsum && n.reduction == einsum::Reduction::None) {
    if (n.counts.macs != 0 || n.reads.size() != 1) return {};
    // A copy kernel (a clone: no operation), or a scale of its read by a constant.
    const bool copies = n.counts.other_ops() == 0;
    if (!copies && (n.counts.other_ops() != n.points || !n.scales_a_read)) return std::nullopt;
  } else {
    return std::nullopt;
  }
  for (const einsum::Access& a : n.reads) {
    std::optional<Member::Map> mm = maps(a, false);
    if (!mm) return std::nullopt;
    m.reads.push_back(std::move(*mm));
  }
  std::optional<Member::Map> w = maps(n.writes.front(), true);
  if (!w) return std::nullopt;
  m.write = std::move(*w);
  // A relabeling's maps cover the same points (a reshape's two boxes hold as many).
  if (!m.contraction) {
    for (const Member::Map* mm : {&m.reads.front(), &m.write}) {
      int64_t box = 1;
      for (const Digit& d : mm->window->digits) box = saturating_mul(box, d.extent);
      if (box != n.points) return std::nullopt;
    }
  }
  return m;
}

// The atomic indices of a chain: a space per node's points, per linked intermediate and per leaf
// read; each digit of a map says that a stretch of the points is a stretch of the tensor. Cuts
// (breakpoints) spread across those equalities until none is added; the pieces between cuts are
// the atoms, and atoms made equal are one index.
struct Spaces {
  struct Equal {
    int a = 0;
    int64_t at_a = 0;
    int b = 0;
    int64_t at_b = 0;
    int64_t extent = 0;
  };
  std::vector<int64_t> size;
  std::vector<std::set<int64_t>> cuts;
  std::vector<Equal> equal;

  int add(int64_t n) {
    size.push_back(n);
    cuts.push_back({1, n});
    return static_cast<int>(size.size()) - 1;
  }
  void relate(int a, int64_t at_a, int b, int64_t at_b, int64_t extent) {
    equal.push_back({a, at_a, b, at_b, extent});
    for (const auto& [s, at] : {std::pair{a, at_a}, std::pair{b, at_b}}) {
      cuts[s].insert(at);
      cuts[s].insert(saturating_mul(at, extent));
    }
  }
  // Spreads the cuts; false when two factorisations of one space disagree (a reshape that mixes
  // digits, [3, 4] -> [4, 3]).
  bool refine() {
    for (bool changed = true; changed;) {
      changed = false;
      for (const Equal& e : equal) {
        for (const auto& [from, at_from, to, at_to] :
             {std::tuple{e.a, e.at_a, e.b, e.at_b}, std::tuple{e.b, e.at_b, e.a, e.at_a}}) {
          const int64_t end = saturating_mul(at_from, e.extent);
          std::vector<int64_t> add;
          for (auto c = cuts[from].upper_bound(at_from); c != cuts[from].end() && *c < end; ++c) {
            if (*c % at_from != 0) return false;
            add.push_back(saturating_mul(at_to, *c / at_from));
          }
          for (const int64_t c : add) changed |= cuts[to].insert(c).second;
        }
      }
    }
    for (const std::set<int64_t>& c : cuts) {
      for (auto x = c.begin(), y = std::next(c.begin()); y != c.end(); ++x, ++y) {
        if (*y % *x != 0) return false;
      }
    }
    return true;
  }
};

struct ChainNetwork {
  TensorNetwork net;
  ContractionOrder program;
  std::vector<std::pair<std::string, int64_t>> indices;
};

std::string letter(int l) {
  if (l < 26) return std::string(1, static_cast<char>('a' + l));
  if (l < 52) return std::string(1, static_cast<char>('A' + l - 26));
  return "";
}

constexpr int kMaxLetters = 52;

std::string letters(const std::vector<int>& labels) {
  std::string s;
  for (const int l : labels) s += letter(l);
  return s;
}

// The tensor network of the chain `members` (node indices, program order; `linked`: the
// intermediates that join them, with their producers) and its order as the program computes
// it; nullopt (with `why`) when its indices do not line up.
std::optional<ChainNetwork> chain_network(const einsum::Graph& g,
                                          const std::vector<size_t>& members,
                                          const std::map<size_t, Member>& info,
                                          const std::map<std::string, size_t>& linked,
                                          std::string& why) {
  Spaces sp;
  std::map<size_t, int> points;                      // member -> its points' space
  std::map<std::string, int> tensor_of;              // linked intermediate -> its space
  std::map<std::pair<size_t, size_t>, int> leaf_of;  // (member, read) -> its leaf's space
  std::set<size_t> in_chain(members.begin(), members.end());
  const auto is_linked = [&](const std::string& t) {
    const auto p = linked.find(t);
    return p != linked.end() && in_chain.count(p->second);
  };
  size_t root = members.back();
  int root_space = -1;
  for (const size_t m : members) {
    const Member& mi = info.at(m);
    points[m] = sp.add(mi.points);
    const auto relate = [&](const DigitMap& dm, int space) {
      for (const Digit& d : dm.digits) {
        if (d.coeff > 0) sp.relate(points[m], d.point, space, d.coeff, d.extent);
      }
    };
    const einsum::Node& n = g.nodes[m];
    for (size_t r = 0; r < mi.reads.size(); ++r) {
      const std::string& t = n.reads[r].tensor;
      if (is_linked(t)) {
        if (!mi.reads[r].whole || !tensor_of.count(t)) {
          why = "'" + t + "' is not read whole by '" + n.name + "'";
          return std::nullopt;
        }
        relate(*mi.reads[r].whole, tensor_of.at(t));
        continue;
      }
      const int s = leaf_of[{m, r}] = sp.add(mi.reads[r].window->size);
      relate(*mi.reads[r].window, s);
    }
    const std::string& t = n.writes.front().tensor;
    if (is_linked(t)) {
      if (!mi.write.whole) {
        why = "'" + n.name + "' does not write all of '" + t + "'";
        return std::nullopt;
      }
      relate(*mi.write.whole, tensor_of[t] = sp.add(numel_of(g, t)));
    } else {
      root = m;
      root_space = sp.add(mi.write.window->size);
      relate(*mi.write.window, root_space);
    }
  }
  if (!sp.refine()) {
    why = "a reshape between its nodes mixes the digits of an index";
    return std::nullopt;
  }
  // Atoms: the pieces between consecutive cuts, joined by the equalities.
  std::map<std::pair<int, int64_t>, int> atom;
  std::vector<int64_t> atom_extent;
  for (size_t s = 0; s < sp.size.size(); ++s) {
    for (auto c = sp.cuts[s].begin(), d = std::next(c); d != sp.cuts[s].end(); ++c, ++d) {
      atom[{static_cast<int>(s), *c}] = static_cast<int>(atom_extent.size());
      atom_extent.push_back(*d / *c);
    }
  }
  std::vector<int> parent(atom_extent.size());
  std::iota(parent.begin(), parent.end(), 0);
  for (const Spaces::Equal& e : sp.equal) {
    const int64_t end = saturating_mul(e.at_a, e.extent);
    for (auto c = sp.cuts[e.a].find(e.at_a); c != sp.cuts[e.a].end() && *c < end; ++c) {
      const auto other = atom.find({e.b, saturating_mul(e.at_b, *c / e.at_a)});
      SOLAR_CHECK(other != atom.end(), "insights: a cut was not spread");
      parent[find_root(parent, atom.at({e.a, *c}))] = find_root(parent, other->second);
    }
  }
  // The indices of a space, outermost first; of a stretch of one (a loop of a node).
  const auto indices_of = [&](int s, int64_t lo, int64_t hi) {
    std::vector<int> out;
    for (auto c = sp.cuts[s].lower_bound(lo); c != sp.cuts[s].end() && *c < hi; ++c) {
      out.insert(out.begin(), find_root(parent, atom.at({s, *c})));
    }
    return out;
  };
  const auto space_indices = [&](int s) { return indices_of(s, 1, sp.size[s]); };
  // Number the indices: the chain's output first, then the leaves' in order of first read.
  ChainNetwork cn;
  std::map<int, int> label;
  const auto number = [&](const std::vector<int>& classes) {
    std::vector<int> out;
    for (const int c : classes) {
      const auto [it, inserted] = label.emplace(c, static_cast<int>(cn.net.extents.size()));
      if (inserted) cn.net.extents.push_back(atom_extent[static_cast<size_t>(c)]);
      out.push_back(it->second);
    }
    return out;
  };
  cn.net.output = number(space_indices(root_space));
  for (const size_t m : members) {
    for (size_t r = 0; r < info.at(m).reads.size(); ++r) {
      const auto leaf = leaf_of.find({m, r});
      if (leaf == leaf_of.end()) continue;
      cn.net.names.push_back(g.nodes[m].reads[r].tensor);
      cn.net.labels.push_back(number(space_indices(leaf->second)));
    }
  }
  // An index no operand carries (a broadcast summed or kept alone) is not a tensor network.
  const size_t carried = cn.net.extents.size();
  for (const size_t m : members) {
    for (const int c : space_indices(points.at(m))) {
      if (!label.count(c) || static_cast<size_t>(label.at(c)) >= carried) {
        why = "'" + g.nodes[m].name + "' has an index no operand carries (a broadcast)";
        return std::nullopt;
      }
    }
  }
  if (cn.net.names.size() > kMaxChainOperands || cn.net.extents.size() > kMaxLabels) {
    why = std::to_string(cn.net.names.size()) + " operands and " +
          std::to_string(cn.net.extents.size()) + " indices: more than the search handles (" +
          std::to_string(kMaxChainOperands) + " operands, " + std::to_string(kMaxLabels) +
          " indices)";
    return std::nullopt;
  }
  const bool lettered = cn.net.extents.size() <= kMaxLetters;
  if (lettered) {
    for (size_t l = 0; l < cn.net.extents.size(); ++l) {
      cn.indices.emplace_back(letter(static_cast<int>(l)), cn.net.extents[l]);
    }
  }
  // The program's order: a contraction nests its two operands; a relabeling passes its one on.
  std::map<size_t, std::string> text;
  for (const size_t m : members) {
    const einsum::Node& n = g.nodes[m];
    std::vector<std::string> parts;
    std::vector<std::string> operand_letters;
    for (size_t r = 0; r < n.reads.size(); ++r) {
      const std::string& t = n.reads[r].tensor;
      const bool inner = is_linked(t);
      parts.push_back(inner ? text.at(linked.at(t)) : t);
      const int s = inner ? tensor_of.at(t) : leaf_of.at({m, r});
      operand_letters.push_back(letters(number(space_indices(s))));
    }
    text[m] = info.at(m).contraction ? "(" + parts[0] + " " + parts[1] + ")" : parts[0];
    if (!info.at(m).contraction) continue;
    cn.program.macs = saturating_add(cn.program.macs, n.counts.macs);
    const std::string& t = n.writes.front().tensor;
    const std::string out =
        letters(number(space_indices(is_linked(t) ? tensor_of.at(t) : root_space)));
    if (lettered) {
      cn.program.steps.push_back(operand_letters[0] + "," + operand_letters[1] + "->" + out);
    }
  }
  cn.program.text = text.at(root);
  return cn;
}

void find_chains(const einsum::Graph& g, const Analysis& a, Insights& out) {
  std::map<size_t, Member> info;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (std::optional<Member> m = chain_member(g, g.nodes[i])) info[i] = std::move(*m);
  }
  // Who writes and reads each tensor (maps counted), over the whole graph.
  std::map<std::string, std::vector<size_t>> writers;
  std::map<std::string, int> reads;
  std::map<std::string, size_t> reader;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    for (const einsum::Access& acc : g.nodes[i].writes) writers[acc.tensor].push_back(i);
    for (const einsum::Access& acc : g.nodes[i].reads) {
      reads[acc.tensor] += static_cast<int>(acc.maps.size());
      reader[acc.tensor] = i;
    }
  }
  // Link a member to the later member that alone reads its intermediate output, whole.
  std::vector<int> parent(g.nodes.size());
  std::iota(parent.begin(), parent.end(), 0);
  std::map<std::string, size_t> linked;  // intermediate -> its producer
  for (const auto& [p, m] : info) {
    const std::string& t = g.nodes[p].writes.front().tensor;
    const einsum::TensorInfo* ti = g.find_tensor(t);
    if (!ti || ti->role != ir::TensorRole::Intermediate || !m.write.whole) continue;
    if (writers[t].size() != 1 || reads[t] != 1) continue;
    const auto consumer = info.find(reader[t]);
    if (consumer == info.end() || consumer->first <= p) continue;
    linked[t] = p;
    parent[find_root(parent, static_cast<int>(p))] =
        find_root(parent, static_cast<int>(consumer->first));
  }
  std::map<int, std::vector<size_t>> components;
  for (const auto& [i, m] : info) components[find_root(parent, static_cast<int>(i))].push_back(i);
  std::vector<std::vector<size_t>> chains;
  for (auto& [root, members] : components) {
    const auto contractions = std::count_if(members.begin(), members.end(),
                                            [&](size_t m) { return info.at(m).contraction; });
    if (contractions >= 2) chains.push_back(std::move(members));
  }
  std::sort(chains.begin(), chains.end());  // program order of their first node
  const auto fused = std::find_if(a.results.begin(), a.results.end(), [](const FidelityResult& r) {
    return r.fidelity == Fidelity::Fused;
  });
  for (const std::vector<size_t>& members : chains) {
    std::vector<std::string> names, via;
    double compute_s = 0, rate = 0;
    for (const size_t m : members) {
      if (!info.at(m).contraction) {
        via.push_back(g.nodes[m].name);
        continue;
      }
      names.push_back(g.nodes[m].name);
      compute_s += a.nodes[m].compute_s;
      if (a.nodes[m].mac_rate) rate = std::max(rate, a.nodes[m].mac_rate->flops_per_s);
    }
    std::string why;
    std::optional<ChainNetwork> cn = chain_network(g, members, info, linked, why);
    if (!cn) {
      std::string list;
      for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
      out.notes.push_back("contraction chain " + list + " not reordered: " + why);
      continue;
    }
    ContractionChain chain{names, cn->net.names, cn->program, optimal_order(cn->net),
                           via,   cn->indices};
    // The program's order is one of those searched, so best <= program; keep the program's
    // order when it is as cheap.
    if (chain.best.macs >= chain.program.macs) chain.best = chain.program;
    if (chain.best.macs < chain.program.macs && rate > 0) {
      chain.compute_s_saved =
          std::max(0.0, compute_s - 2 * static_cast<double>(chain.best.macs) / rate);
    }
    if (fused != a.results.end()) {
      chain.fused_s = std::max(fused->compute_s - chain.compute_s_saved, fused->memory_s);
    }
    out.chains.push_back(std::move(chain));
  }
}

// Intermediates that cross framework operations (inside one, the unfused model already keeps
// them on chip: fusing there saves nothing), named by those operations (an op block's name, or a
// node outside any block, which is its own operation). A relabelling node (Node::relabel: a view
// in the framework, no kernel, no bytes in the unfused model) is no producer nor consumer: the
// tensor it writes is the one it reads, under another name, so the saving counts the bytes the
// unfused model charges, and an intermediate relabelled into a graph output is no opportunity
// (it must reach DRAM).
void find_fusions(const einsum::Graph& g, const Analysis& a, Insights& out) {
  std::vector<size_t> unit_of(g.nodes.size());
  std::iota(unit_of.begin(), unit_of.end(), g.nodes.size());  // a node in no op: its own
  std::vector<std::string> op_of(g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i) op_of[i] = g.nodes[i].name;
  for (size_t u = 0; u < a.ops.size(); ++u) {
    for (size_t i = a.ops[u].first; i < a.ops[u].last; ++i) {
      unit_of[i] = u;
      op_of[i] = a.ops[u].name;
    }
  }
  // The tensor a name stands for, through relabellings.
  std::map<std::string_view, std::string_view> base;
  const auto resolve = [&](std::string_view name) {
    for (auto it = base.find(name); it != base.end(); it = base.find(name)) name = it->second;
    return name;
  };
  for (const einsum::Node& n : g.nodes) {
    if (!n.relabel || n.reads.empty()) continue;
    for (const einsum::Access& w : n.writes) base[w.tensor] = resolve(n.reads.front().tensor);
  }
  std::set<std::string_view> kept;  // relabelled into a graph input or output
  for (const einsum::TensorInfo& t : g.tensors) {
    if (t.role != ir::TensorRole::Intermediate && base.contains(t.name)) {
      kept.insert(resolve(t.name));
    }
  }
  // Per tensor, its accesses in node order (a node's writes before its reads): one pass over the
  // nodes instead of one per tensor.
  struct Event {
    size_t node = 0;
    const einsum::Access* access = nullptr;
    bool write = false;
  };
  std::map<std::string_view, std::vector<Event>> events;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const einsum::Node& n = g.nodes[i];
    if (n.relabel) continue;
    for (const einsum::Access& w : n.writes) events[resolve(w.tensor)].push_back({i, &w, true});
    for (const einsum::Access& r : n.reads) events[resolve(r.tensor)].push_back({i, &r, false});
  }
  for (const einsum::TensorInfo& t : g.tensors) {
    if (t.role != ir::TensorRole::Intermediate || base.contains(t.name) || kept.contains(t.name)) {
      continue;
    }
    FusionOpportunity f;
    f.tensor = t.name;
    int producers = 0;
    std::set<size_t> units;
    std::set<size_t> producing;  // the producer's operation: it reads the tensor on chip
    std::map<size_t, int64_t> read_by_unit;
    const auto found = events.find(t.name);
    for (const Event& e : found == events.end() ? std::vector<Event>{} : found->second) {
      if (e.write) {
        ++producers;
        f.producer = op_of[e.node];
        f.bytes_saved += e.access->bytes;
        units.insert(unit_of[e.node]);
        producing.insert(unit_of[e.node]);
        continue;
      }
      const size_t unit = unit_of[e.node];
      // Each consumer operation once; the producer's own is none.
      if (!units.contains(unit)) f.consumers.push_back(op_of[e.node]);
      int64_t& read = read_by_unit[unit];  // an op reads it once: its widest read
      read = std::max(read, e.access->bytes);
      units.insert(unit_of[e.node]);
    }
    // A read inside the producer's operation comes from chip in the unfused model already:
    // fusing saves the write and each consumer operation's read, never that one.
    for (const auto& [unit, bytes] : read_by_unit) {
      if (!producing.contains(unit)) f.bytes_saved += bytes;
    }
    // An intermediate of no bytes (a zero-size dimension) saves nothing: no opportunity.
    if (producers != 1 || f.consumers.empty() || units.size() < 2 || f.bytes_saved == 0) continue;
    f.memory_s_saved = static_cast<double>(f.bytes_saved) / a.dram_bandwidth_bytes_per_s;
    out.fusions.push_back(std::move(f));
  }
  std::stable_sort(out.fusions.begin(), out.fusions.end(),
                   [](const FusionOpportunity& x, const FusionOpportunity& y) {
                     return x.bytes_saved > y.bytes_saved;
                   });
}

}  // namespace

ContractionOrder optimal_order(const TensorNetwork& net) {
  const size_t n = net.names.size();
  SOLAR_CHECK(n >= 2 && n <= kMaxChainOperands && net.labels.size() == n,
              "optimal_order needs 2 to 12 operands");
  SOLAR_CHECK(net.extents.size() <= kMaxLabels, "optimal_order: too many indices");
  const uint32_t full = (1u << n) - 1;
  std::vector<LabelSet> own(n);
  for (size_t k = 0; k < n; ++k) {
    for (const int l : net.labels[k]) own[k].set(static_cast<size_t>(l));
  }
  LabelSet output;
  for (const int l : net.output) output.set(static_cast<size_t>(l));
  std::vector<LabelSet> all(full + 1);
  for (uint32_t m = 1; m <= full; ++m) {
    const int low = __builtin_ctz(m);
    all[m] = all[m & (m - 1)] | own[static_cast<size_t>(low)];
  }
  // The indices of the partial result of the operands in `m`: an operand alone keeps all its
  // own; a result keeps those an operand outside it, or the output, still needs.
  const auto kept = [&](uint32_t m) {
    if ((m & (m - 1)) == 0) return own[static_cast<size_t>(__builtin_ctz(m))];
    return all[m] & (all[full ^ m] | output);
  };
  std::vector<int64_t> cost(full + 1, 0);
  std::vector<uint32_t> split(full + 1, 0);
  for (uint32_t m = 1; m <= full; ++m) {
    if ((m & (m - 1)) == 0) continue;
    const uint32_t low = m & (~m + 1);
    int64_t best = kSaturated;
    uint32_t best_sub = 0;
    for (uint32_t sub = (m - 1) & m; sub; sub = (sub - 1) & m) {
      if (!(sub & low)) continue;
      const uint32_t rest = m ^ sub;
      const int64_t c = saturating_add(saturating_add(cost[sub], cost[rest]),
                                       product(kept(sub) | kept(rest), net.extents));
      if (best_sub == 0 || c < best) {
        best = c;
        best_sub = sub;
      }
    }
    cost[m] = best;
    split[m] = best_sub;
  }
  const bool lettered = net.extents.size() <= kMaxLetters;
  const auto indices = [&](uint32_t m) -> std::vector<int> {
    if ((m & (m - 1)) == 0) return net.labels[static_cast<size_t>(__builtin_ctz(m))];
    if (m == full) return net.output;
    std::vector<int> out;
    const LabelSet k = kept(m);
    for (size_t l = 0; l < net.extents.size(); ++l) {
      if (k.test(l)) out.push_back(static_cast<int>(l));
    }
    return out;
  };
  std::vector<std::string> steps;
  const auto text = [&](const auto& self, uint32_t m) -> std::string {
    if ((m & (m - 1)) == 0) return net.names[static_cast<size_t>(__builtin_ctz(m))];
    const std::string t = "(" + self(self, split[m]) + " " + self(self, m ^ split[m]) + ")";
    if (lettered) {
      steps.push_back(letters(indices(split[m])) + "," + letters(indices(m ^ split[m])) + "->" +
                      letters(indices(m)));
    }
    return t;
  };
  std::string t = text(text, full);
  return {cost[full], std::move(t), std::move(steps)};
}

Insights find_insights(const einsum::Graph& g, const Analysis& a) {
  SOLAR_CHECK(a.nodes.size() == g.nodes.size(), "insights: the analysis is not of this graph");
  Insights out;
  find_chains(g, a, out);
  find_fusions(g, a, out);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const NodeCost& c = a.nodes[i];
    const Rate* rate = c.main_rate();
    out.bottlenecks.push_back(
        {g.nodes[i].name, c.bottleneck,
         c.bytes > 0 ? static_cast<double>(g.nodes[i].counts.flops()) / static_cast<double>(c.bytes)
                     : 0.0,
         rate ? rate->flops_per_s / a.dram_bandwidth_bytes_per_s : 0.0});
  }
  return out;
}

}  // namespace solar::sol
