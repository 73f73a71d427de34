// Operation counts and dtypes of kernels (see counts.h).
#include "counts.h"

#include <optional>

#include "solar/util/checked.h"
#include "solar/util/error.h"

namespace solar::einsum::detail {
namespace {

// Operations at one point of the domain.
struct PerPoint {
  int64_t simple = 0;
  int64_t special = 0;
  int64_t total() const { return simple + special; }
};

PerPoint operator+(PerPoint a, PerPoint b) { return {a.simple + b.simple, a.special + b.special}; }

PerPoint of_class(char cost_class) {
  switch (cost_class) {
    case 's':
      return {1, 0};
    case 'x':
      return {0, 1};
    default:
      return {};
  }
}

// The larger of two branches: more operations, then more special ones.
PerPoint larger(PerPoint a, PerPoint b) {
  if (a.total() != b.total()) return a.total() > b.total() ? a : b;
  return a.special >= b.special ? a : b;
}

bool int_mentions_loop(const ir::IntExpr& e) {
  if (e.op == ir::IntOp::Sym) return e.sym_kind == ir::SymKind::Loop;
  return (e.a && int_mentions_loop(*e.a)) || (e.b && int_mentions_loop(*e.b));
}

// The same value at every point of the domain: no tensor reads, no loop indices. Such a
// sub-expression is computed once, before the loops, and costs nothing per point.
bool is_invariant(const ir::Expr& e) {
  switch (e.kind) {
    case ir::ExprKind::Const:
      return true;
    case ir::ExprKind::Index:
      return !int_mentions_loop(*e.index);
    case ir::ExprKind::Read:
      return false;
    case ir::ExprKind::Unary:
    case ir::ExprKind::Binary:
    case ir::ExprKind::Select:
    case ir::ExprKind::Cast:
      break;
  }
  for (const ir::ExprP& a : e.args) {
    if (!is_invariant(*a)) return false;
  }
  return true;
}

bool reads_tensor(const ir::Expr& e) {
  if (e.kind == ir::ExprKind::Read) return true;
  for (const ir::ExprP& a : e.args) {
    if (reads_tensor(*a)) return true;
  }
  return false;
}

// The factors of a product tree: a * b * c -> {a, b, c}.
void product_factors(const ir::Expr& e, std::vector<const ir::Expr*>& out) {
  if (e.kind == ir::ExprKind::Binary && e.binary_op == ir::BinaryOp::Mul) {
    product_factors(*e.args[0], out);
    product_factors(*e.args[1], out);
  } else {
    out.push_back(&e);
  }
}

// A read, or a read times / divided by invariant factors, at any depth of the product.
bool is_scaled_read(const ir::Expr& e) {
  if (e.kind == ir::ExprKind::Read) return true;
  if (e.kind != ir::ExprKind::Binary) return false;
  const ir::Expr& a = *e.args[0];
  const ir::Expr& b = *e.args[1];
  if (e.binary_op == ir::BinaryOp::Mul) {
    return (is_invariant(a) && is_scaled_read(b)) || (is_scaled_read(a) && is_invariant(b));
  }
  return e.binary_op == ir::BinaryOp::Div && is_scaled_read(a) && is_invariant(b);
}

PerPoint ops_of(const ir::Expr& e) {
  if (is_invariant(e)) return {};
  switch (e.kind) {
    case ir::ExprKind::Const:
    case ir::ExprKind::Index:
    case ir::ExprKind::Read:
      return {};
    case ir::ExprKind::Unary:
      return of_class(ir::unary_op_cost_class(e.unary_op)) + ops_of(*e.args[0]);
    case ir::ExprKind::Binary:
      return of_class(ir::binary_op_cost_class(e.binary_op)) + ops_of(*e.args[0]) +
             ops_of(*e.args[1]);
    case ir::ExprKind::Select:
      return ops_of(*e.args[0]) + PerPoint{1, 0} + larger(ops_of(*e.args[1]), ops_of(*e.args[2]));
    case ir::ExprKind::Cast:
      return ops_of(*e.args[0]);
  }
  SOLAR_CHECK(false, "unknown ExprKind");
}

int64_t times(int64_t per_point, int64_t points) {
  const std::optional<int64_t> r = checked_mul(per_point, points);
  if (!r) throw UserError("operation count overflows 64 bits");
  return *r;
}

// Ranks of dtypes for promotion: kind first (bool < integer < float), then size.
int kind_rank(ir::DType t) {
  if (ir::dtype_is_float(t)) return 2;
  return ir::dtype_is_integer(t) ? 1 : 0;
}

void visit_dtypes(const ir::Expr& e, const DTypeOf& dtype_of, bool& have, ir::DType& widest,
                  bool floats_only) {
  std::optional<ir::DType> t;
  if (e.kind == ir::ExprKind::Read) t = dtype_of(e.tensor);
  if (e.kind == ir::ExprKind::Cast) t = e.cast_to;
  if (t && (!floats_only || ir::dtype_is_float(*t))) {
    widest = have ? promote(widest, *t) : *t;
    have = true;
  }
  for (const ir::ExprP& a : e.args) visit_dtypes(*a, dtype_of, have, widest, floats_only);
}

}  // namespace

std::optional<MacOperands> mac_operands(const ir::Kernel& k) {
  if (k.op != ir::AssignOp::Sum) return std::nullopt;
  std::vector<const ir::Expr*> factors;
  product_factors(*k.rhs, factors);
  MacOperands m;
  for (const ir::Expr* f : factors) {
    if (is_invariant(*f)) continue;  // folded into the result
    if (reads_tensor(*f) && !m.lhs) {
      m.lhs = f;
    } else if (reads_tensor(*f) && !m.rhs) {
      m.rhs = f;
    } else {
      m.others.push_back(f);
    }
  }
  if (!m.rhs) return std::nullopt;
  return m;
}

bool scales_a_read(const ir::Kernel& k) {
  return k.op == ir::AssignOp::Assign && is_scaled_read(*k.rhs);
}

OpCounts count_ops(const ir::Kernel& k, int64_t points) {
  OpCounts c;
  PerPoint p;
  if (const std::optional<MacOperands> m = mac_operands(k)) {
    c.macs = points;
    p = ops_of(*m->lhs) + ops_of(*m->rhs);
    for (const ir::Expr* f : m->others) p = p + ops_of(*f) + PerPoint{1, 0};  // one more multiply
  } else {
    p = ops_of(*k.rhs);
    if (k.op != ir::AssignOp::Assign) p.simple += 1;  // the reduction's combine
  }
  c.simple = times(p.simple, points);
  c.special = times(p.special, points);
  return c;
}

ir::DType promote(ir::DType a, ir::DType b) {
  if (a == b) return a;
  if (kind_rank(a) != kind_rank(b)) return kind_rank(a) > kind_rank(b) ? a : b;
  if (ir::dtype_size(a) != ir::dtype_size(b)) return ir::dtype_size(a) > ir::dtype_size(b) ? a : b;
  switch (ir::dtype_size(a)) {  // two different dtypes of one size and kind
    case 2:
      return ir::DType::F32;  // f16, bf16
    case 1:
      return ir::dtype_is_float(a) ? ir::DType::F16 : ir::DType::I32;  // f8 pair; i8, u8
    default:
      internal_error(__FILE__, __LINE__, "promote: unexpected dtype pair");
  }
}

std::optional<ir::DType> value_dtype(const ir::Expr& e, const DTypeOf& dtype_of) {
  switch (e.kind) {
    case ir::ExprKind::Const:
    case ir::ExprKind::Index:
      return std::nullopt;
    case ir::ExprKind::Read:
      return dtype_of(e.tensor);
    case ir::ExprKind::Cast:
      return e.cast_to;
    case ir::ExprKind::Unary:
    case ir::ExprKind::Binary:
    case ir::ExprKind::Select:
      break;
  }
  std::optional<ir::DType> t;
  const size_t first = e.kind == ir::ExprKind::Select ? 1 : 0;  // not the condition
  for (size_t i = first; i < e.args.size(); ++i) {
    const std::optional<ir::DType> a = value_dtype(*e.args[i], dtype_of);
    if (a) t = t ? promote(*t, *a) : *a;
  }
  return t;
}

ir::DType compute_dtype(const ir::Expr& rhs, ir::DType out, const DTypeOf& dtype_of) {
  bool have_float = ir::dtype_is_float(out);
  ir::DType widest_float = out;
  visit_dtypes(rhs, dtype_of, have_float, widest_float, true);
  if (have_float) return widest_float;
  bool have = true;
  ir::DType widest = out;
  visit_dtypes(rhs, dtype_of, have, widest, false);
  return widest;
}

namespace {

// Johnson & Frigo's exact count (see fft_counts) for one transform of n = 2^m points, m >= 1,
// times 27: complex 102 n m - 124 n - 54 m - 6 s m + 16 s + 216, real-input 51 n m - 89 n - 27 m
// - 3 s m + 8 s + 162, s = (-1)^m; each a multiple of 27. n = 27 q + r splits n's term so that
// nothing overflows below the saturated result: q a + (r a + rest) / 27.
int64_t split_radix_ops(int64_t n, int64_t m, bool real) {
  const int64_t s = m % 2 == 0 ? 1 : -1;
  const int64_t a = real ? 51 * m - 89 : 102 * m - 124;
  const int64_t rest =
      real ? -27 * m - 3 * s * m + 8 * s + 162 : -54 * m - 6 * s * m + 16 * s + 216;
  return saturating_add(saturating_mul(n / 27, a), (n % 27 * a + rest) / 27);
}

}  // namespace

OpCounts fft_counts(int64_t transforms, int64_t n, bool real) {
  OpCounts c;
  if (transforms <= 0 || n <= 1) return c;
  // p = 2^m, the largest power of two not above n: n itself, or the floor of a length that is
  // not a power of two (see counts.h).
  int64_t m = 0;
  while (m < 62 && (int64_t{2} << m) <= n) ++m;
  c.simple = saturating_mul(transforms, split_radix_ops(int64_t{1} << m, m, real));
  return c;
}

}  // namespace solar::einsum::detail
