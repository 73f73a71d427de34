// The single-device SOL report: data, JSON, terminal (include/solar/report/report.h).
#include "solar/report/report.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "format.h"
#include "json_parts.h"
#include "solar/ir/dtype.h"
#include "solar/util/text.h"

namespace solar::report {
namespace {

using namespace detail;

nlohmann::json rate_json(const sol::Rate* r) {
  return r ? nlohmann::json(r->flops_per_s) : nlohmann::json(nullptr);
}

std::string rate_label(const sol::Rate* r) { return r ? r->label : "none"; }

// The compute unit and precision a node ran at, '*' marking a fallback.
std::string short_precision(const sol::Rate* r) {
  if (!r) return "-";
  return sol::target_name(r->used) + (r->fallback() ? "*" : "");
}

bool bytes_exact(const einsum::Node& n) {
  const auto exact = [](const einsum::Access& a) { return a.footprint_exact; };
  return std::all_of(n.reads.begin(), n.reads.end(), exact) &&
         std::all_of(n.writes.begin(), n.writes.end(), exact);
}

bool has_fallback(const sol::NodeCost& c) {
  return (c.mac_rate && c.mac_rate->fallback()) || (c.other_rate && c.other_rate->fallback());
}

nlohmann::json node_json(const einsum::Node& n, const sol::NodeCost& c) {
  const sol::Rate* other = c.other_rate ? &*c.other_rate : nullptr;
  return {
      {"name", n.name},
      {"kind", einsum::node_kind_name(n.kind)},
      {"op", n.op},
      {"op_block", n.op_block.empty() ? nlohmann::json(nullptr) : nlohmann::json(n.op_block)},
      {"einsum", n.einsum},
      {"points", n.points},
      {"macs", n.counts.macs},
      {"other_ops", n.counts.other_ops()},
      {"flops", n.counts.flops()},
      {"bytes_read", n.bytes_read()},
      {"bytes_written", n.bytes_written()},
      {"bytes_unfused", c.bytes},
      {"bytes_exact", bytes_exact(n)},
      {"precision", rate_label(c.main_rate())},
      {"precision_used", short_precision(c.main_rate())},
      {"rate_flops_per_s", rate_json(c.main_rate())},
      {"other_ops_precision", rate_label(other)},
      {"other_ops_rate_flops_per_s", rate_json(other)},
      {"precision_fallback", has_fallback(c)},
      {"mac_s", c.mac_s},
      {"other_ops_s", c.other_s},
      {"compute_s", c.compute_s},
      {"memory_s", c.memory_s},
      {"sol_unfused_s", c.time_s},
      {"bottleneck", sol::bottleneck_name(c.bottleneck)},
  };
}

nlohmann::json op_json(const einsum::Graph& g, const sol::OpCost& c) {
  nlohmann::json members = nlohmann::json::array();
  for (size_t i = c.first; i < c.last; ++i) members.push_back(g.nodes[i].name);
  return {{"name", c.name},
          {"nodes", std::move(members)},
          {"macs", c.counts.macs},
          {"other_ops", c.counts.other_ops()},
          {"flops", c.counts.flops()},
          {"bytes", c.bytes},
          {"bytes_exact", c.bytes_exact},
          {"compute_s", c.compute_s},
          {"memory_s", c.memory_s},
          {"sol_unfused_s", c.time_s},
          {"nodes_alone_s", c.nodes_alone_s},
          {"bottleneck", sol::bottleneck_name(c.bottleneck)}};
}

// With the kernel floor asked for, each operation says whether the floor set its time.
nlohmann::json op_json(const einsum::Graph& g, const sol::OpCost& c, bool kernel_floor) {
  nlohmann::json j = op_json(g, c);
  if (kernel_floor) j["floored"] = c.floored;
  return j;
}

// {"path": value} of every figure set on the command line.
nlohmann::json overrides_json(const hw::Device& d) {
  nlohmann::json j = nlohmann::json::object();
  for (const hw::FigureEntry& e : hw::list_figures(d)) {
    if (e.figure.source == hw::kOverrideSource) j[e.path] = e.figure.value;
  }
  return j;
}

// The weights the policy stored in a weight format (sol::store_weights): {"format", "tensors",
// "bytes"}; null when none.
nlohmann::json stored_weights_json(const einsum::Graph& g) {
  std::string format;
  nlohmann::json tensors = nlohmann::json::array();
  int64_t bytes = 0;
  for (const einsum::TensorInfo& t : g.tensors) {
    if (t.format.empty()) continue;
    format = t.format;
    tensors.push_back(t.name);
    bytes += t.bytes;
  }
  if (tensors.empty()) return nullptr;
  return {{"format", format}, {"tensors", std::move(tensors)}, {"bytes", bytes}};
}

std::string header(const Report& r, bool details) {
  std::string s = "SOL of " + source_name(r.graph.source) + " on " + r.device.name + " (DRAM " +
                  format_bandwidth(r.analysis.dram_bandwidth_bytes_per_s) + ")\n";
  if (!r.graph.sizes.empty()) {
    s += "  sizes: ";
    std::string sep;
    for (const auto& [name, value] : r.graph.sizes) {
      s += sep + name + "=" + std::to_string(value);
      sep = ", ";
    }
    s += "\n";
  }
  s += "  precision policy: " + r.analysis.policy + "\n";
  const nlohmann::json stored = stored_weights_json(r.graph);
  if (!stored.is_null()) {
    s += "  weights stored as " + stored["format"].get<std::string>() + " (scales included): " +
         counted(static_cast<int64_t>(stored["tensors"].size()), "tensor") +
         ", the linear weights unless the policy's options say otherwise, " +
         format_bytes(stored["bytes"].get<double>()) + " (docs/precision.md)\n";
  }
  s += "  " + cache_state_line(r.analysis.memory) + "\n";
  const std::string floor = kernel_floor_line(r.analysis);
  if (!floor.empty()) s += "  " + floor + "\n";
  s += render_verification(r.provenance.verification, details, "  ");
  const einsum::OpCounts& t = r.analysis.totals;
  s += "  work: " + format_count(static_cast<double>(t.macs), "MAC") + ", " +
       format_count(static_cast<double>(t.other_ops())) + " other ops, " +
       format_count(static_cast<double>(t.flops()), "FLOP") + " (" + std::string(kFlopsConvention) +
       "), " + std::to_string(r.graph.nodes.size()) + " nodes\n";
  if (!r.graph.dead_nodes.empty()) {
    s += "  dead code: " + std::to_string(r.graph.dead_nodes.size()) +
         " node(s) computed and discarded (no output reads them), not counted: " +
         join(r.graph.dead_nodes, ", ") + "\n";
  }
  for (const sol::RepeatedOutput& o : r.analysis.repeated_outputs) {
    s += "  repeated values: output '" + o.tensor + "' holds " + std::to_string(o.copies) +
         " copies of each value (a broadcast); fused and cache-aware write " +
         format_bytes(static_cast<double>(o.once_bytes)) + " once, not " +
         format_bytes(static_cast<double>(o.bytes)) +
         " (docs/fidelities.md, \"Repeated values\")\n";
  }
  return s;
}

// "scores..weighted_sum (5 nodes)", or the one node's name.
std::string group_members(const einsum::Graph& g, const sol::CacheGroup& grp) {
  if (grp.last - grp.first == 1) return g.nodes[grp.first].name;
  return g.nodes[grp.first].name + ".." + g.nodes[grp.last - 1].name + " (" +
         std::to_string(grp.last - grp.first) + " nodes)";
}

// "h=1 i=16 j=16" (tiled dims; "-" when none).
std::string group_tiles(const sol::CacheGroup& grp) {
  std::string s;
  for (const sol::GroupDim& d : grp.dims) {
    s += (s.empty() ? "" : " ") + d.name + "=" + std::to_string(d.tile);
  }
  return s.empty() ? "-" : s;
}

std::string group_order(const sol::CacheGroup& grp) {
  std::string s;
  for (const std::string& d : grp.loop_order) s += (s.empty() ? "" : ",") + d;
  return s.empty() ? "-" : s;
}

// The cache-aware groups, most traffic first (ties in schedule order), at most `top`.
std::string cache_table(const einsum::Graph& g, const sol::Analysis& a, size_t top) {
  if (!a.cache_skipped.empty()) return "cache: not analysed: " + a.cache_skipped + "\n";
  if (!a.cache) return "";
  const sol::CacheSchedule& c = *a.cache;
  std::string s =
      "cache: on-chip capacity " + format_bytes(static_cast<double>(c.capacity_bytes)) + " (" +
      a.cache_capacity_source + "), " + std::to_string(c.groups.size()) +
      " group(s); groups run one after another: " + format_seconds(a.cache_sequential_s) + "\n";
  std::vector<size_t> order(c.groups.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
    return c.groups[x].traffic_bytes > c.groups[y].traffic_bytes;
  });
  order.resize(std::min(top, order.size()));
  std::vector<std::vector<std::string>> rows = {
      {"group", "nodes", "mode", "tiles", "loop order", "working set", "DRAM bytes", "capacity"}};
  for (const size_t k : order) {
    const sol::CacheGroup& grp = c.groups[k];
    rows.push_back(
        {std::to_string(k + 1), group_members(g, grp),
         std::string(sol::group_mode_name(grp.mode)) + (grp.lower_bound ? " (bound)" : ""),
         group_tiles(grp), group_order(grp),
         format_bytes(static_cast<double>(grp.working_set_bytes)),
         format_bytes(static_cast<double>(grp.traffic_bytes)),
         grp.capacity_limited
             ? "limited: " + format_bytes(static_cast<double>(grp.capacity_for_min_traffic_bytes)) +
                   " for " + format_bytes(static_cast<double>(grp.min_traffic_bytes))
             : "enough"});
  }
  std::string bounds;  // the groups shown whose traffic is a lower bound, and why
  for (const size_t k : order) {
    const sol::CacheGroup& grp = c.groups[k];
    if (grp.lower_bound) {
      bounds += "  group " + std::to_string(k + 1) + ": " + grp.lower_bound_reason + "\n";
    }
  }
  if (!bounds.empty()) {
    bounds =
        "(bound): the group's DRAM bytes are a lower bound, not a schedule's traffic:\n" + bounds;
  }
  return s + "\nCache-aware groups, most DRAM traffic first (" + std::to_string(order.size()) +
         " of " + std::to_string(c.groups.size()) + "):\n" + format_table(rows, "rllllrrl") +
         bounds;
}

// The training step's table: one row per phase and one for the whole step (SOL per fidelity).
std::string step_table(const Report& r) {
  if (!r.step) return "";
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> head = {"phase", "nodes", "MACs", "FLOPs"};
  for (const sol::FidelityResult& f : r.analysis.results) {
    head.push_back(std::string(sol::fidelity_name(f.fidelity)));
  }
  head.push_back("fused DRAM bytes");
  rows.push_back(head);
  const auto row = [&](const std::string& name, size_t nodes, const sol::Analysis& a) {
    std::vector<std::string> cells = {name, std::to_string(nodes),
                                      format_count(static_cast<double>(a.totals.macs)),
                                      format_count(static_cast<double>(a.totals.flops()))};
    std::string fused = "-";
    for (const sol::FidelityResult& f : a.results) {
      cells.push_back(format_seconds(f.time_s));
      if (f.fidelity == sol::Fidelity::Fused) fused = format_bytes(static_cast<double>(f.bytes));
    }
    while (cells.size() + 1 < head.size()) cells.push_back("-");
    cells.push_back(fused);
    rows.push_back(cells);
  };
  for (const sol::PhaseAnalysis& p : r.step->phases) row(p.phase, p.nodes, p.analysis);
  row("step", r.graph.nodes.size(), r.analysis);
  std::string align = "lrrr" + std::string(head.size() - 4, 'r');
  std::string s =
      "\nTraining step: each phase run alone, and the whole step (docs/training.md):\n" +
      format_table(rows, align);
  s += "activations kept for the backward: " + std::to_string(r.step->activations.size()) +
       " tensor(s), " + format_bytes(static_cast<double>(r.step->activation_bytes)) +
       " (tensors the forward writes and the backward reads)\n";
  return s;
}

std::string fidelity_table(const sol::Analysis& a) {
  // Warm: the bytes of each model, then how many of them the last-level cache serves.
  const bool warm = a.memory.state == sol::CacheState::Warm;
  std::vector<std::vector<std::string>> rows = {
      {"fidelity", "SOL time", "compute", "memory", warm ? "bytes" : "DRAM bytes", "bottleneck"}};
  if (warm) rows[0].insert(rows[0].begin() + 5, "from L2");
  for (const sol::FidelityResult& f : a.results) {
    rows.push_back({std::string(sol::fidelity_name(f.fidelity)), format_seconds(f.time_s),
                    format_seconds(f.compute_s), format_seconds(f.memory_s),
                    format_bytes(static_cast<double>(f.bytes)),
                    std::string(sol::bottleneck_name(f.bottleneck))});
    if (warm) {
      rows.back().insert(rows.back().begin() + 5, format_bytes(static_cast<double>(f.warm_bytes)));
    }
  }
  std::string s = format_table(rows, warm ? "lrrrrrl" : "lrrrrl");
  const nlohmann::json sol = sol_json(a);
  if (sol.contains("fused_over_unfused") && !sol["fused_over_unfused"].is_null()) {
    s += "fused/unfused: " + format_number(sol["fused_over_unfused"].get<double>()) + "\n";
  }
  return s;
}

// The slowest framework operations run alone (the unfused fidelity's terms), with the nodes
// (kernels) inside each.
std::string op_table(const Report& r, size_t top) {
  const std::vector<sol::OpCost>& ops = r.analysis.ops;
  std::vector<size_t> order(ops.size());
  std::iota(order.begin(), order.end(), 0);
  // Slowest first; ties in graph order, so the table is deterministic.
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t x, size_t y) { return ops[x].time_s > ops[y].time_s; });
  order.resize(std::min(top, order.size()));
  double total = 0;  // the unfused SOL, whatever the fidelities analysed
  for (const sol::OpCost& c : ops) total += c.time_s;
  std::vector<std::vector<std::string>> rows = {{"op", "nodes", "precision", "MACs", "other ops",
                                                 "bytes", "compute", "memory", "time", "share",
                                                 "bound"}};
  for (const size_t k : order) {
    const sol::OpCost& c = ops[k];
    const sol::Rate* main = nullptr;  // the rate of the node with the most compute
    double most = -1;
    for (size_t i = c.first; i < c.last; ++i) {
      const sol::NodeCost& nc = r.analysis.nodes[i];
      if (nc.main_rate() && nc.compute_s > most) {
        most = nc.compute_s;
        main = nc.main_rate();
      }
    }
    const std::string members =
        c.last - c.first == 1
            ? (r.graph.nodes[c.first].name == c.name ? "-" : r.graph.nodes[c.first].name)
            : r.graph.nodes[c.first].name + ".." + r.graph.nodes[c.last - 1].name + " (" +
                  std::to_string(c.last - c.first) + ")";
    rows.push_back({c.name, members, short_precision(main),
                    format_count(static_cast<double>(c.counts.macs)),
                    format_count(static_cast<double>(c.counts.other_ops())),
                    format_bytes(static_cast<double>(c.bytes)), format_seconds(c.compute_s),
                    format_seconds(c.memory_s), format_seconds(c.time_s),
                    total > 0 ? format_number(100 * c.time_s / total) + "%" : "-",
                    std::string(sol::bottleneck_name(c.bottleneck))});
  }
  return "Slowest ops, each run alone as one kernel (" + std::to_string(order.size()) + " of " +
         std::to_string(ops.size()) + "):\n" + format_table(rows, "lllrrrrrrrl");
}

