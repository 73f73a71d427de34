// The cache-aware fused model (include/solar/sol/cache.h, docs/fidelities.md): hand-computed
// costs, the optimiser against a brute-force enumeration of its mapspace, the schedule it returns
// against an independent simulation, the laws (fused <= cache-aware, non-increasing in the
// capacity, equal to fused once everything fits) and the tiled-GEMM limit.
#include "solar/sol/cache.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "attention_ir.h"
#include "sol_test_util.h"
#include "solar/ir/affine.h"
#include "solar/ir/dtype.h"
#include "solar/sol/analysis.h"
#include "solar/util/error.h"

namespace solar::sol {
namespace {

using testing::lift_gemm;
using testing::lift_text;

// E[i, l] = (A @ B) @ D through the intermediate C.
const char* const kGemmGemm = R"(
size M = 4
size K = 6
size J = 8
size L = 4
input A : f32[M, K]
weight B : f32[K, J]
weight D : f32[J, L]
tensor C : f32[M, J]
output E : f32[M, L]
kernel gemm1 {
  for i in 0..M, j in 0..J, k in 0..K:
    C[i, j] += A[i, k] * B[k, j]
}
kernel gemm2 {
  for i in 0..M, l in 0..L, j in 0..J:
    E[i, l] += C[i, j] * D[j, l]
}
)";

// Softmax attention over one head, f32 throughout (attention_ir.h).
std::string attention(int64_t t, int64_t d) { return testing::attention_ir(1, t, d, "f32"); }

// A 3x3 convolution, stride 1, no padding: 7 loops.
const char* const kConv = R"(
size N = 1
size C = 2
size K = 4
size H = 6
size W = 6
size OH = 4
size OW = 4
input x : f32[N, C, H, W]
weight w : f32[K, C, 3, 3]
output y : f32[N, K, OH, OW]
kernel conv {
  for n in 0..N, k in 0..K, oh in 0..OH, ow in 0..OW, c in 0..C, r in 0..3, s in 0..3:
    y[n, k, oh, ow] += x[n, c, oh + r, ow + s] * w[k, c, r, s]
}
)";

std::vector<int64_t> divisors_of(int64_t n) {
  std::vector<int64_t> d;
  for (int64_t t = 1; t <= n; ++t) {
    if (n % t == 0) d.push_back(t);
  }
  return d;
}

// The least traffic over the whole mapspace of the tiled segment [first, last), by brute force:
// every vector of divisors, every permutation of the tiled dims (std::next_permutation), every
// schedule whose working set fits.
int64_t brute_force(CacheOptimizer& opt, size_t first, size_t last, int64_t capacity) {
  const std::vector<GroupDim> dims = *opt.tiled_dims(first, last);
  std::vector<std::vector<int64_t>> cands;
  for (const GroupDim& d : dims) cands.push_back(divisors_of(d.extent));
  std::vector<size_t> digit(dims.size(), 0);
  int64_t best = -1;
  while (true) {
    std::vector<int64_t> tiles;
    std::vector<size_t> order;
    for (size_t c = 0; c < dims.size(); ++c) {
      tiles.push_back(cands[c][digit[c]]);
      if (tiles[c] < dims[c].extent) order.push_back(c);
    }
    do {
      const auto cost = opt.tiled_cost(first, last, tiles, order);
      if (cost && cost->working_set_bytes <= capacity && (best < 0 || cost->traffic_bytes < best)) {
        best = cost->traffic_bytes;
      }
    } while (std::next_permutation(order.begin(), order.end()));
    size_t c = 0;
    while (c < dims.size() && ++digit[c] == cands[c].size()) digit[c++] = 0;
    if (c == dims.size()) break;
  }
  return best;
}

// An independent simulation of a tiled group: run its outer tile loops in the order given; at
// each step every tensor needs the set of elements its accesses touch inside the tile (found by
// visiting the points of every node); a tensor whose needed set differs from the one it holds
// swaps it: an input reads the new set, an output writes the old one back and reads back the
// elements of the new one written before (partial sums). Intermediates cost nothing. Returns
// the DRAM bytes.
int64_t simulate(const einsum::Graph& g, const CacheGroup& grp) {
  std::map<std::string, int64_t> tile, extent;
  for (const GroupDim& d : grp.dims) {
    tile[d.name] = d.tile;
    extent[d.name] = d.extent;
  }
  std::map<std::string, TensorRole> role;
  for (const GroupTensor& t : grp.tensors) role[t.name] = t.role;
  std::map<std::string, std::set<int64_t>> held, written;
  int64_t traffic = 0;
  const auto size_of = [&](const std::string& name) {
    return static_cast<int64_t>(ir::dtype_size(g.find_tensor(name)->dtype));
  };
  const auto write_back = [&](const std::string& name) {
    traffic += static_cast<int64_t>(held[name].size()) * size_of(name);
    written[name].insert(held[name].begin(), held[name].end());
  };
  std::vector<int64_t> index(grp.loop_order.size(), 0);
  while (true) {
    std::map<std::string, int64_t> start;  // tile origin of each tiled dim
    for (size_t k = 0; k < grp.loop_order.size(); ++k) {
      start[grp.loop_order[k]] = index[k] * tile[grp.loop_order[k]];
    }
    std::map<std::string, std::set<int64_t>> need;
    for (size_t n = grp.first; n < grp.last; ++n) {
      const einsum::Node& node = g.nodes[n];
      std::vector<std::pair<int64_t, int64_t>> range;  // per loop: [lo, hi)
      for (const ir::AffineLoop& l : node.domain) {
        const auto it = start.find(l.var);
        if (it != start.end()) {
          range.emplace_back(it->second, it->second + tile[l.var]);
        } else {
          range.emplace_back(l.lo.constant, l.hi.constant);  // box domains only
        }
      }
      ir::SymbolValues point;
      std::vector<int64_t> at(range.size());
      for (size_t v = 0; v < range.size(); ++v) at[v] = range[v].first;
      while (true) {
        for (size_t v = 0; v < range.size(); ++v) point[node.domain[v].var] = at[v];
        for (const auto* list : {&node.reads, &node.writes}) {
          for (const einsum::Access& a : *list) {
            for (const einsum::AccessMap& m : a.maps) {
              // A gather's read lies inside what the group wrote (the optimiser checks it): the
              // writes count those elements.
              if (m.data_dependent) continue;
              bool in_bounds = true;  // a guarded read (padding) skips the points outside
              for (size_t d = 0; d < m.index.size() && m.guarded; ++d) {
                const int64_t at_d = ir::evaluate(m.index[d], point);
                in_bounds = in_bounds && at_d >= 0 && at_d < m.extent[d];
              }
              if (in_bounds) need[a.tensor].insert(ir::evaluate(m.flat(), point));
            }
          }
        }
        size_t v = range.size();
        while (v > 0 && ++at[v - 1] == range[v - 1].second) {
          at[v - 1] = range[v - 1].first;
          --v;
        }
        if (v == 0) break;
      }
    }
    for (auto& [name, elems] : need) {
      const TensorRole r = role.at(name);
      if (r == TensorRole::OnChip || held[name] == elems) continue;
      if (r == TensorRole::Input) {
        traffic += static_cast<int64_t>(elems.size()) * size_of(name);
      } else {
        write_back(name);
        for (const int64_t e : elems) traffic += written[name].count(e) ? size_of(name) : 0;
      }
      held[name] = elems;
    }
    size_t k = grp.loop_order.size();
    while (k > 0 && ++index[k - 1] == extent[grp.loop_order[k - 1]] / tile[grp.loop_order[k - 1]]) {
      index[k - 1] = 0;
      --k;
    }
    if (k == 0) break;
  }
  for (const GroupTensor& t : grp.tensors) {
    if (t.role == TensorRole::Output || t.role == TensorRole::OnChipOut) write_back(t.name);
  }
  return traffic;
}

// ---------------------------------------------------------------------------------------------
// Hand-computed costs

// GEMM 8x8x8, f32, tiles i=4, j=4, k=8 (k whole), loop order (i, j):
//   A[i, k]: its innermost relevant loop is i (position 1): 2 visits x a 4x8 tile = 64 elements,
//            A read once: 256 B.
//   B[k, j]: innermost relevant loop j (position 2): 2 x 2 = 4 visits x an 8x4 tile = 128
//            elements, B read twice: 512 B.
//   C[i, j]: 4 visits x a 4x4 tile, 4 distinct tiles (no reduction loop outside it): written
//            once, 64 elements: 256 B.
//   traffic 256 + 512 + 256 = 1024 B; working set (32 + 32 + 16) x 4 = 320 B.
// Order (j, i) swaps the roles: A read twice, B once: the same 1024 B.
TEST(CacheCost, GemmByHand) {
  const einsum::Graph g = lift_gemm("f32", 8, 8, 8);
  CacheOptimizer opt(g);
  const std::vector<GroupDim> dims = *opt.tiled_dims(0, 1);
  ASSERT_EQ(dims.size(), 3u);
  EXPECT_EQ(dims[0].name, "i");
  EXPECT_EQ(dims[1].name, "j");
  EXPECT_EQ(dims[2].name, "k");
  const auto c = opt.tiled_cost(0, 1, {4, 4, 8}, {0, 1});
  ASSERT_TRUE(c);
  EXPECT_EQ(c->traffic_bytes, 1024);
  EXPECT_EQ(c->working_set_bytes, 320);
  EXPECT_EQ(opt.tiled_cost(0, 1, {4, 4, 8}, {1, 0})->traffic_bytes, 1024);
  // k tiled by 4 and placed outside: order (k, i, j). C's innermost relevant loop is j
  // (position 3); k outside it: 2 x 2 x 2 = 8 visits of 4 distinct 4x4 tiles: written 8 x 16
  // = 128 elements, partial sums read back (8 - 4) x 16 = 64: 192 x 4 = 768 B. A[i, k]: loops
  // up to i (position 2): 4 visits x 4x4 = 64 elements: 256 B. B[k, j]: 8 visits x 4x4 = 128
  // elements: 512 B. Total 1536 B; working set (16 + 16 + 16) x 4 = 192 B.
  const auto outer_k = opt.tiled_cost(0, 1, {4, 4, 4}, {2, 0, 1});
  EXPECT_EQ(outer_k->traffic_bytes, 1536);
  EXPECT_EQ(outer_k->working_set_bytes, 192);
}

