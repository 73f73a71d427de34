// Lifting a checked program to an einsum graph (graph.h; docs/einsum.md, "Lifting"). The pieces
// of the lift, one concern each, are listed in lift_internal.h; this file holds the run.
//
// Repeat blocks are unrolled into a list of steps. Every tensor name is bound to a view of some
// tensor's storage (initially its own); a view statement rebinds its destination when it can be
// folded, and every other statement writes the destination's own storage and rebinds it to it.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "counts.h"
#include "footprint.h"
#include "lift_internal.h"
#include "solar/einsum/graph.h"
#include "solar/einsum/lift_count.h"
#include "solar/ir/checker.h"
#include "solar/ir/diagnostic.h"
#include "solar/ir/printer.h"
#include "solar/util/error.h"
#include "view.h"

namespace solar::einsum {
namespace detail {

void Tensors::add(TensorInfo t) {
  index_.emplace(t.name, list_.size());
  list_.push_back(std::move(t));
}

const TensorInfo& Tensors::at(const std::string& name) const {
  const auto it = index_.find(name);
  SOLAR_CHECK(it != index_.end(), "lift: unknown tensor '" + name + "'");
  return list_[it->second];
}

Uses::Uses(const std::vector<Step>& steps) {
  for (size_t i = 0; i < steps.size(); ++i) {
    const ir::Stmt& s = *steps[i].stmt;
    std::vector<std::string> reads;
    if (s.kind() == ir::StmtKind::Kernel) {
      const ir::Kernel& k = std::get<ir::Kernel>(s.node);
      collect_reads(*k.rhs, reads);
      writes_[k.out].push_back(i);
    } else {
      const ir::Compose& c = std::get<ir::Compose>(s.node);
      reads = c.srcs;
      writes_[c.dst].push_back(i);
    }
    for (const std::string& r : reads) {
      std::vector<size_t>& at = reads_[r];
      if (at.empty() || at.back() != i) at.push_back(i);
    }
  }
}

namespace {
const std::vector<size_t> kNoSteps;
}  // namespace

const std::vector<size_t>& Uses::reads(const std::string& name) const {
  const auto it = reads_.find(name);
  return it == reads_.end() ? kNoSteps : it->second;
}

const std::vector<size_t>& Uses::writes(const std::string& name) const {
  const auto it = writes_.find(name);
  return it == writes_.end() ? kNoSteps : it->second;
}

View Bindings::of(const std::string& name) const {
  const auto it = views_.find(name);
  return it == views_.end() ? whole_view(tensors_.at(name)) : it->second;
}

void Bindings::rebase(const std::string& from, const std::string& to) {
  for (auto& [name, bound] : views_) {
    if (bound.base == from) bound.base = to;
  }
}

std::string NodeNames::unique(const std::string& base) {
  const int n = ++counts_[base];
  return n == 1 ? base : base + "#" + std::to_string(n);
}

void collect_reads(const ir::Expr& e, std::vector<std::string>& names) {
  if (e.kind == ir::ExprKind::Read) names.push_back(e.tensor);
  for (const ir::ExprP& a : e.args) collect_reads(*a, names);
}

bool has_read_or_index(const ir::Expr& e) {
  if (e.kind == ir::ExprKind::Read || e.kind == ir::ExprKind::Index) return true;
  return std::any_of(e.args.begin(), e.args.end(),
                     [](const ir::ExprP& a) { return has_read_or_index(*a); });
}

std::vector<ir::AffineForm> affine_all(const std::vector<ir::IntExprP>& index,
                                       const ir::SymbolValues& values) {
  std::vector<ir::AffineForm> forms;
  for (const ir::IntExprP& e : index) {
    std::optional<ir::AffineForm> f = ir::to_affine(*e, values);
    SOLAR_CHECK(f.has_value(), "lift: a checked index is not affine");
    forms.push_back(*f);
  }
  return forms;
}

void read_maps(const Tensors& tensors, const Bindings& bindings, const ir::Expr& e, const Step& s,
               const ir::AffineDomain& domain, bool guarded,
               std::vector<std::pair<std::string, AccessMap>>& out) {
  if (e.kind == ir::ExprKind::Read) {
    const View v = bindings.of(e.tensor);
    out.emplace_back(
        v.base, view_map(v, tensors.at(v.base), affine_all(e.indices, s.values), domain, guarded));
  }
  for (size_t i = 0; i < e.args.size(); ++i) {
    const bool branch = e.kind == ir::ExprKind::Select && i > 0;
    read_maps(tensors, bindings, *e.args[i], s, domain, guarded || branch, out);
  }
}

std::vector<Access> group_maps(const Tensors& tensors,
                               const std::vector<std::pair<std::string, AccessMap>>& maps) {
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
                                  [&](const AccessMap& o) { return same_map(o, m); });
    if (!seen) it->maps.push_back(m);
  }
  for (Access& a : accesses) {
    for (const AccessMap& m : a.maps) a.text += (a.text.empty() ? "" : ", ") + m.text;
    count_access(a, tensors.at(a.tensor));
  }
  return accesses;
}

