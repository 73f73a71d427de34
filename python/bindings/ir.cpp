// solar._core bindings of the IR module: parse, print (canonical form), check.
#include <nanobind/nanobind.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <string>
#include <tuple>
#include <vector>

#include "bindings.h"
#include "solar/einsum/lift_count.h"
#include "solar/ir/ast.h"
#include "solar/ir/checker.h"
#include "solar/ir/parse_count.h"
#include "solar/ir/parser.h"
#include "solar/ir/printer.h"
#include "solar/ir/sizes.h"

namespace nb = nanobind;

namespace solar::python {

void bind_ir(nb::module_& m) {
  nb::class_<ir::Program>(m, "Program",
                          "A parsed Affine Loop IR program (immutable). str() is its canonical "
                          "text.")
      .def_ro("file", &ir::Program::file, "The file name used in diagnostics")
      .def_prop_ro(
          "tensors",
          [](const ir::Program& p) {
            std::vector<std::tuple<std::string, std::string, std::string>> result;
            for (const ir::TensorDecl& t : p.tensors) {
              result.emplace_back(t.name, std::string(ir::tensor_role_keyword(t.role)),
                                  std::string(ir::dtype_name(t.dtype)));
            }
            return result;
          },
          "Declared tensors as (name, role, dtype) in declaration order; role is one of input, "
          "weight, output, tensor")
      .def("__str__", [](const ir::Program& p) { return ir::print(p); })
      .def("__eq__", [](const ir::Program& a, const ir::Program& b) { return ir::equal(a, b); })
      .def("__repr__", [](const ir::Program& p) {
        return "<solar.Program " + p.file + ": " + std::to_string(p.tensors.size()) + " tensors, " +
               std::to_string(p.body.size()) + " statements>";
      });

  m.def("parse", &ir::parse, nb::arg("text"), nb::arg("file") = "<input>",
        "Parses IR text; raises IRError at the first syntax or name error.");
  m.def("parse_file", &ir::parse_file, nb::arg("path"), "Reads and parses an IR file.");
  m.def("parse_count", &ir::parse_count,
        "How many programs have been parsed in this process (a test hook: an analysis parses its "
        "program once).");
  m.def("check_count", &ir::check_count,
        "How many programs have been checked in this process (a test hook: an analysis checks "
        "its program once).");
  m.def("lift_count", &einsum::lift_count,
        "How many programs have been lifted to einsum graphs in this process (a test hook: an "
        "analysis lifts its program once).");
  m.def(
      "print", [](const ir::Program& p) { return ir::print(p); }, nb::arg("program"),
      "The canonical text of a program.");
  m.def(
      "check",
      [](const ir::Program& p, const ir::SymbolValues& sizes) {
        return ir::check_or_throw(p, sizes);
      },
      nb::arg("program"), nb::arg("sizes") = ir::SymbolValues{},
      "Checks a program at the given size overrides; returns the value of every size. Raises "
      "IRError listing every problem found.");
}

}  // namespace solar::python
