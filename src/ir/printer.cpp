// Canonical printer (layout and literal spelling: docs/ir.md, "Canonical form").
#include "solar/ir/printer.h"

#include <charconv>
#include <cmath>
#include <string_view>
#include <utility>

#include "solar/util/error.h"

namespace solar::ir {

namespace {

// Precedence of what a node prints as: infix operators use their level (1..6), a prefix `-` or
// `!` is 7, and atoms (literals, names, reads, calls) are 8. An operand is parenthesised when it
// binds more loosely than its position requires.
constexpr int kPrefixPrecedence = 7;
constexpr int kAtomPrecedence = 8;

// Shortest text that reads back as the same double, always spelled as a float literal.
std::string format_float(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  SOLAR_CHECK(r.ec == std::errc(), "to_chars failed");
  std::string s(buf, r.ptr);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

std::string format_integer_literal(double v) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed, 0);
  SOLAR_CHECK(r.ec == std::errc(), "to_chars failed");
  return std::string(buf, r.ptr);
}

// ---------------------------------------------------------------------------------------------
// Integer expressions. In a value expression (`in_value`), floor division is written
// `floor(a / b)`, because `/` there is true division.

int int_precedence(const IntExpr& e, bool in_value) {
  switch (e.op) {
    case IntOp::Const:
      return e.value < 0 ? kPrefixPrecedence : kAtomPrecedence;
    case IntOp::Sym:
    case IntOp::Min:
    case IntOp::Max:
      return kAtomPrecedence;
    case IntOp::Neg:
      return kPrefixPrecedence;
    case IntOp::Add:
    case IntOp::Sub:
      return 5;
    case IntOp::FloorDiv:
      return in_value ? kAtomPrecedence : 6;  // floor(a / b)
    case IntOp::Mul:
    case IntOp::Mod:
      return 6;
  }
  return kAtomPrecedence;
}

void print_int(const IntExpr& e, bool in_value, std::string& out);

void print_int_operand(const IntExpr& e, int min_precedence, bool in_value, std::string& out) {
  const bool parens = int_precedence(e, in_value) < min_precedence;
  if (parens) out += '(';
  print_int(e, in_value, out);
  if (parens) out += ')';
}

void print_int(const IntExpr& e, bool in_value, std::string& out) {
  switch (e.op) {
    case IntOp::Const:
      out += std::to_string(e.value);
      return;
    case IntOp::Sym:
      out += e.name;
      return;
    case IntOp::Neg:
      out += '-';
      print_int_operand(*e.a, kPrefixPrecedence, in_value, out);
      return;
    case IntOp::Min:
    case IntOp::Max:
      out += int_op_spelling(e.op);
      out += '(';
      print_int(*e.a, in_value, out);
      out += ", ";
      print_int(*e.b, in_value, out);
      out += ')';
      return;
    case IntOp::Add:
    case IntOp::Sub:
    case IntOp::Mul:
    case IntOp::FloorDiv:
    case IntOp::Mod: {
      const bool floor_call = in_value && e.op == IntOp::FloorDiv;
      if (floor_call) out += "floor(";
      const int p = floor_call ? 6 : int_precedence(e, in_value);
      print_int_operand(*e.a, p, in_value, out);
      out += ' ';
      out += int_op_spelling(e.op);
      out += ' ';
      print_int_operand(*e.b, p + 1, in_value, out);
      if (floor_call) out += ')';
      return;
    }
  }
}

void print_int_list(const std::vector<IntExprP>& list, std::string& out) {
  out += '[';
  for (size_t i = 0; i < list.size(); ++i) {
    if (i > 0) out += ", ";
    print_int(*list[i], false, out);
  }
  out += ']';
}

// ---------------------------------------------------------------------------------------------
// Value expressions

int expr_precedence(const Expr& e) {
  switch (e.kind) {
    case ExprKind::Const:
      return std::signbit(e.number) ? kPrefixPrecedence : kAtomPrecedence;
    case ExprKind::Index:
      return int_precedence(*e.index, true);
    case ExprKind::Unary:
      return e.unary_op == UnaryOp::Neg || e.unary_op == UnaryOp::Not ? kPrefixPrecedence
                                                                      : kAtomPrecedence;
    case ExprKind::Binary:
      return binary_op_is_infix(e.binary_op) ? binary_op_precedence(e.binary_op) : kAtomPrecedence;
    case ExprKind::Read:
    case ExprKind::Select:
    case ExprKind::Cast:
      return kAtomPrecedence;
  }
  return kAtomPrecedence;
}

void print_expr(const Expr& e, std::string& out);

void print_operand(const Expr& e, int min_precedence, std::string& out) {
  const bool parens = expr_precedence(e) < min_precedence;
  if (parens) out += '(';
  print_expr(e, out);
  if (parens) out += ')';
}

void print_call(std::string_view name, const std::vector<ExprP>& args, std::string& out) {
  out += name;
  out += '(';
  for (size_t i = 0; i < args.size(); ++i) {
    if (i > 0) out += ", ";
    print_expr(*args[i], out);
  }
  out += ')';
}

void print_binary(const Expr& e, std::string& out) {
  if (!binary_op_is_infix(e.binary_op)) {
    print_call(binary_op_spelling(e.binary_op), e.args, out);
    return;
  }
  const int p = binary_op_precedence(e.binary_op);
  print_operand(*e.args[0], p, out);  // left-associative: an equal level needs no parentheses
  out += ' ';
  out += binary_op_spelling(e.binary_op);
  out += ' ';
  print_operand(*e.args[1], p + 1, out);
}

void print_expr(const Expr& e, std::string& out) {
  switch (e.kind) {
    case ExprKind::Const:
      out += e.is_integer_literal ? format_integer_literal(e.number) : format_float(e.number);
      return;
    case ExprKind::Index:
      print_int(*e.index, true, out);
      return;
    case ExprKind::Read:
      out += e.tensor;
      print_int_list(e.indices, out);
      return;
    case ExprKind::Unary:
      if (e.unary_op == UnaryOp::Neg || e.unary_op == UnaryOp::Not) {
        out += e.unary_op == UnaryOp::Neg ? '-' : '!';
        print_operand(*e.args[0], kPrefixPrecedence, out);
      } else {
        print_call(unary_op_name(e.unary_op), e.args, out);
      }
      return;
    case ExprKind::Binary:
      print_binary(e, out);
      return;
    case ExprKind::Select:
      print_call("select", e.args, out);
      return;
    case ExprKind::Cast:
      print_call(dtype_name(e.cast_to), e.args, out);
      return;
  }
}

// ---------------------------------------------------------------------------------------------
// Declarations and statements

void print_comments(const std::vector<std::string>& comments, int indent, std::string& out) {
  for (const std::string& c : comments) {
    SOLAR_CHECK(c.find_first_of("\r\n") == std::string::npos, "a comment spans several lines");
    out.append(static_cast<size_t>(indent), ' ');
    out += c.empty() ? "#" : "# " + c;
    out += '\n';
  }
}

void print_slices(const std::vector<SliceSpec>& slices, std::string& out) {
  out += '[';
  for (size_t i = 0; i < slices.size(); ++i) {
    const SliceSpec& s = slices[i];
    if (i > 0) out += ", ";
    if (s.start) print_int(*s.start, false, out);
    if (s.is_index) continue;
    out += ':';
    if (s.stop) print_int(*s.stop, false, out);
    if (s.step) {
      out += ':';
      print_int(*s.step, false, out);
    }
  }
  out += ']';
}

void print_attr(const ComposeAttr& a, std::string& out) {
  out += a.key;
  out += '=';
  if (a.is_list) {
    print_int_list(a.ints, out);
  } else if (!a.ints.empty()) {
    print_int(*a.ints[0], false, out);
  } else if (a.number) {
    out += format_float(*a.number);
  } else {
    out += a.word;
  }
}

void print_compose(const Compose& c, std::string& out) {
  out += c.dst;
  if (!c.dst_region.empty()) print_slices(c.dst_region, out);
  out += " = ";
  if (c.op == ComposeOp::Copy || c.op == ComposeOp::Slice) {
    SOLAR_CHECK(c.srcs.size() == 1, "copy and slice take one source");
    out += c.srcs[0];
    if (c.op == ComposeOp::Slice) print_slices(c.src_slices, out);
    return;
  }
  out += compose_op_name(c.op);
  out += '(';
  std::string_view sep;
  for (const std::string& s : c.srcs) {
    out += std::exchange(sep, ", ");
    out += s;
  }
  if (c.op == ComposeOp::Permute) {
    out += std::exchange(sep, ", ");
    print_int_list(c.list, out);
  }
  for (const ComposeAttr& a : c.attrs) {
    out += std::exchange(sep, ", ");
    print_attr(a, out);
  }
  out += ')';
}

void print_kernel(const Kernel& k, int indent, std::string& out) {
  const std::string pad(static_cast<size_t>(indent), ' ');
  out += "kernel " + k.name + " {\n";
  if (!k.loops.empty()) {
    out += pad + "  for ";
    for (size_t i = 0; i < k.loops.size(); ++i) {
      const Loop& l = k.loops[i];
      if (i > 0) out += ", ";
      out += l.name + " in ";
      print_int(*l.lo, false, out);
      out += "..";
      print_int(*l.hi, false, out);
    }
    out += ":\n";
  }
  out += pad + (k.loops.empty() ? "  " : "    ") + k.out;
  print_int_list(k.out_indices, out);
  out += ' ';
  out += assign_op_spelling(k.op);
  out += ' ';
  print_expr(*k.rhs, out);
  out += '\n' + pad + "}";
}

void print_stmt(const Stmt& s, int indent, std::string& out);

void print_repeat(const Repeat& r, int indent, std::string& out) {
  out += "repeat " + r.var + " in ";
  print_int(*r.lo, false, out);
  out += "..";
  print_int(*r.hi, false, out);
  out += " {\n";
  for (const StmtP& s : r.body) print_stmt(*s, indent + 2, out);
  out.append(static_cast<size_t>(indent), ' ');
  out += '}';
}

void print_op(const OpBlock& o, int indent, std::string& out) {
  out += "op " + o.name + " {\n";
  for (const StmtP& s : o.body) print_stmt(*s, indent + 2, out);
  out.append(static_cast<size_t>(indent), ' ');
  out += '}';
}

void print_stmt(const Stmt& s, int indent, std::string& out) {
  print_comments(s.comments, indent, out);
  out.append(static_cast<size_t>(indent), ' ');
  switch (s.kind()) {
    case StmtKind::Kernel:
      print_kernel(std::get<Kernel>(s.node), indent, out);
      break;
    case StmtKind::Compose:
      print_compose(std::get<Compose>(s.node), out);
      break;
    case StmtKind::Repeat:
      print_repeat(std::get<Repeat>(s.node), indent, out);
      break;
    case StmtKind::Op:
      print_op(std::get<OpBlock>(s.node), indent, out);
      break;
  }
  out += '\n';
}

void print_size(const SizeDecl& d, std::string& out) {
  print_comments(d.comments, 0, out);
  out += "size " + d.name + " = ";
  print_int(*d.value, false, out);
  out += '\n';
}

void print_tensor(const TensorDecl& d, std::string& out) {
  print_comments(d.comments, 0, out);
  out += std::string(tensor_role_keyword(d.role)) + " " + d.name + " : ";
  out += dtype_name(d.dtype);
  print_int_list(d.shape, out);
  out += '\n';
}

}  // namespace

std::string print(const Program& p) {
  std::string out;
  const auto section_break = [&] {
    if (!out.empty()) out += '\n';
  };
  for (const SizeDecl& d : p.sizes) print_size(d, out);
  if (!p.tensors.empty()) section_break();
  for (const TensorDecl& d : p.tensors) print_tensor(d, out);
  if (!p.body.empty()) section_break();
  for (const StmtP& s : p.body) print_stmt(*s, 0, out);
  if (!p.trailing_comments.empty()) section_break();
  print_comments(p.trailing_comments, 0, out);
  return out;
}

std::string print(const IntExpr& e) {
  std::string out;
  print_int(e, false, out);
  return out;
}

std::string print(const Expr& e) {
  std::string out;
  print_expr(e, out);
  return out;
}

}  // namespace solar::ir
