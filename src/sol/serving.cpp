// Serving figures of a decoder's steps (include/solar/sol/serving.h).
#include "solar/sol/serving.h"

#include <string>

#include "solar/util/checked.h"
#include "solar/util/error.h"

namespace solar::sol {

std::string_view serve_phase_name(ServePhase p) {
  switch (p) {
    case ServePhase::Prefill:
      return "prefill";
    case ServePhase::Decode:
      return "decode";
  }
  SOLAR_CHECK(false, "unknown serving phase");
}

ServePhase parse_serve_phase(std::string_view name) {
  if (name == "prefill") return ServePhase::Prefill;
  if (name == "decode") return ServePhase::Decode;
  throw UserError("unknown serving phase '" + std::string(name) + "' (valid: prefill, decode)");
}

ParallelLayout serving_layout(int64_t devices, std::string_view text) {
  const ParallelLayout l = layout_for(devices, text);
  if (l.dp > 1 || l.pp > 1 || l.microbatches > 1 || l.sequence_parallel) {
    throw UserError("--serve takes tensor parallelism only (--parallel tp=N), not '" +
                    std::string(text) + "' (docs/serving.md, \"Serving in parallel\")");
  }
  return l;
}

namespace {

// The figures of one fidelity of a step on one device.
ServeFigures figures_of(const FidelityResult& r, int64_t tokens) {
  ServeFigures f;
  f.fidelity = r.fidelity;
  f.step_s = r.time_s;
  f.tokens_per_s = r.time_s > 0 ? static_cast<double>(tokens) / r.time_s : 0;
  f.compute_s = r.compute_s;
  f.memory_s = r.memory_s;
  f.bytes = r.bytes;
  f.bottleneck = r.bottleneck;
  return f;
}

// The figures of one fidelity of a step laid out over several devices: one device's.
ServeFigures figures_of(const ParallelResult& r, int64_t tokens) {
  ServeFigures f;
  f.fidelity = r.fidelity;
  f.step_s = r.time_s;
  f.tokens_per_s = r.time_s > 0 ? static_cast<double>(tokens) / r.time_s : 0;
  f.compute_s = r.terms.compute_s;
  f.memory_s = r.terms.memory_s;
  f.bytes = r.terms.bytes;
  f.bottleneck = r.terms.compute_s > r.terms.memory_s ? Bottleneck::Compute : Bottleneck::Memory;
  f.comm_s = r.terms.comm_s;
  f.interconnect_bound = parallel_bottleneck(r.terms) == "interconnect";
  return f;
}

ServeCrossover crossover(const std::vector<ServeRow>& rows, size_t k) {
  ServeCrossover c;
  c.fidelity = rows.front().figures[k].fidelity;
  for (size_t i = 0; i < rows.size(); ++i) {
    const ServeFigures& f = rows[i].figures[k];
    if (f.bottleneck != Bottleneck::Compute) continue;
    c.first_compute_bound = rows[i].batch;
    if (i == 0) break;
    c.last_memory_bound = rows[i - 1].batch;
    if (c.fidelity == Fidelity::Unfused) break;
    // compute(b) - memory(b), linear between the two batches: its zero.
    const ServeFigures& g = rows[i - 1].figures[k];
    const double d0 = g.compute_s - g.memory_s;  // < 0 or = 0: memory bound
    const double d1 = f.compute_s - f.memory_s;  // > 0: compute bound
    const auto b0 = static_cast<double>(rows[i - 1].batch);
    const auto b1 = static_cast<double>(rows[i].batch);
    c.estimate = d1 > d0 ? b0 + (b1 - b0) * (-d0) / (d1 - d0) : b1;
    break;
  }
  return c;
}

}  // namespace

Serving summarize_serving(ServePhase phase, int64_t context, const std::vector<ServeStep>& steps) {
  if (context < 1) {
    throw UserError("the context must be at least 1 token, not " + std::to_string(context));
  }
  if (steps.empty()) throw UserError("no serving step to summarise");
  Serving s;
  s.phase = phase;
  s.context = context;
  for (size_t i = 0; i < steps.size(); ++i) {
    const ServeStep& step = steps[i];
    if (step.batch < 1) {
      throw UserError("the batch must be at least 1, not " + std::to_string(step.batch));
    }
    if (i > 0 && step.batch <= steps[i - 1].batch) {
      throw UserError("serving batches must increase: " + std::to_string(steps[i - 1].batch) +
                      " then " + std::to_string(step.batch));
    }
    if (step.results.empty()) throw UserError("a serving step was analysed at no fidelity");
    if (i > 0 && step.results.size() != steps[0].results.size()) {
      throw UserError("serving steps analysed at different fidelities");
    }
    ServeRow row;
    row.batch = step.batch;
    const std::optional<int64_t> tokens =
        phase == ServePhase::Decode ? step.batch : checked_mul(step.batch, context);
    if (!tokens) throw UserError("batch x context overflows");
    row.tokens = *tokens;
    if (step.parallel.has_value() != steps[0].parallel.has_value() ||
        (step.parallel && !(step.parallel->layout == steps[0].parallel->layout))) {
      throw UserError("serving steps laid out on different devices");
    }
    if (step.parallel) {
      for (const ParallelResult& r : step.parallel->results) {
        row.figures.push_back(figures_of(r, row.tokens));
      }
      row.collectives = step.parallel->comms.size();
      for (const Communication& c : step.parallel->comms) row.sent_bytes += c.sent_bytes;
      if (row.figures.empty()) throw UserError("a serving step was analysed at no fidelity");
    } else {
      for (size_t k = 0; k < step.results.size(); ++k) {
        const FidelityResult& r = step.results[k];
        if (i > 0 && r.fidelity != steps[0].results[k].fidelity) {
          throw UserError("serving steps analysed at different fidelities");
        }
        row.figures.push_back(figures_of(r, row.tokens));
      }
    }
    s.rows.push_back(std::move(row));
  }
  if (const std::optional<ParallelAnalysis>& p = steps[0].parallel) {
    s.parallel = ServeParallel{p->layout, p->link, p->link_bytes_per_s, p->in_network_reduction};
  }
  for (size_t k = 0; k < s.rows.front().figures.size(); ++k) {
    s.crossovers.push_back(crossover(s.rows, k));
  }
  return s;
}

}  // namespace solar::sol
