// The inverse roofline (include/solar/sol/provision.h).
#include "solar/sol/provision.h"

#include <cmath>
#include <cstdlib>
#include <string>
#include <utility>

#include "solar/util/error.h"

namespace solar::sol {

std::vector<Provision> provision(const Analysis& a, double latency_s) {
  SOLAR_CHECK(latency_s > 0 && std::isfinite(latency_s), "latency must be positive and finite");
  const double flops = static_cast<double>(a.totals.flops());
  std::vector<Provision> out;
  for (const FidelityResult& r : a.results) {
    Provision p;
    p.fidelity = r.fidelity;
    p.latency_s = latency_s;
    p.time_s = r.time_s;
    p.factor = r.time_s / latency_s;
    p.compute_factor = r.compute_s / latency_s;
    p.bandwidth_factor = r.memory_s / latency_s;
    p.required_flops_per_s = flops / latency_s;
    p.effective_flops_per_s = r.compute_s > 0 ? flops / r.compute_s : 0;
    p.required_bandwidth_bytes_per_s = static_cast<double>(r.bytes) / latency_s;
    out.push_back(p);
  }
  return out;
}

double parse_duration(std::string_view text) {
  const std::string s(text);
  const auto bad = [&] {
    return UserError("'" + s + "' is not a duration (examples: 2ms, 1.5us, 0.25s, 800ns)");
  };
  const char* begin = s.c_str();
  char* end = nullptr;
  const double value = std::strtod(begin, &end);
  if (end == begin) throw bad();
  std::string unit(end);
  unit.erase(0, unit.find_first_not_of(' '));
  static constexpr std::pair<std::string_view, double> kUnits[] = {
      {"s", 1.0}, {"ms", 1e-3}, {"us", 1e-6}, {"ns", 1e-9}};
  for (const auto& [name, scale] : kUnits) {
    if (unit != name) continue;
    const double seconds = value * scale;
    if (!(seconds > 0) || !std::isfinite(seconds)) throw bad();
    return seconds;
  }
  throw bad();
}

}  // namespace solar::sol
