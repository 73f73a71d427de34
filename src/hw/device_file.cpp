// Reading and validating a device file (docs/devices.md). Every problem is a UserError that names
// `file:line:col`; nothing is defaulted or guessed.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "hw_util.h"
#include "solar/hw/device.h"
#include "solar/util/error.h"
#include "solar/util/text.h"

namespace solar::hw {
namespace {

using Keys = std::vector<std::string>;

const Keys kTopKeys = {"name",         "vendor",       "description",   "peak_flops_per_s",
                       "memory",       "interconnect", "compute_units", "clock_hz",
                       "min_kernel_s", "attainable"};
const Keys kAttainableKeys = {"dram_bandwidth_bytes_per_s", "peak_flops_per_s"};
const Keys kLinkKeys = {"link", "bandwidth_bytes_per_s", "in_network_reduction"};
const Keys kFigureKeys = {"value", "source"};
const Keys kLevelKeys = {"level", "capacity_bytes", "bandwidth_bytes_per_s"};

Keys unit_keys() {
  Keys keys;
  for (ComputeUnit u : kAllComputeUnits) keys.emplace_back(compute_unit_name(u));
  return keys;
}

Keys precision_keys() {
  Keys keys;
  for (Precision p : kAllPrecisions) keys.emplace_back(precision_name(p));
  return keys;
}

Keys link_keys() {
  Keys keys;
  for (Link l : kAllLinks) keys.emplace_back(link_name(l));
  return keys;
}

Keys level_names() {
  Keys keys;
  for (MemoryLevel l : kAllMemoryLevels) keys.emplace_back(memory_level_name(l));
  return keys;
}

// A figure in a message: 4.28e+12.
std::string shown(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", v);
  return text;
}

// "in memory[0]", or "at top level" for the empty path.
std::string in(const std::string& where) { return where.empty() ? "at top level" : "in " + where; }

std::string join_path(const std::string& where, const std::string& key) {
  return where.empty() ? key : where + "." + key;
}

bool is_null_mark(const YAML::Mark& m) { return m.line < 0 || m.column < 0; }

// A map entry: the key node (for its position) and the value node.
struct Entry {
  YAML::Node key;
  YAML::Node value;
};

std::optional<Entry> find_entry(const YAML::Node& map, const std::string& key) {
  for (auto it = map.begin(); it != map.end(); ++it) {
    if (it->first.IsScalar() && it->first.Scalar() == key) return Entry{it->first, it->second};
  }
  return std::nullopt;
}

// Where to point at an entry's value: the value itself, or its key when the value is empty
// (yaml-cpp gives empty values the position of whatever follows).
YAML::Mark value_mark(const Entry& e) {
  return e.value.IsNull() || is_null_mark(e.value.Mark()) ? e.key.Mark() : e.value.Mark();
}

class FileReader {
 public:
  explicit FileReader(std::string file) : file_(std::move(file)) {}

  Device read(const YAML::Node& root) const {
    if (!root.IsMap()) {
      fail(root.Mark(), "a device file is a mapping with keys " + join(kTopKeys));
    }
    check_keys(root, "", kTopKeys);
    Device d;
    d.name = read_name(root);
    d.vendor = read_text(require(root, "", "vendor"), "vendor");
    if (auto e = find_entry(root, "description")) d.description = read_text(*e, "description");
    read_peak(require(root, "", "peak_flops_per_s"), d);
    read_memory(require(root, "", "memory"), d);
    if (auto e = find_entry(root, "interconnect")) read_interconnect(*e, d);
    if (auto e = find_entry(root, "compute_units")) d.compute_units = read_count(*e);
    if (auto e = find_entry(root, "clock_hz")) d.clock_hz = read_figure(*e, "clock_hz");
    if (auto e = find_entry(root, "min_kernel_s")) d.min_kernel_s = read_figure(*e, "min_kernel_s");
    if (auto e = find_entry(root, "attainable")) read_attainable(*e, d);
    return d;
  }

  [[noreturn]] void fail(const YAML::Mark& at, const std::string& message) const {
    const std::string location = is_null_mark(at) ? file_
                                                  : file_ + ":" + std::to_string(at.line + 1) +
                                                        ":" + std::to_string(at.column + 1);
    throw UserError(location + ": error: " + message);
  }

 private:
  // `map` must be a mapping whose keys are all in `valid`, each at most once.
  void check_keys(const YAML::Node& map, const std::string& where, const Keys& valid) const {
    std::vector<std::string> seen;
    for (auto it = map.begin(); it != map.end(); ++it) {
      const std::string key = it->first.IsScalar() ? it->first.Scalar() : "";
      if (std::find(valid.begin(), valid.end(), key) == valid.end()) {
        fail(it->first.Mark(),
             "unknown key '" + key + "' " + in(where) + "; valid: " + join(valid));
      }
      if (std::find(seen.begin(), seen.end(), key) != seen.end()) {
        fail(it->first.Mark(), "duplicate key '" + key + "' " + in(where));
      }
      seen.push_back(key);
    }
  }

