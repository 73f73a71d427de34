// The cache-aware optimiser's search (src/sol/cache_search.cpp, try_optimize) against the same
// search without its shortcuts (try_optimize_exhaustive: every segment searched, every untiled cost
// recounted, as before the shortcuts existed): the same schedule, group by group, on every example
// program, the golden SOL programs and two programs of bench/gen_large_ir.py, over capacities from
// 256 B to 1 TiB.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "sol_test_util.h"
#include "solar/ir/checker.h"
#include "solar/ir/parser.h"
#include "solar/sol/cache.h"

namespace solar::sol {
namespace {

// bench/gen_large_ir.py lstm --layers 2 --steps 3 --batch 2 --d-in 4 --hidden 4
const char* const kLstm =
    R"(# generated: python3 bench/gen_large_ir.py lstm --layers 2 --steps 3 --batch 2 --d-in 4 --hidden 4
size T = 3
size B = 2
size F = 4
size H = 4
size G = 16

input x : f32[B, T, F]
weight wi0 : f32[G, F]
weight wh0 : f32[G, H]
weight bias0 : f32[G]
weight wi1 : f32[G, H]
weight wh1 : f32[G, H]
weight bias1 : f32[G]
tensor h : f32[B, H]
tensor c : f32[B, H]
tensor gx : f32[B, G]
tensor gh : f32[B, G]
tensor ig : f32[B, H]
tensor fg : f32[B, H]
tensor og : f32[B, H]
tensor ys0 : f32[B, T, H]
output y : f32[B, T, H]

kernel h_init0 {
  for b in 0..B, j in 0..H:
    h[b, j] = 0.0
}
kernel c_init0 {
  for b in 0..B, j in 0..H:
    c[b, j] = 0.0
}
repeat t in 0..T {
  kernel in_proj0 {
    for b in 0..B, g in 0..G, k in 0..F:
      gx[b, g] += wi0[g, k] * x[b, t, k]
  }
  kernel hid_proj0 {
    for b in 0..B, g in 0..G, k in 0..H:
      gh[b, g] += wh0[g, k] * h[b, k]
  }
  kernel in_gate0 {
    for b in 0..B, j in 0..H:
      ig[b, j] = sigmoid(gx[b, j] + gh[b, j] + bias0[j])
  }
  kernel forget_gate0 {
    for b in 0..B, j in 0..H:
      fg[b, j] = sigmoid(gx[b, H + j] + gh[b, H + j] + bias0[H + j])
  }
  kernel out_gate0 {
    for b in 0..B, j in 0..H:
      og[b, j] = sigmoid(gx[b, 3 * H + j] + gh[b, 3 * H + j] + bias0[3 * H + j])
  }
  kernel cell0 {
    for b in 0..B, j in 0..H:
      c[b, j] = fg[b, j] * c[b, j] + ig[b, j] * tanh(gx[b, 2 * H + j] + gh[b, 2 * H + j] + bias0[2 * H + j])
  }
  kernel hidden0 {
    for b in 0..B, j in 0..H:
      h[b, j] = og[b, j] * tanh(c[b, j])
  }
  ys0[:, t, :] = h
}
kernel h_init1 {
  for b in 0..B, j in 0..H:
    h[b, j] = 0.0
}
kernel c_init1 {
  for b in 0..B, j in 0..H:
    c[b, j] = 0.0
}
repeat t in 0..T {
  kernel in_proj1 {
    for b in 0..B, g in 0..G, k in 0..H:
      gx[b, g] += wi1[g, k] * ys0[b, t, k]
  }
  kernel hid_proj1 {
    for b in 0..B, g in 0..G, k in 0..H:
      gh[b, g] += wh1[g, k] * h[b, k]
  }
  kernel in_gate1 {
    for b in 0..B, j in 0..H:
      ig[b, j] = sigmoid(gx[b, j] + gh[b, j] + bias1[j])
  }
  kernel forget_gate1 {
    for b in 0..B, j in 0..H:
      fg[b, j] = sigmoid(gx[b, H + j] + gh[b, H + j] + bias1[H + j])
  }
  kernel out_gate1 {
    for b in 0..B, j in 0..H:
      og[b, j] = sigmoid(gx[b, 3 * H + j] + gh[b, 3 * H + j] + bias1[3 * H + j])
  }
  kernel cell1 {
    for b in 0..B, j in 0..H:
      c[b, j] = fg[b, j] * c[b, j] + ig[b, j] * tanh(gx[b, 2 * H + j] + gh[b, 2 * H + j] + bias1[2 * H + j])
  }
  kernel hidden1 {
    for b in 0..B, j in 0..H:
      h[b, j] = og[b, j] * tanh(c[b, j])
  }
  y[:, t, :] = h
}
)";

// bench/gen_large_ir.py chain --steps 6 --batch 2 --width 8
const char* const kChain =
    R"(# generated: python3 bench/gen_large_ir.py chain --steps 6 --batch 2 --width 8
size T = 6
size B = 2
size D = 8

input x : f32[B, D]
weight w : f32[T, D, D]
weight bias : f32[T, D]
tensor a : f32[B, D]
tensor z : f32[B, D]
tensor r : f32[B, D]
output h : f32[B, D]

kernel start {
  for b in 0..B, d in 0..D:
    h[b, d] = x[b, d]
}
repeat t in 0..T {
  kernel mm {
    for b in 0..B, e in 0..D, d in 0..D:
      a[b, e] += h[b, d] * w[t, d, e]
  }
  kernel add_bias {
    for b in 0..B, e in 0..D:
      z[b, e] = a[b, e] + bias[t, e]
  }
  kernel relu {
    for b in 0..B, e in 0..D:
      r[b, e] = max(z[b, e], 0.0)
  }
  kernel residual {
    for b in 0..B, e in 0..D:
      h[b, e] = h[b, e] + r[b, e]
  }
}
)";

