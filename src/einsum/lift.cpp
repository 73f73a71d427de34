// Lifting a checked program to an einsum graph (graph.h; docs/einsum.md, "Lifting").
//
// Repeat blocks are unrolled into a list of steps. Every tensor name is bound to a view of some
// tensor's storage (initially its own); a view statement rebinds its destination when it can be
// folded, and every other statement writes the destination's own storage and rebinds it to it.
#include <algorithm>
#include <atomic>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "counts.h"
#include "footprint.h"
#include "solar/einsum/graph.h"
#include "solar/einsum/lift_count.h"
#include "solar/einsum/translation.h"
#include "solar/ir/checker.h"
#include "solar/ir/diagnostic.h"
#include "solar/ir/printer.h"
#include "solar/util/error.h"
#include "view.h"

namespace solar::einsum {
namespace {

using detail::View;

// One statement of the unrolled program.
struct Step {
  const ir::Stmt* stmt = nullptr;
  ir::SymbolValues values;  // sizes and the enclosing repeat indices
  std::string suffix;       // "[t=3]", "[t=1,u=2]" inside repeat blocks, else ""
  std::string op_block;     // the enclosing op block's name with its suffix, or ""
};

void unroll(const std::vector<ir::StmtP>& body, const ir::SymbolValues& values,
            const std::string& bindings, const std::string& op_block, std::vector<Step>& out) {
  const std::string suffix = bindings.empty() ? "" : "[" + bindings + "]";
  for (const ir::StmtP& s : body) {
    if (const auto* o = std::get_if<ir::OpBlock>(&s->node)) {
      unroll(o->body, values, bindings, o->name + suffix, out);
      continue;
    }
    if (s->kind() != ir::StmtKind::Repeat) {
      out.push_back({s.get(), values, suffix, op_block});
      continue;
    }
    const ir::Repeat& r = std::get<ir::Repeat>(s->node);
    const int64_t hi = ir::eval_int(*r.hi, values);
    for (int64_t t = ir::eval_int(*r.lo, values); t < hi; ++t) {
      ir::SymbolValues inner = values;
      inner[r.var] = t;
      unroll(r.body, inner,
             (bindings.empty() ? "" : bindings + ",") + r.var + "=" + std::to_string(t), op_block,
             out);
    }
  }
}

// The most steps (statements, and the iterations of repeat blocks) a program may unroll into:
// each becomes a node of about a kilobyte, so 2,000,000 is about 2 GB of graph.
constexpr int64_t kMaxUnrolledSteps = 2'000'000;

// How many steps `body` unrolls into (unroll), counting each repeat iteration too; a
// DiagnosticError at the repeat that takes the count past kMaxUnrolledSteps, before anything is
// unrolled (a size of 10^12 in a `repeat` bound: never a kill for memory).
void count_unrolled(const std::vector<ir::StmtP>& body, const ir::SymbolValues& values,
                    const std::string& file, int64_t& count) {
  for (const ir::StmtP& s : body) {
    if (const auto* o = std::get_if<ir::OpBlock>(&s->node)) {
      count_unrolled(o->body, values, file, count);
      continue;
    }
    if (s->kind() != ir::StmtKind::Repeat) {
      ++count;
      continue;
    }
    const ir::Repeat& r = std::get<ir::Repeat>(s->node);
    const int64_t lo = ir::eval_int(*r.lo, values);
    const int64_t hi = ir::eval_int(*r.hi, values);
    ir::SymbolValues inner = values;
    for (int64_t t = lo; t < hi; ++t) {
      inner[r.var] = t;
      ++count;
      count_unrolled(r.body, inner, file, count);
      if (count > kMaxUnrolledSteps) {
        throw ir::DiagnosticError({ir::Diagnostic{
            file, s->loc,
            "repeat " + r.var + " in " + std::to_string(lo) + ".." + std::to_string(hi) +
                " unrolls into more than " + std::to_string(kMaxUnrolledSteps) +
                " steps (statements and iterations), more than SOLAR's einsum graph holds; give "
                "smaller sizes"}});
      }
    }
  }
}

void collect_reads(const ir::Expr& e, std::vector<std::string>& names) {
  if (e.kind == ir::ExprKind::Read) names.push_back(e.tensor);
  for (const ir::ExprP& a : e.args) collect_reads(*a, names);
}

// Whether every value of dtype `o` is exactly a value of dtype `t` (docs/precision.md, "Origin
// precision"): a narrower float in a wider one (f8 in f16, bf16 and f32; f16 and bf16 in f32),
// 8-bit integers and bool in every float of 16 bits or more (bf16 holds 8 significant bits).
// An origin of f4e2m1x2 stands for e2m1 values (decoded from packed fp4 pairs: see
// Lifter::track_movement), which every float of 16 bits or more holds.
bool fits_exactly(ir::DType o, ir::DType t) {
  if (o == t) return true;
  const bool byte = o == ir::DType::F8E4M3 || o == ir::DType::F8E5M2 || o == ir::DType::I8 ||
                    o == ir::DType::U8 || o == ir::DType::Bool || o == ir::DType::F4E2M1X2;
  switch (t) {
    case ir::DType::F64:
      return o != ir::DType::I64;
    case ir::DType::F32:
      return byte || o == ir::DType::F16 || o == ir::DType::BF16;
    case ir::DType::F16:
    case ir::DType::BF16:
      return byte;
    default:
      return false;
  }
}

// Whether a copy from dtype `a` to `b` keeps every byte as it is, so folds as a view: the same
// dtype, or packed fp4 pairs (f4e2m1x2) to or from a byte dtype (aten.view.dtype: the value of a
// pair is its byte).
bool same_bytes(ir::DType a, ir::DType b) {
  if (a == b) return true;
  const auto byte = [](ir::DType t) { return t == ir::DType::U8 || t == ir::DType::I8; };
  return (a == ir::DType::F4E2M1X2 && byte(b)) || (b == ir::DType::F4E2M1X2 && byte(a));
}

// The origin of a value of origin `o` stored in (or cast to) dtype `t`: `o` when t holds it
// exactly, else t (a cast to a narrower dtype makes values of that dtype).
ir::DType stored_origin(ir::DType o, ir::DType t) { return fits_exactly(o, t) ? o : t; }

// The origin of a tensor written twice, with origins a then b: the wider when one holds the
// other, else `t` (the tensor's own dtype).
ir::DType joined_origin(ir::DType a, ir::DType b, ir::DType t) {
  if (fits_exactly(a, b)) return b;
  return fits_exactly(b, a) ? a : t;
}

bool has_read_or_index(const ir::Expr& e) {
  if (e.kind == ir::ExprKind::Read || e.kind == ir::ExprKind::Index) return true;
  return std::any_of(e.args.begin(), e.args.end(),
                     [](const ir::ExprP& a) { return has_read_or_index(*a); });
}

// The lifted program, built step by step.
class Lifter {
 public:
  Lifter(const ir::Program& p, const ir::SymbolValues& sizes) : p_(p) {
    g_.source = p.file;
    g_.sizes = sizes;
    for (const ir::TensorDecl& t : p.tensors) {
      // A random draw is generated on chip by a node of its own (draw()): an intermediate.
      const bool random = t.role == ir::TensorRole::Random;
      // A complex tensor is its (real, imaginary) pairs: c64[s] is f32[s, 2], the same bytes
      // (docs/einsum.md, "Complex tensors"), so view_as_real and view_as_complex fold as views.
      TensorInfo info{
          t.name, random ? ir::TensorRole::Intermediate : t.role, ir::complex_part(t.dtype), {}, 0,
          0};
      if (random) random_.push_back(t.name);
      for (const ir::IntExprP& d : t.shape) info.shape.push_back(ir::eval_int(*d, sizes, p.file));
      if (ir::dtype_is_complex(t.dtype)) {
        info.shape.push_back(2);
        complex_.insert(t.name);
      }
      info.numel = detail::numel(info.shape);
      info.bytes = info.numel * ir::dtype_size(info.dtype);
      tensor_index_.emplace(info.name, g_.tensors.size());
      g_.tensors.push_back(std::move(info));
    }
    int64_t count = 0;
    count_unrolled(p.body, sizes, p.file, count);
    unroll(p.body, sizes, "", "", steps_);
    for (size_t i = 0; i < steps_.size(); ++i) index_uses(i);
    for (const std::string& r : random_) {
      const auto it = reads_at_.find(r);
      if (it != reads_at_.end() && !it->second.empty()) draws_at_[it->second.front()].push_back(r);
    }
  }

