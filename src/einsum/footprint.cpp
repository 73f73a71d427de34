// Footprints by structure (see footprint.h and docs/einsum.md, "Footprints").
#include "footprint.h"

#include <algorithm>
#include <bit>
#include <numeric>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>

#include "solar/einsum/translation.h"
#include "solar/ir/dtype.h"
#include "solar/util/checked.h"
#include "solar/util/error.h"

namespace solar::einsum::detail {
namespace {

// At most this many points of a coupled component's outer loops are enumerated (one run each),
// and about this many word operations spent summing one group in a bitset.
constexpr int64_t kMaxCoupledPoints = int64_t{1} << 22;
constexpr int64_t kMaxBitsetWork = int64_t{1} << 31;

int64_t product_of_sizes(int64_t a, int64_t b) {
  const std::optional<int64_t> r = checked_mul(a, b);
  SOLAR_CHECK(r.has_value(), "footprint: product of group sizes overflows");
  return *r;
}

int64_t floor_mod(int64_t a, int64_t m) {
  const int64_t r = a % m;
  return r < 0 ? r + m : r;
}

// A set of values from disjoint runs: count, bounds and gcd of the differences.
ValueSet set_of_runs(std::vector<Run> runs) {
  ValueSet s;
  if (runs.empty()) return s;
  s.min = runs.front().start;
  s.max = runs.front().last();
  for (const Run& r : runs) {
    s.min = std::min(s.min, r.start);
    s.max = std::max(s.max, r.last());
    s.count += r.count;
  }
  for (const Run& r : runs) {
    s.gcd = std::gcd(s.gcd, r.start - s.min);
    if (r.count > 1) s.gcd = std::gcd(s.gcd, r.step);
  }
  s.runs = std::move(runs);
  return s;
}

// Sorts runs that all have step `step` (or are single values, then step is 1) and merges those
// that overlap or touch within a residue class modulo the step, so that the result is disjoint.
std::vector<Run> merge_runs(std::vector<Run> runs, int64_t step) {
  for (Run& r : runs) r.step = step;
  std::sort(runs.begin(), runs.end(), [&](const Run& a, const Run& b) {
    const int64_t ra = floor_mod(a.start, step), rb = floor_mod(b.start, step);
    return ra != rb ? ra < rb : a.start < b.start;
  });
  std::vector<Run> merged;
  for (const Run& r : runs) {
    if (!merged.empty()) {
      Run& m = merged.back();
      if (floor_mod(m.start, step) == floor_mod(r.start, step) && r.start <= m.last() + step) {
        m.count = (std::max(m.last(), r.last()) - m.start) / step + 1;
        continue;
      }
    }
    merged.push_back(r);
  }
  return merged;
}

// Loop bounds compiled for fast enumeration: constant + terms over earlier loops of the nest.
class CompiledNest {
 public:
  // `loops`: positions in `domain`, in nest order; their bounds mention only loops among them.
  CompiledNest(const ir::AffineDomain& domain, const std::vector<size_t>& loops) {
    for (size_t k = 0; k < loops.size(); ++k) {
      const ir::AffineLoop& l = domain[loops[k]];
      lo_.push_back(compile(l.lo, domain, loops, k));
      hi_.push_back(compile(l.hi, domain, loops, k));
    }
  }

  size_t size() const { return lo_.size(); }
  int64_t lo(size_t k, const std::vector<int64_t>& x) const { return eval(lo_[k], x); }
  int64_t hi(size_t k, const std::vector<int64_t>& x) const { return eval(hi_[k], x); }

  // Calls fn(x) for the points of the first `depth` loops, in order, until it returns false or
  // `limit` points were visited. Returns whether every point was visited.
  template <typename Fn>
  bool enumerate(size_t depth, int64_t limit, Fn fn) const {
    std::vector<int64_t> x(size(), 0);
    int64_t visited = 0;
    auto rec = [&](auto& self, size_t k) -> bool {
      if (k == depth) {
        return ++visited <= limit && fn(static_cast<const std::vector<int64_t>&>(x));
      }
      const int64_t hi_k = hi(k, x);
      for (x[k] = lo(k, x); x[k] < hi_k; ++x[k]) {
        if (!self(self, k + 1)) return false;
      }
      return true;
    };
    return rec(rec, 0);
  }

 private:
  struct Bound {
    int64_t constant = 0;
    std::vector<std::pair<size_t, int64_t>> terms;  // (position among the loops, coefficient)
  };

  static Bound compile(const ir::AffineForm& f, const ir::AffineDomain& domain,
                       const std::vector<size_t>& loops, size_t k) {
    Bound b{f.constant, {}};
    for (size_t j = 0; j < k; ++j) {
      const int64_t c = f.coeff(domain[loops[j]].var);
      if (c != 0) b.terms.emplace_back(j, c);
    }
    return b;
  }

