// Number formatting and tables for the renderers (src/report/format.h).
#include "format.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <iterator>
#include <string_view>
#include <utility>

namespace solar::report::detail {
namespace {

// `v` divided by the largest unit whose scale is <= |v| (the first unit when none is).
std::string scaled(double v, std::initializer_list<std::pair<double, std::string_view>> units) {
  const std::pair<double, std::string_view>* chosen = units.begin();
  for (const auto& u : units) {
    if (std::abs(v) >= u.first) chosen = &u;
  }
  std::string s = format_number(v / chosen->first);
  if (!chosen->second.empty()) s += " " + std::string(chosen->second);
  return s;
}

}  // namespace

std::string format_number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

std::string format_seconds(double s) {
  return scaled(s, {{1e-12, "ps"}, {1e-9, "ns"}, {1e-6, "us"}, {1e-3, "ms"}, {1.0, "s"}});
}

std::string format_bytes(double b) {
  return scaled(b, {{1.0, "B"}, {1e3, "kB"}, {1e6, "MB"}, {1e9, "GB"}, {1e12, "TB"}});
}

std::string format_bandwidth(double bytes_per_s) { return format_bytes(bytes_per_s) + "/s"; }

std::string format_rate(double flops_per_s) {
  return scaled(flops_per_s, {{1.0, "FLOP/s"},
                              {1e3, "kFLOP/s"},
                              {1e6, "MFLOP/s"},
                              {1e9, "GFLOP/s"},
                              {1e12, "TFLOP/s"},
                              {1e15, "PFLOP/s"}});
}

std::string format_count(double n, std::string_view unit) {
  static constexpr std::pair<double, std::string_view> kPrefixes[] = {
      {1.0, ""}, {1e3, "k"}, {1e6, "M"}, {1e9, "G"}, {1e12, "T"}, {1e15, "P"}};
  const auto* chosen = std::begin(kPrefixes);
  for (const auto& p : kPrefixes) {
    if (std::abs(n) >= p.first) chosen = &p;
  }
  const std::string suffix = std::string(chosen->second) + std::string(unit);
  return format_number(n / chosen->first) + (suffix.empty() ? "" : " " + suffix);
}

std::string format_table(const std::vector<std::vector<std::string>>& rows,
                         std::string_view align) {
  std::vector<size_t> width;
  for (const auto& row : rows) {
    width.resize(std::max(width.size(), row.size()), 0);
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      const std::string pad(width[c] - row[c].size(), ' ');
      line += c < align.size() && align[c] == 'r' ? pad + row[c] : row[c] + pad;
      if (c + 1 < row.size()) line += "  ";
    }
    out += line.substr(0, line.find_last_not_of(' ') + 1) + '\n';
  }
  return out;
}

std::string html_escape(const std::string& s) {
  std::string out;
  for (const char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

}  // namespace solar::report::detail
