// Lowering rules that splice in IR written elsewhere: a node of op `solar.ir_fragment` carries an
// Affine Loop IR program (e.g. an operator the LLM agent translated and verified on its own,
// docs/llm.md) and the capture tensors its inputs and outputs stand for. See docs/lowering.md.
//
//   {"name": "gelu", "op": "solar.ir_fragment",
//    "args": {"program": "<IR text>", "inputs": [{"tensor": "x"}], "replaces":
//    "aten.gelu.default"}, "outputs": ["gelu"]}
//
// The fragment's `input` and `weight` declarations, in declaration order, are bound to "inputs";
// its `output` declarations, in order, to the node's outputs; a bound pair has the same dtype and
// shape. The splice works on the parsed fragment (never on its text): sizes and repeat indices
// become constants (repeat blocks are unrolled), each `tensor` becomes a fresh temporary, each
// kernel gets a fresh name and its loop indices the lowering's prefix.
#include <string>
#include <utility>
#include <vector>

#include "rules.h"
#include "solar/ir/ast.h"
#include "solar/ir/checker.h"
#include "solar/ir/diagnostic.h"
#include "solar/ir/parser.h"
#include "solar/ir/printer.h"
#include "solar/ir/sizes.h"
#include "solar/util/error.h"
#include "solar/util/text.h"

namespace solar::frontend {

namespace {

// The most statements a fragment may expand to once its repeat blocks are unrolled.
constexpr int64_t kMaxStatements = 65536;

class Splicer {
 public:
  explicit Splicer(NodeLowering& n) : n_(n) {}

  void splice(const ir::Program& fragment) {
    consts_ = ir::check_or_throw(fragment);
    bind(fragment);
    for (const ir::StmtP& s : fragment.body) emit(*s);
  }

 private:
  // Binds the fragment's tensors to the node's (inputs, weights, outputs) or to fresh temporaries.
  void bind(const ir::Program& fragment) {
    const std::vector<TensorInfo> inputs = n_.tensor_list("inputs");
    size_t n_in = 0, n_out = 0;
    for (const ir::TensorDecl& t : fragment.tensors) {
      std::vector<int64_t> shape;
      for (const ir::IntExprP& d : t.shape) shape.push_back(ir::eval_int(*d, consts_));
      if (t.role == ir::TensorRole::Intermediate) {
        names_[t.name] = n_.temp(t.name, t.dtype, shape).name;
        continue;
      }
      const bool is_output = t.role == ir::TensorRole::Output;
      const size_t k = is_output ? n_out++ : n_in++;
      const size_t available = is_output ? n_.outputs() : inputs.size();
      if (k >= available) continue;  // counted and reported below
      const TensorInfo& bound = is_output ? n_.out(k) : inputs[k];
      if (bound.dtype != t.dtype || bound.shape != shape) {
        throw UserError("fragment " + std::string(ir::tensor_role_keyword(t.role)) + " '" + t.name +
                        "' is " + std::string(ir::dtype_name(t.dtype)) + shape_text(shape) +
                        " but it is bound to '" + bound.name + "' of " +
                        std::string(ir::dtype_name(bound.dtype)) + shape_text(bound.shape));
      }
      names_[t.name] = bound.name;
    }
    if (n_in != inputs.size() || n_out != n_.outputs()) {
      throw UserError("the fragment declares " + std::to_string(n_in) + " inputs and weights and " +
                      std::to_string(n_out) + " outputs, but the node binds " +
                      std::to_string(inputs.size()) + " inputs and " +
                      std::to_string(n_.outputs()) + " outputs");
    }
  }

  ir::IntExprP subst(const ir::IntExprP& e) const {
    if (!e) return e;
    switch (e->op) {
      case ir::IntOp::Const:
        return e;
      case ir::IntOp::Sym:
        return e->sym_kind == ir::SymKind::Loop ? e : ir::int_const(consts_.at(e->name));
      case ir::IntOp::Neg:
        return ir::int_unary(e->op, subst(e->a));
      case ir::IntOp::Add:
      case ir::IntOp::Sub:
      case ir::IntOp::Mul:
      case ir::IntOp::FloorDiv:
      case ir::IntOp::Mod:
      case ir::IntOp::Min:
      case ir::IntOp::Max:
        return ir::int_binary(e->op, subst(e->a), subst(e->b));
    }
    SOLAR_CHECK(false, "unknown integer operation");
  }

  std::vector<ir::IntExprP> subst(const std::vector<ir::IntExprP>& v) const {
    std::vector<ir::IntExprP> result;
    for (const ir::IntExprP& e : v) result.push_back(subst(e));
    return result;
  }

