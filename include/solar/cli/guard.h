// The one place where a command's exceptions become exit codes and one-line messages.
#pragma once

#include <functional>
#include <iosfwd>
#include <string>

namespace solar::cli {

// `message` as one line on stderr: as it is when it already names its place
// (`file:line:col: error: ...`), else `PROG: error: message`.
std::string error_line(const std::string& prog, const std::string& message);

// Runs `body` and returns its exit code. Exceptions become messages on `err` and a code: IR
// diagnostics (each on its own line) and other user errors 1, out of memory 1, internal errors
// (ours) 2. Nothing escapes.
int run_guarded(std::ostream& err, const std::string& prog, const std::function<int()>& body);

}  // namespace solar::cli