void expect_same(const std::optional<CacheSchedule>& a, const std::optional<CacheSchedule>& b,
                 const std::string& where) {
  ASSERT_EQ(a.has_value(), b.has_value()) << where;
  if (!a) return;
  EXPECT_EQ(a->traffic_bytes, b->traffic_bytes) << where;
  ASSERT_EQ(a->groups.size(), b->groups.size()) << where;
  for (size_t k = 0; k < a->groups.size(); ++k) {
    const CacheGroup& x = a->groups[k];
    const CacheGroup& y = b->groups[k];
    const std::string at = where + " group " + std::to_string(k);
    EXPECT_EQ(x.first, y.first) << at;
    EXPECT_EQ(x.last, y.last) << at;
    EXPECT_EQ(x.mode, y.mode) << at;
    EXPECT_EQ(x.traffic_bytes, y.traffic_bytes) << at;
    EXPECT_EQ(x.working_set_bytes, y.working_set_bytes) << at;
    EXPECT_EQ(x.min_traffic_bytes, y.min_traffic_bytes) << at;
    EXPECT_EQ(x.capacity_for_min_traffic_bytes, y.capacity_for_min_traffic_bytes) << at;
    EXPECT_EQ(x.loop_order, y.loop_order) << at;
    EXPECT_EQ(x.online, y.online) << at;
    EXPECT_EQ(x.lower_bound_reason, y.lower_bound_reason) << at;
    ASSERT_EQ(x.dims.size(), y.dims.size()) << at;
    for (size_t d = 0; d < x.dims.size(); ++d) {
      EXPECT_EQ(x.dims[d].name, y.dims[d].name) << at;
      EXPECT_EQ(x.dims[d].tile, y.dims[d].tile) << at;
    }
    ASSERT_EQ(x.tensors.size(), y.tensors.size()) << at;
    for (size_t t = 0; t < x.tensors.size(); ++t) {
      EXPECT_EQ(x.tensors[t].name, y.tensors[t].name) << at;
      EXPECT_EQ(x.tensors[t].role, y.tensors[t].role) << at;
      EXPECT_EQ(x.tensors[t].traffic_bytes, y.tensors[t].traffic_bytes) << at;
      EXPECT_EQ(x.tensors[t].footprint_bytes, y.tensors[t].footprint_bytes) << at;
    }
  }
}