  Entry require(const YAML::Node& map, const std::string& where, const std::string& key) const {
    std::optional<Entry> e = find_entry(map, key);
    if (!e) fail(map.Mark(), "missing key '" + key + "' " + in(where));
    return *e;
  }

  // A mapping checked against `valid`; `what` describes it for the error.
  void require_map(const Entry& e, const std::string& path, const Keys& valid,
                   const std::string& what) const {
    if (!e.value.IsMap()) fail(value_mark(e), path + " must be " + what);
    check_keys(e.value, path, valid);
  }

  // One line of text, not empty.
  std::string read_text(const Entry& e, const std::string& path) const {
    const std::string text = e.value.IsScalar() ? e.value.Scalar() : "";
    if (text.find_first_not_of(" \t") == std::string::npos) {
      fail(value_mark(e), path + " must be a non-empty string");
    }
    if (text.find('\n') != std::string::npos) fail(value_mark(e), path + " must be one line");
    return text;
  }

  std::string read_name(const YAML::Node& root) const {
    const Entry e = require(root, "", "name");
    std::string name = read_text(e, "name");
    for (char c : name) {
      if (!std::isalnum(static_cast<unsigned char>(c)) && std::strchr("-_.+", c) == nullptr) {
        fail(value_mark(e), "name '" + name + "' must use only letters, digits and - _ . +");
      }
    }
    return name;
  }

  // `{value: NUMBER, source: TEXT}`.
  Figure read_figure(const Entry& e, const std::string& path) const {
    require_map(e, path, kFigureKeys, "a mapping {value: NUMBER, source: TEXT}");
    const Entry value = require(e.value, path, "value");
    // A quoted scalar has the tag "!": a number must be written as a plain number.
    const bool plain = value.value.IsScalar() && value.value.Tag() != "!";
    const std::optional<double> number =
        plain ? detail::parse_positive_number(value.value.Scalar()) : std::nullopt;
    if (!number) {
      const std::string shown = value.value.IsScalar() ? "'" + value.value.Scalar() + "'" : "that";
      fail(value_mark(value),
           path + ".value must be a positive finite number (e.g. 989.5e12), not " + shown);
    }
    return Figure{*number, read_text(require(e.value, path, "source"), path + ".source")};
  }

  Figure read_count(const Entry& e) const {
    Figure f = read_figure(e, "compute_units");
    if (!detail::is_count(f.value))
      fail(value_mark(e), "compute_units.value must be a whole number");
    return f;
  }

  void read_peak(const Entry& e, Device& d) const {
    read_rates(e, "peak_flops_per_s", d.peak_flops_per_s);
  }

  // `{tensor: {bf16: FIGURE, ...}, vector: {...}}` at `path`, into `table`; at least one rate.
  // `check(u, p, figure, mark)` sees each rate read.
  template <class Check = std::nullptr_t>
  void read_rates(const Entry& e, const std::string& path,
                  std::array<RateTable, kComputeUnitCount>& table, Check check = nullptr) const {
    require_map(e, path, unit_keys(), "a mapping with keys " + join(unit_keys()));
    bool any = false;
    for (ComputeUnit u : kAllComputeUnits) {
      const std::string unit(compute_unit_name(u));
      const std::optional<Entry> rates = find_entry(e.value, unit);
      if (!rates) continue;
      const std::string unit_path = path + "." + unit;
      require_map(*rates, unit_path, precision_keys(),
                  "a mapping from precision (" + join(precision_keys()) + ") to a figure");
      for (Precision p : kAllPrecisions) {
        const std::string prec(precision_name(p));
        if (auto r = find_entry(rates->value, prec)) {
          const Figure f = read_figure(*r, join_path(unit_path, prec));
          if constexpr (!std::is_same_v<Check, std::nullptr_t>) check(u, p, f, value_mark(*r));
          table[static_cast<size_t>(u)][static_cast<size_t>(p)] = f;
          any = true;
        }
      }
    }
    if (!any) fail(value_mark(e), path + " lists no rates");
  }

  // `attainable: {dram_bandwidth_bytes_per_s: FIGURE, peak_flops_per_s: {...}}`, after the
  // datasheet figures: each at most the datasheet's figure for the same thing, which must exist.
  void read_attainable(const Entry& e, Device& d) const {
    require_map(e, "attainable", kAttainableKeys,
                "a mapping with keys " + join(kAttainableKeys) + " (measured ceilings)");
    Attainable a;
    if (auto bw = find_entry(e.value, "dram_bandwidth_bytes_per_s")) {
      const std::string path = "attainable.dram_bandwidth_bytes_per_s";
      const Figure f = read_figure(*bw, path);
      check_ceiling(f, d.dram_bandwidth_bytes_per_s(), path, "memory DRAM bandwidth_bytes_per_s",
                    value_mark(*bw));
      a.dram_bandwidth_bytes_per_s = f;
    }
    if (auto peak = find_entry(e.value, "peak_flops_per_s")) {
      read_rates(*peak, "attainable.peak_flops_per_s", a.peak_flops_per_s,
                 [&](ComputeUnit u, Precision p, const Figure& f, const YAML::Mark& at) {
                   const std::string key =
                       std::string(compute_unit_name(u)) + "." + std::string(precision_name(p));
                   if (!d.peak(u, p)) {
                     fail(at, "attainable.peak_flops_per_s." + key +
                                  ": the datasheet has no peak_flops_per_s." + key +
                                  " to measure against");
                   }
                   check_ceiling(f, d.peak(u, p)->value, "attainable.peak_flops_per_s." + key,
                                 "peak_flops_per_s." + key, at);
                 });
    }
    if (!a.dram_bandwidth_bytes_per_s &&
        std::all_of(a.peak_flops_per_s.begin(), a.peak_flops_per_s.end(), [](const RateTable& t) {
          return std::none_of(t.begin(), t.end(), [](const auto& f) { return f.has_value(); });
        })) {
      fail(value_mark(e), "attainable lists no figures");
    }
    d.attainable = std::move(a);
  }

