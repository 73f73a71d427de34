// The steps of a scan as one node (collapse_scans in lift_internal.h; docs/einsum.md, "Scans").
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "lift_internal.h"
#include "solar/einsum/translation.h"

namespace solar::einsum::detail {
namespace {

// The text of a map of `tensor` with index `f`: "y[i, t - 1]".
std::string plain_text(const std::string& tensor, const std::vector<ir::AffineForm>& f,
                       const ir::AffineDomain& domain) {
  std::string s = tensor + "[";
  for (size_t d = 0; d < f.size(); ++d) s += (d ? ", " : "") + form_text(f[d], domain);
  return s + "]";
}

// A node that may be a step of a scan: an elementwise kernel of an op block writing one
// tensor through one map, every map affine with its text the tensor's name and its indices.
bool scan_step(const Node& n) {
  if (n.kind != NodeKind::Einsum || n.op != "kernel" || n.op_block.empty() || n.relabel ||
      n.reduction != Reduction::None || n.counts.macs != 0 || n.writes.size() != 1 ||
      n.writes[0].maps.size() != 1) {
    return false;
  }
  for (const auto* list : {&n.reads, &n.writes}) {
    for (const Access& a : *list) {
      for (const AccessMap& m : a.maps) {
        if (m.data_dependent || m.text != plain_text(a.tensor, m.index, n.domain)) return false;
      }
    }
  }
  return true;
}

// The reads of n that are not of the tensor it writes, then its write: the maps that move
// with the step.
std::vector<const AccessMap*> moving_maps(const Node& n) {
  std::vector<const AccessMap*> maps;
  for (const Access& a : n.reads) {
    if (a.tensor == n.writes[0].tensor) continue;
    for (const AccessMap& m : a.maps) maps.push_back(&m);
  }
  maps.push_back(&n.writes[0].maps[0]);
  return maps;
}

// The repeat binding a node's name ends with: "k[t=0,u=3]" is ("k[t=0,u=", 3); nullopt for a
// name with no repeat suffix.
std::optional<std::pair<std::string, int64_t>> last_binding(const std::string& name) {
  const size_t eq = name.rfind('=');
  const size_t open = name.find('[');
  if (name.empty() || name.back() != ']' || eq == std::string::npos || open == std::string::npos ||
      eq < open) {
    return std::nullopt;
  }
  const std::string value = name.substr(eq + 1, name.size() - eq - 2);
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (ec != std::errc() || end != value.data() + value.size()) return std::nullopt;
  return std::make_pair(name.substr(0, eq + 1), v);
}

// How every index constant of a's moving maps moves to b's (map_shift; nullopt: b is not a
// moved a). b must be the next iteration of a's statement: its name a's with the last repeat
// index one more (the same kernel, the other repeat indices the same).
std::optional<std::vector<int64_t>> step_delta(const Node& a, const Node& b) {
  const auto x_at = last_binding(a.name);
  const auto y_at = last_binding(b.name);
  if (!x_at || !y_at || x_at->first != y_at->first || y_at->second != x_at->second + 1) {
    return std::nullopt;
  }
  if (!scan_step(b) || b.op_block != a.op_block || b.einsum.empty() || a.points != b.points ||
      a.counts.simple != b.counts.simple || a.counts.special != b.counts.special ||
      a.reads.size() != b.reads.size() || a.writes[0].tensor != b.writes[0].tensor) {
    return std::nullopt;
  }
  if (!same_domain(a.domain, b.domain)) return std::nullopt;
  const std::vector<const AccessMap*> x = moving_maps(a), y = moving_maps(b);
  if (x.size() != y.size()) return std::nullopt;
  std::vector<int64_t> delta;
  bool moves = false;
  for (size_t k = 0; k < x.size(); ++k) {
    const AccessMap& p = *x[k];
    const AccessMap& q = *y[k];
    // each map of the same tensor (its text's name) at the same offset, only its index moved
    // (no map of a scan step is data-dependent: scan_step)
    const std::optional<MapShift> shift = map_shift(p, q);
    if (!shift || shift->offset != 0 ||
        p.text.substr(0, p.text.find('[')) != q.text.substr(0, q.text.find('['))) {
      return std::nullopt;
    }
    delta.insert(delta.end(), shift->index.begin(), shift->index.end());
    moves = moves || (k + 1 == x.size() && shift->moves());  // the write moves
  }
  if (!moves) return std::nullopt;
  return delta;
}

// Whether b, a moved a, reads what it writes only where a wrote (the carry).
bool carries(const Node& a, const Node& b) {
  const std::string& y = b.writes[0].tensor;
  for (const Access& r : b.reads) {
    if (r.tensor != y) continue;
    const AccessMap& w = a.writes[0].maps[0];
    if (r.maps.size() != 1 || r.maps[0].index != w.index || r.maps[0].offset != w.offset ||
        r.maps[0].strides != w.strides || r.maps[0].guarded != w.guarded) {
      return false;
    }
  }
  return true;
}

// `text` with every whole occurrence of each map text replaced (not inside a longer name).
std::string replace_maps(const std::string& text,
                         const std::vector<std::pair<std::string, std::string>>& maps) {
  std::string out;
  for (size_t i = 0; i < text.size();) {
    const bool boundary = i == 0 || !(std::isalnum(static_cast<unsigned char>(text[i - 1])) ||
                                      text[i - 1] == '_' || text[i - 1] == '.');
    bool done = false;
    for (const auto& [from, to] : maps) {
      if (boundary && text.compare(i, from.size(), from) == 0) {
        out += to;
        i += from.size();
        done = true;
        break;
      }
    }
    if (!done) out += text[i++];
  }
  return out;
}

// The nodes [first, last) as one node (nullopt: their writes overlap, or their text is not
// the form collapse_scans rewrites).
std::optional<Node> scan_node(const std::vector<Node>& nodes, const Tensors& tensors, size_t first,
                              size_t last, const std::vector<int64_t>& delta) {
  const Node& a = nodes[first];
  const auto steps = static_cast<int64_t>(last - first);
  // the step loop: the repeat index of the first node's name ("name[t=1]"), from its value
  const auto binding = last_binding(a.name);
  if (!binding) return std::nullopt;
  const std::string& prefix = binding->first;  // "k[t=0,u="
  const size_t sep = prefix.find_last_of(",[", prefix.size() - 2);
  std::string var = prefix.substr(sep + 1, prefix.size() - sep - 2);
  const int64_t lo = binding->second;
  const auto taken = [&](const std::string& v) {
    return std::any_of(a.domain.begin(), a.domain.end(),
                       [&](const ir::AffineLoop& l) { return l.var == v; });
  };
  while (taken(var)) var += "_";
  ir::AffineDomain domain;
  domain.push_back({var, ir::AffineForm{lo, {}}, ir::AffineForm{lo + steps, {}}});
  domain.insert(domain.end(), a.domain.begin(), a.domain.end());
  const std::string& y = a.writes[0].tensor;
  // a map of the first step moved by `delta` (from position k of it) per step of the new loop
  size_t at = 0;
  const auto moved = [&](const AccessMap& m) {
    AccessMap r = m;
    r.domain = domain;
    for (ir::AffineForm& f : r.index) {
      const int64_t dk = delta.at(at++);
      if (dk == 0) continue;
      f.constant -= dk * lo;
      f.coeffs[var] = dk;
    }
    r.text = plain_text(r.text.substr(0, r.text.find('[')), r.index, domain);
    return r;
  };
  std::vector<std::pair<std::string, std::string>> texts;  // first step's map text -> new
  std::vector<std::pair<std::string, AccessMap>> reads;
  for (const Access& r : a.reads) {
    if (r.tensor == y) continue;
    for (const AccessMap& m : r.maps) {
      reads.emplace_back(r.tensor, moved(m));
      texts.emplace_back(m.text, reads.back().second.text);
    }
  }
  const AccessMap write = moved(a.writes[0].maps[0]);
  // the carry: read by the first step where the steps before the run wrote (kept as it is, a
  // read of those elements only), by the others where the step before wrote
  std::vector<std::pair<std::string, AccessMap>> carry;
  for (const Access& r : a.reads) {
    if (r.tensor != y) continue;
    if (r.maps.size() != 1) return std::nullopt;  // one carry, as every later step reads
    AccessMap m = r.maps[0];
    m.domain = domain;
    carry.emplace_back(y, m);
    AccessMap back = write;
    for (size_t d = 0; d < back.index.size(); ++d) {
      back.index[d].constant -= delta[delta.size() - back.index.size() + d];
    }
    texts.emplace_back(r.maps[0].text, plain_text(y, back.index, domain));
  }
  // the reads in the first step's order of tensors
  std::vector<std::pair<std::string, AccessMap>> ordered;
  for (const Access& r : a.reads) {
    for (auto& entry : r.tensor == y ? carry : reads) {
      if (entry.first == r.tensor) ordered.push_back(entry);
    }
  }
  // the text: the first step's, its maps rewritten
  const std::string head = domain_text(a.domain) + a.writes[0].maps[0].text + " = ";
  if (a.einsum.rfind(head, 0) != 0) return std::nullopt;
  Node n = a;
  n.reads = group_maps(tensors, ordered);
  n.writes = group_maps(tensors, {{y, write}});
  if (n.writes[0].footprint != steps * a.writes[0].footprint || !n.writes[0].footprint_exact) {
    return std::nullopt;  // the steps' writes overlap: not a scan
  }
  if (!carry.empty()) {  // the first carry is written before the run, not by a step of it
    std::vector<std::pair<std::string, AccessMap>> both = carry;
    both.emplace_back(y, write);
    const std::vector<Access> all = group_maps(tensors, both);
    const auto carried = std::find_if(n.reads.begin(), n.reads.end(),
                                      [&](const Access& r) { return r.tensor == y; });
    if (!all[0].footprint_exact || all[0].footprint != carried->footprint + n.writes[0].footprint) {
      return std::nullopt;
    }
  }
  std::string rhs = a.einsum.substr(head.size());
  rhs = replace_maps(rhs, texts);
  n.einsum = domain_text(domain) + write.text + " = " + rhs;
  n.name = a.name.substr(0, a.name.size() - 1) + ".." + std::to_string(lo + steps - 1) + "]";
  n.domain = std::move(domain);
  n.points = a.points * steps;
  n.counts.simple = a.counts.simple * steps;
  n.counts.special = a.counts.special * steps;
  return n;
}

}  // namespace

// Scans as one node (docs/einsum.md, "Scans"). A `repeat` of one elementwise kernel unrolls
// into one node per step; where consecutive nodes of one op block are the same kernel moved by
// a constant step (every index constant of every map moves by the same amount from one node to
// the next: `y[i, t] = y[i, t - 1] + x[i, t]` for t = 1, 2, ...), each writes elements no other
// writes, and each reads what it writes only at the elements the node before wrote (the
// carry), they become one node whose domain gains the step as its outermost loop: its maps
// are the first step's plus the step times that loop, its counts N times one step's, and the
// carry is read from the first step's read alone (the elements the steps before the run
// wrote; a step's carry stays on chip in every real scan). A 152,064-entry cumsum is one node,
// not 152,063.
void collapse_scans(Graph& g, const Tensors& tensors) {
  std::vector<Node> out;
  out.reserve(g.nodes.size());
  for (size_t i = 0; i < g.nodes.size();) {
    size_t e = i + 1;
    std::vector<int64_t> delta;
    if (scan_step(g.nodes[i]) && i + 1 < g.nodes.size()) {
      if (std::optional<std::vector<int64_t>> d = step_delta(g.nodes[i], g.nodes[i + 1])) {
        delta = std::move(*d);
        // the pair (i, i + 1) gave delta; every later pair must move by it too
        while (e < g.nodes.size() &&
               (e == i + 1 || step_delta(g.nodes[e - 1], g.nodes[e]) == delta) &&
               carries(g.nodes[e - 1], g.nodes[e])) {
          ++e;
        }
      }
    }
    std::optional<Node> merged;
    if (e - i >= 2) merged = scan_node(g.nodes, tensors, i, e, delta);
    if (merged) {
      out.push_back(std::move(*merged));
    } else {  // not a scan: the nodes as they are (not tried again from i + 1)
      for (size_t k = i; k < e; ++k) out.push_back(std::move(g.nodes[k]));
    }
    i = e;
  }
  g.nodes = std::move(out);
}

}  // namespace solar::einsum::detail
