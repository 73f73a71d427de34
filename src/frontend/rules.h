// Private to the frontend: the context a lowering rule writes its node's IR into, and the rule
// registry (rules.cpp); the shared helpers are defined in rules_shared.cpp. See docs/lowering.md.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "solar/ir/dtype.h"
#include "solar/util/text.h"  // join, join_ints: for the rules

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
// What the driver knows of a tensor's values from the operators that made it, whatever the data
// (docs/lowering.md, "Value facts"): what lets a routed mixture of experts' weights be counted at
// the k experts a top-k router picks under --routing concentrated. Zero fields know nothing.
struct ValueFacts {
  int64_t distinct = 0;     // at least this many different values ...
  int64_t lo = 0, hi = -1;  // ... each an integer in lo..hi (topk's indices: 0..n-1)
  int64_t nonzero = 0;      // at least this many nonzero entries, every entry >= 0 (histc's bins)
  int64_t groups = 0;  // a non-decreasing cumulative count of at least this many non-empty groups
  int64_t permutation = 0;  // a rank-1 permutation of 0..permutation-1 (sort's, argsort's order)
};
using FactMap = std::map<std::string, ValueFacts>;

// The facts of `n`'s outputs from those of its arguments (topk, sort, histc, cumsum, views and
// copies), added to `facts`. Defined in rules_facts.cpp.
class NodeLowering;
void propagate_facts(const NodeLowering& n, FactMap& facts);

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
  // A list of optional tensors (index.Tensor's `indices`): a null entry is a TensorInfo with an
  // empty name. Defined in rules_index.cpp.
  std::vector<TensorInfo> tensor_list_or_null(const std::string& key) const;
  double number(const std::string& key) const;
  double number_or(const std::string& key, double fallback) const;
  int64_t integer(const std::string& key) const;
  int64_t integer_or(const std::string& key, int64_t fallback) const;
  bool flag_or(const std::string& key, bool fallback) const;
  std::string string_or(const std::string& key, const std::string& fallback) const;
  // An int list argument (a single int is a list of one); absent or null gives `fallback`.
  std::vector<int64_t> ints_or(const std::string& key, std::vector<int64_t> fallback) const;
  // A float list argument (a single number is a list of one); absent or null gives `fallback`.
  std::vector<double> numbers_or(const std::string& key, std::vector<double> fallback) const;
  // True when the argument is a tensor reference (not a Scalar).
  bool is_tensor(const std::string& key) const;

  // The node's i-th output (a TensorInfo with an empty name for an element that is no tensor,
  // e.g. convolution_backward's grad_input when output_mask leaves it out); outputs() counts
  // them.
  const TensorInfo& out(size_t i = 0) const;
  size_t outputs() const { return outputs_.size(); }

  // Declares an intermediate `tensor` with a fresh name and returns it.
  TensorInfo temp(const std::string& hint, ir::DType dtype, std::vector<int64_t> shape);
  // A fresh name for something that is no tensor (a repeat index), `<node>_<hint>`.
  std::string fresh_name(const std::string& hint) { return fresh(hint); }
  // Appends `kernel NAME { for LOOPS: LHS ASSIGN RHS }` (no `for` line when `loops` is empty).
  // Loop names in `loops` ("i in 0..4, j in 0..i + 1") are prefixed everywhere in the kernel.
  void kernel(const std::string& hint, const std::string& loops, const std::string& lhs,
              const std::string& assign, const std::string& rhs);
  // Appends a composition statement, e.g. "y = reshape(x)".
  void stmt(const std::string& text);

  // Usage of the capture's tensors, set by the driver before the rule runs: the tensors some
  // node reads and the graph outputs. Without it every output counts as needed.
  void set_usage(const std::set<std::string>* read, const std::set<std::string>* graph_outputs) {
    read_ = read;
    graph_outputs_ = graph_outputs;
  }
  // Whether output i is read by another node or is a graph output (an unread output of a
  // multi-output op, such as a dropout mask nothing uses, need not be written).
  bool output_needed(size_t i) const;

  // The value facts of the capture's tensors so far, set by the driver (else none are known).
  void set_facts(const FactMap* facts) { facts_ = facts; }
  ValueFacts facts(const TensorInfo& t) const;
  // ", distinct=D" for a take whose index `index` is a router's choice known to hold D >= 1
  // different values (a top-k's indices, through views and sorts), else "": the mark of a routed
  // take, the one kind --routing governs (docs/ir.md, take).
  std::string distinct_attr(const TensorInfo& index) const;

  // Output i is a random draw (docs/ir.md, `random`): its values are the framework's draw,
  // supplied at run time, and the analysis generates it on chip. Declared `random` (a graph
  // output: a `random` tensor copied into it). Defined in rules_data.cpp.
  void random_output(size_t i);
  // (IR tensor, capture tensor whose framework value it takes), one per random_output call.
  const std::vector<std::pair<std::string, std::string>>& random_draws() const { return draws_; }
  // Capture tensors the driver declares with role `random` (outputs not among graph outputs).
  const std::set<std::string>& random_outputs() const { return random_outputs_; }

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
  const std::set<std::string>* read_ = nullptr;
  const std::set<std::string>* graph_outputs_ = nullptr;
  const FactMap* facts_ = nullptr;
  std::vector<std::pair<std::string, std::string>> draws_;
  std::set<std::string> random_outputs_;
  std::string decls_;
  std::string stmts_;
};

