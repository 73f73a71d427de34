// Footprints: how many distinct values an affine form takes over a loop-nest domain, exactly, by
// structure rather than by enumerating the domain (docs/einsum.md, "Footprints").
//
// The image of f = c + sum_l a_l x_l is built from parts, one per independent component of the
// domain (loops tied by their bounds): a box loop gives an arithmetic run {a x : lo <= x < hi}; a
// coupled component (a triangle) gives the union of the runs its innermost loop traces for each
// point of its outer loops. The image is the Minkowski sum of the parts. Parts are grouped so
// that groups cannot collide: with the parts sorted by the gcd of their values' differences, a
// cut falls where the span of the group so far is below the gcd of everything after it, and then
// |image| is the product of the group sizes. A group of several parts (a convolution window
// 2*oh + kh) is an interval when its runs chain without gaps, else it is summed in a bitset over
// its gcd-reduced range.
//
// Internal to the einsum module (lift.cpp, graph.cpp); not part of the public API.
#pragma once

#include <cstdint>
#include <vector>

#include "solar/einsum/graph.h"
#include "solar/ir/affine.h"

namespace solar::einsum::detail {

// start, start + step, ..., start + (count - 1) * step; step >= 1.
struct Run {
  int64_t start = 0;
  int64_t step = 1;
  int64_t count = 0;
  int64_t last() const { return start + (count - 1) * step; }
};

// A set of integers held as disjoint runs, or only its size when too large to hold.
struct ValueSet {
  std::vector<Run> runs;       // the values, when `listed`
  std::vector<uint64_t> bits;  // or: bit b set means min + gcd * b is in the set
  bool listed = true;          // runs or bits hold the values
  int64_t count = 0;           // number of values (a lower bound when !exact)
  bool exact = true;
  int64_t min = 0, max = 0;  // bounds on the values (exact when listed)
  int64_t gcd = 0;           // every value is min + a multiple of gcd (0: a single value)
};

// The set of values of an affine form over a domain: constant + the sum of one value of each
// group, every combination giving a distinct value.
struct Image {
  int64_t constant = 0;
  std::vector<ValueSet> groups;
  int64_t count = 0;  // product of the group counts; a lower bound when !exact
  bool exact = true;
  int64_t min = 0, max = 0;  // bounds on the values

  bool listed() const;  // every group's values are held, so the image can be enumerated
  // Calls fn(v) for every value; requires listed().
  template <typename Fn>
  void for_each(Fn fn) const;
};

// Limits: bitsets hold at most 2^28 bits (32 MiB); guarded maps are enumerated up to 2^26
// points (coupled components: footprint.cpp).
inline constexpr int64_t kMaxBits = int64_t{1} << 28;
inline constexpr int64_t kMaxEnumerated = int64_t{1} << 26;

// The image of `f` over `domain`; `extra` are further parts added to it (sets of values, each
// independent of the domain). Exact unless a coupled component or an overlapping group is too
// large (docs/einsum.md gives the lower bound used then).
Image affine_image(const ir::AffineForm& f, const ir::AffineDomain& domain,
                   std::vector<ValueSet> extra = {});

// The image of one access map: an affine map's flat offsets, where a guarded map counts only its
// in-bounds points.
Image map_image(const AccessMap& m);

// Whether two maps are the same (so that their elements are counted once without comparing).
bool same_map(const AccessMap& a, const AccessMap& b);

// Distinct elements of a tensor of `numel` elements touched by all of `maps` together, up to
// numel. Data-dependent maps add their moved elements (assumed distinct: balanced routing, and
// every map that is not routed), or, when `concentrated`, make the count at least their `fewest`
// (graph.h, Routing).
Footprint union_footprint(const std::vector<const AccessMap*>& maps, int64_t numel);

// Sets a.footprint, a.footprint_exact and a.bytes from the union of a's maps, for a tensor `t`.
void count_access(Access& a, const TensorInfo& t);

// ---------------------------------------------------------------------------------------------

template <typename Fn>
void Image::for_each(Fn fn) const {
  if (count == 0) return;
  std::vector<int64_t> partial(groups.size() + 1, constant);
  // Depth-first over the groups: partial[k] is the constant plus one value of each group < k.
  auto visit = [&](auto& self, size_t k) -> void {
    if (k == groups.size()) {
      fn(partial[k]);
      return;
    }
    const ValueSet& g = groups[k];
    if (!g.bits.empty()) {
      for (size_t w = 0; w < g.bits.size(); ++w) {
        for (uint64_t word = g.bits[w]; word != 0; word &= word - 1) {
          const auto b = static_cast<int64_t>(w * 64) + __builtin_ctzll(word);
          partial[k + 1] = partial[k] + g.min + g.gcd * b;
          self(self, k + 1);
        }
      }
      return;
    }
    for (const Run& r : g.runs) {
      for (int64_t j = 0; j < r.count; ++j) {
        partial[k + 1] = partial[k] + r.start + j * r.step;
        self(self, k + 1);
      }
    }
  };
  visit(visit, 0);
}

}  // namespace solar::einsum::detail
