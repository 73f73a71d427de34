// AST factories (structural validation), spelling tables derived from the X-macro lists, and
// structural equality.
#include "solar/ir/ast.h"

#include <algorithm>
#include <cmath>
#include <iterator>

#include "solar/util/error.h"

namespace solar::ir {

namespace {

constexpr std::string_view kIntOpSpellings[] = {
#define SOLAR_X(e, s) s,
    SOLAR_INT_OPS(SOLAR_X)
#undef SOLAR_X
};

struct UnaryInfo {
  std::string_view name;
  char cost;
};
constexpr UnaryInfo kUnaryOps[] = {
#define SOLAR_X(e, s, c) {s, c},
    SOLAR_UNARY_OPS(SOLAR_X)
#undef SOLAR_X
};

struct BinaryInfo {
  std::string_view spelling;
  bool infix;
  int precedence;
  char cost;
};
constexpr BinaryInfo kBinaryOps[] = {
#define SOLAR_X(e, s, inf, p, c) {s, inf, p, c},
    SOLAR_BINARY_OPS(SOLAR_X)
#undef SOLAR_X
};

constexpr std::string_view kAssignSpellings[] = {
#define SOLAR_X(e, s) s,
    SOLAR_ASSIGN_OPS(SOLAR_X)
#undef SOLAR_X
};

constexpr std::string_view kComposeNames[] = {
#define SOLAR_X(e, s) s,
    SOLAR_COMPOSE_OPS(SOLAR_X)
#undef SOLAR_X
};

// Bounds-checked lookup of an enum's entry in its table.
template <typename Table, typename Enum>
const auto& entry(const Table& table, Enum e) {
  const auto i = static_cast<size_t>(e);
  SOLAR_CHECK(i < std::size(table), "enum value out of range");
  return table[i];
}

template <typename P>
bool equal_ptr(const P& a, const P& b) {
  if (!a || !b) return a == b;
  return equal(*a, *b);
}

template <typename P>
bool equal_ptrs(const std::vector<P>& a, const std::vector<P>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                    [](const P& x, const P& y) { return equal_ptr(x, y); });
}

bool equal_number(double a, double b) {
  return a == b ? std::signbit(a) == std::signbit(b) : (std::isnan(a) && std::isnan(b));
}

bool equal(const SliceSpec& a, const SliceSpec& b) {
  return a.is_index == b.is_index && equal_ptr(a.start, b.start) && equal_ptr(a.stop, b.stop) &&
         equal_ptr(a.step, b.step);
}

bool equal(const std::vector<SliceSpec>& a, const std::vector<SliceSpec>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                    [](const SliceSpec& x, const SliceSpec& y) { return equal(x, y); });
}

bool equal(const ComposeAttr& a, const ComposeAttr& b) {
  const bool numbers_equal = a.number.has_value() == b.number.has_value() &&
                             (!a.number || equal_number(*a.number, *b.number));
  return a.key == b.key && equal_ptrs(a.ints, b.ints) && a.is_list == b.is_list && numbers_equal &&
         a.word == b.word;
}

bool equal(const Loop& a, const Loop& b) {
  return a.name == b.name && equal_ptr(a.lo, b.lo) && equal_ptr(a.hi, b.hi);
}

bool equal(const Kernel& a, const Kernel& b) {
  return a.name == b.name &&
         std::equal(a.loops.begin(), a.loops.end(), b.loops.begin(), b.loops.end(),
                    [](const Loop& x, const Loop& y) { return equal(x, y); }) &&
         a.out == b.out && equal_ptrs(a.out_indices, b.out_indices) && a.op == b.op &&
         equal_ptr(a.rhs, b.rhs);
}

bool equal(const Compose& a, const Compose& b) {
  return a.op == b.op && a.dst == b.dst && equal(a.dst_region, b.dst_region) && a.srcs == b.srcs &&
         equal(a.src_slices, b.src_slices) && equal_ptrs(a.list, b.list) &&
         std::equal(a.attrs.begin(), a.attrs.end(), b.attrs.begin(), b.attrs.end(),
                    [](const ComposeAttr& x, const ComposeAttr& y) { return equal(x, y); });
}

bool equal(const Repeat& a, const Repeat& b) {
  return a.var == b.var && equal_ptr(a.lo, b.lo) && equal_ptr(a.hi, b.hi) &&
         equal_ptrs(a.body, b.body);
}

