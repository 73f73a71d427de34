// Headroom: how far a measured run is from its speed-of-light time (docs/calibrate.md).
//
//   headroom_F = measured time / SOL time of fidelity F, for each fidelity analysed.
//
// A SOL time is a lower bound, so every headroom should be >= 1 for the fidelities that bound
// every implementation: the smallest SOL time analysed (the fused model, or the cache-aware one
// when it is smaller than unfused but above fused) is the program's bound, and a measured time
// below it is a *violation* (the device figures are too low, or the program did less work than
// the graph says). A measured time below the unfused SOL alone is no violation: a real program
// may fuse kernels.
//
// When the device that measured is not the device the SOL was computed for, headroom is a
// what-if (measured on one device, bounded on another), and the report says so.
#pragma once

#include <string>
#include <vector>

#include "solar/sol/analysis.h"

namespace solar::sol {

// A measured time of the whole program.
struct Measurement {
  double time_s = 0;   // positive, finite (the median when several runs were timed)
  std::string device;  // the device that measured; empty: not stated
  std::string method;  // how it was measured, one line (may be empty)
};

struct FidelityHeadroom {
  Fidelity fidelity = Fidelity::Unfused;
  double sol_s = 0;
  double headroom = 0;  // measured / sol_s (0 when sol_s is 0: no bound to compare with)
};

struct Headroom {
  Measurement measurement;
  std::string target;                        // the device of the SOL times
  bool what_if = false;                      // measured on a named device other than the target
  std::vector<FidelityHeadroom> fidelities;  // in the order of the analysis' results
  double bound_s = 0;                        // the smallest SOL time analysed
  bool violation = false;                    // measured < bound_s
};

// Headroom of `m` against `a` (analysed on device `target`). UserError when the measured time
// is not a positive finite number.
Headroom compute_headroom(const Analysis& a, const std::string& target, const Measurement& m);

}  // namespace solar::sol