// Per-node notes, one line each: "NODE: NOTE" with `details`; else one line per distinct note,
// in the order of its first node: "NODE: NOTE" for one node, "3 nodes (A, B, C): NOTE" for up to
// three, "353 nodes: NOTE" for more.
std::string grouped_notes(const std::vector<std::pair<std::string, std::string>>& notes,
                          bool details) {
  std::string s;
  if (details) {
    for (const auto& [node, note] : notes) s += "  " + node + ": " + note + "\n";
    return s;
  }
  std::vector<std::string> order;  // the distinct notes, first seen first
  std::map<std::string, std::vector<std::string>> nodes;
  for (const auto& [node, note] : notes) {
    std::vector<std::string>& names = nodes[note];
    if (names.empty()) order.push_back(note);
    names.push_back(node);
  }
  for (const std::string& note : order) {
    const std::vector<std::string>& names = nodes[note];
    if (names.size() == 1) {
      s += "  " + names[0] + ": " + note + "\n";
    } else if (names.size() <= 3) {
      s += "  " + std::to_string(names.size()) + " nodes (" + join(names, ", ") + "): " + note +
           "\n";
    } else {
      s += "  " + std::to_string(names.size()) + " nodes: " + note + "\n";
    }
  }
  return s;
}

// What --details adds to a heading of grouped notes, when the grouping hid some names.
std::string details_hint(const std::vector<std::pair<std::string, std::string>>& notes,
                         bool details) {
  std::map<std::string, size_t> count;
  for (const auto& note : notes) ++count[note.second];
  const bool hidden =
      std::any_of(count.begin(), count.end(), [](const auto& c) { return c.second > 3; });
  return !details && hidden ? "; --details lists each node" : "";
}

