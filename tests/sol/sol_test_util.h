// Helpers for the SOL tests: hand-made devices and nodes, and graphs lifted from IR text.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>

#include "solar/einsum/graph.h"
#include "solar/hw/device.h"
#include "solar/ir/checker.h"
#include "solar/ir/parser.h"

namespace solar::sol::testing {

struct RateSpec {
  hw::ComputeUnit unit;
  hw::Precision precision;
  double flops_per_s;
};

// A device with exactly the given rates and DRAM bandwidth.
inline hw::Device make_device(const std::string& name, std::initializer_list<RateSpec> rates,
                              double dram_bytes_per_s) {
  hw::Device d;
  d.name = name;
  d.vendor = "test";
  for (const RateSpec& r : rates) d.peak(r.unit, r.precision) = hw::Figure{r.flops_per_s, "test"};
  d.level(hw::MemoryLevel::Dram).capacity_bytes = hw::Figure{80e9, "test"};
  d.level(hw::MemoryLevel::Dram).bandwidth_bytes_per_s = hw::Figure{dram_bytes_per_s, "test"};
  return d;
}

// An einsum node with the given counts; MAC operands of dtype `mac_dtype` when macs > 0.
inline einsum::Node make_node(const std::string& name, int64_t macs, int64_t simple,
                              int64_t special, ir::DType dtype, bool conv_like = false) {
  einsum::Node n;
  n.name = name;
  n.op = "kernel";
  n.counts = {macs, simple, special};
  if (macs > 0) {
    n.mac_lhs_dtype = dtype;
    n.mac_rhs_dtype = dtype;
  }
  n.out_dtype = dtype;
  n.compute_dtype = dtype;
  n.conv_like = conv_like;
  return n;
}

// The graph of IR program `text`, lifted at its default sizes with `sizes` overriding them.
inline einsum::Graph lift_text(const std::string& text, const std::string& file = "test.ir",
                               const ir::SymbolValues& sizes = {}) {
  const ir::Program p = ir::parse(text, file);
  return einsum::lift(p, ir::check_or_throw(p, sizes));
}

// The graph of the IR file at `path`, lifted at its default sizes.
inline einsum::Graph lift_file(const std::string& path) {
  const ir::Program p = ir::parse_file(path);
  return einsum::lift(p, ir::check_or_throw(p));
}

// C[M, N] = A[M, K] @ B[K, N] in one dtype, at sizes M, K, N: M*N*K MACs; every tensor is a
// graph input or output, so unfused and fused bytes are both (M*K + K*N + M*N) x element size.
inline einsum::Graph lift_gemm(const std::string& dtype, int64_t m, int64_t k, int64_t n) {
  const std::string text =
      "size M = 1\nsize K = 1\nsize N = 1\n"
      "input A : " +
      dtype + "[M, K]\ninput B : " + dtype +
      "[K, N]\n"
      "output C : " +
      dtype +
      "[M, N]\n"
      "kernel gemm {\n  for i in 0..M, j in 0..N, k in 0..K:\n"
      "    C[i, j] += A[i, k] * B[k, j]\n}\n";
  return lift_text(text, "gemm.ir", {{"M", m}, {"K", k}, {"N", n}});
}

// An fp32 GEMV, 1 x 4096 by 4096 x 4096: 16777216 MACs; bytes A 16384 + B 67108864 + C 16384 =
// 67141632 at both fidelities.
inline einsum::Graph lift_gemv() { return lift_gemm("f32", 1, 4096, 4096); }

}  // namespace solar::sol::testing
