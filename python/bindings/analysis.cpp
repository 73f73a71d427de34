// solar._core bindings of the analysis: the options of one analysis (`AnalysisOptions`), the
// provenance its report carries (`Provenance`: capture, coverage, verification, the LLM agent's
// part), `analyze` (the SOL report of a program, as `solar sol` makes it: a `Report`),
// `serving_report` and `totals` (the einsum graph's counts, without an analysis). No files, no
// command line: the analysis is the report module's (report/analyze.h).
#include <nanobind/nanobind.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bindings.h"
#include "solar/einsum/graph.h"
#include "solar/einsum/lifted_program.h"
#include "solar/exec/estimate.h"
#include "solar/frontend/lower.h"
#include "solar/hw/device.h"
#include "solar/ir/ast.h"
#include "solar/ir/checker.h"
#include "solar/ir/parser.h"
#include "solar/ir/sizes.h"
#include "solar/report/analyze.h"
#include "solar/report/provenance.h"
#include "solar/report/report.h"
#include "solar/report/serving.h"
#include "solar/report/sol_report.h"
#include "solar/sol/parallel.h"
#include "solar/sol/precision.h"
#include "solar/sol/serving.h"
#include "solar/util/error.h"
#include "solar/util/file.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace solar::python {
namespace {

// A program given as IR text, a parsed solar.Program or a LoweringResult, held with its check and
// its graph (a LoweringResult's, each made once; IR text parsed here).
std::shared_ptr<const einsum::LiftedProgram> lifted_of(const nb::handle& program) {
  if (nb::isinstance<frontend::LowerResult>(program)) {
    return nb::cast<const frontend::LowerResult&>(program).lifted;
  }
  if (nb::isinstance<nb::str>(program)) {
    return std::make_shared<const einsum::LiftedProgram>(
        ir::parse(nb::cast<std::string>(program), "<ir>"));
  }
  return std::make_shared<const einsum::LiftedProgram>(nb::cast<ir::Program>(program));
}

// `f` of the einsum graph (balanced, as lift returns it) of `program` (lifted_of's) at `sizes`:
// with none, the graph it holds, lifted once.
template <typename F>
auto with_graph(const nb::handle& program, const std::vector<std::string>& sizes, F f) {
  const std::shared_ptr<const einsum::LiftedProgram> lifted = lifted_of(program);
  if (sizes.empty()) return f(lifted->graph());
  return f(einsum::lift(ir::check_program(lifted->program(), ir::parse_size_overrides(sizes))));
}

nlohmann::json parse_section(const std::string& text, const char* name) {
  if (text.empty()) return nullptr;
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw UserError(std::string("the '") + name + "' section is not JSON: " + e.what());
  }
}

// A section given as None, JSON text or a JSON-able Python object (dicts, lists: written by
// json.dumps with sorted keys, no NaN).
nlohmann::json section_of(const nb::handle& value, const char* name) {
  if (value.is_none()) return nullptr;
  if (nb::isinstance<nb::str>(value)) return parse_section(nb::cast<std::string>(value), name);
  const nb::object dumps = nb::module_::import_("json").attr("dumps");
  return parse_section(
      nb::cast<std::string>(dumps(value, "sort_keys"_a = true, "allow_nan"_a = false)), name);
}