// Text helpers shared by the rules.
std::string lit(double v);  // an IR float literal
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

// ---- helpers shared by the rule files (rules_shared.cpp)
// ----------------------------------------------

inline const std::string kI = "i";  // index prefix of the output box of a rule

using Unary = std::function<std::string(NodeLowering&, const std::string&)>;
using Binary = std::function<std::string(NodeLowering&, const std::string&, const std::string&)>;

// `t[i0, ..]`: tensor `t` read at the point of its own box (loop prefix kI).
std::string at_box(const TensorInfo& t);
// Argument `key` read at a point of the box over `out`: a broadcast tensor read or a literal.
std::string read(NodeLowering& n, const std::string& key, const TensorInfo& out);
// `out[i..] = rhs` over the node's first output's box.
void pointwise(NodeLowering& n, const std::string& rhs);
// A rule `y = f(x)` elementwise, x the `self` argument.
Rule unary(Unary f);
// A unary function of the IR: `fn(x)`.
Rule call(const std::string& fn);
// A rule `y = f(a, b)` elementwise, a and b (tensors, broadcast, or scalars) named by `a`, `b`.
Rule binary(Binary f, const std::string& a = "self", const std::string& b = "other");
// The dtype of statistics and softmax temporaries computed from `x`: f64 for f64, else f32.
ir::DType acc_dtype(const TensorInfo& x);
// `x * alpha`, or `x` when alpha is 1.
std::string scaled(const std::string& x, double alpha);
// full/zeros/ones/empty/scalar_tensor and the *_like forms: a constant fill (`value`, or the
// number argument `key` when given).
Rule fill(double value, const std::string& key = "");
// The reduced dimensions of a `dim` argument (all when absent or empty).
std::vector<bool> reduced_dims(NodeLowering& n, int rank);
// y[kept..] op= value over x's box (loop prefix kI); the index of y keeps reduced dims as 0 when
// y has x's rank (keepdim).
void reduce_into(NodeLowering& n, const TensorInfo& y, const TensorInfo& x,
                 const std::vector<bool>& reduced, const std::string& assign,
                 const std::string& value);
// y[kept..] read at a point of x's box (loop prefix kI): the index reduce_into writes.
std::string kept_read(const TensorInfo& y, const TensorInfo& x, const std::vector<bool>& reduced);
// The first row-major index within the `reduced` dims where x equals `best` (its max= or min=
// over them, as reduce_into writes it) into idx: `min=` of the index where x reaches it, the index
// PyTorch and JAX return. Defined in rules_reduce.cpp.
void first_index_of(NodeLowering& n, const TensorInfo& idx, const TensorInfo& x,
                    const std::vector<bool>& reduced, const TensorInfo& best);
// A scan of x along `dim` into y (ATen cumsum/cumprod, lax cumsum/cumprod/cummax/cummin): the
// first element copied, then `repeat t in 1..n` of one kernel over the other dims,
// y[.., t, ..] = y[.., t - 1, ..] OP x[.., t, ..] (`reverse` runs from the end; OP "+" or "*"
// infix, else a call). One operation per element. Defined in rules_reduce.cpp.
void scan(NodeLowering& n, const TensorInfo& x, const TensorInfo& y, int64_t dim, bool reverse,
          const std::string& op);
// Statistics of x over its `reduced` dims: the mean and the biased variance (over `count`
// elements) into `mean` and `var`, which have x's rank (reduced dims 1) or drop reduced dims.
void moments(NodeLowering& n, const TensorInfo& x, const std::vector<bool>& reduced,
             const TensorInfo& mean, const TensorInfo& var, int64_t count);