bool equal(const OpBlock& a, const OpBlock& b) {
  return a.name == b.name && equal_ptrs(a.body, b.body);
}

bool equal(const SizeDecl& a, const SizeDecl& b) {
  return a.name == b.name && equal_ptr(a.value, b.value) && a.comments == b.comments;
}

bool equal(const TensorDecl& a, const TensorDecl& b) {
  return a.name == b.name && a.role == b.role && a.dtype == b.dtype &&
         equal_ptrs(a.shape, b.shape) && a.comments == b.comments;
}

template <typename T>
bool equal_all(const std::vector<T>& a, const std::vector<T>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                    [](const T& x, const T& y) { return equal(x, y); });
}

// An expression node of `kind` with operands `args` (all non-null).
Expr new_expr(ExprKind kind, std::vector<ExprP> args, Loc loc) {
  for (const ExprP& a : args) SOLAR_CHECK(a != nullptr, "expression with a null operand");
  Expr e{};
  e.kind = kind;
  e.args = std::move(args);
  e.loc = loc;
  return e;
}

ExprP make_expr(Expr e) { return std::make_shared<const Expr>(std::move(e)); }

}  // namespace

// ---------------------------------------------------------------------------------------------
// Integer expressions

IntExprP int_const(int64_t v, Loc loc) {
  IntExpr e{};
  e.op = IntOp::Const;
  e.value = v;
  e.loc = loc;
  return std::make_shared<const IntExpr>(std::move(e));
}

IntExprP int_sym(std::string name, SymKind kind, Loc loc) {
  SOLAR_CHECK(!name.empty(), "int_sym: empty name");
  IntExpr e{};
  e.op = IntOp::Sym;
  e.name = std::move(name);
  e.sym_kind = kind;
  e.loc = loc;
  return std::make_shared<const IntExpr>(std::move(e));
}

IntExprP int_unary(IntOp op, IntExprP a, Loc loc) {
  SOLAR_CHECK(op == IntOp::Neg, "int_unary: op must be Neg");
  SOLAR_CHECK(a != nullptr, "int_unary: null operand");
  IntExpr e{};
  e.op = op;
  e.a = std::move(a);
  e.loc = loc;
  return std::make_shared<const IntExpr>(std::move(e));
}

IntExprP int_binary(IntOp op, IntExprP a, IntExprP b, Loc loc) {
  SOLAR_CHECK(op != IntOp::Const && op != IntOp::Sym && op != IntOp::Neg,
              "int_binary: op must be binary");
  SOLAR_CHECK(a != nullptr && b != nullptr, "int_binary: null operand");
  IntExpr e{};
  e.op = op;
  e.a = std::move(a);
  e.b = std::move(b);
  e.loc = loc;
  return std::make_shared<const IntExpr>(std::move(e));
}

std::string_view int_op_spelling(IntOp op) { return entry(kIntOpSpellings, op); }

// ---------------------------------------------------------------------------------------------
// Value expressions

std::string_view unary_op_name(UnaryOp op) { return entry(kUnaryOps, op).name; }

std::optional<UnaryOp> unary_op_from_name(std::string_view name) {
  for (size_t i = 0; i < std::size(kUnaryOps); ++i) {
    const auto op = static_cast<UnaryOp>(i);
    if (op == UnaryOp::Neg || op == UnaryOp::Not) continue;  // written `-x`, `!x`
    if (kUnaryOps[i].name == name) return op;
  }
  return std::nullopt;
}

char unary_op_cost_class(UnaryOp op) { return entry(kUnaryOps, op).cost; }
std::string_view binary_op_spelling(BinaryOp op) { return entry(kBinaryOps, op).spelling; }
bool binary_op_is_infix(BinaryOp op) { return entry(kBinaryOps, op).infix; }
int binary_op_precedence(BinaryOp op) { return entry(kBinaryOps, op).precedence; }
char binary_op_cost_class(BinaryOp op) { return entry(kBinaryOps, op).cost; }

std::optional<BinaryOp> binary_op_from_call_name(std::string_view name) {
  for (size_t i = 0; i < std::size(kBinaryOps); ++i) {
    if (!kBinaryOps[i].infix && kBinaryOps[i].spelling == name) return static_cast<BinaryOp>(i);
  }
  return std::nullopt;
}

