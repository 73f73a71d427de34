// The lowering driver: reads the capture, runs each node's rule, joins the IR text, checks it.
#include "solar/frontend/lower.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <set>
#include <string>
#include <utility>

#include <fcntl.h>
#include <unistd.h>

#include "rules.h"
#include "solar/einsum/lifted_program.h"
#include "solar/ir/checker.h"
#include "solar/ir/diagnostic.h"
#include "solar/ir/parser.h"
#include "solar/util/error.h"
#include "solar/util/text.h"

namespace solar::frontend {

using nlohmann::json;

int64_t TensorInfo::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string lit(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "(-inf)";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, std::abs(v));
  std::string s(buf, res.ptr);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return v < 0 || std::signbit(v) ? "(-" + s + ")" : s;
}

std::string box_loops(const std::vector<int64_t>& shape, const std::string& p) {
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i) {
    s += (i ? ", " : "") + p + std::to_string(i) + " in 0.." + std::to_string(shape[i]);
  }
  return s;
}

std::string box_index(int rank, const std::string& p) {
  std::string s;
  for (int i = 0; i < rank; ++i) s += (i ? ", " : "") + p + std::to_string(i);
  return s;
}

std::string bcast_names(const std::vector<int64_t>& shape, const std::vector<int64_t>& out_shape,
                        const std::vector<std::string>& names) {
  const size_t offset = out_shape.size() - shape.size();
  std::string s;
  for (size_t d = 0; d < shape.size(); ++d) {
    const bool broadcast = shape[d] == 1 && out_shape[offset + d] != 1;
    s += (d ? ", " : "") + (broadcast ? std::string("0") : names[offset + d]);
  }
  return s;
}

std::string bcast_index(const std::vector<int64_t>& shape, const std::vector<int64_t>& out_shape,
                        const std::string& p) {
  std::vector<std::string> names;
  for (size_t d = 0; d < out_shape.size(); ++d) names.push_back(p + std::to_string(d));
  return bcast_names(shape, out_shape, names);
}

int64_t norm_dim(int64_t dim, int rank) {
  const int64_t r = std::max(rank, 1);
  if (dim < -r || dim >= r) {
    throw UserError("dimension " + std::to_string(dim) + " is out of range for rank " +
                    std::to_string(rank));
  }
  return dim < 0 ? dim + r : dim;
}

namespace {

// The TensorInfo of one entry of the capture's "tensors" list.
TensorInfo read_tensor(const json& t) {
  TensorInfo info;
  info.name = t.at("name").get<std::string>();
  const std::string dtype = t.at("dtype").get<std::string>();
  const auto parsed = ir::dtype_from_name(dtype);
  if (!parsed) throw UserError("tensor '" + info.name + "' has unknown dtype '" + dtype + "'");
  info.dtype = *parsed;
  info.shape = t.at("shape").get<std::vector<int64_t>>();
  return info;
}

bool is_ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }

// Leading underscores of `name`.
size_t underscores(const std::string& name) {
  return std::min(name.find_first_not_of('_'), name.size());
}

// The end of the number literal starting at `i` (`12`, `1.5`, `1e-05`).
size_t number_end(const std::string& text, size_t i) {
  while (i < text.size()) {
    const char c = text[i];
    const bool sign = (c == '+' || c == '-') && (text[i - 1] == 'e' || text[i - 1] == 'E');
    const bool point = c == '.' && i + 1 < text.size() &&
                       std::isdigit(static_cast<unsigned char>(text[i + 1]));  // not `0..N`
    if (!std::isalnum(static_cast<unsigned char>(c)) && !point && !sign) break;
    ++i;
  }
  return i;
}

// The IR role keyword of a capture tensor.
std::string role_keyword(const std::string& role, bool graph_output) {
  if (graph_output) return "output";
  if (role == "input") return "input";
  if (role == "weight" || role == "buffer" || role == "constant") return "weight";
  if (role == "intermediate" || role == "output") return "tensor";
  throw UserError("unknown tensor role '" + role + "'");
}