  Graph run() && {
    for (size_t i = 0; i < steps_.size(); ++i) {
      const auto draws = draws_at_.find(i);
      if (draws != draws_at_.end()) {
        for (const std::string& r : draws->second) draw(r);
      }
      const ir::Stmt& s = *steps_[i].stmt;
      if (s.kind() == ir::StmtKind::Kernel) {
        kernel(steps_[i]);
      } else {
        compose(i);
      }
    }
    remove_dead();
    mark_in_place_records();  // after: a dead in-place write has no record
    collapse_scans();
    return std::move(g_);
  }

 private:
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
  void collapse_scans() {
    std::vector<Node> out;
    out.reserve(g_.nodes.size());
    for (size_t i = 0; i < g_.nodes.size();) {
      size_t e = i + 1;
      std::vector<int64_t> delta;
      if (scan_step(g_.nodes[i]) && i + 1 < g_.nodes.size()) {
        if (std::optional<std::vector<int64_t>> d = step_delta(g_.nodes[i], g_.nodes[i + 1])) {
          delta = std::move(*d);
          // the pair (i, i + 1) gave delta; every later pair must move by it too
          while (e < g_.nodes.size() &&
                 (e == i + 1 || step_delta(g_.nodes[e - 1], g_.nodes[e]) == delta) &&
                 carries(g_.nodes[e - 1], g_.nodes[e])) {
            ++e;
          }
        }
      }
      std::optional<Node> merged;
      if (e - i >= 2) merged = scan_node(i, e, delta);
      if (merged) {
        out.push_back(std::move(*merged));
      } else {  // not a scan: the nodes as they are (not tried again from i + 1)
        for (size_t k = i; k < e; ++k) out.push_back(std::move(g_.nodes[k]));
      }
      i = e;
    }
    g_.nodes = std::move(out);
  }