// GEMM 8x8x8 f32: A, B, C are 256 B each; moving each once is 768 B (the fused traffic). Tiles
// i=8, j=8, k=1 with the loop over k: A and B move an 8x1 and a 1x8 slice per step, each read
// once; C has no tiled dim, so it stays on chip for the whole loop and is written once:
// working set (8 + 8 + 64) x 4 = 320 B for 768 B (k=2: 384 B, k=4: 512 B, same traffic). At
// 256 B, C (64 elements) no longer fits whole beside anything: more than 768 B.
TEST(CacheCost, GemmOptimumAtSmallCapacities) {
  const einsum::Graph g = lift_gemm("f32", 8, 8, 8);
  CacheOptimizer opt(g);
  EXPECT_EQ(opt.best_group(0, 1, 768, false)->traffic_bytes, 768);
  EXPECT_EQ(opt.best_group(0, 1, 384, false)->traffic_bytes, 768);
  // k=1: (8 + 8 + 64) x 4 = 320 B still moves each once.
  EXPECT_EQ(opt.best_group(0, 1, 320, false)->traffic_bytes, 768);
  EXPECT_GT(opt.best_group(0, 1, 256, false)->traffic_bytes, 768);
}

// ---------------------------------------------------------------------------------------------
// The optimiser equals a brute-force enumeration of its mapspace

// `exact`: the simulation moves exactly the schedule's traffic; otherwise at most (a guarded
// window's tile at the edge of its tensor is counted as its whole span).
void expect_matches_brute_force(const einsum::Graph& g, size_t first, size_t last,
                                const std::vector<int64_t>& capacities, bool exact = true) {
  CacheOptimizer opt(g);
  ASSERT_TRUE(opt.tiled_dims(first, last));
  for (const int64_t c : capacities) {
    const int64_t expected = brute_force(opt, first, last, c);
    const std::optional<CacheGroup> grp = opt.best_group(first, last, c, false);
    if (expected < 0) {
      EXPECT_FALSE(grp) << "capacity " << c;
      continue;
    }
    ASSERT_TRUE(grp) << "capacity " << c;
    EXPECT_EQ(grp->traffic_bytes, expected) << "capacity " << c;
    EXPECT_LE(grp->working_set_bytes, c);
    // The schedule returned reproduces its traffic in an independent simulation.
    if (exact) {
      EXPECT_EQ(simulate(g, *grp), grp->traffic_bytes) << "capacity " << c;
    } else {
      EXPECT_LE(simulate(g, *grp), grp->traffic_bytes) << "capacity " << c;
    }
  }
}

TEST(CacheBruteForce, Gemm) {
  expect_matches_brute_force(lift_gemm("f32", 8, 6, 12), 0, 1,
                             {12, 16, 24, 48, 64, 100, 128, 200, 256, 400, 512, 1024, 4096});
}

TEST(CacheBruteForce, Conv) {
  expect_matches_brute_force(lift_text(kConv), 0, 1,
                             {12, 40, 64, 100, 128, 200, 256, 512, 700, 1024, 4096});
}

TEST(CacheBruteForce, GemmGemmChain) {
  // Common dims i (4) and j (8); k (6) and l (4) whole inside a tile.
  expect_matches_brute_force(lift_text(kGemmGemm), 0, 2,
                             {100, 200, 256, 300, 400, 512, 700, 1024, 4096});
}

TEST(CacheBruteForce, Attention) {
  expect_matches_brute_force(lift_text(attention(8, 4)), 0, 5,
                             {200, 300, 400, 512, 700, 1024, 2048, 4096});
}

// ---------------------------------------------------------------------------------------------
// Fused attention: the key dimension tiled, the row statistics combined online

// T = 64, D = 16, f32: q, k, v, o are 64 x 16 x 4 = 4096 B each: fused 16384 B.
//   At 16 KiB: k and v whole (8192 B) with one query row at a time (i tiled by 1: q and o rows
//   of 16, s and p rows of 64, m and l one element each: 162 elements, 648 B): 8840 B of
//   working set reads q, k, v and writes o once: 16384 B, one group.
//   At 6 KiB neither q and o nor k and v fit whole (8192 B). Best: i tiled by 32 (q, o tiles
//   of 512 elements, m and l of 32, resident across the key loop) and the key dimension j tiled
//   by 1 inside it (k, v tiles of 16, s, p tiles of 32): (512 + 512 + 16 + 16 + 32 + 32 + 32 +
//   32) x 4 = 4736 B. q read once (2 x 512 x 4 = 4096 B), o written once (4096 B), k and v read
//   once per query tile (2 x 64 x 16 x 4 = 8192 B each): 24576 B. m and l are reduced over the
//   tiled j and used inside the group: combined online.
TEST(CacheAttention, KeyDimensionTiledOnline) {
  const einsum::Graph g = lift_text(attention(64, 16));
  CacheOptimizer opt(g);
  const CacheSchedule roomy = opt.optimize(16384);
  EXPECT_EQ(roomy.traffic_bytes, 16384);
  ASSERT_EQ(roomy.groups.size(), 1u);
  EXPECT_EQ(roomy.groups[0].working_set_bytes, 8840);
  EXPECT_EQ(roomy.groups[0].loop_order, std::vector<std::string>{"i"});

  const CacheSchedule s = opt.optimize(6144);
  EXPECT_EQ(s.traffic_bytes, 24576);
  ASSERT_EQ(s.groups.size(), 1u);
  const CacheGroup& grp = s.groups[0];
  EXPECT_EQ(grp.mode, GroupMode::Tiled);
  EXPECT_EQ(grp.loop_order, (std::vector<std::string>{"i", "j"}));
  EXPECT_EQ(grp.working_set_bytes, 4736);
  EXPECT_EQ(grp.online, (std::vector<std::string>{"m", "l"}));
  EXPECT_FALSE(grp.lower_bound);  // o is accumulated over the key tiles: rescaled at the end
  // Limited by capacity: 16384 B needs 8840 B.
  EXPECT_TRUE(grp.capacity_limited);
  EXPECT_EQ(grp.min_traffic_bytes, 16384);
  EXPECT_EQ(grp.capacity_for_min_traffic_bytes, 8840);
  EXPECT_EQ(simulate(g, grp), 24576);
}

// ---------------------------------------------------------------------------------------------
// Streaming chains: what fusing compilers run as one kernel is one tiled group (issue 12)

// Laws on one graph: fused <= cache-aware, non-increasing in the capacity, equal to fused once
// everything fits; each group within the capacity.
void expect_laws(const einsum::Graph& g, int max_log2 = 40) {
  const int64_t fused = dram_bytes(g, Fidelity::Fused);
  CacheOptimizer opt(g);
  int64_t previous = -1;
  for (int k = 4; k <= max_log2; k += 2) {
    const std::optional<CacheSchedule> s = opt.try_optimize(int64_t{1} << k);
    if (!s) {
      EXPECT_EQ(previous, -1) << "fits at a smaller capacity, not at 2^" << k;
      continue;
    }
    EXPECT_GE(s->traffic_bytes, fused) << "2^" << k;
    if (previous >= 0) {
      EXPECT_LE(s->traffic_bytes, previous) << "2^" << k;
    }
    previous = s->traffic_bytes;
    for (const CacheGroup& grp : s->groups) EXPECT_LE(grp.working_set_bytes, int64_t{1} << k);
  }
  EXPECT_EQ(previous, fused) << "everything fits in 2^" << max_log2;
}

// The one group of `s`, tiled, over all nodes of `g`.
const CacheGroup& single_tiled_group(const einsum::Graph& g, const CacheSchedule& s) {
  EXPECT_EQ(s.groups.size(), 1u);
  const CacheGroup& grp = s.groups.at(0);
  EXPECT_EQ(grp.mode, GroupMode::Tiled);
  EXPECT_EQ(grp.first, 0u);
  EXPECT_EQ(grp.last, g.nodes.size());
  return grp;
}

// KL divergence as torch lowers kl_div(log(p), q, reduction='batchmean'): elementwise kernels,
// a scalar constant read through a select, a sum to a scalar, a scalar epilogue.
std::string kl_div(int64_t r, int64_t c) {
  return "size R = " + std::to_string(r) + "\nsize C = " + std::to_string(c) + R"(
input p : f32[R, C]
input q : f32[R, C]
tensor lp : f32[R, C]
tensor t : f32[R, C]
tensor zero : f32[]
tensor w : f32[R, C]
tensor total : f32[]
output loss : f32[]
kernel log_p {
  for i in 0..R, j in 0..C:
    lp[i, j] = log(p[i, j])
}
kernel term {
  for i in 0..R, j in 0..C:
    t[i, j] = q[i, j] * (log(q[i, j]) - lp[i, j])
}
kernel zero_map {
    zero[] = 0.0
}
kernel masked {
  for i in 0..R, j in 0..C:
    w[i, j] = select(q[i, j] > 0.0, t[i, j], zero[])
}
kernel sum_all {
  for i in 0..R, j in 0..C:
    total[] += w[i, j]
}
kernel batchmean {
    loss[] = total[] / R
}
)";
}