// "model.py:12 in forward: " or "" when the node has no location.
std::string where(const json& node) {
  const auto it = node.find("location");
  if (it == node.end() || !it->is_string() || it->get<std::string>().empty()) return "";
  return it->get<std::string>() + ": ";
}

// One piece of the program text and the node that produced it (-1: the capture's declarations).
struct Piece {
  std::string text;
  int node;
};

// The number of statements in a rule's text: lines that start a statement (kernels span several
// lines, their inner lines indented and closed by "}").
size_t count_statements(const std::string& text) {
  size_t n = 0;
  for (size_t at = 0; at < text.size();) {
    const size_t end = std::min(text.find('\n', at), text.size());
    if (end > at && text[at] != ' ' && text[at] != '}' && text[at] != '#') ++n;
    at = end + 1;
  }
  return n;
}

// Groups the statements of consecutive captured nodes that come from one framework operation
// (the same "origin", docs/capture.md; a node without one is its own operation) into one
// `op NAME { ... }` block, when the operation has more than one statement. A lone statement
// needs no block: it is an operation by itself.
class OpBlocks {
 public:
  void add(const json& node, int index, std::string text, std::vector<Piece>& stmts) {
    std::string key = "node:" + node.at("name").get<std::string>();
    std::string name = node.at("name").get<std::string>();
    const auto origin = node.find("origin");
    if (origin != node.end() && origin->is_object() && origin->contains("name")) {
      name = origin->at("name").get<std::string>();
      key = "origin:" + name;
    }
    if (key != key_) close(stmts);
    if (pending_.empty()) {
      key_ = key;
      name_ = identifier(name);
    }
    pending_.push_back({std::move(text), index});
  }

  // `name` as an IR identifier (a capture's origin name may be any string).
  static std::string identifier(const std::string& name) {
    std::string s;
    for (const char c : name) {
      s += std::isalnum(static_cast<unsigned char>(c)) || c == '_' ? c : '_';
    }
    if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) s = "_" + s;
    if (ir::is_reserved_word(s)) s += "_";
    return s;
  }

  // Emits the open operation's statements.
  void close(std::vector<Piece>& stmts) {
    if (pending_.empty()) return;
    size_t count = 0;
    for (const Piece& p : pending_) count += count_statements(p.text);
    const bool block = count > 1;
    if (block) {
      std::string name = name_;
      for (int k = 2; !used_.insert(name).second; ++k) name = name_ + "_" + std::to_string(k);
      stmts.push_back({"op " + name + " {\n", pending_.front().node});
    }
    stmts.insert(stmts.end(), pending_.begin(), pending_.end());
    if (block) stmts.push_back({"}\n", pending_.back().node});
    pending_.clear();
    key_.clear();
  }

 private:
  std::string key_, name_;
  std::vector<Piece> pending_;
  std::set<std::string> used_;
};

// Joins the pieces into `text` and parses and checks them; on a diagnostic, names the operator
// whose text holds its line.
std::shared_ptr<const einsum::LiftedProgram> join_and_check(const std::vector<Piece>& pieces,
                                                            const json& nodes,
                                                            const std::string& file,
                                                            std::string& text) {
  std::vector<int> line_owner{-1};  // line numbers are 1-based
  for (const Piece& piece : pieces) {
    text += piece.text;
    for (char c : piece.text) {
      if (c == '\n') line_owner.push_back(piece.node);
    }
  }
  try {
    auto program = std::make_shared<const einsum::LiftedProgram>(ir::parse(text, file));
    (void)program->checked();
    return program;
  } catch (const ir::DiagnosticError& e) {
    const size_t line = e.diagnostics().front().loc.line;
    const int owner = line < line_owner.size() ? line_owner[line] : -1;
    const std::string op =
        owner < 0 ? "the capture's tensors" : nodes[owner].at("op").get<std::string>();
    throw InternalError("internal error: lowering of " + op + " produced invalid IR: " + e.what());
  }
}

// The capture's JSON; a syntax error is a one-line UserError.
json parse_json(const std::string& json_text, const std::string& file) {
  try {
    return json::parse(json_text);
  } catch (const json::exception& e) {
    throw UserError(file + ": invalid capture JSON: " + e.what());
  }
}

}  // namespace

