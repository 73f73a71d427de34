// The Device data model: names of precisions, units and levels; figure paths; overrides; JSON.
// Loading files is in device_file.cpp, the built-in registry in registry.cpp.
#include "solar/hw/device.h"

#include <array>
#include <cctype>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "hw_util.h"
#include "solar/util/error.h"
#include "solar/util/text.h"

namespace solar::hw {
namespace {

constexpr std::string_view kCapacityKey = "capacity_bytes";
constexpr std::string_view kBandwidthKey = "bandwidth_bytes_per_s";

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Calls f(path, slot) for every figure slot of `d`, present or not, in canonical order. `D` is
// Device or const Device, so one walk serves readers and writers.
template <class D, class F>
void for_each_slot(D& d, F&& f) {
  for (ComputeUnit u : kAllComputeUnits) {
    for (Precision p : kAllPrecisions) {
      f("peak_flops_per_s." + std::string(compute_unit_name(u)) + "." +
            std::string(precision_name(p)),
        d.peak(u, p));
    }
  }
  for (MemoryLevel l : kAllMemoryLevels) {
    const std::string prefix = "memory." + std::string(memory_level_name(l)) + ".";
    f(prefix + std::string(kCapacityKey), d.level(l).capacity_bytes);
    f(prefix + std::string(kBandwidthKey), d.level(l).bandwidth_bytes_per_s);
  }
  for (Link l : kAllLinks) {
    f("interconnect." + std::string(link_name(l)) + "." + std::string(kBandwidthKey),
      d.link(l).bandwidth_bytes_per_s);
  }
  f(std::string("compute_units"), d.compute_units);
  f(std::string("clock_hz"), d.clock_hz);
  f(std::string("min_kernel_s"), d.min_kernel_s);
}

// Short forms of the memory keys: `dram_bandwidth_bytes_per_s` -> `memory.DRAM.bandwidth_...`.
std::vector<std::pair<std::string, std::string>> memory_short_forms() {
  std::vector<std::pair<std::string, std::string>> forms;
  for (MemoryLevel l : kAllMemoryLevels) {
    const std::string name(memory_level_name(l));
    for (std::string_view field : {kCapacityKey, kBandwidthKey}) {
      forms.emplace_back(lower(name) + "_" + std::string(field),
                         "memory." + name + "." + std::string(field));
    }
  }
  return forms;
}

std::string canonical_key(std::string_view key) {
  for (const auto& [short_form, path] : memory_short_forms()) {
    if (key == short_form) return path;
  }
  return std::string(key);
}

// The slot at `path`, or nullptr.
std::optional<Figure>* find_slot(Device& d, const std::string& path) {
  std::optional<Figure>* found = nullptr;
  for_each_slot(d, [&](const std::string& p, std::optional<Figure>& slot) {
    if (p == path) found = &slot;
  });
  return found;
}

// "{a,b,c}" of the names of `all`.
template <class Enum, size_t N>
std::string brace_list(const std::array<Enum, N>& all, std::string_view (*to_name)(Enum)) {
  std::vector<std::string> names;
  for (Enum v : all) names.emplace_back(to_name(v));
  return "{" + join(names, ",") + "}";
}

[[noreturn]] void throw_unknown_key(std::string_view key) {
  throw UserError("--set: unknown key '" + std::string(key) + "'" +
                  did_you_mean(key, override_keys(), Suggest::Loose) +
                  "; valid: peak_flops_per_s." + brace_list(kAllComputeUnits, compute_unit_name) +
                  "." + brace_list(kAllPrecisions, precision_name) + ", memory." +
                  brace_list(kAllMemoryLevels, memory_level_name) + ".{" +
                  std::string(kCapacityKey) + "," + std::string(kBandwidthKey) +
                  "} (short form: dram_bandwidth_bytes_per_s etc.), interconnect." +
                  brace_list(kAllLinks, link_name) + "." + std::string(kBandwidthKey) +
                  ", compute_units, clock_hz, min_kernel_s");
}

// A memory level's bandwidth needs the level to exist; compute_units is a whole number.
void check_override(const Device& d, const std::string& path, double value) {
  for (MemoryLevel l : kAllMemoryLevels) {
    const std::string prefix = "memory." + std::string(memory_level_name(l)) + ".";
    if (path == prefix + std::string(kBandwidthKey) && !d.level(l).exists()) {
      throw UserError("--set " + path + ": " + d.name + " has no " +
                      std::string(memory_level_name(l)) + " level; set " + prefix +
                      std::string(kCapacityKey) + " first");
    }
  }
  if (path == "compute_units" && !detail::is_count(value)) {
    throw UserError("--set compute_units: must be a whole number");
  }
}

nlohmann::json rates_to_json(const RateTable& rates) {
  nlohmann::json out = nlohmann::json::object();
  for (Precision p : kAllPrecisions) {
    if (const auto& f = rates[static_cast<size_t>(p)]) {
      out[std::string(precision_name(p))] = f->value;
    }
  }
  return out;
}

nlohmann::json memory_to_json(const Device& d) {
  nlohmann::json levels = nlohmann::json::array();
  for (MemoryLevel l : kAllMemoryLevels) {
    const MemorySpec& m = d.level(l);
    if (!m.exists()) continue;
    nlohmann::json level = {{"level", memory_level_name(l)},
                            {std::string(kCapacityKey), m.capacity_bytes->value}};
    if (m.bandwidth_bytes_per_s) level[std::string(kBandwidthKey)] = m.bandwidth_bytes_per_s->value;
    levels.push_back(std::move(level));
  }
  return levels;
}

nlohmann::json interconnect_to_json(const Device& d) {
  nlohmann::json links = nlohmann::json::object();
  for (Link l : kAllLinks) {
    const LinkSpec& spec = d.link(l);
    if (!spec.exists()) continue;
    nlohmann::json& j = links[std::string(link_name(l))];
    j = {{"link", spec.link},
         {std::string(kBandwidthKey), spec.bandwidth_bytes_per_s->value},
         {"per_direction_bytes_per_s", spec.per_direction_bytes_per_s()}};
    if (!spec.in_network_reduction.empty()) j["in_network_reduction"] = spec.in_network_reduction;
  }
  return links;
}

template <class Enum, size_t N>
std::optional<Enum> find_by_name(const std::array<Enum, N>& all, std::string_view (*to_name)(Enum),
                                 std::string_view name) {
  for (Enum v : all) {
    if (to_name(v) == name) return v;
  }
  return std::nullopt;
}

}  // namespace

std::string_view precision_name(Precision p) {
  switch (p) {
#define SOLAR_X(e, s) \
  case Precision::e:  \
    return s;
    SOLAR_PRECISIONS(SOLAR_X)
#undef SOLAR_X
  }
  internal_error(__FILE__, __LINE__, "bad Precision value");
}

std::string_view compute_unit_name(ComputeUnit u) {
  switch (u) {
#define SOLAR_X(e, s)  \
  case ComputeUnit::e: \
    return s;
    SOLAR_COMPUTE_UNITS(SOLAR_X)
#undef SOLAR_X
  }
  internal_error(__FILE__, __LINE__, "bad ComputeUnit value");
}

std::string_view memory_level_name(MemoryLevel l) {
  switch (l) {
#define SOLAR_X(e, s)  \
  case MemoryLevel::e: \
    return s;
    SOLAR_MEMORY_LEVELS(SOLAR_X)
#undef SOLAR_X
  }
  internal_error(__FILE__, __LINE__, "bad MemoryLevel value");
}

std::string_view link_name(Link l) {
  switch (l) {
#define SOLAR_X(e, s) \
  case Link::e:       \
    return s;
    SOLAR_LINKS(SOLAR_X)
#undef SOLAR_X
  }
  internal_error(__FILE__, __LINE__, "bad Link value");
}

std::optional<Link> link_from_name(std::string_view name) {
  return find_by_name(kAllLinks, link_name, name);
}

double LinkSpec::per_direction_bytes_per_s() const {
  SOLAR_CHECK(bandwidth_bytes_per_s.has_value(), "per_direction_bytes_per_s of a missing link");
  return bandwidth_bytes_per_s->value / 2;
}

std::optional<Precision> precision_from_name(std::string_view name) {
  return find_by_name(kAllPrecisions, precision_name, name);
}

std::optional<ComputeUnit> compute_unit_from_name(std::string_view name) {
  return find_by_name(kAllComputeUnits, compute_unit_name, name);
}

std::optional<MemoryLevel> memory_level_from_name(std::string_view name) {
  return find_by_name(kAllMemoryLevels, memory_level_name, name);
}

Device attainable_device(const Device& d) {
  SOLAR_CHECK(d.attainable.has_value(), d.name + " has no attainable block");
  Device out = d;
  const Attainable& a = *d.attainable;
  out.attainable.reset();
  // A datasheet figure lowered below the measurement (--set) stays: the smaller of the two.
  const auto replace = [](std::optional<Figure>& slot, const std::optional<Figure>& measured) {
    if (measured && (!slot || measured->value < slot->value)) slot = measured;
  };
  replace(out.level(MemoryLevel::Dram).bandwidth_bytes_per_s, a.dram_bandwidth_bytes_per_s);
  for (ComputeUnit u : kAllComputeUnits) {
    for (Precision p : kAllPrecisions) replace(out.peak(u, p), a.peak(u, p));
  }
  return out;
}

double Device::dram_bandwidth_bytes_per_s() const {
  const auto& bw = level(MemoryLevel::Dram).bandwidth_bytes_per_s;
  SOLAR_CHECK(bw.has_value(), "device " + name + " has no DRAM bandwidth");
  return bw->value;
}

std::vector<FigureEntry> list_figures(const Device& d) {
  std::vector<FigureEntry> out;
  for_each_slot(d, [&](const std::string& path, const std::optional<Figure>& slot) {
    if (slot) out.push_back({path, *slot});
  });
  return out;
}

const std::vector<std::string>& override_keys() {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> out;
    Device none;
    for_each_slot(none,
                  [&](const std::string& path, std::optional<Figure>&) { out.push_back(path); });
    for (const auto& [short_form, path] : memory_short_forms()) out.push_back(short_form);
    return out;
  }();
  return keys;
}

