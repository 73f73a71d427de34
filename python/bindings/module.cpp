// `solar._core`: the C++ core as a Python extension module (nanobind).
//
// Errors: a solar::UserError (bad IR, bad inputs, limits; DiagnosticError included) becomes
// `solar.IRError` (defined here), a ValueError subclass, whose message is the error's one line
// (`file:line:col: error: ...` for IR diagnostics) and whose `diagnostics` attribute lists every
// diagnostic line (empty for errors that are not about a program's text). A solar::InternalError
// (a broken invariant of ours) becomes RuntimeError.
#include <Python.h>
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>

#include <cstdint>
#include <exception>
#include <string>

#include "bindings.h"
#include "solar/ir/diagnostic.h"
#include "solar/util/error.h"
#include "solar/util/text.h"

namespace nb = nanobind;

namespace {

PyObject* g_ir_error = nullptr;  // the IRError type; owned by the module (a strong reference)

void set_ir_error(const std::string& message, const nb::list& diagnostics) {
  nb::object exc = nb::borrow(g_ir_error)(message);
  exc.attr("diagnostics") = diagnostics;
  PyErr_SetObject(g_ir_error, exc.ptr());
}

void translate(const std::exception_ptr& p, void* /*payload*/) {
  try {
    std::rethrow_exception(p);
  } catch (const solar::ir::DiagnosticError& e) {
    nb::list diagnostics;
    for (const solar::ir::Diagnostic& d : e.diagnostics()) diagnostics.append(d.str());
    set_ir_error(e.what(), diagnostics);
  } catch (const solar::UserError& e) {
    set_ir_error(e.what(), nb::list());
  } catch (const solar::InternalError& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  }
}

}  // namespace

NB_MODULE(_core, m) {
  m.doc() = "SOLAR's C++ core. Use the `solar` package, not this module.";
  m.attr("__version__") = SOLAR_VERSION;

  g_ir_error = PyErr_NewExceptionWithDoc(
      "solar.IRError",
      "A user error: an invalid IR program (the message starts with file:line:col), inputs that "
      "do not match the program, or a run over the memory limit. `diagnostics` lists every "
      "diagnostic line of an invalid program.",
      PyExc_ValueError, nullptr);
  if (g_ir_error == nullptr) throw nb::python_error();
  m.attr("IRError") = nb::borrow(g_ir_error);
  nb::register_exception_translator(translate);
  // One rule for plurals in both languages (util/text.h): the Python texts use it too.
  m.def("counted", &solar::counted, nb::arg("n"), nb::arg("noun"),
        "A count and its noun, plural unless the count is 1: counted(1, 'node') == '1 node', "
        "counted(3, 'node') == '3 nodes'.");

  solar::python::bind_ir(m);
  solar::python::bind_exec(m);
  solar::python::bind_cli(m);
  solar::python::bind_analysis(m);
  solar::python::bind_frontend(m);
}
