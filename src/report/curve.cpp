// Traffic and SOL against on-chip capacity (include/solar/report/curve.h).
#include "solar/report/curve.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "format.h"
#include "json_parts.h"
#include "solar/report/report.h"
#include "solar/sol/analysis.h"

namespace solar::report {
namespace {

using namespace detail;

// "1 KiB", "32 MiB", "1.5 GiB", "50000000 B" (binary units when exact to 4 digits).
std::string binary_bytes(int64_t b) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(b);
  size_t u = 0;
  while (v >= 1024 && u + 1 < std::size(kUnits)) {
    v /= 1024;
    ++u;
  }
  return format_number(v) + " " + kUnits[u];
}

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

}  // namespace

nlohmann::json curve_to_json(const sol::Curve& c) {
  nlohmann::json points = nlohmann::json::array();
  for (const sol::CurvePoint& p : c.points) {
    points.push_back(
        {{"capacity_bytes", p.capacity_bytes},
         {"mark", p.mark},
         {"fits", p.traffic_bytes.has_value()},
         {"traffic_bytes",
          p.traffic_bytes ? nlohmann::json(*p.traffic_bytes) : nlohmann::json(nullptr)},
         {"sol_s", p.traffic_bytes ? nlohmann::json(p.time_s) : nlohmann::json(nullptr)},
         {"groups", p.groups},
         {"tiled_groups", p.tiled_groups}});
  }
  const auto opt = [](const std::optional<int64_t>& v) {
    return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
  };
  return {{"schema_version", kSchemaVersion},
          {"source", source_name(c.source)},
          {"cache_state", sol::cache_state_name(c.cache_state)},
          {"hardware",
           {{"name", c.device},
            {"dram_bandwidth_bytes_per_s", c.dram_bandwidth_bytes_per_s},
            {"l2_bytes", opt(c.l2_bytes)},
            {"smem_bytes", opt(c.smem_bytes)}}},
          {"compute_s", c.compute_s},
          {"bytes", {{"unfused", c.unfused_bytes}, {"fused", c.fused_bytes}}},
          {"sol", {{"unfused_s", c.unfused_s}, {"fused_s", c.fused_s}}},
          {"kernel_floor_s",
           c.kernel_floor_s > 0 ? nlohmann::json(c.kernel_floor_s) : nlohmann::json(nullptr)},
          {"points", std::move(points)}};
}

std::string curve_to_csv(const sol::Curve& c) {
  std::string s = "capacity_bytes,mark,traffic_bytes,sol_s,groups,tiled_groups,cache_state\n";
  for (const sol::CurvePoint& p : c.points) {
    s += std::to_string(p.capacity_bytes) + "," + p.mark + ",";
    if (p.traffic_bytes) {
      s += std::to_string(*p.traffic_bytes) + "," + nlohmann::json(p.time_s).dump();
    } else {
      s += ",";
    }
    s += "," + std::to_string(p.groups) + "," + std::to_string(p.tiled_groups) + "," +
         std::string(sol::cache_state_name(c.cache_state)) + "\n";
  }
  return s;
}

