// Private to the frontend: the context a lowering rule writes its node's IR into, and the rule
// registry (rules.cpp). See docs/lowering.md.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "solar/ir/dtype.h"

namespace solar::frontend {

// A tensor of the capture: its IR name, dtype and concrete shape.
struct TensorInfo {
  std::string name;
  ir::DType dtype = ir::DType::F32;
  std::vector<int64_t> shape;
  int rank() const { return static_cast<int>(shape.size()); }
  int64_t numel() const;
};

// One node being lowered: typed access to its arguments and outputs, fresh names, and the IR
// text it produces (declarations of temporaries, then statements). Argument errors throw
// UserError with a message that the driver prefixes with the node's location.
class NodeLowering {
 public:
  // `index_prefix` is prepended to every loop index name of the node's kernels, so that the
  // rules can name loops freely (`b`, `k`) without clashing with tensor names.
  NodeLowering(const nlohmann::json& node, const std::map<std::string, TensorInfo>& tensors,
               std::set<std::string>& used_names, const std::string& index_prefix);

  const std::string& op() const { return op_; }

  // Arguments by ATen schema name. has() is false for a missing or null argument.
  bool has(const std::string& key) const;
  TensorInfo tensor(const std::string& key) const;
  std::vector<TensorInfo> tensor_list(const std::string& key) const;
  double number(const std::string& key) const;
  double number_or(const std::string& key, double fallback) const;
  int64_t integer(const std::string& key) const;
  int64_t integer_or(const std::string& key, int64_t fallback) const;
  bool flag_or(const std::string& key, bool fallback) const;
  std::string string_or(const std::string& key, const std::string& fallback) const;
  // An int list argument (a single int is a list of one); absent or null gives `fallback`.
  std::vector<int64_t> ints_or(const std::string& key, std::vector<int64_t> fallback) const;
  // True when the argument is a tensor reference (not a Scalar).
  bool is_tensor(const std::string& key) const;

  // The node's i-th output; outputs() counts them.
  const TensorInfo& out(size_t i = 0) const;
  size_t outputs() const { return outputs_.size(); }

  // Declares an intermediate `tensor` with a fresh name and returns it.
  TensorInfo temp(const std::string& hint, ir::DType dtype, std::vector<int64_t> shape);
  // Appends `kernel NAME { for LOOPS: LHS ASSIGN RHS }` (no `for` line when `loops` is empty).
  // Loop names in `loops` ("i in 0..4, j in 0..i + 1") are prefixed everywhere in the kernel.
  void kernel(const std::string& hint, const std::string& loops, const std::string& lhs,
              const std::string& assign, const std::string& rhs);
  // Appends a composition statement, e.g. "y = reshape(x)".
  void stmt(const std::string& text);

  const std::string& declarations() const { return decls_; }
  const std::string& statements() const { return stmts_; }

 private:
  std::string fresh(const std::string& hint);
  // `text` with every identifier in `indices` that is not a read or call (followed by `[`, `(`)
  // prefixed with index_prefix_.
  std::string rename_indices(const std::string& text, const std::set<std::string>& indices) const;
  const nlohmann::json& arg(const std::string& key) const;
  TensorInfo lookup(const nlohmann::json& ref) const;

  const nlohmann::json& args_;
  const std::map<std::string, TensorInfo>& tensors_;
  std::set<std::string>& used_names_;
  std::string index_prefix_;
  std::string op_;
  std::string base_;  // the node's name, the stem of fresh names
  std::vector<TensorInfo> outputs_;
  std::string decls_;
  std::string stmts_;
};

// Text helpers shared by the rules.
std::string lit(double v);                             // an IR float literal
std::string join_ints(const std::vector<int64_t>& v);  // "1, 2, 3"
std::string box_loops(const std::vector<int64_t>& shape, const std::string& p);  // "p0 in 0..4"
std::string box_index(int rank, const std::string& p);                           // "p0, p1"
// The index of an operand of `shape` read at a point of a box over `out_shape` whose indices are
// named with prefix `p`, with numpy broadcasting (dimensions of size 1 read index 0).
std::string bcast_index(const std::vector<int64_t>& shape, const std::vector<int64_t>& out_shape,
                        const std::string& p);
// bcast_index with the output box's index names given one by one.
std::string bcast_names(const std::vector<int64_t>& shape, const std::vector<int64_t>& out_shape,
                        const std::vector<std::string>& names);
// A dimension argument made non-negative for a tensor of `rank` (UserError when out of range).
int64_t norm_dim(int64_t dim, int rank);

using Rule = std::function<void(NodeLowering&)>;

// The registry: operator name -> rule. Rule families kept in their own files add themselves
// through these (each called once by the registry; a name registered twice is an internal error).
void register_lax_rules(std::map<std::string, Rule>& r);       // lax_rules.cpp: JAX primitives
void register_fragment_rules(std::map<std::string, Rule>& r);  // fragment_rules.cpp: IR fragments

const std::map<std::string, Rule>& rules();

}  // namespace solar::frontend
