// Lowering rules that splice in IR written elsewhere (e.g. an op translated by the LLM agent and
// verified on its own). See docs/lowering.md.
#include "rules.h"

namespace solar::frontend {

void register_fragment_rules(std::map<std::string, Rule>& r) { (void)r; }

}  // namespace solar::frontend
