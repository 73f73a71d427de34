// The serving report (include/solar/report/serving.h).
#include "solar/report/serving.h"

#include <cstdint>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "format.h"
#include "json_parts.h"
#include "solar/einsum/graph.h"
#include "solar/report/report.h"
#include "solar/sol/serving.h"
#include "solar/util/error.h"

namespace solar::report {
namespace {

using namespace detail;

nlohmann::json opt(const std::optional<int64_t>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

// {"status", "mode", "detail"} of a step's verification object (null stays null).
nlohmann::json verification_summary(const nlohmann::json& v) {
  if (!v.is_object()) return nullptr;
  nlohmann::json out = nlohmann::json::object();
  for (const char* key : {"status", "mode", "detail"}) {
    out[key] = v.contains(key) ? v[key] : nlohmann::json(nullptr);
  }
  return out;
}

const nlohmann::json& verification_of(const ServingContext& c, size_t row) {
  static const nlohmann::json none = nullptr;
  return row < c.verification.size() ? c.verification[row] : none;
}

std::string status_line(const nlohmann::json& v) {
  if (!v.is_object()) return "verification unknown";
  const auto text = [&](const char* key) {
    return v.contains(key) && v[key].is_string() ? v[key].get<std::string>() : std::string();
  };
  std::string s = text("status");
  if (!text("mode").empty()) s += " (" + text("mode") + ")";
  if (!text("detail").empty()) s += ": " + text("detail");
  return s;
}

std::string bound_name(const sol::ServeFigures& f) {
  return f.interconnect_bound ? "interconnect" : std::string(sol::bottleneck_name(f.bottleneck));
}

// "2 of 8 experts (64 weights)" per distinct (slices, of) of a row's routed reads, joined by "; ".
std::string experts_text(const std::vector<RoutedRead>& reads) {
  std::map<std::pair<int64_t, int64_t>, int64_t> tensors;  // (slices, of) -> weights
  for (const RoutedRead& r : reads) ++tensors[{r.slices, r.of}];
  std::string s;
  for (const auto& [key, n] : tensors) {
    if (!s.empty()) s += "; ";
    s += std::to_string(key.first) + " of " + std::to_string(key.second) + " experts (" +
         std::to_string(n) + (n == 1 ? " weight)" : " weights)");
  }
  return s;
}

std::string batch_text(double b) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", b);
  return buf;
}

// A step's verification object from its JSON text; null for none.
nlohmann::json parse_verification(const std::string& text) {
  if (text.empty()) return nullptr;
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw UserError(std::string("the 'verification' section is not JSON: ") + e.what());
  }
}

}  // namespace

nlohmann::json serving_to_json(const sol::Serving& s, const ServingContext& c) {
  nlohmann::json rows = nlohmann::json::array();
  for (size_t i = 0; i < s.rows.size(); ++i) {
    const sol::ServeRow& r = s.rows[i];
    nlohmann::json figures = nlohmann::json::object();
    for (const sol::ServeFigures& f : r.figures) {
      nlohmann::json& x = figures[std::string(sol::fidelity_key(f.fidelity))];
      x = {
          {"step_s", f.step_s},
          {"tokens_per_s", f.step_s > 0 ? nlohmann::json(f.tokens_per_s) : nlohmann::json(nullptr)},
          {"compute_s", f.compute_s},
          {"memory_s", f.memory_s},
          {"bytes", f.bytes},
          {"bottleneck", bound_name(f)}};
      if (s.parallel) x["communication_s"] = f.comm_s;
    }
    nlohmann::json row = {{"batch", r.batch},
                          {"tokens", r.tokens},
                          {"fidelities", std::move(figures)},
                          {"verification", verification_summary(verification_of(c, i))}};
    if (s.parallel) {
      row["collectives"] = {{"count", r.collectives}, {"sent_bytes_per_device", r.sent_bytes}};
    }
    if (!c.routing.empty() && i < c.routed.size()) {
      nlohmann::json reads = nlohmann::json::array();
      for (const RoutedRead& rr : c.routed[i]) {
        reads.push_back({{"tensor", rr.tensor},
                         {"experts", rr.slices},
                         {"of", rr.of},
                         {"elements", rr.counted}});
      }
      row["routed_reads"] = std::move(reads);
    }
    rows.push_back(std::move(row));
  }
  nlohmann::json crossover = nlohmann::json::object();
  for (const sol::ServeCrossover& x : s.crossovers) {
    crossover[std::string(sol::fidelity_key(x.fidelity))] = {
        {"last_memory_bound_batch", opt(x.last_memory_bound)},
        {"first_compute_bound_batch", opt(x.first_compute_bound)},
        {"estimate_batch", x.estimate ? nlohmann::json(*x.estimate) : nlohmann::json(nullptr)}};
  }
  nlohmann::json parallel = nullptr;
  if (s.parallel) {
    const sol::ServeParallel& p = *s.parallel;
    parallel = {{"layout", sol::parallel_text(p.layout)},
                {"devices", p.layout.devices()},
                {"per_device", true},
                {"link",
                 {{"name", p.link},
                  {"per_direction_bytes_per_s", p.link_bytes_per_s},
                  {"in_network_reduction", p.in_network_reduction}}}};
  }
  nlohmann::json out = {
      {"schema_version", kSchemaVersion},
      {"kind", "serving"},
      {"parallel", std::move(parallel)},
      {"source", source_name(c.source)},
      {"hardware",
       {{"name", c.device}, {"dram_bandwidth_bytes_per_s", c.dram_bandwidth_bytes_per_s}}},
      {"precision_policy", c.policy},
      {"cache_state", sol::cache_state_name(c.cache_state)},
      {"phase", std::string(sol::serve_phase_name(s.phase))},
      {"context", s.context},
      {"rows", std::move(rows)},
      {"crossover", std::move(crossover)}};
  if (!c.routing.empty()) out["routing"] = c.routing;
  return out;
}

