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
#include <optional>
#include <string>
#include <vector>

#include "solar/einsum/lifted_program.h"
#include "solar/report/provenance.h"

namespace solar::cli {

// A program handed over in memory by a frontend (python/solar/cli.py, `solar CMD MODEL.py`),
// parsed, checked and lifted once (frontend::LowerResult::lifted: without --size, the command
// reads the graph it holds): it stands for the FILE argument (which names the model file: reports
// show its name), and the reports carry the frontend's capture, coverage and verification.
// `program` is the caller's, and outlives the command.
struct ProgramInput {
  const einsum::LiftedProgram* program = nullptr;
  report::Provenance provenance;
  // Set: the command checks what it can without the program (its options, devices with their
  // `--set` overrides, policy, fidelities, latency) and stops there (check_program_args).
  bool arguments_only = false;
};

// The commands above on a program in memory.
int sol_on_program(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
                   const ProgramInput& program);
int provision_on_program(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
                         const ProgramInput& program);
int compare_on_program(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
                       const ProgramInput& program);

// `solar CMD ARGS...` for CMD sol, provision, compare or curve, on `program` (UserError for
// another CMD; errors as run_cli).
int run_on_program(const std::string& command, const std::vector<std::string>& args,
                   const ProgramInput& program, std::ostream& out, std::ostream& err);

// `solar CMD ARGS...` as run_on_program checks it before it reads its program (an unknown device,
// policy or fidelity, a bad option): before a frontend captures the model, so that a mistake
// costs no capture. nullopt: the arguments are good; else the exit code, the error (or the
// help) written as run_on_program writes it.
std::optional<int> check_program_args(const std::string& command,
                                      const std::vector<std::string>& args, std::ostream& out,
                                      std::ostream& err);

// `args` are the words after the command name, e.g. {"examples/gemm.ir", "--hw", "H100-SXM"}.
// Each returns the process exit code (0 ok, 1 user error, 2 internal error), writes errors to
// `err`, and never throws.
int sol_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int provision_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int compare_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace solar::cli
