// The serving report (docs/serving.md): the JSON and terminal forms of sol/serving.h's figures,
// with the device, the policy and how each step was verified.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

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

}  // namespace solar::report
