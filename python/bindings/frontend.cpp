// solar._core bindings of the frontend module: lowering a capture file to IR text.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <string>

#include "bindings.h"
#include "solar/frontend/lower.h"

namespace nb = nanobind;

namespace solar::python {

void bind_frontend(nb::module_& m) {
  m.def(
      "lower_capture",
      [](const std::string& json_text, const std::string& file) {
        return frontend::lower_capture_text(json_text, file);
      },
      nb::arg("json_text"), nb::arg("file") = "<capture>",
      "Lowers a solar-capture JSON document to checked IR text. Raises IRError for a malformed "
      "capture or an unsupported operator (the message names the node and where it was called).");
  m.def("registered_ops", &frontend::registered_ops,
        "The operator names with a lowering rule, sorted.");
}

}  // namespace solar::python
