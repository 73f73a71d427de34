// One analysis of a program, as `solar sol` makes it, from options in their text form: the seam
// the Python package calls (`solar._core.analyze`, python/bindings/analysis.cpp;
// docs/architecture.md, "The walk of one analysis").
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "solar/einsum/lifted_program.h"
#include "solar/ir/ast.h"
#include "solar/report/provenance.h"
#include "solar/report/sol_report.h"
#include "solar/sol/analysis.h"

namespace solar::report {

// Every option of one analysis, each as `solar sol`'s option of that name spells it
// (docs/report.md, docs/fidelities.md, docs/cache-state.md, docs/parallel.md, docs/calibrate.md).
struct AnalysisOptions {
  std::string policy;                    // --policy; empty: sol::kDefaultPrecisionPolicy
  std::string fidelity = "all";          // --fidelity
  std::vector<std::string> sizes;        // --size N=V
  std::vector<std::string> sets;         // --set KEY=VALUE, on the device
  std::string level = "L2";              // --level
  std::string capacity;                  // --capacity; empty: the level's on the device
  std::string routing = "concentrated";  // --routing
  std::string cache_state = "cold";      // --cache-state
  std::string kernel_floor = "on";       // --kernel-floor
  std::string parallel;                  // --parallel; empty with devices 0: one device
  int64_t devices = 0;                   // --devices; 0: tp x dp x pp
  size_t top = 10;                       // --top: rows per table
  Measured measured;                     // --measured-ms, --measured-on, --measured-nodes
  // A serving step (`--serve` with `--parallel`, docs/serving.md): its layout's outputs stay on
  // the devices that write them (sol::ParallelLayout::serving).
  bool serving = false;
};

// `--kernel-floor` values: `on` or `off` (UserError otherwise).
bool parse_kernel_floor(const std::string& text);

// `--level`, `--capacity`, `--cache-state` and `--kernel-floor` as analysis options;
// `cache_optional`: skip the cache fidelity on a device without that level instead of failing
// (the default `--fidelity all`). UserError for a bad value.
sol::AnalysisOptions sol_options(const std::string& level, const std::string& capacity,
                                 bool cache_optional, const std::string& cache_state,
                                 const std::string& kernel_floor);

// The SOL report of `program` on `device` (a built-in name or a .yaml file, with `options.sets`
// applied) under `options`, with `provenance`'s sections; `source`: the name the report shows
// (empty: "<ir>"). `phases`: a training step's phase of each tensor
// (frontend::LowerResult::tensor_phases): the report gains its `training` section
// (docs/training.md). UserError (DiagnosticError) for a bad program, device or option.
SolReport analyze(const ir::Program& program, const std::string& device,
                  const AnalysisOptions& options, Provenance provenance, const std::string& source,
                  const std::map<std::string, std::string>& phases = {});

// analyze on a program held with its check and its graph (a lowering's): at no `options.sizes`,
// the graph it holds, neither checked nor lifted again.
SolReport analyze(const einsum::LiftedProgram& program, const std::string& device,
                  const AnalysisOptions& options, Provenance provenance, const std::string& source,
                  const std::map<std::string, std::string>& phases = {});

}  // namespace solar::report
