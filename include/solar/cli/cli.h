// The `solar` command line, as a library function so the executable and the Python package's
// console script run the same code. Subcommands of this issue: `ir check`, `ir fmt`, `ir run`.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace solar::cli {

// args excludes the program name. Returns the process exit code (0 ok, 1 user error, 2 internal).
// Never throws.
int run_cli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace solar::cli
