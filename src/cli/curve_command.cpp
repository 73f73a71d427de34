// `solar curve` (include/solar/cli/curve_command.h).
#include "solar/cli/curve_command.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "sol_common.h"
#include "solar/report/analyze.h"
#include "solar/report/curve.h"
#include "solar/sol/curve.h"
#include "solar/sol/precision.h"

namespace solar::cli {

namespace {

int curve_impl(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
               const ProgramInput* program) {
  CLI::App app{"DRAM traffic and SOL against on-chip capacity, 1 KiB to 1 GiB (docs/report.md).",
               "solar curve"};
  std::string file, hw, json, csv, svg, policy{sol::kDefaultPrecisionPolicy},
      routing = "concentrated";
  std::string cache_state = "cold", kernel_floor = "on";
  std::vector<std::string> sizes, sets;
  app.add_option("FILE", file, "IR file")->required()->type_name("");
  app.add_option("--hw", hw, "Device: a built-in name (solar hw list) or a .yaml file")
      ->type_name("NAME")
      ->required();
  app.add_option("--json", json, "Write the curve as JSON; '-': to stdout")->type_name("OUT");
  app.add_option("--csv", csv, "Write the curve as CSV")->type_name("OUT");
  app.add_option("--svg", svg, "Write the plot as SVG")->type_name("OUT");
  app.add_option("--policy", policy, "Precision policy (docs/precision.md)")
      ->type_name("NAME")
      ->capture_default_str();
  app.add_option("--size", sizes, "Set a free size: --size N=1024 (repeatable)")
      ->type_name("NAME=N")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_option("--set", sets, "Override a device figure (repeatable)")
      ->type_name("KEY=VALUE")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  detail::add_routing_option(app, routing);
  detail::add_cache_state_option(app, cache_state);
  detail::add_kernel_floor_option(app, kernel_floor);
  return detail::run_command(app, args, out, err, [&] {
    const sol::PrecisionPolicy& p = sol::find_precision_policy(policy);
    const hw::Device device = detail::load_device(hw, sets);  // before the program
    const sol::CacheState state = sol::parse_cache_state(cache_state);
    const bool floor = report::parse_kernel_floor(kernel_floor);
    if (detail::arguments_only(program)) {
      detail::check_graph_options(sizes, routing);
      return detail::kArgumentsGood;
    }
    const sol::Curve c =
        sol::make_curve(detail::load_graph(file, sizes, routing, program), device, p, state, floor);
    std::string table = report::render_curve(c);
    std::vector<std::pair<std::string, std::string>> files;  // written together by emit
    if (!csv.empty()) {
      files.emplace_back(csv, report::curve_to_csv(c));
      table += "\nwrote " + csv + "\n";
    }
    if (!svg.empty()) {
      files.emplace_back(svg, report::curve_to_svg(c));
      table += "\nwrote " + svg + "\n";
    }
    detail::emit(report::curve_to_json(c), json, table, out, std::move(files));
    return 0;
  });
}

}  // namespace

int curve_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  return curve_impl(args, out, err, nullptr);
}

int curve_on_program(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
                     const ProgramInput& program) {
  return curve_impl(args, out, err, &program);
}

}  // namespace solar::cli
