// Multi-device what-if reports: compare and provision (include/solar/report/whatif.h).
#include "solar/report/whatif.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "format.h"
#include "json_parts.h"
#include "solar/report/report.h"
#include "solar/util/error.h"

namespace solar::report {
namespace {

using namespace detail;

// Why no scaling of the rates meets the target: the kernel floors alone reach it.
std::string unreachable_reason(const sol::Provision& p) {
  return "the kernel floor alone, " + std::to_string(p.kernels) + " kernel" +
         (p.kernels == 1 ? "" : "s") + " of " +
         format_seconds(p.floor_s / static_cast<double>(p.kernels)) + " = " +
         format_seconds(p.floor_s) + ", is not below the target";
}

nlohmann::json provision_json(const sol::Provision& p) {
  nlohmann::json j = {
      {"time_s", p.time_s},
      {"factor", p.reachable() ? nlohmann::json(p.factor) : nlohmann::json(nullptr)},
      {"compute_factor", p.compute_factor},
      {"bandwidth_factor", p.bandwidth_factor},
      {"effective_flops_per_s", p.effective_flops_per_s},
      {"meets_target", p.meets()}};
  if (p.floor_s > 0) j["kernel_floor"] = {{"floor_s", p.floor_s}, {"kernels", p.kernels}};
  if (!p.reachable()) j["unreachable"] = unreachable_reason(p);
  return j;
}

nlohmann::json device_json(const sol::DeviceResult& d) {
  nlohmann::json j = {{"name", d.device}};
  if (!d.analysis) {
    j["error"] = d.error;
    return j;
  }
  j["sol"] = sol_json(*d.analysis);
  j["bytes"] = bytes_json(*d.analysis);
  if (!d.analysis->cache_skipped.empty()) j["cache_error"] = d.analysis->cache_skipped;
  j["precision_fallback_nodes"] = d.fallback_nodes;
  if (!d.provision.empty()) {
    nlohmann::json p = nlohmann::json::object();
    for (const sol::Provision& x : d.provision) {
      p[std::string(sol::fidelity_key(x.fidelity))] = provision_json(x);
    }
    j["provision"] = std::move(p);
  }
  return j;
}

std::string header(const MultiDeviceReport& r, const std::string& title) {
  const sol::DeviceComparison& c = r.comparison;
  std::string s = title + "\n  precision policy: " + c.policy +
                  "\n  cache state: " + std::string(sol::cache_state_name(c.cache_state)) + "\n  " +
                  verification_line(r.verification) + "\n";
  s += "  work: " + format_count(static_cast<double>(c.totals.macs), "MAC") + ", " +
       format_count(static_cast<double>(c.totals.flops()), "FLOP") + " (" +
       std::string(kFlopsConvention) + ")\n  DRAM bytes: ";
  std::string sep;
  for (const auto& [f, bytes] : c.bytes) {
    s += sep + std::string(sol::fidelity_name(f)) + " " + format_bytes(static_cast<double>(bytes));
    sep = ", ";
  }
  for (const sol::Fidelity f : c.fidelities) {
    if (!sol::device_independent_bytes(f)) {
      s += sep + std::string(sol::fidelity_name(f)) + " per device (its on-chip capacity)";
    }
  }
  return s + "\n";
}

// Devices that could not be analysed, and devices that used fallback rates.
std::string device_notes(const MultiDeviceReport& r) {
  const sol::DeviceComparison& c = r.comparison;
  std::string s;
  for (const sol::DeviceResult& d : c.devices) {
    if (!d.analysis) {
      s += "  " + d.device + ": not analysed: " + d.error + "\n";
      continue;
    }
    if (!d.analysis->cache_skipped.empty()) {
      s += "  " + d.device + ": cache not analysed: " + d.analysis->cache_skipped + "\n";
    }
    if (d.analysis->kernel_floor && d.analysis->kernel_floor_s <= 0) {
      s += "  " + d.device +
           ": no kernel floor (its file has no min_kernel_s): its times may be "
           "below one kernel's, the others' not\n";
    }
    if (d.fallback_nodes > 0) {
      s += "  " + d.device + ": " + std::to_string(d.fallback_nodes) +
           " node(s) at a fallback precision (solar sol --hw " + d.device + " lists them)\n";
    }
  }
  return s.empty() ? s : "\nNotes:\n" + s;
}

}  // namespace

nlohmann::json multi_device_to_json(const MultiDeviceReport& r) {
  const sol::DeviceComparison& c = r.comparison;
  nlohmann::json bytes = nlohmann::json::object();
  for (const auto& [f, n] : c.bytes) bytes[std::string(sol::fidelity_key(f))] = n;
  nlohmann::json devices = nlohmann::json::array();
  for (const sol::DeviceResult& d : c.devices) devices.push_back(device_json(d));
  nlohmann::json j = {
      {"schema_version", kSchemaVersion},
      {"source", source_name(c.source)},
      {"sizes", sizes_json(c.sizes)},
      {"precision_policy", c.policy},
      {"cache_state", sol::cache_state_name(c.cache_state)},
      {"flops_convention", kFlopsConvention},
      {"verification", verification_to_json(r.verification)},
      {"totals", totals_json(c.totals)},
      {"bytes", bytes},
      {"devices", std::move(devices)},
  };
  if (c.latency_s) {
    const double l = *c.latency_s;
    nlohmann::json bandwidth = nlohmann::json::object();
    for (const auto& [f, n] : c.bytes) {
      bandwidth[std::string(sol::fidelity_key(f))] = static_cast<double>(n) / l;
    }
    j["latency_s"] = l;
    j["required"] = {{"flops_per_s", static_cast<double>(c.totals.flops()) / l},
                     {"bandwidth_bytes_per_s", std::move(bandwidth)}};
  }
  return j;
}

std::string render_compare(const MultiDeviceReport& r) {
  const sol::DeviceComparison& c = r.comparison;
  std::vector<std::string> head = {"device"};
  std::string align = "l";
  for (const sol::Fidelity f : c.fidelities) {
    head.push_back(std::string(sol::fidelity_name(f)));
    head.push_back("bound");
    align += "rl";
  }
  head.push_back("fused/unfused");
  align += "r";
  std::vector<std::vector<std::string>> rows = {head};
  for (const sol::DeviceResult& d : c.devices) {
    std::vector<std::string> row = {d.device};
    if (!d.analysis) {
      row.resize(head.size(), "n/a");
    } else {
      for (const sol::Fidelity f : c.fidelities) {
        const auto& results = d.analysis->results;
        const auto it = std::find_if(results.begin(), results.end(),
                                     [&](const sol::FidelityResult& x) { return x.fidelity == f; });
        row.push_back(it == results.end() ? "n/a" : format_seconds(it->time_s));
        row.push_back(it == results.end() ? "n/a"
                                          : std::string(sol::bottleneck_name(it->bottleneck)));
      }
      const nlohmann::json sol = sol_json(*d.analysis);
      const bool ratio = sol.contains("fused_over_unfused") && !sol["fused_over_unfused"].is_null();
      row.push_back(ratio ? format_number(sol["fused_over_unfused"].get<double>()) : "-");
    }
    rows.push_back(std::move(row));
  }
  return header(r, "SOL of " + source_name(c.source) + " across devices") + "\n" +
         format_table(rows, align) + device_notes(r);
}

std::string render_provision(const MultiDeviceReport& r) {
  const sol::DeviceComparison& c = r.comparison;
  SOLAR_CHECK(c.latency_s.has_value(), "render_provision needs a latency target");
  const double l = *c.latency_s;
  std::string s =
      header(r, "What " + source_name(c.source) + " needs to run in " + format_seconds(l));
  s += "  needs: " + format_rate(static_cast<double>(c.totals.flops()) / l) + " (FLOP / latency)";
  for (const auto& [f, bytes] : c.bytes) {
    s += ", " + std::string(sol::fidelity_name(f)) + " " +
         format_bandwidth(static_cast<double>(bytes) / l);
  }
  s += " DRAM\n  factor = SOL / latency: > 1, every rate and the bandwidth must grow that much;"
       "\n  compute x, bandwidth x: each alone must grow at least that much "
       "(docs/fidelities.md)\n\n";
  std::vector<std::vector<std::string>> rows = {
      {"device", "fidelity", "SOL", "factor", "compute x", "bandwidth x", "verdict"}};
  std::vector<std::string> unreachable;  // one line each, after the table
  for (const sol::DeviceResult& d : c.devices) {
    if (!d.analysis) {
      rows.push_back({d.device, "-", "n/a", "n/a", "n/a", "n/a", "not analysed"});
      continue;
    }
    for (const sol::Provision& p : d.provision) {
      rows.push_back({d.device, std::string(sol::fidelity_name(p.fidelity)),
                      format_seconds(p.time_s), p.reachable() ? format_number(p.factor) : "inf",
                      format_number(p.compute_factor), format_number(p.bandwidth_factor),
                      p.meets() ? "meets" : (p.reachable() ? "short" : "unreachable")});
      if (!p.reachable()) {
        unreachable.push_back(d.device + " " + std::string(sol::fidelity_name(p.fidelity)) + ": " +
                              unreachable_reason(p));
      }
    }
  }
  s += format_table(rows, "llrrrrl");
  for (const std::string& u : unreachable) s += "  unreachable: " + u + "\n";
  return s + device_notes(r);
}

}  // namespace solar::report