NodeLowering::NodeLowering(const json& node, const std::map<std::string, TensorInfo>& tensors,
                           std::set<std::string>& used_names, const std::string& index_prefix)
    : args_(node.at("args")),
      tensors_(tensors),
      used_names_(used_names),
      index_prefix_(index_prefix) {
  op_ = node.at("op").get<std::string>();
  base_ = node.at("name").get<std::string>();
  for (const json& name : node.at("outputs")) {  // null: an element that is no tensor
    outputs_.push_back(name.is_null() ? TensorInfo{} : lookup({{"tensor", name}}));
  }
}

const json& NodeLowering::arg(const std::string& key) const {
  const auto it = args_.find(key);
  if (it == args_.end() || it->is_null()) throw UserError("missing argument '" + key + "'");
  return *it;
}

TensorInfo NodeLowering::lookup(const json& ref) const {
  if (!ref.is_object() || !ref.contains("tensor")) {
    throw UserError("expected a tensor reference, got " + ref.dump());
  }
  const std::string name = ref.at("tensor").get<std::string>();
  const auto it = tensors_.find(name);
  if (it == tensors_.end()) throw UserError("unknown tensor '" + name + "'");
  return it->second;
}

bool NodeLowering::has(const std::string& key) const {
  const auto it = args_.find(key);
  return it != args_.end() && !it->is_null();
}

bool NodeLowering::is_tensor(const std::string& key) const {
  return has(key) && arg(key).is_object();
}

TensorInfo NodeLowering::tensor(const std::string& key) const { return lookup(arg(key)); }

std::vector<TensorInfo> NodeLowering::tensor_list(const std::string& key) const {
  std::vector<TensorInfo> result;
  for (const json& ref : arg(key)) result.push_back(lookup(ref));
  return result;
}

double NodeLowering::number(const std::string& key) const {
  const json& v = arg(key);
  if (v.is_boolean()) return v.get<bool>() ? 1.0 : 0.0;
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    if (s == "inf") return std::numeric_limits<double>::infinity();
    if (s == "-inf") return -std::numeric_limits<double>::infinity();
    if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
  }
  throw UserError("argument '" + key + "' is not a number: " + v.dump());
}

double NodeLowering::number_or(const std::string& key, double fallback) const {
  return has(key) ? number(key) : fallback;
}

int64_t NodeLowering::integer(const std::string& key) const {
  const json& v = arg(key);
  if (!v.is_number_integer()) throw UserError("argument '" + key + "' is not an integer");
  return v.get<int64_t>();
}

int64_t NodeLowering::integer_or(const std::string& key, int64_t fallback) const {
  return has(key) ? integer(key) : fallback;
}

bool NodeLowering::flag_or(const std::string& key, bool fallback) const {
  return has(key) ? number(key) != 0.0 : fallback;
}

std::string NodeLowering::string_or(const std::string& key, const std::string& fallback) const {
  return has(key) ? arg(key).get<std::string>() : fallback;
}

std::vector<int64_t> NodeLowering::ints_or(const std::string& key,
                                           std::vector<int64_t> fallback) const {
  if (!has(key)) return fallback;
  const json& v = arg(key);
  if (v.is_number_integer()) return {v.get<int64_t>()};
  return v.get<std::vector<int64_t>>();
}

std::vector<double> NodeLowering::numbers_or(const std::string& key,
                                             std::vector<double> fallback) const {
  if (!has(key)) return fallback;
  const json& v = arg(key);
  if (v.is_number()) return {v.get<double>()};
  if (!v.is_array()) throw UserError("argument '" + key + "' is not a list of numbers");
  std::vector<double> out;
  for (const json& e : v) {
    if (!e.is_number()) throw UserError("argument '" + key + "' is not a list of numbers");
    out.push_back(e.get<double>());
  }
  return out;
}

const TensorInfo& NodeLowering::out(size_t i) const {
  if (i >= outputs_.size()) {
    throw UserError("expected at least " + std::to_string(i + 1) + " outputs, got " +
                    std::to_string(outputs_.size()));
  }
  return outputs_[i];
}

