// The registry of lowering rules: operator name -> rule, filled once by each rule family's file
// (rules_views.cpp, rules_elementwise.cpp, rules_linalg.cpp, rules_reduce.cpp,
// rules_attention.cpp, ...). A name registered twice is an internal error. Each rule writes its
// node's IR text through NodeLowering; docs/lowering.md states each rule's semantics.
#include <string>
#include <utility>

#include "rules.h"
#include "solar/util/error.h"

namespace solar::frontend {

void RuleTable::add(const std::string& name, Rule rule) {
  SOLAR_CHECK(!rules_.contains(name), "lowering rule registered twice: " + name);
  rules_.emplace(name, std::move(rule));
}

namespace {

std::map<std::string, Rule> make_rules() {
  RuleTable r;
  for (auto* family :
       {register_view_rules, register_elementwise_rules, register_linalg_rules,
        register_reduction_rules, register_attention_rules, register_lax_rules,
        register_fragment_rules, register_index_rules, register_data_rules, register_model_rules,
        register_rnn_rules, register_train_rules, register_complex_rules}) {
    family(r);
  }
  return std::move(r).take();
}

}  // namespace

const std::map<std::string, Rule>& rules() {
  static const std::map<std::string, Rule> registry = make_rules();
  return registry;
}

}  // namespace solar::frontend