  ir::ExprP subst(const ir::ExprP& e) const {
    std::vector<ir::ExprP> args;
    for (const ir::ExprP& a : e->args) args.push_back(subst(a));
    switch (e->kind) {
      case ir::ExprKind::Const:
        return e;
      case ir::ExprKind::Index:
        return ir::expr_index(subst(e->index));
      case ir::ExprKind::Read:
        return ir::expr_read(names_.at(e->tensor), subst(e->indices));
      case ir::ExprKind::Unary:
        return ir::expr_unary(e->unary_op, args[0]);
      case ir::ExprKind::Binary:
        return ir::expr_binary(e->binary_op, args[0], args[1]);
      case ir::ExprKind::Select:
        return ir::expr_select(args[0], args[1], args[2]);
      case ir::ExprKind::Cast:
        return ir::expr_cast(e->cast_to, args[0]);
    }
    SOLAR_CHECK(false, "unknown expression kind");
  }

  std::vector<ir::SliceSpec> subst(std::vector<ir::SliceSpec> slices) const {
    for (ir::SliceSpec& s : slices) {
      s.start = subst(s.start);
      s.stop = subst(s.stop);
      s.step = subst(s.step);
      s.loc = {};
    }
    return slices;
  }

  void count() {
    if (++emitted_ > kMaxStatements) {
      throw UserError("the fragment expands to more than " + std::to_string(kMaxStatements) +
                      " statements once its repeat blocks are unrolled");
    }
  }

  void emit(const ir::Stmt& s) {
    switch (s.kind()) {
      case ir::StmtKind::Kernel:
        emit_kernel(std::get<ir::Kernel>(s.node));
        return;
      case ir::StmtKind::Compose:
        emit_compose(std::get<ir::Compose>(s.node));
        return;
      case ir::StmtKind::Repeat: {
        const auto& r = std::get<ir::Repeat>(s.node);
        const int64_t lo = ir::eval_int(*r.lo, consts_), hi = ir::eval_int(*r.hi, consts_);
        for (int64_t t = lo; t < hi; ++t) {
          consts_[r.var] = t;
          for (const ir::StmtP& body : r.body) emit(*body);
        }
        consts_.erase(r.var);
        return;
      }
      case ir::StmtKind::Op:  // the node's own statements are one op block already
        for (const ir::StmtP& body : std::get<ir::OpBlock>(s.node).body) emit(*body);
        return;
    }
    SOLAR_CHECK(false, "unknown statement kind");
  }

  void emit_kernel(const ir::Kernel& k) {
    count();
    std::string loops, lhs = names_.at(k.out) + "[";
    for (const ir::Loop& l : k.loops) {
      loops += (loops.empty() ? "" : ", ") + l.name + " in " + ir::print(*subst(l.lo)) + ".." +
               ir::print(*subst(l.hi));
    }
    for (size_t i = 0; i < k.out_indices.size(); ++i) {
      lhs += (i ? ", " : "") + ir::print(*subst(k.out_indices[i]));
    }
    // NodeLowering::kernel gives the kernel a fresh name and prefixes the loop indices.
    n_.kernel(k.name, loops, lhs + "]", std::string(ir::assign_op_spelling(k.op)),
              ir::print(*subst(k.rhs)));
  }

  void emit_compose(const ir::Compose& c) {
    count();
    ir::Compose out = c;
    out.dst = names_.at(c.dst);
    for (std::string& src : out.srcs) src = names_.at(src);
    out.dst_region = subst(c.dst_region);
    out.src_slices = subst(c.src_slices);
    out.list = subst(c.list);
    for (ir::ComposeAttr& a : out.attrs) {
      a.ints = subst(a.ints);
      a.loc = {};
    }
    ir::Program one;
    one.body.push_back(ir::make_stmt(std::move(out)));
    std::string text = ir::print(one);
    while (!text.empty() && text.back() == '\n') text.pop_back();
    n_.stmt(text);
  }

  NodeLowering& n_;
  ir::SymbolValues consts_;                   // sizes, and the repeat indices being unrolled
  std::map<std::string, std::string> names_;  // fragment tensor -> tensor of the lowered program
  int64_t emitted_ = 0;
};

void fragment_rule(NodeLowering& n) {
  const std::string text = n.string_or("program", "");
  if (text.empty()) throw UserError("missing argument 'program'");
  ir::Program fragment;
  try {
    fragment = ir::parse(text, "fragment");
    Splicer(n).splice(fragment);
  } catch (const ir::DiagnosticError& e) {
    throw UserError(std::string("invalid IR fragment: ") + e.what());
  }
}

}  // namespace

void register_fragment_rules(RuleTable& r) { r["solar.ir_fragment"] = fragment_rule; }

}  // namespace solar::frontend
