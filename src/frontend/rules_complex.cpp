// Lowering rules for complex tensors: the FFTs (aten._fft_r2c, _fft_c2r, _fft_c2c), the views
// view_as_real and view_as_complex, and the complex elementwise operations (mul, add, sub, div,
// abs), which are kernels on the (real, imaginary) pairs. See docs/lowering.md ("Complex
// tensors and FFTs").
#include <algorithm>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "rules.h"
#include "solar/util/error.h"

namespace solar::frontend {
namespace {

// The `dim` list of an FFT node, non-negative and sorted.
std::vector<int64_t> fft_dims(NodeLowering& n, int rank) {
  std::vector<int64_t> dims = n.ints_or("dim", {});
  if (dims.empty()) throw UserError(n.op() + ": no dimension to transform");
  for (int64_t& d : dims) d = norm_dim(d, rank);
  std::sort(dims.begin(), dims.end());
  return dims;
}

// aten's `normalization`: 0 none, 1 by 1/sqrt(n), 2 by 1/n, with n the product of the
// transformed sizes; per dimension the same (1/sqrt(n) is the product of each 1/sqrt(n_d)).
std::string norm_arg(NodeLowering& n) {
  const int64_t k = n.integer_or("normalization", 0);
  if (k < 0 || k > 2) {
    throw UserError(n.op() + ": normalization " + std::to_string(k) + " is not 0, 1 or 2");
  }
  return k == 0 ? "" : ", norm=" + std::to_string(k);
}

// One-dimensional transforms `op` along `dims` in turn, from `x` to the node's output: each
// step's result has x's shape (after the first, `first_shape`).
void chain(NodeLowering& n, const std::string& x, const std::vector<std::string>& ops,
           const std::vector<int64_t>& dims, const std::vector<std::vector<int64_t>>& shapes,
           const std::vector<ir::DType>& dtypes) {
  const std::string norm = norm_arg(n);
  std::string from = x;
  for (size_t s = 0; s < ops.size(); ++s) {
    const bool last = s + 1 == ops.size();
    const std::string to = last ? n.out().name : n.temp("fft", dtypes[s], shapes[s]).name;
    n.stmt(to + " = " + ops[s] + "(" + from + ", dim=" + std::to_string(dims[s]) + norm + ")");
    from = to;
  }
}

// _fft_r2c(self, dim, normalization, onesided): rfft along the last of `dim` (its one-sided
// half, or the whole spectrum when onesided is false), then fft along the others.
void r2c_rule(NodeLowering& n) {
  const TensorInfo x = n.tensor("self");
  const TensorInfo& y = n.out();
  const std::vector<int64_t> dims = fft_dims(n, x.rank());
  std::vector<std::string> ops{"rfft"};
  std::vector<int64_t> order{dims.back()};
  for (size_t k = 0; k + 1 < dims.size(); ++k) {
    ops.push_back("fft");
    order.push_back(dims[k]);
  }
  chain(n, x.name, ops, order, std::vector(ops.size(), y.shape), std::vector(ops.size(), y.dtype));
}

// _fft_c2r(self, dim, normalization, last_dim_size): ifft along all of `dim` but the last, then
// irfft along the last to last_dim_size points.
void c2r_rule(NodeLowering& n) {
  const TensorInfo x = n.tensor("self");
  const std::vector<int64_t> dims = fft_dims(n, x.rank());
  std::vector<std::string> ops;
  std::vector<int64_t> order;
  for (size_t k = 0; k + 1 < dims.size(); ++k) {
    ops.push_back("ifft");
    order.push_back(dims[k]);
  }
  ops.push_back("irfft");
  order.push_back(dims.back());
  chain(n, x.name, ops, order, std::vector(ops.size(), x.shape), std::vector(ops.size(), x.dtype));
}

// _fft_c2c(self, dim, normalization, forward): fft (forward) or ifft along each of `dim`.
void c2c_rule(NodeLowering& n) {
  const TensorInfo x = n.tensor("self");
  const std::vector<int64_t> dims = fft_dims(n, x.rank());
  const std::string op = n.flag_or("forward", true) ? "fft" : "ifft";
  chain(n, x.name, std::vector(dims.size(), op), dims, std::vector(dims.size(), x.shape),
        std::vector(dims.size(), x.dtype));
}

// A complex tensor's pairs: `view_as_real` into a temporary of its part dtype.
TensorInfo pairs_of(NodeLowering& n, const TensorInfo& z) {
  std::vector<int64_t> shape = z.shape;
  shape.push_back(2);
  const TensorInfo p = n.temp("pairs", ir::complex_part(z.dtype), shape);
  n.stmt(p.name + " = view_as_real(" + z.name + ")");
  return p;
}

// `p[index.., part]` of the pairs `p` of a complex operand of `shape`, read at a point of the
// output's box (broadcast).
std::string part(const TensorInfo& p, const std::vector<int64_t>& shape,
                 const std::vector<int64_t>& out, const std::string& which) {
  const std::string index = bcast_index(shape, out, kI);
  return p.name + "[" + index + (index.empty() ? "" : ", ") + which + "]";
}

// mul of complex operands (either or both; a real operand or scalar scales both parts): on the
// pairs, (a + bi)(c + di) = (ac - bd) + (ad + bc)i, 6 operations per element, as two kernels
// (real and imaginary part) of 3 each.
void complex_mul(NodeLowering& n) {
  const TensorInfo& y = n.out();
  const TensorInfo yp = n.temp("pairs", ir::complex_part(y.dtype), [&] {
    std::vector<int64_t> s = y.shape;
    s.push_back(2);
    return s;
  }());
  const bool a_complex = n.is_tensor("self") && ir::dtype_is_complex(n.tensor("self").dtype);
  const bool b_complex = n.is_tensor("other") && ir::dtype_is_complex(n.tensor("other").dtype);
  const std::string loops = box_loops(y.shape, kI);
  const std::string at = box_index(y.rank(), kI);
  const std::string out = yp.name + "[" + at + (at.empty() ? "" : ", ");
  if (a_complex && b_complex) {
    const TensorInfo a = n.tensor("self");
    const TensorInfo b = n.tensor("other");
    const TensorInfo ap = pairs_of(n, a);
    const TensorInfo bp = pairs_of(n, b);
    const auto ar = part(ap, a.shape, y.shape, "0"), ai = part(ap, a.shape, y.shape, "1");
    const auto br = part(bp, b.shape, y.shape, "0"), bi = part(bp, b.shape, y.shape, "1");
    n.kernel("re", loops, out + "0]", "=", ar + " * " + br + " - " + ai + " * " + bi);
    n.kernel("im", loops, out + "1]", "=", ar + " * " + bi + " + " + ai + " * " + br);
  } else {
    const std::string z_key = a_complex ? "self" : "other";
    const TensorInfo z = n.tensor(z_key);
    const TensorInfo zp = pairs_of(n, z);
    const std::string scale = read(n, a_complex ? "other" : "self", y);
    const std::string c_loops = loops + (loops.empty() ? "" : ", ") + "c in 0..2";
    n.kernel("scale", c_loops, out + "c]", "=", part(zp, z.shape, y.shape, "c") + " * " + scale);
  }
  n.stmt(y.name + " = view_as_complex(" + yp.name + ")");
}

// The (real, imaginary) parts of operand `key` read at a point of y's box: a complex tensor's
// pairs; a real tensor or a scalar is its value and 0.
std::pair<std::string, std::string> parts_of(NodeLowering& n, const std::string& key,
                                             const TensorInfo& y) {
  if (n.is_tensor(key) && ir::dtype_is_complex(n.tensor(key).dtype)) {
    const TensorInfo z = n.tensor(key);
    const TensorInfo zp = pairs_of(n, z);
    return {part(zp, z.shape, y.shape, "0"), part(zp, z.shape, y.shape, "1")};
  }
  return {read(n, key, y), "0.0"};
}

// add, sub (self + alpha * other, self - alpha * other) and div of complex operands (either or
// both; a real operand or scalar is a complex one with no imaginary part), on the pairs, as two
// kernels (real and imaginary part). Division: (a + bi) / (c + di) = ((ac + bd) + (bc - ad)i) /
// (c^2 + d^2); by a real c: a / c + (b / c)i.
void complex_binary(NodeLowering& n, char op) {
  const TensorInfo& y = n.out();
  std::vector<int64_t> pair_shape = y.shape;
  pair_shape.push_back(2);
  const TensorInfo yp = n.temp("pairs", ir::complex_part(y.dtype), pair_shape);
  const auto [ar, ai] = parts_of(n, "self", y);
  const auto [br, bi] = parts_of(n, "other", y);
  const bool b_real = bi == "0.0";
  std::string re, im;
  if (op == '+' || op == '-') {
    const double alpha = n.number_or("alpha", 1.0);
    const std::string sign = op == '+' ? " + " : " - ";
    re = ar + sign + scaled(br, alpha);
    im = b_real ? ai
                : (ai == "0.0" ? (op == '+' ? "" : "0.0 - ") + scaled(bi, alpha)
                               : ai + sign + scaled(bi, alpha));
  } else if (b_real) {
    re = ar + " / " + br;
    im = ai == "0.0" ? "0.0" : ai + " / " + br;
  } else {
    const std::string norm = "(" + br + " * " + br + " + " + bi + " * " + bi + ")";
    re = "(" + ar + " * " + br + (ai == "0.0" ? "" : " + " + ai + " * " + bi) + ") / " + norm;
    im = "(" + (ai == "0.0" ? "0.0" : ai + " * " + br) + " - " + ar + " * " + bi + ") / " + norm;
  }
  const std::string loops = box_loops(y.shape, kI);
  const std::string at = box_index(y.rank(), kI);
  const std::string out = yp.name + "[" + at + (at.empty() ? "" : ", ");
  n.kernel("re", loops, out + "0]", "=", re);
  n.kernel("im", loops, out + "1]", "=", im);
  n.stmt(y.name + " = view_as_complex(" + yp.name + ")");
}

// abs of a complex tensor: sqrt(re^2 + im^2), a real result.
void complex_abs(NodeLowering& n) {
  const TensorInfo x = n.tensor("self");
  const TensorInfo xp = pairs_of(n, x);
  const std::string re = part(xp, x.shape, x.shape, "0");
  const std::string im = part(xp, x.shape, x.shape, "1");
  pointwise(n, "sqrt(" + re + " * " + re + " + " + im + " * " + im + ")");
}

bool complex_operand(NodeLowering& n, const std::string& key) {
  return n.has(key) && n.is_tensor(key) && ir::dtype_is_complex(n.tensor(key).dtype);
}

}  // namespace

Rule complex_aware(Rule real, const std::string& op) {
  return [real, op](NodeLowering& n) {
    const bool complex = complex_operand(n, "self") || complex_operand(n, "other") ||
                         ir::dtype_is_complex(n.out().dtype);
    if (!complex) return real(n);
    if (op == "mul") return complex_mul(n);
    if (op == "abs") return complex_abs(n);
    if (op == "add") return complex_binary(n, '+');
    if (op == "sub") return complex_binary(n, '-');
    if (op == "div") return complex_binary(n, '/');
    throw UserError(n.op() + " of complex tensors has no lowering rule");
  };
}

bool takes_complex(const std::string& op) {
  // The FFTs and views, the complex forms of complex_aware, and the view and copy rules, which
  // move complex elements whole (composition statements).
  static const std::set<std::string> ops = {"aten._fft_r2c.default",
                                            "aten._fft_c2r.default",
                                            "aten._fft_c2c.default",
                                            "aten.view_as_real.default",
                                            "aten.view_as_complex.default",
                                            "aten.mul.Tensor",
                                            "aten.mul.Scalar",
                                            "aten.add.Tensor",
                                            "aten.add.Scalar",
                                            "aten.sub.Tensor",
                                            "aten.sub.Scalar",
                                            "aten.div.Tensor",
                                            "aten.div.Scalar",
                                            "aten.abs.default",
                                            "aten.clone.default",
                                            "aten.alias.default",
                                            "aten.detach.default",
                                            "aten.view.default",
                                            "aten._unsafe_view.default",
                                            "aten.reshape.default",
                                            "aten.unsqueeze.default",
                                            "aten.squeeze.dim",
                                            "aten.permute.default",
                                            "aten.t.default",
                                            "aten.transpose.int",
                                            "aten.slice.Tensor",
                                            "aten.select.int",
                                            "aten.cat.default"};
  return ops.contains(op);
}

void register_complex_rules(RuleTable& r) {
  r["aten._fft_r2c.default"] = r2c_rule;
  r["aten._fft_c2r.default"] = c2r_rule;
  r["aten._fft_c2c.default"] = c2c_rule;
  r["aten.view_as_real.default"] = [](NodeLowering& n) {
    n.stmt(n.out().name + " = view_as_real(" + n.tensor("self").name + ")");
  };
  r["aten.view_as_complex.default"] = [](NodeLowering& n) {
    n.stmt(n.out().name + " = view_as_complex(" + n.tensor("self").name + ")");
  };
}

}  // namespace solar::frontend