std::string domain_text(const ir::AffineDomain& domain) {
  std::string s;
  for (const ir::AffineLoop& l : domain) {
    s += (s.empty() ? "for " : ", ") + l.var + " in " + form_text(l.lo, domain) + ".." +
         form_text(l.hi, domain);
  }
  return s.empty() ? s : s + ": ";
}

namespace {

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
void mark_in_place_records(Graph& g, const Tensors& tensors) {
  const auto role = [&](const Access& a) { return tensors.at(a.tensor).role; };
  struct InPlace {
    const Access* into;    // the write into the input
    const Access* values;  // the values it reads
  };
  std::vector<InPlace> in_place;
  for (const Node& n : g.nodes) {
    const auto into = std::find_if(n.writes.begin(), n.writes.end(), [&](const Access& a) {
      return role(a) == ir::TensorRole::Input;
    });
    if (into != n.writes.end() && !n.reads.empty()) in_place.push_back({&*into, &n.reads.back()});
  }
  for (Node& n : g.nodes) {
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
void remove_dead(Graph& g) {
  std::set<std::string> needed;
  for (const TensorInfo& t : g.tensors) {
    if (t.role == ir::TensorRole::Output) needed.insert(t.name);
  }
  std::vector<bool> live(g.nodes.size(), false);
  for (size_t i = g.nodes.size(); i-- > 0;) {
    const Node& n = g.nodes[i];
    live[i] = std::any_of(n.writes.begin(), n.writes.end(),
                          [&](const Access& a) { return needed.contains(a.tensor); });
    if (!live[i]) continue;
    for (const Access& a : n.reads) needed.insert(a.tensor);
  }
  std::vector<Node> kept;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (live[i]) {
      kept.push_back(std::move(g.nodes[i]));
    } else {
      g.dead_nodes.push_back(g.nodes[i].name);
    }
  }
  g.nodes = std::move(kept);
}

void collect_value_loops(const ir::Expr& e, const Step& s, const ir::AffineDomain& domain,
                         std::set<std::string>& used) {
  if (e.kind == ir::ExprKind::Index) {
    const std::optional<ir::AffineForm> f = ir::to_affine(*e.index, s.values);
    for (const ir::AffineLoop& l : domain) {
      if (!f || f->coeff(l.var) != 0) used.insert(l.var);
    }
  }
  for (const ir::ExprP& a : e.args) collect_value_loops(*a, s, domain, used);
}

// The loops of `domain` whose index the expression uses as a value (Node::value_loops), in
// domain order; every loop when an index is not affine.
std::vector<std::string> value_loops(const ir::Expr& e, const Step& s,
                                     const ir::AffineDomain& domain) {
  std::set<std::string> used;
  collect_value_loops(e, s, domain, used);
  std::vector<std::string> out;
  for (const ir::AffineLoop& l : domain) {
    if (used.contains(l.var)) out.push_back(l.var);
  }
  return out;
}

// A sliding window: a read index that combines a loop of the output index with a loop reduced
// over, or an output index that combines two loops (a transposed convolution).
bool sliding_window(const std::vector<std::pair<std::string, AccessMap>>& reads,
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
ir::AffineDomain written_domain(const Node& n, const std::vector<ir::AffineForm>& out) {
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

Reduction reduction_of(ir::AssignOp op) {
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

// The lifted program, built step by step: kernels and random draws here, composition statements
// by the Composer, then dead code removed, in-place records marked and scans collapsed.
class Lifter {
 public:
  Lifter(const ir::Program& p, const ir::SymbolValues& sizes) {
    program_.file = p.file;
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
        program_.complex.insert(t.name);
      }
      info.numel = numel(info.shape);
      info.bytes = info.numel * ir::dtype_size(info.dtype);
      tensors_.add(std::move(info));
    }
    int64_t count = 0;
    count_unrolled(p.body, sizes, p.file, count);
    unroll(p.body, sizes, "", "", program_.steps);
    program_.uses = Uses(program_.steps);
    for (const std::string& r : random_) {
      const std::vector<size_t>& at = program_.uses.reads(r);
      if (!at.empty()) draws_at_[at.front()].push_back(r);
    }
  }

  // Its pieces refer to its members: neither copied nor moved.
  Lifter(const Lifter&) = delete;
  Lifter& operator=(const Lifter&) = delete;

  Graph run() && {
    const std::vector<Step>& steps = program_.steps;
    for (size_t i = 0; i < steps.size(); ++i) {
      const auto draws = draws_at_.find(i);
      if (draws != draws_at_.end()) {
        for (const std::string& r : draws->second) draw(r);
      }
      const ir::Stmt& s = *steps[i].stmt;
      if (s.kind() == ir::StmtKind::Kernel) {
        kernel(steps[i]);
      } else {
        composer_.compose(i);
      }
    }
    remove_dead(g_);
    mark_in_place_records(g_, tensors_);  // after: a dead in-place write has no record
    collapse_scans(g_, tensors_);
    return std::move(g_);
  }

 private:
  const TensorInfo& tensor(const std::string& name) const { return tensors_.at(name); }
  View binding(const std::string& name) const { return bindings_.of(name); }
  std::vector<Access> group(const std::vector<std::pair<std::string, AccessMap>>& maps) const {
    return group_maps(tensors_, maps);
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
        return ir::expr_index(f ? form_expr(*f, domain) : e.index);
      }
      case ir::ExprKind::Read: {
        const View v = binding(e.tensor);
        const BaseAccess a =
            base_access(v, tensor(v.base), affine_all(e.indices, s.values), domain);
        std::vector<ir::IntExprP> index;
        for (const ir::AffineForm& f : a.index) index.push_back(form_expr(f, domain));
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

  void kernel(const Step& s) {
    const ir::Kernel& k = std::get<ir::Kernel>(s.stmt->node);
    Node n;
    n.name = names_.unique(k.name + s.suffix);
    n.kind = NodeKind::Einsum;
    n.op = "kernel";
    n.op_block = s.op_block;
    std::optional<ir::AffineDomain> domain = ir::to_affine_domain(k.loops, s.values);
    SOLAR_CHECK(domain.has_value(), "lift: a checked loop bound is not affine");
    n.domain = std::move(*domain);
    n.points = ir::count_points(n.domain);
    n.reduction = reduction_of(k.op);

    std::vector<std::pair<std::string, AccessMap>> reads;
    read_maps(tensors_, bindings_, *k.rhs, s, n.domain, false, reads);
    const std::vector<ir::AffineForm> out_index = affine_all(k.out_indices, s.values);
    const TensorInfo& out = tensor(k.out);
    const AccessMap write =
        view_map(whole_view(out), out, out_index, written_domain(n, out_index), false);
    n.einsum = domain_text(n.domain) + write.text + " " +
               std::string(ir::assign_op_spelling(k.op)) + " " +
               ir::print(*render(*k.rhs, s, n.domain));
    n.reads = group(reads);
    n.writes = group({{k.out, write}});
    n.value_loops = value_loops(*k.rhs, s, n.domain);

    n.counts = count_ops(k, n.points);
    n.scales_a_read = scales_a_read(k);
    const DTypeOf dtype_of = [&](const std::string& t) { return tensor(t).dtype; };
    n.out_dtype = out.dtype;
    n.compute_dtype = compute_dtype(*k.rhs, out.dtype, dtype_of);
    if (const std::optional<MacOperands> m = mac_operands(k)) {
      const std::optional<ir::DType> a = value_dtype(*m->lhs, dtype_of);
      const std::optional<ir::DType> b = value_dtype(*m->rhs, dtype_of);
      n.mac_lhs_dtype = a ? a : b ? b : out.dtype;
      n.mac_rhs_dtype = b ? b : a ? a : out.dtype;
      n.conv_like = sliding_window(reads, out_index);
      if (const auto o = tracking_.mac_origins(*m, s, n.domain)) {
        if (o->first != *n.mac_lhs_dtype || o->second != *n.mac_rhs_dtype) {
          n.mac_lhs_origin = o->first;
          n.mac_rhs_origin = o->second;
        }
      }
    }
    tracking_.track_kernel(k, s, n.domain);
    g_.nodes.push_back(std::move(n));
    bindings_.materialise(k.out);
  }

  // The node that generates random draw `name` (a `random` tensor), just before its first
  // reader: every element written once, one simple operation per element (a lower bound on a
  // generator's work: Philox rounds and the distribution's transform take more), nothing read.
  // Its own framework operation (no op block), as eager runs a random op alone.
  void draw(const std::string& name) {
    const TensorInfo& t = tensor(name);
    Node n;
    n.name = names_.unique("draw:" + name);
    n.kind = NodeKind::Einsum;
    n.op = "random";
    n.domain = box_domain(t.shape);
    n.points = t.numel;
    const AccessMap write = box_map(whole_view(t), t);
    n.einsum = domain_text(n.domain) + write.text + " = random()";
    n.writes = group({{name, write}});
    n.counts.simple = t.numel;
    n.out_dtype = t.dtype;
    n.compute_dtype = ir::dtype_is_float(t.dtype) ? t.dtype : ir::DType::F32;
    g_.nodes.push_back(std::move(n));
  }

  Graph g_;
  Tensors tensors_{g_.tensors};
  Unrolled program_;
  Bindings bindings_{tensors_};
  Tracking tracking_{tensors_, bindings_};
  NodeNames names_;
  Composer composer_{program_, tensors_, bindings_, tracking_, names_, g_.nodes};
  std::vector<std::string> random_;                      // the `random` tensors
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
}  // namespace detail

Graph lift(const ir::Program& p, const ir::SymbolValues& sizes) {
  return lift(detail::bind_checked(p, sizes));
}

namespace {
std::atomic<int64_t> lifts{0};
}  // namespace

Graph lift(const ir::CheckedProgram& p) {
  lifts.fetch_add(1, std::memory_order_relaxed);
  return detail::Lifter(p.program(), p.sizes()).run();
}

int64_t lift_count() { return lifts.load(std::memory_order_relaxed); }

}  // namespace solar::einsum
