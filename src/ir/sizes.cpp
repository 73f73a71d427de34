// Size parameters: binding (defaults and overrides) and integer-expression evaluation.
#include "solar/ir/sizes.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <optional>
#include <string_view>

#include "int_util.h"
#include "solar/ir/diagnostic.h"
#include "solar/ir/printer.h"
#include "solar/util/error.h"

namespace solar::ir {

namespace {

// Evaluates integer expressions. A failure is a DiagnosticError at the failing node; `context`
// (e.g. "size 'OH'") is appended to its message when not empty.
class Evaluator {
 public:
  Evaluator(const SymbolValues& values, const std::string& file, std::string context)
      : values_(values), file_(file), context_(std::move(context)) {}

  int64_t eval(const IntExpr& e) const {
    switch (e.op) {
      case IntOp::Const:
        return e.value;
      case IntOp::Sym:
        return symbol(e);
      case IntOp::Neg:
        return or_overflow(checked_sub(0, eval(*e.a)), e);
      case IntOp::Add:
      case IntOp::Sub:
      case IntOp::Mul:
      case IntOp::FloorDiv:
      case IntOp::Mod:
      case IntOp::Min:
      case IntOp::Max:
        return binary(e, eval(*e.a), eval(*e.b));
    }
    SOLAR_CHECK(false, "unknown IntOp");
  }

 private:
  int64_t symbol(const IntExpr& e) const {
    const auto it = values_.find(e.name);
    if (it == values_.end()) fail(e, "unknown name '" + e.name + "'");
    return it->second;
  }

  int64_t binary(const IntExpr& e, int64_t a, int64_t b) const {
    switch (e.op) {
      case IntOp::Add:
        return or_overflow(checked_add(a, b), e);
      case IntOp::Sub:
        return or_overflow(checked_sub(a, b), e);
      case IntOp::Mul:
        return or_overflow(checked_mul(a, b), e);
      case IntOp::FloorDiv:
        if (b == 0) fail(e, "division by zero in '" + print(e) + "'");
        return or_overflow(detail::floor_div(a, b), e);
      case IntOp::Mod:
        if (b == 0) fail(e, "modulo by zero in '" + print(e) + "'");
        return or_overflow(detail::floor_mod(a, b), e);
      case IntOp::Min:
        return std::min(a, b);
      case IntOp::Max:
        return std::max(a, b);
      case IntOp::Const:
      case IntOp::Sym:
      case IntOp::Neg:
        break;
    }
    SOLAR_CHECK(false, "binary: not a binary IntOp");
  }

  int64_t or_overflow(std::optional<int64_t> r, const IntExpr& e) const {
    if (!r) fail(e, "integer overflow in '" + print(e) + "'");
    return *r;
  }

  [[noreturn]] void fail(const IntExpr& e, std::string message) const {
    if (!context_.empty()) message += " of " + context_;
    throw DiagnosticError({Diagnostic{file_, detail::loc_of(e), std::move(message)}});
  }

  const SymbolValues& values_;
  const std::string& file_;
  std::string context_;
};

std::string size_names(const Program& p) {
  if (p.sizes.empty()) return "the program declares none";
  std::string out = "sizes: ";
  for (const SizeDecl& s : p.sizes) out += (&s == &p.sizes.front() ? "" : ", ") + s.name;
  return out;
}

// Every override must name a free size.
void check_overrides(const Program& p, const SymbolValues& overrides) {
  for (const auto& [name, value] : overrides) {
    const SizeDecl* s = p.find_size(name);
    if (!s) {
      throw UserError("cannot set size '" + name + "': no such size (" + size_names(p) + ")");
    }
    if (!s->is_free()) {
      throw DiagnosticError({Diagnostic{
          p.file, s->loc, "cannot set size '" + name + "': it is derived from other sizes"}});
    }
  }
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool is_identifier(std::string_view s) {
  const auto word_char = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  };
  return !s.empty() && !std::isdigit(static_cast<unsigned char>(s.front())) &&
         std::all_of(s.begin(), s.end(), word_char);
}

// One "NAME=VALUE" item; VALUE a non-negative decimal integer that fits in int64.
std::pair<std::string, int64_t> parse_override_item(std::string_view item) {
  const std::string quoted = "'" + std::string(item) + "'";
  const size_t eq = item.find('=');
  const std::string_view name = trim(item.substr(0, eq));
  if (eq == std::string_view::npos || !is_identifier(name)) {
    throw UserError("bad size override " + quoted + ": expected NAME=VALUE, e.g. N=1024");
  }
  const std::string_view text = trim(item.substr(eq + 1));
  int64_t value = -1;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value < 0) {
    throw UserError("bad size override " + quoted + ": the value must be a non-negative integer");
  }
  return {std::string(name), value};
}

}  // namespace

SymbolValues bind_sizes(const Program& p, const SymbolValues& overrides) {
  check_overrides(p, overrides);
  SymbolValues values;
  for (const SizeDecl& s : p.sizes) {
    SOLAR_CHECK(s.value != nullptr, "size without a value");
    const auto it = overrides.find(s.name);
    const int64_t v = it != overrides.end()
                          ? it->second
                          : Evaluator(values, p.file, "size '" + s.name + "'").eval(*s.value);
    if (v < 0) {
      throw DiagnosticError({Diagnostic{
          p.file, s.loc,
          "size '" + s.name + "' is " + std::to_string(v) + "; sizes must be non-negative"}});
    }
    values.emplace(s.name, v);
  }
  return values;
}

int64_t eval_int(const IntExpr& e, const SymbolValues& values, const std::string& file) {
  return Evaluator(values, file, "").eval(e);
}

SymbolValues parse_size_overrides(const std::string& text) {
  SymbolValues out;
  std::string_view rest = text;
  while (true) {
    const size_t comma = rest.find(',');
    auto [name, value] = parse_override_item(rest.substr(0, comma));
    if (!out.emplace(name, value).second) {
      throw UserError("bad size override: '" + name + "' is set twice");
    }
    if (comma == std::string_view::npos) return out;
    rest.remove_prefix(comma + 1);
  }
}

SymbolValues parse_size_overrides(const std::vector<std::string>& items) {
  SymbolValues out;
  for (const std::string& item : items) {
    for (auto& [name, value] : parse_size_overrides(item)) {
      if (!out.emplace(name, value).second) {
        throw UserError("--size " + name + " is given more than once");
      }
    }
  }
  return out;
}

}  // namespace solar::ir
