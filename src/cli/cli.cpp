// The `solar` command line (see include/solar/cli/cli.h and docs/cli.md).
//
// Subcommands are dispatched by hand one level at a time (so an unknown one gets a message that
// lists the valid ones); each leaf command's options are parsed by CLI11. Every error ends here:
// a user error is one line on `err` (a program's diagnostics, one line each) and exit code 1; a
// broken invariant of ours is exit code 2. Nothing is written to a file unless the command
// succeeds, and files are replaced atomically.
#include "solar/cli/cli.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <new>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "sol_common.h"
#include "solar/cli/curve_command.h"
#include "solar/cli/guard.h"
#include "solar/cli/hw_command.h"
#include "solar/cli/lift_command.h"
#include "solar/cli/sol_commands.h"
#include "solar/einsum/graph.h"
#include "solar/exec/estimate.h"
#include "solar/exec/executor.h"
#include "solar/exec/inputs.h"
#include "solar/exec/npz.h"
#include "solar/exec/verify.h"
#include "solar/ir/checker.h"
#include "solar/ir/diagnostic.h"
#include "solar/ir/parser.h"
#include "solar/ir/printer.h"
#include "solar/ir/sizes.h"
#include "solar/util/error.h"
#include "solar/util/file.h"
#include "solar/util/text.h"

