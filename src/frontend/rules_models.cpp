// Rules for operators that real model code (Hugging Face `transformers` models, common library
// custom ops) reaches and the other rule families do not cover. See docs/lowering.md.
#include "rules.h"

namespace solar::frontend {

void register_model_rules(std::map<std::string, Rule>& r) { (void)r; }

}  // namespace solar::frontend