  static int64_t eval(const Bound& b, const std::vector<int64_t>& x) {
    int64_t v = b.constant;
    for (const auto& [j, c] : b.terms) v += c * x[j];
    return v;
  }

  std::vector<Bound> lo_, hi_;
};

// ---------------------------------------------------------------------------------------------
// Bitsets over a group's reduced range: bit b stands for min + gcd * b.

using Bits = std::vector<uint64_t>;

void set_bit(Bits& bits, int64_t b) {
  bits[static_cast<size_t>(b) / 64] |= uint64_t{1} << (b % 64);
}

// dst |= src << s (bits shifted past the end are dropped). dst and src may be the same.
void or_shifted(Bits& dst, const Bits& src, int64_t s) {
  const auto ws = static_cast<size_t>(s / 64);
  const int bs = static_cast<int>(s % 64);
  for (size_t w = dst.size(); w-- > ws;) {
    uint64_t v = src[w - ws] << bs;
    if (bs != 0 && w > ws) v |= src[w - ws - 1] >> (64 - bs);
    dst[w] |= v;
  }
}

// bits + {0, step, ..., (count - 1) * step}, by doubling the number of terms covered.
void add_progression(Bits& bits, int64_t step, int64_t count) {
  for (int64_t have = 1; have < count;) {
    const int64_t take = std::min(have, count - have);
    or_shifted(bits, bits, take * step);
    have += take;
  }
}

// Sets bits lo..hi - 1 (lo <= hi), whole words at a time.
void set_bit_range(Bits& bits, int64_t lo, int64_t hi) {
  if (lo >= hi) return;
  const auto first = static_cast<size_t>(lo / 64), last = static_cast<size_t>((hi - 1) / 64);
  const uint64_t head = ~uint64_t{0} << (lo % 64);
  const uint64_t tail = ~uint64_t{0} >> (63 - (hi - 1) % 64);
  if (first == last) {
    bits[first] |= head & tail;
    return;
  }
  bits[first] |= head;
  for (size_t w = first + 1; w < last; ++w) bits[w] = ~uint64_t{0};
  bits[last] |= tail;
}

int64_t popcount(const Bits& bits) {
  int64_t n = 0;
  for (uint64_t w : bits) n += std::popcount(w);
  return n;
}

// ---------------------------------------------------------------------------------------------
// Groups

// |A_1 + ... + A_k| >= |A_1| + ... + |A_k| - (k - 1) (Cauchy-Davenport for the integers).
ValueSet lower_bound_sum(const std::vector<ValueSet>& parts) {
  ValueSet s;
  s.listed = false;
  s.exact = false;
  for (const ValueSet& p : parts) {
    s.count += p.count;
    s.min += p.min;
    s.max += p.max;
    s.gcd = std::gcd(s.gcd, p.gcd);
  }
  s.count -= static_cast<int64_t>(parts.size()) - 1;
  return s;
}

// Whether the parts, each one run, chain into one interval of their gcd-reduced range: sorted by
// step, the first has step g and each next step is at most the span covered so far plus g.
bool chains_to_interval(std::vector<ValueSet> parts, int64_t g) {
  if (std::any_of(parts.begin(), parts.end(),
                  [](const ValueSet& p) { return p.runs.size() != 1; })) {
    return false;
  }
  std::sort(parts.begin(), parts.end(),
            [](const ValueSet& a, const ValueSet& b) { return a.runs[0].step < b.runs[0].step; });
  int64_t covered = 0;  // the reduced interval 0..covered is covered so far
  for (size_t i = 0; i < parts.size(); ++i) {
    const int64_t b = parts[i].runs[0].step / g;
    if (i == 0 ? b != 1 : b > covered + 1) return false;
    covered += (parts[i].runs[0].count - 1) * b;
  }
  return true;
}

// The Minkowski sum of a group's parts in a bitset, or nullopt when too much work.
std::optional<Bits> bitset_sum(std::vector<ValueSet> parts, int64_t g, int64_t range) {
  std::sort(parts.begin(), parts.end(),
            [](const ValueSet& a, const ValueSet& b) { return a.runs.size() > b.runs.size(); });
  const int64_t words = range / 64 + 1;
  int64_t work = parts[0].count;
  for (size_t i = 1; i < parts.size(); ++i) {
    for (const Run& r : parts[i].runs) work += words * (2 + std::bit_width(uint64_t(r.count)));
  }
  if (work > kMaxBitsetWork) return std::nullopt;
  Bits cur(static_cast<size_t>(words), 0);
  for (const Run& r : parts[0].runs) {
    for (int64_t j = 0; j < r.count; ++j) set_bit(cur, (r.start - parts[0].min + j * r.step) / g);
  }
  for (size_t i = 1; i < parts.size(); ++i) {
    if (parts[i].runs.size() == 1) {  // the run starts at the part's min: no shift
      add_progression(cur, parts[i].runs[0].step / g, parts[i].runs[0].count);
      continue;
    }
    Bits next(cur.size(), 0);
    for (const Run& r : parts[i].runs) {
      Bits shifted(cur.size(), 0);
      or_shifted(shifted, cur, (r.start - parts[i].min) / g);
      add_progression(shifted, r.step / g, r.count);
      for (size_t w = 0; w < next.size(); ++w) next[w] |= shifted[w];
    }
    cur = std::move(next);
  }
  return cur;
}

// The Minkowski sum of a group of parts.
ValueSet sum_group(const std::vector<ValueSet>& parts) {
  if (parts.size() == 1) return parts[0];
  const bool listed =
      std::all_of(parts.begin(), parts.end(), [](const ValueSet& p) { return p.listed; });
  if (!listed) return lower_bound_sum(parts);
  ValueSet s;
  for (const ValueSet& p : parts) {
    s.gcd = std::gcd(s.gcd, p.gcd);
    s.min += p.min;
    s.max += p.max;
  }
  const int64_t range = (s.max - s.min) / s.gcd + 1;
  if (chains_to_interval(parts, s.gcd)) {
    s.runs = {Run{s.min, s.gcd, range}};
    s.count = range;
    return s;
  }
  std::optional<Bits> bits;
  if (range <= kMaxBits) bits = bitset_sum(parts, s.gcd, range);
  if (!bits) return lower_bound_sum(parts);
  s.count = popcount(*bits);
  s.bits = std::move(*bits);
  return s;
}

int64_t span(const ValueSet& s) { return s.max - s.min; }

// Combines independent parts into an image (see footprint.h).
Image combine(int64_t constant, std::vector<ValueSet> parts) {
  Image img;
  img.constant = constant;
  std::vector<ValueSet> kept;
  for (ValueSet& p : parts) {
    if (p.count == 0) return img;  // an empty part: the image is empty
    if (p.count == 1 && p.exact) {
      img.constant += p.min;  // a single value only translates the image
    } else {
      kept.push_back(std::move(p));
    }
  }
  std::sort(kept.begin(), kept.end(), [](const ValueSet& a, const ValueSet& b) {
    return a.gcd != b.gcd ? a.gcd < b.gcd : span(a) < span(b);
  });
  std::vector<int64_t> suffix_gcd(kept.size() + 1, 0);
  for (size_t k = kept.size(); k-- > 0;) suffix_gcd[k] = std::gcd(suffix_gcd[k + 1], kept[k].gcd);
  img.count = 1;
  img.min = img.max = img.constant;
  std::vector<ValueSet> group;
  int64_t group_span = 0;
  for (size_t k = 0; k <= kept.size(); ++k) {
    // Cut before part k when the group so far cannot reach the next value of what follows.
    if (!group.empty() && (k == kept.size() || group_span < suffix_gcd[k])) {
      ValueSet g = sum_group(group);
      img.count = product_of_sizes(img.count, g.count);
      img.exact = img.exact && g.exact;
      img.min += g.min;
      img.max += g.max;
      img.groups.push_back(std::move(g));
      group.clear();
      group_span = 0;
    }
    if (k < kept.size()) {
      group_span += span(kept[k]);
      group.push_back(std::move(kept[k]));
    }
  }
  return img;
}

// ---------------------------------------------------------------------------------------------
// Parts of a domain

// The components of the domain: loops tied by their bounds, each in nest order.
std::vector<std::vector<size_t>> components(const ir::AffineDomain& domain) {
  std::vector<size_t> root(domain.size());
  std::iota(root.begin(), root.end(), size_t{0});
  const auto find = [&](size_t k) {
    while (root[k] != k) k = root[k] = root[root[k]];
    return k;
  };
  for (size_t k = 0; k < domain.size(); ++k) {
    for (size_t j = 0; j < k; ++j) {
      const std::string& v = domain[j].var;
      if (domain[k].lo.coeff(v) != 0 || domain[k].hi.coeff(v) != 0) root[find(k)] = find(j);
    }
  }
  std::vector<std::vector<size_t>> result;
  std::vector<size_t> index_of_root(domain.size(), SIZE_MAX);
  for (size_t k = 0; k < domain.size(); ++k) {
    size_t& slot = index_of_root[find(k)];
    if (slot == SIZE_MAX) {
      slot = result.size();
      result.emplace_back();
    }
    result[slot].push_back(k);
  }
  return result;
}

ir::AffineForm var_form(const std::string& var) { return ir::AffineForm{0, {{var, 1}}}; }

// a - b
ir::AffineForm minus(ir::AffineForm a, const ir::AffineForm& b) {
  a.constant -= b.constant;
  for (const auto& [v, c] : b.coeffs) {
    if ((a.coeffs[v] -= c) == 0) a.coeffs.erase(v);
  }
  return a;
}

// The part of a box loop: {a x : lo <= x < hi}.
ValueSet box_part(int64_t a, int64_t lo, int64_t hi) {
  const int64_t start = a > 0 ? a * lo : a * (hi - 1);
  return set_of_runs({Run{start, a > 0 ? a : -a, hi - lo}});
}

// Restricted to the loops of one component, the terms of `f` on them.
ir::AffineForm restrict_form(const ir::AffineForm& f, const ir::AffineDomain& domain,
                             const std::vector<size_t>& loops) {
  ir::AffineForm r;
  for (size_t k : loops) {
    const int64_t c = f.coeff(domain[k].var);
    if (c != 0) r.coeffs[domain[k].var] = c;
  }
  return r;
}

ir::AffineDomain sub_domain(const ir::AffineDomain& domain, const std::vector<size_t>& loops) {
  ir::AffineDomain d;
  for (size_t k : loops) d.push_back(domain[k]);
  return d;
}

// For a component too large to enumerate: when `g` (its terms of f) is injective on the
// component's loops that it uses, and the others can be dropped (nothing depends on them and
// their range is never empty), the image has as many values as those loops have points.
std::optional<int64_t> injective_count(const ir::AffineForm& g, const ir::AffineDomain& domain,
                                       std::vector<size_t> loops) {
  const auto depended_on = [&](size_t k) {
    return std::any_of(loops.begin(), loops.end(), [&](size_t j) {
      return domain[j].lo.coeff(domain[k].var) != 0 || domain[j].hi.coeff(domain[k].var) != 0;
    });
  };
  for (size_t i = loops.size(); i-- > 0;) {
    const ir::AffineLoop& l = domain[loops[i]];
    if (g.coeff(l.var) != 0) continue;
    if (depended_on(loops[i]) || ir::affine_min(minus(l.hi, l.lo), domain).value < 1) {
      return std::nullopt;
    }
    loops.erase(loops.begin() + static_cast<std::ptrdiff_t>(i));
  }
  std::vector<ValueSet> hull;  // g on the bounding box of the loops
  size_t varying = 0;
  for (size_t k : loops) {
    const std::string& v = domain[k].var;
    hull.push_back(box_part(g.coeff(v), ir::affine_min(var_form(v), domain).value,
                            ir::affine_max(var_form(v), domain).value + 1));
    varying += hull.back().count > 1 ? 1 : 0;
  }
  // Injective on the box when no two varying loops share a group.
  if (combine(0, std::move(hull)).groups.size() != varying) return std::nullopt;
  return ir::count_points(sub_domain(domain, loops));
}

// The part of a coupled component: the runs its innermost loop traces for every point of its
// outer loops, merged. Beyond the enumeration limits, injective_count or a lower bound.
ValueSet coupled_part(const ir::AffineForm& f, const ir::AffineDomain& domain,
                      const std::vector<size_t>& loops) {
  const CompiledNest nest(domain, loops);
  const size_t inner = loops.size() - 1;
  const int64_t a = f.coeff(domain[loops[inner]].var);
  std::vector<int64_t> outer_coeffs;
  for (size_t k = 0; k < inner; ++k) outer_coeffs.push_back(f.coeff(domain[loops[k]].var));
  const int64_t step = a == 0 ? 1 : (a > 0 ? a : -a);
  std::vector<Run> runs;
  const bool complete =
      nest.enumerate(inner, kMaxCoupledPoints, [&](const std::vector<int64_t>& x) {
        const int64_t lo = nest.lo(inner, x), hi = nest.hi(inner, x);
        if (lo >= hi) return true;
        int64_t base = 0;
        for (size_t k = 0; k < inner; ++k) base += outer_coeffs[k] * x[k];
        const Run r =
            a == 0 ? Run{base, 1, 1} : Run{base + (a > 0 ? a * lo : a * (hi - 1)), step, hi - lo};
        // Extend the previous run when this one continues it (an ascending triangle's rows).
        Run& prev = runs.empty() ? runs.emplace_back(r) : runs.back();
        if (floor_mod(prev.start, step) == floor_mod(r.start, step) && r.start >= prev.start &&
            r.start <= prev.last() + step) {
          prev.count = (std::max(prev.last(), r.last()) - prev.start) / step + 1;
        } else {
          runs.push_back(r);
        }
        return true;
      });
  runs = merge_runs(std::move(runs), step);
  ValueSet s = set_of_runs(std::move(runs));
  if (complete) return s;
  // Too large to list: count it exactly if injective, else keep what was seen (a lower bound).
  const ir::AffineForm g = restrict_form(f, domain, loops);
  s.runs.clear();
  s.listed = false;
  s.min = ir::affine_min(g, domain).value;
  s.max = ir::affine_max(g, domain).value;
  s.gcd = 0;
  for (const auto& [v, c] : g.coeffs) s.gcd = std::gcd(s.gcd, c);
  if (const std::optional<int64_t> n = injective_count(g, domain, loops)) {
    s.count = *n;
  } else {
    s.exact = false;
  }
  return s;
}

// The parts of f over the domain, one per component whose loops f uses.
std::vector<ValueSet> domain_parts(const ir::AffineForm& f, const ir::AffineDomain& domain) {
  std::vector<ValueSet> parts;
  for (const std::vector<size_t>& c : components(domain)) {
    const bool used =
        std::any_of(c.begin(), c.end(), [&](size_t k) { return f.coeff(domain[k].var) != 0; });
    if (!used) continue;  // the domain is not empty, so neither is this component
    if (c.size() == 1) {
      const ir::AffineLoop& l = domain[c[0]];
      parts.push_back(box_part(f.coeff(l.var), l.lo.constant, l.hi.constant));
    } else {
      parts.push_back(coupled_part(f, domain, c));
    }
  }
  return parts;
}

// ---------------------------------------------------------------------------------------------
// Guarded maps

std::set<std::string> vars_of(const ir::AffineForm& f) {
  std::set<std::string> vars;
  for (const auto& [v, c] : f.coeffs) vars.insert(v);
  return vars;
}

// Sorted distinct values as runs of consecutive values, each value times `scale` (non-zero).
std::vector<Run> consecutive_runs(const std::vector<int64_t>& sorted, int64_t scale) {
  std::vector<Run> runs;
  for (size_t i = 0; i < sorted.size();) {
    size_t j = i + 1;
    while (j < sorted.size() && sorted[j] == sorted[j - 1] + 1) ++j;
    const auto n = static_cast<int64_t>(j - i);
    runs.push_back(scale > 0 ? Run{scale * sorted[i], scale, n}
                             : Run{scale * sorted[j - 1], -scale, n});
    i = j;
  }
  return runs;
}

bool needs_clip(const AccessMap& m, size_t d) {
  return ir::affine_min(m.index[d], m.domain).value < 0 ||
         ir::affine_max(m.index[d], m.domain).value > m.extent[d] - 1;
}

// An arithmetic progression of integers: first, first + step, ... (count values; step >= 0).
struct Progression {
  int64_t first = 0, step = 0, count = 0;
};

std::optional<Progression> as_progression(const Image& img);

// The values of progression p in 0..extent, times `stride`, as a part (no enumeration).
ValueSet clipped_progression(const Progression& p, int64_t extent, int64_t stride) {
  int64_t lo = 0;
  int64_t hi = p.count;  // the k in [lo, hi) whose value first + k * step is in bounds
  if (p.step == 0) {
    if (p.first < 0 || p.first >= extent) hi = 0;
  } else {
    if (p.first < 0) lo = (-p.first + p.step - 1) / p.step;
    hi = p.first >= extent ? 0 : std::min(hi, (extent - 1 - p.first) / p.step + 1);
  }
  if (hi <= lo) return ValueSet{};
  if (stride == 0) return set_of_runs({Run{0, 1, 1}});  // a broadcast dimension: one element
  const int64_t n = hi - lo;
  const int64_t first = p.first + lo * p.step;
  const int64_t step = p.step == 0 ? 1 : p.step;
  return set_of_runs({stride > 0 ? Run{stride * first, stride * step, n}
                                 : Run{stride * (first + (n - 1) * step), -stride * step, n}});
}

// The values of index d that lie in 0..extent, times its stride, as a part; nullopt when they
// cannot be listed. A single progression is clipped arithmetically; other images are listed
// value by value, up to kMaxEnumerated values (a padded 10^12-row input: its rows' index is one
// progression, never a list of 10^12 values).
std::optional<ValueSet> clipped_part(const AccessMap& m, size_t d, const ir::AffineDomain& loops) {
  const Image values = affine_image(m.index[d], loops);
  if (!values.listed()) return std::nullopt;
  if (const std::optional<Progression> p = as_progression(values)) {
    return clipped_progression(*p, m.extent[d], m.strides[d]);
  }
  if (values.count > kMaxEnumerated) return std::nullopt;
  std::vector<int64_t> in_bounds;
  values.for_each([&](int64_t v) {
    if (v >= 0 && v < m.extent[d]) in_bounds.push_back(v);
  });
  std::sort(in_bounds.begin(), in_bounds.end());
  if (m.strides[d] == 0) {  // a broadcast dimension: one element, if any index is in bounds
    return in_bounds.empty() ? ValueSet{} : set_of_runs({Run{0, 1, 1}});
  }
  return set_of_runs(consecutive_runs(in_bounds, m.strides[d]));
}

// A guarded map whose out-of-bounds indices each use their own box loops: the in-bounds values
// of those indices are independent parts added to the image of the other indices.
std::optional<Image> separable_guarded_image(const AccessMap& m) {
  std::set<std::string> clipped_vars;
  std::vector<std::set<std::string>> vars;
  for (const ir::AffineForm& e : m.index) vars.push_back(vars_of(e));
  std::vector<ValueSet> parts;
  ir::AffineForm rest{m.offset, {}};
  for (size_t d = 0; d < m.index.size(); ++d) {
    if (!needs_clip(m, d)) {
      rest.constant += m.strides[d] * m.index[d].constant;
      for (const auto& [v, c] : m.index[d].coeffs) rest.coeffs[v] += m.strides[d] * c;
      continue;
    }
    ir::AffineDomain loops;
    for (const ir::AffineLoop& l : m.domain) {
      if (!vars[d].contains(l.var)) continue;
      if (!l.lo.coeffs.empty() || !l.hi.coeffs.empty()) return std::nullopt;  // not a box loop
      loops.push_back(l);
    }
    for (size_t e = 0; e < vars.size(); ++e) {
      for (const std::string& v : vars[d]) {
        if (e != d && vars[e].contains(v)) return std::nullopt;  // shared with another index
      }
    }
    std::optional<ValueSet> part = clipped_part(m, d, loops);
    if (!part) return std::nullopt;
    parts.push_back(std::move(*part));
    clipped_vars.insert(vars[d].begin(), vars[d].end());
  }
  std::erase_if(rest.coeffs, [](const auto& entry) { return entry.second == 0; });
  ir::AffineDomain rest_domain;
  for (const ir::AffineLoop& l : m.domain) {
    const bool depended_on = std::any_of(m.domain.begin(), m.domain.end(), [&](const auto& o) {
      return o.lo.coeff(l.var) != 0 || o.hi.coeff(l.var) != 0;
    });
    if (clipped_vars.contains(l.var) && depended_on) return std::nullopt;
    if (!clipped_vars.contains(l.var)) rest_domain.push_back(l);
  }
  return affine_image(rest, rest_domain, std::move(parts));
}

// A guarded map by enumeration of its domain: exact up to kMaxEnumerated points, then the
// distinct offsets seen so far (a lower bound). Offsets spanning more than kMaxBits are collected
// in a list instead of a bitset, up to kMaxCoupledPoints points.
Image enumerated_guarded_image(const AccessMap& m) {
  int64_t lo = m.offset, hi = m.offset;
  for (size_t d = 0; d < m.index.size(); ++d) {
    const int64_t reach = m.strides[d] * (m.extent[d] - 1);
    (reach < 0 ? lo : hi) += reach;
  }
  const bool in_bitset = hi - lo + 1 <= kMaxBits;
  Bits bits(in_bitset ? static_cast<size_t>((hi - lo) / 64 + 1) : 0, 0);
  std::vector<int64_t> seen;
  std::vector<size_t> all(m.domain.size());
  std::iota(all.begin(), all.end(), size_t{0});
  std::vector<std::vector<int64_t>> coeffs(m.index.size());
  for (size_t d = 0; d < m.index.size(); ++d) {
    for (const ir::AffineLoop& l : m.domain) coeffs[d].push_back(m.index[d].coeff(l.var));
  }
  const int64_t limit = in_bitset ? kMaxEnumerated : kMaxCoupledPoints;
  const bool complete =
      CompiledNest(m.domain, all).enumerate(all.size(), limit, [&](const auto& x) {
        int64_t flat = m.offset;
        for (size_t d = 0; d < m.index.size(); ++d) {
          int64_t v = m.index[d].constant;
          for (size_t k = 0; k < x.size(); ++k) v += coeffs[d][k] * x[k];
          if (v < 0 || v >= m.extent[d]) return true;
          flat += m.strides[d] * v;
        }
        if (in_bitset) {
          set_bit(bits, flat - lo);
        } else {
          seen.push_back(flat);
        }
        return true;
      });
  ValueSet s;
  if (in_bitset) {
    s.count = popcount(bits);
    s.bits = std::move(bits);
    s.min = lo;
    s.max = hi;
    s.gcd = 1;
  } else {
    std::sort(seen.begin(), seen.end());
    seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
    s = set_of_runs(consecutive_runs(seen, 1));
  }
  s.exact = s.listed = complete;
  Image img{0, {}, s.count, complete, lo, hi};
  if (s.count > 0) img.groups.push_back(std::move(s));
  return img;
}

// Sets bit v of `bits` for every value v of `img` in 0..numel - 1 (the set Image::for_each
// lists). The same set, built faster: a group that is one run continuing another group's single
// run (w and h of an [h, w] slice: {0..W-1} + {0, W, ..., (H-1) W} = {0..HW-1}) is merged into
// it, and the innermost group's runs of step 1 are set whole words at a time.
void set_image_bits(const Image& img, Bits& bits, int64_t numel) {
  if (img.count == 0) return;
  std::vector<ValueSet> groups = img.groups;
  int64_t constant = img.constant;
  if (!groups.empty() && groups[0].bits.empty() && groups[0].runs.size() == 1) {
    for (bool merged = true; merged;) {
      merged = false;
      Run& inner = groups[0].runs[0];
      for (size_t k = 1; k < groups.size(); ++k) {
        const ValueSet& g = groups[k];
        if (!g.bits.empty() || g.runs.size() != 1) continue;
        const Run& r = g.runs[0];
        const std::optional<int64_t> next = checked_mul(inner.step, inner.count);
        if (!next || r.step != *next) continue;
        // {s0 + d j : j < n} + {s1 + d n i : i < m} = {s0 + s1 + d j : j < n m}
        inner.start += r.start;
        inner.count = product_of_sizes(inner.count, r.count);
        groups.erase(groups.begin() + static_cast<std::ptrdiff_t>(k));
        merged = true;
        break;
      }
    }
  }
  // The innermost group is groups[0]; the others are enumerated around it.
  std::vector<ValueSet> outer(groups.begin() + (groups.empty() ? 0 : 1), groups.end());
  const auto fill = [&](int64_t base) {
    if (groups.empty()) {
      if (base >= 0 && base < numel) set_bit(bits, base);
      return;
    }
    const ValueSet& g = groups[0];
    if (!g.bits.empty()) {
      for (size_t w = 0; w < g.bits.size(); ++w) {
        for (uint64_t word = g.bits[w]; word != 0; word &= word - 1) {
          const int64_t v =
              base + g.min + g.gcd * (static_cast<int64_t>(w * 64) + std::countr_zero(word));
          if (v >= 0 && v < numel) set_bit(bits, v);
        }
      }
      return;
    }
    for (const Run& r : g.runs) {
      if (r.step == 1) {
        set_bit_range(bits, std::max<int64_t>(base + r.start, 0),
                      std::min(base + r.start + r.count, numel));
        continue;
      }
      for (int64_t j = 0; j < r.count; ++j) {
        const int64_t v = base + r.start + j * r.step;
        if (v >= 0 && v < numel) set_bit(bits, v);
      }
    }
  };
  Image rest;
  rest.constant = constant;
  rest.groups = std::move(outer);
  rest.count = 1;
  rest.for_each(fill);
}

// An image that is one arithmetic progression {first + step k : k < count}, step > 0 (0 for a
// single value); nullopt for any other image.
std::optional<Progression> as_progression(const Image& img) {
  if (!img.exact) return std::nullopt;
  if (img.groups.empty()) {
    if (img.count != 1) return std::nullopt;
    return Progression{img.constant, 0, 1};
  }
  if (img.groups.size() != 1) return std::nullopt;
  const ValueSet& g = img.groups[0];
  if (!g.listed || !g.exact || !g.bits.empty() || g.runs.size() != 1) return std::nullopt;
  const Run& r = g.runs[0];
  if (r.count != img.count || r.count < 1) return std::nullopt;
  if (r.count == 1) return Progression{img.constant + r.start, 0, 1};
  if (r.step > 0) return Progression{img.constant + r.start, r.step, r.count};
  return Progression{img.constant + r.last(), -r.step, r.count};
}

// The number of distinct values in [0, numel) of images that are all progressions of one step s
// (single values fit any step), without a bitset: the values of one residue modulo s are the
// intervals [first / s, first / s + count - 1] of quotients, merged. nullopt when some image is
// not such a progression or has a value outside [0, numel) (the bitset's rules then apply).
// The columns a scan writes one step at a time (4096 progressions of step 4096) take
// microseconds here, a second in a bitset.
std::optional<int64_t> progressions_union(const std::vector<Image>& images, int64_t numel) {
  std::vector<Progression> ps;
  int64_t step = 0;
  for (const Image& img : images) {
    const std::optional<Progression> p = as_progression(img);
    if (!p || p->first < 0) return std::nullopt;
    const std::optional<int64_t> span = checked_mul(p->step, p->count - 1);
    if (!span || *span >= numel - p->first) return std::nullopt;
    if (p->step != 0) {
      if (step != 0 && p->step != step) return std::nullopt;
      step = p->step;
    }
    ps.push_back(*p);
  }
  if (step == 0) step = 1;
  struct Interval {
    int64_t residue, lo, hi;  // quotients lo..hi (inclusive) of one residue
  };
  std::vector<Interval> intervals;
  intervals.reserve(ps.size());
  for (const Progression& p : ps) {
    const int64_t q = p.first / step;
    intervals.push_back({p.first % step, q, q + p.count - 1});
  }
  std::sort(intervals.begin(), intervals.end(), [](const Interval& a, const Interval& b) {
    return a.residue != b.residue ? a.residue < b.residue : a.lo < b.lo;
  });
  int64_t total = 0;
  for (size_t i = 0; i < intervals.size();) {
    Interval run = intervals[i];
    for (++i; i < intervals.size() && intervals[i].residue == run.residue &&
              intervals[i].lo <= run.hi + 1;
         ++i) {
      run.hi = std::max(run.hi, intervals[i].hi);
    }
    total += run.hi - run.lo + 1;
  }
  return total;
}

}  // namespace

bool same_map(const AccessMap& a, const AccessMap& b) {
  return a.data_dependent == b.data_dependent && a.moved == b.moved && a.offset == b.offset &&
         a.index == b.index && a.strides == b.strides && a.extent == b.extent &&
         a.guarded == b.guarded && same_domain(a.domain, b.domain) && a.text == b.text;
}

bool Image::listed() const {
  return std::all_of(groups.begin(), groups.end(), [](const ValueSet& g) { return g.listed; });
}

Image affine_image(const ir::AffineForm& f, const ir::AffineDomain& domain,
                   std::vector<ValueSet> extra) {
  if (ir::count_points(domain) == 0) return Image{f.constant, {}, 0, true, 0, 0};
  std::vector<ValueSet> parts = domain_parts(f, domain);
  for (ValueSet& p : extra) parts.push_back(std::move(p));
  return combine(f.constant, std::move(parts));
}

Image map_image(const AccessMap& m) {
  SOLAR_CHECK(!m.data_dependent, "map_image of a data-dependent map");
  bool clip = false;
  for (size_t d = 0; d < m.index.size() && m.guarded && !clip; ++d) clip = needs_clip(m, d);
  if (!clip) return affine_image(m.flat(), m.domain);
  if (std::optional<Image> img = separable_guarded_image(m)) return *img;
  return enumerated_guarded_image(m);
}

Footprint union_footprint(const std::vector<const AccessMap*>& maps, int64_t numel) {
  std::vector<const AccessMap*> distinct;
  // Maps that are the same have the same text: compared within their text's bucket only, not
  // with every distinct map so far (a weight read through 25,000 slices).
  std::unordered_map<std::string_view, std::vector<const AccessMap*>> by_text;
  int64_t moved = 0;   // balanced data-dependent maps: every element moved taken distinct
  int64_t fewest = 0;  // concentrated ones: at least the most any one of them must touch
  for (const AccessMap* m : maps) {
    if (m->data_dependent) {
      if (m->concentrated) {
        fewest = std::max(fewest, m->fewest);
      } else {
        moved += m->moved;
      }
      continue;
    }
    std::vector<const AccessMap*>& bucket = by_text[m->text];
    if (std::none_of(bucket.begin(), bucket.end(),
                     [&](const AccessMap* d) { return same_map(*d, *m); })) {
      bucket.push_back(m);
      distinct.push_back(m);
    }
  }
  std::vector<Image> images;
  for (const AccessMap* m : distinct) images.push_back(map_image(*m));
  std::sort(images.begin(), images.end(),
            [](const Image& a, const Image& b) { return a.min < b.min; });
  Footprint fp;
  bool disjoint = true;
  std::erase_if(images, [](const Image& img) { return img.count == 0; });
  for (size_t i = 0; i < images.size(); ++i) {
    if (images[i].exact && images[i].count >= numel) return Footprint{numel, true};
    disjoint = disjoint && (i == 0 || images[i].min > images[i - 1].max);
    fp.elements += images[i].count;
    fp.exact = fp.exact && images[i].exact;
  }
  if (!disjoint) {
    const bool listed =
        std::all_of(images.begin(), images.end(), [](const Image& img) { return img.listed(); });
    // no bitset here: at any size of the tensor
    const std::optional<int64_t> progressions =
        listed ? progressions_union(images, numel) : std::nullopt;
    if (progressions) {
      fp = Footprint{*progressions, true};
    } else if (listed && numel <= kMaxBits) {
      Bits bits(static_cast<size_t>(numel / 64 + 1), 0);
      for (const Image& img : images) set_image_bits(img, bits, numel);
      fp = Footprint{popcount(bits), true};
    } else {
      fp.elements = 0;  // a lower bound: the largest single map
      for (const Image& img : images) fp.elements = std::max(fp.elements, img.count);
      fp.exact = false;
    }
  }
  // Concentrated: the concentrated maps may touch only elements the others touch, so the union
  // is at least the larger of the two counts (and no more is assumed).
  fp.elements = std::min(numel, std::max(fp.elements + moved, fewest));
  return fp;
}

void count_access(Access& a, const TensorInfo& t) {
  std::vector<const AccessMap*> maps;
  maps.reserve(a.maps.size());
  for (const AccessMap& m : a.maps) maps.push_back(&m);
  const Footprint fp = union_footprint(maps, t.numel);
  a.footprint = fp.elements;
  a.footprint_exact = fp.exact;
  a.bytes = t.bytes_of(fp.elements);
}

}  // namespace solar::einsum::detail
