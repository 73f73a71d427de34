// The Affine Loop IR: abstract syntax tree.
//
// A Program is: size parameters, tensor declarations, and a sequence of statements (kernels,
// composition statements, static repetitions). The grammar and semantics are in docs/ir.md.
//
// The tree is immutable: nodes are built by the factory functions below (which check structural
// invariants and raise InternalError when a caller breaks them) and shared through
// shared_ptr<const ...>. Analysis results live in side tables, never in the nodes.
//
// Node kinds are declared once, as X-macro lists (SOLAR_INT_OPS, SOLAR_EXPR_KINDS, SOLAR_UNARY_OPS,
// SOLAR_BINARY_OPS, SOLAR_COMPOSE_OPS, SOLAR_STMT_KINDS); enums, spellings and visitor dispatch are
// derived from them, and every switch over them is compiled with -Werror=switch.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "solar/ir/dtype.h"

namespace solar::ir {

// Source position (1-based). line == 0 means "no position" (a node built in code, not parsed).
// Equality of trees ignores locations.
struct Loc {
  uint32_t line = 0;
  uint32_t col = 0;
};

// ---------------------------------------------------------------------------------------------
// Integer expressions: sizes, loop bounds, tensor indices, slice bounds.
// They are built from integer literals, symbols (size parameters, kernel loop indices, repeat
// indices) and + - * / % (floor division and floor modulo, as in Python), unary minus, min, max.
// The checker requires kernel indices and loop bounds to be affine in the loop indices (sizes and
// repeat indices are constants there).

// X(enum, spelling) ; spelling is the operator or function name in the text form.
// clang-format off
#define SOLAR_INT_OPS(X) \
  X(Const, "")           \
  X(Sym, "")             \
  X(Neg, "-")            \
  X(Add, "+")            \
  X(Sub, "-")            \
  X(Mul, "*")            \
  X(FloorDiv, "/")       \
  X(Mod, "%")            \
  X(Min, "min")          \
  X(Max, "max")
// clang-format on

enum class IntOp : uint8_t {
#define SOLAR_X(e, s) e,
  SOLAR_INT_OPS(SOLAR_X)
#undef SOLAR_X
};

// What a symbol in an integer expression names. Resolved by the parser.
enum class SymKind : uint8_t {
  Size,    // `size N = ...`
  Loop,    // a loop index of the enclosing kernel
  Repeat,  // the index of an enclosing `repeat` block (a constant inside kernels)
};

struct IntExpr;
using IntExprP = std::shared_ptr<const IntExpr>;

struct IntExpr {
  IntOp op;
  int64_t value = 0;                 // Const
  std::string name;                  // Sym
  SymKind sym_kind = SymKind::Size;  // Sym
  IntExprP a, b;                     // operands (Neg: a only)
  Loc loc;
};

IntExprP int_const(int64_t v, Loc loc = {});
IntExprP int_sym(std::string name, SymKind kind, Loc loc = {});
IntExprP int_unary(IntOp op, IntExprP a, Loc loc = {});               // op == Neg
IntExprP int_binary(IntOp op, IntExprP a, IntExprP b, Loc loc = {});  // Add..Max

std::string_view int_op_spelling(IntOp op);

// ---------------------------------------------------------------------------------------------
// Value expressions: the right-hand side of a kernel assignment. Evaluated per point of the
// kernel's iteration domain.

// clang-format off
#define SOLAR_EXPR_KINDS(X) \
  X(Const)  /* a number literal: 1.5, 2, inf, nan (negative numbers are Neg of a literal) */ \
  X(Index)  /* an integer expression (loop index, size, ...) used as a value */              \
  X(Read)   /* tensor[i0, i1, ...] */                                                        \
  X(Unary)  /* f(x) or -x or !x */                                                           \
  X(Binary) /* x op y, or f(x, y) */                                                         \
  X(Select) /* select(cond, a, b) */                                                         \
  X(Cast)   /* DTYPE(x), e.g. bf16(x): round x to the type's values */
// clang-format on

enum class ExprKind : uint8_t {
#define SOLAR_X(e) e,
  SOLAR_EXPR_KINDS(SOLAR_X)
#undef SOLAR_X
};

// X(enum, spelling, cost class) ; cost class: 's' simple (add/mul/compare/select-like),
// 'x' special (transcendental, division, square root), 'n' none (free: sign flips, casts).
// A unary op is written as a call `name(x)`, except Neg (`-x`) and Not (`!x`).
// clang-format off
#define SOLAR_UNARY_OPS(X)  \
  X(Neg, "neg", 'n')        \
  X(Not, "not", 's')        \
  X(Abs, "abs", 's')        \
  X(Sign, "sign", 's')      \
  X(Floor, "floor", 's')    \
  X(Ceil, "ceil", 's')      \
  X(Round, "round", 's')    \
  X(Exp, "exp", 'x')        \
  X(Exp2, "exp2", 'x')      \
  X(Expm1, "expm1", 'x')    \
  X(Log, "log", 'x')        \
  X(Log2, "log2", 'x')      \
  X(Log1p, "log1p", 'x')    \
  X(Sqrt, "sqrt", 'x')      \
  X(Rsqrt, "rsqrt", 'x')    \
  X(Recip, "recip", 'x')    \
  X(Tanh, "tanh", 'x')      \
  X(Sigmoid, "sigmoid", 'x') \
  X(Erf, "erf", 'x')        \
  X(Erfinv, "erfinv", 'x')  \
  X(Sin, "sin", 'x')        \
  X(Cos, "cos", 'x')        \
  X(IsNan, "isnan", 's')    \
  X(BitNot, "bitnot", 's')
// clang-format on

enum class UnaryOp : uint8_t {
#define SOLAR_X(e, s, c) e,
  SOLAR_UNARY_OPS(SOLAR_X)
#undef SOLAR_X
};

// X(enum, spelling, infix?, precedence, cost class). Infix operators are printed `a op b`;
// the others as calls `name(a, b)`. Precedence (higher binds tighter):
//   1 ||   2 &&   3 == !=   4 < <= > >=   5 + -   6 * / %   (unary - and ! bind tighter; ** is
//   not in the language: use pow). Division of values is true division; `%` is floor modulo.
// clang-format off
#define SOLAR_BINARY_OPS(X)      \
  X(Add, "+", true, 5, 's')      \
  X(Sub, "-", true, 5, 's')      \
  X(Mul, "*", true, 6, 's')      \
  X(Div, "/", true, 6, 'x')      \
  X(Mod, "%", true, 6, 'x')      \
  X(Lt, "<", true, 4, 's')       \
  X(Le, "<=", true, 4, 's')      \
  X(Gt, ">", true, 4, 's')       \
  X(Ge, ">=", true, 4, 's')      \
  X(Eq, "==", true, 3, 's')      \
  X(Ne, "!=", true, 3, 's')      \
  X(And, "&&", true, 2, 's')     \
  X(Or, "||", true, 1, 's')      \
  X(Pow, "pow", false, 0, 'x')   \
  X(Min, "min", false, 0, 's')   \
  X(Max, "max", false, 0, 's')   \
  X(Atan2, "atan2", false, 0, 'x') \
  X(BitAnd, "bitand", false, 0, 's') \
  X(BitOr, "bitor", false, 0, 's')   \
  X(BitXor, "bitxor", false, 0, 's') \
  X(Shl, "shl", false, 0, 's')       \
  X(Shr, "shr", false, 0, 's')
// clang-format on

enum class BinaryOp : uint8_t {
#define SOLAR_X(e, s, inf, p, c) e,
  SOLAR_BINARY_OPS(SOLAR_X)
#undef SOLAR_X
};

std::string_view unary_op_name(UnaryOp op);
std::optional<UnaryOp> unary_op_from_name(std::string_view name);  // call names only
char unary_op_cost_class(UnaryOp op);
std::string_view binary_op_spelling(BinaryOp op);
bool binary_op_is_infix(BinaryOp op);
int binary_op_precedence(BinaryOp op);  // 0 for call-style ops
char binary_op_cost_class(BinaryOp op);
// pow, min, max, atan2, bitand, bitor, bitxor, shl, shr
std::optional<BinaryOp> binary_op_from_call_name(std::string_view name);

struct Expr;
using ExprP = std::shared_ptr<const Expr>;

struct Expr {
  ExprKind kind;
  // Const: the literal's value and whether it was written as an integer (printing keeps it).
  double number = 0.0;
  bool is_integer_literal = false;
  // Index
  IntExprP index;
  // Read
  std::string tensor;
  std::vector<IntExprP> indices;
  // Unary / Binary
  UnaryOp unary_op = UnaryOp::Neg;
  BinaryOp binary_op = BinaryOp::Add;
  // Cast
  DType cast_to = DType::F32;
  // operands: Unary/Cast [x]; Binary [a, b]; Select [cond, a, b]
  std::vector<ExprP> args;
  Loc loc;
};

ExprP expr_const(double v, bool is_integer_literal, Loc loc = {});
ExprP expr_index(IntExprP index, Loc loc = {});
ExprP expr_read(std::string tensor, std::vector<IntExprP> indices, Loc loc = {});
ExprP expr_unary(UnaryOp op, ExprP x, Loc loc = {});
ExprP expr_binary(BinaryOp op, ExprP a, ExprP b, Loc loc = {});
ExprP expr_select(ExprP cond, ExprP a, ExprP b, Loc loc = {});
ExprP expr_cast(DType to, ExprP x, Loc loc = {});

// ---------------------------------------------------------------------------------------------
// Declarations

struct SizeDecl {
  std::string name;
  IntExprP value;  // a literal (a free parameter, overridable) or an expression of earlier sizes
  std::vector<std::string> comments;  // `#` comment lines written just above, without the `#`
  Loc loc;
  bool is_free() const { return value && value->op == IntOp::Const; }
};

enum class TensorRole : uint8_t {
  Input,         // `input`: a graph input, supplied at run time
  Weight,        // `weight`: a parameter or buffer, supplied at run time
  Output,        // `output`: a graph output, returned
  Intermediate,  // `tensor`: internal, zero-initialised
  Random,        // `random`: the program's random draws, supplied at run time (docs/ir.md)
};
std::string_view tensor_role_keyword(TensorRole r);

struct TensorDecl {
  std::string name;
  TensorRole role = TensorRole::Intermediate;
  DType dtype = DType::F32;
  std::vector<IntExprP> shape;  // empty: a scalar (rank 0), written `f32[]`
  std::vector<std::string> comments;
  Loc loc;
};

// ---------------------------------------------------------------------------------------------
// Statements

struct Stmt;
using StmtP = std::shared_ptr<const Stmt>;

// One loop of a kernel's perfect nest: `name in lo..hi` (half-open). lo and hi may be affine in
// the indices of loops to its left.
struct Loop {
  std::string name;
  IntExprP lo, hi;
  Loc loc;
};

// X(enum, spelling, identity element of the reduction)
// clang-format off
#define SOLAR_ASSIGN_OPS(X) \
  X(Assign, "=")            \
  X(Sum, "+=")              \
  X(Prod, "*=")             \
  X(Max, "max=")            \
  X(Min, "min=")
// clang-format on

enum class AssignOp : uint8_t {
#define SOLAR_X(e, s) e,
  SOLAR_ASSIGN_OPS(SOLAR_X)
#undef SOLAR_X
};
std::string_view assign_op_spelling(AssignOp op);

// `kernel NAME { for LOOPS: OUT[idx] OP= EXPR }`
// Semantics (docs/ir.md): `=` evaluates the right side at every point, reading the state before
// the kernel, then writes. A reduction (`+=`, `*=`, `max=`, `min=`) is self-initialising: every
// output element the kernel writes is set to the reduction's identity, then reduced over the
// domain; the old contents are not read.
struct Kernel {
  std::string name;
  std::vector<Loop> loops;  // outermost first; may be empty (a scalar statement)
  std::string out;          // output tensor
  std::vector<IntExprP> out_indices;
  AssignOp op = AssignOp::Assign;
  ExprP rhs;
  Loc out_loc;  // position of the output tensor's name (diagnostics); line 0 when unknown
};

// One entry of a slice list: `a:b:c`, `a:b`, `:`, `a:`, `:b`, or a single index `a` (which drops
// the dimension). Null start/stop/step mean the defaults 0 / dim size / 1.
struct SliceSpec {
  bool is_index = false;  // `a` alone: select one position, the dimension disappears
  IntExprP start, stop, step;
  Loc loc;
};

// Composition (data-movement) operations. X(enum, spelling). See docs/ir.md for each signature.
//   Copy      `Y = X`                  (also `Y[slices] = X`: write into a region of Y)
//   Slice     `Y = X[slices]`
//   Reshape   `Y = reshape(X)`         row-major, to Y's declared shape
//   Permute   `Y = permute(X, [p0, p1, ...])`       Y dim d is X dim p_d
//   Broadcast `Y = broadcast(X)` / `broadcast(X, dims=[...])`  numpy rules, or X dim i -> Y dim
//   dims[i] Concat    `Y = concat(A, B, ..., dim=d)` Pad       `Y = pad(X, lo=[...], hi=[...],
//   value=c)`  constant padding Take      `Y = take(X, I, dim=d)`  index_select / embedding: Y =
//   X[:, ..., I[...], ...] Gather    `Y = gather(X, I, dim=d)` torch.gather Scatter   `Y =
//   scatter(X, I, S, dim=d, reduce=none|add|max|min)` torch.scatter(_reduce)
//   Argsort   `I = argsort(X, dim=d, descending=0|1)` the stable sorting permutation along d
//   Rfft      `Y = rfft(X, dim=d, norm=0|1|2)`   real X -> complex Y: the DFT along d (Y's size
//             n/2+1, the one-sided half, or n, the whole spectrum); norm divides by 1, sqrt(n), n
//   Irfft     `Y = irfft(X, dim=d, norm=0|1|2)`  complex X (n/2+1 along d) -> real Y (n): the
//             inverse of the one-sided half, unnormalised (exponent sign +) unless norm says
//   Fft, Ifft `Y = fft(X, dim=d, norm=0|1|2)`    complex -> complex, sign - (fft), + (ifft)
//   ViewAsReal    `Y = view_as_real(X)`     complex X[s] -> real Y[s, 2]: (real, imag) pairs
//   ViewAsComplex `Y = view_as_complex(X)`  real X[s, 2] -> complex Y[s]
// clang-format off
#define SOLAR_COMPOSE_OPS(X) \
  X(Copy, "copy")            \
  X(Slice, "slice")          \
  X(Reshape, "reshape")      \
  X(Permute, "permute")      \
  X(Broadcast, "broadcast")  \
  X(Concat, "concat")        \
  X(Pad, "pad")              \
  X(Take, "take")            \
  X(Gather, "gather")        \
  X(Scatter, "scatter")      \
  X(Argsort, "argsort")      \
  X(Rfft, "rfft")            \
  X(Irfft, "irfft")          \
  X(Fft, "fft")              \
  X(Ifft, "ifft")            \
  X(ViewAsReal, "view_as_real") \
  X(ViewAsComplex, "view_as_complex")
// clang-format on

enum class ComposeOp : uint8_t {
#define SOLAR_X(e, s) e,
  SOLAR_COMPOSE_OPS(SOLAR_X)
#undef SOLAR_X
};
std::string_view compose_op_name(ComposeOp op);
std::optional<ComposeOp> compose_op_from_name(std::string_view name);

// A keyword argument of a composition call: `dim=1`, `dims=[0, 2]`, `value=-inf`, `reduce=add`.
struct ComposeAttr {
  std::string key;
  std::vector<IntExprP> ints;    // one element for `dim=1`, several for `dims=[...]`
  bool is_list = false;          // written with brackets
  std::optional<double> number;  // `value=...`
  std::string word;              // `reduce=add`
  Loc loc;
};

struct Compose {
  ComposeOp op = ComposeOp::Copy;
  std::string dst;
  std::vector<SliceSpec> dst_region;  // Copy only: `Y[slices] = X`; empty = the whole of Y
  std::vector<std::string> srcs;      // tensor operands, in order
  std::vector<SliceSpec> src_slices;  // Slice only
  std::vector<IntExprP> list;         // Permute: the permutation (positional list argument)
  std::vector<ComposeAttr> attrs;     // keyword arguments, in source order
};

// `repeat t in lo..hi { statements }`: the body runs once per t, in order. t is a constant inside
// the body (usable in any integer expression).
struct Repeat {
  std::string var;
  IntExprP lo, hi;
  std::vector<StmtP> body;
};

// `op NAME { statements }`: the statements that one framework operation (as the program
// dispatches it in eager mode, e.g. one `aten.hardsigmoid` call) was lowered to. Execution runs
// the body in order; the block only groups: the unfused fidelity runs each block as one kernel
// (its intermediates stay on chip). Op names have their own namespace, like kernel names, and
// are unique; a block holds kernels, composition statements and repeat blocks, not op blocks.
struct OpBlock {
  std::string name;
  std::vector<StmtP> body;
};

// clang-format off
#define SOLAR_STMT_KINDS(X) \
  X(Kernel)                 \
  X(Compose)                \
  X(Repeat)                 \
  X(Op)
// clang-format on

enum class StmtKind : uint8_t {
#define SOLAR_X(e) e,
  SOLAR_STMT_KINDS(SOLAR_X)
#undef SOLAR_X
};

struct Stmt {
  std::variant<Kernel, Compose, Repeat, OpBlock> node;  // index order matches StmtKind
  std::vector<std::string> comments;
  Loc loc;
  StmtKind kind() const { return static_cast<StmtKind>(node.index()); }
};

StmtP make_stmt(Kernel k, Loc loc = {}, std::vector<std::string> comments = {});
StmtP make_stmt(Compose c, Loc loc = {}, std::vector<std::string> comments = {});
StmtP make_stmt(Repeat r, Loc loc = {}, std::vector<std::string> comments = {});
StmtP make_stmt(OpBlock o, Loc loc = {}, std::vector<std::string> comments = {});

// ---------------------------------------------------------------------------------------------

struct Program {
  std::string file;  // for diagnostics; not part of equality
  std::vector<SizeDecl> sizes;
  std::vector<TensorDecl> tensors;
  std::vector<StmtP> body;
  std::vector<std::string> trailing_comments;  // comments after the last statement

  const TensorDecl* find_tensor(std::string_view name) const;
  const SizeDecl* find_size(std::string_view name) const;
};

// Structural equality, ignoring source locations and the file name.
bool equal(const IntExpr& a, const IntExpr& b);
bool equal(const Expr& a, const Expr& b);
bool equal(const Stmt& a, const Stmt& b);
bool equal(const Program& a, const Program& b);

}  // namespace solar::ir
