// The inverse roofline (include/solar/sol/provision.h).
#include "solar/sol/provision.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>
#include <tuple>
#include <utility>

#include "solar/util/error.h"

namespace solar::sol {

namespace {

// An operation of the unfused fidelity launches a kernel when it does work (op_costs).
bool launches(const OpCost& c) { return c.bytes > 0 || c.compute_s > 0; }

// The unfused time with every rate and the bandwidth scaled by k: each operation's unfloored
// time / k, at least the floor where it launches a kernel.
double unfused_time(const Analysis& a, double k) {
  double t = 0;
  for (const OpCost& c : a.ops) {
    const double alone = std::max(c.compute_s, c.memory_s) / k;
    t += launches(c) ? std::max(alone, a.kernel_floor_s) : alone;
  }
  return t;
}

// The k with unfused_time(a, k) = latency_s, for latency_s above the floor: unfused_time is
// continuous and non-increasing in k, so bracket it by doubling and halving, then bisect until
// the bracket stops shrinking.
double unfused_factor(const Analysis& a, double latency_s) {
  double lo = 1, hi = 1;
  while (unfused_time(a, hi) > latency_s) hi *= 2;
  while (unfused_time(a, lo) <= latency_s) lo /= 2;
  for (int i = 0; i < 2000; ++i) {
    const double mid = lo + (hi - lo) / 2;
    if (mid <= lo || mid >= hi) break;
    (unfused_time(a, mid) > latency_s ? lo : hi) = mid;
  }
  return hi;
}

// floor_s and the kernels it counts, for `r`.
std::pair<double, size_t> floor_of(const Analysis& a, const FidelityResult& r) {
  if (r.fidelity != Fidelity::Unfused) {
    return {a.program_floor_s, a.program_floor_s > 0 ? 1 : 0};
  }
  if (a.kernel_floor_s <= 0) return {0, 0};
  const auto n = static_cast<size_t>(std::count_if(a.ops.begin(), a.ops.end(), launches));
  return {static_cast<double>(n) * a.kernel_floor_s, n};
}

}  // namespace

std::vector<Provision> provision(const Analysis& a, double latency_s) {
  SOLAR_CHECK(latency_s > 0 && std::isfinite(latency_s), "latency must be positive and finite");
  const double flops = static_cast<double>(a.totals.flops());
  std::vector<Provision> out;
  for (const FidelityResult& r : a.results) {
    Provision p;
    p.fidelity = r.fidelity;
    p.latency_s = latency_s;
    p.time_s = r.time_s;
    std::tie(p.floor_s, p.kernels) = floor_of(a, r);
    if (!p.reachable()) {
      p.factor = std::numeric_limits<double>::infinity();
    } else if (p.floor_s == 0) {
      p.factor = r.time_s / latency_s;
    } else if (r.fidelity == Fidelity::Unfused) {
      p.factor = unfused_factor(a, latency_s);
    } else {  // max(T0 / k, floor) = L at k = T0 / L, T0 the unfloored time
      p.factor = (r.floored ? std::max(r.compute_s, r.memory_s) : r.time_s) / latency_s;
    }
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
