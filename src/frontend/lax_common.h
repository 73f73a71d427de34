// Private to the JAX lowering rules (lax_rules.cpp, lax_contract.cpp): how a `jax.<primitive>`
// node's operands are read. Operands are `arg0, arg1, ...` (a tensor reference, or a number for
// a literal or a scalar known at capture time); parameters keep their jaxpr names, structures
// flattened as `name.field` / `name.index` (docs/jax.md).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "rules.h"

namespace solar::frontend::lax {

// "arg<k>".
std::string arg(size_t k);
// The number of operands (arg0, arg1, ... present).
size_t operand_count(const NodeLowering& n);
// Operand k read at a point of the box (loop prefix kI, rules.h) over `out` (numpy broadcasting),
// or its literal.
std::string operand(NodeLowering& n, size_t k, const TensorInfo& out);
// `y[i..] = rhs` over y's box.
void map_kernel(NodeLowering& n, const TensorInfo& y, const std::string& rhs);
// Axes as a mask over `rank` dims (negative axes normalised).
std::vector<bool> axes_mask(const std::vector<int64_t>& axes, int rank);

// The contraction, reduction, sorting and indexing rules (lax_contract.cpp).
void register_lax_contract_rules(RuleTable& r);

}  // namespace solar::frontend::lax
