// `solar curve`: DRAM traffic and SOL of the cache-aware model against on-chip capacity
// (docs/report.md).
//
//   solar curve FILE.ir --hw NAME|FILE.yaml [--json OUT] [--csv OUT] [--svg OUT] [--policy P]
//                       [--size N=V ...] [--set KEY=VALUE ...]
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace solar::cli {

// Exit code 0 ok, 1 user error, 2 internal error; errors on `err`; never throws.
struct ProgramInput;  // sol_commands.h

int curve_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
// On a program in memory, standing for FILE (sol_commands.h).
int curve_on_program(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
                     const ProgramInput& program);

}  // namespace solar::cli
