// One analysis of a program from options in their text form (include/solar/report/analyze.h).
#include "solar/report/analyze.h"

#include <map>
#include <string>
#include <utility>

#include "solar/einsum/graph.h"
#include "solar/einsum/lifted_program.h"
#include "solar/hw/device.h"
#include "solar/ir/ast.h"
#include "solar/ir/checker.h"
#include "solar/ir/sizes.h"
#include "solar/report/provenance.h"
#include "solar/report/report.h"
#include "solar/report/sol_report.h"
#include "solar/sol/analysis.h"
#include "solar/sol/parallel.h"
#include "solar/sol/precision.h"
#include "solar/util/error.h"

namespace solar::report {

bool parse_kernel_floor(const std::string& text) {
  if (text == "on") return true;
  if (text == "off") return false;
  throw UserError("unknown kernel floor '" + text + "' (valid: on, off)");
}

sol::AnalysisOptions sol_options(const std::string& level, const std::string& capacity,
                                 bool cache_optional, const std::string& cache_state,
                                 const std::string& kernel_floor) {
  sol::AnalysisOptions o;
  o.cache.level = sol::parse_cache_level(level);
  if (!capacity.empty()) o.cache.capacity_bytes = sol::parse_capacity(capacity);
  o.cache_optional = cache_optional;
  o.cache_state = sol::parse_cache_state(cache_state);
  o.kernel_floor = parse_kernel_floor(kernel_floor);
  return o;
}

namespace {

// The report of `g`, the program lifted at `options.sizes`.
SolReport analyze_graph(einsum::Graph g, const std::string& device, const AnalysisOptions& options,
                        Provenance provenance, const std::string& source,
                        const std::map<std::string, std::string>& phases) {
  einsum::assume_routing(g, einsum::parse_routing(options.routing));
  g.source = source.empty() ? "<ir>" : source;
  hw::Device d = hw::resolve_device(device);
  for (const std::string& s : options.sets) hw::apply_override(d, s);
  const sol::AnalysisOptions analysis =
      sol_options(options.level, options.capacity, options.fidelity == "all", options.cache_state,
                  options.kernel_floor);
  const sol::PrecisionPolicy& policy = sol::find_precision_policy(
      options.policy.empty() ? sol::kDefaultPrecisionPolicy : options.policy);
  Report r = make_report(std::move(g), std::move(d), policy,
                         sol::parse_fidelities(options.fidelity), analysis);
  r.provenance = std::move(provenance);
  add_step(r, phases, policy, analysis);
  if (options.devices != 0 || !options.parallel.empty()) {
    sol::ParallelLayout layout = sol::layout_for(options.devices, options.parallel);
    layout.serving = options.serving;
    add_parallel(r, layout);
  }
  return make_sol_report(std::move(r), options.measured, options.top);
}

}  // namespace

SolReport analyze(const ir::Program& program, const std::string& device,
                  const AnalysisOptions& options, Provenance provenance, const std::string& source,
                  const std::map<std::string, std::string>& phases) {
  return analyze_graph(
      einsum::lift(ir::check_program(program, ir::parse_size_overrides(options.sizes))), device,
      options, std::move(provenance), source, phases);
}

SolReport analyze(const einsum::LiftedProgram& program, const std::string& device,
                  const AnalysisOptions& options, Provenance provenance, const std::string& source,
                  const std::map<std::string, std::string>& phases) {
  if (!options.sizes.empty()) {
    return analyze(program.program(), device, options, std::move(provenance), source, phases);
  }
  return analyze_graph(program.graph(), device, options, std::move(provenance), source, phases);
}

}  // namespace solar::report