std::string fallback_notes(const Report& r, bool details) {
  std::vector<std::pair<std::string, std::string>> notes;
  for (size_t i = 0; i < r.analysis.nodes.size(); ++i) {
    const sol::NodeCost& c = r.analysis.nodes[i];
    for (const std::optional<sol::Rate>* rate : {&c.mac_rate, &c.other_rate}) {
      if (*rate && (*rate)->fallback()) notes.emplace_back(r.graph.nodes[i].name, (*rate)->label);
    }
  }
  if (notes.empty()) return "";
  return "* precision fallbacks (the device lacks the wanted rate" + details_hint(notes, details) +
         "):\n" + grouped_notes(notes, details);
}

// The products priced at their operands' origin precision (docs/precision.md, "Origin
// precision"), in node order: (node, what).
std::vector<std::pair<std::string, std::string>> origin_notes(const Report& r) {
  std::vector<std::pair<std::string, std::string>> out;
  for (size_t i = 0; i < r.analysis.nodes.size(); ++i) {
    const sol::NodeCost& c = r.analysis.nodes[i];
    if (!c.origin_mac_rate) continue;
    const einsum::Node& n = r.graph.nodes[i];
    out.emplace_back(n.name,
                     std::string(ir::dtype_name(*n.mac_lhs_dtype)) + " x " +
                         std::string(ir::dtype_name(*n.mac_rhs_dtype)) + " operands upcast from " +
                         std::string(ir::dtype_name(*n.mac_lhs_origin)) + " x " +
                         std::string(ir::dtype_name(*n.mac_rhs_origin)) + ": " +
                         c.origin_mac_rate->label + " (unfused: " + c.mac_rate->label + ")");
  }
  return out;
}

