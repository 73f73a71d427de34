// Headroom of a measured time against the SOL times (include/solar/sol/headroom.h).
#include "solar/sol/headroom.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "solar/util/error.h"

namespace solar::sol {

Headroom compute_headroom(const Analysis& a, const std::string& target, const Measurement& m) {
  if (!std::isfinite(m.time_s) || m.time_s <= 0) {
    throw UserError("a measured time must be a positive finite number of milliseconds");
  }
  SOLAR_CHECK(!a.results.empty(), "headroom needs at least one fidelity");
  Headroom h;
  h.measurement = m;
  h.target = target;
  h.what_if = !m.device.empty() && m.device != target;
  h.bound_s = std::numeric_limits<double>::infinity();
  for (const FidelityResult& r : a.results) {
    h.fidelities.push_back({r.fidelity, r.time_s, r.time_s > 0 ? m.time_s / r.time_s : 0.0});
    h.bound_s = std::min(h.bound_s, r.time_s);
  }
  h.violation = m.time_s < h.bound_s;
  return h;
}

}  // namespace solar::sol
