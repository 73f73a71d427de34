// Lowering of a captured framework graph (a `solar-capture` JSON file, docs/lowering.md) to an
// Affine Loop IR program (docs/ir.md).
//
// Each operator has one lowering rule, registered by its ATen name; a rule writes the IR text of
// its node (declarations of temporaries, kernels, composition statements). The lowering joins
// them, parses the text and checks it. An operator without a rule is a UserError naming it, the
// node and where it was called; a rule that produces invalid IR is an InternalError.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "solar/einsum/lifted_program.h"
#include "solar/ir/ast.h"

namespace solar::frontend {

// The IR text of the capture `json_text` (read from `file`, used in messages), checked: it
// parses and passes the checker. Throws UserError for a malformed capture or an unsupported
// operator, InternalError when a rule produced invalid IR.
std::string lower_capture_text(const std::string& json_text, const std::string& file);

// A node that was not lowered (LowerOptions::allow_unsupported).
struct UnsupportedNode {
  std::string node;      // the node's name
  std::string op;        // its operator
  std::string location;  // "model.py:12 in forward", or "" when the capture has none
  std::string reason;    // "no lowering rule", "lowering rule disabled", or the rule's error
  int64_t index = 0;     // its position in the capture's node list (0-based)
  std::vector<std::string> inputs;   // the tensors its arguments name, in order, once each
  std::vector<std::string> outputs;  // its output tensors (program inputs in the lowered IR)
  int64_t output_bytes = 0;          // the bytes of its outputs
};

struct LowerOptions {
  // Lower what can be: a node without a rule (or whose rule rejects its arguments) is left out
  // and its outputs become program inputs, so the rest of the graph is analysed. Without it,
  // such a node is a UserError that says how much of the graph has no rule.
  bool allow_unsupported = false;
  // Operators treated as if they had no rule (tests of the fallbacks); each must have one.
  std::vector<std::string> disabled_rules;
};

// What the lowering made of one captured node (provenance: per-node headroom attributes the
// einsum graph's nodes to captured nodes with it, docs/calibrate.md).
struct LoweredNode {
  std::string node;                  // the captured node's name
  std::string op;                    // its operator
  std::vector<std::string> kernels;  // the IR kernels its rule wrote, in order
  std::vector<std::string> tensors;  // the tensors it writes: its outputs, then its temporaries
  // The node's phase in a training step ("forward", "backward", "optimizer"; docs/training.md),
  // or "" when the capture gives none.
  std::string phase;
};

// A random draw of the lowered program (an IR tensor of role `random`): its values are the
// framework's, taken from the capture tensor `value_of` of the framework's run.
struct RandomDraw {
  std::string tensor;    // the IR tensor
  std::string value_of;  // the capture tensor holding the framework's draw
  std::string node;      // the node that draws it, and its op
  std::string op;
};

struct LowerResult {
  std::string ir;  // the checked IR text
  // ... parsed (the one parse of an analysis), with its check (the lowering's) and its einsum
  // graph (lifted when first asked for): the one check and the one lift of an analysis. Shared
  // by the copies of a result.
  std::shared_ptr<const einsum::LiftedProgram> lifted;
  std::vector<UnsupportedNode> unsupported;  // in node order
  std::vector<LoweredNode> lowered_nodes;    // the nodes that were lowered, in node order
  std::vector<RandomDraw> random;            // the random draws, in node order
  // A training step's phase of every tensor its lowered nodes write (LoweredNode::phase, by
  // LoweredNode::tensors); empty when no node has a phase.
  std::map<std::string, std::string> tensor_phases;
  int64_t nodes = 0;              // the capture's nodes
  int64_t node_output_bytes = 0;  // the bytes of every node's outputs

  const ir::Program& program() const { return lifted->program(); }
};

// lower_capture_text with options; also lists the nodes that were not lowered.
LowerResult lower_capture_detailed(const std::string& json_text, const std::string& file,
                                   const LowerOptions& options);

// lower_capture_text, parsed: the program's file name is `file`.
ir::Program lower_capture(const std::string& json_text, const std::string& file);

// The operator names with a lowering rule, sorted.
std::vector<std::string> registered_ops();

}  // namespace solar::frontend
