// solar._core bindings of the analysis: `analyze` (the SOL report of a program, as `solar sol`
// makes it, with the frontend's capture, coverage and verification sections) and `totals` (the
// einsum graph's counts, without an analysis). No files, no command line.
#include <nanobind/nanobind.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bindings.h"
#include "solar/cli/report_outputs.h"
#include "solar/einsum/graph.h"
#include "solar/hw/device.h"
#include "solar/ir/ast.h"
#include "solar/ir/checker.h"
#include "solar/ir/parser.h"
#include "solar/ir/sizes.h"
#include "solar/report/provenance.h"
#include "solar/report/report.h"
#include "solar/report/serving.h"
#include "solar/sol/analysis.h"
#include "solar/sol/parallel.h"
#include "solar/sol/precision.h"
#include "solar/sol/serving.h"
#include "solar/util/error.h"
#include "solar/util/file.h"

namespace nb = nanobind;

namespace solar::python {
namespace {

// A program given as IR text or as a parsed solar.Program.
ir::Program program_of(const nb::handle& program) {
  if (nb::isinstance<nb::str>(program)) return ir::parse(nb::cast<std::string>(program), "<ir>");
  return nb::cast<ir::Program>(program);
}

einsum::Graph lift_program(const nb::handle& program, const std::vector<std::string>& sizes,
                           const std::string& routing) {
  const ir::Program p = program_of(program);
  const ir::SymbolValues values = ir::check_or_throw(p, ir::parse_size_overrides(sizes));
  einsum::Graph g = einsum::lift(p, values);
  einsum::assume_routing(g, einsum::parse_routing(routing));
  return g;
}

nlohmann::json parse_section(const std::string& text, const char* name) {
  if (text.empty()) return nullptr;
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw UserError(std::string("the '") + name + "' section is not JSON: " + e.what());
  }
}

std::string json_text(const nlohmann::json& j) {
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

// The serving report of a decoder's steps (docs/serving.md): the JSON and the table.
struct ServingReport {
  nlohmann::json json;
  std::string table;
};

}  // namespace

void bind_analysis(nb::module_& m) {
  nb::class_<cli::SolReport>(m, "Report",
                             "The SOL report of one program on one device (docs/report.md).")
      .def(
          "to_json", [](const cli::SolReport& s) { return json_text(s.json); },
          "The JSON report, as `solar sol --json` writes it (keys sorted).")
      .def(
          "render", [](const cli::SolReport& s) { return s.table; },
          "The terminal table, as `solar sol` prints it.")
      .def(
          "render_output",
          [](const cli::SolReport& s, const std::string& kind) {
            if (kind != "html" && kind != "trace" && kind != "csv" && kind != "dot") {
              throw UserError("unknown report output '" + kind +
                              "' (valid: csv, dot, html, trace)");
            }
            return cli::render_output(s, kind);
          },
          nb::arg("kind"), "The report as 'html', 'trace', 'csv' or 'dot' text.")
      .def(
          "write",
          [](const cli::SolReport& s, const std::vector<std::pair<std::string, std::string>>& o) {
            std::vector<std::pair<std::string, std::string>> files;
            for (const auto& [kind, path] : o)
              files.emplace_back(path, cli::render_output(s, kind));
            write_files_atomically(files);
          },
          nb::arg("outputs"),
          "Writes [(kind, path), ...] ('html', 'trace', 'csv', 'dot'), all or none, atomically.")
      .def(
          "write_html",
          [](const cli::SolReport& s, const std::string& path) {
            write_file_atomically(path, cli::render_output(s, "html"));
          },
          nb::arg("path"), "Writes the self-contained HTML report.");

  m.def(
      "analyze",
      [](const nb::handle& program, const std::string& hw, const std::string& policy,
         const std::vector<std::string>& sizes, const std::vector<std::string>& sets,
         const std::string& fidelity, const std::string& level, const std::string& capacity,
         const std::string& routing, size_t top, std::optional<double> measured_ms,
         const std::string& measured_on, const std::string& measured_method,
         const std::string& measured_nodes, const std::string& source, const std::string& capture,
         const std::string& coverage, const std::string& verification,
         const std::map<std::string, std::string>& phases, const std::string& cache_state,
         const std::string& kernel_floor, const std::string& parallel, int64_t devices,
         const std::string& agent) {
        einsum::Graph g = lift_program(program, sizes, routing);
        g.source = source.empty() ? "<ir>" : source;
        report::Provenance provenance = report::provenance_from_json(
            parse_section(capture, "capture"), parse_section(coverage, "coverage"),
            parse_section(verification, "verification"));
        provenance.agent = parse_section(agent, "agent");
        hw::Device device = hw::resolve_device(hw);
        for (const std::string& s : sets) hw::apply_override(device, s);
        sol::AnalysisOptions options;
        options.cache.level = sol::parse_cache_level(level);
        if (!capacity.empty()) options.cache.capacity_bytes = sol::parse_capacity(capacity);
        options.cache_optional = fidelity == "all";
        options.cache_state = sol::parse_cache_state(cache_state);
        if (kernel_floor != "on" && kernel_floor != "off") {
          throw UserError("unknown kernel floor '" + kernel_floor + "' (valid: on, off)");
        }
        options.kernel_floor = kernel_floor == "on";
        const sol::PrecisionPolicy& p =
            sol::find_precision_policy(policy.empty() ? sol::kDefaultPrecisionPolicy : policy);
        cli::ReportOutputs outputs;
        outputs.measured_ms = measured_ms;
        outputs.measured_on = measured_on;
        outputs.measured_method = measured_method;
        outputs.measured_nodes_json = measured_nodes;
        nb::gil_scoped_release release;
        report::Report r = report::make_report(std::move(g), std::move(device), p,
                                               sol::parse_fidelities(fidelity), options);
        r.provenance = std::move(provenance);
        report::add_step(r, phases, p, options);
        if (devices != 0 || !parallel.empty()) {
          report::add_parallel(r, sol::layout_for(devices, parallel));
        }
        return cli::make_sol_report(std::move(r), outputs, top);
      },
      nb::arg("program"), nb::arg("hw"), nb::arg("policy") = "", nb::kw_only(),
      nb::arg("sizes") = std::vector<std::string>{}, nb::arg("sets") = std::vector<std::string>{},
      nb::arg("fidelity") = "all", nb::arg("level") = "L2", nb::arg("capacity") = "",
      nb::arg("routing") = "balanced", nb::arg("top") = 10, nb::arg("measured_ms") = nb::none(),
      nb::arg("measured_on") = "", nb::arg("measured_method") = "", nb::arg("measured_nodes") = "",
      nb::arg("source") = "", nb::arg("capture") = "", nb::arg("coverage") = "",
      nb::arg("verification") = "", nb::arg("phases") = std::map<std::string, std::string>{},
      nb::arg("cache_state") = "cold", nb::arg("kernel_floor") = "off", nb::arg("parallel") = "",
      nb::arg("devices") = 0, nb::arg("agent") = "",
      "The SOL report of `program` (IR text or a solar.Program; `sizes`: 'N=1024' overrides) on "
      "device `hw` (a built-in name or a .yaml file; `sets`: 'KEY=VALUE' overrides) under "
      "precision `policy` (empty: the default). As `solar sol`: `fidelity`, `level`, `capacity`, "
      "`routing`, `top`, `measured_ms`, `measured_on`, `measured_nodes` (the per-node times "
      "file's JSON text), `cache_state` ('cold' or 'warm'), `kernel_floor` ('on' or 'off'). "
      "`measured_method`: how the time was measured. `source`: the name the "
      "report shows. `capture`, `coverage`, `verification`: the report's sections as JSON text "
      "(docs/report.md; empty: an IR file's); `agent`: the parts the LLM agent wrote, JSON text "
      "(empty: no agent). `phases`: a training step's phase of each tensor "
      "(lower_capture_detailed's tensor_phases): the report gains its `training` section "
      "(docs/training.md). `parallel` ('tp=8', 'tp=2,dp=4,pp=2,mb=8') and `devices` (0: "
      "tp x dp x pp): the report gains its `parallel` section (docs/parallel.md). Raises IRError "
      "for a user error.");

  nb::class_<ServingReport>(m, "ServingReport",
                            "The serving figures of a decoder's steps (docs/serving.md).")
      .def(
          "to_json", [](const ServingReport& s) { return json_text(s.json); },
          "The serving report as JSON (keys sorted).")
      .def(
          "render", [](const ServingReport& s) { return s.table; },
          "The table `solar analyze --serve` prints.");

  m.def(
      "serving_report",
      [](const std::string& phase, int64_t context,
         const std::vector<std::pair<int64_t, const cli::SolReport*>>& steps,
         const std::vector<std::string>& verification) {
        if (steps.empty()) throw UserError("no serving step to report");
        std::vector<sol::ServeStep> serve;
        report::ServingContext c;
        const report::Report& first = steps.front().second->report;
        c.source = first.graph.source;
        c.device = first.device.name;
        c.dram_bandwidth_bytes_per_s = first.analysis.dram_bandwidth_bytes_per_s;
        c.policy = first.analysis.policy;
        c.cache_state = first.analysis.memory.state;
        for (const auto& [batch, s] : steps) {
          SOLAR_CHECK(s != nullptr, "a serving step without its report");
          const report::Report& r = s->report;
          if (r.device.name != c.device || r.analysis.policy != c.policy ||
              r.analysis.memory.state != c.cache_state) {
            throw UserError(
                "serving steps analysed on different devices, policies or cache states");
          }
          serve.push_back({batch, r.analysis.results});
        }
        for (const std::string& v : verification) {
          c.verification.push_back(parse_section(v, "verification"));
        }
        const sol::Serving summary =
            sol::summarize_serving(sol::parse_serve_phase(phase), context, serve);
        return ServingReport{report::serving_to_json(summary, c),
                             report::render_serving(summary, c)};
      },
      nb::arg("phase"), nb::arg("context"), nb::arg("steps"),
      nb::arg("verification") = std::vector<std::string>{},
      "The serving report of a decoder: `phase` 'prefill' or 'decode', `context` tokens, "
      "`steps` [(batch, Report), ...] by increasing batch (each the SOL report of that batch's "
      "step, `analyze`'s), `verification` each step's verification object as JSON text. Raises "
      "IRError for a user error (docs/serving.md).");

  m.def(
      "totals",
      [](const nb::handle& program, const std::vector<std::string>& sizes) {
        const einsum::Graph g = lift_program(program, sizes, "balanced");
        einsum::OpCounts c;
        int64_t read = 0;
        int64_t written = 0;
        for (const einsum::Node& n : g.nodes) {
          c.macs += n.counts.macs;
          c.simple += n.counts.simple;
          c.special += n.counts.special;
          read += n.bytes_read();
          written += n.bytes_written();
        }
        nb::dict d;
        d["nodes"] = g.nodes.size();
        d["macs"] = c.macs;
        d["other_ops"] = c.other_ops();
        d["flops"] = c.flops();
        d["bytes_read"] = read;
        d["bytes_written"] = written;
        return d;
      },
      nb::arg("program"), nb::arg("sizes") = std::vector<std::string>{},
      "The einsum graph's totals, from the lift alone (no SOL analysis): {nodes, macs, other_ops, "
      "flops, bytes_read, bytes_written} (1 MAC = 2 FLOPs; FLOPs = 2*MACs + other ops; bytes: "
      "each node's footprints, as `solar lift` prints them).");
}

}  // namespace solar::python