  // A measured ceiling above the datasheet's figure means the datasheet is not a bound: refused.
  void check_ceiling(const Figure& measured, double datasheet, const std::string& path,
                     const std::string& datasheet_path, const YAML::Mark& at) const {
    if (measured.value <= datasheet) return;
    fail(at, path + " (" + shown(measured.value) + ") is above the datasheet's " + datasheet_path +
                 " (" + shown(datasheet) + "): a measured ceiling is at most the peak");
  }

  // `interconnect: {scale_up: {link: TEXT, bandwidth_bytes_per_s: FIGURE}, host: {...}}`.
  void read_interconnect(const Entry& e, Device& d) const {
    require_map(e, "interconnect", link_keys(), "a mapping with keys " + join(link_keys()));
    for (Link l : kAllLinks) {
      const std::string key(link_name(l));
      const std::optional<Entry> link = find_entry(e.value, key);
      if (!link) continue;
      const std::string path = "interconnect." + key;
      require_map(*link, path, kLinkKeys,
                  "a mapping {link: TEXT, bandwidth_bytes_per_s: {value: NUMBER, source: TEXT}}");
      LinkSpec& spec = d.link(l);
      spec.link = read_text(require(link->value, path, "link"), path + ".link");
      spec.bandwidth_bytes_per_s = read_figure(require(link->value, path, "bandwidth_bytes_per_s"),
                                               path + ".bandwidth_bytes_per_s");
      // `in_network_reduction: SOURCE`: the switches reduce in the network, as SOURCE says.
      if (const std::optional<Entry> r = find_entry(link->value, "in_network_reduction")) {
        spec.in_network_reduction = read_text(*r, path + ".in_network_reduction");
      }
    }
  }

  void read_memory(const Entry& e, Device& d) const {
    if (!e.value.IsSequence() || e.value.size() == 0) {
      fail(value_mark(e),
           "memory must be a list of levels ({level: DRAM, capacity_bytes: ..., "
           "bandwidth_bytes_per_s: ...})");
    }
    for (size_t i = 0; i < e.value.size(); ++i) read_level(e.value[i], i, d);
    if (!d.level(MemoryLevel::Dram).exists()) fail(value_mark(e), "memory has no DRAM level");
  }

  void read_level(const YAML::Node& node, size_t index, Device& d) const {
    const std::string where = "memory[" + std::to_string(index) + "]";
    if (!node.IsMap())
      fail(node.Mark(), where + " must be a mapping with keys " + join(kLevelKeys));
    check_keys(node, where, kLevelKeys);
    const Entry level = require(node, where, "level");
    const std::string name = level.value.IsScalar() ? level.value.Scalar() : "";
    const std::optional<MemoryLevel> l = memory_level_from_name(name);
    if (!l) {
      fail(value_mark(level),
           where + ".level '" + name + "' is not a memory level; valid: " + join(level_names()));
    }
    MemorySpec& spec = d.level(*l);
    if (spec.exists()) fail(value_mark(level), "memory level " + name + " is listed twice");
    spec.capacity_bytes =
        read_figure(require(node, where, "capacity_bytes"), where + ".capacity_bytes");
    if (auto bw = find_entry(node, "bandwidth_bytes_per_s")) {
      spec.bandwidth_bytes_per_s = read_figure(*bw, where + ".bandwidth_bytes_per_s");
    } else if (*l == MemoryLevel::Dram) {
      fail(node.Mark(), "missing key 'bandwidth_bytes_per_s' in " + where + " (DRAM needs one)");
    }
  }

  std::string file_;
};

std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError("cannot read device file '" + path + "': " + std::strerror(errno));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw UserError("cannot read device file '" + path + "': " + std::strerror(errno));
  return text;
}

}  // namespace

Device load_device_file(const std::string& path) {
  const FileReader reader(path);
  YAML::Node root;
  try {
    root = YAML::Load(read_text_file(path));
  } catch (const YAML::Exception& e) {
    reader.fail(e.mark, "invalid YAML: " + e.msg);
  }
  return reader.read(root);
}

}  // namespace solar::hw