nlohmann::json origin_json(const Report& r) {
  nlohmann::json j = nlohmann::json::array();
  for (size_t i = 0; i < r.analysis.nodes.size(); ++i) {
    const sol::NodeCost& c = r.analysis.nodes[i];
    if (!c.origin_mac_rate) continue;
    const einsum::Node& n = r.graph.nodes[i];
    j.push_back({{"node", n.name},
                 {"operands", {ir::dtype_name(*n.mac_lhs_dtype), ir::dtype_name(*n.mac_rhs_dtype)}},
                 {"origin", {ir::dtype_name(*n.mac_lhs_origin), ir::dtype_name(*n.mac_rhs_origin)}},
                 {"precision", c.origin_mac_rate->label},
                 {"rate_flops_per_s", c.origin_mac_rate->flops_per_s},
                 {"unfused_precision", c.mac_rate->label},
                 {"fused_compute_s", c.fused_compute_s}});
  }
  return j;
}

}  // namespace

std::vector<RoutedRead> routed_reads(const einsum::Graph& g) {
  std::map<std::string, RoutedRead>
      reads;  // graph inputs and weights read at data-dependent places
  for (const einsum::Node& n : g.nodes) {
    for (const einsum::Access& a : n.reads) {
      const einsum::TensorInfo* t = g.find_tensor(a.tensor);
      if (t == nullptr || (t->role != ir::TensorRole::Input && t->role != ir::TensorRole::Weight)) {
        continue;
      }
      for (const einsum::AccessMap& m : a.maps) {
        if (!m.data_dependent) continue;
        RoutedRead& r = reads[a.tensor];
        r.tensor = a.tensor;
        r.moved += m.moved;
        r.routed = r.routed || m.routed;
        if (m.data_dim >= 0 && r.dim < 0) r.dim = m.data_dim;
      }
    }
  }
  std::vector<RoutedRead> out;
  for (auto& [name, r] : reads) {
    const einsum::TensorInfo& t = *g.find_tensor(name);
    r.numel = t.numel;
    r.counted = einsum::touched_footprint(g, name).elements;
    // Whole slices along the chosen dimension (an expert's weights in [E, ...]): how many.
    if (r.dim >= 0 && static_cast<size_t>(r.dim) < t.shape.size() && t.shape[r.dim] > 0) {
      const int64_t slice = t.numel / t.shape[r.dim];
      r.of = t.shape[r.dim];
      r.slices = slice == 0 ? 0 : (r.counted + slice - 1) / slice;
    }
    out.push_back(r);
  }
  return out;
}

