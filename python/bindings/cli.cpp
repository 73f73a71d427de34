// solar._core binding of the command line: `solar` subcommands implemented in C++ run in-process
// from the Python console script (python/solar/cli.py).
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "bindings.h"
#include "solar/cli/cli.h"
#include "solar/cli/sol_commands.h"
#include "solar/frontend/lower.h"
#include "solar/report/provenance.h"

namespace nb = nanobind;

namespace solar::python {

namespace {

// Runs `command(out, err)` without the GIL, then forwards its output: stdout first, then stderr.
template <typename Command>
int forwarded(Command command) {
  std::ostringstream out;
  std::ostringstream err;
  int rc = 0;
  {
    nb::gil_scoped_release release;
    rc = command(out, err);
  }
  nb::module_ sys = nb::module_::import_("sys");
  for (auto [stream, text] : {std::pair{"stdout", out.str()}, std::pair{"stderr", err.str()}}) {
    if (text.empty()) continue;
    nb::object f = sys.attr(stream);
    f.attr("write")(text);
    f.attr("flush")();
  }
  return rc;
}

}  // namespace

void bind_cli(nb::module_& m) {
  m.def(
      "run_on_program",
      [](const std::string& command, const std::vector<std::string>& args,
         const frontend::LowerResult& lowered, const ProvenanceObject& provenance) {
        const cli::ProgramInput program{lowered.lifted.get(), provenance.sections};
        return forwarded([&](std::ostream& out, std::ostream& err) {
          return cli::run_on_program(command, args, program, out, err);
        });
      },
      nb::arg("command"), nb::arg("args"), nb::arg("program"), nb::arg("provenance"),
      "Runs `solar COMMAND ARGS...` (sol, provision, compare, curve) with `program` (a "
      "LoweringResult: its checked program, parsed, checked and lifted once) standing for the FILE "
      "argument and "
      "the report's capture, coverage and verification sections from `provenance` (a "
      "Provenance; docs/report.md); returns the exit code, the output as run_cli.");
  m.def(
      "check_program_args",
      [](const std::string& command, const std::vector<std::string>& args) -> nb::object {
        std::optional<int> rc;
        const int code = forwarded([&](std::ostream& out, std::ostream& err) {
          rc = cli::check_program_args(command, args, out, err);
          return rc.value_or(0);
        });
        return rc ? nb::object(nb::int_(code)) : nb::none();
      },
      nb::arg("command"), nb::arg("args"),
      "Checks `solar COMMAND ARGS...` (sol, provision, compare, curve) as `run_on_program` "
      "would before it reads its program: its options, devices, policy, fidelities. None: "
      "good; else the exit code, the error (or the help) written as run_cli writes it. A "
      "frontend calls it before it captures the model.");
  m.def(
      "run_cli",
      [](const std::vector<std::string>& args) {
        return forwarded(
            [&](std::ostream& out, std::ostream& err) { return cli::run_cli(args, out, err); });
      },
      nb::arg("args"),
      "Runs `solar ARGS...` (without the program name); returns the exit code. The command's "
      "output goes to sys.stdout and sys.stderr.");
}

}  // namespace solar::python
