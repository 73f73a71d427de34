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

// One access of a pure contraction: a tensor indexed by one loop variable per dimension.
struct Operand {
  std::string tensor;
  std::vector<std::string> vars;  // per dimension
  const einsum::AccessMap* map = nullptr;
};

struct Contraction {
  std::vector<Operand> inputs;  // the two product operands, in the order read
  Operand output;
  std::map<std::string, int64_t> extent;  // per loop variable
};

// The loop variable of `f` when f is exactly one variable (coefficient 1, no constant).
std::optional<std::string> single_var(const ir::AffineForm& f) {
  if (f.constant != 0 || f.coeffs.size() != 1 || f.coeffs.begin()->second != 1) return {};
  return f.coeffs.begin()->first;
}

std::optional<Operand> operand_of(const einsum::Access& a) {
  if (a.maps.size() != 1) return {};
  const einsum::AccessMap& m = a.maps.front();
  if (m.guarded || m.data_dependent) return {};
  Operand o{a.tensor, {}, &m};
  for (const ir::AffineForm& f : m.index) {
    const std::optional<std::string> v = single_var(f);
    if (!v) return {};
    o.vars.push_back(*v);
  }
  return o;
}

// A node whose body is one product of two operands under a sum, over a box domain starting at
// zero, every index a plain loop variable; nullopt for anything else.
std::optional<Contraction> as_contraction(const einsum::Node& n) {
  if (n.kind != einsum::NodeKind::Einsum || n.reduction != einsum::Reduction::Sum) return {};
  if (n.counts.macs == 0 || n.counts.macs != n.points || n.counts.other_ops() != 0) return {};
  if (n.writes.size() != 1) return {};
  Contraction c;
  for (const ir::AffineLoop& l : n.domain) {
    if (!l.lo.coeffs.empty() || !l.hi.coeffs.empty() || l.lo.constant != 0) return {};
    c.extent[l.var] = l.hi.constant;
  }
  for (const einsum::Access& a : n.reads) {
    std::optional<Operand> o = operand_of(a);
    if (!o) return {};
    c.inputs.push_back(std::move(*o));
  }
  std::optional<Operand> out = operand_of(n.writes.front());
  if (c.inputs.size() != 2 || !out) return {};
  c.output = std::move(*out);
  return c;
}

bool same_layout(const einsum::AccessMap& a, const einsum::AccessMap& b) {
  return a.offset == b.offset && a.strides == b.strides && a.extent == b.extent;
}

int find_root(std::vector<int>& parent, int x) {
  while (parent[x] != x) x = parent[x] = parent[parent[x]];
  return x;
}

// Builds the tensor network of the chain `members` (node indices, program order) and its order
// as the program computes it; nullopt (with `why`) when its indices do not line up.
struct ChainNetwork {
  TensorNetwork net;
  ContractionOrder program;
};

