// DRAM traffic and SOL time of the cache-aware model against on-chip capacity: the data behind
// `solar curve` (docs/report.md, docs/fidelities.md). report/curve.h renders it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "solar/einsum/graph.h"
#include "solar/hw/device.h"
#include "solar/sol/analysis.h"
#include "solar/sol/precision.h"

namespace solar::sol {

struct CurvePoint {
  int64_t capacity_bytes = 0;
  std::string mark;                      // "L2", "SMEM" or "" (a sweep point)
  std::optional<int64_t> traffic_bytes;  // absent: no schedule fits
  double time_s = 0;                     // max(compute, traffic / bandwidth); 0 when nothing fits
  size_t groups = 0;
  size_t tiled_groups = 0;
};

struct Curve {
  std::string source;  // the graph's source (a file path; reports show its name)
  std::string device;
  CacheState cache_state = CacheState::Cold;  // every time of the curve is in this state
  double dram_bandwidth_bytes_per_s = 0;
  double compute_s = 0;  // sum of the nodes' compute terms
  int64_t unfused_bytes = 0, fused_bytes = 0;
  double unfused_s = 0, fused_s = 0;
  // The one-kernel floor every point's time is at least (the fused fidelity's, sol/analysis.h):
  // the device's min_kernel_s; 0 when the floor is off or the device has none.
  double kernel_floor_s = 0;
  bool kernel_floor = true;                     // asked for (--kernel-floor on)
  std::string kernel_floor_skipped;             // on, but the device has no min_kernel_s: why
  std::optional<int64_t> l2_bytes, smem_bytes;  // the device's, when its file has them
  std::vector<CurvePoint> points;               // capacity increasing
};

// The sweep: 2^kCurveMinLog2 bytes (1 KiB), twice that, ..., 2^kCurveMaxLog2 bytes (1 GiB).
constexpr int kCurveMinLog2 = 10;
constexpr int kCurveMaxLog2 = 30;

// The sweep 1 KiB, 2 KiB, ..., 1 GiB (powers of two), plus the device's L2 and SMEM capacities.
// UserError as sol::analyze (warm on a device without the figures it needs included).
// `kernel_floor`: every point at least the one-kernel floor (AnalysisOptions::kernel_floor).
Curve make_curve(const einsum::Graph& g, const hw::Device& d, const PrecisionPolicy& policy,
                 CacheState state = CacheState::Cold, bool kernel_floor = true);

}  // namespace solar::sol