void check_graph(const einsum::Graph& g, const std::string& name) {
  for (int k = 8; k <= 40; k += 2) {
    const int64_t capacity = int64_t{1} << k;
    CacheOptimizer fast(g), slow(g);  // fresh ones: no frontier shared between the two
    expect_same(fast.try_optimize(capacity), slow.try_optimize_exhaustive(capacity),
                name + " at 2^" + std::to_string(k));
  }
}

TEST(CacheSearch, ShortcutsReturnTheExhaustiveSchedule) {
  std::vector<std::filesystem::path> files;
  const std::filesystem::path root(SOLAR_SOURCE_DIR);
  for (const auto& dir : {root / "examples", root / "tests" / "golden" / "sol"}) {
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
      if (e.path().extension() == ".ir") files.push_back(e.path());
    }
  }
  std::sort(files.begin(), files.end());
  ASSERT_GE(files.size(), size_t{10});
  for (const auto& file : files) {
    const ir::Program p = ir::parse_file(file.string());
    check_graph(einsum::lift(p, ir::check_or_throw(p, {})), file.filename().string());
  }
}

TEST(CacheSearch, GeneratedRecurrencesReturnTheExhaustiveSchedule) {
  check_graph(testing::lift_text(kLstm), "lstm");
  check_graph(testing::lift_text(kChain), "chain");
}

// kChain at `steps` steps: its weight sliced per step (each element read once) or, `shared`, one
// weight read whole by every step.
std::string chain_text(int steps, bool shared) {
  std::string text = kChain;
  const auto replace = [&](const std::string& from, const std::string& to) {
    const size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) text.replace(at, from.size(), to);
  };
  replace("size T = 6", "size T = " + std::to_string(steps));
  if (shared) {
    replace("weight w : f32[T, D, D]", "weight w : f32[D, D]");
    replace("w[t, d, e]", "w[d, e]");
  }
  return text;
}

// The untiled segments of a chain whose weights do not fit: the search keeps the longest one
// that fits from each start as a sliding window, and skips the shorter ones it does not scan
// when their traffic is bounded below by the tensors of the part scanned (a read tensor is
// fetched at least as much in a longer segment, a written one needed after the longest is needed
// after every shorter one) plus the bytes of read-only tensors read at most once in all (their
// traffic grows with every node). The exhaustive search recounts every segment; at every
// capacity between one step's weights and the whole chain's, both give the same schedule.
TEST(CacheSearch, UntiledWindowAndSkipReturnTheExhaustiveSchedule) {
  for (const bool shared : {false, true}) {
    const einsum::Graph g = testing::lift_text(chain_text(40, shared));
    const std::string name = shared ? "shared-weight chain" : "chain";
    CacheOptimizer fast(g), slow(g);  // each keeps its frontiers across the capacities
    for (int64_t capacity = 256; capacity <= 16384; capacity += 160) {
      expect_same(fast.try_optimize(capacity), slow.try_optimize_exhaustive(capacity),
                  name + " at " + std::to_string(capacity) + " B");
    }
  }
}

}  // namespace
}  // namespace solar::sol

