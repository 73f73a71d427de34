// The semantic checker: the walk over a program, declarations, repeat blocks and kernels.
// Composition statements are checked in checker_compose.cpp. docs/ir.md, "Checker rules", lists
// every diagnostic.
#include "solar/ir/checker.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <tuple>

#include "checker_context.h"
#include "int_util.h"
#include "solar/ir/affine.h"
#include "solar/ir/parse_count.h"
#include "solar/ir/printer.h"

namespace solar::ir {

namespace detail {

std::string shape_str(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

std::string count_str(size_t n, std::string_view noun) {
  std::string word(noun);
  if (n != 1) word = word.back() == 'y' ? word.substr(0, word.size() - 1) + "ies" : word + "s";
  return std::to_string(n) + " " + word;
}

namespace {

bool contains(const std::vector<std::string_view>& names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

CheckContext::CheckContext(const Program& p, const SymbolValues& sizes) : p_(p) {
  const Scope top{sizes, {}, true};
  for (const TensorDecl& t : p.tensors) {
    Shape shape;
    bool ok = true;
    for (const IntExprP& dim : t.shape) {
      const std::optional<int64_t> v = eval(*dim, top);
      if (v && *v < 0) {
        error(loc_of(*dim), "dimension " + std::to_string(shape.size()) + " of '" + t.name +
                                "' is " + std::to_string(*v) + "; dimensions must be non-negative");
      }
      ok = ok && v && *v >= 0;
      shape.push_back(v.value_or(0));
    }
    tensors_.emplace(t.name, TensorInfo{&t, ok ? std::optional<Shape>(shape) : std::nullopt});
  }
}

void CheckContext::error(Loc loc, std::string message) {
  if (!seen_.emplace(loc.line, loc.col, message).second) return;
  diags_.push_back(Diagnostic{p_.file, loc, std::move(message)});
}

void CheckContext::report(const UserError& e, Loc fallback) {
  const auto* located = dynamic_cast<const DiagnosticError*>(&e);
  if (!located) return error(fallback, e.what());
  for (const Diagnostic& d : located->diagnostics()) {
    error(d.loc.line != 0 ? d.loc : fallback, d.message);
  }
}

std::vector<Diagnostic> CheckContext::take_diagnostics() {
  std::stable_sort(diags_.begin(), diags_.end(), [](const Diagnostic& a, const Diagnostic& b) {
    return std::tie(a.loc.line, a.loc.col) < std::tie(b.loc.line, b.loc.col);
  });
  return std::move(diags_);
}

const TensorInfo* CheckContext::find_tensor(std::string_view name) const {
  const auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

const TensorInfo* CheckContext::tensor_or_error(const std::string& name, Loc loc) {
  const TensorInfo* t = find_tensor(name);
  if (!t) error(loc, "unknown tensor '" + name + "'");
  return t;
}

void CheckContext::write(const TensorInfo& t, Loc loc) {
  const TensorRole role = t.decl->role;
  if (role == TensorRole::Input || role == TensorRole::Weight) {
    error(loc, "cannot write " + std::string(tensor_role_keyword(role)) + " '" + t.decl->name +
                   "'; inputs and weights are read-only");
  } else if (role == TensorRole::Random) {
    error(loc, "cannot write random '" + t.decl->name +
                   "'; random draws are read-only (their values are supplied at run time)");
  }
  written_.insert(t.decl->name);
}

bool CheckContext::check_names(const IntExpr& e, const Scope& scope, const LoopNames* loops) {
  bool ok = true;
  for (const IntExprP& operand : {e.a, e.b}) {
    if (operand && !check_names(*operand, scope, loops)) ok = false;
  }
  if (e.op != IntOp::Sym) return ok;
  switch (e.sym_kind) {
    case SymKind::Size:
      if (p_.find_size(e.name)) return ok;
      break;
    case SymKind::Repeat:
      if (scope.repeat_vars.count(e.name)) return ok;
      break;
    case SymKind::Loop:
      if (loops && contains(loops->visible, e.name)) return ok;
      if (loops && contains(loops->hidden, e.name)) {
        error(e.loc, "bound of loop '" + std::string(loops->bound_of) + "' uses '" + e.name +
                         "', " +
                         (e.name == loops->bound_of ? "its own index" : "a loop to its right"));
        return false;
      }
      break;
  }
  error(e.loc, "unknown name '" + e.name + "'");
  return false;
}

std::optional<int64_t> CheckContext::eval(const IntExpr& e, const Scope& scope) {
  if (!check_names(e, scope) || !scope.concrete) return std::nullopt;
  try {
    return eval_int(e, scope.values, p_.file);
  } catch (const UserError& err) {
    report(err, loc_of(e));
    return std::nullopt;
  }
}

}  // namespace detail

namespace {

using detail::CheckContext;
using detail::loc_of;
using detail::LoopNames;
using detail::Scope;
using detail::TensorInfo;

// Whether `e` uses the symbol `name` of kind `kind`.
bool mentions(const IntExpr& e, SymKind kind, std::string_view name) {
  if (e.op == IntOp::Sym) return e.sym_kind == kind && e.name == name;
  return (e.a && mentions(*e.a, kind, name)) || (e.b && mentions(*e.b, kind, name));
}

std::string quoted(std::string_view s) { return "'" + std::string(s) + "'"; }

// "index 'i + t' of 'x' ranges over 1..64 (t = 1) but dimension 0 has size 64"; `context` gives
// the values of the repeat indices the index uses.
std::string out_of_bounds(const IntExpr& index, const std::string& tensor, size_t dim, int64_t size,
                          Extremum lo, Extremum hi, const std::string& context) {
  std::string values;
  if (lo.attained && hi.attained) {
    values = lo.value == hi.value
                 ? "is " + std::to_string(lo.value)
                 : "ranges over " + std::to_string(lo.value) + ".." + std::to_string(hi.value);
  } else {
    values = "reaches " + std::to_string(lo.attained && lo.value < 0 ? lo.value : hi.value);
  }
  return "index " + quoted(print(index)) + " of " + quoted(tensor) + " " + values + context +
         " but dimension " + std::to_string(dim) + " has size " + std::to_string(size);
}

// Checks one kernel: its loops, its output, every read, the `=` and reduction rules, and (when
// the scope is concrete) the bounds of every access that is certainly performed.
class KernelChecker {
 public:
  KernelChecker(CheckContext& cx, const Kernel& k, Loc loc, const Scope& scope)
      : cx_(cx), k_(k), loc_(loc), out_loc_(k.out_loc.line != 0 ? k.out_loc : loc), scope_(scope) {
    for (const Loop& l : k.loops) all_loops_.visible.push_back(l.name);
  }

  void run() {
    const bool domain_ok = check_loops();
    check_output();
    check_rhs(*k_.rhs, false);
    if (domain_ok && scope_.concrete) check_bounds();
  }

 private:
  // One affine index of an access that is certainly performed.
  struct Access {
    const TensorInfo* tensor;
    size_t dim;
    const IntExpr* index;
  };

  // Names and affinity of every loop bound; whether the domain can be analysed.
  bool check_loops() {
    bool ok = true;
    for (size_t i = 0; i < k_.loops.size(); ++i) {
      const Loop& loop = k_.loops[i];
      LoopNames names{{all_loops_.visible.begin(), all_loops_.visible.begin() + i},
                      {all_loops_.visible.begin() + i, all_loops_.visible.end()},
                      loop.name};
      for (const IntExprP& bound : {loop.lo, loop.hi}) {
        if (!cx_.check_names(*bound, scope_, &names)) {
          ok = false;
        } else if (!is_affine(*bound)) {
          cx_.error(loc_of(*bound), "bound " + quoted(print(*bound)) + " of loop " +
                                        quoted(loop.name) + " is not affine in the loop indices");
          ok = false;
        }
      }
    }
    return ok;
  }

  void check_output() {
    const TensorInfo* t = cx_.tensor_or_error(k_.out, out_loc_);
    if (!t) return;
    cx_.write(*t, out_loc_);
    check_access(*t, k_.out_indices, out_loc_, false);
    not_complex(*t, out_loc_, "writes");
    if (k_.op == AssignOp::Assign) {
      check_every_loop_written();
    } else if (t->decl->dtype == DType::Bool &&
               (k_.op == AssignOp::Sum || k_.op == AssignOp::Prod)) {
      cx_.error(out_loc_, "reduction " + quoted(assign_op_spelling(k_.op)) + " into bool tensor " +
                              quoted(k_.out) + "; use 'max=' (any) or 'min=' (all)");
    }
  }

  // `=`: two points that differ only in a loop missing from the output index would write the
  // same element.
  void check_every_loop_written() {
    for (const Loop& loop : k_.loops) {
      const bool used =
          std::any_of(k_.out_indices.begin(), k_.out_indices.end(),
                      [&](const IntExprP& i) { return mentions(*i, SymKind::Loop, loop.name); });
      if (!used) {
        cx_.error(loop.loc, "loop " + quoted(loop.name) +
                                " does not appear in the output index of "
                                "'=' kernel " +
                                quoted(k_.name) + "; use a reduction such as '+='");
      }
    }
  }

  // `guarded`: inside a branch of a select, so the read may not happen (bounds are checked at
  // run time).
  void check_rhs(const Expr& e, bool guarded) {
    switch (e.kind) {
      case ExprKind::Const:
        return;
      case ExprKind::Index:
        cx_.check_names(*e.index, scope_, &all_loops_);
        return;
      case ExprKind::Read:
        return check_read(e, guarded);
      case ExprKind::Cast:
        if (dtype_is_complex(e.cast_to)) {
          cx_.error(e.loc, "a kernel computes real values; no cast to " +
                               std::string(dtype_name(e.cast_to)));
        }
        [[fallthrough]];
      case ExprKind::Unary:
      case ExprKind::Binary:
        for (const ExprP& arg : e.args) check_rhs(*arg, guarded);
        return;
      case ExprKind::Select:
        check_rhs(*e.args[0], guarded);
        check_rhs(*e.args[1], true);
        check_rhs(*e.args[2], true);
        return;
    }
  }

  void check_read(const Expr& e, bool guarded) {
    const TensorInfo* t = cx_.tensor_or_error(e.tensor, e.loc);
    if (!t) return;
    if (k_.op != AssignOp::Assign && e.tensor == k_.out) {
      cx_.error(e.loc, "reduction kernel " + quoted(k_.name) + " reads its own output " +
                           quoted(k_.out) + "; a reduction does not read the old contents");
    }
    check_access(*t, e.indices, e.loc, guarded);
    not_complex(*t, e.loc, "reads");
  }

  // A kernel's values are real: a complex tensor is read and written through its real pairs.
  void not_complex(const TensorInfo& t, Loc loc, std::string_view verb) {
    if (!dtype_is_complex(t.decl->dtype)) return;
    cx_.error(loc, "kernel " + quoted(k_.name) + " " + std::string(verb) + " complex tensor " +
                       quoted(t.decl->name) + "; a kernel works on its (real, imaginary) pairs: " +
                       "view_as_real / view_as_complex");
  }

  // Rank, names and affinity of one access; keeps its affine indices for check_bounds unless
  // guarded.
  void check_access(const TensorInfo& t, const std::vector<IntExprP>& indices, Loc loc,
                    bool guarded) {
    const size_t rank = t.decl->shape.size();
    if (indices.size() != rank) {
      cx_.error(loc, quoted(t.decl->name) + " has " + detail::count_str(rank, "dimension") +
                         ", indexed with " + std::to_string(indices.size()));
      return;
    }
    for (size_t d = 0; d < rank; ++d) {
      const IntExpr& index = *indices[d];
      if (!cx_.check_names(index, scope_, &all_loops_)) continue;
      if (!is_affine(index)) {
        cx_.error(loc_of(index), "index " + quoted(print(index)) + " of " + quoted(t.decl->name) +
                                     " is not affine in the loop indices");
      } else if (!guarded) {
        accesses_.push_back({&t, d, &index});
      }
    }
  }

  void check_bounds() {
    std::optional<AffineDomain> domain;
    try {
      domain = to_affine_domain(k_.loops, scope_.values);
    } catch (const UserError& e) {
      return cx_.report(e, loc_);
    }
    SOLAR_CHECK(domain.has_value(), "checked loop bounds have no affine domain");
    for (const Access& a : accesses_) {
      if (a.tensor->shape) check_index_bounds(*a.tensor, a.dim, *a.index, *domain);
    }
  }

  // Reports the index only when certain: an extreme value attained at a point of the domain.
  void check_index_bounds(const TensorInfo& t, size_t dim, const IntExpr& index,
                          const AffineDomain& domain) {
    try {
      const std::optional<AffineForm> f = to_affine(index, scope_.values);
      SOLAR_CHECK(f.has_value(), "checked index is not affine");
      const Extremum lo = affine_min(*f, domain);
      const Extremum hi = affine_max(*f, domain);
      const int64_t size = (*t.shape)[dim];
      if ((lo.attained && lo.value < 0) || (hi.attained && hi.value >= size)) {
        cx_.error(loc_of(index),
                  out_of_bounds(index, t.decl->name, dim, size, lo, hi, repeat_context(index)));
      }
    } catch (const UserError& e) {
      cx_.report(e, loc_of(index));
    }
  }

  // " (t = 3, u = 0)" for the repeat indices `index` uses; "" when it uses none.
  std::string repeat_context(const IntExpr& index) const {
    std::string out;
    for (const std::string& var : scope_.repeat_vars) {
      if (!mentions(index, SymKind::Repeat, var)) continue;
      out += (out.empty() ? " (" : ", ") + var + " = " + std::to_string(scope_.values.at(var));
    }
    return out.empty() ? out : out + ")";
  }

  CheckContext& cx_;
  const Kernel& k_;
  const Loc loc_;      // the kernel statement
  const Loc out_loc_;  // its output tensor
  const Scope& scope_;
  LoopNames all_loops_;
  std::vector<Access> accesses_;
};

// Walks the program: declarations, then statements (repeat bodies once per index value, within
// a budget), then the outputs that were never written (but for an output of zero elements).
class Checker {
 public:
  Checker(const Program& p, const SymbolValues& sizes) : p_(p), sizes_(sizes), cx_(p, sizes) {}

  std::vector<Diagnostic> run() {
    check_sizes();
    check_body(p_.body, Scope{sizes_, {}, true});
    for (const TensorDecl& t : p_.tensors) {
      if (t.role == TensorRole::Output && !cx_.was_written(t.name) && !empty(t.name)) {
        cx_.error(t.loc, "output " + quoted(t.name) + " is never written");
      }
    }
    return cx_.take_diagnostics();
  }

 private:
  // Statements checked with concrete repeat index values, in all. Iterations past it are skipped
  // (the rules that hold for every value were checked already); the executor checks their
  // bounds at run time.
  static constexpr int64_t kStatementBudget = int64_t{1} << 16;

  // Whether the tensor has a dimension of size 0: it has no element, so every one of its
  // elements is written without a statement (an output of zero elements needs no write).
  bool empty(std::string_view name) const {
    const TensorInfo* t = cx_.find_tensor(name);
    return t != nullptr && t->shape && std::ranges::find(*t->shape, 0) != t->shape->end();
  }

  void check_sizes() {
    for (const SizeDecl& s : p_.sizes) {
      const auto it = sizes_.find(s.name);
      if (it == sizes_.end()) {
        cx_.error(s.loc, "size " + quoted(s.name) + " has no value");
      } else if (it->second < 0) {
        cx_.error(s.loc, "size " + quoted(s.name) + " is " + std::to_string(it->second) +
                             "; sizes must be non-negative");
      }
    }
  }

  void check_body(const std::vector<StmtP>& body, const Scope& scope) {
    for (const StmtP& s : body) check_stmt(*s, scope);
  }

  void check_stmt(const Stmt& s, const Scope& scope) {
    switch (s.kind()) {
      case StmtKind::Kernel:
        --budget_;
        return KernelChecker(cx_, std::get<Kernel>(s.node), s.loc, scope).run();
      case StmtKind::Compose:
        --budget_;
        return detail::check_compose(cx_, std::get<Compose>(s.node), s.loc, scope);
      case StmtKind::Repeat:
        return check_repeat(std::get<Repeat>(s.node), scope);
      case StmtKind::Op:
        return check_body(std::get<OpBlock>(s.node).body, scope);
    }
  }

  // First the rules that hold for every index value, then each value in turn, until one
  // iteration finds something new (later ones would mostly repeat it) or the budget is spent.
  void check_repeat(const Repeat& r, const Scope& scope) {
    const std::optional<int64_t> lo = cx_.eval(*r.lo, scope);
    const std::optional<int64_t> hi = cx_.eval(*r.hi, scope);
    Scope inner = scope;
    inner.repeat_vars.insert(r.var);
    inner.concrete = false;
    check_body(r.body, inner);
    if (!scope.concrete || !lo || !hi) return;
    inner.concrete = true;
    const size_t before = cx_.error_count();
    for (int64_t t = *lo; t < *hi && budget_ > 0 && cx_.error_count() == before; ++t) {
      inner.values[r.var] = t;
      check_body(r.body, inner);
    }
  }

  const Program& p_;
  const SymbolValues& sizes_;
  CheckContext cx_;
  int64_t budget_ = kStatementBudget;
};

}  // namespace

namespace {
std::atomic<int64_t> checks{0};
}  // namespace

std::vector<Diagnostic> check(const Program& p, const SymbolValues& sizes) {
  checks.fetch_add(1, std::memory_order_relaxed);
  return Checker(p, sizes).run();
}

int64_t check_count() { return checks.load(std::memory_order_relaxed); }

SymbolValues check_or_throw(const Program& p, const SymbolValues& overrides) {
  SymbolValues sizes = bind_sizes(p, overrides);
  std::vector<Diagnostic> diags = check(p, sizes);
  if (!diags.empty()) throw DiagnosticError(std::move(diags));
  return sizes;
}

CheckedProgram check_program(const Program& p, const SymbolValues& overrides) {
  return {p, check_or_throw(p, overrides)};
}

}  // namespace solar::ir
