// JSON pieces shared by the reports (src/report/json_parts.h).
#include "json_parts.h"

#include <filesystem>
#include <string>

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

nlohmann::json bytes_json(const sol::Analysis& a) {
  nlohmann::json j = nlohmann::json::object();
  for (const sol::FidelityResult& r : a.results)
    j[std::string(sol::fidelity_key(r.fidelity))] = r.bytes;
  return j;
}

}  // namespace solar::report::detail
