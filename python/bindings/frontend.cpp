// solar._core bindings of the frontend module: lowering a capture file to IR text, and the
// lowering result (`LoweringResult`) the analysis takes.
#include <nanobind/nanobind.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "bindings.h"
#include "solar/einsum/lifted_program.h"
#include "solar/frontend/lower.h"
#include "solar/ir/parser.h"
#include "solar/report/provenance.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace solar::python {
namespace {

nb::dict unsupported_dict(const frontend::UnsupportedNode& u) {
  nb::dict d;
  d["node"] = u.node;
  d["op"] = u.op;
  d["location"] = u.location;
  d["reason"] = u.reason;
  d["index"] = u.index;
  d["inputs"] = nb::cast(u.inputs);
  d["outputs"] = nb::cast(u.outputs);
  d["output_bytes"] = u.output_bytes;
  return d;
}

// The report's `coverage` section of `r`: its counts and shares report::coverage_of's, each
// node left out as `unsupported` lists it (unsupported_dict), less its index.
nb::dict coverage_dict(const frontend::LowerResult& r) {
  std::vector<report::UnsupportedOp> unsupported;
  nb::list ops;
  for (const frontend::UnsupportedNode& u : r.unsupported) {
    unsupported.push_back(
        {u.node, u.op, u.location, u.reason, u.inputs, u.outputs, u.output_bytes});
    nb::dict d = unsupported_dict(u);
    nb::del(d["index"]);
    ops.append(d);
  }
  const report::Coverage c =
      report::coverage_of(r.nodes, r.node_output_bytes, std::move(unsupported));
  nb::dict d;
  d["nodes"] = c.nodes;
  d["lowered"] = c.lowered;
  d["unsupported_ops"] = ops;
  d["unsupported_bytes"] = c.unsupported_bytes;
  d["share_nodes"] = c.share_nodes;
  d["share_bytes"] = c.share_bytes;
  return d;
}

// One list of each lowered node (LoweredNode::kernels or ::tensors), by the node's name.
nb::dict per_lowered_node(const frontend::LowerResult& r,
                          std::vector<std::string> frontend::LoweredNode::*list) {
  nb::dict d;
  for (const frontend::LoweredNode& l : r.lowered_nodes) d[l.node.c_str()] = l.*list;
  return d;
}

// `ir_text` parsed, to be checked and lifted once, when first asked for.
std::shared_ptr<const einsum::LiftedProgram> lifted_text(const std::string& ir_text) {
  return std::make_shared<const einsum::LiftedProgram>(ir::parse(ir_text, "<input>"));
}

}  // namespace

void bind_frontend(nb::module_& m) {
  m.def(
      "lower_capture",
      [](const std::string& json_text, const std::string& file) {
        return frontend::lower_capture_text(json_text, file);
      },
      nb::arg("json_text"), nb::arg("file") = "<capture>",
      "Lowers a solar-capture JSON document to checked IR text. Raises IRError for a malformed "
      "capture or an unsupported operator (the message names the node and where it was called).");
  nb::class_<frontend::LowerResult>(
      m, "LoweringResult",
      "A lowered capture (frontend/lower.h), held once: its checked program and what the "
      "lowering left out. Read-only.")
      .def(
          "__init__",
          [](frontend::LowerResult* r, const std::string& ir_text) {
            new (r) frontend::LowerResult{ir_text, lifted_text(ir_text), {}, {}, {}, {}, 0, 0};
          },
          "ir"_a,
          "A program written whole (the LLM agent's translation): `ir` parsed, nothing left out.")
      .def(
          "replace_ir",
          [](const frontend::LowerResult& r, const std::string& ir_text) {
            frontend::LowerResult copy = r;
            copy.ir = ir_text;
            copy.lifted = lifted_text(ir_text);
            return copy;
          },
          "ir"_a,
          "A copy with `ir` (parsed) for its program, everything else kept (a test standing in "
          "for a faulty lowering rule).")
      .def_ro("ir", &frontend::LowerResult::ir, "The checked IR text.")
      .def_prop_ro(
          "program",
          [](const frontend::LowerResult& r) -> const ir::Program& { return r.program(); },
          nb::rv_policy::reference_internal,
          "The checked solar.Program of `ir`: the one parse of an analysis.")
      .def_ro("nodes", &frontend::LowerResult::nodes, "The capture's nodes.")
      .def_prop_ro(
          "lowered",
          [](const frontend::LowerResult& r) {
            return r.nodes - static_cast<int64_t>(r.unsupported.size());
          },
          "The nodes that were lowered.")
      .def_ro("node_output_bytes", &frontend::LowerResult::node_output_bytes,
              "The bytes of every node's outputs.")
      .def_ro("tensor_phases", &frontend::LowerResult::tensor_phases,
              "A training step's phase of each tensor a node with a phase writes "
              "(docs/training.md); empty for a forward.")
      .def_prop_ro(
          "unsupported",
          [](const frontend::LowerResult& r) {
            nb::list unsupported;
            for (const frontend::UnsupportedNode& u : r.unsupported) {
              unsupported.append(unsupported_dict(u));
            }
            return unsupported;
          },
          "The nodes without a rule, in node order: [{node, op, location, reason, index, inputs, "
          "outputs, output_bytes}] (their outputs are program inputs).")
      .def_prop_ro(
          "random",
          [](const frontend::LowerResult& r) {
            nb::list random;
            for (const frontend::RandomDraw& d : r.random) {
              nb::dict e;
              e["tensor"] = d.tensor;
              e["value_of"] = d.value_of;
              e["node"] = d.node;
              e["op"] = d.op;
              random.append(e);
            }
            return random;
          },
          "The random draws, [{tensor, value_of, node, op}]: IR tensor `tensor` takes the "
          "framework's value of capture tensor `value_of`.")
      .def_prop_ro(
          "node_kernels",
          [](const frontend::LowerResult& r) {
            return per_lowered_node(r, &frontend::LoweredNode::kernels);
          },
          "Per lowered node, the IR kernels its rule wrote.")
      .def_prop_ro(
          "node_tensors",
          [](const frontend::LowerResult& r) {
            return per_lowered_node(r, &frontend::LoweredNode::tensors);
          },
          "Per lowered node, the tensors it writes.")
      .def_prop_ro(
          "coverage", &coverage_dict,
          "The report's `coverage` section (docs/report.md): nodes, lowered, unsupported_ops, "
          "unsupported_bytes, share_nodes, share_bytes.");

  m.def(
      "lower_capture_detailed",
      [](const std::string& json_text, bool allow_unsupported,
         const std::vector<std::string>& disabled_rules, const std::string& file) {
        return frontend::lower_capture_detailed(
            json_text, file, frontend::LowerOptions{allow_unsupported, disabled_rules});
      },
      "capture_json"_a, "allow_unsupported"_a = false,
      "disabled_rules"_a = std::vector<std::string>{}, "file"_a = "<capture>",
      "Lowers a capture document: a LoweringResult. With allow_unsupported, a node without a "
      "rule is listed in its `unsupported` and its outputs become program inputs; without it, "
      "such a node raises IRError. disabled_rules: operators treated as having no rule.");
  m.def("registered_ops", &frontend::registered_ops,
        "The operator names with a lowering rule, sorted.");
}

}  // namespace solar::python
