// Size parameters: binding them (defaults, user overrides) and evaluating integer expressions.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "solar/ir/ast.h"

namespace solar::ir {

// Values of symbols: sizes, and (during execution or checking) loop and repeat indices.
using SymbolValues = std::map<std::string, int64_t, std::less<>>;

// Evaluates every `size` in order. `overrides` may set free sizes (declared with a literal);
// overriding a derived size, or a name that is not a size, is a UserError. A size that evaluates
// negative, or a division/modulo by zero, is a UserError naming the size and its position.
SymbolValues bind_sizes(const Program& p, const SymbolValues& overrides = {});

// Evaluates an integer expression. Floor division and floor modulo (Python semantics). A symbol
// missing from `values`, or a division by zero, raises UserError with the expression's position.
int64_t eval_int(const IntExpr& e, const SymbolValues& values, const std::string& file = "");

// Parses "N=1024,M=64" or repeated "N=1024" items (CLI --size) into overrides. UserError on junk.
SymbolValues parse_size_overrides(const std::string& text);

// The overrides of several `--size` options together (`--size N=64 --size M=8`); a name set in
// two of them is a UserError too.
SymbolValues parse_size_overrides(const std::vector<std::string>& items);

}  // namespace solar::ir