std::string NodeLowering::fresh(const std::string& hint) {
  std::string name = base_ + "_" + hint;
  for (int n = 2; used_names_.count(name) != 0; ++n) name = base_ + "_" + hint + std::to_string(n);
  used_names_.insert(name);
  return name;
}

TensorInfo NodeLowering::temp(const std::string& hint, ir::DType dtype,
                              std::vector<int64_t> shape) {
  TensorInfo t{fresh(hint), dtype, std::move(shape)};
  decls_ += "tensor " + t.name + " : " + std::string(ir::dtype_name(dtype)) + "[" +
            join_ints(t.shape) + "]\n";
  return t;
}

std::string NodeLowering::rename_indices(const std::string& text,
                                         const std::set<std::string>& indices) const {
  std::string result;
  for (size_t i = 0; i < text.size();) {
    if (std::isdigit(static_cast<unsigned char>(text[i]))) {
      const size_t end = number_end(text, i);
      result += text.substr(i, end - i);
      i = end;
      continue;
    }
    if (!is_ident_start(text[i])) {
      result += text[i++];
      continue;
    }
    size_t end = i;
    while (end < text.size() &&
           (is_ident_start(text[end]) || std::isdigit(static_cast<unsigned char>(text[end])))) {
      ++end;
    }
    const std::string word = text.substr(i, end - i);
    const bool called = end < text.size() && (text[end] == '[' || text[end] == '(');
    result += !called && indices.count(word) != 0 ? index_prefix_ + word : word;
    i = end;
  }
  return result;
}

void NodeLowering::kernel(const std::string& hint, const std::string& loops, const std::string& lhs,
                          const std::string& assign, const std::string& rhs) {
  std::set<std::string> indices;  // the loop names: the word before each " in "
  for (size_t at = loops.find(" in "); at != std::string::npos; at = loops.find(" in ", at + 1)) {
    const size_t space = loops.rfind(' ', at - 1);
    const size_t start = space == std::string::npos ? 0 : space + 1;
    indices.insert(loops.substr(start, at - start));
  }
  stmts_ += "kernel " + fresh(hint) + " {\n";
  if (!loops.empty()) stmts_ += "  for " + rename_indices(loops, indices) + ":\n";
  stmts_ += "    " + rename_indices(lhs, indices) + " " + assign + " " +
            rename_indices(rhs, indices) + "\n}\n";
}

void NodeLowering::stmt(const std::string& text) { stmts_ += text + "\n"; }

bool NodeLowering::output_needed(size_t i) const {
  const std::string& name = out(i).name;
  if (read_ == nullptr || graph_outputs_ == nullptr) return true;
  return read_->contains(name) || graph_outputs_->contains(name);
}

void NodeLowering::random_output(size_t i) {
  const TensorInfo& o = out(i);
  if (graph_outputs_ != nullptr && graph_outputs_->contains(o.name)) {
    const std::string draw = fresh("draw");
    decls_ += "random " + draw + " : " + std::string(ir::dtype_name(o.dtype)) + "[" +
              join_ints(o.shape) + "]\n";
    stmt(o.name + " = " + draw);
    draws_.emplace_back(draw, o.name);
  } else {
    random_outputs_.insert(o.name);
    draws_.emplace_back(o.name, o.name);
  }
}

std::vector<std::string> registered_ops() {
  std::vector<std::string> names;
  for (const auto& [name, rule] : rules()) names.push_back(name);
  return names;
}

