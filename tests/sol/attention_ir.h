// Softmax attention as IR text, shared by tests/sol/test_cache.cpp and bench/cache_bench.cpp:
// scores, row max, row sum, probabilities, weighted sum over H heads, not causal. The loops every
// kernel shares are named alike (h, i, j).
#pragma once

#include <cstdint>
#include <string>

namespace solar::sol::testing {

// `dtype` is the element type of q, k, v and p; the scores s, the row statistics m and l, and
// the output o are f32.
inline std::string attention_ir(int64_t h, int64_t t, int64_t d, const std::string& dtype) {
  const std::string hd = dtype + "[H, T, D]\n";
  return "size H = " + std::to_string(h) + "\nsize T = " + std::to_string(t) +
         "\nsize D = " + std::to_string(d) + "\ninput q : " + hd + "input k : " + hd +
         "input v : " + hd + "tensor s : f32[H, T, T]\ntensor m : f32[H, T]\n" +
         "tensor l : f32[H, T]\ntensor p : " + dtype + "[H, T, T]\n" + R"(output o : f32[H, T, D]
kernel scores {
  for h in 0..H, i in 0..T, j in 0..T, d in 0..D:
    s[h, i, j] += q[h, i, d] * k[h, j, d]
}
kernel row_max {
  for h in 0..H, i in 0..T, j in 0..T:
    m[h, i] max= s[h, i, j]
}
kernel row_sum {
  for h in 0..H, i in 0..T, j in 0..T:
    l[h, i] += exp(s[h, i, j] - m[h, i])
}
kernel probs {
  for h in 0..H, i in 0..T, j in 0..T:
    p[h, i, j] = exp(s[h, i, j] - m[h, i]) / l[h, i]
}
kernel weighted_sum {
  for h in 0..H, i in 0..T, j in 0..T, e in 0..D:
    o[h, i, e] += p[h, i, j] * v[h, j, e]
}
)";
}

}  // namespace solar::sol::testing