std::string json_text(const nlohmann::json& j) {
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

// `Report`: a SOL report's JSON, its renderings and the files they are written to.
void bind_report(nb::module_& m) {
  nb::class_<report::SolReport>(m, "Report",
                                "The SOL report of one program on one device (docs/report.md).")
      .def(
          "to_json", [](const report::SolReport& s) { return json_text(s.json); },
          "The JSON report, as `solar sol --json` writes it (keys sorted).")
      .def(
          "render",
          [](const report::SolReport& s, bool details) {
            return details ? report::render_sol_table(s, true) : s.table;
          },
          nb::kw_only(), "details"_a = false,
          "The terminal table, as `solar sol` prints it; `details`: as `solar sol --details` "
          "prints it (every per-op check and per-node note).")
      .def(
          "render_output",
          [](const report::SolReport& s, const std::string& kind) {
            return report::render_output(s, kind);
          },
          "kind"_a, "The report as 'html', 'trace', 'csv' or 'dot' text.")
      .def(
          "write",
          [](const report::SolReport& s,
             const std::vector<std::pair<std::string, std::string>>& o) {
            std::vector<std::pair<std::string, std::string>> files;
            for (const auto& [kind, path] : o)
              files.emplace_back(path, report::render_output(s, kind));
            write_files_atomically(files);
          },
          "outputs"_a,
          "Writes [(kind, path), ...] ('html', 'trace', 'csv', 'dot'), all or none, atomically.")
      .def(
          "write_html",
          [](const report::SolReport& s, const std::string& path) {
            write_file_atomically(path, report::render_output(s, "html"));
          },
          "path"_a, "Writes the self-contained HTML report.");
}

// `AnalysisOptions`: every option of one analysis, read-only.
void bind_analysis_options(nb::module_& m) {
  nb::class_<report::AnalysisOptions>(
      m, "AnalysisOptions",
      "Every option of one analysis, each as `solar sol`'s option of that name (report/analyze.h; "
      "docs/report.md). Read-only.")
      .def(
          "__init__",
          [](report::AnalysisOptions* o, const std::string& policy, const std::string& fidelity,
             const std::vector<std::string>& sizes, const std::vector<std::string>& sets,
             const std::string& level, const std::string& capacity, const std::string& routing,
             const std::string& cache_state, const std::string& kernel_floor,
             const std::string& parallel, int64_t devices, size_t top,
             std::optional<double> measured_ms, const std::string& measured_on,
             const std::string& measured_method, const std::string& measured_nodes, bool serving) {
            new (o) report::AnalysisOptions{
                policy,
                fidelity,
                sizes,
                sets,
                level,
                capacity,
                routing,
                cache_state,
                kernel_floor,
                parallel,
                devices,
                top,
                report::Measured{measured_ms, measured_on, measured_method, "", measured_nodes},
                serving};
          },
          nb::kw_only(), "policy"_a = "", "fidelity"_a = "all",
          "sizes"_a = std::vector<std::string>{}, "sets"_a = std::vector<std::string>{},
          "level"_a = "L2", "capacity"_a = "", "routing"_a = "concentrated",
          "cache_state"_a = "cold", "kernel_floor"_a = "on", "parallel"_a = "", "devices"_a = 0,
          "top"_a = 10, "measured_ms"_a = nb::none(), "measured_on"_a = "",
          "measured_method"_a = "", "measured_nodes"_a = "", "serving"_a = false,
          "`policy`: the precision policy (empty: the default); `sizes`: 'N=1024' overrides; "
          "`sets`: 'KEY=VALUE' overrides of the device; `fidelity`, `level`, `capacity`, "
          "`routing`, `cache_state` ('cold' or 'warm'), `kernel_floor` ('on' or 'off'), `top`: "
          "as `solar sol`'s options; `parallel` ('tp=8', 'tp=2,dp=4,pp=2,mb=8') and `devices` "
          "(0: tp x dp x pp): the report gains its `parallel` section (docs/parallel.md); "
          "`measured_ms`, `measured_on`, `measured_method` (how the time was measured), "
          "`measured_nodes` (the per-node times file's JSON text): the `headroom` section "
          "(docs/calibrate.md); `serving`: a serving step, whose layout's outputs stay on the "
          "devices that write them (docs/serving.md). Values are checked by `analyze`.")
      .def_ro("policy", &report::AnalysisOptions::policy)
      .def_ro("fidelity", &report::AnalysisOptions::fidelity)
      .def_ro("sizes", &report::AnalysisOptions::sizes)
      .def_ro("sets", &report::AnalysisOptions::sets)
      .def_ro("level", &report::AnalysisOptions::level)
      .def_ro("capacity", &report::AnalysisOptions::capacity)
      .def_ro("routing", &report::AnalysisOptions::routing)
      .def_ro("cache_state", &report::AnalysisOptions::cache_state)
      .def_ro("kernel_floor", &report::AnalysisOptions::kernel_floor)
      .def_ro("parallel", &report::AnalysisOptions::parallel)
      .def_ro("devices", &report::AnalysisOptions::devices)
      .def_ro("top", &report::AnalysisOptions::top)
      .def_prop_ro("measured_ms", [](const report::AnalysisOptions& o) { return o.measured.ms; })
      .def_prop_ro("measured_on", [](const report::AnalysisOptions& o) { return o.measured.on; })
      .def_prop_ro("measured_method",
                   [](const report::AnalysisOptions& o) { return o.measured.method; })
      .def_prop_ro("measured_nodes",
                   [](const report::AnalysisOptions& o) { return o.measured.nodes_json; });
}

// `Provenance`: where a report's program came from and how far it was checked.
void bind_provenance(nb::module_& m) {
  nb::class_<ProvenanceObject>(
      m, "Provenance",
      "Where a report's program came from and how far it was checked: the name the report shows "
      "and its `capture`, `coverage`, `verification` and `agent` sections (docs/report.md; "
      "report/provenance.h). Read-only.")
      .def(
          "__init__",
          [](ProvenanceObject* p, const std::string& source, const nb::handle& capture,
             const nb::handle& coverage, const nb::handle& verification, const nb::handle& agent) {
            report::Provenance sections = report::provenance_from_json(
                section_of(capture, "capture"), section_of(coverage, "coverage"),
                section_of(verification, "verification"));
            sections.agent = section_of(agent, "agent");
            new (p) ProvenanceObject{source, std::move(sections)};
          },
          nb::kw_only(), "source"_a = "", "capture"_a = nb::none(), "coverage"_a = nb::none(),
          "verification"_a = nb::none(), "agent"_a = nb::none(),
          "`source`: the name the report shows (empty: '<ir>'); each section None (an IR "
          "file's; no agent), JSON text or a JSON-able object. `agent`: the parts the LLM agent "
          "wrote (docs/llm.md). Raises IRError for a malformed section.")
      .def_ro("source", &ProvenanceObject::source)
      .def_prop_ro(
          "capture",
          [](const ProvenanceObject& p) {
            return json_text(report::capture_to_json(p.sections.capture, p.source));
          },
          "The `capture` section, JSON text.")
      .def_prop_ro(
          "coverage",
          [](const ProvenanceObject& p) {
            return json_text(report::coverage_to_json(p.sections.coverage));
          },
          "The `coverage` section, JSON text ('null\\n': none).")
      .def_prop_ro(
          "verification",
          [](const ProvenanceObject& p) {
            return json_text(report::verification_to_json(p.sections.verification));
          },
          "The `verification` section, JSON text.")
      .def_prop_ro(
          "agent", [](const ProvenanceObject& p) { return json_text(p.sections.agent); },
          "The parts the LLM agent wrote, JSON text ('null\\n': no agent).");
}

// `analyze`: the SOL report of a program on a device.
void bind_analyze(nb::module_& m) {
  m.def(
      "analyze",
      [](const nb::handle& program, const std::string& device,
         const report::AnalysisOptions& options, const ProvenanceObject& provenance) {
        std::map<std::string, std::string> phases;
        if (nb::isinstance<frontend::LowerResult>(program)) {
          phases = nb::cast<const frontend::LowerResult&>(program).tensor_phases;
        }
        const std::shared_ptr<const einsum::LiftedProgram> p = lifted_of(program);
        nb::gil_scoped_release release;
        return report::analyze(*p, device, options, provenance.sections, provenance.source, phases);
      },
      "program"_a, "device"_a, "options"_a = report::AnalysisOptions{},
      "provenance"_a = ProvenanceObject{},
      "The SOL report of `program` (IR text, a solar.Program, or a LoweringResult: its checked "
      "program, and a training step's phases, which add the report's `training` section, "
      "docs/training.md) on `device` (a built-in name or a .yaml file) under `options` (an "
      "AnalysisOptions), with `provenance` (a Provenance; default: an IR file's). Raises IRError "
      "for a user error.");
}

// The serving report of a decoder's steps: `ServingReport`, `serving_report`, `serving_tp`.
void bind_serving(nb::module_& m) {
  nb::class_<report::ServingReport>(m, "ServingReport",
                                    "The serving figures of a decoder's steps (docs/serving.md).")
      .def(
          "to_json", [](const report::ServingReport& s) { return json_text(s.json); },
          "The serving report as JSON (keys sorted).")
      .def(
          "render",
          [](const report::ServingReport& s, bool after_step_report) {
            return after_step_report ? s.table_after_step : s.table;
          },
          "after_step_report"_a = false,
          "The table `solar analyze --serve` prints; `after_step_report`: printed after the one "
          "step's own report, without the policy, cache state and verification it shows.");

  m.def(
      "serving_report",
      [](const std::string& phase, int64_t context,
         const std::vector<std::pair<int64_t, const report::SolReport*>>& steps,
         const std::vector<std::string>& verification) {
        std::vector<report::ServingStep> serving;
        for (const auto& [batch, s] : steps) {
          serving.push_back({batch, s != nullptr ? &s->report : nullptr});
        }
        return report::serving_report(phase, context, serving, verification);
      },
      "phase"_a, "context"_a, "steps"_a, "verification"_a = std::vector<std::string>{},
      "The serving report of a decoder: `phase` 'prefill' or 'decode', `context` tokens, "
      "`steps` [(batch, Report), ...] by increasing batch (each the SOL report of that batch's "
      "step, `analyze`'s), `verification` each step's verification object as JSON text. Raises "
      "IRError for a user error (docs/serving.md).");

  m.def(
      "serving_tp",
      [](int64_t devices, const std::string& parallel) {
        return sol::serving_layout(devices, parallel).tp;
      },
      "devices"_a, "parallel"_a,
      "The tensor-parallel degree of `--devices DEVICES --parallel PARALLEL` for `--serve` "
      "(devices 0: not given); raises IRError for a layout serving does not take (dp, pp, mb, "
      "sp) or a bad one (docs/serving.md).");
}

// `check_device`, `check_policy`, `check_layout`: what entry points check before they capture.
void bind_checks(nb::module_& m) {
  m.def(
      "check_device", [](const std::string& device) { (void)hw::resolve_device(device); },
      "device"_a,
      "Checks a device as `analyze` takes it (a built-in name or a .yaml file): raises IRError, "
      "one line naming the close built-in names and the list, for one that is not (docs/"
      "devices.md). Entry points call it before they capture.");
  m.def(
      "check_policy", [](const std::string& policy) { (void)sol::find_precision_policy(policy); },
      "policy"_a,
      "Checks a precision policy's name: raises IRError, one line listing the valid names, for "
      "one that is not (docs/precision.md). Entry points call it before they capture.");
  m.def(
      "check_layout",
      [](int64_t devices, const std::string& parallel) {
        (void)sol::layout_for(devices, parallel);
      },
      "devices"_a, "parallel"_a,
      "Checks `--devices DEVICES --parallel PARALLEL` (devices 0: not given): raises IRError, one "
      "line, for a bad layout or one of another number of devices (docs/parallel.md). Entry "
      "points call it before they capture.");
}

// The einsum graph's totals (`totals`).
nb::dict totals_of(const einsum::Graph& g) {
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
}

// `totals`: the einsum graph's counts, from the lift alone; `executor_seconds`, the executor's
// estimated time from them.
void bind_totals(nb::module_& m) {
  m.def(
      "totals",
      [](const nb::handle& program, const std::vector<std::string>& sizes) {
        return with_graph(program, sizes, totals_of);
      },
      "program"_a, "sizes"_a = std::vector<std::string>{},
      "The einsum graph's totals, from the lift alone (no SOL analysis): {nodes, macs, other_ops, "
      "flops, bytes_read, bytes_written} (1 MAC = 2 FLOPs; FLOPs = 2*MACs + other ops; bytes: "
      "each node's footprints, as `solar lift` prints them). `program`: IR text, a "
      "solar.Program or a LoweringResult (its graph, lifted once).");
  m.def(
      "executor_seconds",
      [](const nb::handle& program, const std::vector<std::string>& sizes) {
        return with_graph(program, sizes, [](const einsum::Graph& g) {
          return exec::executor_estimate(g).seconds;
        });
      },
      "program"_a, "sizes"_a = std::vector<std::string>{},
      "The estimated time of SOLAR's executor on `program` (as `totals` takes it), in seconds: "
      "its multiply-adds at EXECUTOR_MACS_PER_S, its other ops at EXECUTOR_OPS_PER_S and the "
      "bytes its nodes read and write at EXECUTOR_BYTES_PER_S (exec/estimate.h; `solar ir run "
      "--budget-s` refuses a program by the same estimate).");
  m.attr("EXECUTOR_MACS_PER_S") = exec::kExecutorMacsPerS;
  m.attr("EXECUTOR_OPS_PER_S") = exec::kExecutorOpsPerS;
  m.attr("EXECUTOR_BYTES_PER_S") = exec::kExecutorBytesPerS;
}

}  // namespace

// The analysis's classes and functions, each after those its signatures name.
void bind_analysis(nb::module_& m) {
  bind_report(m);
  bind_analysis_options(m);
  bind_provenance(m);
  bind_analyze(m);
  bind_serving(m);
  bind_checks(m);
  bind_totals(m);
}

}  // namespace solar::python
