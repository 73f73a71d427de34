// Lowering rules for JAX primitives that contract, reduce, sort or index: dot_general,
// conv_general_dilated, reduce_*, argmax/argmin, cumulative ops, sort, top_k, gather, scatter
// and reduce_window. See docs/jax.md.
#include <algorithm>
#include <string>
#include <vector>

#include "lax_common.h"
#include "rules.h"
#include "solar/util/error.h"
#include "solar/util/text.h"

namespace solar::frontend::lax {
namespace {

// ---- contractions ------------------------------------------------------------------------

// dot_general: y[batch.., lhs free.., rhs free..] += lhs[..] * rhs[..] over the contracting
// dims (one loop k<c> per contracting pair).
void dot_general_rule(NodeLowering& n) {
  const TensorInfo a = n.tensor(arg(0));
  const TensorInfo b = n.tensor(arg(1));
  const TensorInfo& y = n.out();
  const std::vector<int64_t> lc = n.ints_or("dimension_numbers.0.0", {});
  const std::vector<int64_t> rc = n.ints_or("dimension_numbers.0.1", {});
  const std::vector<int64_t> lb = n.ints_or("dimension_numbers.1.0", {});
  const std::vector<int64_t> rb = n.ints_or("dimension_numbers.1.1", {});
  if (lc.size() != rc.size() || lb.size() != rb.size()) {
    throw UserError("dimension_numbers pair unequal numbers of dims");
  }
  std::vector<std::string> ai(a.rank()), bi(b.rank());
  std::string loops = box_loops(y.shape, kI);
  for (size_t c = 0; c < lc.size(); ++c) {
    const std::string k = "k" + std::to_string(c);
    ai.at(lc[c]) = k;
    bi.at(rc[c]) = k;
    loops += ", " + k + " in 0.." + std::to_string(a.shape.at(lc[c]));
  }
  for (size_t d = 0; d < lb.size(); ++d) {
    ai.at(lb[d]) = kI + std::to_string(d);
    bi.at(rb[d]) = kI + std::to_string(d);
  }
  size_t next = lb.size();  // free dims: the lhs's, then the rhs's, in order
  for (std::vector<std::string>* idx : {&ai, &bi}) {
    for (std::string& name : *idx) {
      if (name.empty()) name = kI + std::to_string(next++);
    }
  }
  if (static_cast<int>(next) != y.rank()) throw UserError("output rank does not match operands");
  n.kernel("dot", loops, at_box(y),
           "+=", a.name + "[" + join(ai) + "] * " + b.name + "[" + join(bi) + "]");
}

// Padding of the spatial dims of a convolution's input: dilated by lhs_dilation (zeros between
// elements) and padded by (lo, hi); returns the tensor to read and each dim's read offset.
struct ConvInput {
  TensorInfo t;
  std::vector<int64_t> offset;
};

ConvInput conv_input(NodeLowering& n, const TensorInfo& x, const std::vector<int64_t>& spatial,
                     const std::vector<int64_t>& lo, const std::vector<int64_t>& hi,
                     const std::vector<int64_t>& ld) {
  const size_t sp = spatial.size();
  bool dilated = false;
  bool padded = false;
  std::vector<int64_t> plo(x.rank(), 0), phi(x.rank(), 0), step(x.rank(), 1);
  std::vector<int64_t> shape = x.shape;
  std::vector<int64_t> offset(sp, 0);
  for (size_t d = 0; d < sp; ++d) {
    const int64_t xd = spatial[d];
    plo[xd] = std::max<int64_t>(lo[d], 0);
    phi[xd] = std::max<int64_t>(hi[d], 0);
    step[xd] = ld[d];
    offset[d] = std::max<int64_t>(-lo[d], 0);
    dilated = dilated || (ld[d] != 1 && x.shape[xd] > 1);
    padded = padded || plo[xd] != 0 || phi[xd] != 0;
    shape[xd] = plo[xd] + (x.shape[xd] - 1) * ld[d] + 1 + phi[xd];
  }
  if (!dilated && !padded) return {x, offset};
  const TensorInfo p = n.temp("pad", x.dtype, shape);
  if (!dilated) {
    n.stmt(p.name + " = pad(" + x.name + ", lo=[" + join_ints(plo) + "], hi=[" + join_ints(phi) +
           "], value=0.0)");
    return {p, offset};
  }
  std::string region;  // temporaries start zero-filled: x is copied in with a stride
  for (int d = 0; d < x.rank(); ++d) {
    region += (d ? ", " : "") + std::to_string(plo[d]) + ":" +
              std::to_string(plo[d] + (x.shape[d] - 1) * step[d] + 1) + ":" +
              std::to_string(step[d]);
  }
  n.stmt(p.name + "[" + region + "] = " + x.name);
  return {p, offset};
}

// conv_general_dilated with any dimension numbers: one kernel over (batch b, group g, output
// feature oc within its group, output position o.., input feature ic, window k..). Feature
// groups split the input features, batch groups the input batch; each group owns O / groups
// consecutive output features.
void conv_rule(NodeLowering& n) {
  const TensorInfo x = n.tensor(arg(0));
  const TensorInfo w = n.tensor(arg(1));
  const TensorInfo& y = n.out();
  const std::vector<int64_t> ls = n.ints_or("dimension_numbers.lhs_spec", {});
  const std::vector<int64_t> rs = n.ints_or("dimension_numbers.rhs_spec", {});
  const std::vector<int64_t> os = n.ints_or("dimension_numbers.out_spec", {});
  const size_t sp = static_cast<size_t>(x.rank()) - 2;
  if (ls.size() != sp + 2 || rs.size() != sp + 2 || os.size() != sp + 2) {
    throw UserError("dimension_numbers need one entry per dim");
  }
  const std::vector<int64_t> strides = n.ints_or("window_strides", std::vector<int64_t>(sp, 1));
  const std::vector<int64_t> ld = n.ints_or("lhs_dilation", std::vector<int64_t>(sp, 1));
  const std::vector<int64_t> rd = n.ints_or("rhs_dilation", std::vector<int64_t>(sp, 1));
  std::vector<int64_t> lo(sp), hi(sp), spatial(sp);
  for (size_t d = 0; d < sp; ++d) {
    const std::vector<int64_t> p = n.ints_or("padding." + std::to_string(d), {0, 0});
    if (p.size() != 2) throw UserError("padding needs (lo, hi) per spatial dim");
    lo[d] = p[0];
    hi[d] = p[1];
    spatial[d] = ls[2 + d];
  }
  const int64_t fg = n.integer_or("feature_group_count", 1);
  const int64_t bg = n.integer_or("batch_group_count", 1);
  const int64_t groups = fg * bg;
  const int64_t out_features = w.shape[rs[0]];
  const int64_t icg = w.shape[rs[1]];
  const int64_t ocg = out_features / groups;
  const int64_t batch = y.shape[os[0]];
  const ConvInput in = conv_input(n, x, spatial, lo, hi, ld);
  std::vector<std::string> xi(x.rank()), wi(w.rank()), yi(y.rank());
  std::string loops = "b in 0.." + std::to_string(batch) + ", g in 0.." + std::to_string(groups) +
                      ", oc in 0.." + std::to_string(ocg);
  const std::string oc = std::to_string(ocg) + "*g + oc";
  yi[os[0]] = "b";
  yi[os[1]] = oc;
  wi[rs[0]] = oc;
  wi[rs[1]] = "ic";
  xi[ls[0]] = bg > 1 ? std::to_string(batch) + "*g + b" : "b";
  xi[ls[1]] = fg > 1 ? std::to_string(icg) + "*g + ic" : "ic";
  for (size_t d = 0; d < sp; ++d) {
    loops += ", o" + std::to_string(d) + " in 0.." + std::to_string(y.shape[os[2 + d]]);
    yi[os[2 + d]] = "o" + std::to_string(d);
  }
  loops += ", ic in 0.." + std::to_string(icg);
  for (size_t d = 0; d < sp; ++d) {
    const std::string k = "k" + std::to_string(d);
    loops += ", " + k + " in 0.." + std::to_string(w.shape[rs[2 + d]]);
    wi[rs[2 + d]] = k;
    xi[ls[2 + d]] = std::to_string(strides.at(d)) + "*o" + std::to_string(d) + " + " +
                    std::to_string(rd.at(d)) + "*" + k + " + " + std::to_string(in.offset[d]);
  }
  n.kernel("conv", loops, y.name + "[" + join(yi) + "]",
           "+=", in.t.name + "[" + join(xi) + "] * " + w.name + "[" + join(wi) + "]");
}

// ---- reductions ----------------------------------------------------------------------------

// reduce_sum / max / min / prod (`value` wraps the read, e.g. `!= 0` for reduce_and/or).
Rule reduce_rule(const std::string& assign, bool truth = false) {
  return [assign, truth](NodeLowering& n) {
    const TensorInfo x = n.tensor(arg(0));
    const std::vector<bool> reduced = axes_mask(n.ints_or("axes", {}), x.rank());
    reduce_into(n, n.out(), x, reduced, assign, truth ? "(" + at_box(x) + " != 0.0)" : at_box(x));
  };
}

// argmax / argmin over one axis: the extreme, then the first index that reaches it.
Rule arg_extreme_rule(const std::string& assign) {
  return [assign](NodeLowering& n) {
    const TensorInfo x = n.tensor(arg(0));
    const TensorInfo& y = n.out();
    const std::vector<int64_t> axes = n.ints_or("axes", {});
    if (axes.size() != 1) throw UserError("argmax/argmin over exactly one axis is supported");
    const std::vector<bool> reduced = axes_mask(axes, x.rank());
    const TensorInfo m = n.temp("extreme", x.dtype, y.shape);
    reduce_into(n, m, x, reduced, assign, at_box(x));
    first_index_of(n, y, x, reduced, m);
  };
}

// cumsum / cumprod / cummax / cummin along `axis`: scan() (`reverse` runs from the end).
Rule cumulative_rule(const std::string& op) {
  return [op](NodeLowering& n) {
    const TensorInfo x = n.tensor(arg(0));
    scan(n, x, n.out(), norm_dim(n.integer("axis"), x.rank()), n.flag_or("reverse", false), op);
  };
}

// ---- sorting -------------------------------------------------------------------------------

// The rank of each element of x along `dim` in a stable sort (ascending, or descending): the
// number of elements before it, N comparisons per element.
TensorInfo sort_rank(NodeLowering& n, const TensorInfo& x, int64_t dim, bool descending) {
  const TensorInfo r = n.temp("rank", ir::DType::I64, x.shape);
  std::string other;
  for (int d = 0; d < x.rank(); ++d) {
    other += (d ? ", " : "") + (d == dim ? std::string("j") : kI + std::to_string(d));
  }
  const std::string xj = x.name + "[" + other + "]";
  const std::string xi = at_box(x);
  const std::string before = descending ? xj + " > " + xi : xj + " < " + xi;
  n.kernel(
      "rank", box_loops(x.shape, kI) + ", j in 0.." + std::to_string(x.shape[dim]), at_box(r), "+=",
      "(" + before + " || (" + xj + " == " + xi + " && j < " + kI + std::to_string(dim) + "))");
  return r;
}

// sort(operands.., dimension, num_keys=1): every operand scattered to its key's rank.
void sort_rule(NodeLowering& n) {
  if (n.integer_or("num_keys", 1) != 1) throw UserError("sort with num_keys > 1 is not supported");
  const TensorInfo key = n.tensor(arg(0));
  const int64_t dim = norm_dim(n.integer("dimension"), key.rank());
  const TensorInfo r = sort_rank(n, key, dim, false);
  for (size_t k = 0; k < n.outputs(); ++k) {
    const std::string x = n.tensor(arg(k)).name;
    n.stmt(n.out(k).name + " = scatter(" + x + ", " + r.name + ", " + x +
           ", dim=" + std::to_string(dim) + ")");
  }
}

// top_k(x, k) along the last axis (or `axis`): descending stable ranks, values and indices
// scattered to their ranks, then the first k.
void top_k_rule(NodeLowering& n) {
  const TensorInfo x = n.tensor(arg(0));
  const int64_t dim = norm_dim(n.integer_or("axis", -1), x.rank());
  const TensorInfo r = sort_rank(n, x, dim, true);
  std::string first;
  for (int d = 0; d < x.rank(); ++d) {
    first +=
        (d ? ", " : "") + (d == dim ? "0:" + std::to_string(n.integer("k")) : std::string(":"));
  }
  const TensorInfo sorted = n.temp("sorted", x.dtype, x.shape);
  n.stmt(sorted.name + " = scatter(" + x.name + ", " + r.name + ", " + x.name +
         ", dim=" + std::to_string(dim) + ")");
  n.stmt(n.out(0).name + " = " + sorted.name + "[" + first + "]");
  if (n.outputs() < 2) return;
  const TensorInfo iota = n.temp("iota", n.out(1).dtype, x.shape);
  map_kernel(n, iota, kI + std::to_string(dim));
  const TensorInfo order = n.temp("order", n.out(1).dtype, x.shape);
  n.stmt(order.name + " = scatter(" + iota.name + ", " + r.name + ", " + iota.name +
         ", dim=" + std::to_string(dim) + ")");
  n.stmt(n.out(1).name + " = " + order.name + "[" + first + "]");
}

// ---- gather and scatter --------------------------------------------------------------------

// The one-axis pattern of jnp.take, integer-array indexing and embedding lookups: indices
// [batch.., 1] select along operand dim `axis` (mode CLIP clamps them). Returns the index
// tensor without its last dim.
TensorInfo index_vector(NodeLowering& n, const TensorInfo& idx, int64_t dim_size) {
  if (idx.rank() == 0 || idx.shape.back() != 1) {
    throw UserError("indices must end in a dim of size 1 (one index per lookup)");
  }
  std::vector<int64_t> shape(idx.shape.begin(), idx.shape.end() - 1);
  const TensorInfo flat = n.temp("index", idx.dtype, shape);
  if (n.string_or("mode", "") == "CLIP") {
    map_kernel(n, flat,
               "min(max(" + idx.name + "[" + box_index(flat.rank(), kI) +
                   (flat.rank() ? ", 0" : "0") + "], 0.0), " + std::to_string(dim_size - 1) +
                   ".0)");
  } else {
    n.stmt(flat.name + " = reshape(" + idx.name + ")");
  }
  return flat;
}

// The single operand dim a gather/scatter indexes, checking the pattern.
int64_t one_axis(NodeLowering& n, const std::string& collapsed, const std::string& to_operand,
                 const std::string& batching) {
  const std::vector<int64_t> c = n.ints_or("dimension_numbers." + collapsed, {});
  const std::vector<int64_t> m = n.ints_or("dimension_numbers." + to_operand, {});
  const std::vector<int64_t> b = n.ints_or("dimension_numbers." + batching, {});
  if (c.size() != 1 || m != c || !b.empty()) {
    throw UserError(
        "only the one-axis pattern of jnp.take / x[idx] / embedding lookups is supported "
        "(one collapsed dim indexed by the index vector, no batching dims)");
  }
  return c[0];
}

// gather: take along the axis, then a permute when the offset dims are not in take's order.
void gather_rule(NodeLowering& n) {
  const TensorInfo x = n.tensor(arg(0));
  const TensorInfo idx = n.tensor(arg(1));
  const TensorInfo& y = n.out();
  const int64_t axis =
      one_axis(n, "collapsed_slice_dims", "start_index_map", "operand_batching_dims");
  const std::vector<int64_t> sizes = n.ints_or("slice_sizes", {});
  for (int d = 0; d < x.rank(); ++d) {
    if (sizes.at(d) != (d == axis ? 1 : x.shape[d])) {
      throw UserError("gather slices must cover every dim but the indexed one");
    }
  }
  const TensorInfo i = index_vector(n, idx, x.shape[axis]);
  const int64_t nb = i.rank();
  // Output position of each take dim: operand dims (less axis) go to offset_dims in order; the
  // index batch dims fill the other positions in order.
  const std::vector<int64_t> offset = n.ints_or("dimension_numbers.offset_dims", {});
  std::vector<bool> is_offset(y.rank(), false);
  for (int64_t p : offset) is_offset.at(p) = true;
  std::vector<int64_t> take_shape;
  std::vector<int64_t> position;  // take dim -> output dim
  std::vector<int64_t> batch_pos;
  for (int p = 0; p < y.rank(); ++p) {
    if (!is_offset[p]) batch_pos.push_back(p);
  }
  for (int d = 0, o = 0; d < x.rank(); ++d) {
    if (d == axis) {
      for (int64_t j = 0; j < nb; ++j) {
        take_shape.push_back(i.shape[j]);
        position.push_back(batch_pos.at(j));
      }
      continue;
    }
    take_shape.push_back(x.shape[d]);
    position.push_back(offset.at(o++));
  }
  std::vector<int64_t> perm(y.rank());
  bool identity = true;
  for (size_t t = 0; t < position.size(); ++t) {
    perm.at(position[t]) = static_cast<int64_t>(t);
    identity = identity && position[t] == static_cast<int64_t>(t);
  }
  const TensorInfo taken = identity ? y : n.temp("take", x.dtype, take_shape);
  n.stmt(taken.name + " = take(" + x.name + ", " + i.name + ", dim=" + std::to_string(axis) + ")");
  if (!identity) n.stmt(y.name + " = permute(" + taken.name + ", [" + join_ints(perm) + "])");
}

// scatter / scatter-add / -max / -min in the one-axis pattern (x.at[idx].set/add/max/min):
// updates laid out as take's result; the index broadcast to the updates' shape.
Rule scatter_rule(const std::string& reduce) {
  return [reduce](NodeLowering& n) {
    const TensorInfo x = n.tensor(arg(0));
    const TensorInfo idx = n.tensor(arg(1));
    const TensorInfo u = n.tensor(arg(2));
    const TensorInfo& y = n.out();
    const int64_t axis = one_axis(n, "inserted_window_dims", "scatter_dims_to_operand_dims",
                                  "operand_batching_dims");
    const TensorInfo i = index_vector(n, idx, x.shape[axis]);
    const int64_t nb = i.rank();
    std::vector<int64_t> window;
    for (int64_t d = 0; d < u.rank(); ++d) {
      if (d < axis || d >= axis + nb) window.push_back(d);
    }
    if (n.ints_or("dimension_numbers.update_window_dims", {}) != window) {
      throw UserError("scatter updates must be laid out as jnp.take's result");
    }
    int64_t count = 1;
    for (int64_t s : i.shape) count *= s;
    std::vector<int64_t> shape = x.shape;
    shape[axis] = count;
    TensorInfo flat_i = i;
    TensorInfo flat_u = u;
    if (nb != 1) {
      flat_i = n.temp("index1", i.dtype, {count});
      n.stmt(flat_i.name + " = reshape(" + i.name + ")");
      flat_u = n.temp("updates", u.dtype, shape);
      n.stmt(flat_u.name + " = reshape(" + u.name + ")");
    }
    const TensorInfo full = n.temp("where", i.dtype, shape);
    n.stmt(full.name + " = broadcast(" + flat_i.name + ", dims=[" + std::to_string(axis) + "])");
    n.stmt(y.name + " = scatter(" + x.name + ", " + full.name + ", " + flat_u.name +
           ", dim=" + std::to_string(axis) + (reduce.empty() ? "" : ", reduce=" + reduce) + ")");
  };
}

// ---- windows -----------------------------------------------------------------------------

// reduce_window_sum / max / min (pooling): the input padded with the identity, then one
// reduction over each window (window strides and dilation; base dilation 1).
Rule reduce_window_rule(const std::string& assign, const std::string& identity) {
  return [assign, identity](NodeLowering& n) {
    const TensorInfo x = n.tensor(arg(0));
    const TensorInfo& y = n.out();
    const int r = x.rank();
    const std::vector<int64_t> win = n.ints_or("window_dimensions", {});
    const std::vector<int64_t> st = n.ints_or("window_strides", std::vector<int64_t>(r, 1));
    const std::vector<int64_t> wd = n.ints_or("window_dilation", std::vector<int64_t>(r, 1));
    const std::vector<int64_t> bd = n.ints_or("base_dilation", std::vector<int64_t>(r, 1));
    if (std::any_of(bd.begin(), bd.end(), [](int64_t v) { return v != 1; })) {
      throw UserError("reduce_window with base_dilation is not supported");
    }
    std::vector<int64_t> lo(r), hi(r), shape = x.shape;
    bool padded = false;
    for (int d = 0; d < r; ++d) {
      const std::vector<int64_t> p = n.ints_or("padding." + std::to_string(d), {0, 0});
      if (p.size() != 2 || p[0] < 0 || p[1] < 0) throw UserError("padding needs (lo, hi) >= 0");
      lo[d] = p[0];
      hi[d] = p[1];
      shape[d] += p[0] + p[1];
      padded = padded || p[0] || p[1];
    }
    TensorInfo xp = x;
    if (padded) {
      xp = n.temp("pad", x.dtype, shape);
      n.stmt(xp.name + " = pad(" + x.name + ", lo=[" + join_ints(lo) + "], hi=[" + join_ints(hi) +
             "], value=" + identity + ")");
    }
    std::string loops = box_loops(y.shape, kI);
    std::string index;
    for (int d = 0; d < r; ++d) {
      const std::string k = "k" + std::to_string(d);
      loops += ", " + k + " in 0.." + std::to_string(win.at(d));
      index += (d ? ", " : "") + std::to_string(st.at(d)) + "*" + kI + std::to_string(d) + " + " +
               std::to_string(wd.at(d)) + "*" + k;
    }
    n.kernel("window", loops, at_box(y), assign, xp.name + "[" + index + "]");
  };
}

}  // namespace

void register_lax_contract_rules(RuleTable& r) {
  r["jax.dot_general"] = dot_general_rule;
  r["jax.conv_general_dilated"] = conv_rule;
  r["jax.reduce_sum"] = reduce_rule("+=");
  r["jax.reduce_max"] = reduce_rule("max=");
  r["jax.reduce_min"] = reduce_rule("min=");
  r["jax.reduce_prod"] = reduce_rule("*=");
  r["jax.reduce_and"] = reduce_rule("min=", true);
  r["jax.reduce_or"] = reduce_rule("max=", true);
  r["jax.argmax"] = arg_extreme_rule("max=");
  r["jax.argmin"] = arg_extreme_rule("min=");
  r["jax.cumsum"] = cumulative_rule("+");
  r["jax.cumprod"] = cumulative_rule("*");
  r["jax.cummax"] = cumulative_rule("max");
  r["jax.cummin"] = cumulative_rule("min");
  r["jax.sort"] = sort_rule;
  r["jax.top_k"] = top_k_rule;
  r["jax.gather"] = gather_rule;
  r["jax.scatter"] = scatter_rule("");
  r["jax.scatter-add"] = scatter_rule("add");
  r["jax.scatter-max"] = scatter_rule("max");
  r["jax.scatter-min"] = scatter_rule("min");
  r["jax.reduce_window_sum"] = reduce_window_rule("+=", "0.0");
  r["jax.reduce_window_max"] = reduce_window_rule("max=", "-inf");
  r["jax.reduce_window_min"] = reduce_window_rule("min=", "inf");
}

}  // namespace solar::frontend::lax