// p, q : f32[1024, 4096] at 1 MiB. Fused: 2 inputs x 1024 x 4096 x 4 B + the 4 B loss =
// 33,554,436 B. One tiled group of the six kernels: i and j are joined through lp, t and w (the
// loopless zero_map and batchmean run once); tiles i = 1, j = 1 already move each element once:
// one element of each of p, q, lp, t, w, zero, total, loss: 8 x 4 B = 32 B of working set.
// (Before issue 12 the loopless kernels, which have no common dim, cut the chain into groups that
// wrote lp, t and w to DRAM.)
TEST(CacheStreaming, KlDivChainIsOneGroup) {
  const einsum::Graph g = lift_text(kl_div(1024, 4096));
  EXPECT_EQ(dram_bytes(g, Fidelity::Fused), 33'554'436);
  CacheOptimizer opt(g);
  const CacheSchedule s = opt.optimize(1 << 20);
  EXPECT_EQ(s.traffic_bytes, 33'554'436);
  const CacheGroup& grp = single_tiled_group(g, s);
  EXPECT_EQ(grp.working_set_bytes, 32);
  ASSERT_EQ(grp.dims.size(), 2u);
  EXPECT_EQ(grp.dims[0].name, "i");
  EXPECT_EQ(grp.dims[1].name, "j");
}

// Softmax over the last dim with keepdim statistics (m, s : [R, 1]) read through broadcast
// views, as a framework writes it.
std::string softmax_keepdim(int64_t r, int64_t c) {
  return "size R = " + std::to_string(r) + "\nsize C = " + std::to_string(c) + R"(
input x : f32[R, C]
tensor m : f32[R, 1]
tensor mb : f32[R, C]
tensor e : f32[R, C]
tensor s : f32[R, 1]
tensor sb : f32[R, C]
output y : f32[R, C]
kernel row_max {
  for i in 0..R, j in 0..C:
    m[i, 0] max= x[i, j]
}
mb = broadcast(m)
kernel shifted_exp {
  for i in 0..R, j in 0..C:
    e[i, j] = exp(x[i, j] - mb[i, j])
}
kernel row_sum {
  for i in 0..R, j in 0..C:
    s[i, 0] += e[i, j]
}
sb = broadcast(s)
kernel normalize {
  for i in 0..R, j in 0..C:
    y[i, j] = e[i, j] / sb[i, j]
}
)";
}

