// Plain exports of the JSON report, for the tools users already have (docs/report.md):
//  - a Chrome / Perfetto trace of the per-node SOL timeline in the unfused model (each node runs
//    alone, one after the other, in program order), viewable in chrome://tracing or
//    https://ui.perfetto.dev;
//  - the per-node table as CSV.
// Both read the JSON report. Same JSON, same bytes.
#pragma once

#include <string>

#include <nlohmann/json_fwd.hpp>

namespace solar::report {

// Trace Event Format JSON: one complete event ("ph": "X") per node, `ts` and `dur` in
// microseconds, each node starting where the previous one ended; `args` hold the node's
// compute, memory and bound. Process 0 is named after the source and the device.
std::string render_trace(const nlohmann::json& report);

// One header line, then one line per node in program order (RFC 4180 quoting). Columns:
// name, kind, op, precision, macs, other_ops, flops, bytes_read, bytes_written, bytes_unfused,
// compute_s, memory_s, sol_unfused_s, bottleneck.
std::string render_csv(const nlohmann::json& report);

}  // namespace solar::report
