// The pieces of the `solar._core` extension module: one binding file per C++ module, each with
// one entry point called from module.cpp. The Python API built on them is python/solar/.
#pragma once

#include <nanobind/nanobind.h>

#include <string>

#include "solar/report/provenance.h"

namespace solar::python {

// `_core.Provenance` (analysis.cpp): the provenance of a report (report::Provenance) and the name
// the report shows; `_core.run_on_program` (cli.cpp) takes it too.
struct ProvenanceObject {
  std::string source;
  report::Provenance sections;
};

void bind_ir(nanobind::module_& m);    // ir.cpp:   Program, parse, print, check
void bind_exec(nanobind::module_& m);  // exec.cpp: run on numpy arrays
void bind_cli(nanobind::module_& m);   // cli.cpp:  run_cli, the `solar` command in-process
// analysis.cpp: analyze (the SOL report of a program, a Report), totals (counts from the lift)
void bind_analysis(nanobind::module_& m);
// frontend.cpp: lower_capture (capture JSON to IR text), registered_ops
void bind_frontend(nanobind::module_& m);

}  // namespace solar::python