namespace {

// Why a data-dependent read of `g` was counted as it was: the routing assumption.
std::string routing_why(const einsum::Graph& g, bool routed) {
  if (!routed) {
    return "every index taken different, the rows its index names (not a router's choice: "
           "--routing does not apply); an index that repeats rows (shared pages, repeated "
           "tokens) reads fewer";
  }
  return g.routing == einsum::Routing::Concentrated
             ? "routed, concentrated routing (--routing concentrated): the fewest different "
               "values the program guarantees (top-k routing: k experts), the fewest any batch "
               "can read, a lower bound for every routing"
             : "routed, every index taken different, as balanced routing spreads a batch over "
               "every expert it can reach; a batch that repeats experts (skewed routing) reads "
               "fewer, down to what --routing concentrated counts";
}

// "M elements read at data-dependent positions (take/gather), counted as C of its N distinct"
// with the slices "(S of its E slices along dim D)"; `their`: of several tensors, in all.
std::string read_counts(int64_t moved, int64_t counted, int64_t numel, const RoutedRead& r,
                        bool several) {
  std::string s = std::to_string(moved) +
                  " elements read at data-dependent positions (take/gather), counted as " +
                  std::to_string(counted) + (several ? " of their " : " of its ") +
                  std::to_string(numel) + " distinct";
  if (r.dim >= 0) {
    s += std::string(several ? " (each " : " (") + std::to_string(r.slices) + " of its " +
         std::to_string(r.of) + " slices along dim " + std::to_string(r.dim) + ")";
  }
  return s;
}

// One tensor's line: "TENSOR: M elements read ... distinct (S of its E slices ...): WHY".
std::string read_line(const einsum::Graph& g, const RoutedRead& r) {
  return r.tensor + ": " + read_counts(r.moved, r.counted, r.numel, r, false) + ": " +
         routing_why(g, r.routed);
}

// The routing assumption's lines of the terminal report, of `reads` (routed_reads(g)): one per
// tensor with `details`; else one per kind of read (routed or not, the slices read of how many
// along which dimension), with the number of tensors and their elements in all, and the names
// of up to three.
std::vector<std::string> routing_lines(const einsum::Graph& g, const std::vector<RoutedRead>& reads,
                                       bool details) {
  std::vector<std::string> out;
  if (details) {
    for (const RoutedRead& r : reads) out.push_back(read_line(g, r));
    return out;
  }
  std::vector<std::vector<const RoutedRead*>> groups;  // in the order of their first tensor
  for (const RoutedRead& r : reads) {
    const auto same = [&](const std::vector<const RoutedRead*>& grp) {
      const RoutedRead& f = *grp.front();
      return f.routed == r.routed && f.dim == r.dim && f.slices == r.slices && f.of == r.of;
    };
    const auto it = std::find_if(groups.begin(), groups.end(), same);
    if (it == groups.end()) {
      groups.push_back({&r});
    } else {
      it->push_back(&r);
    }
  }
  for (const std::vector<const RoutedRead*>& grp : groups) {
    const RoutedRead& f = *grp.front();
    if (grp.size() == 1) {
      out.push_back(read_line(g, f));
      continue;
    }
    int64_t moved = 0, counted = 0, numel = 0;
    std::vector<std::string> names;
    for (const RoutedRead* r : grp) {
      moved += r->moved;
      counted += r->counted;
      numel += r->numel;
      names.push_back(r->tensor);
    }
    out.push_back(std::to_string(grp.size()) + " tensors" +
                  (grp.size() <= 3 ? " (" + join(names, ", ") + ")" : std::string()) + ": " +
                  read_counts(moved, counted, numel, f, true) + ": " + routing_why(g, f.routed));
  }
  return out;
}

}  // namespace