std::string curve_to_svg(const sol::Curve& c) {
  constexpr double kW = 760, kH = 460, kLeft = 90, kRight = 30, kTop = 50, kBottom = 60;
  const double pw = kW - kLeft - kRight, ph = kH - kTop - kBottom;
  // y range: decades around every traffic shown.
  double lo = static_cast<double>(std::max<int64_t>(1, c.fused_bytes));
  double hi = static_cast<double>(std::max<int64_t>(1, c.unfused_bytes));
  for (const sol::CurvePoint& p : c.points) {
    if (!p.traffic_bytes) continue;
    lo = std::min(lo, static_cast<double>(std::max<int64_t>(1, *p.traffic_bytes)));
    hi = std::max(hi, static_cast<double>(*p.traffic_bytes));
  }
  const int y0 = static_cast<int>(std::floor(std::log10(lo)));
  const int y1 = std::max(y0 + 1, static_cast<int>(std::ceil(std::log10(hi))));
  const auto x_of = [&](double bytes) {
    const double l =
        std::clamp(std::log2(bytes), double{sol::kCurveMinLog2}, double{sol::kCurveMaxLog2});
    return kLeft + pw * (l - sol::kCurveMinLog2) / (sol::kCurveMaxLog2 - sol::kCurveMinLog2);
  };
  const auto y_of = [&](double bytes) {
    return kTop + ph * (1 - (std::log10(std::max(bytes, 1.0)) - y0) / (y1 - y0));
  };
  std::string s = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(kW) + "\" height=\"" +
                  num(kH) + "\" viewBox=\"0 0 " + num(kW) + " " + num(kH) +
                  "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  s += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  s +=
      "<text x=\"" + num(kW / 2) + "\" y=\"24\" text-anchor=\"middle\" font-size=\"15\">" +
      html_escape("DRAM traffic vs on-chip capacity: " + source_name(c.source) + " on " + c.device +
                  " (cache state: " + std::string(sol::cache_state_name(c.cache_state)) + ")") +
      "</text>\n";
  s += "<rect x=\"" + num(kLeft) + "\" y=\"" + num(kTop) + "\" width=\"" + num(pw) +
       "\" height=\"" + num(ph) + "\" fill=\"none\" stroke=\"black\"/>\n";
  for (int k = sol::kCurveMinLog2; k <= sol::kCurveMaxLog2; k += 2) {
    const double x = x_of(std::exp2(k));
    s += "<line x1=\"" + num(x) + "\" y1=\"" + num(kTop) + "\" x2=\"" + num(x) + "\" y2=\"" +
         num(kTop + ph) + "\" stroke=\"#ddd\"/>\n";
    s += "<text x=\"" + num(x) + "\" y=\"" + num(kTop + ph + 18) + "\" text-anchor=\"middle\">" +
         binary_bytes(int64_t{1} << k) + "</text>\n";
  }
  for (int k = y0; k <= y1; ++k) {
    const double y = y_of(std::pow(10.0, k));
    s += "<line x1=\"" + num(kLeft) + "\" y1=\"" + num(y) + "\" x2=\"" + num(kLeft + pw) +
         "\" y2=\"" + num(y) + "\" stroke=\"#ddd\"/>\n";
    s += "<text x=\"" + num(kLeft - 6) + "\" y=\"" + num(y + 4) + "\" text-anchor=\"end\">" +
         format_bytes(std::pow(10.0, k)) + "</text>\n";
  }
  s += "<text x=\"" + num(kLeft + pw / 2) + "\" y=\"" + num(kH - 14) +
       "\" text-anchor=\"middle\">on-chip capacity (log scale)</text>\n";
  s += "<text x=\"18\" y=\"" + num(kTop + ph / 2) +
       "\" text-anchor=\"middle\" transform=\"rotate(-90 18 " + num(kTop + ph / 2) +
       ")\">DRAM traffic (log scale)</text>\n";
  const auto hline = [&](int64_t bytes, const std::string& color, const std::string& label) {
    const double y = y_of(static_cast<double>(bytes));
    s += "<line x1=\"" + num(kLeft) + "\" y1=\"" + num(y) + "\" x2=\"" + num(kLeft + pw) +
         "\" y2=\"" + num(y) + "\" stroke=\"" + color + "\" stroke-dasharray=\"6 4\"/>\n";
    s += "<text x=\"" + num(kLeft + pw - 4) + "\" y=\"" + num(y - 4) +
         "\" text-anchor=\"end\" fill=\"" + color + "\">" + label + " " +
         format_bytes(static_cast<double>(bytes)) + "</text>\n";
  };
  hline(c.unfused_bytes, "#888888", "unfused");
  hline(c.fused_bytes, "#2a9d2a", "fused");
  const auto vline = [&](const std::optional<int64_t>& bytes, const std::string& color,
                         const std::string& label, double dy) {
    if (!bytes) return;
    const double x = x_of(static_cast<double>(*bytes));
    s += "<line x1=\"" + num(x) + "\" y1=\"" + num(kTop) + "\" x2=\"" + num(x) + "\" y2=\"" +
         num(kTop + ph) + "\" stroke=\"" + color + "\" stroke-width=\"1.5\"/>\n";
    s += "<text x=\"" + num(x + 4) + "\" y=\"" + num(kTop + dy) + "\" fill=\"" + color + "\">" +
         label + " " + binary_bytes(*bytes) + "</text>\n";
  };
  vline(c.l2_bytes, "#c0392b", "L2", 14);
  vline(c.smem_bytes, "#2c6fbb", "SMEM", 30);
  std::string pts;
  for (const sol::CurvePoint& p : c.points) {
    if (!p.traffic_bytes) continue;
    pts += (pts.empty() ? "" : " ") + num(x_of(static_cast<double>(p.capacity_bytes))) + "," +
           num(y_of(static_cast<double>(*p.traffic_bytes)));
  }
  if (!pts.empty()) {
    s += "<polyline points=\"" + pts + "\" fill=\"none\" stroke=\"black\" stroke-width=\"2\"/>\n";
  }
  for (const sol::CurvePoint& p : c.points) {
    if (!p.traffic_bytes) continue;
    s += "<circle cx=\"" + num(x_of(static_cast<double>(p.capacity_bytes))) + "\" cy=\"" +
         num(y_of(static_cast<double>(*p.traffic_bytes))) + "\" r=\"3\"/>\n";
  }
  return s + "</svg>\n";
}

