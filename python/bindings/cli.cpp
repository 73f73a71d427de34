// solar._core binding of the command line: `solar` subcommands implemented in C++ run in-process
// from the Python console script (python/solar/cli.py).
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <sstream>
#include <string>
#include <vector>

#include "bindings.h"
#include "solar/cli/cli.h"

namespace nb = nanobind;

namespace solar::python {

void bind_cli(nb::module_& m) {
  m.def(
      "run_cli",
      [](const std::vector<std::string>& args) {
        std::ostringstream out;
        std::ostringstream err;
        int rc = 0;
        {
          nb::gil_scoped_release release;
          rc = cli::run_cli(args, out, err);
        }
        // Forwarded when the command is done: stdout first, then stderr.
        nb::module_ sys = nb::module_::import_("sys");
        for (auto [stream, text] :
             {std::pair{"stdout", out.str()}, std::pair{"stderr", err.str()}}) {
          if (text.empty()) continue;
          nb::object f = sys.attr(stream);
          f.attr("write")(text);
          f.attr("flush")();
        }
        return rc;
      },
      nb::arg("args"),
      "Runs `solar ARGS...` (without the program name); returns the exit code. The command's "
      "output goes to sys.stdout and sys.stderr.");
}

}  // namespace solar::python
