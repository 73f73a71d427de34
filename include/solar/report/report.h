// The SOL report of one graph on one device: a data model, its JSON form (docs/report.md) and a
// terminal rendering. Renderers read the data; none computes a cost (sol/analysis.h does).
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "solar/einsum/graph.h"
#include "solar/hw/device.h"
#include "solar/report/provenance.h"
#include "solar/sol/analysis.h"
#include "solar/sol/parallel.h"
#include "solar/sol/phases.h"
#include "solar/sol/precision.h"

namespace solar::report {

// Bumped whenever a key changes meaning or disappears (adding a key does not bump it). 2: one
// `verification` object for every frontend (provenance.h), `capture` and `coverage` always present.
inline constexpr int kSchemaVersion = 2;
inline constexpr std::string_view kFlopsConvention = "1 MAC = 2 FLOPs; FLOPs = 2*MACs + other ops";

struct Report {
  einsum::Graph graph;     // graph.source: the IR file (reports show its name, no directories)
  hw::Device device;       // with any command-line overrides applied
  sol::Analysis analysis;  // of graph on device
  Provenance provenance;   // capture, coverage, verification; by default an IR file's
  // A training step's phases (sol/phases.h, docs/training.md); absent for an inference program.
  std::optional<sol::StepAnalysis> step;
  // The SOL per device of a parallel layout (sol/parallel.h, docs/parallel.md); absent for one
  // device.
  std::optional<sol::ParallelAnalysis> parallel;
  // The same analysis at the device's measured ceilings (hw::attainable_device), when its file
  // has an `attainable:` block: the "attainable" line and JSON object, not a bound.
  std::optional<sol::Analysis> attainable;
};

// The measured figures of `d`'s attainable block, each beside the datasheet's: "DRAM 4.28 TB/s
// (datasheet 4.8 TB/s)", "tensor bf16 753 TFLOP/s (989.5 TFLOP/s)"; empty without a block.
std::vector<std::string> attainable_figures(const hw::Device& d);

// Adds the analysis of `layout` to `r` (sol::analyze_parallel on its graph, device and analysis,
// at the fidelities of that analysis).
void add_parallel(Report& r, const sol::ParallelLayout& layout);

// The `parallel` object of a report (docs/parallel.md); null without a layout.
nlohmann::json parallel_to_json(const Report& r);

// The parallel section of the terminal report: per-device SOL, the floor, the `top` longest
// collectives, the pipeline stages; "" without a layout.
std::string parallel_table(const Report& r, size_t top = 10);

// Adds the phases of a training step to `r` (sol::analyze_step on its graph and device, at the
// fidelities of its analysis); nothing when `tensor_phase` is empty.
void add_step(Report& r, const std::map<std::string, std::string>& tensor_phase,
              const sol::PrecisionPolicy& policy, const sol::AnalysisOptions& options = {});

// The `training` object of a report (docs/training.md): per phase and for the whole step, its
// nodes, totals, DRAM bytes and SOL per fidelity; the activations the backward reads.
nlohmann::json step_to_json(const Report& r);

// Analyses `graph` on `device` under `policy` at `fidelities` (UserError as sol::analyze), and
// at its measured ceilings when the device file has them (Report::attainable).
Report make_report(einsum::Graph graph, hw::Device device, const sol::PrecisionPolicy& policy,
                   const std::vector<sol::Fidelity>& fidelities,
                   const sol::AnalysisOptions& options = {});

// The `cache` object of a report: the cache-aware schedule, its groups and their costs
// (docs/report.md); {"error": why} when the cache fidelity was skipped; null when not asked.
nlohmann::json cache_to_json(const einsum::Graph& g, const sol::Analysis& a);

// The report as JSON, keys sorted, no timestamps or absolute paths: same report, same bytes.
nlohmann::json report_to_json(const Report& r);

// One line per graph input or weight read at data-dependent positions (take, gather: an
// embedding lookup, a mixture of experts' gathered weights), saying how its bytes were counted:
// as if every index differs, up to the tensor's size (docs/report.md, "Routing assumption").
std::vector<std::string> routing_assumptions(const einsum::Graph& g);

// A graph input or weight read at data-dependent positions (take/gather): `moved` elements,
// `counted` distinct under the graph's routing, of `numel`; `routed` when a router's choice picks
// them (a take with `distinct=D`: --routing decides the count; else every index distinct); for a
// take or gather along `dim` (else -1), `slices` whole slices along it (rounded up) of its `of`
// (an [E, ...] expert weight: the experts read).
struct RoutedRead {
  std::string tensor;
  bool routed = false;
  int64_t moved = 0, counted = 0, numel = 0;
  int64_t dim = -1, slices = 0, of = 0;
};
std::vector<RoutedRead> routed_reads(const einsum::Graph& g);

// A readable summary: the unsupported operators of a captured program (render_coverage), then
// the header (the device, the policy, the cache state, the verification's status line with what
// failed, the work), one row per fidelity, the cache-aware groups (the `top_nodes` with most
// traffic), the `top_nodes` slowest operations (unfused time), and the notes: precision
// fallbacks, products priced at their origin precision and data-dependent reads, one line per
// kind with its count. `details` (`--details`): every output and per-op configuration the
// verification compared, and the notes one line per node or tensor, as the JSON lists them.
// Units scaled (ns/us/ms/s, kB/MB/GB, TFLOP/s).
std::string render_report(const Report& r, size_t top_nodes = 10, bool details = false);

}  // namespace solar::report