ExprP expr_const(double v, bool is_integer_literal, Loc loc) {
  // An integer literal is exactly representable (|v| <= 2^53), so it prints back unchanged.
  SOLAR_CHECK(!is_integer_literal ||
                  (std::isfinite(v) && v == std::trunc(v) && std::fabs(v) <= 9007199254740992.0),
              "expr_const: an integer literal must be an integer of magnitude <= 2^53");
  Expr e = new_expr(ExprKind::Const, {}, loc);
  e.number = v;
  e.is_integer_literal = is_integer_literal;
  return make_expr(std::move(e));
}

ExprP expr_index(IntExprP index, Loc loc) {
  SOLAR_CHECK(index != nullptr, "expr_index: null index");
  Expr e = new_expr(ExprKind::Index, {}, loc);
  e.index = std::move(index);
  return make_expr(std::move(e));
}

ExprP expr_read(std::string tensor, std::vector<IntExprP> indices, Loc loc) {
  SOLAR_CHECK(!tensor.empty(), "expr_read: empty tensor name");
  for (const IntExprP& i : indices) SOLAR_CHECK(i != nullptr, "expr_read: null index");
  Expr e = new_expr(ExprKind::Read, {}, loc);
  e.tensor = std::move(tensor);
  e.indices = std::move(indices);
  return make_expr(std::move(e));
}

ExprP expr_unary(UnaryOp op, ExprP x, Loc loc) {
  Expr e = new_expr(ExprKind::Unary, {std::move(x)}, loc);
  e.unary_op = op;
  return make_expr(std::move(e));
}

ExprP expr_binary(BinaryOp op, ExprP a, ExprP b, Loc loc) {
  Expr e = new_expr(ExprKind::Binary, {std::move(a), std::move(b)}, loc);
  e.binary_op = op;
  return make_expr(std::move(e));
}

ExprP expr_select(ExprP cond, ExprP a, ExprP b, Loc loc) {
  return make_expr(new_expr(ExprKind::Select, {std::move(cond), std::move(a), std::move(b)}, loc));
}

ExprP expr_cast(DType to, ExprP x, Loc loc) {
  Expr e = new_expr(ExprKind::Cast, {std::move(x)}, loc);
  e.cast_to = to;
  return make_expr(std::move(e));
}

// ---------------------------------------------------------------------------------------------
// Declarations and statements

std::string_view tensor_role_keyword(TensorRole r) {
  switch (r) {
    case TensorRole::Input:
      return "input";
    case TensorRole::Weight:
      return "weight";
    case TensorRole::Output:
      return "output";
    case TensorRole::Intermediate:
      return "tensor";
    case TensorRole::Random:
      return "random";
  }
  SOLAR_CHECK(false, "tensor role out of range");
  return "";
}

std::string_view assign_op_spelling(AssignOp op) { return entry(kAssignSpellings, op); }
std::string_view compose_op_name(ComposeOp op) { return entry(kComposeNames, op); }

std::optional<ComposeOp> compose_op_from_name(std::string_view name) {
  const auto* it = std::find(std::begin(kComposeNames), std::end(kComposeNames), name);
  if (it == std::end(kComposeNames)) return std::nullopt;
  return static_cast<ComposeOp>(it - std::begin(kComposeNames));
}

StmtP make_stmt(Kernel k, Loc loc, std::vector<std::string> comments) {
  SOLAR_CHECK(!k.name.empty() && !k.out.empty(), "kernel: empty name or output");
  SOLAR_CHECK(k.rhs != nullptr, "kernel: null right-hand side");
  for (const Loop& l : k.loops) {
    SOLAR_CHECK(!l.name.empty() && l.lo && l.hi, "kernel: malformed loop");
  }
  for (const IntExprP& i : k.out_indices) SOLAR_CHECK(i != nullptr, "kernel: null out index");
  return std::make_shared<const Stmt>(Stmt{std::move(k), std::move(comments), loc});
}

StmtP make_stmt(Compose c, Loc loc, std::vector<std::string> comments) {
  SOLAR_CHECK(!c.dst.empty(), "compose: empty destination");
  SOLAR_CHECK(c.dst_region.empty() || c.op == ComposeOp::Copy,
              "compose: a destination region is only valid for copy");
  SOLAR_CHECK(c.src_slices.empty() || c.op == ComposeOp::Slice,
              "compose: source slices are only valid for slice");
  SOLAR_CHECK(c.list.empty() || c.op == ComposeOp::Permute,
              "compose: a positional list is only valid for permute");
  for (const IntExprP& i : c.list) SOLAR_CHECK(i != nullptr, "compose: null list entry");
  for (const std::string& s : c.srcs) SOLAR_CHECK(!s.empty(), "compose: empty source name");
  return std::make_shared<const Stmt>(Stmt{std::move(c), std::move(comments), loc});
}

