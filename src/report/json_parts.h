// JSON pieces shared by the report and the what-if reports (not public API; docs/report.md).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "solar/einsum/graph.h"
#include "solar/ir/sizes.h"
#include "solar/sol/analysis.h"

namespace solar::report::detail {

// The name a report shows for the IR file at `path`: its file name, without directories, so a
// report does not depend on where the file lies.
std::string source_name(const std::string& path);

// {"macs", "flops", "other_ops", "simple_ops", "special_ops"}.
nlohmann::json totals_json(const einsum::OpCounts& c);

// {"N": 1024, ...}.
nlohmann::json sizes_json(const ir::SymbolValues& sizes);

// `sol`: for each fidelity analysed, by its key F (sol::fidelity_key), "F_s", "bottleneck_F",
// "memory_F_s"; "compute_s" (the summed compute terms, the same at every fidelity);
// "fused_over_unfused" when both were; "cache_aware_sequential_s" with the cache fidelity.
nlohmann::json sol_json(const sol::Analysis& a);

// `bytes`: {"F": DRAM bytes} for each fidelity analysed, by its key.
nlohmann::json bytes_json(const sol::Analysis& a);

// "cache state: cold (every byte from DRAM)", or the warm state with its capacity and bandwidth
// (docs/cache-state.md): the line every text report shows.
std::string cache_state_line(const sol::MemoryModel& m);

// "kernel floor: 5 us per unfused operation ...", or why there is none; "" when not asked for.
std::string kernel_floor_line(const sol::Analysis& a);

// `warm_cache` (warm only): {"level", "capacity_bytes", "bandwidth_bytes_per_s", "bytes": {"F":
// the bytes of fidelity F served from the last-level cache}}.
nlohmann::json warm_cache_json(const sol::Analysis& a);

// `kernel_floor` (asked for only): {"min_kernel_s" (null: none), "floored_ops", "error"}.
nlohmann::json kernel_floor_json(const sol::Analysis& a);

}  // namespace solar::report::detail
