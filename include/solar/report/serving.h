// The serving report (docs/serving.md): the JSON and terminal forms of sol/serving.h's figures,
// with the device, the policy and how each step was verified; and that report assembled from a
// decoder's steps' SOL reports (serving_report: what `_core.serving_report` calls).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "solar/report/report.h"
#include "solar/sol/serving.h"

namespace solar::report {

// What a serving report says besides the figures.
struct ServingContext {
  std::string source;  // the model file (reports show its name)
  std::string device;
  double dram_bandwidth_bytes_per_s = 0;
  std::string policy;
  sol::CacheState cache_state = sol::CacheState::Cold;  // every step's (docs/cache-state.md)
  // One per row: the step's `verification` object (docs/report.md), e.g. {"status": "passed",
  // "mode": "whole_program", "detail": "..."}; null when unknown.
  std::vector<nlohmann::json> verification;
  // A mixture of experts' steps: the `--routing` their bytes assume ("" when no step has a
  // routed read) and, one per row, the step's routed reads (report.h, routed_reads: each
  // [E, ...] expert weight, the experts it is read at).
  std::string routing;
  std::vector<std::vector<RoutedRead>> routed;
  // The table follows the one step's own report (`solar analyze --serve` of one batch): the
  // policy, the cache state and the verification it already shows are not repeated.
  bool after_step_report = false;
};

nlohmann::json serving_to_json(const sol::Serving& s, const ServingContext& c);
// The table `solar analyze --serve` prints: one row per batch, the crossover lines.
std::string render_serving(const sol::Serving& s, const ServingContext& c);

// One step of a decoder: its batch and the SOL report of that batch's step (analyze.h's
// `analyze`), which the caller keeps alive.
struct ServingStep {
  int64_t batch = 0;
  const Report* report = nullptr;
};

// What the serving report of `steps` says besides the figures: the first step's source, device,
// DRAM bandwidth, policy and cache state; one row of routed reads per step (routed_reads' routed
// ones) and, when a step has one, the `--routing` its graph assumes. No verification (one per
// row, serving_report's). UserError for no step, or for steps analysed on different devices,
// policies or cache states.
ServingContext serving_context(const std::vector<ServingStep>& steps);

// The serving report of a decoder's steps (docs/serving.md): the JSON and the two tables.
struct ServingReport {
  nlohmann::json json;           // serving_to_json
  std::string table;             // render_serving
  std::string table_after_step;  // render_serving after the one step's own report
};

// The serving report of `steps`, by increasing batch, in `phase` ("prefill" or "decode") at
// `context` tokens: sol::summarize_serving's figures with serving_context's context, each row
// with its step's `verification` object, given as JSON text (empty: unknown). The
// `_core.serving_report` of the Python package. UserError for bad steps (serving_context), a
// verification that is not JSON, a bad phase or a bad context or batch (summarize_serving),
// checked in that order.
ServingReport serving_report(std::string_view phase, int64_t context,
                             const std::vector<ServingStep>& steps,
                             const std::vector<std::string>& verification);

}  // namespace solar::report
