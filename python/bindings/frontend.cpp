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
  m.def(
      "lower_capture_detailed",
      [](const std::string& json_text, bool allow_unsupported,
         const std::vector<std::string>& disabled_rules, const std::string& file) {
        const frontend::LowerResult r = frontend::lower_capture_detailed(
            json_text, file, frontend::LowerOptions{allow_unsupported, disabled_rules});
        nb::list unsupported;
        for (const frontend::UnsupportedNode& u : r.unsupported) {
          nb::dict d;
          d["node"] = u.node;
          d["op"] = u.op;
          d["location"] = u.location;
          d["reason"] = u.reason;
          d["index"] = u.index;
          d["inputs"] = nb::cast(u.inputs);
          d["outputs"] = nb::cast(u.outputs);
          d["output_bytes"] = u.output_bytes;
          unsupported.append(d);
        }
        nb::dict result;
        result["ir"] = r.ir;
        result["program"] = nb::cast(r.program);  // the checked program: parsed once
        result["unsupported"] = unsupported;
        result["nodes"] = r.nodes;
        result["lowered"] = r.nodes - static_cast<int64_t>(r.unsupported.size());
        result["node_output_bytes"] = r.node_output_bytes;
        nb::dict node_kernels;
        nb::dict node_tensors;
        for (const frontend::LoweredNode& l : r.lowered_nodes) {
          node_kernels[l.node.c_str()] = nb::cast(l.kernels);
          node_tensors[l.node.c_str()] = nb::cast(l.tensors);
        }
        result["node_kernels"] = node_kernels;
        result["node_tensors"] = node_tensors;
        nb::dict tensor_phases;
        for (const auto& [tensor, phase] : r.tensor_phases) tensor_phases[tensor.c_str()] = phase;
        result["tensor_phases"] = tensor_phases;
        nb::list random;
        for (const frontend::RandomDraw& d : r.random) {
          nb::dict e;
          e["tensor"] = d.tensor;
          e["value_of"] = d.value_of;
          e["node"] = d.node;
          e["op"] = d.op;
          random.append(e);
        }
        result["random"] = random;
        return result;
      },
      nb::arg("capture_json"), nb::arg("allow_unsupported") = false,
      nb::arg("disabled_rules") = std::vector<std::string>{}, nb::arg("file") = "<capture>",
      "Lowers a capture document; returns {'ir', 'program' (the checked solar.Program of 'ir': "
      "the one parse of an analysis), 'unsupported', 'nodes', 'lowered', "
      "'node_output_bytes', 'node_kernels', 'node_tensors', 'random', 'tensor_phases'} "
      "(node_kernels and node_tensors: per lowered node, the IR kernels it produced and the "
      "tensors it writes; tensor_phases: a training step's phase of each tensor a node with a "
      "phase writes, docs/training.md; "
      "random: the random draws, {tensor, value_of, node, op}: IR tensor `tensor` takes the "
      "framework's value of capture tensor `value_of`). With allow_unsupported, a node "
      "without a rule is listed in "
      "'unsupported' (node, op, location, reason, index, inputs, outputs, output_bytes) and its "
      "outputs become program inputs; without it, such a node raises IRError. disabled_rules: "
      "operators treated as having no rule.");
  m.def("registered_ops", &frontend::registered_ops,
        "The operator names with a lowering rule, sorted.");
}

}  // namespace solar::python
