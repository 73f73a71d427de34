// `solar sol`, `solar provision`, `solar compare` (include/solar/cli/sol_commands.h).
//
// Each command: parse its options (CLI11), lift the IR file to an einsum graph, load the devices
// with their overrides, analyse, and print a table or write JSON. Nothing is written unless the
// analysis succeeds, and a JSON file is replaced atomically.
#include "solar/cli/sol_commands.h"

#include <CLI/CLI.hpp>
#include <exception>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "sol_common.h"
#include "solar/cli/guard.h"
#include "solar/cli/report_outputs.h"
#include "solar/einsum/graph.h"
#include "solar/hw/device.h"
#include "solar/ir/checker.h"
#include "solar/ir/diagnostic.h"
#include "solar/ir/parser.h"
#include "solar/ir/sizes.h"
#include "solar/report/analyze.h"
#include "solar/report/report.h"
#include "solar/report/sol_report.h"
#include "solar/report/whatif.h"
#include "solar/sol/analysis.h"
#include "solar/sol/parallel.h"
#include "solar/sol/precision.h"
#include "solar/sol/provision.h"
#include "solar/sol/whatif.h"
#include "solar/util/error.h"
#include "solar/util/file.h"

namespace solar::cli {
namespace {

using detail::run_command;

// Options every command takes.
struct CommonArgs {
  std::string file;
  std::string json;
  std::string policy{sol::kDefaultPrecisionPolicy};
  std::string fidelity = "all";
  std::vector<std::string> sizes;
  std::vector<std::string> sets;
  std::string level = "L2";
  std::string capacity;  // empty: the level's capacity on the device
  std::string routing = "concentrated";
  detail::CacheStateArgs state;           // --cache-state, --kernel-floor
  const ProgramInput* program = nullptr;  // in memory, standing for `file`
};

struct SolArgs {
  CommonArgs common;
  std::string hw;
  size_t top = 10;
  bool details = false;   // --details: every per-op check and per-node note
  int64_t devices = 0;    // --devices (0: not given)
  std::string parallel;   // --parallel (docs/parallel.md)
  ReportOutputs outputs;  // --html, --trace, --csv, --dot, --measured-ms (report_outputs.h)
};

struct MultiArgs {
  CommonArgs common;
  std::vector<std::string> hw;  // empty: every built-in device
  std::string latency;          // provision only
};

void add_common_options(CLI::App& app, CommonArgs& a) {
  app.add_option("FILE", a.file, "IR file")->required()->type_name("");
  app.add_option("--json", a.json, "Write the JSON report (docs/report.md); '-': to stdout")
      ->type_name("OUT");
  app.add_option("--policy", a.policy, "Precision policy (docs/precision.md)")
      ->type_name("NAME")
      ->capture_default_str();
  app.add_option("--fidelity", a.fidelity, "unfused, fused, cache or all (docs/fidelities.md)")
      ->type_name("F")
      ->capture_default_str();
  app.add_option("--size", a.sizes, "Set a free size: --size N=1024 (repeatable)")
      ->type_name("NAME=N")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_option("--set", a.sets,
                 "Override a device figure: --set dram_bandwidth_bytes_per_s=4e12 (repeatable)")
      ->type_name("KEY=VALUE")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  detail::add_cache_options(app, a.level, a.capacity, &a.state);
  detail::add_routing_option(app, a.routing);
}

sol::AnalysisOptions analysis_options(const CommonArgs& a) {
  return detail::cache_options(a.level, a.capacity, a.fidelity == "all", a.state);
}

einsum::Graph lift_graph(const CommonArgs& a) {
  SOLAR_CHECK(!a.program || a.program->program, "a program in memory without its program");
  if (a.program && a.sizes.empty()) return a.program->program->graph();  // lifted once
  std::optional<ir::Program> parsed;  // an IR file's; a program in memory is parsed already
  if (!a.program) parsed = ir::parse_file(a.file);
  const ir::Program& p = parsed ? *parsed : a.program->program->program();
  return einsum::lift(ir::check_program(p, ir::parse_size_overrides(a.sizes)));
}

einsum::Graph load_graph(const CommonArgs& a) {
  einsum::Graph g = lift_graph(a);
  g.source = a.file;
  einsum::assume_routing(g, einsum::parse_routing(a.routing));
  return g;
}

hw::Device load_device(const std::string& spec, const std::vector<std::string>& sets) {
  hw::Device d = hw::resolve_device(spec);
  for (const std::string& s : sets) hw::apply_override(d, s);
  return d;
}

std::vector<hw::Device> load_devices(std::vector<std::string> specs,
                                     const std::vector<std::string>& sets) {
  if (specs.empty()) specs = hw::builtin_device_names();
  std::vector<hw::Device> devices;
  for (const std::string& spec : specs) devices.push_back(load_device(spec, sets));
  return devices;
}

// The table on `out`, or with `--json -` the JSON instead; with `--json OUT` both (the JSON to
// OUT). Every file is written before anything is printed, all or none (sol_common.h).
void emit(const nlohmann::json& j, const std::string& json_path, const std::string& table,
          std::ostream& out, std::vector<std::pair<std::string, std::string>> files = {}) {
  // Serialised only when asked for: on a graph of 100k nodes the text is a large part of a run.
  const std::string text =
      json_path.empty() ? std::string()
                        : j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  if (!json_path.empty() && json_path != "-") files.emplace_back(json_path, text);
  write_files_atomically(files);
  if (json_path == "-") {
    out << text;
    return;
  }
  out << table;
  if (!json_path.empty()) out << "\nwrote " << json_path << "\n";
}

int run_sol(const SolArgs& a, std::ostream& out) {
  // What needs no program first: a wrong device costs no lifting (and no capture, when a
  // frontend checks the arguments before it captures: check_program_args).
  const sol::PrecisionPolicy& policy = sol::find_precision_policy(a.common.policy);
  const std::vector<sol::Fidelity> fidelities = sol::parse_fidelities(a.common.fidelity);
  hw::Device device = load_device(a.hw, a.common.sets);
  const sol::AnalysisOptions options = analysis_options(a.common);
  std::optional<sol::ParallelLayout> layout;
  if (a.devices != 0 || !a.parallel.empty()) layout = sol::layout_for(a.devices, a.parallel);
  if (detail::arguments_only(a.common.program)) {
    detail::check_graph_options(a.common.sizes, a.common.routing);
    return detail::kArgumentsGood;
  }
  report::Report r =
      report::make_report(load_graph(a.common), std::move(device), policy, fidelities, options);
  if (a.common.program) r.provenance = a.common.program->provenance;
  if (layout) report::add_parallel(r, *layout);
  // The JSON report only when something reads it: on a graph of 100k nodes building it is a
  // large part of a run.
  const bool json = !a.common.json.empty() || reads_json_report(a.outputs);
  report::SolReport s =
      report::make_sol_report(std::move(r), a.outputs.measured, a.top, json, a.details);
  std::vector<std::pair<std::string, std::string>> files;  // --html etc., written by emit
  render_report_outputs(s, a.outputs, files);
  emit(s.json, a.common.json, s.table, out, std::move(files));
  return 0;
}

int run_multi(const MultiArgs& a, bool provision, std::ostream& out) {
  const sol::PrecisionPolicy& policy = sol::find_precision_policy(a.common.policy);
  const std::vector<sol::Fidelity> fidelities = sol::parse_fidelities(a.common.fidelity);
  std::optional<double> latency;
  if (provision) latency = sol::parse_duration(a.latency);
  const std::vector<hw::Device> devices = load_devices(a.hw, a.common.sets);
  const sol::AnalysisOptions options = analysis_options(a.common);
  if (detail::arguments_only(a.common.program)) {
    detail::check_graph_options(a.common.sizes, a.common.routing);
    return detail::kArgumentsGood;
  }
  const einsum::Graph g = load_graph(a.common);
  report::MultiDeviceReport r;
  r.comparison = sol::compare_devices(g, devices, policy, fidelities, latency, options);
  if (a.common.program) r.verification = a.common.program->provenance.verification;
  emit(report::multi_device_to_json(r), a.common.json,
       provision ? report::render_provision(r) : report::render_compare(r), out);
  return 0;
}

// The options of provision and compare.
void add_multi_options(CLI::App& app, MultiArgs& a) {
  add_common_options(app, a.common);
  app.add_option("--hw", a.hw, "Devices, built-in names or .yaml files (default: every built-in)")
      ->type_name("NAME,...")
      ->delimiter(',')
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
}

}  // namespace

namespace detail {  // sol_common.h: what `solar curve` shares

void check_graph_options(const std::vector<std::string>& sizes, const std::string& routing) {
  ir::parse_size_overrides(sizes);
  einsum::parse_routing(routing);
}

einsum::Graph load_graph(const std::string& file, const std::vector<std::string>& sizes,
                         const std::string& routing, const ProgramInput* program) {
  CommonArgs a;
  a.file = file;
  a.sizes = sizes;
  a.routing = routing;
  a.program = program;
  return cli::load_graph(a);
}

hw::Device load_device(const std::string& spec, const std::vector<std::string>& sets) {
  return cli::load_device(spec, sets);
}

void emit(const nlohmann::json& j, const std::string& json_path, const std::string& table,
          std::ostream& out, std::vector<std::pair<std::string, std::string>> files) {
  cli::emit(j, json_path, table, out, std::move(files));
}

sol::AnalysisOptions cache_options(const std::string& level, const std::string& capacity,
                                   bool optional, const CacheStateArgs& state) {
  return report::sol_options(level, capacity, optional, state.cache_state, state.kernel_floor);
}

void add_cache_state_option(CLI::App& app, std::string& cache_state) {
  app.add_option("--cache-state", cache_state,
                 "cold: every byte from DRAM; warm: inputs, weights and outputs that fit in L2 "
                 "from L2, as a loop over the same inputs leaves them (docs/cache-state.md)")
      ->type_name("cold|warm")
      ->capture_default_str();
}

void add_cache_options(CLI::App& app, std::string& level, std::string& capacity,
                       CacheStateArgs* state) {
  app.add_option("--level", level, "On-chip level of the cache fidelity: L2 or SMEM")
      ->type_name("L2|SMEM")
      ->capture_default_str();
  app.add_option("--capacity", capacity,
                 "On-chip capacity of the cache fidelity, e.g. 32MiB (overrides --level)")
      ->type_name("BYTES");
  if (!state) return;
  add_cache_state_option(app, state->cache_state);
  add_kernel_floor_option(app, state->kernel_floor);
}

void add_kernel_floor_option(CLI::App& app, std::string& kernel_floor) {
  app.add_option("--kernel-floor", kernel_floor,
                 "on (the default): each unfused operation, and the fused and cache-aware "
                 "program, takes at least the device's min_kernel_s; off: no floor "
                 "(docs/cache-state.md)")
      ->type_name("on|off")
      ->capture_default_str();
}

void add_routing_option(CLI::App& app, std::string& routing) {
  app.add_option("--routing", routing,
                 "A top-k router's reads (take distinct=D: MoE expert weights): concentrated "
                 "or balanced; other gathers read the rows they name (docs/einsum.md)")
      ->type_name("R")
      ->capture_default_str();
}

}  // namespace detail

namespace {

int sol_impl(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
             const ProgramInput* program) {
  CLI::App app{"Speed-of-light time of an IR program on one device (docs/report.md).", "solar sol"};
  SolArgs a;
  a.common.program = program;
  add_common_options(app, a.common);
  app.add_option("--hw", a.hw, "Device: a built-in name (solar hw list) or a .yaml file")
      ->type_name("NAME")
      ->required();
  app.add_option("--top", a.top, "Nodes shown in the table")
      ->type_name("N")
      ->check(CLI::Validator(
          [](const std::string& s) {  // CLI11 would wrap "-1" around to a huge size_t
            return s.find('-') == std::string::npos ? "" : "'" + s + "' is negative";
          },
          "N"))
      ->capture_default_str();
  app.add_flag("--details", a.details,
               "List every output and op configuration the verification compared, and every "
               "node or tensor of a note (precision fallbacks, data-dependent reads), as the "
               "JSON does; without it, one line per kind of note with its count");
  app.add_option("--devices", a.devices, "Devices the program runs on (with --parallel)")
      ->type_name("N")
      ->check(CLI::Range(int64_t{1}, int64_t{65536}));
  app.add_option("--parallel", a.parallel,
                 "Layout over the devices: tp=T,dp=D,pp=P[,mb=M][,sp] (docs/parallel.md)")
      ->type_name("LAYOUT");
  add_report_outputs(app, a.outputs);
  return run_command(app, args, out, err, [&] { return run_sol(a, out); });
}

int provision_impl(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
                   const ProgramInput* program) {
  CLI::App app{
      "Inverse roofline: what a latency target needs of each device "
      "(docs/fidelities.md).",
      "solar provision"};
  MultiArgs a;
  a.common.program = program;
  add_multi_options(app, a);
  app.add_option("--latency", a.latency, "Latency target: 2ms, 1.5us, 0.25s, 800ns")
      ->type_name("TIME")
      ->required();
  return run_command(app, args, out, err, [&] { return run_multi(a, true, out); });
}

int compare_impl(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
                 const ProgramInput* program) {
  CLI::App app{"SOL of an IR program on several devices, one table (docs/report.md).",
               "solar compare"};
  MultiArgs a;
  a.common.program = program;
  add_multi_options(app, a);
  return run_command(app, args, out, err, [&] { return run_multi(a, false, out); });
}

}  // namespace

int sol_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  return sol_impl(args, out, err, nullptr);
}

int sol_on_program(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
                   const ProgramInput& program) {
  return sol_impl(args, out, err, &program);
}

int provision_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  return provision_impl(args, out, err, nullptr);
}

int provision_on_program(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
                         const ProgramInput& program) {
  return provision_impl(args, out, err, &program);
}

int compare_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  return compare_impl(args, out, err, nullptr);
}

int compare_on_program(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
                       const ProgramInput& program) {
  return compare_impl(args, out, err, &program);
}

}  // namespace solar::cli