std::string render_curve(const sol::Curve& c) {
  std::string s = "DRAM traffic and SOL of " + source_name(c.source) + " on " + c.device +
                  " against on-chip capacity (cache-aware fidelity)\n";
  s += "  unfused " + format_bytes(static_cast<double>(c.unfused_bytes)) + " (" +
       format_seconds(c.unfused_s) + "), fused " +
       format_bytes(static_cast<double>(c.fused_bytes)) + " (" + format_seconds(c.fused_s) +
       "), compute " + format_seconds(c.compute_s) + "\n";
  s += "  device: L2 " + (c.l2_bytes ? binary_bytes(*c.l2_bytes) : std::string("n/a")) + ", SMEM " +
       (c.smem_bytes ? binary_bytes(*c.smem_bytes) : std::string("n/a")) + "\n";
  s += "  cache state: " + std::string(sol::cache_state_name(c.cache_state)) + "\n";
  if (c.kernel_floor_s > 0) {
    s += "  kernel floor: " + format_seconds(c.kernel_floor_s) +
         " (one kernel, min_kernel_s; --kernel-floor off: none): no time below it\n";
  } else if (c.kernel_floor && !c.kernel_floor_skipped.empty()) {
    s += "  kernel floor: none (" + c.kernel_floor_skipped + ")\n";
  }
  s += "\n";
  std::vector<std::vector<std::string>> rows = {
      {"capacity", "level", "DRAM bytes", "SOL time", "vs fused", "groups", "tiled"}};
  for (const sol::CurvePoint& p : c.points) {
    if (!p.traffic_bytes) {
      rows.push_back({binary_bytes(p.capacity_bytes), p.mark.empty() ? "-" : p.mark, "does not fit",
                      "-", "-", "-", "-"});
      continue;
    }
    rows.push_back({binary_bytes(p.capacity_bytes), p.mark.empty() ? "-" : p.mark,
                    format_bytes(static_cast<double>(*p.traffic_bytes)), format_seconds(p.time_s),
                    c.fused_bytes > 0 ? format_number(static_cast<double>(*p.traffic_bytes) /
                                                      static_cast<double>(c.fused_bytes))
                                      : "-",
                    std::to_string(p.groups), std::to_string(p.tiled_groups)});
  }
  return s + format_table(rows, "rlrrrrr");
}

}  // namespace solar::report