// Scaled-dot-product attention over q [.., Lq, E], k [.., Lk, E], v [.., Lk, Dv]
// (rules_attention.cpp's forward rule and rules_train.cpp's backward): the query's batch and head
// dims, which the key's and value's equal or broadcast to (size 1 or absent: multi-query attention;
// grouped heads are a UserError), the loops over the rows (`.., i`) and over the scores (`.., i,
// j`, the causal triangle j <= i with is_causal), and the scale (the `scale` argument, else
// 1/sqrt(E)).
struct Attention {
  int64_t len_q = 0, len_k = 0, e = 0, dv = 0;
  bool causal = false;
  double scale = 1.0;
  std::vector<int64_t> batch;      // the batch and head dims
  std::vector<int64_t> row_shape;  // batch + [Lq]
  std::vector<int64_t> s_shape;    // batch + [Lq, Lk]
  std::string bl, bi;              // "b0 in 0..B, b1 in 0..H, " and "b0, b1, " (or "")
  std::vector<std::string> names;  // the index of each batch dim in bi ("b1", "4 * bg + br")
  std::string ki, vi;              // the key's and value's batch index ("b0, 0, " broadcast)
  bool broadcast_kv = false;       // key or value broadcast against the query's batch dims
  std::string rows, cols;          // the loops over the rows, over the scores
  std::string ij() const { return "[" + bi + "i, j]"; }
  std::string row() const { return "[" + bi + "i]"; }
};
Attention attention_of(NodeLowering& n, const TensorInfo& q, const TensorInfo& k,
                       const TensorInfo& v);
// The scores q k^T (one `qk` product into a temporary) and the expression of the logits at
// [.., i, j]: the scores times the scale, with `attn_mask` when given (a bool mask selects, -inf
// elsewhere; another is added).
std::string attention_logits(NodeLowering& n, const Attention& a, const TensorInfo& q,
                             const TensorInfo& k);

// Convolution helpers (rules_shared.cpp, rules_linalg.cpp), shared with rules_train.cpp's backward
// rules.
// A list argument of one entry per spatial dim (a single entry repeats).
std::vector<int64_t> per_dim(NodeLowering& n, const std::string& key, size_t dims,
                             std::vector<int64_t> fallback);
// `x` padded by `lo` before each spatial dim and enough after that reading `need[d]` elements
// works (`value` the fill); x itself when no padding is needed.
TensorInfo pad_spatial(NodeLowering& n, const TensorInfo& x, const std::vector<int64_t>& lo,
                       const std::vector<int64_t>& need, const std::string& value);
// y = the transposed convolution of x by w (w: [in channels of x, out channels of y per group,
// k..]): every element of x scatters into the window of y it reaches.
void conv_transposed(NodeLowering& n, const TensorInfo& y, const TensorInfo& x, const TensorInfo& w,
                     const std::vector<int64_t>& s, const std::vector<int64_t>& p,
                     const std::vector<int64_t>& dl, int64_t groups);

// The registry under construction: operator name -> rule. `table[name] = rule` adds a rule; a
// name added twice is an internal error (InternalError), so no family silently replaces another's
// rule.
class RuleTable {
 public:
  // The target of `table[name] = rule`.
  class Slot {
   public:
    Slot(RuleTable& table, std::string name) : table_(table), name_(std::move(name)) {}
    void operator=(Rule rule) { table_.add(name_, std::move(rule)); }

   private:
    RuleTable& table_;
    std::string name_;
  };

  Slot operator[](std::string name) { return Slot(*this, std::move(name)); }
  void add(const std::string& name, Rule rule);  // rules.cpp
  const std::map<std::string, Rule>& table() const { return rules_; }
  std::map<std::string, Rule> take() && { return std::move(rules_); }

 private:
  std::map<std::string, Rule> rules_;
};

// The rule families, one per file, each called once by the registry (rules.cpp).
void register_view_rules(RuleTable& r);         // rules_views.cpp: views, copies, constants
void register_elementwise_rules(RuleTable& r);  // rules_elementwise.cpp: arithmetic, activations
void register_linalg_rules(RuleTable& r);       // rules_linalg.cpp: products, convolutions
void register_reduction_rules(RuleTable& r);    // rules_reduce.cpp: reductions, norms, pooling
void register_attention_rules(RuleTable& r);    // rules_attention.cpp: attention
void register_lax_rules(RuleTable& r);          // lax_rules.cpp: JAX primitives
void register_fragment_rules(RuleTable& r);     // fragment_rules.cpp: IR fragments
void register_index_rules(RuleTable& r);        // rules_index.cpp: indexing, movement
void register_data_rules(RuleTable& r);         // rules_data.cpp: random, bits, sort
void register_model_rules(RuleTable& r);        // rules_models.cpp: model code
void register_rnn_rules(RuleTable& r);          // rules_rnn.cpp: LSTM, GRU, RNN
void register_train_rules(RuleTable& r);        // rules_train.cpp: backward ops
void register_complex_rules(RuleTable& r);      // rules_complex.cpp: FFTs, complex views

// rules_complex.cpp: `real` for real operands; for complex ones the complex form of `op` ("mul",
// "abs"): kernels on the (real, imaginary) pairs.
Rule complex_aware(Rule real, const std::string& op);
// Whether operator `op` has a rule that takes complex tensors (the others refuse them, naming
// the operator).
bool takes_complex(const std::string& op);

// The registry: every family's rules, built once.
const std::map<std::string, Rule>& rules();

}  // namespace solar::frontend
