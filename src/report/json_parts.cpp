// JSON pieces shared by the reports (src/report/json_parts.h).
#include "json_parts.h"

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include "format.h"
#include "solar/util/text.h"

namespace solar::report::detail {

std::string source_name(const std::string& path) {
  return std::filesystem::path(path).filename().string();
}

nlohmann::json totals_json(const einsum::OpCounts& c) {
  return {{"macs", c.macs},
          {"flops", c.flops()},
          {"other_ops", c.other_ops()},
          {"simple_ops", c.simple},
          {"special_ops", c.special}};
}

nlohmann::json sizes_json(const ir::SymbolValues& sizes) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [name, value] : sizes) j[name] = value;
  return j;
}

nlohmann::json sol_json(const sol::Analysis& a) {
  nlohmann::json j = nlohmann::json::object();
  for (const sol::FidelityResult& r : a.results) {
    const std::string f(sol::fidelity_key(r.fidelity));
    j[f + "_s"] = r.time_s;
    j["bottleneck_" + f] = sol::bottleneck_name(r.bottleneck);
    j["memory_" + f + "_s"] = r.memory_s;
    j["compute_s"] = r.compute_s;
  }
  if (a.cache) j["cache_aware_sequential_s"] = a.cache_sequential_s;
  if (j.contains("unfused_s") && j.contains("fused_s")) {
    const double unfused = j["unfused_s"].get<double>();
    j["fused_over_unfused"] = unfused > 0 ? nlohmann::json(j["fused_s"].get<double>() / unfused)
                                          : nlohmann::json(nullptr);
  }
  return j;
}

std::string cache_state_line(const sol::MemoryModel& m) {
  if (m.state == sol::CacheState::Cold) return "cache state: cold (every byte from DRAM)";
  return "cache state: warm (up to " + format_bytes(static_cast<double>(m.llc_capacity_bytes)) +
         " of each model's bytes from L2 at " + format_bandwidth(m.llc_bandwidth) +
         ", the rest from DRAM; docs/cache-state.md)";
}

std::string kernel_floor_line(const sol::Analysis& a) {
  if (!a.kernel_floor) return "";
  if (a.kernel_floor_s <= 0) return "kernel floor: none (" + a.kernel_floor_skipped + ")";
  size_t floored = 0;
  for (const sol::OpCost& c : a.ops) floored += c.floored ? 1 : 0;
  std::string s = "kernel floor: " + format_seconds(a.kernel_floor_s) +
                  " a kernel (min_kernel_s; --kernel-floor off: none): " + std::to_string(floored) +
                  " of " + std::to_string(a.ops.size()) + " unfused operations at it";
  std::vector<std::string> bound;  // the fused fidelities one kernel's floor sets
  for (const sol::FidelityResult& f : a.results) {
    if (f.floored) bound.emplace_back(sol::fidelity_name(f.fidelity));
  }
  if (!bound.empty()) s += "; " + join(bound, ", ") + " at one kernel's";
  return s;
}

nlohmann::json warm_cache_json(const sol::Analysis& a) {
  nlohmann::json bytes = nlohmann::json::object();
  for (const sol::FidelityResult& r : a.results) {
    bytes[std::string(sol::fidelity_key(r.fidelity))] = r.warm_bytes;
  }
  return {{"level", "L2"},
          {"capacity_bytes", a.memory.llc_capacity_bytes},
          {"bandwidth_bytes_per_s", a.memory.llc_bandwidth},
          {"bytes", std::move(bytes)}};
}

nlohmann::json kernel_floor_json(const sol::Analysis& a) {
  size_t floored = 0;
  for (const sol::OpCost& c : a.ops) floored += c.floored ? 1 : 0;
  nlohmann::json j = {{"min_kernel_s", a.kernel_floor_s > 0 ? nlohmann::json(a.kernel_floor_s)
                                                            : nlohmann::json(nullptr)},
                      {"floored_ops", floored}};
  if (!a.kernel_floor_skipped.empty()) j["error"] = a.kernel_floor_skipped;
  return j;
}

nlohmann::json bytes_json(const sol::Analysis& a) {
  nlohmann::json j = nlohmann::json::object();
  for (const sol::FidelityResult& r : a.results)
    j[std::string(sol::fidelity_key(r.fidelity))] = r.bytes;
  return j;
}

}  // namespace solar::report::detail