StmtP make_stmt(Repeat r, Loc loc, std::vector<std::string> comments) {
  SOLAR_CHECK(!r.var.empty() && r.lo && r.hi, "repeat: malformed header");
  for (const StmtP& s : r.body) SOLAR_CHECK(s != nullptr, "repeat: null statement");
  return std::make_shared<const Stmt>(Stmt{std::move(r), std::move(comments), loc});
}

StmtP make_stmt(OpBlock o, Loc loc, std::vector<std::string> comments) {
  SOLAR_CHECK(!o.name.empty(), "op: empty name");
  for (const StmtP& s : o.body) {
    SOLAR_CHECK(s != nullptr, "op: null statement");
    SOLAR_CHECK(s->kind() != StmtKind::Op, "op: an op block inside an op block");
  }
  return std::make_shared<const Stmt>(Stmt{std::move(o), std::move(comments), loc});
}

// ---------------------------------------------------------------------------------------------
// Program

const TensorDecl* Program::find_tensor(std::string_view name) const {
  const auto it = std::find_if(tensors.begin(), tensors.end(),
                               [&](const TensorDecl& t) { return t.name == name; });
  return it == tensors.end() ? nullptr : &*it;
}

const SizeDecl* Program::find_size(std::string_view name) const {
  const auto it =
      std::find_if(sizes.begin(), sizes.end(), [&](const SizeDecl& s) { return s.name == name; });
  return it == sizes.end() ? nullptr : &*it;
}

// ---------------------------------------------------------------------------------------------
// Structural equality

bool equal(const IntExpr& a, const IntExpr& b) {
  if (a.op != b.op) return false;
  switch (a.op) {
    case IntOp::Const:
      return a.value == b.value;
    case IntOp::Sym:
      return a.name == b.name && a.sym_kind == b.sym_kind;
    case IntOp::Neg:
      return equal_ptr(a.a, b.a);
    case IntOp::Add:
    case IntOp::Sub:
    case IntOp::Mul:
    case IntOp::FloorDiv:
    case IntOp::Mod:
    case IntOp::Min:
    case IntOp::Max:
      return equal_ptr(a.a, b.a) && equal_ptr(a.b, b.b);
  }
  return false;
}

bool equal(const Expr& a, const Expr& b) {
  if (a.kind != b.kind || !equal_ptrs(a.args, b.args)) return false;
  switch (a.kind) {
    case ExprKind::Const:
      return equal_number(a.number, b.number) && a.is_integer_literal == b.is_integer_literal;
    case ExprKind::Index:
      return equal_ptr(a.index, b.index);
    case ExprKind::Read:
      return a.tensor == b.tensor && equal_ptrs(a.indices, b.indices);
    case ExprKind::Unary:
      return a.unary_op == b.unary_op;
    case ExprKind::Binary:
      return a.binary_op == b.binary_op;
    case ExprKind::Select:
      return true;
    case ExprKind::Cast:
      return a.cast_to == b.cast_to;
  }
  return false;
}

bool equal(const Stmt& a, const Stmt& b) {
  if (a.kind() != b.kind() || a.comments != b.comments) return false;
  switch (a.kind()) {
    case StmtKind::Kernel:
      return equal(std::get<Kernel>(a.node), std::get<Kernel>(b.node));
    case StmtKind::Compose:
      return equal(std::get<Compose>(a.node), std::get<Compose>(b.node));
    case StmtKind::Repeat:
      return equal(std::get<Repeat>(a.node), std::get<Repeat>(b.node));
    case StmtKind::Op:
      return equal(std::get<OpBlock>(a.node), std::get<OpBlock>(b.node));
  }
  return false;
}

bool equal(const Program& a, const Program& b) {
  return equal_all(a.sizes, b.sizes) && equal_all(a.tensors, b.tensors) &&
         equal_ptrs(a.body, b.body) && a.trailing_comments == b.trailing_comments;
}

}  // namespace solar::ir
