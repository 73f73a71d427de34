// The inverse roofline: what a device would need to meet a latency target (docs/fidelities.md).
//
// Scaling every compute rate of a device by a and its DRAM bandwidth by b turns each compute term
// c into c/a and each memory term m into m/b. For a latency target L:
//   - factor = T/L, T the SOL time at the fidelity: scaling all rates and the bandwidth by this
//     one factor meets L exactly (T is homogeneous: T(k, k) = T/k at both fidelities). > 1: the
//     device is that many times too slow; <= 1: it meets the target.
//   - compute_factor = C/L, C the summed compute terms: the compute rates must grow by at least
//     this much, even with unlimited bandwidth. bandwidth_factor = M/L likewise for bandwidth, M
//     the memory term (fused: bytes_io / B; unfused: the sum of the nodes' memory terms).
//     Fused: the target is met exactly when a >= compute_factor and b >= bandwidth_factor, and
//     factor = max(compute_factor, bandwidth_factor). Unfused: both are necessary, not
//     sufficient (a node bound by compute at one scaling can be bound by memory at another).
//   - required_flops_per_s = FLOPs / L and required_bandwidth_bytes_per_s = bytes / L do not
//     depend on the device's rates; compute_factor = required_flops_per_s / effective rate, the
//     effective rate being FLOPs / C (the device's peak rates weighted by the program's mix).
//
// The kernel floor (docs/cache-state.md) does not scale with the rates: with it, T(k) = max(T0/k,
// F) for the fused and cache-aware fidelities (F the one-kernel floor, T0 the unfloored time) and
// T(k) = sum over the operations of max(t_i/k, F) for the unfused one (F for each operation that
// launches a kernel). `floor_s` is T(infinity), what no scaling removes: a target at or below it
// is unreachable (factor infinite). Otherwise factor is the k with T(k) = L (T0/L for the fused
// ones; found by bisection for the unfused one, exact to the last bits of a double).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "solar/sol/analysis.h"

namespace solar::sol {

struct Provision {
  Fidelity fidelity = Fidelity::Unfused;
  double latency_s = 0;                       // the target
  double time_s = 0;                          // the device's SOL time at this fidelity
  double factor = 0;                          // time_s / latency_s
  double compute_factor = 0;                  // compute_s / latency_s
  double bandwidth_factor = 0;                // memory_s / latency_s
  double required_flops_per_s = 0;            // total FLOPs / latency_s
  double effective_flops_per_s = 0;           // total FLOPs / compute_s; 0 without arithmetic
  double required_bandwidth_bytes_per_s = 0;  // DRAM bytes of the fidelity / latency_s
  double floor_s = 0;                         // the kernel floors no scaling removes; 0: none
  size_t kernels = 0;  // the kernels floor_s counts (the operations that launch one)

  // Whether some scaling of the rates meets the target: it is above floor_s. false: factor is
  // infinite.
  bool reachable() const { return floor_s == 0 || latency_s > floor_s; }
  bool meets() const { return reachable() && factor <= 1; }
};

// One Provision per fidelity of `a`, in the same order. `latency_s` is positive and finite
// (InternalError otherwise; parse_duration checks user input).
std::vector<Provision> provision(const Analysis& a, double latency_s);

// A duration with its unit: "2ms", "1.5 us", "0.25s", "800ns" (units s, ms, us, ns). UserError
// for anything else, or a value that is not positive and finite.
double parse_duration(std::string_view text);

}  // namespace solar::sol