std::vector<std::string> routing_assumptions(const einsum::Graph& g) {
  std::vector<std::string> out;
  for (const RoutedRead& r : routed_reads(g)) out.push_back(read_line(g, r));
  return out;
}

Report make_report(einsum::Graph graph, hw::Device device, const sol::PrecisionPolicy& policy,
                   const std::vector<sol::Fidelity>& fidelities,
                   const sol::AnalysisOptions& options) {
  graph = sol::store_weights(std::move(graph), policy);
  sol::Analysis analysis = sol::analyze(graph, device, policy, fidelities, options);
  std::optional<sol::Analysis> attainable;
  if (device.attainable) {
    attainable = sol::analyze(graph, hw::attainable_device(device), policy, fidelities, options);
  }
  return Report{std::move(graph), std::move(device), std::move(analysis),  {},
                std::nullopt,     std::nullopt,      std::move(attainable)};
}

std::vector<std::string> attainable_figures(const hw::Device& d) {
  std::vector<std::string> out;
  if (!d.attainable) return out;
  if (const auto& bw = d.attainable->dram_bandwidth_bytes_per_s) {
    out.push_back("DRAM " + format_bandwidth(bw->value) + " (datasheet " +
                  format_bandwidth(d.dram_bandwidth_bytes_per_s()) + ")");
  }
  for (hw::ComputeUnit u : hw::kAllComputeUnits) {
    for (hw::Precision p : hw::kAllPrecisions) {
      const auto& measured = d.attainable->peak(u, p);
      if (!measured) continue;
      out.push_back(std::string(hw::compute_unit_name(u)) + " " +
                    std::string(hw::precision_name(p)) + " " + format_rate(measured->value) + " (" +
                    format_rate(d.peak(u, p)->value) + ")");
    }
  }
  return out;
}

namespace {

// "attainable (measured ceilings, not a bound): unfused 2.1 ms, fused ..." and the figures.
std::string attainable_lines(const Report& r) {
  if (!r.attainable) return "";
  std::vector<std::string> times;
  for (const sol::FidelityResult& f : r.attainable->results) {
    times.push_back(std::string(sol::fidelity_name(f.fidelity)) + " " + format_seconds(f.time_s));
  }
  return "attainable at " + r.device.name +
         "'s measured ceilings (its file's attainable block; not a bound): " + join(times, ", ") +
         "\n  measured: " + join(attainable_figures(r.device), ", ") +
         "; other rates at the datasheet's\n";
}

}  // namespace

void add_step(Report& r, const std::map<std::string, std::string>& tensor_phase,
              const sol::PrecisionPolicy& policy, const sol::AnalysisOptions& options) {
  if (tensor_phase.empty()) return;
  std::vector<sol::Fidelity> fidelities;
  for (const sol::FidelityResult& f : r.analysis.results) fidelities.push_back(f.fidelity);
  r.step = sol::analyze_step(r.graph, tensor_phase, r.device, policy, fidelities, options);
}