namespace solar::sol {
namespace {

// A scan of T steps over rows of 4 (y[t] = y[t - 1] + x[t]: one kernel repeated, a run), an
// elementwise kernel over the whole of y, a gather of its rows (no stream passes it), and one
// more elementwise kernel.
std::string scan_text(int steps) {
  const std::string t = std::to_string(steps);
  const std::string shape = "[" + t + ", 4]\n";
  return "input x : f32" + shape + "input idx : i64" + shape + "tensor y : f32" + shape +
         "tensor z : f32" + shape + "tensor g : f32" + shape + "output w : f32" + shape +
         "kernel first {\n  for i in 0..4:\n    y[0, i] = x[0, i]\n}\n"
         "repeat t in 1.." +
         t +
         " {\n  kernel step {\n    for i in 0..4:\n      y[t, i] = y[t - 1, i] + x[t, i]\n  }\n}\n"
         "kernel twice {\n  for s in 0.." +
         t + ", i in 0..4:\n    z[s, i] = y[s, i] * 2.0\n}\n" +
         "g = gather(z, idx, dim=0)\nkernel plus {\n  for s in 0.." + t +
         ", i in 0..4:\n    w[s, i] = g[s, i] + 1.0\n}\n";
}

// Streams that start at a step of a scan: the search finds how far a stream from the run reaches
// once, then visits from every later step only the ends whose segment does not fit. At every
// capacity from one row to the whole program (x, idx, y, z, g, w: 30 x 4 x (4 x 5 + 8) = 3,360 B),
// the same schedule as the exhaustive search, which scans every stream from every start. Here no
// stream from a step wins (it reads back the rows the steps before it wrote), but the candidates
// are checked: counted at half their traffic, they would change the schedule at 16 B.
TEST(CacheSearch, StreamsFromInsideAScanReturnTheExhaustiveSchedule) {
  const einsum::Graph g = testing::lift_text(scan_text(30));
  ASSERT_EQ(g.nodes.size(), size_t{33});  // first, 29 steps, twice, gather, plus
  CacheOptimizer fast(g), slow(g);
  for (int64_t capacity = 16; capacity <= 3456; capacity += 16) {
    expect_same(fast.try_optimize(capacity), slow.try_optimize_exhaustive(capacity),
                "scan at " + std::to_string(capacity) + " B");
  }
}

// Above 2^25 segments starting inside runs (a run of N steps starts N (N - 1) / 2), a program
// that does not fit on chip is not searched: one stream over the whole graph moving the fused
// bytes, flagged as a bound. 8,193 steps: 8,193 x 8,192 / 2 = 33,558,528 > 33,554,432.
TEST(CacheSearch, ALongScanThatDoesNotFitIsBoundedByTheFusedBytes) {
  const einsum::Graph g = testing::lift_text(scan_text(8194));
  ASSERT_EQ(g.nodes.size(), size_t{8197});  // first, 8,193 steps, twice, gather, plus
  // x and idx read once, w written once: 8,194 x 4 x (4 + 8 + 4) B = 524,416 B. Every tensor at
  // once: x, y, z, g, w (f32) and idx (i64): 8,194 x 4 x (5 x 4 + 8) = 917,728 B.
  CacheOptimizer opt(g);
  const std::optional<CacheSchedule> small = opt.try_optimize(917'727);
  ASSERT_TRUE(small.has_value());
  EXPECT_EQ(small->traffic_bytes, 524'416);
  ASSERT_EQ(small->groups.size(), size_t{1});
  EXPECT_EQ(small->groups[0].mode, GroupMode::Stream);
  EXPECT_TRUE(small->groups[0].lower_bound);
  EXPECT_NE(small->groups[0].lower_bound_reason.find("the longest 8193 steps"), std::string::npos)
      << small->groups[0].lower_bound_reason;
  // Where every tensor fits, the search runs: the whole graph is one group, a schedule.
  const std::optional<CacheSchedule> all = opt.try_optimize(917'728);
  ASSERT_TRUE(all.has_value());
  EXPECT_EQ(all->traffic_bytes, 524'416);
  ASSERT_EQ(all->groups.size(), size_t{1});
  EXPECT_NE(all->groups[0].mode, GroupMode::Stream);
  EXPECT_FALSE(all->groups[0].lower_bound);
  EXPECT_EQ(all->groups[0].lower_bound_reason, "");
}

}  // namespace
}  // namespace solar::sol