// x : f32[1024, 4096]. Fused: x and y once, 2 x 16,777,216 = 33,554,432 B. The broadcast read
// mb[i, j] lies in what row_max wrote (m's storage dim 0 is i on both sides; the broadcast dim
// touches one element), so i joins all four kernels; each kernel's j runs whole (row_max's j is
// joined with nothing). A tile of one row: x 4096 + e 4096 + y 4096 + m 1 + s 1 elements =
// 12,290 x 4 B = 49,160 B, within 1 MiB. At 49,159 B no row fits: the best split reads x twice,
// once for row_max (which writes m, 4096 B) and once for the other three, which tile j (their s
// combined online) and read m back: 3 x 16,777,216 + 2 x 4096 = 50,339,840 B. That second
// group writes y tile by tile before its row sum s is complete: no one-pass schedule exists, its
// traffic is only a lower bound, and the group says so (FlashAttention's output, accumulated
// over the key tiles, is rescaled at the end instead: a schedule).
TEST(CacheStreaming, SoftmaxThroughBroadcastViewsIsOneGroup) {
  const einsum::Graph g = lift_text(softmax_keepdim(1024, 4096));
  EXPECT_EQ(dram_bytes(g, Fidelity::Fused), 33'554'432);
  CacheOptimizer opt(g);
  const CacheSchedule s = opt.optimize(1 << 20);
  EXPECT_EQ(s.traffic_bytes, 33'554'432);
  const CacheGroup& grp = single_tiled_group(g, s);
  EXPECT_EQ(grp.working_set_bytes, 49'160);
  ASSERT_EQ(grp.dims.size(), 1u);
  EXPECT_EQ(grp.dims[0].tile, 1);
  EXPECT_EQ(opt.optimize(49'160).traffic_bytes, 33'554'432);
  EXPECT_FALSE(grp.lower_bound);
  const CacheSchedule split = opt.optimize(49'159);
  EXPECT_EQ(split.traffic_bytes, 50'339'840);
  ASSERT_EQ(split.groups.size(), 2u);
  EXPECT_FALSE(split.groups[0].lower_bound);
  EXPECT_TRUE(split.groups[1].lower_bound);
  EXPECT_EQ(split.groups[1].online, std::vector<std::string>{"s"});
  EXPECT_EQ(split.groups[1].lower_bound_reason,
            "s is combined online over the tiled j but y, computed from it, leaves the chip tile "
            "by tile: no one-pass schedule moves this little");
  // The same three kernels where a row fits: j tiled by 1 (x, m, e, s, y one element each:
  // 20 B) and j whole (x, e, y rows and m, s: 49,160 B) both move x, m and y once, 33,558,528
  // B; the schedule wins the tie over the bound.
  const std::optional<CacheGroup> rows = opt.best_group(1, 4, 1 << 20, false);
  ASSERT_TRUE(rows);
  EXPECT_EQ(rows->traffic_bytes, 33'558'528);
  EXPECT_FALSE(rows->lower_bound);
  EXPECT_EQ(rows->working_set_bytes, 49'160);
}

// Layer norm over the last dim with gamma and beta, its output y a graph output and also
// reshaped into a second one (materialised: a movement node copying y into out; y is an output
// itself, so it cannot be an alias of out, docs/einsum.md "Views").
std::string layer_norm_reshaped(int64_t r, int64_t c, int64_t a) {
  return "size R = " + std::to_string(r) + "\nsize C = " + std::to_string(c) +
         "\nsize A = " + std::to_string(a) + "\nsize B = C / A" + R"(
input x : f32[R, C]
weight gamma : f32[C]
weight beta : f32[C]
tensor mu : f32[R]
tensor var : f32[R]
output y : f32[R, C]
output out : f32[R, A, B]
kernel mean {
  for i in 0..R, j in 0..C:
    mu[i] += x[i, j] / C
}
kernel variance {
  for i in 0..R, j in 0..C:
    var[i] += (x[i, j] - mu[i]) * (x[i, j] - mu[i]) / C
}
kernel normalize {
  for i in 0..R, j in 0..C:
    y[i, j] = (x[i, j] - mu[i]) * rsqrt(var[i] + 1e-05) * gamma[j] + beta[j]
}
out = reshape(y)
)";
}

// x : f32[1024, 4096], out : [1024, 64, 64]. Fused: x 16,777,216 + gamma 16,384 + beta 16,384
// + y 16,777,216 + out 16,777,216 = 50,364,416 B. The copy reads y.flat[4096 d0 + 64 d1 + d2]: on
// y's storage dims (4096 i + j) that is d0 in dim 0, joined with i, and 64 d1 + d2 inside j's whole
// range. One tiled group of four nodes, a row per tile: x, y, out rows 3 x 4096, gamma and beta 2 x
// 4096 (no tiled dim: fetched once), mu and var 1 each: 20,482 x 4 B = 81,928 B. (Before, the
// copy streamed alone: y read back, +16,777,216 B.)
TEST(CacheStreaming, LayerNormWithMaterialisedReshapeIsOneGroup) {
  const einsum::Graph g = lift_text(layer_norm_reshaped(1024, 4096, 64));
  ASSERT_EQ(g.nodes.back().kind, einsum::NodeKind::Movement);
  EXPECT_EQ(dram_bytes(g, Fidelity::Fused), 50'364'416);
  CacheOptimizer opt(g);
  const CacheSchedule s = opt.optimize(1 << 20);
  EXPECT_EQ(s.traffic_bytes, 50'364'416);
  EXPECT_EQ(single_tiled_group(g, s).working_set_bytes, 81'928);
}

// A q/k RMSNorm as torch.export lowers it (issue 40; FLUX's QKNorm, FlashInfer-Bench-style
// references): q bf16[T, H, D] cast to f32, the statistics over D as [T, H, 1] tensors, then the
// per-head weight cast to f32 by a copy of its own, after the statistics, which loops over D
// only. T = 64, H = 4, D = 128.
const char* const kQkRmsNorm = R"(input q : bf16[64, 4, 128]
input q_weight : bf16[128]
tensor xf : f32[64, 4, 128]
tensor sq : f32[64, 4, 128]
tensor ms_sum : f32[64, 4, 1]
tensor ms : f32[64, 4, 1]
tensor ms_eps : f32[64, 4, 1]
tensor rrms : f32[64, 4, 1]
tensor normed : f32[64, 4, 128]
tensor wf : f32[128]
tensor scaled : f32[64, 4, 128]
output y : bf16[64, 4, 128]
xf = q
kernel square {
  for a in 0..64, b in 0..4, c in 0..128:
    sq[a, b, c] = pow(xf[a, b, c], 2.0)
}
kernel mean_reduce {
  for a in 0..64, b in 0..4, c in 0..128:
    ms_sum[a, b, 0] += sq[a, b, c]
}
kernel mean_map {
  for a in 0..64, b in 0..4, c in 0..1:
    ms[a, b, c] = ms_sum[a, b, c] / 128
}
kernel add_eps {
  for a in 0..64, b in 0..4, c in 0..1:
    ms_eps[a, b, c] = ms[a, b, c] + 1e-06
}
kernel rsqrt_map {
  for a in 0..64, b in 0..4, c in 0..1:
    rrms[a, b, c] = rsqrt(ms_eps[a, b, c])
}
kernel normalize {
  for a in 0..64, b in 0..4, c in 0..128:
    normed[a, b, c] = xf[a, b, c] * rrms[a, b, 0]
}
wf = q_weight
kernel scale {
  for a in 0..64, b in 0..4, c in 0..128:
    scaled[a, b, c] = normed[a, b, c] * wf[c]
}
y = scaled
)";

// Fused: q 64 x 4 x 128 x 2 = 65,536 B, the weight 128 x 2 = 256 B, y 65,536 B: 131,328 B. At
// 16 KiB the f32 intermediates (131,072 B each) do not fit whole; tiled by (T, H), the weight's
// cast is a free unit (it reads only the weight and writes one to one), run whole in every tile
// with its 512 B f32 copy held: one group, the fused traffic. Before, the cast had no (T, H)
// loop, so nothing was common to a segment holding it and the normalisation split in two:
// `normed` (131,072 B f32) written and read back, 65,536 + 131,072 + 131,072 + 256 + 65,536 =
// 393,472 B, three times the fused traffic (the cache-aware SOL above a measured kernel).
TEST(CacheStreaming, QkRmsNormWeightCastIsOneGroup) {
  const einsum::Graph g = lift_text(kQkRmsNorm);
  EXPECT_EQ(dram_bytes(g, Fidelity::Fused), 131'328);
  CacheOptimizer opt(g);
  const CacheSchedule s = opt.optimize(16 * 1024);
  EXPECT_EQ(s.traffic_bytes, 131'328);
  const CacheGroup& grp = single_tiled_group(g, s);
  EXPECT_EQ(grp.traffic_bytes, 131'328);
  // Tiles of one (T, H) row: q 128 x 2 = 256, xf, sq, normed, scaled 128 x 4 = 512 each, the
  // four statistics 4 B each, y 256, and held whole: q_weight 256, wf 512. 256 + 4 x 512 + 16 +
  // 256 + 256 + 512 = 3,344 B. (simulate() cannot check this group: it matches loops by name,
  // and the weight's copy names its D loop d0, as the group names T.)
  EXPECT_EQ(grp.working_set_bytes, 3'344);
}

// cumsum along the last dim as the PyTorch frontend lowers it: a first column, then a repeat
// block of C - 1 steps, each reading the column before. Unrolled: C nodes; the steps are
// translates of each other and fold into one unit. `exclusive`: then z = y - x.
std::string cumsum_steps(int64_t r, int64_t c, bool exclusive) {
  std::string s =
      "size R = " + std::to_string(r) + "\nsize C = " + std::to_string(c) +
      "\ninput x : f32[R, C]\n" +
      (exclusive ? "tensor y : f32[R, C]\noutput z : f32[R, C]\n" : "output y : f32[R, C]\n") +
      R"(kernel first {
  for i in 0..R:
    y[i, 0] = x[i, 0]
}
repeat t in 1..C {
  kernel step {
    for i in 0..R:
      y[i, t] = y[i, t - 1] + x[i, t]
  }
}
)";
  if (exclusive) {
    s += R"(kernel exclusive {
  for i in 0..R, j in 0..C:
    z[i, j] = y[i, j] - x[i, j]
}
)";
  }
  return s;
}

// x : f32[1024, 512] at 1 MiB. Fused: x and y once, 2 x 2,097,152 = 4,194,304 B. The steps
// write columns 1..511 (y[i, 1 + t] over the folded step t), the first column 0; each step reads
// the column the one before wrote (y[i, t]: one step behind); x's columns 0 and 1 + t. i joins
// every node; a row per tile: x 512 + y 512 elements = 4096 B. (Before, a tensor written by
// several nodes could not be tiled, and untiled segments counted y's reads back from DRAM.)
// Exclusive: z = y - x reads y[i, j] over the whole row, inside the union of the columns the
// scan wrote; x[i, j] holds x[i, 0] and x[i, 1 + t]: a row of x, y and z: 6144 B.
TEST(CacheStreaming, CumsumStepsAreOneGroup) {
  for (const bool exclusive : {false, true}) {
    const einsum::Graph g = lift_text(cumsum_steps(1024, 512, exclusive));
    ASSERT_EQ(g.nodes.size(), exclusive ? 513u : 512u);
    EXPECT_EQ(dram_bytes(g, Fidelity::Fused), 4'194'304);
    CacheOptimizer opt(g);
    const CacheSchedule s = opt.optimize(1 << 20);
    EXPECT_EQ(s.traffic_bytes, 4'194'304) << exclusive;
    const CacheGroup& grp = single_tiled_group(g, s);
    EXPECT_EQ(grp.working_set_bytes, exclusive ? 6144 : 4096);
    ASSERT_EQ(grp.dims.size(), 1u);
    EXPECT_EQ(grp.dims[0].name, "i");
  }
}

// cumsum as one triangular reduction, y[i, j] = x[i, 0] + ... + x[i, j]: a single node, every
// loop a common dim. x : f32[1024, 512]: fused 4,194,304 B; with k whole (a row of x, 512
// elements) and one element of y per tile, x is read once per row and y written once:
// (512 + 1) x 4 B = 2052 B.
TEST(CacheStreaming, TriangularCumsumReadsARow) {
  const einsum::Graph g = lift_text(R"(
size R = 1024
size C = 512
input x : f32[R, C]
output y : f32[R, C]
kernel cumsum {
  for i in 0..R, j in 0..C, k in 0..j + 1:
    y[i, j] += x[i, k]
}
)");
  CacheOptimizer opt(g);
  const CacheSchedule s = opt.optimize(1 << 20);
  EXPECT_EQ(s.traffic_bytes, 4'194'304);
  EXPECT_EQ(single_tiled_group(g, s).working_set_bytes, 2052);
}

// avg_pool1d, kernel 4, stride 2, padding 1, as the frontend writes it: the input unsqueezed to
// [N, C, 1, L] (a view), the window read through a guard (the padding), a sum and a division,
// the output squeezed back into a graph output (a reshape of an intermediate: avg becomes an
// alias of y, no copy).
std::string avg_pool1d(int64_t n, int64_t c, int64_t l) {
  return "size N = " + std::to_string(n) + "\nsize C = " + std::to_string(c) +
         "\nsize L = " + std::to_string(l) + "\nsize O = L / 2" + R"(
input x : f32[N, C, L]
tensor xu : f32[N, C, 1, L]
tensor acc : f32[N, C, 1, O]
tensor avg : f32[N, C, 1, O]
output y : f32[N, C, O]
xu = reshape(x)
kernel window {
  for n in 0..N, c in 0..C, u in 0..1, o in 0..O, k in 0..4:
    acc[n, c, u, o] += select(2 * o + k - 1 >= 0 && 2 * o + k - 1 < L, xu[n, c, u, 2 * o + k - 1], 0.0)
}
kernel average {
  for n in 0..N, c in 0..C, u in 0..1, o in 0..O:
    avg[n, c, u, o] = acc[n, c, u, o] / 4.0
}
y = reshape(avg)
)";
}

// x : f32[16, 64, 4096], y : [16, 64, 2048]. Fused: 16,777,216 + 8,388,608 = 25,165,824 B.
// One tiled group of the two kernels. At 1 MiB a whole row per tile (n = c = 1, o whole):
// x 4096 + acc 2048 + y 2048 elements = 32,768 B. At 16 KiB a row does not
// fit: o tiled by 512 with its halo, x tiles of 2 x 512 + 2 = 1026 elements (the window's
// span), 4 per row: 16 x 64 x 4 x 1026 x 4 B = 16,809,984 B of x, y once: 25,198,592 B, in
// (1026 + 2 x 512) x 4 = 8,200 B (o = 1024 would need (2050 + 2 x 1024) x 4 = 16,392 B). The
// tiles at the ends of a row hold one padding position each: the model counts the span, 1026,
// where 1025 elements exist (a real schedule moves 2 x 16 x 64 x 4 B = 8192 B less).
TEST(CacheStreaming, Pool1dHaloTilesAreOneGroup) {
  const einsum::Graph g = lift_text(avg_pool1d(16, 64, 4096));
  EXPECT_EQ(dram_bytes(g, Fidelity::Fused), 25'165'824);
  CacheOptimizer opt(g);
  const CacheSchedule s = opt.optimize(1 << 20);
  EXPECT_EQ(s.traffic_bytes, 25'165'824);
  EXPECT_EQ(single_tiled_group(g, s).working_set_bytes, 32'768);
  // The tiled group alone at 16 KiB (the two kernels, without the stream mode).
  const std::optional<CacheGroup> tiled = opt.best_group(0, g.nodes.size(), 16 << 10, false);
  ASSERT_TRUE(tiled);
  EXPECT_EQ(tiled->mode, GroupMode::Tiled);
  EXPECT_EQ(tiled->traffic_bytes, 25'198'592);
  EXPECT_EQ(tiled->working_set_bytes, 8'200);
  // The schedule at 16 KiB is a stream (docs/fidelities.md, "Streaming chains"): a streaming
  // kernel keeps the 2 elements a window shares with the next tile, so x is read once: the fused
  // 25,165,824 B, a lower bound (was 25,198,592 B, the tiled group, before the stream mode).
  const CacheSchedule small = opt.optimize(16 << 10);
  EXPECT_EQ(small.traffic_bytes, 25'165'824);
  ASSERT_EQ(small.groups.size(), 1u);
  EXPECT_EQ(small.groups[0].mode, GroupMode::Stream);
}

// Cross-entropy: log-softmax over the classes, the target's log-probability gathered from each
// row (a movement node whose index tensor chooses the column), the mean over the rows.
std::string cross_entropy(int64_t r, int64_t c) {
  return "size R = " + std::to_string(r) + "\nsize C = " + std::to_string(c) + R"(
input x : f32[R, C]
input target : i64[R, 1]
tensor m : f32[R]
tensor s : f32[R]
tensor lsm : f32[R, C]
tensor picked : f32[R, 1]
tensor total : f32[]
output loss : f32[]
kernel row_max {
  for i in 0..R, j in 0..C:
    m[i] max= x[i, j]
}
kernel row_sum {
  for i in 0..R, j in 0..C:
    s[i] += exp(x[i, j] - m[i])
}
kernel log_softmax {
  for i in 0..R, j in 0..C:
    lsm[i, j] = x[i, j] - m[i] - log(s[i])
}
picked = gather(lsm, target, dim=1)
kernel sum_rows {
  for i in 0..R:
    total[] += picked[i, 0]
}
kernel mean {
    loss[] = -total[] / R
}
)";
}

// x : f32[1024, 4096], target : i64[1024, 1]. Fused: x 16,777,216 + target 8192 + loss 4 =
// 16,785,412 B. The gather reads lsm[d0, target[d0, d1]]: row d0 (joined with i), the column
// chosen by the data, so lsm's row stays whole on chip and lsm never leaves it. A row per tile:
// x and lsm rows 2 x 4096, m, s, picked, total, loss 5 f32 elements, one i64 target: 8197 x 4 +
// 8 = 32,796 B. (Before, the gather streamed alone and lsm went to DRAM and back: +16 MiB.)
TEST(CacheStreaming, CrossEntropyGatherIsOneGroup) {
  const einsum::Graph g = lift_text(cross_entropy(1024, 4096));
  EXPECT_EQ(dram_bytes(g, Fidelity::Fused), 16'785'412);
  CacheOptimizer opt(g);
  const CacheSchedule s = opt.optimize(1 << 20);
  EXPECT_EQ(s.traffic_bytes, 16'785'412);
  EXPECT_EQ(single_tiled_group(g, s).working_set_bytes, 32'796);
}

// A routed mixture of experts (issue 27): 4 tokens, top-2 of 8 experts. The router's ids
// [4, 2] pick each token's two matrices of w [8, 16, 32] (512 elements each, `take ...
// distinct=2`: at least 2 different experts), and one batched product multiplies each token's
// row by them. f32 throughout, ids i64.
const char* const kRoutedExperts = R"(
input ids : i64[4, 2]
weight w : f32[8, 16, 32]
input x : f32[4, 16]
tensor rows : f32[4, 2, 16, 32]
output y : f32[4, 2, 32]
rows = take(w, ids, dim=0, distinct=2)
kernel mm {
  for t in 0..4, r in 0..2, n in 0..32, c in 0..16:
    y[t, r, n] += x[t, c] * rows[t, r, c, n]
}
)";

// The gathered copy `rows` (4 x 2 x 16 x 32 = 4096 elements, 16,384 B) is never written: the
// take joins the product's tiled group and its tile reads the rows the tile's ids name, straight
// from w (docs/fidelities.md, "Gathers from DRAM"). Common dims t, r, c, n (the take's d0..d3).
// Fused: ids 8 x 8 = 64 B, x 64 x 4 = 256 B, y 256 x 4 = 1024 B, and w: concentrated 2 experts
// x 512 x 4 = 4096 B (5440 B); balanced min(8, 4 x 2) = 8 experts, 16,384 B (17,728 B).
// Unfused (two kernels): the take reads ids and w and writes rows (16,384 B), the product reads
// rows, x and writes y: 64 + w + 16,384 + 16,384 + 256 + 1024 = 34,112 + w (38,208 B
// concentrated, 50,496 B balanced); before, the cache-aware fidelity counted the same (the take
// streamed alone, rows through DRAM).
TEST(CacheStreaming, RoutedExpertsAreReadThroughTheIndexNotCopied) {
  for (const einsum::Routing routing : {einsum::Routing::Concentrated, einsum::Routing::Balanced}) {
    einsum::Graph g = lift_text(kRoutedExperts);
    einsum::assume_routing(g, routing);
    const bool conc = routing == einsum::Routing::Concentrated;
    const int64_t w = conc ? 4096 : 16'384;
    EXPECT_EQ(dram_bytes(g, Fidelity::Fused), 1344 + w);
    EXPECT_EQ(dram_bytes(g, Fidelity::Unfused), 34'112 + w);
    CacheOptimizer opt(g);
    ASSERT_EQ(opt.tiled_dims(0, 2)->size(), 4u);
    // Tiles t 4, r 2, c 16, n 1, loop n: one tile of the index (4 x 2 ids), so its rows are the
    // whole index's: concentrated D = 2 rows, balanced min(8, 4 x 2) = 8, each 16 x 1 elements
    // per tile, fetched 32 times: 2 x 16 x 32 x 4 = 4096 B, or 8 x 16 x 32 x 4 = 16,384 B, w's
    // fused bytes. ids and x once (64 + 256), y a column of 8 per step, 1024 once in all. Working
    // set: ids 64, x 256, y 8 x 4 = 32, rows on chip 4 x 2 x 16 = 128 x 4 = 512, and w 2 x 16 x
    // 4 = 128 (992 B) or 8 x 16 x 4 = 512 (1376 B).
    const auto whole = opt.tiled_cost(0, 2, {4, 2, 16, 1}, {3});
    ASSERT_TRUE(whole);
    EXPECT_EQ(whole->traffic_bytes, 1344 + w);
    EXPECT_EQ(whole->working_set_bytes, conc ? 992 : 1376);
    // Tiles t 1, r 2, c 16, n 32, loop t: 4 tiles of the index, 2 ids each. Balanced: the 2 ids
    // name min(8, 2) = 2 rows per token, 4 x 2 x 512 x 4 = 16,384 B again. Concentrated: the 2
    // experts the index guarantees over 4 tiles, each reading at least one: max(1, 2 / 4) = 1
    // row per tile, 4 x 512 x 4 = 8192 B (a run reads at least one row per tile; a top-2 router
    // reads two, which `distinct=2` does not say). ids 64, x 256, y 1024 once.
    const auto tokens = opt.tiled_cost(0, 2, {1, 2, 16, 32}, {0});
    ASSERT_TRUE(tokens);
    EXPECT_EQ(tokens->traffic_bytes, 1344 + (conc ? 8192 : 16'384));
    // 1 KiB on chip (the whole program needs 64 + 4096 or 16,384 + 16,384 + 256 + 1024 B): the
    // first tiling fits concentrated (992 B); balanced, t 4, r 1, c 16, n 1 (816 B: ids 4 x 8 =
    // 32, w 4 rows x 16 x 4 = 256, rows 4 x 16 x 4 = 256, x 256, y 4 x 4 = 16) reads w's 8 rows
    // once (2 tiles of the index, 4 ids each, 4 rows each, 64 steps x 256 B = 16,384 B). Both
    // move the fused bytes, the least any tiling can: one tiled group, the copy never written.
    const CacheSchedule s = opt.optimize(1024);
    EXPECT_EQ(s.traffic_bytes, 1344 + w);
    const CacheGroup& grp = single_tiled_group(g, s);
    for (const GroupTensor& t : grp.tensors) {
      if (t.name == "rows") {
        EXPECT_EQ(t.role, TensorRole::OnChip);
      }
    }
  }
}

// The same experts, `distinct=3` (3 different experts at least), concentrated. Fused: w 3 x 512 x
// 4 = 6144 B, 1344 + 6144 = 7488 B. Tiles t 2, r 2, c 16, n 32, loop t: 2 tiles of the index (4
// ids each); a tile's share max(1, floor(3 / 2)) = 1 row, 2 tiles x 512 x 4 = 4096 B, below the 3
// rows every run reads (5440 B in all, under the fused bytes). The table's traffic is raised to
// those 3 rows, 6144 B: 64 + 256 + 1024 + 6144 = 7488 B, the fused bytes; no tiling moves less.
TEST(CacheStreaming, RoutedExpertsAreReadAtLeastAsOftenAsTheirDistinctRows) {
  std::string text = kRoutedExperts;
  text.replace(text.find("distinct=2"), 10, "distinct=3");
  einsum::Graph g = lift_text(text);
  einsum::assume_routing(g, einsum::Routing::Concentrated);
  EXPECT_EQ(dram_bytes(g, Fidelity::Fused), 7488);
  CacheOptimizer opt(g);
  const auto halves = opt.tiled_cost(0, 2, {2, 2, 16, 32}, {0});
  ASSERT_TRUE(halves);
  EXPECT_EQ(halves->traffic_bytes, 7488);
  for (const int64_t capacity : {int64_t{1024}, int64_t{16'384}, int64_t{1} << 40}) {
    EXPECT_GE(opt.optimize(capacity).traffic_bytes, 7488) << capacity;
  }
}

// Instance norm as PyTorch lowers it: x : [N, C, H, W] viewed as [1, N * C, H, W], batch-norm
// statistics per channel of the view, the result reshaped back into the graph output (a reshape
// of an intermediate in its own order: y is an alias of out, no copy, docs/einsum.md "Views").
std::string instance_norm(int64_t n, int64_t c, int64_t hw) {
  return "size N = " + std::to_string(n) + "\nsize C = " + std::to_string(c) +
         "\nsize S = " + std::to_string(hw) + "\nsize NC = N * C" + R"(
input x : f32[N, C, S, S]
tensor xv : f32[1, NC, S, S]
tensor mu : f32[NC]
tensor var : f32[NC]
tensor y : f32[1, NC, S, S]
output out : f32[N, C, S, S]
xv = reshape(x)
kernel mean {
  for u in 0..1, k in 0..NC, h in 0..S, w in 0..S:
    mu[k] += xv[u, k, h, w] / (S * S)
}
kernel variance {
  for u in 0..1, k in 0..NC, h in 0..S, w in 0..S:
    var[k] += (xv[u, k, h, w] - mu[k]) * (xv[u, k, h, w] - mu[k]) / (S * S)
}
kernel normalize {
  for u in 0..1, k in 0..NC, h in 0..S, w in 0..S:
    y[u, k, h, w] = (xv[u, k, h, w] - mu[k]) * rsqrt(var[k] + 1e-05)
}
out = reshape(y)
)";
}

// x : f32[16, 64, 32, 32]. Fused: x and out once, 2 x 4,194,304 = 8,388,608 B. One tiled group
// of the three kernels, a channel per tile: x and out (y's storage) 2 x 1024 elements, mu and
// var 1 each: 2050 x 4 B = 8,200 B. (Before: the copy streamed alone, y written and read back,
// +8,388,608 B.)
TEST(CacheStreaming, InstanceNormReshapedBackIsOneGroup) {
  const einsum::Graph g = lift_text(instance_norm(16, 64, 32));
  EXPECT_EQ(dram_bytes(g, Fidelity::Fused), 8'388'608);
  CacheOptimizer opt(g);
  const CacheSchedule s = opt.optimize(1 << 20);
  EXPECT_EQ(s.traffic_bytes, 8'388'608);
  EXPECT_EQ(single_tiled_group(g, s).working_set_bytes, 8'200);
}

// A reshape of a permuted tensor into a graph output: the copy's read runs over the permuted
// box (3 loops), its write over the output (2 loops); a reshape keeps row-major order, so the
// optimiser writes y over the read's box (y[b, a, c] at 8 b + 4 a + c) and the copy tiles, alone
// and with the kernel before it. x, y : 2 x 3 x 4 f32 = 96 B each. At 1 KiB: the elementwise kernel
// (x read, t written: 192 B), then the copy, or all untiled (x and y once, 192 B, t on chip: 288 B
// of working set): 192 B. At 100 B the kernel streams (192 B) and so does the copy, which is a
// relabelling reshape of the intermediate t (einsum::Node::relabel): the kernel can write y's
// layout itself, so the copy moves nothing and t's 96 B written stand for y's: 192 B (384 B when it
// was charged as a copy: t read and y written again).
TEST(CacheStreaming, CopyOverAnotherShapeTiles) {
  const einsum::Graph g = lift_text(R"(
input x : f32[2, 3, 4]
tensor t : f32[2, 3, 4]
tensor p : f32[3, 2, 4]
output y : f32[3, 8]
kernel double {
  for a in 0..2, b in 0..3, c in 0..4:
    t[a, b, c] = 2.0 * x[a, b, c]
}
p = permute(t, [1, 0, 2])
y = reshape(p)
)");
  ASSERT_EQ(g.nodes.size(), 2u);
  CacheOptimizer opt(g);
  EXPECT_TRUE(opt.tiled_dims(1, 2));
  EXPECT_TRUE(opt.tiled_dims(0, 2));
  EXPECT_EQ(opt.optimize(1024).traffic_bytes, 192);
  EXPECT_EQ(opt.optimize(100).traffic_bytes, 192);
  EXPECT_TRUE(g.nodes[1].relabel);
}

// A node's write needs no join when nothing in its segment reads it: a transposed convolution
// (examples/conv_transpose2d.ir, output y[n, k, 2 * ih + kh, ...], not one to one) still tiles
// alone. At 4 KiB the node tiled alone moves x 720 B + w 432 B + its whole `full` (2 x 4 x 11 x
// 13 x 4 = 4,576 B) = 5,728 B; the crop alone moves nothing: the output is a slice of an
// intermediate, a view (Node::relabel; it moved 2 x 3,168 B as a copy before). With the stream mode
// (docs/fidelities.md, "Streaming chains") the contraction and its crop are one stream, a lower
// bound: x 2 x 3 x 5 x 6 x 4 = 720 B, w 3 x 4 x 3 x 3 x 4 = 432 B, y 2 x 4 x 9 x 11 x 4 = 3,168 B:
// 4,320 B, the fused bytes.
TEST(CacheStreaming, UnreadWriteNeedsNoJoin) {
  const ir::Program p = ir::parse_file(
      (std::filesystem::path(SOLAR_SOURCE_DIR) / "examples" / "conv_transpose2d.ir").string());
  const einsum::Graph g = einsum::lift(p, ir::check_or_throw(p, {}));
  CacheOptimizer opt(g);
  EXPECT_TRUE(opt.tiled_dims(0, 1));
  const std::optional<CacheGroup> node = opt.best_group(0, 1, 4096, false);
  const std::optional<CacheGroup> crop = opt.best_group(1, 2, 4096, false);
  ASSERT_TRUE(node && crop);
  EXPECT_EQ(node->traffic_bytes, 720 + 432 + 4'576);
  EXPECT_EQ(crop->traffic_bytes, 0);
  EXPECT_TRUE(g.nodes[1].relabel);
  EXPECT_EQ(opt.optimize(4096).traffic_bytes, 720 + 432 + 3'168);
}

// The new constructs, at sizes a brute force can enumerate: the optimiser equals the brute
// force over the group's mapspace, its schedule reproduces its traffic in the simulation, and
// the laws hold.
TEST(CacheBruteForce, StreamingChains) {
  const einsum::Graph kl = lift_text(kl_div(4, 8));
  expect_matches_brute_force(kl, 0, kl.nodes.size(), {16, 32, 64, 128, 256, 512});
  const einsum::Graph sm = lift_text(softmax_keepdim(8, 6));
  expect_matches_brute_force(sm, 0, sm.nodes.size(), {64, 100, 200, 400, 1024});
  const einsum::Graph ln = lift_text(layer_norm_reshaped(4, 16, 4));
  expect_matches_brute_force(ln, 0, ln.nodes.size(), {200, 300, 512, 1024});
  const einsum::Graph cs = lift_text(cumsum_steps(8, 6, true));
  expect_matches_brute_force(cs, 0, cs.nodes.size(), {40, 72, 100, 200, 1024});
  const einsum::Graph pool = lift_text(avg_pool1d(2, 2, 16));
  expect_matches_brute_force(pool, 0, pool.nodes.size(), {40, 64, 100, 200, 512}, false);
  const einsum::Graph ce = lift_text(cross_entropy(4, 8));
  expect_matches_brute_force(ce, 0, ce.nodes.size(), {64, 100, 200, 512});
  const einsum::Graph in = lift_text(instance_norm(2, 3, 4));
  expect_matches_brute_force(in, 0, in.nodes.size(), {100, 200, 400, 1024});
  for (const einsum::Graph* g : {&kl, &sm, &ln, &cs, &pool, &ce, &in}) expect_laws(*g);
  expect_laws(lift_text(cumsum_steps(64, 32, true)), 24);
}

// Causal attention (examples/causal_attention.ir, docs/fidelities.md) at H = 16, T = 1024,
// D = 64, 256 KiB: its kernels write s and p over the triangle j <= i, not a box; each read
// matches the write loop for loop over the same bounds, so the five kernels stay one group.
// 256 query rows per tile, keys one at a time: q and o once (4,194,304 B each), k and v once per
// query tile (4 x 4,194,304 B each): 41,943,040 B.
TEST(CacheAttention, CausalTriangleIsOneGroup) {
  const ir::Program p = ir::parse_file(
      (std::filesystem::path(SOLAR_SOURCE_DIR) / "examples" / "causal_attention.ir").string());
  const einsum::Graph g =
      einsum::lift(p, ir::check_or_throw(p, {{"T", 1024}, {"D", 64}, {"H", 16}}));
  CacheOptimizer opt(g);
  const CacheSchedule s = opt.optimize(256 << 10);
  EXPECT_EQ(s.traffic_bytes, 41'943'040);
  const CacheGroup& grp = single_tiled_group(g, s);
  EXPECT_EQ(grp.loop_order, (std::vector<std::string>{"i", "h", "j"}));
}

// ---------------------------------------------------------------------------------------------
// Laws, over every example program

TEST(CacheLaws, ExamplesFusedLeCacheNonIncreasingEqualWhenAllFits) {
  const std::filesystem::path dir = std::filesystem::path(SOLAR_SOURCE_DIR) / "examples";
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() == ".ir") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  ASSERT_FALSE(files.empty());
  for (const auto& file : files) {
    const ir::Program p = ir::parse_file(file.string());
    const einsum::Graph g = einsum::lift(p, ir::check_or_throw(p, {}));
    const int64_t fused = dram_bytes(g, Fidelity::Fused);
    CacheOptimizer opt(g);
    int64_t previous = -1;
    for (int k = 6; k <= 40; k += 2) {
      const std::optional<CacheSchedule> s = opt.try_optimize(int64_t{1} << k);
      if (!s) {
        EXPECT_EQ(previous, -1) << file << ": fits at a smaller capacity, not at 2^" << k;
        continue;
      }
      EXPECT_GE(s->traffic_bytes, fused) << file << " 2^" << k;
      if (previous >= 0) {
        EXPECT_LE(s->traffic_bytes, previous) << file << " 2^" << k;
      }
      previous = s->traffic_bytes;
      int64_t sum = 0;
      for (const CacheGroup& grp : s->groups) {
        sum += grp.traffic_bytes;
        EXPECT_LE(grp.working_set_bytes, int64_t{1} << k);
        EXPECT_LE(grp.min_traffic_bytes, grp.traffic_bytes);
      }
      EXPECT_EQ(sum, s->traffic_bytes);
    }
    EXPECT_EQ(previous, fused) << file << ": everything fits in 1 TiB";
    // And cache-aware <= unfused once every node fits alone.
    EXPECT_LE(previous, dram_bytes(g, Fidelity::Unfused)) << file;
  }
}

// Issue 29's law: cache-aware <= unfused at every capacity where every unfused operation's
// working set fits (running each operation as one untiled group moves at most its unfused bytes).
// An operation is a run of consecutive nodes of one `op` block (a node outside any block alone);
// its working set is bounded above by the sum of its nodes' reads and writes.
TEST(CacheLaws, ExamplesCacheLeUnfusedWhenEveryOpFits) {
  const std::filesystem::path dir = std::filesystem::path(SOLAR_SOURCE_DIR) / "examples";
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() == ".ir") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& file : files) {
    const ir::Program p = ir::parse_file(file.string());
    const einsum::Graph g = einsum::lift(p, ir::check_or_throw(p, {}));
    int64_t largest_op = 0, op = 0;
    for (size_t n = 0; n < g.nodes.size(); ++n) {
      if (n == 0 || g.nodes[n].op_block.empty() || g.nodes[n].op_block != g.nodes[n - 1].op_block) {
        op = 0;
      }
      for (const auto* list : {&g.nodes[n].reads, &g.nodes[n].writes}) {
        for (const einsum::Access& a : *list) op += a.bytes;
      }
      largest_op = std::max(largest_op, op);
    }
    const int64_t unfused = dram_bytes(g, Fidelity::Unfused);
    CacheOptimizer opt(g);
    for (int k = 6; k <= 40; k += 2) {
      if ((int64_t{1} << k) < largest_op) continue;
      const std::optional<CacheSchedule> s = opt.try_optimize(int64_t{1} << k);
      ASSERT_TRUE(s) << file << " 2^" << k;
      EXPECT_LE(s->traffic_bytes, unfused) << file << " 2^" << k;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Streaming chains (docs/fidelities.md, "Streaming chains"): a lower bound where a streaming
// kernel's resident state fits though the chain does not.

// Batch norm in training mode over x f32[4, 2, 16] = 128 elements = 512 B, statistics per
// channel (2), as the lowering writes it: sum, mean, sum of squared deviations, variance, rstd,
// normalise.
const char* const kBatchNorm = R"(
input x : f32[4, 2, 16]
weight w : f32[2]
weight b : f32[2]
output y : f32[4, 2, 16]
tensor s1 : f32[2]
tensor mean : f32[2]
tensor s2 : f32[2]
tensor var : f32[2]
tensor rstd : f32[2]
kernel reduce {
  for n in 0..4, c in 0..2, i in 0..16:
    s1[c] += x[n, c, i]
}
kernel mean_k {
  for c in 0..2:
    mean[c] = s1[c] / 64
}
kernel reduce2 {
  for n in 0..4, c in 0..2, i in 0..16:
    s2[c] += (x[n, c, i] - mean[c]) * (x[n, c, i] - mean[c])
}
kernel var_k {
  for c in 0..2:
    var[c] = s2[c] / 64
}
kernel rstd_k {
  for c in 0..2:
    rstd[c] = rsqrt(var[c] + 1e-05)
}
kernel norm {
  for n in 0..4, c in 0..2, i in 0..16:
    y[n, c, i] = (x[n, c, i] - mean[c]) * rstd[c] * w[c] + b[c]
}
)";

TEST(CacheStream, BatchNormLargerThanTheCapacityReadsXTwice) {
  const einsum::Graph g = lift_text(kBatchNorm);
  CacheOptimizer opt(g);
  // 128 B: x (512 B) and one channel's slice (4 x 16 x 4 = 256 B) do not fit. The statistics
  // run in one pass (reduce and reduce2 paired: Welford), the normalisation in a second: x read
  // twice, 2 x 512 = 1024 B, y written once, 512 B; two statistics [2] (the mean, and the sum
  // of squares or rstd: 2 x 4 = 8 B each) cross between the passes, written and read:
  // 4 x 8 = 32 B; w and b 8 B each:
  // 1024 + 512 + 32 + 16 = 1584 B.
  const CacheSchedule s = opt.optimize(128);
  EXPECT_EQ(s.traffic_bytes, 1024 + 512 + 32 + 16);
  ASSERT_EQ(s.groups.size(), 2u);
  EXPECT_EQ(s.groups[0].mode, GroupMode::Stream);
  // reduce, mean_k, reduce2 (and var_k, rstd_k, or not: the same 2 x 4 B cross either way):
  // one pass over x; norm in the second.
  EXPECT_GE(s.groups[0].last, 3u);
  EXPECT_EQ(s.groups[1].first, s.groups[0].last);
  EXPECT_EQ(s.groups[1].last, 6u);
  EXPECT_TRUE(s.groups[0].lower_bound);
  // The search without its shortcuts agrees.
  EXPECT_EQ(opt.try_optimize_exhaustive(128)->traffic_bytes, s.traffic_bytes);
  // Everything fits in 2 KiB: the fused bytes, x read once: 512 + 512 + 16 = 1040 B.
  EXPECT_EQ(opt.optimize(2048).traffic_bytes, 512 + 512 + 16);
}

// repeat_kv: 2 key heads k f32[2, 8, 4] (64 elements, 256 B), each repeated for 2 query heads by
// broadcast + reshape, then scores s[h, i, j] += q[h, i, d] kr[h, j, d] over q f32[4, 8, 4]
// (128 elements, 512 B), s f32[4, 8, 8] (256 elements, 1024 B).
const char* const kRepeatKv = R"(
input q : f32[4, 8, 4]
input k : f32[2, 8, 4]
tensor k1 : f32[2, 1, 8, 4]
tensor ke : f32[2, 2, 8, 4]
tensor kc : f32[2, 2, 8, 4]
tensor kr : f32[4, 8, 4]
output s : f32[4, 8, 8]
k1 = reshape(k)
ke = broadcast(k1)
kc = ke
kr = reshape(kc)
kernel scores {
  for h in 0..4, i in 0..8, j in 0..8, d in 0..4:
    s[h, i, j] += q[h, i, d] * kr[h, j, d]
}
)";

TEST(CacheStream, RepeatKvIsAReReadOfTheKeys) {
  const einsum::Graph g = lift_text(kRepeatKv);
  ASSERT_EQ(g.nodes.size(), 2u);  // the materialised repeat (a copy), the scores
  CacheOptimizer opt(g);
  // 1 KiB: the untiled chain (k 256 + kr 512 + q 512 + s 1024 = 2304 B) does not fit. The copy's
  // write runs over its read's box (kr[2 g + r, j, d] over g, r, j, d: a reshape keeps row-major
  // order), so copy and scores are one tiled group over the key position j (tile 1) and d
  // (whole): per tile k 2 x 1 x 4 = 8 elements (32 B), kr 4 x 1 x 4 = 16 (64 B, on chip), s
  // 4 x 8 x 1 = 32 (128 B), q whole (128 elements, 512 B, fetched once): 736 B of working set;
  // k 256 + q 512 + s 1024 = 1792 B, the fused bytes (not 256 + 512 for the copy, then 512 +
  // 512 + 1024 = 2816 B). A schedule, not the stream bound of the same bytes.
  const CacheSchedule s = opt.optimize(1024);
  EXPECT_EQ(dram_bytes(g, Fidelity::Fused), 256 + 512 + 1024);
  EXPECT_EQ(s.traffic_bytes, 256 + 512 + 1024);
  ASSERT_EQ(s.groups.size(), 1u);
  EXPECT_EQ(s.groups[0].mode, GroupMode::Tiled);
  EXPECT_EQ(s.groups[0].working_set_bytes, 32 + 64 + 128 + 512);
  EXPECT_EQ(opt.try_optimize_exhaustive(1024)->traffic_bytes, s.traffic_bytes);
  // 128 B: the keys do not stay: no stream.
  EXPECT_GT(opt.optimize(128).traffic_bytes, 256 + 512 + 1024);
}

// A grouped-query decode step (issue 29): one query row per head, 4 query heads over 2 key/value
// heads, keys and values repeated per query head by repeat_kv's expand + reshape, then the
// attention as the SDPA rule lowers it. All f32: q, o 1 x 4 x 1 x 8 = 32 elements (128 B each);
// k, v 1 x 2 x 64 x 8 = 1024 elements (4096 B each). Fused: 4096 + 4096 + 128 + 128 = 8448 B.
// At 2 KiB the keys (4 KiB) do not fit. The copies write over their reads' boxes (vk[2 g + r,
// j, e] over g, r, j, e: a reshape keeps row-major order), so they join the attention in one
// group tiled over the key position j (tile 1): per step k and v 2 x 1 x 8 f32 (64 B each),
// read once in all (4096 B each); q whole, fetched once (128 B); the row sums sm (4 x 4 = 16 B)
// and the accumulator acc (4 x 8 x 4 = 128 B) written once: 4096 + 4096 + 128 + 16 + 128 =
// 8464 B. The divide `out` has no j loop, so it is a group of its own: acc 128 + sm 16 read, o
// 128 written = 272 B. Total 8736 B = the fused 8448 + 288 (the accumulator and row sums written
// and read back once). Before: each repeated copy streamed alone (k 4096 read, vk 8192 written;
// the same for v) and the attention read vk and vv (8192 B each): 41,504 B, about the keys and
// values once per query head.
TEST(CacheStream, GroupedQueryDecodeReadsTheKeysOnce) {
  const einsum::Graph g = lift_text(R"(
input q : f32[1, 4, 1, 8]
input k : f32[1, 2, 64, 8]
input v : f32[1, 2, 64, 8]
tensor uk : f32[1, 2, 1, 64, 8]
tensor ek : f32[1, 2, 2, 64, 8]
tensor ck : f32[1, 2, 2, 64, 8]
tensor vk : f32[1, 4, 64, 8]
tensor uv : f32[1, 2, 1, 64, 8]
tensor ev : f32[1, 2, 2, 64, 8]
tensor cv : f32[1, 2, 2, 64, 8]
tensor vv : f32[1, 4, 64, 8]
tensor scores : f32[1, 4, 1, 64]
tensor logits : f32[1, 4, 1, 64]
tensor mx : f32[1, 4, 1]
tensor p : f32[1, 4, 1, 64]
tensor sm : f32[1, 4, 1]
tensor acc : f32[1, 4, 1, 8]
output o : f32[1, 4, 1, 8]
uk = reshape(k)
ek = broadcast(uk)
op reshape {
ck = ek
vk = reshape(ck)
}
uv = reshape(v)
ev = broadcast(uv)
op reshape_1 {
cv = ev
vv = reshape(cv)
}
op attn {
kernel qk {
  for b0 in 0..1, b1 in 0..4, i in 0..1, j in 0..64, e in 0..8:
    scores[b0, b1, i, j] += q[b0, b1, i, e] * vk[b0, b1, j, e]
}
kernel lg {
  for b0 in 0..1, b1 in 0..4, i in 0..1, j in 0..64:
    logits[b0, b1, i, j] = scores[b0, b1, i, j] * 0.35355339059327373
}
kernel mx2 {
  for b0 in 0..1, b1 in 0..4, i in 0..1, j in 0..64:
    mx[b0, b1, i] max= logits[b0, b1, i, j]
}
kernel ex {
  for b0 in 0..1, b1 in 0..4, i in 0..1, j in 0..64:
    p[b0, b1, i, j] = exp(logits[b0, b1, i, j] - mx[b0, b1, i])
}
kernel sm2 {
  for b0 in 0..1, b1 in 0..4, i in 0..1, j in 0..64:
    sm[b0, b1, i] += p[b0, b1, i, j]
}
kernel pv {
  for b0 in 0..1, b1 in 0..4, i in 0..1, d in 0..8, j in 0..64:
    acc[b0, b1, i, d] += p[b0, b1, i, j] * vv[b0, b1, j, d]
}
kernel out {
  for b0 in 0..1, b1 in 0..4, i in 0..1, d in 0..8:
    o[b0, b1, i, d] = acc[b0, b1, i, d] / sm[b0, b1, i]
}
}
)");
  CacheOptimizer opt(g);
  EXPECT_EQ(dram_bytes(g, Fidelity::Fused), 4096 + 4096 + 128 + 128);
  const CacheSchedule s = opt.optimize(2048);
  EXPECT_EQ(s.traffic_bytes, (4096 + 4096 + 128 + 16 + 128) + (128 + 16 + 128));
  ASSERT_EQ(s.groups.size(), 2u);
  EXPECT_EQ(s.groups[0].mode, GroupMode::Tiled);
  EXPECT_EQ(s.groups[0].last - s.groups[0].first, 8u);  // both copies and the attention to pv
  EXPECT_EQ(opt.try_optimize_exhaustive(2048)->traffic_bytes, s.traffic_bytes);
}

// Time: fused <= cache-aware through the analysis, and T = max(compute, traffic / bandwidth).
TEST(CacheLaws, AnalysisTimes) {
  const einsum::Graph g = lift_text(attention(64, 16));
  const hw::Device d = hw::load_builtin_device("H100-SXM");
  AnalysisOptions o;
  o.cache.capacity_bytes = 4096;
  o.kernel_floor = false;  // the formulas' times, not H100-SXM's 0.4 us one-kernel floor
  const Analysis a = analyze(g, d, find_precision_policy(kDefaultPrecisionPolicy),
                             {Fidelity::Fused, Fidelity::Cache}, o);
  const FidelityResult& fused = a.result(Fidelity::Fused);
  const FidelityResult& cache = a.result(Fidelity::Cache);
  EXPECT_LE(fused.time_s, cache.time_s);
  EXPECT_EQ(cache.bytes, a.cache->traffic_bytes);
  EXPECT_DOUBLE_EQ(cache.memory_s, static_cast<double>(cache.bytes) / 3.35e12);
  EXPECT_DOUBLE_EQ(cache.time_s, std::max(cache.compute_s, cache.memory_s));
  EXPECT_DOUBLE_EQ(cache.compute_s, fused.compute_s);
  double sequential = 0;
  for (const CacheGroupCost& c : a.cache_groups) sequential += std::max(c.compute_s, c.memory_s);
  EXPECT_DOUBLE_EQ(a.cache_sequential_s, sequential);
  EXPECT_GE(a.cache_sequential_s, cache.time_s);
}

// ---------------------------------------------------------------------------------------------
// The tiled form of a large square GEMM

// M = N = K = 4096, f32, capacity S = C / 4 elements. In this mapspace the inputs move at least
// MNK (1/ti + 1/tj) elements with ti x tj < S, hence at least 2 MNK / sqrt(S) (AM-GM), so the
// ratio r = (traffic - output) / (2 MNK / sqrt(S) x 4 B) is >= 1. Power-of-two tiles reach:
// S = 4^a x 2: ti = tj = 2^a (ws 4^a + 2^(a+1) <= S), r = sqrt(2); S = 4^a: ti = 2^a,
// tj = 2^(a-1), r = 1.5. The output stays on chip across k: written once, 4 MN B.
TEST(CacheLimit, SquareGemmFollowsTiledForm) {
  const int64_t n = 4096;
  const einsum::Graph g = lift_gemm("f32", n, n, n);
  CacheOptimizer opt(g);
  const double mnk = std::pow(static_cast<double>(n), 3);
  for (int k = 16; k <= 24; ++k) {
    const int64_t c = int64_t{1} << k;
    const CacheSchedule s = opt.optimize(c);
    int64_t output = 0;
    for (const GroupTensor& t : s.groups.at(0).tensors) {
      if (t.name == "C") output = t.traffic_bytes;
    }
    EXPECT_EQ(output, 4 * n * n) << "2^" << k;
    const double inputs = static_cast<double>(s.traffic_bytes - output);
    const double r = inputs / (2 * mnk / std::sqrt(static_cast<double>(c) / 4) * 4);
    EXPECT_GE(r, 1.0) << "2^" << k;
    EXPECT_LE(r, 1.5 + 1e-12) << "2^" << k;
  }
}

// ---------------------------------------------------------------------------------------------
// Options

TEST(CacheOptions, ParseCapacityAndLevel) {
  EXPECT_EQ(parse_capacity("32MiB"), 32 * 1048576);
  EXPECT_EQ(parse_capacity("50MB"), 50000000);
  EXPECT_EQ(parse_capacity("256 KiB"), 262144);
  EXPECT_EQ(parse_capacity("4096"), 4096);
  EXPECT_EQ(parse_capacity("1gib"), 1073741824);
  EXPECT_THROW(parse_capacity("lots"), UserError);
  EXPECT_THROW(parse_capacity("0"), UserError);
  EXPECT_THROW(parse_capacity("3 parsecs"), UserError);
  EXPECT_EQ(parse_cache_level("SMEM"), hw::MemoryLevel::Smem);
  EXPECT_THROW(parse_cache_level("L3"), UserError);
  // H100-SXM: L2 50e6 B, SMEM 30818304 B (its device file).
  const hw::Device d = hw::load_builtin_device("H100-SXM");
  EXPECT_EQ(cache_capacity(d, {}), 50000000);
  EXPECT_EQ(cache_capacity(d, {hw::MemoryLevel::Smem, std::nullopt}), 30818304);
  EXPECT_EQ(cache_capacity(d, {hw::MemoryLevel::L2, int64_t{1024}}), 1024);
  EXPECT_FALSE(cache_capacity(hw::load_builtin_device("TPU-v5e"), {}));
}

TEST(CacheOptions, NoScheduleFits) {
  const einsum::Graph g = lift_gemm("f32", 8, 8, 8);
  CacheOptimizer opt(g);
  // The smallest tile: one element of each of A, B, C: 12 B.
  EXPECT_TRUE(opt.try_optimize(12));
  EXPECT_FALSE(opt.try_optimize(11));
  EXPECT_THROW(opt.optimize(11), UserError);
}

// A constant pad folds into the kernel as a guarded read of x (docs/einsum.md, "Views"): a
// pooling window and a strided convolution over a padded input, checked against brute force
// and the simulation (not exact: an edge tile counts its whole window span), at or above the
// fused bytes (x and the output once; w too).
const char* const kPaddedPool = R"(
input x : f32[1, 1, 8, 8]
tensor xp : f32[1, 1, 10, 10]
output y : f32[1, 1, 8, 8]
xp = pad(x, lo=[0, 0, 1, 1], hi=[0, 0, 1, 1], value=-inf)
kernel pool {
  for n in 0..1, c in 0..1, oh in 0..8, ow in 0..8, kh in 0..3, kw in 0..3:
    y[n, c, oh, ow] max= xp[n, c, oh + kh, ow + kw]
}
)";
const char* const kPaddedConv = R"(
input x : f32[1, 2, 8, 8]
tensor xp : f32[1, 2, 10, 10]
weight w : f32[3, 2, 3, 3]
output y : f32[1, 3, 4, 4]
xp = pad(x, lo=[0, 0, 1, 1], hi=[0, 0, 1, 1], value=0.0)
kernel conv {
  for n in 0..1, k in 0..3, oh in 0..4, ow in 0..4, c in 0..2, r in 0..3, s in 0..3:
    y[n, k, oh, ow] += xp[n, c, 2 * oh + r, 2 * ow + s] * w[k, c, r, s]
}
)";

TEST(CacheBruteForce, PaddedConvAndPool) {
  for (const char* text : {kPaddedConv, kPaddedPool}) {
    const einsum::Graph g = lift_text(text);
    ASSERT_EQ(g.nodes.size(), 1u);  // the pad folded away: one kernel
    // pool: x 64 x 4 + y 64 x 4 = 512 B; conv: x 128 x 4 + w 54 x 4 + y 48 x 4 = 920 B
    EXPECT_EQ(dram_bytes(g, Fidelity::Fused), text == kPaddedPool ? 512 : 920);
    expect_matches_brute_force(g, 0, 1, {100, 200, 288, 400, 512, 700, 1024, 4096}, false);
    CacheOptimizer opt(g);
    for (const int64_t c : {200, 512, 4096}) {
      const std::optional<CacheSchedule> s = opt.try_optimize(c);
      if (s) {
        EXPECT_GE(s->traffic_bytes, dram_bytes(g, Fidelity::Fused)) << c;
      }
    }
  }
}

}  // namespace
}  // namespace solar::sol
