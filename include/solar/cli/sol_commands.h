// `solar sol`, `solar provision`, `solar compare`: SOL analysis of an IR file on the command line
// (docs/report.md, docs/fidelities.md, docs/precision.md).
//
//   solar sol FILE.ir --hw NAME|FILE.yaml [--json OUT] [--policy P] [--fidelity F] [--top N]
//                     [--size N=V ...] [--set KEY=VALUE ...]
//   solar provision FILE.ir --latency 2ms [--hw NAME,...] [--json OUT] [--policy P]
//                     [--fidelity F] [--size N=V ...] [--set KEY=VALUE ...]
//   solar compare FILE.ir [--hw NAME,...] [--json OUT] [--policy P] [--fidelity F]
//                     [--size N=V ...] [--set KEY=VALUE ...]
//
// provision and compare without --hw use every built-in device; --set applies to every device.
// `--json OUT` writes the JSON report atomically (OUT `-`: to standard output, instead of the
// table).
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace solar::cli {

// `args` are the words after the command name, e.g. {"examples/gemm.ir", "--hw", "H100-SXM"}.
// Each returns the process exit code (0 ok, 1 user error, 2 internal error), writes errors to
// `err`, and never throws.
int sol_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int provision_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int compare_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace solar::cli
