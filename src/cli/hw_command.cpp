// `solar hw list` and `solar hw show` (include/solar/cli/hw_command.h, docs/devices.md).
#include "solar/cli/hw_command.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "solar/cli/guard.h"
#include "solar/hw/device.h"
#include "solar/util/error.h"

namespace solar::cli {
namespace {

using hw::Device;

constexpr std::string_view kUsage =
    "usage: solar hw list\n"
    "       solar hw show NAME|FILE.yaml [--json] [--set KEY=VALUE ...]\n"
    "\n"
    "  list          the built-in devices: dense peak rates, DRAM, L2\n"
    "  show          every figure of one device with its source\n"
    "  --json        print the device as JSON (docs/devices.md)\n"
    "  --set K=V     override a figure, e.g. --set dram_bandwidth_bytes_per_s=4e12 or\n"
    "                --set peak_flops_per_s.tensor.bf16=1e15 (repeatable)\n";

struct ShowArgs {
  std::string spec;
  bool json = false;
  std::vector<std::string> overrides;
};

// A number with about four significant digits and never an exponent: 989.5, 0.768, 2517.
std::string format_number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, v >= 1000 ? "%.0f" : "%.4g", v);
  return buf;
}

std::string scaled(double v, double unit, std::string_view suffix) {
  return format_number(v / unit) + " " + std::string(suffix);
}

// `v` in a readable unit, chosen by the figure's path.
std::string format_figure(std::string_view path, double v) {
  const auto ends_with = [&](std::string_view s) {
    return path.size() >= s.size() && path.substr(path.size() - s.size()) == s;
  };
  if (path.starts_with("peak_flops_per_s.")) {
    return scaled(v, 1e12, ends_with(".int8") ? "TOP/s" : "TFLOP/s");
  }
  if (path.starts_with("interconnect.")) return scaled(v, 1e9, "GB/s");
  if (ends_with("bandwidth_bytes_per_s")) return scaled(v, 1e12, "TB/s");
  if (ends_with("capacity_bytes")) {
    if (v >= 1e9) return scaled(v, 1e9, "GB");
    return v >= 1e6 ? scaled(v, 1e6, "MB") : scaled(v, 1e3, "kB");
  }
  if (path == "clock_hz") return scaled(v, 1e9, "GHz");
  if (path == "min_kernel_s") return scaled(v, 1e-6, "us");
  return format_number(v);
}

std::string cell(const std::optional<hw::Figure>& f, double unit) {
  return f ? format_number(f->value / unit) : "-";
}

// Prints rows as columns two spaces apart: columns before `first_right` left-aligned, the rest
// right-aligned. No trailing spaces.
void print_table(const std::vector<std::vector<std::string>>& rows, size_t first_right,
                 std::ostream& out) {
  std::vector<size_t> width(rows.front().size(), 0);
  for (const auto& row : rows) {
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  for (const auto& row : rows) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      const std::string pad(width[c] - row[c].size(), ' ');
      line += c < first_right ? row[c] + pad : pad + row[c];
      if (c + 1 < row.size()) line += "  ";
    }
    out << line.substr(0, line.find_last_not_of(' ') + 1) << '\n';
  }
}

int cmd_list(std::ostream& out) {
  using hw::ComputeUnit, hw::MemoryLevel, hw::Precision;
  std::vector<std::vector<std::string>> rows = {{"name", "vendor", "bf16 tensor TFLOP/s",
                                                 "fp32 vector TFLOP/s", "DRAM TB/s", "DRAM GB",
                                                 "L2 MB"}};
  for (const std::string& name : hw::builtin_device_names()) {
    const Device d = hw::load_builtin_device(name);
    const hw::MemorySpec& dram = d.level(MemoryLevel::Dram);
    rows.push_back({d.name, d.vendor, cell(d.peak(ComputeUnit::Tensor, Precision::Bf16), 1e12),
                    cell(d.peak(ComputeUnit::Vector, Precision::Fp32), 1e12),
                    cell(dram.bandwidth_bytes_per_s, 1e12), cell(dram.capacity_bytes, 1e9),
                    cell(d.level(MemoryLevel::L2).capacity_bytes, 1e6)});
  }
  print_table(rows, 2, out);
  out << "\nDense peak rates; '-': not available or not published. "
         "Every figure and its source: solar hw show NAME\n";
  return 0;
}

