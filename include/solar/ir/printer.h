// Canonical printer: parse(print(p)) == p for every valid program, and print is idempotent on
// its own output (print(parse(print(p))) == print(p)).
#pragma once

#include <string>

#include "solar/ir/ast.h"

namespace solar::ir {

std::string print(const Program& p);
std::string print(const IntExpr& e);  // minimal parentheses
std::string print(const Expr& e);     // minimal parentheses

}  // namespace solar::ir