void apply_override(Device& d, std::string_view assignment) {
  const size_t eq = assignment.find('=');
  if (eq == std::string_view::npos) {
    throw UserError("--set '" + std::string(assignment) +
                    "': expected KEY=VALUE, e.g. dram_bandwidth_bytes_per_s=4e12");
  }
  const std::string_view key = assignment.substr(0, eq);
  const std::string_view text = assignment.substr(eq + 1);
  const std::string path = canonical_key(key);
  std::optional<Figure>* slot = find_slot(d, path);
  if (slot == nullptr) throw_unknown_key(key);
  const std::optional<double> value = detail::parse_positive_number(text);
  if (!value) {
    throw UserError("--set " + std::string(key) + ": '" + std::string(text) +
                    "' is not a positive finite number (write e.g. 4e12)");
  }
  check_override(d, path, *value);
  *slot = Figure{*value, std::string(kOverrideSource)};
}

nlohmann::json device_to_json(const Device& d) {
  nlohmann::json peak = nlohmann::json::object();
  for (ComputeUnit u : kAllComputeUnits) {
    nlohmann::json rates = rates_to_json(d.peak_flops_per_s[static_cast<size_t>(u)]);
    if (!rates.empty()) peak[std::string(compute_unit_name(u))] = std::move(rates);
  }
  nlohmann::json sources = nlohmann::json::object();
  for (const FigureEntry& entry : list_figures(d)) sources[entry.path] = entry.figure.source;
  nlohmann::json out = {{"name", d.name},
                        {"vendor", d.vendor},
                        {"description", d.description},
                        {"peak_flops_per_s", std::move(peak)},
                        {"memory", memory_to_json(d)},
                        {"interconnect", interconnect_to_json(d)},
                        {"sources", std::move(sources)}};
  if (d.compute_units) out["compute_units"] = static_cast<int64_t>(d.compute_units->value);
  if (d.clock_hz) out["clock_hz"] = d.clock_hz->value;
  if (d.min_kernel_s) out["min_kernel_s"] = d.min_kernel_s->value;
  if (d.attainable) {
    nlohmann::json measured = nlohmann::json::object();
    for (ComputeUnit u : kAllComputeUnits) {
      nlohmann::json rates = rates_to_json(d.attainable->peak_flops_per_s[static_cast<size_t>(u)]);
      if (!rates.empty()) measured[std::string(compute_unit_name(u))] = std::move(rates);
    }
    nlohmann::json a = {{"peak_flops_per_s", std::move(measured)}};
    if (d.attainable->dram_bandwidth_bytes_per_s) {
      a["dram_bandwidth_bytes_per_s"] = d.attainable->dram_bandwidth_bytes_per_s->value;
    }
    out["attainable"] = std::move(a);
  }
  return out;
}

}  // namespace solar::hw
