// The einsum graph's text form and Graphviz DOT (docs/einsum.md, "Text form").
#include <algorithm>
#include <filesystem>
#include <string>

#include "solar/einsum/graph.h"

namespace solar::einsum {
namespace {

std::string shape_text(const TensorInfo& t) {
  std::string s = std::string(ir::dtype_name(t.dtype)) + "[";
  for (size_t d = 0; d < t.shape.size(); ++d) s += (d ? ", " : "") + std::to_string(t.shape[d]);
  return s + "]";
}

std::string padded(const std::string& s, size_t width) {
  return s + std::string(width > s.size() ? width - s.size() : 0, ' ');
}

// The file name without its directories: output does not depend on where the file lies.
std::string source_name(const Graph& g) {
  return std::filesystem::path(g.source).filename().string();
}

std::string footprint_text(const Access& a) {
  const bool data_dependent = std::any_of(a.maps.begin(), a.maps.end(),
                                          [](const AccessMap& m) { return m.data_dependent; });
  std::string s = (a.footprint_exact ? "" : ">= ") + std::to_string(a.footprint) +
                  (a.footprint == 1 ? " element" : " elements");
  if (!a.footprint_exact) s += " (lower bound)";
  if (data_dependent) s += " (data-dependent)";
  return s + ", " + std::to_string(a.bytes) + " bytes";
}

void print_tensors(const Graph& g, std::string& out) {
  size_t name_width = 0, shape_width = 0;
  for (const TensorInfo& t : g.tensors) {
    name_width = std::max(name_width, t.name.size());
    shape_width = std::max(shape_width, shape_text(t).size());
  }
  out += "tensors\n";
  for (const TensorInfo& t : g.tensors) {
    out += "  " + padded(t.name, name_width) + "  " +
           padded(std::string(ir::tensor_role_keyword(t.role)), 6) + "  " +
           padded(shape_text(t), shape_width) + "  " + std::to_string(t.bytes) + " bytes\n";
  }
}

void print_node(const Node& n, std::string& out) {
  out += "\nnode " + n.name + " (" + std::string(node_kind_name(n.kind)) + ")" +
         (n.op_block.empty() ? "" : " in op " + n.op_block) + "\n";
  out += "  " + n.einsum + "\n";
  if (n.kind == NodeKind::Einsum) {
    out += "  points " + std::to_string(n.points) + ", reduction " +
           std::string(reduction_name(n.reduction)) + ", macs " + std::to_string(n.counts.macs) +
           ", simple " + std::to_string(n.counts.simple) + ", special " +
           std::to_string(n.counts.special) + ", flops " + std::to_string(n.counts.flops()) + "\n";
  } else {
    out += "  elements moved " + std::to_string(n.points) + "\n";
  }
  out += "  dtypes: ";
  if (n.mac_lhs_dtype && n.mac_rhs_dtype) {
    out += "mac " + std::string(ir::dtype_name(*n.mac_lhs_dtype)) + " x " +
           std::string(ir::dtype_name(*n.mac_rhs_dtype)) + ", ";
  }
  out += "out " + std::string(ir::dtype_name(n.out_dtype)) + ", compute " +
         std::string(ir::dtype_name(n.compute_dtype)) + (n.conv_like ? ", conv-like" : "") + "\n";
  for (const Access& a : n.reads) out += "  read " + a.text + ": " + footprint_text(a) + "\n";
  for (const Access& a : n.writes) out += "  write " + a.text + ": " + footprint_text(a) + "\n";
}

void print_touched(const Graph& g, std::string& out) {
  out += "\ntouched by the graph (inputs and weights read, outputs written; each element once)\n";
  const std::vector<Footprint> touched = touched_footprints(g);
  for (size_t i = 0; i < g.tensors.size(); ++i) {
    const TensorInfo& t = g.tensors[i];
    if (t.role == ir::TensorRole::Intermediate) continue;
    const Footprint& fp = touched[i];
    out += "  " + t.name + ": " + (fp.exact ? "" : ">= ") + std::to_string(fp.elements) + " of " +
           std::to_string(t.numel) + " elements, " + std::to_string(t.bytes_of(fp.elements)) +
           " bytes\n";
  }
}

void print_totals(const Graph& g, std::string& out) {
  OpCounts c;
  int64_t read = 0, written = 0;
  for (const Node& n : g.nodes) {
    c.macs += n.counts.macs;
    c.simple += n.counts.simple;
    c.special += n.counts.special;
    read += n.bytes_read();
    written += n.bytes_written();
  }
  out += "\ntotals: " + std::to_string(g.nodes.size()) +
         (g.nodes.size() == 1 ? " node" : " nodes") + ", macs " + std::to_string(c.macs) +
         ", simple " + std::to_string(c.simple) + ", special " + std::to_string(c.special) +
         ", flops " + std::to_string(c.flops()) + ", bytes read " + std::to_string(read) +
         ", bytes written " + std::to_string(written) + "\n";
}

// A DOT string literal; a newline becomes DOT's line break `\n`.
std::string dot_string(const std::string& s) {
  std::string q = "\"";
  for (const char c : s) {
    if (c == '\n') {
      q += "\\n";
      continue;
    }
    if (c == '"' || c == '\\') q += '\\';
    q += c;
  }
  return q + "\"";
}

size_t tensor_index(const Graph& g, const std::string& name) {
  for (size_t i = 0; i < g.tensors.size(); ++i) {
    if (g.tensors[i].name == name) return i;
  }
  return g.tensors.size();
}

}  // namespace

std::string print_graph(const Graph& g) {
  std::string out = "graph " + source_name(g) + "\nsizes";
  if (g.sizes.empty()) out += " none";
  for (auto it = g.sizes.begin(); it != g.sizes.end(); ++it) {
    out += std::string(it == g.sizes.begin() ? " " : ", ") + it->first + "=" +
           std::to_string(it->second);
  }
  out += "\n\n";
  print_tensors(g, out);
  for (const Node& n : g.nodes) print_node(n, out);
  if (!g.dead_nodes.empty()) {
    out += "dead code (removed, values reach no output):";
    for (const std::string& name : g.dead_nodes) out += " " + name;
    out += "\n\n";
  }
  print_touched(g, out);
  print_totals(g, out);
  return out;
}

std::string graph_to_dot(const Graph& g) {
  std::string out = "digraph " + dot_string(source_name(g)) + " {\n  rankdir=LR;\n";
  for (size_t i = 0; i < g.tensors.size(); ++i) {
    const TensorInfo& t = g.tensors[i];
    out += "  t" + std::to_string(i) + " [shape=ellipse, label=" +
           dot_string(t.name + "\n" + std::string(ir::tensor_role_keyword(t.role)) + " " +
                      shape_text(t)) +
           "];\n";
  }
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    std::string label = n.name;
    if (n.kind == NodeKind::Einsum) {
      label +=
          "\nmacs " + std::to_string(n.counts.macs) + ", flops " + std::to_string(n.counts.flops());
    } else {
      label += "\n" + n.op + ", " + std::to_string(n.points) + " elements";
    }
    out += "  n" + std::to_string(i) + " [shape=box" +
           (n.kind == NodeKind::Movement ? ", style=dashed" : "") + ", label=" + dot_string(label) +
           "];\n";
    for (const Access& a : n.reads) {
      out += "  t" + std::to_string(tensor_index(g, a.tensor)) + " -> n" + std::to_string(i) +
             " [label=" + dot_string(std::to_string(a.bytes) + " B") + "];\n";
    }
    for (const Access& a : n.writes) {
      out += "  n" + std::to_string(i) + " -> t" + std::to_string(tensor_index(g, a.tensor)) +
             " [label=" + dot_string(std::to_string(a.bytes) + " B") + "];\n";
    }
  }
  return out + "}\n";
}

}  // namespace solar::einsum
