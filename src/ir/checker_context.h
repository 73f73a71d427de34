// Internal to the checker (checker.cpp, checker_compose.cpp): the state shared while checking
// one program, and the name and value helpers both halves use.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "solar/ir/ast.h"
#include "solar/ir/diagnostic.h"
#include "solar/ir/sizes.h"
#include "solar/util/error.h"

namespace solar::ir::detail {

using Shape = std::vector<int64_t>;

std::string shape_str(const Shape& s);                   // "[4, 3]"
std::string count_str(size_t n, std::string_view noun);  // "1 dimension", "2 entries"

// The surroundings of a statement: the sizes and the indices of the repeat blocks around it.
struct Scope {
  SymbolValues values;                             // sizes, and repeat indices when concrete
  std::set<std::string, std::less<>> repeat_vars;  // every repeat index in scope
  bool concrete = true;  // every repeat index has a value: value-dependent checks can run
};

// Which kernel loop indices an integer expression may use.
struct LoopNames {
  std::vector<std::string_view> visible;  // usable here
  std::vector<std::string_view> hidden;   // loops of the same kernel that are not (a bound's own
                                          // loop and the loops to its right)
  std::string_view bound_of;              // for a loop bound: the loop's name
};

struct TensorInfo {
  const TensorDecl* decl = nullptr;
  std::optional<Shape> shape;  // nullopt when a dimension could not be evaluated
};

// Diagnostics and tables of one check() run.
class CheckContext {
 public:
  CheckContext(const Program& p, const SymbolValues& sizes);

  const Program& program() const { return p_; }
  // Records a diagnostic, unless the same message was already given at the same position (a
  // statement in a repeat block is checked once per index value).
  void error(Loc loc, std::string message);
  // Records a UserError raised while evaluating: its own diagnostics when it carries them,
  // else its message at `fallback`.
  void report(const UserError& e, Loc fallback);
  size_t error_count() const { return diags_.size(); }
  std::vector<Diagnostic> take_diagnostics();  // in source order

  const TensorInfo* find_tensor(std::string_view name) const;
  // The tensor, or nullptr after reporting it unknown at `loc`.
  const TensorInfo* tensor_or_error(const std::string& name, Loc loc);
  // Marks `name` written; reports inputs and weights, which are read-only.
  void write(const TensorInfo& t, Loc loc);
  bool was_written(std::string_view name) const { return written_.count(name) != 0; }

  // Checks every symbol of `e`: sizes and repeat indices in scope, and loop indices of `loops`
  // (none when null). Reports each bad one; returns whether all were good.
  bool check_names(const IntExpr& e, const Scope& scope, const LoopNames* loops = nullptr);
  // check_names without loops, then the value when the scope is concrete. Reports failures.
  std::optional<int64_t> eval(const IntExpr& e, const Scope& scope);

 private:
  const Program& p_;
  std::map<std::string, TensorInfo, std::less<>> tensors_;
  std::set<std::string, std::less<>> written_;
  std::vector<Diagnostic> diags_;
  std::set<std::tuple<uint32_t, uint32_t, std::string>> seen_;  // line, column, message
};

// Checks a composition statement (checker_compose.cpp).
void check_compose(CheckContext& cx, const Compose& c, Loc loc, const Scope& scope);

}  // namespace solar::ir::detail
