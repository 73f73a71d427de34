// `solar hw`: the device database on the command line (docs/devices.md).
//
//   solar hw list                                   table of the built-in devices
//   solar hw show NAME|FILE [--json] [--set KEY=VALUE ...]
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace solar::cli {

// `args` are the words after `hw`, e.g. {"show", "H100-SXM", "--json"}. Returns the process exit
// code (0 ok, 1 user error, 2 internal error) and writes errors to `err`. Never throws.
int hw_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace solar::cli
