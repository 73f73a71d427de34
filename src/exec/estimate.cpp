// The executor's estimated time on a program (include/solar/exec/estimate.h).
#include "solar/exec/estimate.h"

namespace solar::exec {

ExecutorEstimate executor_estimate(const einsum::Graph& g) {
  ExecutorEstimate e;
  for (const einsum::Node& n : g.nodes) {
    e.macs += static_cast<double>(n.counts.macs);
    e.other_ops += static_cast<double>(n.counts.other_ops());
    e.bytes += static_cast<double>(n.bytes_read()) + static_cast<double>(n.bytes_written());
  }
  e.seconds =
      e.macs / kExecutorMacsPerS + e.other_ops / kExecutorOpsPerS + e.bytes / kExecutorBytesPerS;
  return e;
}

}  // namespace solar::exec
