// `solar lift`: a program's einsum graph on the command line (docs/einsum.md).
//
//   solar lift FILE.ir [--size N=64 ...] [--dot]
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace solar::cli {

// `args` are the words after `lift`, e.g. {"model.ir", "--size", "N=8", "--dot"}. Prints the
// graph's text form (or Graphviz DOT with --dot) to `out`. Returns the process exit code (0 ok,
// 1 user error, 2 internal error) and writes errors to `err`. Never throws.
int lift_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace solar::cli