namespace solar::cli {
namespace {

namespace fs = std::filesystem;

// ---------------------------------------------------------------------------------------------
// Option values

struct CheckArgs {
  std::vector<std::string> files;
  std::vector<std::string> sizes;
};

struct FmtArgs {
  std::vector<std::string> files;
  bool in_place = false;
  bool check = false;
};

// `solar ir run` and `ir verify` refuse a program whose estimated time in the executor
// (exec::executor_estimate: the lift's counts at the executor's slowest measured rates) is over
// --budget-s.
constexpr double kExecutorBudgetS = 3600;

// A one-line UserError when `p` would take more than `budget_s` in the executor, before any
// tensor is made: a triangular reduction over 10^6 columns (2.5 x 10^12 adds) ran for hours.
void check_executor_time(const ir::CheckedProgram& p, double budget_s, const std::string& file) {
  const exec::ExecutorEstimate e = exec::executor_estimate(einsum::lift(p));
  if (e.seconds <= budget_s) return;
  char text[256];
  std::snprintf(text, sizeof text,
                ": the program would take about %.3g s in SOLAR's executor (%.3g multiply-adds, "
                "%.3g other ops, %.3g bytes moved), over --budget-s %g; give a larger "
                "--budget-s to run it, or run it at smaller sizes (--size)",
                e.seconds, e.macs, e.other_ops, e.bytes, budget_s);
  throw UserError(file + text);
}

struct RunArgs {
  std::string file;
  std::string inputs;
  std::string out;
  std::string save_inputs;
  std::vector<std::string> sizes;
  std::string memory_limit = "8GiB";
  double budget_s = kExecutorBudgetS;
  bool no_fast_paths = false;
  bool random = false;
  uint64_t seed = 0;
};

struct VerifyArgs {
  std::string file;
  std::string inputs;
  std::string expected;
  std::string json;
  std::vector<std::string> sizes;
  std::string memory_limit = "8GiB";
  double budget_s = kExecutorBudgetS;
};

// Exit code of `solar ir verify` when the program runs but an output differs (docs/cli.md).
constexpr int kVerificationFailed = 3;

// --memory-limit: "8GiB", "512MiB", "1.5GB", "100000" (bytes; util/text.h, parse_bytes).
uint64_t parse_memory_limit(const std::string& text) {
  const std::optional<uint64_t> bytes = parse_bytes(text);
  if (!bytes) {
    throw UserError("--memory-limit '" + text +
                    "' is not a size (examples: 8GiB, 512MiB, 2GB, 1000000)");
  }
  return *bytes;
}

std::string shape_text(const exec::Tensor& t) {
  std::string s = std::string(ir::dtype_name(t.dtype())) + "[";
  for (size_t i = 0; i < t.shape().size(); ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(t.shape()[i]);
  }
  return s + "]";
}

std::string number_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

// "20 MiB (20971520 bytes)"; plain "512 bytes" below 1 KiB.
std::string bytes_text(uint64_t n) {
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (n < 1024) return std::to_string(n) + " bytes";
  double v = static_cast<double>(n) / 1024;
  size_t u = 0;
  while (v >= 1024 && u + 1 < std::size(kUnits)) {
    v /= 1024;
    ++u;
  }
  return number_text(v) + " " + kUnits[u] + " (" + std::to_string(n) + " bytes)";
}

// One line per tensor: `name: f32[4, 3]  min -1.5  max 2.25  mean 0.125` (NaNs counted apart).
void print_summary(std::ostream& out, const exec::TensorMap& tensors) {
  for (const auto& [name, t] : tensors) {
    out << "  " << name << ": " << shape_text(t);
    const int64_t n = t.numel();
    double lo = std::numeric_limits<double>::infinity();
    double hi = -lo;
    double sum = 0;
    int64_t finite = 0;
    int64_t nans = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double v = t.get(i);
      if (std::isnan(v)) {
        ++nans;
        continue;
      }
      lo = std::min(lo, v);
      hi = std::max(hi, v);
      if (std::isfinite(v)) {
        sum += v;
        ++finite;
      }
    }
    if (n > nans) {
      out << "  min " << number_text(lo) << "  max " << number_text(hi);
      if (finite > 0) out << "  mean " << number_text(sum / static_cast<double>(finite));
    }
    if (nans > 0) out << "  nan " << nans;
    out << '\n';
  }
}

// ---------------------------------------------------------------------------------------------
// Commands

// Reports a user error about one file of several (the command goes on with the next file).
void report(const UserError& e, const std::string& prog, std::ostream& err) {
  if (const auto* d = dynamic_cast<const ir::DiagnosticError*>(&e);
      d && !d->diagnostics().empty()) {
    for (const ir::Diagnostic& diag : d->diagnostics()) err << diag.str() << '\n';
  } else {
    err << error_line(prog, e.what()) << '\n';
  }
}

int cmd_check(const CheckArgs& a, std::ostream& out, std::ostream& err) {
  const ir::SymbolValues overrides = ir::parse_size_overrides(a.sizes);
  int rc = 0;
  for (const std::string& file : a.files) {
    try {
      const ir::Program p = ir::parse_file(file);
      ir::check_or_throw(p, overrides);
      out << file << ": ok\n";
    } catch (const UserError& e) {
      report(e, "solar ir check", err);
      rc = 1;
    }
  }
  return rc;
}

int cmd_fmt(const FmtArgs& a, std::ostream& out, std::ostream& err) {
  if (a.in_place && a.check) throw UserError("give either --in-place or --check, not both");
  if (!a.in_place && !a.check && a.files.size() != 1) {
    throw UserError("one file at a time to stdout; use -i or --check for several files");
  }
  int rc = 0;
  for (const std::string& file : a.files) {
    try {
      const std::string text = read_text_file(file);
      const ir::Program p = ir::parse(text, file);
      const std::string canonical = ir::print(p);
      if (a.check) {
        if (canonical != text) {
          err << file << ": not in canonical form (run 'solar ir fmt -i " << file << "')\n";
          rc = 1;
        }
      } else if (a.in_place) {
        ir::check_or_throw(p);  // never rewrite a file into an invalid program's canonical form
        if (canonical != text) {
          write_file_atomically(file, canonical);
          out << file << ": reformatted\n";
        }
      } else {
        out << canonical;
      }
    } catch (const UserError& e) {
      report(e, "solar ir fmt", err);
      rc = 1;
    }
  }
  return rc;
}

int cmd_run(const RunArgs& a, std::ostream& out) {
  if (a.inputs.empty() && !a.random) {
    throw UserError("give --inputs IN.npz, or --random-inputs to run on seeded random data");
  }
  for (const std::string* path : {&a.out, &a.save_inputs}) {
    if (path->empty()) continue;
    const fs::path dir = fs::path(*path).parent_path();
    if (!dir.empty() && !fs::is_directory(dir)) {
      throw UserError("cannot write '" + *path + "': directory '" + dir.string() +
                      "' does not exist");
    }
  }
  exec::RunOptions options;
  options.memory_limit_bytes = parse_memory_limit(a.memory_limit);
  options.fast_paths = !a.no_fast_paths;
  options.size_overrides = ir::parse_size_overrides(a.sizes);

  const ir::Program p = ir::parse_file(a.file);
  const ir::CheckedProgram checked = ir::check_program(p, options.size_overrides);
  const ir::SymbolValues& sizes = checked.sizes();
  check_executor_time(checked, a.budget_s, a.file);
  exec::TensorMap inputs;
  if (a.random) {
    // Refuse before generating anything that would not fit.
    const uint64_t need = exec::required_bytes(p, sizes);
    if (need > options.memory_limit_bytes) {
      throw UserError("program needs " + bytes_text(need) +
                      " for its tensors, more than the memory limit of " +
                      bytes_text(options.memory_limit_bytes) +
                      "; set a larger limit with --memory-limit or run at smaller sizes");
    }
    inputs = exec::random_inputs(p, sizes, a.seed);
  } else {
    inputs = exec::conform_inputs(p, exec::read_npz(a.inputs));
  }
  const exec::TensorMap outputs = exec::run(checked, inputs, options);
  if (!a.save_inputs.empty()) exec::write_npz(a.save_inputs, inputs);
  if (!a.out.empty()) exec::write_npz(a.out, outputs);

  out << a.file << ": ran on "
      << (a.random ? "random inputs (seed " + std::to_string(a.seed) + ")" : "'" + a.inputs + "'")
      << "\n";
  print_summary(out, outputs);
  if (!a.save_inputs.empty()) out << "wrote inputs to " << a.save_inputs << "\n";
  if (!a.out.empty()) out << "wrote " << a.out << "\n";
  return 0;
}

nlohmann::json check_json(const exec::OutputCheck& c) {
  const auto number = [](const std::optional<double>& v) {
    return v && std::isfinite(*v) ? nlohmann::json(*v) : nlohmann::json(nullptr);
  };
  nlohmann::json j = {{"name", c.name},
                      {"dtype", std::string(ir::dtype_name(c.dtype))},
                      {"shape", c.shape},
                      {"rtol", c.tol.rtol},
                      {"atol", c.tol.atol},
                      {"max_abs_err", number(c.max_abs_err)},
                      {"max_rel_err", number(c.max_rel_err)},
                      {"passed", c.passed}};
  if (!c.error.empty()) j["error"] = c.error;
  if (!c.err_reason.empty()) j["err_reason"] = c.err_reason;
  return j;
}

// Runs FILE on --inputs and compares every output with --expected (exec/verify.h): exit 0 when
// all agree, kVerificationFailed when one differs, 1 on bad input.
int cmd_verify(const VerifyArgs& a, std::ostream& out) {
  exec::RunOptions options;
  options.memory_limit_bytes = parse_memory_limit(a.memory_limit);
  options.size_overrides = ir::parse_size_overrides(a.sizes);
  const ir::Program p = ir::parse_file(a.file);
  const ir::CheckedProgram checked = ir::check_program(p, options.size_overrides);
  check_executor_time(checked, a.budget_s, a.file);
  const exec::TensorMap expected = exec::read_npz(a.expected);
  const exec::TensorMap inputs = exec::conform_inputs(p, exec::read_npz(a.inputs));
  const exec::TensorMap outputs = exec::run(checked, inputs, options);
  const std::vector<exec::OutputCheck> checks = exec::compare_outputs(p, outputs, expected);
  const bool passed = exec::all_passed(checks);
  if (!a.json.empty()) {
    nlohmann::json j = {{"file", a.file},
                        {"inputs", a.inputs},
                        {"expected", a.expected},
                        {"status", passed ? "passed" : "failed"},
                        {"outputs", nlohmann::json::array()}};
    for (const exec::OutputCheck& c : checks) j["outputs"].push_back(check_json(c));
    const std::string text = j.dump(2) + "\n";
    if (a.json == "-") {
      out << text;
      return passed ? 0 : kVerificationFailed;
    }
    write_file_atomically(a.json, text);
  }
  size_t ok = 0;
  for (const exec::OutputCheck& c : checks) ok += c.passed ? 1 : 0;
  out << a.file << ": ran on '" << a.inputs << "', compared with '" << a.expected << "'\n"
      << exec::render_checks(checks) << (passed ? "passed" : "failed") << ": " << ok << " of "
      << checks.size() << " outputs within tolerance\n";
  if (!a.json.empty()) out << "wrote " << a.json << "\n";
  return passed ? 0 : kVerificationFailed;
}

// ---------------------------------------------------------------------------------------------
// Command-line structure

// Top-level commands implemented in their own files (include/solar/cli/*_command.h): each takes
// the words after its name, prints its own help for -h/--help, returns the exit code and never
// throws. A new one is one line here.
struct DelegatedCommand {
  std::string_view name;
  std::string_view help;
  int (*run)(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
};
constexpr DelegatedCommand kDelegatedCommands[] = {
    {"compare", "SOL of one program on several devices, one table (docs/report.md)",
     compare_command},
    {"curve", "DRAM traffic and SOL against on-chip capacity (docs/report.md)", curve_command},
    {"hw", "The device database: list the built-in devices, show one (docs/devices.md)",
     hw_command},
    {"lift", "A program's einsum graph, as text or Graphviz DOT (docs/einsum.md)", lift_command},
    {"provision", "The hardware a program needs to meet a latency target (docs/report.md)",
     provision_command},
    {"sol", "Speed-of-light analysis of a program on a device (docs/report.md)", sol_command},
};

// Commands of the Python package (python/solar/cli.py: PYTHON_COMMANDS and MODULE_COMMANDS): the
// help lists them with the others; the native executable refuses them with one line that says
// where they run.
struct PythonCommand {
  std::string_view name;
  std::string_view help;
};
constexpr PythonCommand kPythonCommands[] = {
    {"analyze", "Capture a PyTorch model file, verify it and report its SOL (docs/capture.md)"},
    {"bench", "Analyse every model file of a suite; timings and summaries (docs/calibrate.md)"},
    {"calibrate", "Measure this machine's device and write a device file (docs/calibrate.md)"},
    {"capture", "Capture a PyTorch model file as a capture document or IR (docs/capture.md)"},
    {"sweep", "Models x devices x policies x sizes x layouts, on Ray or here (docs/sweeps.md)"},
    {"translate", "Translate a PyTorch or JAX model file into IR with an LLM (docs/llm.md)"},
};
constexpr std::string_view kPythonGroup =
    "Python package commands (pip install .; run by its `solar`, not by the native executable)";

const PythonCommand* find_python_command(std::string_view name) {
  for (const PythonCommand& c : kPythonCommands) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

struct Cli {
  CLI::App app{"SOLAR: speed-of-light analysis of deep-learning programs.", "solar"};
  CLI::App* ir = nullptr;
  CLI::App* check = nullptr;
  CLI::App* fmt = nullptr;
  CLI::App* run = nullptr;
  CLI::App* verify = nullptr;
  CheckArgs check_args;
  FmtArgs fmt_args;
  RunArgs run_args;
  VerifyArgs verify_args;

  Cli() {
    app.set_version_flag("--version", std::string("solar ") + SOLAR_VERSION,
                         "Print the version and exit");
    app.add_subcommand("help", "Show help for a command: solar help ir run");
    for (const DelegatedCommand& c : kDelegatedCommands) {
      app.add_subcommand(std::string(c.name), std::string(c.help));  // listed in the help
    }
    ir = app.add_subcommand("ir", "Affine Loop IR files: check, format, run, verify (docs/ir.md)");
    for (const PythonCommand& c : kPythonCommands) {
      app.add_subcommand(std::string(c.name), std::string(c.help))
          ->group(std::string(kPythonGroup));
    }

    check =
        ir->add_subcommand("check", "Parse and check IR files; print 'FILE: ok' or diagnostics");
    check->add_option("FILE", check_args.files, "IR files")->required()->type_name("");
    add_size_option(check, check_args.sizes);

    fmt = ir->add_subcommand("fmt", "Print IR files in canonical form");
    fmt->add_option("FILE", fmt_args.files, "IR files")->required()->type_name("");
    fmt->add_flag("-i,--in-place", fmt_args.in_place,
                  "Rewrite the files (atomically; only valid programs are rewritten)");
    fmt->add_flag("--check", fmt_args.check,
                  "Print nothing; exit 1 if a file is not in canonical form");

    run = ir->add_subcommand("run", "Run an IR program on .npz inputs; write the outputs as .npz");
    run->add_option("FILE", run_args.file, "IR file")->required()->type_name("");
    CLI::Option* inputs =
        run->add_option("--inputs", run_args.inputs,
                        "Inputs and weights by name (numpy .npz); other dtypes are converted "
                        "only when exact (docs/cli.md)")
            ->type_name("IN.npz");
    run->add_option("--out", run_args.out, "Write the outputs (atomically; nothing on error)")
        ->type_name("OUT.npz");
    add_size_option(run, run_args.sizes);
    run->add_option("--memory-limit", run_args.memory_limit,
                    "Refuse runs whose tensors need more (8GiB, 512MiB, 2GB, ...)")
        ->type_name("BYTES")
        ->capture_default_str();
    run->add_option("--budget-s", run_args.budget_s,
                    "Refuse runs the executor would take longer than this for, by an estimate "
                    "from the program's counts (docs/cli.md)")
        ->type_name("SECONDS")
        ->capture_default_str()
        ->check(CLI::PositiveNumber);
    run->add_flag("--no-fast-paths", run_args.no_fast_paths,
                  "Run every kernel on the generic interpreter (no GEMM fast path)");
    CLI::Option* random =
        run->add_flag("--random-inputs", run_args.random,
                      "Generate seeded random inputs instead of reading them (docs/cli.md)");
    random->excludes(inputs);
    run->add_option("--seed", run_args.seed, "Seed of --random-inputs")
        ->type_name("S")
        ->capture_default_str()
        ->needs(random);
    run->add_option("--save-inputs", run_args.save_inputs, "Also write the inputs used to a .npz")
        ->type_name("FILE.npz");

    verify = ir->add_subcommand(
        "verify", "Run an IR program on .npz inputs and compare its outputs with expected ones");
    verify->add_option("FILE", verify_args.file, "IR file")->required()->type_name("");
    verify->add_option("--inputs", verify_args.inputs, "Inputs and weights by name (numpy .npz)")
        ->type_name("IN.npz")
        ->required();
    verify
        ->add_option("--expected", verify_args.expected,
                     "The expected outputs by name (numpy .npz), e.g. the framework's run")
        ->type_name("OUT.npz")
        ->required();
    verify->add_option("--json", verify_args.json, "Write the comparison as JSON; '-': to stdout")
        ->type_name("OUT");
    add_size_option(verify, verify_args.sizes);
    verify
        ->add_option("--memory-limit", verify_args.memory_limit,
                     "Refuse runs whose tensors need more (8GiB, 512MiB, 2GB, ...)")
        ->type_name("BYTES")
        ->capture_default_str();
    verify
        ->add_option("--budget-s", verify_args.budget_s,
                     "Refuse runs the executor would take longer than this for, by an estimate "
                     "from the program's counts (docs/cli.md)")
        ->type_name("SECONDS")
        ->capture_default_str()
        ->check(CLI::PositiveNumber);

    // Set last: subcommands inherit their parent's footer when they are created.
    app.footer("Run 'solar COMMAND --help' for the options of a command.");
    ir->footer("Run 'solar ir COMMAND --help' for the options of a command.");
  }

  static void add_size_option(CLI::App* cmd, std::vector<std::string>& target) {
    cmd->add_option("--size", target, "Set a free size: --size N=1024 (repeatable)")
        ->type_name("NAME=N")
        ->expected(1)
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  }
};

std::vector<std::string> subcommand_names(CLI::App* app) {
  std::vector<std::string> names;
  for (CLI::App* sub : app->get_subcommands([](CLI::App*) { return true; })) {
    names.push_back(sub->get_name());
  }
  std::sort(names.begin(), names.end());
  return names;
}

bool is_help_or_version(const std::string& a) {
  return a == "-h" || a == "--help" || a == "--version";
}

int run_cli_impl(std::vector<std::string> args, std::ostream& out, std::ostream& err) {
  // `solar help [COMMAND...]` is `solar [COMMAND...] --help`.
  if (!args.empty() && args[0] == "help") {
    args.erase(args.begin());
    args.emplace_back("--help");
  }
  for (const DelegatedCommand& c : kDelegatedCommands) {
    if (!args.empty() && args[0] == c.name) {
      return c.run(std::vector<std::string>(args.begin() + 1, args.end()), out, err);
    }
  }
  if (!args.empty()) {
    if (const PythonCommand* c = find_python_command(args[0])) {
      const std::string name(c->name);
      err << "solar " << name << ": error: '" << name
          << "' is a command of the Python package: install it (pip install .) and run its "
             "`solar "
          << name << "`\n";
      return 1;
    }
  }
  Cli cli;
  // Walk the command words: an unknown one, or a missing one, is reported with the valid names.
  CLI::App* cur = &cli.app;
  std::string prog = "solar";
  size_t i = 0;
  for (; i < args.size() && !args[i].empty() && args[i][0] != '-'; ++i) {
    const std::vector<std::string> names = subcommand_names(cur);
    if (names.empty()) break;
    if (std::find(names.begin(), names.end(), args[i]) == names.end()) {
      err << prog << ": error: unknown command '" << args[i] << "' (valid: " << join(names)
          << ")\n";
      return 1;
    }
    cur = cur->get_subcommand(args[i]);
    prog += " " + args[i];
  }
  if (!subcommand_names(cur).empty() &&
      std::none_of(args.begin(), args.end(), is_help_or_version)) {
    err << prog << ": error: missing command (valid: " << join(subcommand_names(cur)) << "; see '"
        << prog << " --help')\n";
    return 1;
  }

  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes them reversed
  try {
    cli.app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    out << cli.app.help();
    return 0;
  } catch (const CLI::CallForVersion& e) {
    out << e.what() << '\n';
    return 0;
  } catch (const CLI::ParseError& e) {
    err << prog << ": error: " << e.what() << " (see '" << prog << " --help')\n";
    return 1;
  }
  // Errors name the command: `solar ir run: error: ...`.
  return run_guarded(err, prog, [&] {
    if (cli.check->parsed()) return cmd_check(cli.check_args, out, err);
    if (cli.fmt->parsed()) return cmd_fmt(cli.fmt_args, out, err);
    if (cli.run->parsed()) return cmd_run(cli.run_args, out);
    if (cli.verify->parsed()) return cmd_verify(cli.verify_args, out);
    internal_error(__FILE__, __LINE__, "no command selected after parsing: " + prog);
  });
}

}  // namespace

int run_on_program(const std::string& command, const std::vector<std::string>& args,
                   const ProgramInput& program, std::ostream& out, std::ostream& err) {
  const int rc = run_guarded(err, "solar " + command, [&] {
    if (command == "sol") return sol_on_program(args, out, err, program);
    if (command == "provision") return provision_on_program(args, out, err, program);
    if (command == "compare") return compare_on_program(args, out, err, program);
    if (command == "curve") return curve_on_program(args, out, err, program);
    throw UserError("'" + command +
                    "' does not analyse a program (valid: compare, curve, "
                    "provision, sol)");
  });
  out.flush();
  err.flush();
  return rc;
}

std::optional<int> check_program_args(const std::string& command,
                                      const std::vector<std::string>& args, std::ostream& out,
                                      std::ostream& err) {
  ProgramInput arguments;
  arguments.arguments_only = true;
  const int rc = run_on_program(command, args, arguments, out, err);
  if (rc == detail::kArgumentsGood) return std::nullopt;
  return rc;
}

int run_cli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  const int rc = run_guarded(err, "solar", [&] { return run_cli_impl(args, out, err); });
  out.flush();
  err.flush();
  return rc;
}

}  // namespace solar::cli
