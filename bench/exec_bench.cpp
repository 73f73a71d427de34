// Executor benchmark: a square f32 matmul kernel on the generic interpreter and on the GEMM fast
// path. Not a test: run it by hand (Release build) and quote the command with the numbers.
//
//   cmake --build build --target solar_bench_exec && build/solar_bench_exec [N]   (default 1024)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "solar/exec/executor.h"
#include "solar/ir/parser.h"

namespace {

using solar::exec::Tensor;
using solar::exec::TensorMap;

constexpr const char* kMatmul = R"(
size N = 1024
input a : f32[N, N]
input b : f32[N, N]
output c : f32[N, N]
kernel matmul {
  for i in 0..N, j in 0..N, k in 0..N:
    c[i, j] += a[i, k] * b[k, j]
}
)";

Tensor random_matrix(int64_t n, unsigned seed) {
  Tensor t(solar::ir::DType::F32, {n, n});
  std::srand(seed);
  for (int64_t i = 0; i < n * n; ++i) t.set(i, std::rand() / static_cast<double>(RAND_MAX) - 0.5);
  return t;
}

// Seconds for one run, and the result.
double time_run(const solar::ir::Program& p, const TensorMap& inputs,
                const solar::exec::RunOptions& options, TensorMap& out) {
  const auto start = std::chrono::steady_clock::now();
  out = solar::exec::run(p, inputs, options);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t n = argc > 1 ? std::atoll(argv[1]) : 1024;
  const solar::ir::Program p = solar::ir::parse(kMatmul, "matmul.ir");
  TensorMap inputs;
  inputs.emplace("a", random_matrix(n, 1));
  inputs.emplace("b", random_matrix(n, 2));
  solar::exec::RunOptions options;
  options.size_overrides["N"] = n;
  TensorMap fast, generic;
  const double t_fast = time_run(p, inputs, options, fast);
  options.fast_paths = false;
  const double t_generic = time_run(p, inputs, options, generic);
  double max_diff = 0;
  for (int64_t i = 0; i < n * n; ++i) {
    const double d = fast.at("c").get(i) - generic.at("c").get(i);
    max_diff = d > max_diff ? d : (-d > max_diff ? -d : max_diff);
  }
  const double macs = static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n);
  std::printf("f32 matmul %lldx%lldx%lld (one core)\n", static_cast<long long>(n),
              static_cast<long long>(n), static_cast<long long>(n));
  std::printf("  fast path: %8.3f s  %6.2f GMAC/s\n", t_fast, macs / t_fast * 1e-9);
  std::printf("  generic:   %8.3f s  %6.2f GMAC/s\n", t_generic, macs / t_generic * 1e-9);
  std::printf("  generic / fast: %.1fx   max |difference|: %.3g\n", t_generic / t_fast, max_diff);
  return 0;
}