nlohmann::json step_to_json(const Report& r) {
  if (!r.step) return nullptr;
  const auto section = [](const std::string& name, size_t nodes, const sol::Analysis& a) {
    return nlohmann::json{{"phase", name},
                          {"nodes", nodes},
                          {"totals", totals_json(a.totals)},
                          {"bytes", bytes_json(a)},
                          {"sol", sol_json(a)}};
  };
  nlohmann::json phases = nlohmann::json::array();
  for (const sol::PhaseAnalysis& p : r.step->phases) {
    phases.push_back(section(p.phase, p.nodes, p.analysis));
  }
  nlohmann::json activations = nlohmann::json::array();
  for (const sol::Activation& a : r.step->activations) {
    activations.push_back({{"tensor", a.tensor}, {"bytes", a.bytes}});
  }
  return {{"phases", std::move(phases)},
          {"step", section("step", r.graph.nodes.size(), r.analysis)},
          {"activations", std::move(activations)},
          {"activation_bytes", r.step->activation_bytes}};
}

nlohmann::json report_to_json(const Report& r) {
  nlohmann::json nodes = nlohmann::json::array();
  for (size_t i = 0; i < r.graph.nodes.size(); ++i) {
    nodes.push_back(node_json(r.graph.nodes[i], r.analysis.nodes[i]));
  }
  nlohmann::json ops = nlohmann::json::array();
  for (const sol::OpCost& c : r.analysis.ops) {
    ops.push_back(op_json(r.graph, c, r.analysis.kernel_floor));
  }
  nlohmann::json j = {
      {"schema_version", kSchemaVersion},
      {"source", source_name(r.graph.source)},
      {"sizes", sizes_json(r.graph.sizes)},
      {"hardware",
       {{"name", r.device.name},
        {"vendor", r.device.vendor},
        {"dram_bandwidth_bytes_per_s", r.analysis.dram_bandwidth_bytes_per_s},
        {"overrides", overrides_json(r.device)}}},
      {"precision_policy", r.analysis.policy},
      {"cache_state", sol::cache_state_name(r.analysis.memory.state)},
      {"flops_convention", kFlopsConvention},
      {"capture", capture_to_json(r.provenance.capture, r.graph.source)},
      {"coverage", coverage_to_json(r.provenance.coverage)},
      {"verification", verification_to_json(r.provenance.verification)},
      {"totals", totals_json(r.analysis.totals)},
      {"bytes", bytes_json(r.analysis)},
      {"sol", sol_json(r.analysis)},
      {"nodes", std::move(nodes)},
      {"ops", std::move(ops)},
      {"cache", cache_to_json(r.graph, r.analysis)},
  };
  if (r.analysis.memory.state == sol::CacheState::Warm) {
    j["warm_cache"] = warm_cache_json(r.analysis);
  }
  if (r.analysis.kernel_floor) j["kernel_floor"] = kernel_floor_json(r.analysis);
  if (r.attainable) {
    nlohmann::json a = hw::device_to_json(r.device)["attainable"];  // the measured figures
    a["sol"] = sol_json(*r.attainable);
    j["attainable"] = std::move(a);
  }
  if (!r.provenance.agent.is_null()) j["agent"] = r.provenance.agent;
  if (!r.graph.dead_nodes.empty()) j["dead_nodes"] = r.graph.dead_nodes;
  const nlohmann::json stored = stored_weights_json(r.graph);
  if (!stored.is_null()) j["stored_weights"] = stored;
  const nlohmann::json origin = origin_json(r);
  if (!origin.empty()) j["origin_priced"] = origin;
  if (r.analysis.program_floor_s > 0) {
    nlohmann::json floored = nlohmann::json::array();
    for (const sol::FidelityResult& f : r.analysis.results) {
      if (f.floored) floored.push_back(sol::fidelity_key(f.fidelity));
    }
    j["one_kernel_floor"] = {{"min_kernel_s", r.analysis.program_floor_s},
                             {"floored", std::move(floored)}};
  }
  if (!r.analysis.repeated_outputs.empty()) {
    nlohmann::json rep = nlohmann::json::array();
    for (const sol::RepeatedOutput& o : r.analysis.repeated_outputs) {
      rep.push_back({{"tensor", o.tensor},
                     {"copies", o.copies},
                     {"bytes", o.bytes},
                     {"once_bytes", o.once_bytes}});
    }
    j["repeated_outputs"] = std::move(rep);
  }
  if (r.step) j["training"] = step_to_json(r);
  if (r.parallel) j["parallel"] = parallel_to_json(r);
  const std::vector<std::string> assumptions = routing_assumptions(r.graph);
  if (!assumptions.empty()) {
    j["routing"] = einsum::routing_name(r.graph.routing);
    j["routing_assumptions"] = assumptions;
    nlohmann::json reads = nlohmann::json::array();
    for (const RoutedRead& rr : routed_reads(r.graph)) {
      reads.push_back({{"tensor", rr.tensor},
                       {"moved", rr.moved},
                       {"counted", rr.counted},
                       {"numel", rr.numel},
                       {"routed", rr.routed},
                       {"dim", rr.dim},
                       {"slices", rr.slices},
                       {"of", rr.of}});
    }
    j["routed_reads"] = reads;
  }
  return j;
}

