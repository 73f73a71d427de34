// What the SOL commands share (`solar sol`, `compare`, `provision`, `curve`): loading a program
// and devices, the cache-aware options, CLI11 parsing with every error turned into a message, and
// writing the table or JSON. Not public API; defined in sol_commands.cpp.
#pragma once

#include <CLI/CLI.hpp>
#include <iosfwd>
#include <nlohmann/json_fwd.hpp>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "solar/cli/guard.h"
#include "solar/cli/sol_commands.h"
#include "solar/einsum/graph.h"
#include "solar/hw/device.h"
#include "solar/sol/analysis.h"

namespace solar::cli::detail {

// The einsum graph of the IR file `file` with `--size` assignments and `--routing` (UserError,
// DiagnosticError).
// `program`: the program in memory, standing for `file` (sol_commands.h).
einsum::Graph load_graph(const std::string& file, const std::vector<std::string>& sizes,
                         const std::string& routing = "concentrated",
                         const ProgramInput* program = nullptr);

// What a command's body returns when its program is `arguments_only` and its arguments are good
// (check_program_args); never an exit code.
inline constexpr int kArgumentsGood = -1;

// Whether the command stops after checking its arguments (ProgramInput::arguments_only).
inline bool arguments_only(const ProgramInput* program) {
  return program != nullptr && program->arguments_only;
}

// `--size` and `--routing` checked without a program (UserError).
void check_graph_options(const std::vector<std::string>& sizes, const std::string& routing);

// A built-in device or device file, with `--set` overrides applied.
hw::Device load_device(const std::string& spec, const std::vector<std::string>& sets);

// `--cache-state cold|warm` and `--kernel-floor on|off` (docs/cache-state.md), as given.
struct CacheStateArgs {
  std::string cache_state = "cold";
  std::string kernel_floor = "on";
};

// `--level`, `--capacity`, `--cache-state` and `--kernel-floor` as analysis options; `optional`:
// skip the cache fidelity on a device without that level instead of failing (the default
// `--fidelity all`). UserError for a bad value.
sol::AnalysisOptions cache_options(const std::string& level, const std::string& capacity,
                                   bool optional, const CacheStateArgs& state = {});

// Adds `--level` and `--capacity` to `app`, and `--cache-state`, `--kernel-floor` when `state`
// is given.
void add_cache_options(CLI::App& app, std::string& level, std::string& capacity,
                       CacheStateArgs* state = nullptr);

// Adds `--cache-state cold|warm` to `app` (`solar curve`, which has no --level).
void add_cache_state_option(CLI::App& app, std::string& cache_state);

// Adds `--kernel-floor on|off` to `app`.
void add_kernel_floor_option(CLI::App& app, std::string& kernel_floor);

// Adds `--routing balanced|concentrated` (einsum::Routing) to `app`.
void add_routing_option(CLI::App& app, std::string& routing);

// The table on `out`, or with `--json -` the JSON instead; with `--json OUT` both. The JSON file
// and `files` (path, content) are written together first (write_files_atomically: one bad path
// writes none of them), then `out`.
void emit(const nlohmann::json& j, const std::string& json_path, const std::string& table,
          std::ostream& out, std::vector<std::pair<std::string, std::string>> files = {});

// Parses `args` with `app` and runs `body`; every error becomes a message on `err` and an exit
// code.
template <typename Body>
int run_command(CLI::App& app, const std::vector<std::string>& args, std::ostream& out,
                std::ostream& err, Body body) {
  const std::string prog = app.get_name();
  return run_guarded(err, prog, [&] {
    try {
      std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes them reversed
      app.parse(reversed);
    } catch (const CLI::CallForHelp&) {
      out << app.help();
      return 0;
    } catch (const CLI::ParseError& e) {
      err << prog << ": error: " << e.what() << " (see '" << prog << " --help')\n";
      return 1;
    }
    return body();
  });
}

}  // namespace solar::cli::detail
