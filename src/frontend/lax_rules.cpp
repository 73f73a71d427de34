// Lowering rules for JAX primitives (capture documents with "framework": "jax"). See
// docs/lowering.md.
#include "rules.h"

namespace solar::frontend {

void register_lax_rules(std::map<std::string, Rule>& r) { (void)r; }

}  // namespace solar::frontend