std::string render_serving(const sol::Serving& s, const ServingContext& c) {
  SOLAR_CHECK(!s.rows.empty(), "a serving summary without rows");
  const bool decode = s.phase == sol::ServePhase::Decode;
  std::string out = "Serving " + std::string(sol::serve_phase_name(s.phase)) + " of " +
                    source_name(c.source) + " on " + c.device + " (DRAM " +
                    format_bandwidth(c.dram_bandwidth_bytes_per_s) + "), context " +
                    std::to_string(s.context) + " tokens\n";
  if (!c.after_step_report) {
    out += "  precision policy: " + c.policy + "\n";
    out += "  cache state: " + std::string(sol::cache_state_name(c.cache_state)) + "\n";
  }
  if (!c.routing.empty()) {
    out += "  routing: " + c.routing +
           (c.routing == "concentrated"
                ? " (--routing: the k experts a top-k router picks, the fewest any routing reads)"
                : " (--routing: every routed index distinct, min(E, batch x k) experts)") +
           "; expert weights read, each at\n";
    for (size_t i = 0; i < s.rows.size() && i < c.routed.size(); ++i) {
      out +=
          "    batch " + std::to_string(s.rows[i].batch) + ": " + experts_text(c.routed[i]) + "\n";
    }
  }
  if (s.parallel) {
    const sol::ServeParallel& p = *s.parallel;
    out += "  parallel: " + sol::parallel_text(p.layout) + " on " +
           std::to_string(p.layout.devices()) + " x " + c.device + ", " +
           (p.link.empty() ? std::string("scale-up link") : p.link) + " at " +
           format_bandwidth(p.link_bytes_per_s) + " each way" +
           (p.in_network_reduction ? ", reducing in the network" : "") +
           "; every figure is per device (each holds 1/" + std::to_string(p.layout.tp) +
           " of the weights and of the KV cache and runs its shard of the step at once: the "
           "per-device step is what a token costs)\n";
  }
  if (decode) {
    out += "  decode: each step makes one token per sequence, attending to " +
           std::to_string(s.context) +
           " tokens; SOL/token = the step's SOL; tokens/s = batch / SOL\n";
  } else {
    out += "  prefill: each step reads batch x " + std::to_string(s.context) +
           " prompt tokens; SOL = time to the first token; tokens/s = batch x context / SOL\n";
  }
  for (size_t i = 0; i < s.rows.size() && !c.after_step_report; ++i) {
    out += "  batch " + std::to_string(s.rows[i].batch) + ": " +
           status_line(verification_of(c, i)) + "\n";
    if (i == 0 && s.rows.size() > 2) {
      // Later rows share one sentence: print the second, say how many there are.
      out += "  batch " + std::to_string(s.rows[1].batch) + ".." +
             std::to_string(s.rows.back().batch) + " (" + std::to_string(s.rows.size() - 1) +
             " steps): " + status_line(verification_of(c, 1)) + "\n";
      break;
    }
  }
  out += "\n";
  std::vector<std::vector<std::string>> table;
  std::vector<std::string> head = {"batch", "tokens"};
  std::string align = "rr";
  for (const sol::ServeFigures& f : s.rows.front().figures) {
    const std::string name(sol::fidelity_name(f.fidelity));
    head.push_back(name + (decode ? " SOL/token" : " SOL"));
    head.emplace_back("tokens/s");
    head.emplace_back("bound");
    align += "rrl";
  }
  if (s.parallel) {
    head.emplace_back("communication (" +
                      std::string(sol::fidelity_name(s.rows.front().figures.back().fidelity)) +
                      ")");
    head.emplace_back("sent/device");
    align += "rr";
  }
  head.emplace_back(std::string(s.parallel ? "DRAM bytes/device (" : "DRAM bytes (") +
                    std::string(sol::fidelity_name(s.rows.front().figures.back().fidelity)) + ")");
  align += "r";
  table.push_back(head);
  for (const sol::ServeRow& r : s.rows) {
    std::vector<std::string> row = {std::to_string(r.batch), std::to_string(r.tokens)};
    for (const sol::ServeFigures& f : r.figures) {
      row.push_back(format_seconds(f.step_s));
      row.push_back(f.step_s > 0 ? format_count(f.tokens_per_s) : "n/a");
      row.push_back(bound_name(f));
    }
    if (s.parallel) {
      row.push_back(format_seconds(r.figures.back().comm_s));
      row.push_back(format_bytes(r.sent_bytes));
    }
    row.push_back(format_bytes(static_cast<double>(r.figures.back().bytes)));
    table.push_back(std::move(row));
  }
  out += format_table(table, align);
  if (s.rows.size() > 1) out += "\n";
  for (const sol::ServeCrossover& x : s.crossovers) {
    if (s.rows.size() < 2) break;
    const std::string name(sol::fidelity_name(x.fidelity));
    if (!x.first_compute_bound) {
      out += name + ": memory bound at every batch up to " + std::to_string(s.rows.back().batch) +
             "\n";
    } else if (!x.last_memory_bound) {
      out += name + ": compute bound from the first batch analysed (" +
             std::to_string(*x.first_compute_bound) + ")\n";
    } else {
      out += name + ": turns compute bound between batch " + std::to_string(*x.last_memory_bound) +
             " (memory bound) and " + std::to_string(*x.first_compute_bound) + " (compute bound)";
      if (x.estimate) {
        out += "; compute = memory at batch " + batch_text(*x.estimate) +
               " (both terms linear in the batch between the two)";
      }
      out += "\n";
    }
  }
  return out;
}