nlohmann::json cache_to_json(const einsum::Graph& g, const sol::Analysis& a) {
  if (!a.cache_skipped.empty()) return {{"error", a.cache_skipped}};
  if (!a.cache) return nullptr;
  nlohmann::json groups = nlohmann::json::array();
  for (size_t k = 0; k < a.cache->groups.size(); ++k) {
    const sol::CacheGroup& grp = a.cache->groups[k];
    const sol::CacheGroupCost& cost = a.cache_groups[k];
    nlohmann::json members = nlohmann::json::array();
    for (size_t i = grp.first; i < grp.last; ++i) members.push_back(g.nodes[i].name);
    nlohmann::json dims = nlohmann::json::array();
    for (const sol::GroupDim& d : grp.dims) {
      dims.push_back({{"name", d.name}, {"extent", d.extent}, {"tile", d.tile}});
    }
    nlohmann::json tensors = nlohmann::json::array();
    for (const sol::GroupTensor& t : grp.tensors) {
      tensors.push_back({{"name", t.name},
                         {"role", sol::tensor_role_name(t.role)},
                         {"footprint_bytes", t.footprint_bytes},
                         {"fetches", t.fetches},
                         {"traffic_bytes", t.traffic_bytes}});
    }
    groups.push_back({{"nodes", std::move(members)},
                      {"mode", sol::group_mode_name(grp.mode)},
                      {"dims", std::move(dims)},
                      {"loop_order", grp.loop_order},
                      {"tensors", std::move(tensors)},
                      {"online", grp.online},
                      {"reduced_mapspace", grp.reduced_mapspace},
                      {"lower_bound", grp.lower_bound},
                      {"lower_bound_reason", grp.lower_bound_reason},
                      {"working_set_bytes", grp.working_set_bytes},
                      {"traffic_bytes", grp.traffic_bytes},
                      {"compute_s", cost.compute_s},
                      {"memory_s", cost.memory_s},
                      {"time_s", cost.time_s},
                      {"capacity_limited", grp.capacity_limited},
                      {"min_traffic_bytes", grp.min_traffic_bytes},
                      {"capacity_for_min_traffic_bytes", grp.capacity_for_min_traffic_bytes}});
  }
  return {{"capacity_bytes", a.cache->capacity_bytes},
          {"capacity_source", a.cache_capacity_source},
          {"traffic_bytes", a.cache->traffic_bytes},
          {"sequential_s", a.cache_sequential_s},
          {"groups", std::move(groups)}};
}

std::string render_report(const Report& r, size_t top_nodes, bool details) {
  std::string s =
      render_coverage(r.provenance) + header(r, details) + "\n" + fidelity_table(r.analysis);
  // The cache summary line stays under the table it explains; the attainable times follow it.
  std::string cache = cache_table(r.graph, r.analysis, top_nodes);
  const size_t summary_end = cache.starts_with("cache: ") ? cache.find('\n') + 1 : 0;
  s += cache.substr(0, summary_end) + attainable_lines(r) + cache.substr(summary_end);
  s += step_table(r) + parallel_table(r, top_nodes);
  if (!r.graph.nodes.empty()) s += "\n" + op_table(r, top_nodes);
  const std::string notes = fallback_notes(r, details);
  if (!notes.empty()) s += "\n" + notes;
  const std::vector<std::pair<std::string, std::string>> origin = origin_notes(r);
  if (!origin.empty()) {
    s += "\n* products priced at their operands' origin precision (fused and cache-aware; "
         "unfused keeps eager's rate" +
         details_hint(origin, details) + "):\n" + grouped_notes(origin, details);
  }
  const std::vector<RoutedRead> reads = routed_reads(r.graph);
  const std::vector<std::string> assumptions = routing_lines(r.graph, reads, details);
  if (!assumptions.empty()) {
    const bool grouped = assumptions.size() < reads.size();
    s += "\n* routing assumption (data-dependent reads" +
         std::string(grouped ? "; --details lists each tensor" : "") + "):\n";
    for (const std::string& a : assumptions) s += "  " + a + "\n";
  }
  return s;
}

}  // namespace solar::report