std::optional<ChainNetwork> chain_network(const einsum::Graph& g,
                                          const std::vector<size_t>& members,
                                          const std::map<size_t, Contraction>& contractions,
                                          const std::map<std::string, size_t>& linked_producer,
                                          std::string& why) {
  ChainNetwork cn;
  std::map<size_t, std::vector<int>> out_labels;  // per member node
  std::map<size_t, std::string> text;             // the program's order, per member node
  std::map<std::string, size_t> member_of;
  for (const size_t m : members) member_of[g.nodes[m].name] = m;
  size_t root = members.back();
  for (const size_t m : members) {
    const Contraction& c = contractions.at(m);
    std::map<std::string, int> label;  // loop variable -> label
    const auto bind = [&](const std::string& var, int l) {
      const auto [it, inserted] = label.emplace(var, l);
      return inserted || it->second == l;
    };
    const auto producer_of = [&](const Operand& o) -> std::optional<size_t> {
      const auto p = linked_producer.find(o.tensor);
      if (p == linked_producer.end() || !member_of.count(g.nodes[p->second].name)) return {};
      return p->second;
    };
    // The indices of intermediates from the chain first: they name the loops they share.
    for (const Operand& o : c.inputs) {
      const std::optional<size_t> p = producer_of(o);
      if (!p) continue;
      const std::vector<int>& from = out_labels.at(*p);
      for (size_t d = 0; d < o.vars.size(); ++d) {
        if (cn.net.extents[from[d]] != c.extent.at(o.vars[d]) || !bind(o.vars[d], from[d])) {
          why = "the indices of '" + o.tensor + "' do not line up between its producer and '" +
                g.nodes[m].name + "'";
          return std::nullopt;
        }
      }
    }
    std::string parts;
    for (const Operand& o : c.inputs) {
      if (const std::optional<size_t> p = producer_of(o)) {
        parts += (parts.empty() ? "" : " ") + text.at(*p);
        continue;
      }
      std::vector<int> labels;
      for (const std::string& v : o.vars) {
        if (!label.count(v)) {
          label[v] = static_cast<int>(cn.net.extents.size());
          cn.net.extents.push_back(c.extent.at(v));
        }
        labels.push_back(label.at(v));
      }
      cn.net.names.push_back(o.tensor);
      cn.net.labels.push_back(std::move(labels));
      parts += (parts.empty() ? "" : " ") + o.tensor;
    }
    std::vector<int> out;
    for (const std::string& v : c.output.vars) {
      if (!label.count(v)) {
        label[v] = static_cast<int>(cn.net.extents.size());
        cn.net.extents.push_back(c.extent.at(v));
      }
      out.push_back(label.at(v));
    }
    out_labels[m] = std::move(out);
    text[m] = "(" + parts + ")";
    cn.program.macs = saturating_add(cn.program.macs, g.nodes[m].counts.macs);
    // The root: the member whose output no other member reads.
    if (!linked_producer.count(c.output.tensor)) root = m;
  }
  cn.net.output = out_labels.at(root);
  cn.program.text = text.at(root);
  if (cn.net.names.size() > kMaxChainOperands || cn.net.extents.size() > kMaxLabels) {
    why = std::to_string(cn.net.names.size()) + " operands and " +
          std::to_string(cn.net.extents.size()) + " indices: more than the search handles (" +
          std::to_string(kMaxChainOperands) + " operands, " + std::to_string(kMaxLabels) +
          " indices)";
    return std::nullopt;
  }
  return cn;
}

void find_chains(const einsum::Graph& g, Insights& out) {
  std::map<size_t, Contraction> contractions;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (std::optional<Contraction> c = as_contraction(g.nodes[i])) contractions[i] = *c;
  }
  // Who writes and reads each tensor (maps counted), over the whole graph.
  std::map<std::string, std::vector<size_t>> writers;
  std::map<std::string, int> reads;
  std::map<std::string, size_t> reader;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    for (const einsum::Access& a : g.nodes[i].writes) writers[a.tensor].push_back(i);
    for (const einsum::Access& a : g.nodes[i].reads) {
      reads[a.tensor] += static_cast<int>(a.maps.size());
      reader[a.tensor] = i;
    }
  }
  // Link a contraction to the contraction that alone reads its intermediate output, in the same
  // layout.
  std::vector<int> parent(g.nodes.size());
  std::iota(parent.begin(), parent.end(), 0);
  std::map<std::string_view, const einsum::TensorInfo*> infos;  // by name, as find_tensor
  for (const einsum::TensorInfo& t : g.tensors) infos.emplace(t.name, &t);
  std::map<std::string, size_t> linked_producer;  // intermediate -> its producer
  for (const auto& [p, c] : contractions) {
    const std::string& t = c.output.tensor;
    const auto info_it = infos.find(t);
    const einsum::TensorInfo* info = info_it == infos.end() ? nullptr : info_it->second;
    if (!info || info->role != ir::TensorRole::Intermediate) continue;
    if (writers[t].size() != 1 || reads[t] != 1) continue;
    const auto consumer = contractions.find(reader[t]);
    if (consumer == contractions.end() || consumer->first <= p) continue;
    const auto& ins = consumer->second.inputs;
    const auto operand =
        std::find_if(ins.begin(), ins.end(), [&](const Operand& o) { return o.tensor == t; });
    if (operand == ins.end() || !same_layout(*operand->map, *c.output.map)) continue;
    linked_producer[t] = p;
    parent[find_root(parent, static_cast<int>(p))] =
        find_root(parent, static_cast<int>(consumer->first));
  }
  std::map<int, std::vector<size_t>> components;
  for (const auto& [i, c] : contractions) {
    components[find_root(parent, static_cast<int>(i))].push_back(i);
  }
  std::vector<std::vector<size_t>> chains;
  for (auto& [root, members] : components) {
    if (members.size() >= 2) chains.push_back(std::move(members));
  }
  std::sort(chains.begin(), chains.end());  // program order of their first node
  for (const std::vector<size_t>& members : chains) {
    std::string why;
    std::optional<ChainNetwork> cn = chain_network(g, members, contractions, linked_producer, why);
    std::vector<std::string> names;
    for (const size_t m : members) names.push_back(g.nodes[m].name);
    if (!cn) {
      std::string list;
      for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
      out.notes.push_back("contraction chain " + list + " not reordered: " + why);
      continue;
    }
    ContractionChain chain{names, cn->net.names, cn->program, optimal_order(cn->net)};
    // The program's order is one of those searched, so best <= program; keep the program's
    // text when it is as cheap.
    if (chain.best.macs >= chain.program.macs) chain.best = chain.program;
    out.chains.push_back(std::move(chain));
  }
}