  // A node that may be a step of a scan: an elementwise kernel of an op block writing one
  // tensor through one map, every map affine with its text the tensor's name and its indices.
  bool scan_step(const Node& n) const {
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

  static std::string plain_text(const std::string& tensor, const std::vector<ir::AffineForm>& f,
                                const ir::AffineDomain& domain) {
    std::string s = tensor + "[";
    for (size_t d = 0; d < f.size(); ++d) s += (d ? ", " : "") + detail::form_text(f[d], domain);
    return s + "]";
  }

  // The reads of n that are not of the tensor it writes, then its write: the maps that move
  // with the step.
  static std::vector<const AccessMap*> moving_maps(const Node& n) {
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
  static std::optional<std::pair<std::string, int64_t>> last_binding(const std::string& name) {
    const size_t eq = name.rfind('=');
    const size_t open = name.find('[');
    if (name.empty() || name.back() != ']' || eq == std::string::npos ||
        open == std::string::npos || eq < open) {
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
  std::optional<std::vector<int64_t>> step_delta(const Node& a, const Node& b) const {
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
  static bool carries(const Node& a, const Node& b) {
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

  // The nodes [first, last) as one node (nullopt: their writes overlap, or their text is not
  // the form collapse_scans rewrites).
  std::optional<Node> scan_node(size_t first, size_t last, const std::vector<int64_t>& delta) {
    const Node& a = g_.nodes[first];
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
    n.reads = group(ordered);
    n.writes = group({{y, write}});
    if (n.writes[0].footprint != steps * a.writes[0].footprint || !n.writes[0].footprint_exact) {
      return std::nullopt;  // the steps' writes overlap: not a scan
    }
    if (!carry.empty()) {  // the first carry is written before the run, not by a step of it
      std::vector<std::pair<std::string, AccessMap>> both = carry;
      both.emplace_back(y, write);
      const std::vector<Access> all = group(both);
      const auto carried = std::find_if(n.reads.begin(), n.reads.end(),
                                        [&](const Access& r) { return r.tensor == y; });
      if (!all[0].footprint_exact ||
          all[0].footprint != carried->footprint + n.writes[0].footprint) {
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

  // `text` with every whole occurrence of each map text replaced (not inside a longer name).
  static std::string replace_maps(const std::string& text,
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
  // The record of an in-place write (docs/einsum.md, "In-place updates of inputs"). A capture
  // checks the part of an input that an in-place update writes through a graph output of its
  // own, a copy of the values written (`cache_written[i, j] = k[i, j]`, docs/capture.md). When
  // the program reads the input afterwards, the update is also written into the input: a node
  // writes the input's elements (the in-place write), reading those values last. The copy is
  // then that write's record, not a kernel of the program: a relabelling (Node::relabel), so
  // the unfused and cache-aware fidelities count the rows written once, as an eager run writes
  // them (the fused one writes the output once and never counts the write into the input). The
  // record of an in-place write into input X (its last read: the values written) is a kernel
  // with no operation that writes graph output `X_written` (the capture's name) as many bytes as
  // the in-place write writes into X, reading the same values, the same bytes (values broadcast
  // into the part: the record reads them as the in-place write does, and writes the part);
  // each in-place write has one record. Run after dead code is removed: a dead in-place write
  // wrote nothing, and its record is the update's one write.
  void mark_in_place_records() {
    const auto role = [&](const Access& a) { return tensor(a.tensor).role; };
    struct InPlace {
      const Access* into;    // the write into the input
      const Access* values;  // the values it reads
    };
    std::vector<InPlace> in_place;
    for (const Node& n : g_.nodes) {
      const auto into = std::find_if(n.writes.begin(), n.writes.end(), [&](const Access& a) {
        return role(a) == ir::TensorRole::Input;
      });
      if (into != n.writes.end() && !n.reads.empty()) in_place.push_back({&*into, &n.reads.back()});
    }
    for (Node& n : g_.nodes) {
      if (n.kind != NodeKind::Einsum || n.reduction != Reduction::None || n.counts.macs != 0 ||
          n.counts.other_ops() != 0 || n.reads.size() != 1 || n.writes.size() != 1 ||
          role(n.writes[0]) != ir::TensorRole::Output) {
        continue;
      }
      const auto same = std::find_if(in_place.begin(), in_place.end(), [&](const InPlace& w) {
        return n.writes[0].tensor == w.into->tensor + "_written" &&
               n.writes[0].bytes == w.into->bytes && n.reads[0].tensor == w.values->tensor &&
               n.reads[0].bytes == w.values->bytes;
      });
      if (same == in_place.end()) continue;
      n.relabel = true;
      in_place.erase(same);
    }
  }

  // Dead code (docs/einsum.md, "Dead code"): a node whose values reach no graph output, through
  // any chain of later readers, is removed; its name goes to Graph::dead_nodes. Backwards over
  // the nodes: a node is live when it writes a graph output or a tensor a later live node reads
  // (a later write that overwrites the whole tensor does not make it dead: kept, erring toward
  // more bytes, never fewer than a real run needs).
  void remove_dead() {
    std::set<std::string> needed;
    for (const TensorInfo& t : g_.tensors) {
      if (t.role == ir::TensorRole::Output) needed.insert(t.name);
    }
    std::vector<bool> live(g_.nodes.size(), false);
    for (size_t i = g_.nodes.size(); i-- > 0;) {
      const Node& n = g_.nodes[i];
      live[i] = std::any_of(n.writes.begin(), n.writes.end(),
                            [&](const Access& a) { return needed.contains(a.tensor); });
      if (!live[i]) continue;
      for (const Access& a : n.reads) needed.insert(a.tensor);
    }
    std::vector<Node> kept;
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      if (live[i]) {
        kept.push_back(std::move(g_.nodes[i]));
      } else {
        g_.dead_nodes.push_back(g_.nodes[i].name);
      }
    }
    g_.nodes = std::move(kept);
  }

  // ------------------------------------------------------------------------------------------
  // Where each tensor is read and written, for the folding rule.

  void index_uses(size_t i) {
    const ir::Stmt& s = *steps_[i].stmt;
    std::vector<std::string> reads;
    if (s.kind() == ir::StmtKind::Kernel) {
      const ir::Kernel& k = std::get<ir::Kernel>(s.node);
      collect_reads(*k.rhs, reads);
      writes_at_[k.out].push_back(i);
    } else {
      const ir::Compose& c = std::get<ir::Compose>(s.node);
      reads = c.srcs;
      writes_at_[c.dst].push_back(i);
    }
    for (const std::string& r : reads) {
      std::vector<size_t>& at = reads_at_[r];
      if (at.empty() || at.back() != i) at.push_back(i);
    }
  }

  static size_t next_after(const std::vector<size_t>& positions, size_t i, size_t none) {
    const auto it = std::upper_bound(positions.begin(), positions.end(), i);
    return it == positions.end() ? none : *it;
  }

  // Whether `dst = view of base` at step i can stay a view: dst is not a graph output, and while
  // it holds this value (until dst is next written) and is still read, base is not overwritten.
  // A view that a kernel or a region copy later writes into is materialised (they write only
  // part of it), unless it is not read before (then it is dead, and dropped).
  bool can_fold(size_t i, const std::string& dst, const std::string& base) {
    if (tensor(dst).role == ir::TensorRole::Output || base == dst) return false;
    const size_t end = steps_.size();
    const size_t next_write = next_after(writes_at_[dst], i, end);
    const std::vector<size_t>& reads = reads_at_[dst];
    // Read after a region copy into it: the elements the copy leaves come from this value.
    if (region_write(next_write) && !reads.empty() && reads.back() > i) return false;
    const auto last = std::lower_bound(reads.begin(), reads.end(), next_write);
    if (last == reads.begin() || *std::prev(last) <= i) return true;  // never read: dead
    const size_t last_read = *std::prev(last);
    if (next_write < end) {
      const ir::Stmt& w = *steps_[next_write].stmt;
      if (w.kind() == ir::StmtKind::Kernel || !std::get<ir::Compose>(w.node).dst_region.empty()) {
        return false;
      }
    }
    return next_after(writes_at_[base], i, end) >= last_read;
  }

  // Whether step i (steps_.size(): none) is a copy into a region of its destination.
  bool region_write(size_t i) const {
    if (i >= steps_.size() || steps_[i].stmt->kind() == ir::StmtKind::Kernel) return false;
    return !std::get<ir::Compose>(steps_[i].stmt->node).dst_region.empty();
  }

  // The functional form of an in-place update of a graph input x (`cache[:, pos] = k`,
  // `index_copy_`; docs/capture.md, "In-place updates of inputs") at step i: `dst = x`, a whole
  // copy into an intermediate that only region copies write after it, or `dst = scatter(x, ...)`;
  // and nothing reads x afterwards. dst becomes an alias of x: the copy moves nothing, the region
  // copies and the scatter write x's elements they name, and later reads of dst read x's
  // storage, as an in-place kernel leaves it. `v`: x's view (the copy's source, the scatter's
  // first operand).
  bool in_place_alias(size_t i, const ir::Compose& c, const View& v) {
    if (!c.dst_region.empty() || (c.op != ir::ComposeOp::Copy && c.op != ir::ComposeOp::Scatter)) {
      return false;
    }
    const TensorInfo& x = tensor(v.base);
    const TensorInfo& y = tensor(c.dst);
    if (x.role != ir::TensorRole::Input || y.role != ir::TensorRole::Intermediate ||
        x.dtype != y.dtype || !detail::is_whole(v, x) || x.shape != y.shape) {
      return false;
    }
    const std::vector<size_t>& x_reads = reads_at_[v.base];
    if (!x_reads.empty() && x_reads.back() > i) return false;
    const std::vector<size_t>& writes = writes_at_[c.dst];
    const auto after = std::upper_bound(writes.begin(), writes.end(), i);
    if (c.op == ir::ComposeOp::Copy && after == writes.end()) return false;
    for (auto w = after; w != writes.end(); ++w) {
      if (!region_write(*w)) return false;
    }
    bindings_[c.dst] = v;
    aliased_inputs_.insert(c.dst);
    return true;
  }

  // ------------------------------------------------------------------------------------------
  // Tensors and bindings

  const TensorInfo& tensor(const std::string& name) const {
    const auto it = tensor_index_.find(name);  // by name, not a scan of g_.tensors
    SOLAR_CHECK(it != tensor_index_.end(), "lift: unknown tensor '" + name + "'");
    return g_.tensors[it->second];
  }

  View binding(const std::string& name) const {
    const auto it = bindings_.find(name);
    return it == bindings_.end() ? detail::whole_view(tensor(name)) : it->second;
  }

  // After a step writes `name`'s own storage.
  void materialise(const std::string& name) { bindings_.erase(name); }

  // The accesses of a node, one per tensor in order of first appearance; identical maps kept once.
  std::vector<Access> group(const std::vector<std::pair<std::string, AccessMap>>& maps) const {
    std::vector<Access> accesses;
    for (const auto& entry : maps) {
      const std::string& name = entry.first;
      const AccessMap& m = entry.second;
      auto it = std::find_if(accesses.begin(), accesses.end(),
                             [&](const Access& a) { return a.tensor == name; });
      if (it == accesses.end()) {
        accesses.push_back(Access{name, "", 0, true, 0, {}});
        it = std::prev(accesses.end());
      }
      const bool seen = std::any_of(it->maps.begin(), it->maps.end(),
                                    [&](const AccessMap& o) { return detail::same_map(o, m); });
      if (!seen) it->maps.push_back(m);
    }
    for (Access& a : accesses) {
      for (const AccessMap& m : a.maps) a.text += (a.text.empty() ? "" : ", ") + m.text;
      detail::count_access(a, tensor(a.tensor));
    }
    return accesses;
  }

  // A unique node name: `base`, or `base#2`, `base#3`, ... when taken.
  std::string unique_name(const std::string& base) {
    const int n = ++name_counts_[base];
    return n == 1 ? base : base + "#" + std::to_string(n);
  }

  // ------------------------------------------------------------------------------------------
  // Origin precision (docs/precision.md, "Origin precision"): per storage tensor, the narrowest
  // dtype of which its values are exact upcasts (origin_; absent: its own dtype), and whether its
  // values are copies of fewer elements (expanded_: a broadcast or repeat materialised, such as
  // a per-block scale repeated over its block).

  // Whether the values of storage tensor `base` are packed fp4 pairs (f4e2m1x2), or integers
  // computed from such values alone (masks and shifts of the bytes: 4-bit codes).
  bool fp4_data(const std::string& base) const {
    return tensor(base).dtype == ir::DType::F4E2M1X2 || fp4_codes_.contains(base);
  }

  // After `out` was written from the tensors `reads` (names as read): it holds fp4 codes when
  // it is an integer tensor and every read is of fp4 data.
  void track_fp4_codes(const std::string& out, const std::vector<std::string>& reads) {
    const bool codes = !reads.empty() && ir::dtype_is_integer(tensor(out).dtype) &&
                       std::all_of(reads.begin(), reads.end(),
                                   [&](const std::string& r) { return fp4_data(binding(r).base); });
    if (codes) {
      fp4_codes_.insert(out);
    } else {
      fp4_codes_.erase(out);
    }
  }

  ir::DType tensor_origin(const std::string& base) const {
    const auto it = origin_.find(base);
    return it == origin_.end() ? tensor(base).dtype : it->second;
  }

  void set_origin(const std::string& name, ir::DType o) {
    const ir::DType t = tensor(name).dtype;
    o = stored_origin(o, t);
    const auto it = origin_.find(name);
    if (it != origin_.end()) o = joined_origin(it->second, o, t);
    origin_[name] = o;
  }

  // The loops (nonzero coefficient) by which the reads of `e` reach their storage, per storage
  // tensor.
  std::map<std::string, std::set<std::string>> read_loops_by_tensor(
      const ir::Expr& e, const Step& s, const ir::AffineDomain& domain) const {
    std::vector<std::pair<std::string, AccessMap>> maps;
    read_maps(e, s, domain, false, maps);
    std::map<std::string, std::set<std::string>> loops;
    for (const auto& [t, m] : maps) {
      std::set<std::string>& l = loops[t];
      if (m.data_dependent) continue;
      for (const auto& [var, c] : m.flat().coeffs) {
        if (c != 0) l.insert(var);
      }
    }
    return loops;
  }

  // The loops by which the reads of `e` reach their storage, all tensors together.
  std::set<std::string> read_loops(const ir::Expr& e, const Step& s,
                                   const ir::AffineDomain& domain) const {
    std::set<std::string> loops;
    for (const auto& entry : read_loops_by_tensor(e, s, domain)) {
      loops.insert(entry.second.begin(), entry.second.end());
    }
    return loops;
  }

  // The read under casts and negations of `e`, or nullptr.
  static const ir::Expr* stripped_read(const ir::Expr& e) {
    const ir::Expr* x = &e;
    while (x->kind == ir::ExprKind::Cast ||
           (x->kind == ir::ExprKind::Unary && x->unary_op == ir::UnaryOp::Neg)) {
      x = x->args[0].get();
    }
    return x->kind == ir::ExprKind::Read ? x : nullptr;
  }

  // Whether `f` scales `of`: the same at every point (a constant), a read of an expanded
  // tensor, or a read that reaches its storage with fewer loops than `of` does (a per-tensor,
  // per-row, per-channel or per-block scale: constant over a block of `of`'s elements).
  bool is_scale(const ir::Expr& f, const ir::Expr& of, const Step& s,
                const ir::AffineDomain& domain) const {
    if (!has_read_or_index(f)) return true;
    const ir::Expr* r = stripped_read(f);
    if (r == nullptr) return false;
    if (expanded_.contains(binding(r->tensor).base)) return true;
    const std::set<std::string> a = read_loops(*r, s, domain);
    const std::set<std::string> b = read_loops(of, s, domain);
    return a.size() < b.size() && std::includes(b.begin(), b.end(), a.begin(), a.end());
  }

  // The origin of an expression's value: a read's tensor origin; a cast keeps its operand's
  // origin when the target holds it exactly; a product or quotient by a scale keeps the other
  // operand's; anything else has its own dtype. nullopt for constants and indices.
  std::optional<ir::DType> origin_of(const ir::Expr& e, const Step& s,
                                     const ir::AffineDomain& domain) const {
    switch (e.kind) {
      case ir::ExprKind::Const:
      case ir::ExprKind::Index:
        return std::nullopt;
      case ir::ExprKind::Read:
        return tensor_origin(binding(e.tensor).base);
      case ir::ExprKind::Cast: {
        const std::optional<ir::DType> o = origin_of(*e.args[0], s, domain);
        return o ? stored_origin(*o, e.cast_to) : e.cast_to;
      }
      case ir::ExprKind::Unary:
        if (e.unary_op == ir::UnaryOp::Neg) return origin_of(*e.args[0], s, domain);
        break;
      case ir::ExprKind::Binary: {
        const ir::Expr& a = *e.args[0];
        const ir::Expr& b = *e.args[1];
        const bool mul = e.binary_op == ir::BinaryOp::Mul;
        if ((mul || e.binary_op == ir::BinaryOp::Div) && has_read_or_index(a) &&
            is_scale(b, a, s, domain)) {
          return origin_of(a, s, domain);
        }
        if (mul && has_read_or_index(b) && is_scale(a, b, s, domain)) {
          return origin_of(b, s, domain);
        }
        break;
      }
      case ir::ExprKind::Select:
        break;
    }
    return detail::value_dtype(e, [&](const std::string& t) { return tensor(t).dtype; });
  }

  // The origins of a contraction's two operands, when its factors are two operands and scales
  // of them (constants, expanded tensors, reads with fewer loops than the operand they scale).
  std::optional<std::pair<ir::DType, ir::DType>> mac_origins(const detail::MacOperands& m,
                                                             const Step& s,
                                                             const ir::AffineDomain& domain) const {
    std::vector<const ir::Expr*> factors = {m.lhs, m.rhs};
    factors.insert(factors.end(), m.others.begin(), m.others.end());
    std::vector<const ir::Expr*> rest;
    for (const ir::Expr* f : factors) {
      const ir::Expr* r = stripped_read(*f);
      const bool always_scale =
          !has_read_or_index(*f) || (r != nullptr && expanded_.contains(binding(r->tensor).base));
      if (!always_scale) rest.push_back(f);
    }
    if (rest.size() < 2) return std::nullopt;
    std::vector<size_t> loops;
    for (const ir::Expr* f : rest) loops.push_back(read_loops(*f, s, domain).size());
    std::vector<size_t> order(rest.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t x, size_t y) { return loops[x] > loops[y]; });
    const ir::Expr* lhs = rest[std::min(order[0], order[1])];
    const ir::Expr* rhs = rest[std::max(order[0], order[1])];
    for (size_t k = 2; k < order.size(); ++k) {
      const ir::Expr& f = *rest[order[k]];
      if (!is_scale(f, *lhs, s, domain) && !is_scale(f, *rhs, s, domain)) return std::nullopt;
    }
    const std::optional<ir::DType> a = origin_of(*lhs, s, domain);
    const std::optional<ir::DType> b = origin_of(*rhs, s, domain);
    if (!a || !b) return std::nullopt;
    return std::pair{*a, *b};
  }

  // After kernel k wrote its output: the output's origin, and whether it is expanded (every
  // read of the right side a scale of the write: fewer loops, or an expanded tensor).
  void track_kernel(const ir::Kernel& k, const Step& s, const ir::AffineDomain& domain) {
    const std::string& out = k.out;
    {
      std::vector<std::string> reads;
      collect_reads(*k.rhs, reads);
      track_fp4_codes(out, reads);
    }
    if (k.op != ir::AssignOp::Assign) {
      origin_[out] = tensor(out).dtype;
      expanded_.erase(out);
      return;
    }
    const std::optional<ir::DType> o = origin_of(*k.rhs, s, domain);
    set_origin(out, o ? *o : tensor(out).dtype);
    std::set<std::string> written;
    for (const ir::AffineForm& f : affine_all(k.out_indices, s.values)) {
      for (const auto& [var, c] : f.coeffs) {
        if (c != 0) written.insert(var);
      }
    }
    std::vector<std::string> names;
    collect_reads(*k.rhs, names);
    bool expanded = !names.empty();
    const std::map<std::string, std::set<std::string>> by_tensor =
        read_loops_by_tensor(*k.rhs, s, domain);
    for (const std::string& name : names) {
      const std::string& base = binding(name).base;
      if (expanded_.contains(base)) continue;
      const auto it = by_tensor.find(base);
      const std::set<std::string> loops =
          it == by_tensor.end() ? std::set<std::string>{} : it->second;
      if (!(loops.size() < written.size() &&
            std::includes(written.begin(), written.end(), loops.begin(), loops.end()))) {
        expanded = false;
      }
    }
    if (expanded) {
      expanded_.insert(out);
    } else {
      expanded_.erase(out);
    }
  }

  // After a movement node wrote `dst` from `srcs` (the data sources: for take and gather the
  // first only): the origin of its values, and whether they are expanded.
  void track_movement(const ir::Compose& c, const Node& n) {
    const std::string& dst = c.dst;
    track_fp4_codes(dst, c.op == ir::ComposeOp::Take || c.op == ir::ComposeOp::Gather
                             ? std::vector<std::string>{}
                             : c.srcs);
    if (c.op == ir::ComposeOp::Scatter || c.op == ir::ComposeOp::Argsort ||
        c.op == ir::ComposeOp::Rfft || c.op == ir::ComposeOp::Irfft || c.op == ir::ComposeOp::Fft ||
        c.op == ir::ComposeOp::Ifft) {
      origin_[dst] = tensor(dst).dtype;
      expanded_.erase(dst);
      return;
    }
    const bool indexed = c.op == ir::ComposeOp::Take || c.op == ir::ComposeOp::Gather;
    const size_t sources = indexed ? 1 : c.srcs.size();
    std::optional<ir::DType> o;
    bool expanded_source = false;
    for (size_t i = 0; i < sources; ++i) {
      const std::string base = binding(c.srcs[i]).base;
      const ir::DType so = stored_origin(tensor_origin(base), tensor(dst).dtype);
      o = o ? joined_origin(*o, so, tensor(dst).dtype) : so;
      expanded_source = expanded_source || expanded_.contains(base);
    }
    if (!c.dst_region.empty()) {
      set_origin(dst, o ? *o : tensor(dst).dtype);
    } else {
      origin_.erase(dst);
      origin_[dst] = o ? *o : tensor(dst).dtype;
    }
    // A floating lookup table of at most 16 entries indexed by 4-bit codes of packed fp4 data
    // decodes fp4 values (the unpacking of an NVFP4 or MXFP4 reference program): their origin
    // is fp4 (f4e2m1x2), whatever the table holds (docs/precision.md, "Packed fp4 tensors").
    if (indexed && c.srcs.size() >= 2 && c.dst_region.empty() &&
        ir::dtype_is_float(tensor(dst).dtype) && tensor(binding(c.srcs[0]).base).numel <= 16 &&
        fp4_data(binding(c.srcs[1]).base)) {
      origin_[dst] = ir::DType::F4E2M1X2;
    }
    int64_t read = 0, written = 0;
    for (const Access& a : n.reads) read += a.footprint;
    for (const Access& a : n.writes) written += a.footprint;
    const bool copies = c.op != ir::ComposeOp::Concat && !indexed && c.dst_region.empty();
    if (copies && (expanded_source || read < written)) {
      expanded_.insert(dst);
    } else {
      expanded_.erase(dst);
    }
  }

  // ------------------------------------------------------------------------------------------
  // Kernels

  ir::AffineForm affine(const ir::IntExpr& e, const ir::SymbolValues& values) const {
    std::optional<ir::AffineForm> f = ir::to_affine(e, values);
    SOLAR_CHECK(f.has_value(), "lift: a checked index is not affine");
    return *f;
  }

  std::vector<ir::AffineForm> affine_all(const std::vector<ir::IntExprP>& index,
                                         const ir::SymbolValues& values) const {
    std::vector<ir::AffineForm> forms;
    for (const ir::IntExprP& e : index) forms.push_back(affine(*e, values));
    return forms;
  }

  // The loops of `domain` whose index the expression uses as a value (Node::value_loops), in
  // domain order; every loop when an index is not affine.
  std::vector<std::string> value_loops(const ir::Expr& e, const Step& s,
                                       const ir::AffineDomain& domain) const {
    std::set<std::string> used;
    collect_value_loops(e, s, domain, used);
    std::vector<std::string> out;
    for (const ir::AffineLoop& l : domain) {
      if (used.contains(l.var)) out.push_back(l.var);
    }
    return out;
  }

  void collect_value_loops(const ir::Expr& e, const Step& s, const ir::AffineDomain& domain,
                           std::set<std::string>& used) const {
    if (e.kind == ir::ExprKind::Index) {
      const std::optional<ir::AffineForm> f = ir::to_affine(*e.index, s.values);
      for (const ir::AffineLoop& l : domain) {
        if (!f || f->coeff(l.var) != 0) used.insert(l.var);
      }
    }
    for (const ir::ExprP& a : e.args) collect_value_loops(*a, s, domain, used);
  }

  // The read maps of an expression, in order; `guarded` inside a select branch.
  void read_maps(const ir::Expr& e, const Step& s, const ir::AffineDomain& domain, bool guarded,
                 std::vector<std::pair<std::string, AccessMap>>& out) const {
    if (e.kind == ir::ExprKind::Read) {
      const View v = binding(e.tensor);
      out.emplace_back(v.base, detail::view_map(v, tensor(v.base), affine_all(e.indices, s.values),
                                                domain, guarded));
    }
    for (size_t i = 0; i < e.args.size(); ++i) {
      const bool branch = e.kind == ir::ExprKind::Select && i > 0;
      read_maps(*e.args[i], s, domain, guarded || branch, out);
    }
  }

  // The right side with every read written against the storage it reaches, and indices as
  // affine forms with sizes and repeat indices substituted.
  ir::ExprP render(const ir::Expr& e, const Step& s, const ir::AffineDomain& domain) const {
    std::vector<ir::ExprP> args;
    for (const ir::ExprP& a : e.args) args.push_back(render(*a, s, domain));
    switch (e.kind) {
      case ir::ExprKind::Const:
        return ir::expr_const(e.number, e.is_integer_literal);
      case ir::ExprKind::Index: {
        const std::optional<ir::AffineForm> f = ir::to_affine(*e.index, s.values);
        return ir::expr_index(f ? detail::form_expr(*f, domain) : e.index);
      }
      case ir::ExprKind::Read: {
        const View v = binding(e.tensor);
        const detail::BaseAccess a =
            detail::base_access(v, tensor(v.base), affine_all(e.indices, s.values), domain);
        std::vector<ir::IntExprP> index;
        for (const ir::AffineForm& f : a.index) index.push_back(detail::form_expr(f, domain));
        return ir::expr_read(a.name, std::move(index));
      }
      case ir::ExprKind::Unary:
        return ir::expr_unary(e.unary_op, args[0]);
      case ir::ExprKind::Binary:
        return ir::expr_binary(e.binary_op, args[0], args[1]);
      case ir::ExprKind::Select:
        return ir::expr_select(args[0], args[1], args[2]);
      case ir::ExprKind::Cast:
        return ir::expr_cast(e.cast_to, args[0]);
    }
    SOLAR_CHECK(false, "unknown ExprKind");
  }

  static std::string domain_text(const ir::AffineDomain& domain) {
    std::string s;
    for (const ir::AffineLoop& l : domain) {
      s += (s.empty() ? "for " : ", ") + l.var + " in " + detail::form_text(l.lo, domain) + ".." +
           detail::form_text(l.hi, domain);
    }
    return s.empty() ? s : s + ": ";
  }

  // A sliding window: a read index that combines a loop of the output index with a loop reduced
  // over, or an output index that combines two loops (a transposed convolution).
  static bool sliding_window(const std::vector<std::pair<std::string, AccessMap>>& reads,
                             const std::vector<ir::AffineForm>& out) {
    std::set<std::string> out_loops;
    for (const ir::AffineForm& f : out) {
      if (f.coeffs.size() >= 2) return true;
      for (const auto& [v, c] : f.coeffs) out_loops.insert(v);
    }
    return std::any_of(reads.begin(), reads.end(), [&](const auto& read) {
      const std::vector<ir::AffineForm>& index = read.second.index;
      return std::any_of(index.begin(), index.end(), [&](const ir::AffineForm& f) {
        const auto is_out = [&](const auto& term) { return out_loops.contains(term.first); };
        return std::any_of(f.coeffs.begin(), f.coeffs.end(), is_out) &&
               !std::all_of(f.coeffs.begin(), f.coeffs.end(), is_out);
      });
    });
  }

  // The domain over which node n writes its output. A reduction writes every element its output
  // loops reach, each starting at the identity, also where the range reduced over is empty
  // (docs/ir.md, "Execution semantics"): when n's domain is empty but for the loops reduced over
  // (mm of [4, 0] by [0, 5] writes a [4, 5] tensor of zeros), the output loops alone. Else n's
  // own domain.
  static ir::AffineDomain written_domain(const Node& n, const std::vector<ir::AffineForm>& out) {
    if (n.reduction == Reduction::None || n.points != 0) return n.domain;
    const auto in_output = [&](const std::string& var) {
      return std::any_of(out.begin(), out.end(), [&](const auto& f) { return f.coeff(var) != 0; });
    };
    ir::AffineDomain kept;
    for (const ir::AffineLoop& l : n.domain) {
      if (!in_output(l.var)) continue;
      for (const ir::AffineForm* bound : {&l.lo, &l.hi}) {
        for (const auto& [var, c] : bound->coeffs) {
          if (!in_output(var)) return n.domain;  // bounded by a loop reduced over: an error
        }
      }
      kept.push_back(l);
    }
    return kept;
  }

  void kernel(const Step& s) {
    const ir::Kernel& k = std::get<ir::Kernel>(s.stmt->node);
    Node n;
    n.name = unique_name(k.name + s.suffix);
    n.kind = NodeKind::Einsum;
    n.op = "kernel";
    n.op_block = s.op_block;
    std::optional<ir::AffineDomain> domain = ir::to_affine_domain(k.loops, s.values);
    SOLAR_CHECK(domain.has_value(), "lift: a checked loop bound is not affine");
    n.domain = std::move(*domain);
    n.points = ir::count_points(n.domain);
    n.reduction = reduction_of(k.op);

    std::vector<std::pair<std::string, AccessMap>> reads;
    read_maps(*k.rhs, s, n.domain, false, reads);
    const std::vector<ir::AffineForm> out_index = affine_all(k.out_indices, s.values);
    const TensorInfo& out = tensor(k.out);
    const AccessMap write = detail::view_map(detail::whole_view(out), out, out_index,
                                             written_domain(n, out_index), false);
    n.einsum = domain_text(n.domain) + write.text + " " +
               std::string(ir::assign_op_spelling(k.op)) + " " +
               ir::print(*render(*k.rhs, s, n.domain));
    n.reads = group(reads);
    n.writes = group({{k.out, write}});
    n.value_loops = value_loops(*k.rhs, s, n.domain);

    n.counts = detail::count_ops(k, n.points);
    n.scales_a_read = detail::scales_a_read(k);
    const detail::DTypeOf dtype_of = [&](const std::string& t) { return tensor(t).dtype; };
    n.out_dtype = out.dtype;
    n.compute_dtype = detail::compute_dtype(*k.rhs, out.dtype, dtype_of);
    if (const std::optional<detail::MacOperands> m = detail::mac_operands(k)) {
      const std::optional<ir::DType> a = detail::value_dtype(*m->lhs, dtype_of);
      const std::optional<ir::DType> b = detail::value_dtype(*m->rhs, dtype_of);
      n.mac_lhs_dtype = a ? a : b ? b : out.dtype;
      n.mac_rhs_dtype = b ? b : a ? a : out.dtype;
      n.conv_like = sliding_window(reads, out_index);
      if (const auto o = mac_origins(*m, s, n.domain)) {
        if (o->first != *n.mac_lhs_dtype || o->second != *n.mac_rhs_dtype) {
          n.mac_lhs_origin = o->first;
          n.mac_rhs_origin = o->second;
        }
      }
    }
    track_kernel(k, s, n.domain);
    g_.nodes.push_back(std::move(n));
    materialise(k.out);
  }

  // The node that generates random draw `name` (a `random` tensor), just before its first
  // reader: every element written once, one simple operation per element (a lower bound on a
  // generator's work: Philox rounds and the distribution's transform take more), nothing read.
  // Its own framework operation (no op block), as eager runs a random op alone.
  void draw(const std::string& name) {
    const TensorInfo& t = tensor(name);
    Node n;
    n.name = unique_name("draw:" + name);
    n.kind = NodeKind::Einsum;
    n.op = "random";
    n.domain = detail::box_domain(t.shape);
    n.points = t.numel;
    const AccessMap write = detail::box_map(detail::whole_view(t), t);
    n.einsum = domain_text(n.domain) + write.text + " = random()";
    n.writes = group({{name, write}});
    n.counts.simple = t.numel;
    n.out_dtype = t.dtype;
    n.compute_dtype = ir::dtype_is_float(t.dtype) ? t.dtype : ir::DType::F32;
    g_.nodes.push_back(std::move(n));
  }

  static Reduction reduction_of(ir::AssignOp op) {
    switch (op) {
      case ir::AssignOp::Assign:
        return Reduction::None;
      case ir::AssignOp::Sum:
        return Reduction::Sum;
      case ir::AssignOp::Prod:
        return Reduction::Prod;
      case ir::AssignOp::Max:
        return Reduction::Max;
      case ir::AssignOp::Min:
        return Reduction::Min;
    }
    SOLAR_CHECK(false, "unknown AssignOp");
  }

  // ------------------------------------------------------------------------------------------
  // Composition statements

  int64_t eval(const ir::IntExpr& e, const Step& s) const {
    return ir::eval_int(e, s.values, p_.file);
  }

  std::vector<int64_t> ints(const ir::Compose& c, std::string_view key, const Step& s) const {
    std::vector<int64_t> v;
    for (const ir::ComposeAttr& a : c.attrs) {
      if (a.key != key) continue;
      for (const ir::IntExprP& e : a.ints) v.push_back(eval(*e, s));
    }
    return v;
  }

  std::vector<detail::SliceBounds> slices(const std::vector<ir::SliceSpec>& specs,
                                          const std::vector<int64_t>& shape, const Step& s) const {
    std::vector<detail::SliceBounds> out;
    for (size_t d = 0; d < specs.size(); ++d) {
      const ir::SliceSpec& sp = specs[d];
      detail::SliceBounds b;
      b.is_index = sp.is_index;
      b.start = sp.start ? eval(*sp.start, s) : 0;
      b.stop = sp.stop ? eval(*sp.stop, s) : shape[d];
      b.step = sp.step ? eval(*sp.step, s) : 1;
      out.push_back(b);
    }
    return out;
  }

  // The `value=` of a pad: a number, or an integer expression; 0 when absent.
  double pad_value(const ir::Compose& c, const Step& s) const {
    for (const ir::ComposeAttr& a : c.attrs) {
      if (a.key != "value") continue;
      if (a.number) return *a.number;
      if (a.ints.size() == 1) return static_cast<double>(eval(*a.ints[0], s));
    }
    return 0.0;
  }

  // The view a view statement gives, or nullopt when its data must move.
  std::optional<View> view_of(const ir::Compose& c, const Step& s) const {
    const View x = binding(c.srcs.at(0));
    const TensorInfo& y = tensor(c.dst);
    switch (c.op) {
      case ir::ComposeOp::Copy:
        if (!c.dst_region.empty() || !same_bytes(tensor(c.srcs[0]).dtype, y.dtype)) {
          return std::nullopt;
        }
        return x;
      case ir::ComposeOp::Slice:
        return detail::slice_view(x, slices(c.src_slices, x.shape, s));
      case ir::ComposeOp::Reshape:
        return detail::reshape_view(x, y.shape);
      case ir::ComposeOp::Permute: {
        std::vector<int64_t> perm;
        for (const ir::IntExprP& e : c.list) perm.push_back(eval(*e, s));
        // A complex tensor's pairs stay last.
        if (complex_.contains(c.dst)) perm.push_back(static_cast<int64_t>(perm.size()));
        return detail::permute_view(x, perm);
      }
      case ir::ComposeOp::Broadcast: {
        std::vector<int64_t> dims = ints(c, "dims", s);
        const bool has_dims = std::any_of(c.attrs.begin(), c.attrs.end(),
                                          [](const ir::ComposeAttr& a) { return a.key == "dims"; });
        for (size_t i = 0; !has_dims && i < x.shape.size(); ++i) {  // numpy: align on the right
          dims.push_back(static_cast<int64_t>(y.shape.size() - x.shape.size() + i));
        }
        return detail::broadcast_view(x, y.shape, dims);
      }
      case ir::ComposeOp::Pad:
        return detail::pad_view(x, ints(c, "lo", s), ints(c, "hi", s), pad_value(c, s));
      case ir::ComposeOp::ViewAsReal:  // the pairs are the complex tensor's lifted form
      case ir::ComposeOp::ViewAsComplex:
        return detail::reshape_view(x, y.shape);
      case ir::ComposeOp::Rfft:
      case ir::ComposeOp::Irfft:
      case ir::ComposeOp::Fft:
      case ir::ComposeOp::Ifft:
      case ir::ComposeOp::Concat:
      case ir::ComposeOp::Take:
      case ir::ComposeOp::Gather:
      case ir::ComposeOp::Scatter:
      case ir::ComposeOp::Argsort:
        return std::nullopt;
    }
    SOLAR_CHECK(false, "unknown ComposeOp");
  }

  // `dst = view of an intermediate` at step i, where dst is a graph output and the view lists
  // the intermediate's elements in its own row-major order (a reshape, a same-dtype copy): the
  // kernels that wrote the intermediate could have written the output's storage directly, so
  // no copy is charged (no real kernel makes one). The intermediate becomes an alias of the
  // output: the accesses of its storage so far are the output's, and later reads of it read the
  // output. Only when nothing else writes either of them and the output is not read before.
  bool alias_into_output(size_t i, const std::string& dst, const View& v) {
    const TensorInfo& y = tensor(dst);
    if (y.role != ir::TensorRole::Output || v.base == dst) return false;
    const TensorInfo& base = tensor(v.base);
    if (v.padded() || base.role != ir::TensorRole::Intermediate || base.dtype != y.dtype ||
        base.numel != y.numel || v.offset != 0 || detail::numel(v.shape) != base.numel ||
        v.strides != detail::row_major_strides(v.shape)) {
      return false;
    }
    const std::vector<size_t>& base_writes = writes_at_[v.base];
    if (base_writes.empty() || base_writes.back() > i || writes_at_[dst] != std::vector{i}) {
      return false;
    }
    const std::vector<size_t>& dst_reads = reads_at_[dst];
    if (!dst_reads.empty() && dst_reads.front() < i) return false;
    for (Node& n : g_.nodes) {
      for (auto* list : {&n.reads, &n.writes}) {
        for (Access& a : *list) {
          if (a.tensor == v.base) a.tensor = dst;
        }
      }
    }
    for (auto& [name, bound] : bindings_) {
      if (bound.base == v.base) bound.base = dst;
    }
    View alias = detail::whole_view(base);
    alias.base = dst;
    bindings_[v.base] = alias;
    origin_[dst] = tensor_origin(v.base);
    if (expanded_.contains(v.base)) expanded_.insert(dst);
    return true;
  }

  void compose(size_t i) {
    const Step& s = steps_[i];
    const ir::Compose& c = std::get<ir::Compose>(s.stmt->node);
    std::optional<View> v = view_of(c, s);
    if (v && can_fold(i, c.dst, v->base)) {
      bindings_[c.dst] = std::move(*v);
      return;
    }
    if (v && alias_into_output(i, c.dst, *v)) return;
    if (v && in_place_alias(i, c, *v)) return;
    if (c.op == ir::ComposeOp::Scatter) in_place_alias(i, c, binding(c.srcs[0]));
    Movement m = movement(c, s, v);
    const TensorInfo& y = tensor(c.dst);
    const bool expanded = v && expanded_output(*v, y, m);
    Node n;
    n.name = unique_name(std::string(ir::compose_op_name(c.op)) + ":" + c.dst + s.suffix);
    n.kind = NodeKind::Movement;
    n.op = ir::compose_op_name(c.op);
    n.op_block = s.op_block;
    n.einsum = statement_text(*s.stmt);
    n.domain = detail::box_domain(m.points_shape);
    n.points = detail::numel(m.points_shape);
    n.reads = group(m.reads);
    n.writes = group(m.writes);
    n.out_dtype = y.dtype;
    n.compute_dtype = y.dtype;
    n.counts = fft_ops(c, s);
    const bool view_as = c.op == ir::ComposeOp::ViewAsReal || c.op == ir::ComposeOp::ViewAsComplex;
    // A graph output that is a slice or a permutation of an intermediate is a view in the
    // framework (`irfft(...)[..., :L]`): eager returns it without a kernel, so the unfused model
    // charges it nothing (the intermediate's writer wrote every element); the fused model still
    // counts the output's elements written.
    const bool output_view = v && y.role == ir::TensorRole::Output &&
                             (c.op == ir::ComposeOp::Slice || c.op == ir::ComposeOp::Permute);
    n.relabel = (c.op == ir::ComposeOp::Reshape || view_as || expanded || output_view) &&
                tensor(binding(c.srcs.at(0)).base).role == ir::TensorRole::Intermediate;
    for (const Access& a : n.reads)
      n.compute_dtype = detail::promote(n.compute_dtype, tensor(a.tensor).dtype);
    track_movement(c, n);
    g_.nodes.push_back(std::move(n));
    if (!aliased_inputs_.contains(c.dst)) materialise(c.dst);
  }

  // The operations of an FFT statement (none for the other composition statements): one
  // transform per line along `dim` of the real signal (rfft: X; irfft: Y; fft, ifft: X), of
  // that signal's length n (detail::fft_counts). Lifted shapes end in the pairs' 2.
  OpCounts fft_ops(const ir::Compose& c, const Step& s) const {
    const bool real = c.op == ir::ComposeOp::Rfft || c.op == ir::ComposeOp::Irfft;
    if (!real && c.op != ir::ComposeOp::Fft && c.op != ir::ComposeOp::Ifft) return {};
    std::vector<int64_t> signal = tensor(c.op == ir::ComposeOp::Irfft ? c.dst : c.srcs[0]).shape;
    if (!real) signal.pop_back();  // a complex X: its pairs
    const auto dim = static_cast<size_t>(ints(c, "dim", s).at(0));
    const int64_t n = signal.at(dim);
    return detail::fft_counts(n == 0 ? 0 : detail::numel(signal) / n, n, real);
  }

  // The canonical text of one statement (repeat indices stay symbolic; the node name has them).
  static std::string statement_text(const ir::Stmt& s) {
    ir::Program one;
    one.body.push_back(std::make_shared<const ir::Stmt>(ir::Stmt{s.node, {}, {}}));
    std::string text = ir::print(one);
    while (!text.empty() && text.back() == '\n') text.pop_back();
    return text;
  }

  struct Movement {
    std::vector<std::pair<std::string, AccessMap>> reads, writes;
    std::vector<int64_t> points_shape;  // the elements moved
  };

  // A map of `v` over the box of `shape`.
  std::pair<std::string, AccessMap> box(const View& v) const {
    return {v.base, detail::box_map(v, tensor(v.base))};
  }

  std::pair<std::string, AccessMap> whole(const std::string& name) const {
    return box(detail::whole_view(tensor(name)));
  }

  // A graph output that is an expanded (broadcast) view of a smaller tensor, `y = expand(b)`:
  // PyTorch returns it as a view with stride 0 along the broadcast dimensions, so the output's
  // storage holds only the base's elements (docs/einsum.md, "Expanded outputs"). Its write map
  // gets stride 0 there: it touches as many elements as the base has, and costs the base's
  // bytes. When the base is an intermediate, the node is a relabelling (Node::relabel): the
  // kernel that writes the base writes the output's storage, and the view itself moves nothing.
  bool expanded_output(const View& v, const TensorInfo& y, Movement& m) const {
    if (y.role != ir::TensorRole::Output || v.padded() || v.shape != y.shape) return false;
    View w = detail::whole_view(y);
    bool broadcast = false;
    for (size_t d = 0; d < v.shape.size(); ++d) {
      if (v.strides[d] == 0 && v.shape[d] > 1) {
        w.strides[d] = 0;
        broadcast = true;
      }
    }
    if (!broadcast || m.writes.size() != 1) return false;
    m.writes[0] = box(w);
    return true;
  }

  // A data-dependent map: `moved` elements of `name`, printed as `text`.
  std::pair<std::string, AccessMap> data_dependent(const std::string& name, std::string text,
                                                   int64_t moved) const {
    AccessMap m;
    m.text = std::move(text);
    m.data_dependent = true;
    m.moved = moved;
    return {binding(name).base, std::move(m)};
  }

  // The text of a data-dependent access of x (of rank `rank`) over the loops d0, d1, ... of
  // the elements moved: "x[d0, idx[d1, d2], d3]" for take (I's loops replace dimension dim),
  // "x[d0, idx[d0, d1]]" for gather and scatter (the loops of I's own dimensions).
  static std::string indexed_text(const std::string& x, size_t rank, size_t dim,
                                  const std::string& idx, size_t idx_rank, bool take) {
    const auto var = [](size_t k) { return "d" + std::to_string(k); };
    const size_t first = take ? dim : 0;
    std::string s = x + "[";
    for (size_t d = 0; d < rank; ++d) {
      if (d > 0) s += ", ";
      if (d != dim) {
        s += var(take && d > dim ? d - 1 + idx_rank : d);
        continue;
      }
      s += idx + "[";
      for (size_t k = 0; k < idx_rank; ++k) s += (k ? ", " : "") + var(first + k);
      s += "]";
    }
    return s + "]";
  }

  Movement movement(const ir::Compose& c, const Step& s, const std::optional<View>& view) const {
    Movement m;
    const TensorInfo& y = tensor(c.dst);
    m.points_shape = y.shape;
    switch (c.op) {
      case ir::ComposeOp::Copy: {
        // An alias of an input updated in place (in_place_alias): the region of the input.
        const View region = *detail::slice_view(
            aliased_inputs_.contains(c.dst) ? binding(c.dst) : detail::whole_view(y),
            slices(c.dst_region, y.shape, s));
        m.reads.push_back(box(binding(c.srcs[0])));
        m.writes.push_back(box(region));
        m.points_shape = region.shape;
        return m;
      }
      case ir::ComposeOp::Slice:  // no view: a single element in the padding, nothing read
      case ir::ComposeOp::Permute:
      case ir::ComposeOp::Broadcast:
        if (view) m.reads.push_back(box(*view));
        m.writes.push_back(whole(c.dst));
        return m;
      case ir::ComposeOp::Reshape:
      case ir::ComposeOp::ViewAsReal:
      case ir::ComposeOp::ViewAsComplex:
        m.reads.push_back(box(view ? *view : binding(c.srcs[0])));
        m.writes.push_back(whole(c.dst));
        return m;
      case ir::ComposeOp::Concat:
        concat(c, s, m);
        return m;
      case ir::ComposeOp::Pad:
      case ir::ComposeOp::Rfft:  // reads X, writes Y; its operations: fft_ops
      case ir::ComposeOp::Irfft:
      case ir::ComposeOp::Fft:
      case ir::ComposeOp::Ifft:
      case ir::ComposeOp::Argsort:  // reads X, writes the permutation; comparisons not counted
        m.reads.push_back(box(binding(c.srcs[0])));
        m.writes.push_back(whole(c.dst));
        return m;
      case ir::ComposeOp::Take:
      case ir::ComposeOp::Gather:
        take_or_gather(c, s, m);
        return m;
      case ir::ComposeOp::Scatter:
        scatter(c, s, m);
        return m;
    }
    SOLAR_CHECK(false, "unknown ComposeOp");
  }

  // Each source is written to its own part of Y along `dim`.
  void concat(const ir::Compose& c, const Step& s, Movement& m) const {
    const TensorInfo& y = tensor(c.dst);
    const auto dim = static_cast<size_t>(ints(c, "dim", s).at(0));
    int64_t at = 0;
    for (const std::string& src : c.srcs) {
      const View x = binding(src);
      m.reads.push_back(box(x));
      View part = detail::whole_view(y);
      part.offset = at * part.strides[dim];
      part.shape = x.shape;
      m.writes.push_back(box(part));
      at += x.shape[dim];
    }
  }

  // take: Y[a.., i.., b..] = X[a.., I[i..], b..];  gather: Y[p] = X[p with p[dim] = I[p]].
  // Reads I, and one element of X per element of Y, at positions I decides.
  void take_or_gather(const ir::Compose& c, const Step& s, Movement& m) const {
    const std::string& x = c.srcs[0];
    const std::string& idx = c.srcs[1];
    const TensorInfo& y = tensor(c.dst);
    const auto dim = static_cast<size_t>(ints(c, "dim", s).at(0));
    const size_t x_rank = tensor(x).shape.size();
    const size_t idx_rank = tensor(idx).shape.size();
    m.reads.push_back(box(binding(idx)));
    const bool take = c.op == ir::ComposeOp::Take;
    const std::string text = indexed_text(x, x_rank, dim, idx, idx_rank, take);
    auto read = data_dependent(x, text, y.numel);
    // A take whose index is a router's choice, known to hold `distinct=D` different values
    // (top-k routing: k experts per token), is routed: under Routing::Concentrated it reads D
    // slices (X's other dimensions over Y's loops: Y's elements / I's each). Other takes and
    // gathers read the rows they name, all taken distinct, under every routing.
    const int64_t chosen = take ? tensor(idx).numel : y.shape[dim];
    const std::vector<int64_t> distinct = take ? ints(c, "distinct", s) : std::vector<int64_t>{};
    read.second.routed = !distinct.empty();
    read.second.fewest = chosen == 0 || distinct.empty() ? 0 : distinct[0] * (y.numel / chosen);
    // The dimensions other than `dim` follow the loops of the elements moved, as in the text.
    const View xv = binding(x);
    read.second.domain = detail::box_domain(y.shape);
    read.second.offset = xv.offset;
    read.second.strides = xv.strides;
    read.second.extent = xv.shape;
    read.second.data_dim = static_cast<int64_t>(dim);
    for (size_t d = 0; d < x_rank; ++d) {
      const size_t loop = take && d > dim ? d - 1 + idx_rank : d;
      read.second.index.push_back(d == dim ? ir::AffineForm{}
                                           : ir::AffineForm{0, {{"d" + std::to_string(loop), 1}}});
    }
    m.reads.push_back(std::move(read));
    m.writes.push_back(whole(c.dst));
  }

  // Y = X, then Y[.., I[p], ..] op= S[p] for every position p of I. In place (Y is X's own
  // storage), only the updates move: I, the elements of S at I's positions, and as many of Y
  // (also read first when reduce is not none). Else X is copied to Y first.
  void scatter(const ir::Compose& c, const Step& s, Movement& m) const {
    const View x = binding(c.srcs[0]);
    const TensorInfo& y = tensor(c.dst);
    const TensorInfo& idx = tensor(c.srcs[1]);
    const auto dim = static_cast<size_t>(ints(c, "dim", s).at(0));
    std::vector<detail::SliceBounds> leading;  // I is no larger than S: S is read at I's positions
    for (const int64_t n : idx.shape) leading.push_back({false, 0, n, 1});
    const View s_part = *detail::slice_view(binding(c.srcs[2]), leading);
    m.reads.push_back(box(binding(c.srcs[1])));
    m.reads.push_back(box(s_part));
    const bool in_place = detail::is_whole(x, y) || aliased_inputs_.contains(c.dst);
    if (!in_place) {
      m.reads.push_back(box(x));
      m.writes.push_back(whole(c.dst));
      return;
    }
    std::string reduce = "none";
    for (const ir::ComposeAttr& a : c.attrs) {
      if (a.key == "reduce") reduce = a.word;
    }
    const std::string text =
        indexed_text(c.dst, y.shape.size(), dim, c.srcs[1], idx.shape.size(), false);
    // Every index the same value: one position along dim for each of I's other positions.
    const int64_t along = idx.shape[dim];
    const int64_t fewest = along == 0 ? 0 : idx.numel / along;
    if (reduce != "none") {
      m.reads.push_back(data_dependent(c.dst, text, idx.numel));
      m.reads.back().second.fewest = fewest;
    }
    m.writes.push_back(data_dependent(c.dst, text, idx.numel));
    m.writes.back().second.fewest = fewest;
    m.points_shape = idx.shape;
  }

  const ir::Program& p_;
  Graph g_;
  std::vector<Step> steps_;
  std::map<std::string, size_t> tensor_index_;  // g_.tensors by name (first declaration)
  std::map<std::string, std::vector<size_t>> reads_at_, writes_at_;
  std::map<std::string, View> bindings_;
  std::map<std::string, ir::DType> origin_;  // origin precision of a storage tensor's values
  std::set<std::string> fp4_codes_;          // storage tensors of 4-bit codes of fp4 data
  std::set<std::string> expanded_;           // storage tensors holding copies of fewer elements
  std::set<std::string> aliased_inputs_;     // intermediates that alias an input updated in place
  std::map<std::string, int> name_counts_;
  std::vector<std::string> random_;  // the `random` tensors
  std::set<std::string> complex_;    // the complex tensors (each lifted as its real pairs)
  std::map<size_t, std::vector<std::string>> draws_at_;  // step -> draws first read there
};

// Checked with the free sizes of `sizes` as overrides. A derived size in `sizes` must have the
// value it derives to.
ir::CheckedProgram bind_checked(const ir::Program& p, const ir::SymbolValues& sizes) {
  ir::SymbolValues overrides;
  for (const auto& [name, value] : sizes) {
    const ir::SizeDecl* d = p.find_size(name);
    if (d == nullptr || d->is_free()) overrides[name] = value;
  }
  ir::CheckedProgram checked = ir::check_program(p, overrides);
  const ir::SymbolValues& bound = checked.sizes();
  for (const auto& [name, value] : sizes) {
    if (bound.at(name) != value) {
      throw UserError("size '" + name + "' is derived from other sizes and is " +
                      std::to_string(bound.at(name)) + " here, not " + std::to_string(value));
    }
  }
  return checked;
}

}  // namespace

Graph lift(const ir::Program& p, const ir::SymbolValues& sizes) {
  return lift(bind_checked(p, sizes));
}

namespace {
std::atomic<int64_t> lifts{0};
}  // namespace

Graph lift(const ir::CheckedProgram& p) {
  lifts.fetch_add(1, std::memory_order_relaxed);
  return Lifter(p.program(), p.sizes()).run();
}

int64_t lift_count() { return lifts.load(std::memory_order_relaxed); }

}  // namespace solar::einsum