namespace {

// Every tensor named in an argument value (a reference, or a list holding references), in order.
void collect_refs(const json& value, std::vector<std::string>& names) {
  if (value.is_object() && value.contains("tensor")) {
    const std::string name = value.at("tensor").get<std::string>();
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  } else if (value.is_array()) {
    for (const json& v : value) collect_refs(v, names);
  }
}

// The share `part / whole` as a percentage with one decimal ("12.5%").
std::string percent(int64_t part, int64_t whole) {
  const double p = whole > 0 ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", p);
  return buf;
}

// The bytes of a node's output tensors.
int64_t output_bytes(const json& node, const std::map<std::string, TensorInfo>& tensors) {
  int64_t bytes = 0;
  for (const json& name : node.at("outputs")) {
    if (!name.is_string()) continue;
    const auto it = tensors.find(name.get<std::string>());
    if (it != tensors.end()) bytes += it->second.numel() * ir::dtype_size(it->second.dtype);
  }
  return bytes;
}

// With the environment variable SOLAR_RULE_LOG naming a file, appends the operators whose rules
// lowered a node of one capture, one name a line: the test of rule coverage reads that log
// (docs/testing.md). One write(2) with O_APPEND, so parallel test processes may share the file.
// Does nothing when the variable is unset or empty.
void log_fired_rules(const std::set<std::string>& fired) {
  const char* path = std::getenv("SOLAR_RULE_LOG");
  if (path == nullptr || *path == '\0' || fired.empty()) return;
  std::string text;
  for (const std::string& op : fired) text += op + "\n";
  const int fd = ::open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    throw UserError(std::string("SOLAR_RULE_LOG: cannot open '") + path +
                    "': " + std::strerror(errno));
  }
  const ssize_t written = ::write(fd, text.data(), text.size());
  const int write_errno = errno;
  ::close(fd);
  if (written != static_cast<ssize_t>(text.size())) {
    throw UserError(std::string("SOLAR_RULE_LOG: cannot write '") + path +
                    "': " + std::strerror(written < 0 ? write_errno : ENOSPC));
  }
}

// The error for the first operator without a rule, with how much of the graph has none.
[[noreturn]] void throw_unsupported(const json& nodes, const std::vector<size_t>& missing,
                                    const std::map<std::string, TensorInfo>& tensors) {
  const json& first = nodes[missing.front()];
  int64_t all_bytes = 0;
  int64_t missing_bytes = 0;
  for (const json& node : nodes) all_bytes += output_bytes(node, tensors);
  std::map<std::string, int> by_op;
  for (size_t i : missing) {
    missing_bytes += output_bytes(nodes[i], tensors);
    ++by_op[nodes[i].at("op").get<std::string>()];
  }
  std::string ops;
  for (const auto& [op, count] : by_op) {
    ops += (ops.empty() ? "" : ", ") + op + " x" + std::to_string(count);
  }
  const auto n = static_cast<int64_t>(nodes.size());
  const auto k = static_cast<int64_t>(missing.size());
  throw UserError(
      where(first) + "unsupported operator '" + first.at("op").get<std::string>() + "' (node '" +
      first.at("name").get<std::string>() + "', " + std::to_string(missing.front() + 1) + " of " +
      std::to_string(n) + " nodes); " + std::to_string(rules().size()) +
      " operators have lowering rules (docs/lowering.md lists them); without a rule: " +
      std::to_string(k) + " of " + std::to_string(n) + " nodes (" + percent(k, n) + ", " +
      percent(missing_bytes, all_bytes) + " of the bytes the nodes write): " + ops +
      "; --allow-unsupported analyses the rest");
}

// What a lowered node produced: the kernels its rule wrote (NodeLowering::kernel writes each as
// a line "kernel NAME {"), its outputs and its temporaries (lines "tensor NAME : ...").
LoweredNode lowered_node(const json& node, const NodeLowering& lowering) {
  LoweredNode l{node.at("name").get<std::string>(), node.at("op").get<std::string>(), {}, {}, {}};
  const auto words = [](const std::string& text, const std::string& keyword,
                        std::vector<std::string>& names) {
    for (size_t at = 0; at < text.size();) {
      const size_t end = std::min(text.find('\n', at), text.size());
      if (text.compare(at, keyword.size(), keyword) == 0) {
        const size_t start = at + keyword.size();
        names.push_back(text.substr(start, text.find(' ', start) - start));
      }
      at = end + 1;
    }
  };
  words(lowering.statements(), "kernel ", l.kernels);
  for (const json& name : node.at("outputs")) {
    if (name.is_string()) l.tensors.push_back(name.get<std::string>());
  }
  words(lowering.declarations(), "tensor ", l.tensors);
  if (node.contains("phase")) {
    l.phase = node.at("phase").get<std::string>();
    if (l.phase != "forward" && l.phase != "backward" && l.phase != "optimizer") {
      throw UserError(where(node) + "node '" + l.node + "': unknown phase '" + l.phase +
                      "' (valid: forward, backward, optimizer)");
    }
  }
  return l;
}