ServingContext serving_context(const std::vector<ServingStep>& steps) {
  if (steps.empty()) throw UserError("no serving step to report");
  const Report* first = steps.front().report;
  SOLAR_CHECK(first != nullptr, "a serving step without its report");
  ServingContext c;
  c.source = first->graph.source;
  c.device = first->device.name;
  c.dram_bandwidth_bytes_per_s = first->analysis.dram_bandwidth_bytes_per_s;
  c.policy = first->analysis.policy;
  c.cache_state = first->analysis.memory.state;
  for (const ServingStep& s : steps) {
    SOLAR_CHECK(s.report != nullptr, "a serving step without its report");
    const Report& r = *s.report;
    if (r.device.name != c.device || r.analysis.policy != c.policy ||
        r.analysis.memory.state != c.cache_state) {
      throw UserError("serving steps analysed on different devices, policies or cache states");
    }
    std::vector<RoutedRead> routed;
    for (RoutedRead& rr : routed_reads(r.graph)) {
      if (rr.routed) routed.push_back(std::move(rr));
    }
    if (!routed.empty()) c.routing = einsum::routing_name(r.graph.routing);
    c.routed.push_back(std::move(routed));
  }
  return c;
}

ServingReport serving_report(std::string_view phase, int64_t context,
                             const std::vector<ServingStep>& steps,
                             const std::vector<std::string>& verification) {
  ServingContext c = serving_context(steps);
  for (const std::string& v : verification) c.verification.push_back(parse_verification(v));
  std::vector<sol::ServeStep> serve;
  for (const ServingStep& s : steps) {
    serve.push_back({s.batch, s.report->analysis.results, s.report->parallel});
  }
  const sol::Serving summary =
      sol::summarize_serving(sol::parse_serve_phase(phase), context, serve);
  ServingReport out{serving_to_json(summary, c), render_serving(summary, c), ""};
  c.after_step_report = true;
  out.table_after_step = render_serving(summary, c);
  return out;
}

}  // namespace solar::report