// Intermediates that cross framework operations (inside one, the unfused model already keeps
// them on chip: fusing there saves nothing).
void find_fusions(const einsum::Graph& g, const Analysis& a, Insights& out) {
  std::vector<size_t> unit_of(g.nodes.size());
  std::iota(unit_of.begin(), unit_of.end(), g.nodes.size());  // a node in no op: its own
  for (size_t u = 0; u < a.ops.size(); ++u) {
    for (size_t i = a.ops[u].first; i < a.ops[u].last; ++i) unit_of[i] = u;
  }
  // Per tensor name, its accesses in node order (a node's writes before its reads): one pass over
  // the nodes instead of one per tensor.
  struct Event {
    size_t node = 0;
    const einsum::Access* access = nullptr;
    bool write = false;
  };
  std::map<std::string_view, std::vector<Event>> events;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const einsum::Node& n = g.nodes[i];
    for (const einsum::Access& w : n.writes) events[w.tensor].push_back({i, &w, true});
    for (const einsum::Access& r : n.reads) events[r.tensor].push_back({i, &r, false});
  }
  for (const einsum::TensorInfo& t : g.tensors) {
    if (t.role != ir::TensorRole::Intermediate) continue;
    FusionOpportunity f;
    f.tensor = t.name;
    int producers = 0;
    std::set<size_t> units;
    std::map<size_t, int64_t> read_by_unit;
    const auto found = events.find(t.name);
    for (const Event& e : found == events.end() ? std::vector<Event>{} : found->second) {
      const einsum::Node& n = g.nodes[e.node];
      if (e.write) {
        ++producers;
        f.producer = n.name;
        f.bytes_saved += e.access->bytes;
        units.insert(unit_of[e.node]);
        continue;
      }
      f.consumers.push_back(n.name);
      int64_t& read = read_by_unit[unit_of[e.node]];  // an op reads it once: its widest read
      read = std::max(read, e.access->bytes);
      units.insert(unit_of[e.node]);
    }
    for (const auto& [unit, bytes] : read_by_unit) f.bytes_saved += bytes;
    if (producers != 1 || f.consumers.empty() || units.size() < 2) continue;
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
  const auto text = [&](const auto& self, uint32_t m) -> std::string {
    if ((m & (m - 1)) == 0) return net.names[static_cast<size_t>(__builtin_ctz(m))];
    return "(" + self(self, split[m]) + " " + self(self, m ^ split[m]) + ")";
  };
  return {cost[full], text(text, full)};
}

Insights find_insights(const einsum::Graph& g, const Analysis& a) {
  SOLAR_CHECK(a.nodes.size() == g.nodes.size(), "insights: the analysis is not of this graph");
  Insights out;
  find_chains(g, out);
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
