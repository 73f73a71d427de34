// Lowering rules for indexing and data movement that is not a plain view: flip, roll, index,
// index_put, index_select, gather, scatter, unfold, diagonal, repeat, nearest upsampling, and
// the trilinear contraction of nn.Bilinear. See docs/lowering.md.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "rules.h"
#include "solar/util/error.h"

namespace solar::frontend {
namespace {

// ":, " repeated `dims` times: the leading whole dims of a slice.
std::string whole(int64_t dims) {
  std::string s;
  for (int64_t d = 0; d < dims; ++d) s += ":, ";
  return s;
}

// flip: `y[.., i, ..] = x[.., n - 1 - i, ..]` along each flipped dim (a copy kernel).
void flip_rule(NodeLowering& n) {
  const TensorInfo x = n.tensor("self");
  std::vector<bool> flipped(x.rank(), false);
  for (int64_t d : n.ints_or("dims", {})) flipped[norm_dim(d, x.rank())] = true;
  std::string index;
  for (int d = 0; d < x.rank(); ++d) {
    const std::string i = kI + std::to_string(d);
    index += (d ? ", " : "") + (flipped[d] ? std::to_string(x.shape[d] - 1) + " - " + i : i);
  }
  pointwise(n, x.name + "[" + index + "]");
}

// roll: along each rolled dim, the last `shift` elements move to the front (two slices and two
// region copies); with no dims, the flattened tensor is rolled.
void roll_rule(NodeLowering& n) {
  const TensorInfo x = n.tensor("self");
  const TensorInfo& y = n.out();
  std::vector<int64_t> shifts = n.ints_or("shifts", {});
  std::vector<int64_t> dims = n.ints_or("dims", {});
  TensorInfo cur = x;
  if (dims.empty()) {
    if (shifts.size() != 1) throw UserError("roll without dims takes one shift");
    cur = n.temp("flat", x.dtype, {x.numel()});
    n.stmt(cur.name + " = reshape(" + x.name + ")");
    dims = {0};
  }
  if (shifts.size() != dims.size()) throw UserError("roll needs one shift per dim");
  for (size_t k = 0; k < dims.size(); ++k) {
    const int64_t d = norm_dim(dims[k], cur.rank());
    const int64_t size = cur.shape[d];
    const int64_t s = size == 0 ? 0 : ((shifts[k] % size) + size) % size;
    if (s == 0) continue;
    std::vector<int64_t> tail_shape = cur.shape;
    tail_shape[d] = s;
    std::vector<int64_t> head_shape = cur.shape;
    head_shape[d] = size - s;
    const TensorInfo tail = n.temp("tail", x.dtype, tail_shape);
    const TensorInfo head = n.temp("head", x.dtype, head_shape);
    const TensorInfo next = n.temp("roll", x.dtype, cur.shape);
    const std::string lead = whole(d);
    const std::string cut = std::to_string(size - s);
    n.stmt(tail.name + " = " + cur.name + "[" + lead + cut + ":]");
    n.stmt(head.name + " = " + cur.name + "[" + lead + ":" + cut + "]");
    n.stmt(next.name + "[" + lead + ":" + std::to_string(s) + "] = " + tail.name);
    n.stmt(next.name + "[" + lead + std::to_string(s) + ":] = " + head.name);
    cur = next;
  }
  n.stmt(y.name + " = " + (cur.shape == y.shape ? cur.name : "reshape(" + cur.name + ")"));
}

// index_select: `y = take(x, index, dim=d)` (a 0-d index keeps the dim with size 1).
void index_select_rule(NodeLowering& n) {
  const TensorInfo x = n.tensor("self");
  TensorInfo index = n.tensor("index");
  const int64_t dim = norm_dim(n.integer("dim"), x.rank());
  if (index.rank() == 0) {
    const TensorInfo one = n.temp("index", index.dtype, {1});
    n.stmt(one.name + " = reshape(" + index.name + ")");
    index = one;
  }
  n.stmt(n.out().name + " = take(" + x.name + ", " + index.name + ", dim=" + std::to_string(dim) +
         n.distinct_attr(index) + ")");
}

// Advanced indexing shared by index.Tensor and index_put: the indexed dims of x (non-null entries
// of `indices`), x viewed with them merged into one dim at `pos`, and the flat index into that
// merged dim (negative indices wrapped), an i64 tensor of the indices' broadcast shape.
struct Advanced {
  TensorInfo merged;              // x, indexed dims permuted together and merged
  int64_t pos = 0;                // where the merged dim is
  TensorInfo flat;                // the flat index, of the broadcast index shape
  std::vector<int64_t> perm;      // x's dims in merged order (identity when adjacent)
  std::vector<int64_t> permuted;  // x's shape in that order
};

Advanced advanced_index(NodeLowering& n, const TensorInfo& x) {
  std::vector<TensorInfo> idx;
  std::vector<int64_t> dims;
  {
    // indices: a list of tensor references and nulls, one per leading dim of x.
    const std::vector<TensorInfo> all = n.tensor_list_or_null("indices");
    for (size_t d = 0; d < all.size(); ++d) {
      if (all[d].name.empty()) continue;
      if (all[d].dtype == ir::DType::Bool || all[d].dtype == ir::DType::U8) {
        throw UserError("boolean mask indexing has a data-dependent shape (not supported)");
      }
      idx.push_back(all[d]);
      dims.push_back(static_cast<int64_t>(d));
    }
  }
  if (idx.empty()) throw UserError("no index tensor");
  bool adjacent = true;
  for (size_t k = 1; k < dims.size(); ++k) adjacent = adjacent && dims[k] == dims[k - 1] + 1;
  Advanced a;
  a.pos = adjacent ? dims[0] : 0;
  // The order of x's dims: unindexed before pos, the indexed ones, the rest.
  std::vector<bool> indexed(x.rank(), false);
  for (int64_t d : dims) indexed[d] = true;
  for (int64_t d = 0; d < a.pos; ++d) a.perm.push_back(d);
  for (int64_t d : dims) a.perm.push_back(d);
  for (int64_t d = 0; d < x.rank(); ++d) {
    if (!indexed[d] && d >= a.pos) a.perm.push_back(d);
  }
  TensorInfo px = x;
  bool identity = true;
  for (int64_t d = 0; d < x.rank(); ++d) {
    a.permuted.push_back(x.shape[a.perm[d]]);
    identity = identity && a.perm[d] == d;
  }
  if (!identity) {
    px = n.temp("perm", x.dtype, a.permuted);
    n.stmt(px.name + " = permute(" + x.name + ", [" + join_ints(a.perm) + "])");
  }
  std::vector<int64_t> merged_shape(a.permuted.begin(), a.permuted.begin() + a.pos);
  int64_t merged = 1;
  for (int64_t d : dims) merged *= x.shape[d];
  merged_shape.push_back(merged);
  merged_shape.insert(merged_shape.end(), a.permuted.begin() + a.pos + idx.size(),
                      a.permuted.end());
  a.merged = px;
  if (merged_shape != px.shape) {
    a.merged = n.temp("merged", x.dtype, merged_shape);
    n.stmt(a.merged.name + " = reshape(" + px.name + ")");
  }
  // The broadcast shape of the index tensors.
  size_t rank = 0;
  for (const TensorInfo& t : idx) rank = std::max(rank, static_cast<size_t>(t.rank()));
  std::vector<int64_t> shape(rank, 1);
  for (const TensorInfo& t : idx) {
    for (int d = 0; d < t.rank(); ++d) {
      int64_t& s = shape[rank - t.rank() + d];
      if (t.shape[d] != 1) s = t.shape[d];
    }
  }
  std::string flat;
  for (size_t k = 0; k < idx.size(); ++k) {
    const std::string size = std::to_string(x.shape[dims[k]]);
    const std::string v = idx[k].name + "[" + bcast_index(idx[k].shape, shape, kI) + "]";
    const std::string wrapped = "select(" + v + " < 0, " + v + " + " + size + ", " + v + ")";
    flat = k == 0 ? wrapped : "(" + flat + ") * " + size + " + " + wrapped;
  }
  a.flat = n.temp("flat", ir::DType::I64, shape);
  n.kernel("index", box_loops(shape, kI), at_box(a.flat), "=", flat);
  return a;
}

// index.Tensor: x[idx..] with advanced indices: the flat index into the merged indexed dims,
// then `take` along them.
void index_rule(NodeLowering& n) {
  const TensorInfo x = n.tensor("self");
  const Advanced a = advanced_index(n, x);
  // One index tensor: the flat index is it, negatives wrapped, so it holds as many different
  // values (value facts: a top-k router's experts).
  std::string distinct;
  const std::vector<TensorInfo> all = n.tensor_list_or_null("indices");
  if (all.size() == 1 && !all[0].name.empty()) distinct = n.distinct_attr(all[0]);
  n.stmt(n.out().name + " = take(" + a.merged.name + ", " + a.flat.name +
         ", dim=" + std::to_string(a.pos) + distinct + ")");
}

// index_put: the values, broadcast to the indexed region's shape, are scattered into the merged
// indexed dim (reduce=add with accumulate); the result is viewed back as x.
void index_put_rule(NodeLowering& n) {
  const TensorInfo x = n.tensor("self");
  const TensorInfo& y = n.out();
  const TensorInfo values = n.tensor("values");
  const Advanced a = advanced_index(n, x);
  // The region: merged dims before pos, the index dims flattened, the rest.
  std::vector<int64_t> region(a.merged.shape.begin(), a.merged.shape.begin() + a.pos);
  std::vector<int64_t> view = region;  // the region with the index dims unflattened
  view.insert(view.end(), a.flat.shape.begin(), a.flat.shape.end());
  region.push_back(a.flat.numel());
  view.insert(view.end(), a.merged.shape.begin() + a.pos + 1, a.merged.shape.end());
  region.insert(region.end(), a.merged.shape.begin() + a.pos + 1, a.merged.shape.end());
  const TensorInfo vb = n.temp("values", a.merged.dtype, view);
  if (values.dtype != a.merged.dtype) {
    const TensorInfo cast = n.temp("cast", a.merged.dtype, values.shape);
    n.stmt(cast.name + " = " + values.name);
    n.stmt(vb.name + " = broadcast(" + cast.name + ")");
  } else {
    n.stmt(vb.name + " = broadcast(" + values.name + ")");
  }
  const TensorInfo src = n.temp("src", a.merged.dtype, region);
  n.stmt(src.name + " = reshape(" + vb.name + ")");
  // The index of every region element: the flat index of its index-dims position.
  const TensorInfo flat1 = n.temp("flat1", ir::DType::I64, {a.flat.numel()});
  n.stmt(flat1.name + " = reshape(" + a.flat.name + ")");
  const TensorInfo index = n.temp("scatter_index", ir::DType::I64, region);
  n.kernel("spread", box_loops(region, kI), at_box(index), "=",
           flat1.name + "[" + kI + std::to_string(a.pos) + "]");
  const bool acc = n.flag_or("accumulate", false);
  const TensorInfo out = n.temp("scattered", a.merged.dtype, a.merged.shape);
  n.stmt(out.name + " = scatter(" + a.merged.name + ", " + index.name + ", " + src.name +
         ", dim=" + std::to_string(a.pos) + ", reduce=" + (acc ? "add" : "none") + ")");
  // Back to x's layout: unmerge, then undo the permutation.
  std::vector<int64_t> inverse(a.perm.size());
  bool identity = true;
  for (size_t d = 0; d < a.perm.size(); ++d) {
    inverse[a.perm[d]] = static_cast<int64_t>(d);
    identity = identity && a.perm[d] == static_cast<int64_t>(d);
  }
  if (identity) {
    n.stmt(y.name + " = reshape(" + out.name + ")");
    return;
  }
  const TensorInfo unmerged = n.temp("unmerged", a.merged.dtype, a.permuted);
  n.stmt(unmerged.name + " = reshape(" + out.name + ")");
  n.stmt(y.name + " = permute(" + unmerged.name + ", [" + join_ints(inverse) + "])");
}

// gather: `y = gather(x, index, dim=d)`.
void gather_rule(NodeLowering& n) {
  const TensorInfo x = n.tensor("self");
  n.stmt(n.out().name + " = gather(" + x.name + ", " + n.tensor("index").name +
         ", dim=" + std::to_string(norm_dim(n.integer("dim"), x.rank())) + ")");
}

// scatter.src / scatter.value / scatter_add / scatter_reduce.two: `y = scatter(x, index, src,
// dim=d, reduce=..)`; a scalar value is filled to the index's shape first.
Rule scatter_rule(const std::string& fixed_reduce) {
  return [fixed_reduce](NodeLowering& n) {
    const TensorInfo x = n.tensor("self");
    const TensorInfo index = n.tensor("index");
    std::string reduce = fixed_reduce;
    if (reduce.empty()) {
      const std::string r = n.string_or("reduce", "sum");
      if (!n.flag_or("include_self", true)) throw UserError("include_self=False is not supported");
      if (r == "sum") {
        reduce = "add";
      } else if (r == "amax") {
        reduce = "max";
      } else if (r == "amin") {
        reduce = "min";
      } else {
        throw UserError("scatter reduce '" + r + "' is not supported");
      }
    }
    std::string src;
    if (n.is_tensor("src")) {
      src = n.tensor("src").name;
    } else {
      const TensorInfo filled = n.temp("src", x.dtype, index.shape);
      n.kernel("fill", box_loops(index.shape, kI), at_box(filled), "=", lit(n.number("value")));
      src = filled.name;
    }
    n.stmt(n.out().name + " = scatter(" + x.name + ", " + index.name + ", " + src + ", dim=" +
           std::to_string(norm_dim(n.integer("dim"), x.rank())) + ", reduce=" + reduce + ")");
  };
}

// Tensor.unfold(dimension, size, step): `y[.., w, .., k] = x[.., step*w + k, ..]`.
void unfold_rule(NodeLowering& n) {
  const TensorInfo x = n.tensor("self");
  const TensorInfo& y = n.out();
  const int64_t dim = norm_dim(n.integer("dimension"), x.rank());
  const int64_t step = n.integer("step");
  std::string index;
  for (int d = 0; d < x.rank(); ++d) {
    std::string i = kI + std::to_string(d);
    if (d == dim) i = std::to_string(step) + "*" + i + " + " + kI + std::to_string(y.rank() - 1);
    index += (d ? ", " : "") + i;
  }
  pointwise(n, x.name + "[" + index + "]");
}

// diagonal(offset, dim1, dim2): the other dims in order, then the diagonal,
// `y[.., k] = x[.., k + max(-offset, 0), .., k + max(offset, 0), ..]`.
void diagonal_rule(NodeLowering& n) {
  const TensorInfo x = n.tensor("self");
  const TensorInfo& y = n.out();
  const int64_t d1 = norm_dim(n.integer_or("dim1", 0), x.rank());
  const int64_t d2 = norm_dim(n.integer_or("dim2", 1), x.rank());
  const int64_t offset = n.integer_or("offset", 0);
  const std::string k = kI + std::to_string(y.rank() - 1);
  std::string index;
  int other = 0;
  for (int d = 0; d < x.rank(); ++d) {
    std::string i;
    if (d == d1) {
      i = k + " + " + std::to_string(std::max<int64_t>(-offset, 0));
    } else if (d == d2) {
      i = k + " + " + std::to_string(std::max<int64_t>(offset, 0));
    } else {
      i = kI + std::to_string(other++);
    }
    index += (d ? ", " : "") + i;
  }
  pointwise(n, x.name + "[" + index + "]");
}

// repeat(repeats): x viewed as [1, s0, 1, s1, ..], broadcast to [r0, s0, r1, s1, ..], then
// viewed as the output (composition statements only).
void repeat_rule(NodeLowering& n) {
  const TensorInfo x = n.tensor("self");
  const TensorInfo& y = n.out();
  const std::vector<int64_t> reps = n.ints_or("repeats", {});
  if (reps.size() < static_cast<size_t>(x.rank())) throw UserError("fewer repeats than dims");
  std::vector<int64_t> shape(reps.size() - x.rank(), 1);
  shape.insert(shape.end(), x.shape.begin(), x.shape.end());
  std::vector<int64_t> ones;
  std::vector<int64_t> tiled;
  for (size_t d = 0; d < reps.size(); ++d) {
    ones.push_back(1);
    ones.push_back(shape[d]);
    tiled.push_back(reps[d]);
    tiled.push_back(shape[d]);
  }
  const TensorInfo a = n.temp("split", x.dtype, ones);
  const TensorInfo b = n.temp("tiled", x.dtype, tiled);
  n.stmt(a.name + " = reshape(" + x.name + ")");
  n.stmt(b.name + " = broadcast(" + a.name + ")");
  n.stmt(y.name + " = reshape(" + b.name + ")");
}

// upsample_nearest{1,2,3}d: per spatial dim an integer factor s up (`y[s*h + a] = x[h]`) or
// down (`y[o] = x[s*o]`), which is where floor(dst * in / out) reads; other ratios are refused.
void upsample_nearest_rule(NodeLowering& n) {
  const TensorInfo x = n.tensor(n.has("input") ? "input" : "self");
  const TensorInfo& y = n.out();
  const int lead = 2;
  std::string loops;
  std::string out_index;
  std::string in_index;
  for (int d = 0; d < x.rank(); ++d) {
    const std::string i = kI + std::to_string(d);
    const int64_t in = x.shape[d];
    const int64_t out = y.shape[d];
    std::string loop = i + " in 0.." + std::to_string(std::min(in, out));
    std::string o = i;
    std::string src = i;
    if (d >= lead && out > in) {
      if (in == 0 || out % in != 0) throw UserError("nearest upsampling by a non-integer factor");
      const std::string a = "a" + std::to_string(d);
      loop += ", " + a + " in 0.." + std::to_string(out / in);
      o = std::to_string(out / in) + "*" + i + " + " + a;
    } else if (d >= lead && out < in) {
      if (out == 0 || in % out != 0)
        throw UserError("nearest downsampling by a non-integer factor");
      src = std::to_string(in / out) + "*" + i;
    }
    loops += (d ? ", " : "") + loop;
    out_index += (d ? ", " : "") + o;
    in_index += (d ? ", " : "") + src;
  }
  n.kernel("nearest", loops, y.name + "[" + out_index + "]", "=", x.name + "[" + in_index + "]");
}

// The source step of linear resampling along one dim, as the ratio `q / p` of two integers: output
// o reads the source at o * q/p (align_corners) or (o + 0.5) * q/p - 0.5 (clamped at 0), where
// q/p is PyTorch's scale (area_pixel_compute_scale): (in - 1)/(out - 1) with align_corners (0
// when out is 1), else 1/scale when the op was given a scale factor, else in/out.
struct Step {
  int64_t q = 1, p = 1;
};

Step reduced(int64_t q, int64_t p) {
  const int64_t g = std::gcd(q, p);
  return g == 0 ? Step{0, 1} : Step{q / g, p / g};
}

// 1/scale as q/p: the fraction p/q equal to `scale` (to 1e-9 relative), q and p at most 4096,
// from the continued fraction of `scale`; a scale that is no such fraction is a UserError.
Step inverse_scale(double scale) {
  int64_t h0 = 0, h1 = 1, k0 = 1, k1 = 0;  // convergents h/k
  double x = scale;
  for (int it = 0; it < 40; ++it) {
    const double a = std::floor(x);
    const int64_t ai = static_cast<int64_t>(a);
    const int64_t h2 = ai * h1 + h0;
    const int64_t k2 = ai * k1 + k0;
    if (h2 > 4096 || k2 > 4096) break;
    h0 = h1, h1 = h2, k0 = k1, k1 = k2;
    if (std::abs(static_cast<double>(h1) / static_cast<double>(k1) - scale) <= 1e-9 * scale) {
      return reduced(k1, h1);
    }
    if (x - a < 1e-12) break;
    x = 1.0 / (x - a);
  }
  throw UserError("linear resampling by the scale factor " + lit(scale) +
                  ", which is no ratio of integers up to 4096, is not supported");
}

// Linear interpolation of `src` along `dim` to `out_shape[dim]` points with source step `step`.
// Output p*h + a (one kernel per phase a in 0..p) reads the source at q*h + c, c the phase's
// constant offset: x[q*h + f] * (1 - w) + x[q*h + f + 1] * w with f = floor(c) and w = c - f,
// so the weights of a kernel are constants. At the upper edge the right neighbour is the source
// itself (PyTorch's `h1p`), a `select` where some h reaches it; a negative offset (first outputs,
// align_corners=False) is clamped to x[0] at h = 0.
TensorInfo interpolate_dim(NodeLowering& n, const TensorInfo& src, int dim, Step step,
                           bool align_corners, const std::vector<int64_t>& out_shape,
                           const TensorInfo* into) {
  const TensorInfo t = into ? *into : n.temp("interp", acc_dtype(src), out_shape);
  const int64_t size = src.shape[dim];
  const int64_t out = out_shape[dim];
  const int64_t q = step.q;
  const int64_t p = step.p;
  const int64_t phases = std::min(p, out);
  if (phases > 256) {
    throw UserError("linear resampling of dim " + std::to_string(dim) + " from " +
                    std::to_string(size) + " to " + std::to_string(out) + " needs " +
                    std::to_string(phases) + " phases (at most 256 are lowered)");
  }
  const std::string h = kI + std::to_string(dim);
  const std::string qh = q == 0 ? std::string("0") : q == 1 ? h : std::to_string(q) + "*" + h;
  auto at = [&](const std::string& pos) {
    std::string index;
    for (int d = 0; d < src.rank(); ++d) {
      index += (d ? ", " : "") + (d == dim ? pos : kI + std::to_string(d));
    }
    return src.name + "[" + index + "]";
  };
  auto plus = [&](int64_t f) {
    return f == 0 ? qh : f > 0 ? qh + " + " + std::to_string(f) : qh + " - " + std::to_string(-f);
  };
  for (int64_t a = 0; a < phases; ++a) {
    const int64_t count = (out - a + p - 1) / p;  // the h with p*h + a < out
    // c = num / den exactly: a*q/p, or ((2a + 1) q - p) / (2p)
    const int64_t num = align_corners ? a * q : (2 * a + 1) * q - p;
    const int64_t den = align_corners ? p : 2 * p;
    const int64_t f = num >= 0 ? num / den : -((-num + den - 1) / den);
    const double w = static_cast<double>(num - f * den) / static_cast<double>(den);
    std::string out_index;
    for (int d = 0; d < src.rank(); ++d) {
      out_index +=
          (d ? ", " : "") + (d == dim ? std::to_string(p) + "*" + h + " + " + std::to_string(a)
                                      : kI + std::to_string(d));
    }
    std::string value;
    if (w == 0.0) {
      value = at(plus(f));
    } else if (f >= 0) {
      const std::string both =
          at(plus(f)) + " * " + lit(1.0 - w) + " + " + at(plus(f + 1)) + " * " + lit(w);
      const bool edge = q * (count - 1) + f + 1 >= size;  // the last h has no right neighbour
      value = edge ? "select(" + plus(f + 1) + " < " + std::to_string(size) + ", " + both + ", " +
                         at(plus(f)) + ")"
                   : both;
    } else {  // f = -1: clamped to the source's first element at h = 0
      value = "select(" + h + " >= 1, " + at(plus(-1)) + " * " + lit(1.0 - w) + " + " + at(qh) +
              " * " + lit(w) + ", " + at(qh) + ")";
    }
    std::vector<int64_t> box = src.shape;
    box[dim] = count;
    n.kernel("phase", box_loops(box, kI), t.name + "[" + out_index + "]", "=", value);
  }
  return t;
}

// upsample_bilinear2d / upsample_linear1d / upsample_trilinear3d, either align_corners, to any
// size: separable, one resized spatial dim after the other (interpolate_dim). The source step is
// PyTorch's (Step): with a scale factor and no output size (the `.vec` form of
// F.interpolate(scale_factor=s)), the output size is floor(in * s) and the step 1/s.
void upsample_linear_rule(NodeLowering& n) {
  const TensorInfo x = n.tensor(n.has("input") ? "input" : "self");
  const TensorInfo& y = n.out();
  const bool align_corners = n.flag_or("align_corners", false);
  const int spatial = x.rank() - 2;
  // The scale factors: `scale_factors` (.vec), or scales_d/h/w and scales (.default).
  std::vector<double> scales = n.numbers_or("scale_factors", {});
  if (scales.empty()) {
    constexpr const char* kNames[3][3] = {
        {"scales", "", ""}, {"scales_h", "scales_w", ""}, {"scales_d", "scales_h", "scales_w"}};
    if (spatial >= 1 && spatial <= 3) {
      for (int d = 0; d < spatial; ++d) scales.push_back(n.number_or(kNames[spatial - 1][d], 0.0));
    }
  } else if (static_cast<int>(scales.size()) == 1 && spatial > 1) {
    scales.assign(spatial, scales[0]);
  }
  if (!scales.empty() && static_cast<int>(scales.size()) != spatial) {
    throw UserError("linear upsampling: " + std::to_string(scales.size()) + " scale factors for " +
                    std::to_string(spatial) + " spatial dims");
  }
  std::vector<int> dims;
  std::vector<Step> steps;
  for (int d = 2; d < x.rank(); ++d) {
    const int64_t in = x.shape[d];
    const int64_t out = y.shape[d];
    const double scale = scales.empty() ? 0.0 : scales[d - 2];
    if (!n.has("output_size") && scale > 0.0 &&
        static_cast<int64_t>(std::floor(static_cast<double>(in) * scale)) != out) {
      throw UserError("linear upsampling of size " + std::to_string(in) + " by " + lit(scale) +
                      " gives " + std::to_string(out) + " points, not floor(in * scale)");
    }
    if (in == 0 || out == 0) throw UserError("linear upsampling of an empty dim");
    Step step;
    if (align_corners) {
      step = out > 1 ? reduced(in - 1, out - 1) : Step{0, 1};
    } else if (scale > 0.0) {
      step = inverse_scale(scale);
    } else {
      step = reduced(in, out);
    }
    if (out == in && step.q == step.p) continue;  // the identity
    dims.push_back(d);
    steps.push_back(step);
  }
  if (dims.empty()) return n.stmt(y.name + " = " + x.name);
  TensorInfo cur = x;
  for (size_t k = 0; k < dims.size(); ++k) {
    std::vector<int64_t> shape = cur.shape;
    shape[dims[k]] = y.shape[dims[k]];
    const bool last = k + 1 == dims.size();
    cur = interpolate_dim(n, cur, dims[k], steps[k], align_corners, shape, last ? &y : nullptr);
  }
}

// _trilinear(i1, i2, i3, expand1, expand2, expand3, sumdim): each input gets size-1 dims at its
// expand dims, then `y += i1 * i2 * i3` over the common box, summed over `sumdim`.
void trilinear_rule(NodeLowering& n) {
  const TensorInfo& y = n.out();
  const std::vector<TensorInfo> in{n.tensor("i1"), n.tensor("i2"), n.tensor("i3")};
  std::vector<std::vector<bool>> expanded;
  size_t rank = 0;
  for (int k = 0; k < 3; ++k) {
    const std::vector<int64_t> e = n.ints_or("expand" + std::to_string(k + 1), {});
    rank = in[k].rank() + e.size();
    std::vector<bool> mask(rank, false);
    for (int64_t d : e) mask[norm_dim(d, static_cast<int>(rank))] = true;
    expanded.push_back(mask);
  }
  std::vector<int64_t> box(rank, 1);
  std::vector<std::string> reads;
  for (int k = 0; k < 3; ++k) {
    if (in[k].rank() + std::count(expanded[k].begin(), expanded[k].end(), true) !=
        static_cast<int64_t>(rank)) {
      throw UserError("inputs of different ranks after expansion");
    }
    std::string index;
    int src = 0;
    for (size_t d = 0; d < rank; ++d) {
      if (expanded[k][d]) continue;
      const int64_t size = in[k].shape[src++];
      if (size != 1) box[d] = size;
      index += (index.empty() ? "" : ", ") + (size == 1 ? "0" : "j" + std::to_string(d));
    }
    reads.push_back(in[k].name + "[" + index + "]");
  }
  std::vector<bool> summed(rank, false);
  for (int64_t d : n.ints_or("sumdim", {})) summed[norm_dim(d, static_cast<int>(rank))] = true;
  const bool keep = y.rank() == static_cast<int>(rank);
  // y's index: the dims not summed (summed dims dropped, or 0 with keepdim).
  std::string out_index;
  for (size_t d = 0; d < rank; ++d) {
    if (summed[d] && !keep) continue;
    out_index += (out_index.empty() ? "" : ", ") + (summed[d] ? "0" : "j" + std::to_string(d));
  }
  const std::string loops = box_loops(box, "j");
  // Summed dims that i3 does not have are summed over i1 * i2 first (nn.Bilinear:
  // t[b, o, j] = x1[b, i] W[o, i, j], then y[b, o] = t[b, o, j] x2[b, j]), as PyTorch does.
  std::vector<bool> first(rank, true);
  bool two_stage = false;
  for (size_t d = 0; d < rank; ++d) {
    if (summed[d] && expanded[2][d]) {
      first[d] = false;
      two_stage = true;
    }
  }
  if (!two_stage) {
    n.kernel("trilinear", loops, y.name + "[" + out_index + "]",
             "+=", reads[0] + " * " + reads[1] + " * " + reads[2]);
    return;
  }
  std::vector<int64_t> t_shape;
  std::string t_index;
  std::string t_loops;
  for (size_t d = 0; d < rank; ++d) {
    if (!first[d]) continue;
    t_shape.push_back(box[d]);
    t_index += (t_index.empty() ? "" : ", ") + ("j" + std::to_string(d));
    t_loops +=
        (t_loops.empty() ? "j" : ", j") + std::to_string(d) + " in 0.." + std::to_string(box[d]);
  }
  const TensorInfo t = n.temp("partial", acc_dtype(y), t_shape);
  n.kernel("partial", loops, t.name + "[" + t_index + "]", "+=", reads[0] + " * " + reads[1]);
  n.kernel("trilinear", t_loops, y.name + "[" + out_index + "]",
           "+=", t.name + "[" + t_index + "] * " + reads[2]);
}

// copy(self, src): src broadcast to self's shape, in self's dtype.
void copy_from_rule(NodeLowering& n) {
  const TensorInfo& y = n.out();
  const TensorInfo src = n.tensor("src");
  if (src.shape == y.shape) return n.stmt(y.name + " = " + src.name);
  TensorInfo from = src;
  if (src.dtype != y.dtype) {
    from = n.temp("cast", y.dtype, src.shape);
    n.stmt(from.name + " = " + src.name);
  }
  n.stmt(y.name + " = broadcast(" + from.name + ")");
}

// slice_scatter: `y = x`, then `y[.., start:end:step, ..] = src` (start and end clamped as
// Python slicing does).
void slice_scatter_rule(NodeLowering& n) {
  const TensorInfo x = n.tensor("self");
  const TensorInfo& y = n.out();
  const int64_t dim = norm_dim(n.integer_or("dim", 0), x.rank());
  const int64_t size = x.shape[dim];
  auto clampi = [size](int64_t v) { return std::clamp(v < 0 ? v + size : v, int64_t{0}, size); };
  const int64_t start = clampi(n.integer_or("start", 0));
  const int64_t end = std::max(start, clampi(n.integer_or("end", size)));
  n.stmt(y.name + " = " + x.name);
  n.stmt(y.name + "[" + whole(dim) + std::to_string(start) + ":" + std::to_string(end) + ":" +
         std::to_string(n.integer_or("step", 1)) + "] = " + n.tensor("src").name);
}

// select_scatter: `y = x`, then `y[.., index, ..] = src`.
void select_scatter_rule(NodeLowering& n) {
  const TensorInfo x = n.tensor("self");
  const TensorInfo& y = n.out();
  const int64_t dim = norm_dim(n.integer("dim"), x.rank());
  int64_t index = n.integer("index");
  if (index < 0) index += x.shape[dim];
  n.stmt(y.name + " = " + x.name);
  n.stmt(y.name + "[" + whole(dim) + std::to_string(index) + "] = " + n.tensor("src").name);
}

}  // namespace

// Declared in rules.h; defined here, next to its only user.
std::vector<TensorInfo> NodeLowering::tensor_list_or_null(const std::string& key) const {
  std::vector<TensorInfo> result;
  for (const nlohmann::json& ref : arg(key)) {
    result.push_back(ref.is_null() ? TensorInfo{} : lookup(ref));
  }
  return result;
}

void register_index_rules(RuleTable& r) {
  r["aten.flip.default"] = flip_rule;
  r["aten.roll.default"] = roll_rule;
  r["aten.index_select.default"] = index_select_rule;
  r["aten.index.Tensor"] = index_rule;
  r["aten.index_put.default"] = index_put_rule;
  r["aten.gather.default"] = gather_rule;
  r["aten.scatter.src"] = scatter_rule("none");
  r["aten.scatter.value"] = scatter_rule("none");
  r["aten.scatter_add.default"] = scatter_rule("add");
  r["aten.scatter_reduce.two"] = scatter_rule("");
  r["aten.unfold.default"] = unfold_rule;
  r["aten.diagonal.default"] = diagonal_rule;
  r["aten.repeat.default"] = repeat_rule;
  for (const char* op : {"aten.upsample_nearest1d.vec", "aten.upsample_nearest2d.vec",
                         "aten.upsample_nearest3d.vec", "aten.upsample_nearest1d.default",
                         "aten.upsample_nearest2d.default", "aten.upsample_nearest3d.default"}) {
    r[op] = upsample_nearest_rule;
  }
  r["aten._trilinear.default"] = trilinear_rule;
  for (const char* op : {"aten.upsample_linear1d.vec", "aten.upsample_bilinear2d.vec",
                         "aten.upsample_trilinear3d.vec", "aten.upsample_linear1d.default",
                         "aten.upsample_bilinear2d.default", "aten.upsample_trilinear3d.default"}) {
    r[op] = upsample_linear_rule;
  }
  r["aten.copy.default"] = copy_from_rule;
  r["aten.slice_scatter.default"] = slice_scatter_rule;
  r["aten.select_scatter.default"] = select_scatter_rule;
}

}  // namespace solar::frontend