// A node that reads or writes a complex tensor, of an operator whose rule does not take them:
// a UserError naming the operator and the tensor (docs/lowering.md, "Complex tensors and FFTs").
void refuse_complex(const json& node, const std::string& op,
                    const std::map<std::string, TensorInfo>& tensors) {
  if (takes_complex(op)) return;
  std::vector<std::string> names;
  for (const auto& [key, value] : node.at("args").items()) collect_refs(value, names);
  for (const json& name : node.at("outputs")) {
    if (name.is_string()) names.push_back(name.get<std::string>());
  }
  for (const std::string& name : names) {
    const auto it = tensors.find(name);
    if (it != tensors.end() && ir::dtype_is_complex(it->second.dtype)) {
      throw UserError(
          op + " of complex tensor '" + name + "' has no lowering rule (complex " +
          "tensors: FFTs, view_as_real, view_as_complex, mul, add, sub, div, abs and views)");
    }
  }
}

}  // namespace

LowerResult lower_capture_detailed(const std::string& json_text, const std::string& file,
                                   const LowerOptions& options) {
  const json capture = parse_json(json_text, file);
  for (const std::string& op : options.disabled_rules) {
    if (rules().count(op) == 0) {
      throw UserError("cannot disable the rule of '" + op + "': no operator of that name has one");
    }
  }
  const std::set<std::string> disabled(options.disabled_rules.begin(),
                                       options.disabled_rules.end());
  try {
    if (capture.value("format", "") != "solar-capture" || capture.value("version", 0) != 1) {
      throw UserError(file + ": not a solar-capture file of version 1");
    }
    std::map<std::string, TensorInfo> tensors;
    std::set<std::string> used_names;
    std::set<std::string> graph_outputs;
    for (const json& name : capture.at("outputs")) graph_outputs.insert(name.get<std::string>());
    std::vector<std::pair<TensorInfo, std::string>> declared;  // in capture order, with role
    for (const json& t : capture.at("tensors")) {
      const TensorInfo info = read_tensor(t);
      declared.emplace_back(info, t.at("role").get<std::string>());
      tensors[info.name] = info;
      used_names.insert(info.name);
    }
    const json& nodes = capture.at("nodes");
    const auto has_rule = [&](const std::string& op) {
      return rules().count(op) != 0 && disabled.count(op) == 0;
    };
    if (!options.allow_unsupported) {
      std::vector<size_t> missing;
      for (size_t i = 0; i < nodes.size(); ++i) {
        if (!has_rule(nodes[i].at("op").get<std::string>())) missing.push_back(i);
      }
      if (!missing.empty()) throw_unsupported(nodes, missing, tensors);
    }
    // Loop indices get a prefix of more leading underscores than any tensor or node name has
    // (a fresh name starts with its node's name), so they never collide with a tensor's name.
    size_t prefix = 1;
    for (const std::string& name : used_names) prefix = std::max(prefix, underscores(name) + 1);
    for (const json& node : nodes) {
      prefix = std::max(prefix, underscores(node.at("name").get<std::string>()) + 2);
    }
    const std::string index_prefix(prefix, '_');
    LowerResult result;
    result.nodes = static_cast<int64_t>(nodes.size());
    std::set<std::string> fed;      // outputs of unsupported nodes: program inputs
    std::set<std::string> leaving;  // inputs of unsupported nodes: a lowered node's are outputs
    std::set<std::string> random;   // outputs that are random draws
    std::set<std::string> read;     // tensors some node reads
    std::set<std::string> fired;    // operators whose rule lowered a node (SOLAR_RULE_LOG)
    FactMap facts;                  // value facts of the tensors lowered so far (rules.h)
    for (const json& node : nodes) {
      std::vector<std::string> refs;
      for (const auto& [key, value] : node.at("args").items()) collect_refs(value, refs);
      read.insert(refs.begin(), refs.end());
    }
    std::vector<Piece> node_decls;
    std::vector<Piece> stmts;
    OpBlocks blocks;
    for (size_t i = 0; i < nodes.size(); ++i) {
      const json& node = nodes[i];
      const std::string op = node.at("op").get<std::string>();
      const std::string node_name = node.at("name").get<std::string>();
      result.node_output_bytes += output_bytes(node, tensors);
      std::string reason;
      if (rules().count(op) == 0) {
        reason = "no lowering rule";
      } else if (disabled.count(op) != 0) {
        reason = "lowering rule disabled";
      } else {
        NodeLowering lowering(node, tensors, used_names, index_prefix);
        lowering.set_usage(&read, &graph_outputs);
        lowering.set_facts(&facts);
        try {
          refuse_complex(node, op, tensors);
          rules().at(op)(lowering);
          propagate_facts(lowering, facts);
          random.insert(lowering.random_outputs().begin(), lowering.random_outputs().end());
          for (const auto& [tensor, value_of] : lowering.random_draws()) {
            result.random.push_back({tensor, value_of, node_name, op});
          }
          node_decls.push_back({lowering.declarations(), static_cast<int>(i)});
          blocks.add(node, static_cast<int>(i), lowering.statements(), stmts);
          result.lowered_nodes.push_back(lowered_node(node, lowering));
          if (const std::string& phase = result.lowered_nodes.back().phase; !phase.empty()) {
            for (const std::string& t : result.lowered_nodes.back().tensors) {
              result.tensor_phases[t] = phase;
            }
          }
          fired.insert(op);
          continue;
        } catch (const UserError& e) {
          if (!options.allow_unsupported) {
            throw UserError(where(node) + op + " (node '" + node_name + "'): " + e.what());
          }
          reason = e.what();
        }
      }
      blocks.close(stmts);
      UnsupportedNode u;
      u.node = node_name;
      u.op = op;
      u.location = node.value("location", "");
      u.reason = reason;
      u.index = static_cast<int64_t>(i);
      for (const auto& [key, value] : node.at("args").items()) collect_refs(value, u.inputs);
      for (const json& name : node.at("outputs")) {
        if (name.is_string()) u.outputs.push_back(name.get<std::string>());
      }
      fed.insert(u.outputs.begin(), u.outputs.end());
      leaving.insert(u.inputs.begin(), u.inputs.end());
      u.output_bytes = output_bytes(node, tensors);
      result.unsupported.push_back(std::move(u));
    }
    blocks.close(stmts);
    std::vector<Piece> pieces;
    for (const auto& [info, role] : declared) {
      // An output of an unsupported node is read from the caller, like a graph input; an
      // intermediate it reads leaves the program for it, like a graph output (so the nodes
      // that compute it are counted, never removed as dead code: docs/capture.md).
      const bool leaves =
          graph_outputs.count(info.name) != 0 ||
          (leaving.count(info.name) != 0 && (role == "intermediate" || role == "output"));
      const std::string keyword = fed.count(info.name) != 0      ? "input"
                                  : random.count(info.name) != 0 ? "random"
                                                                 : role_keyword(role, leaves);
      pieces.push_back({keyword + " " + info.name + " : " +
                            std::string(ir::dtype_name(info.dtype)) + "[" + join_ints(info.shape) +
                            "]\n",
                        -1});
    }
    pieces.insert(pieces.end(), node_decls.begin(), node_decls.end());
    pieces.push_back({"\n", -1});
    pieces.insert(pieces.end(), stmts.begin(), stmts.end());
    result.lifted = join_and_check(pieces, nodes, file, result.ir);
    log_fired_rules(fired);
    return result;
  } catch (const json::exception& e) {
    throw UserError(file + ": malformed capture: " + e.what());
  }
}

std::string lower_capture_text(const std::string& json_text, const std::string& file) {
  return lower_capture_detailed(json_text, file, LowerOptions{}).ir;
}

ir::Program lower_capture(const std::string& json_text, const std::string& file) {
  return lower_capture_detailed(json_text, file, LowerOptions{}).program();
}

}  // namespace solar::frontend