void print_device(const Device& d, std::ostream& out) {
  out << d.name << " (" << d.vendor << ")";
  if (!d.description.empty()) out << ": " << d.description;
  out << "\nDense peak rates (int8 in ops/s); a precision not listed is not available or not "
         "published.\n\n";
  std::vector<std::vector<std::string>> rows = {{"key", "value", "source"}};
  for (const hw::FigureEntry& entry : hw::list_figures(d)) {
    rows.push_back(
        {entry.path, format_figure(entry.path, entry.figure.value), entry.figure.source});
  }
  print_table(rows, rows.front().size(), out);
  bool heading = false;
  for (hw::Link l : hw::kAllLinks) {
    const hw::LinkSpec& link = d.link(l);
    if (!link.exists()) continue;
    if (!heading) out << "\nInterconnect (per device; both directions together, as published):\n";
    heading = true;
    out << "  " << hw::link_name(l) << ": " << (link.link.empty() ? "(unnamed)" : link.link) << ", "
        << scaled(link.bandwidth_bytes_per_s->value, 1e9, "GB/s") << " ("
        << scaled(link.per_direction_bytes_per_s(), 1e9, "GB/s") << " each way)\n";
    if (!link.in_network_reduction.empty()) {
      out << "    in-network reduction: " << link.in_network_reduction << "\n";
    }
  }
}

ShowArgs parse_show_args(const std::vector<std::string>& args) {
  ShowArgs a;
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& w = args[i];
    if (w == "--json") {
      a.json = true;
    } else if (w == "--set") {
      if (i + 1 == args.size()) throw UserError("--set needs KEY=VALUE");
      a.overrides.push_back(args[++i]);
    } else if (w.starts_with("--set=")) {
      a.overrides.push_back(w.substr(6));
    } else if (w.starts_with("-")) {
      throw UserError("unknown option '" + w + "' (valid: --json, --set)");
    } else if (!a.spec.empty()) {
      throw UserError("one device at a time (got '" + a.spec + "' and '" + w + "')");
    } else {
      a.spec = w;
    }
  }
  if (a.spec.empty()) throw UserError("missing device (a built-in name or a .yaml file)");
  return a;
}

int cmd_show(const std::vector<std::string>& args, std::ostream& out) {
  const ShowArgs a = parse_show_args(args);
  Device d = hw::resolve_device(a.spec);
  for (const std::string& o : a.overrides) hw::apply_override(d, o);
  if (a.json) {
    out << hw::device_to_json(d).dump(2) << '\n';
  } else {
    print_device(d, out);
  }
  return 0;
}

bool is_help(const std::string& w) { return w == "-h" || w == "--help" || w == "help"; }

int dispatch(const std::vector<std::string>& args, std::ostream& out) {
  if (args.empty()) throw UserError("missing command (valid: list, show)");
  if (std::any_of(args.begin(), args.end(), is_help)) {
    out << kUsage;
    return 0;
  }
  if (args[0] == "list") {
    if (args.size() > 1) throw UserError("takes no arguments (got '" + args[1] + "')");
    return cmd_list(out);
  }
  if (args[0] == "show") return cmd_show(args, out);
  throw UserError("unknown command '" + args[0] + "' (valid: list, show)");
}

}  // namespace

int hw_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  // Errors name the command: `solar hw show: error: ...`.
  const bool known = !args.empty() && (args[0] == "list" || args[0] == "show");
  return run_guarded(err, known ? "solar hw " + args[0] : std::string("solar hw"),
                     [&] { return dispatch(args, out); });
}

}  // namespace solar::cli
