// Lowering rules for JAX primitives (capture documents with "framework": "jax"): elementwise
// primitives and data movement; contractions, reductions, sorting and indexing are in
// lax_contract.cpp. See docs/jax.md and docs/lowering.md ("JAX primitives").
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "lax_common.h"
#include "rules.h"
#include "solar/util/error.h"

namespace solar::frontend {
namespace lax {

std::string arg(size_t k) { return "arg" + std::to_string(k); }

size_t operand_count(const NodeLowering& n) {
  size_t k = 0;
  while (n.has(arg(k))) ++k;
  return k;
}

std::string operand(NodeLowering& n, size_t k, const TensorInfo& out) {
  if (!n.is_tensor(arg(k))) return lit(n.number(arg(k)));
  const TensorInfo t = n.tensor(arg(k));
  if (t.rank() > out.rank()) {
    throw UserError("operand " + std::to_string(k) + " has more dims than the output");
  }
  return t.name + "[" + bcast_index(t.shape, out.shape, kI) + "]";
}

void map_kernel(NodeLowering& n, const TensorInfo& y, const std::string& rhs) {
  n.kernel("map", box_loops(y.shape, kI), at_box(y), "=", rhs);
}

std::vector<bool> axes_mask(const std::vector<int64_t>& axes, int rank) {
  std::vector<bool> mask(rank, false);
  for (int64_t a : axes) mask[norm_dim(a, rank)] = true;
  return mask;
}

}  // namespace lax

namespace {

using lax::arg;
using lax::map_kernel;
using lax::operand;

using Expr = std::function<std::string(NodeLowering&, const std::vector<std::string>&)>;

// An elementwise rule: y = f(operands), each operand read with broadcasting or as a literal.
Rule elementwise(Expr f) {
  return [f](NodeLowering& n) {
    const TensorInfo& y = n.out();
    std::vector<std::string> xs;
    for (size_t k = 0; k < lax::operand_count(n); ++k) xs.push_back(operand(n, k, y));
    if (xs.empty()) throw UserError("no operands");
    map_kernel(n, y, f(n, xs));
  };
}

// `fn(x)`.
Rule fn1(const std::string& fn) {
  return elementwise(
      [fn](NodeLowering&, const std::vector<std::string>& x) { return fn + "(" + x.at(0) + ")"; });
}

// `fn(a, b)`.
Rule fn2(const std::string& fn) {
  return elementwise([fn](NodeLowering&, const std::vector<std::string>& x) {
    return fn + "(" + x.at(0) + ", " + x.at(1) + ")";
  });
}

// `(a OP b)`.
Rule infix(const std::string& op) {
  return elementwise([op](NodeLowering&, const std::vector<std::string>& x) {
    return "(" + x.at(0) + " " + op + " " + x.at(1) + ")";
  });
}

// A logical operator, defined for bool operands only (bitwise on integers is not supported).
Rule logical(const std::string& op) {
  return [op](NodeLowering& n) {
    if (n.out().dtype != ir::DType::Bool) {
      throw UserError("bitwise operations on integers are not supported (bool operands only)");
    }
    elementwise([op](NodeLowering&, const std::vector<std::string>& x) {
      if (op == "!") return "!" + x.at(0);
      if (op == "^") return "((" + x.at(0) + " != 0.0) != (" + x.at(1) + " != 0.0))";
      return "(" + x.at(0) + " " + op + " " + x.at(1) + ")";
    })(n);
  };
}

// trunc(q): toward zero.
std::string trunc(const std::string& q) {
  return "select(" + q + " < 0.0, ceil(" + q + "), floor(" + q + "))";
}

// integer_pow: x multiplied y times (1/that for negative y; 1 for y = 0).
std::string integer_pow(NodeLowering& n, const std::vector<std::string>& x) {
  const int64_t y = n.integer("y");
  if (y == 0) return "1.0";
  std::string p = x.at(0);
  for (int64_t k = 1; k < (y < 0 ? -y : y); ++k) p += " * " + x.at(0);
  return y < 0 ? "1.0 / (" + p + ")" : "(" + p + ")";
}

// reduce_precision to the float format of (exponent_bits, mantissa_bits).
std::string reduce_precision(NodeLowering& n, const std::vector<std::string>& x) {
  const int64_t e = n.integer("exponent_bits");
  const int64_t m = n.integer("mantissa_bits");
  const std::map<std::pair<int64_t, int64_t>, std::string> formats{
      {{8, 7}, "bf16"},   {{5, 10}, "f16"},   {{8, 23}, "f32"},
      {{4, 3}, "f8e4m3"}, {{5, 2}, "f8e5m2"}, {{11, 52}, "f64"}};
  const auto it = formats.find({e, m});
  if (it == formats.end()) {
    throw UserError("reduce_precision to " + std::to_string(e) + " exponent and " +
                    std::to_string(m) + " mantissa bits: no IR dtype has that format");
  }
  return it->second + "(" + x.at(0) + ")";
}

// select_n(which, case0, case1, ...): case k where which == k (a bool picks case1 when true).
std::string select_n(NodeLowering&, const std::vector<std::string>& x) {
  if (x.size() < 2) throw UserError("select_n needs at least one case");
  if (x.size() == 3) return "select(" + x[0] + ", " + x[2] + ", " + x[1] + ")";
  std::string e = x.back();
  for (size_t k = x.size() - 2; k >= 1; --k) {
    e = "select(" + x[0] + " == " + std::to_string(k - 1) + ".0, " + x[k] + ", " + e + ")";
  }
  return e;
}

// ---- data movement ---------------------------------------------------------------------------

// `y = x` (a copy that also converts dtypes); a literal operand fills y.
void copy_rule(NodeLowering& n) {
  const TensorInfo& y = n.out();
  if (!n.is_tensor(arg(0))) return map_kernel(n, y, operand(n, 0, y));
  n.stmt(y.name + " = " + n.tensor(arg(0)).name);
}

// reshape (without `dimensions`) and squeeze: `y = reshape(x)`.
void reshape_rule(NodeLowering& n) {
  if (n.op() == "jax.reshape" && n.has("dimensions")) {
    throw UserError("reshape with 'dimensions' is not supported");
  }
  const TensorInfo& y = n.out();
  if (!n.is_tensor(arg(0))) return map_kernel(n, y, operand(n, 0, y));
  n.stmt(y.name + " = reshape(" + n.tensor(arg(0)).name + ")");
}

void broadcast_in_dim_rule(NodeLowering& n) {
  const TensorInfo& y = n.out();
  if (!n.is_tensor(arg(0))) return map_kernel(n, y, operand(n, 0, y));
  const TensorInfo x = n.tensor(arg(0));
  if (x.rank() == 0) return n.stmt(y.name + " = broadcast(" + x.name + ")");
  const std::vector<int64_t> dims = n.ints_or("broadcast_dimensions", {});
  n.stmt(y.name + " = broadcast(" + x.name + ", dims=[" + join_ints(dims) + "])");
}

void transpose_rule(NodeLowering& n) {
  const TensorInfo x = n.tensor(arg(0));
  if (x.rank() < 2) return copy_rule(n);
  n.stmt(n.out().name + " = permute(" + x.name + ", [" + join_ints(n.ints_or("permutation", {})) +
         "])");
}

// rev: y[.., i_d, ..] = x[.., N_d - 1 - i_d, ..] for the reversed dims (a copy kernel).
void rev_rule(NodeLowering& n) {
  const TensorInfo x = n.tensor(arg(0));
  const std::vector<bool> rev = lax::axes_mask(n.ints_or("dimensions", {}), x.rank());
  std::string index;
  for (int d = 0; d < x.rank(); ++d) {
    const std::string i = kI + std::to_string(d);
    index += (d ? ", " : "") + (rev[d] ? std::to_string(x.shape[d] - 1) + " - " + i : i);
  }
  map_kernel(n, n.out(), x.name + "[" + index + "]");
}

// slice: `y = x[start:limit:stride, ..]`.
void slice_rule(NodeLowering& n) {
  const TensorInfo x = n.tensor(arg(0));
  const std::vector<int64_t> start = n.ints_or("start_indices", {});
  const std::vector<int64_t> limit = n.ints_or("limit_indices", {});
  const std::vector<int64_t> strides = n.ints_or("strides", std::vector<int64_t>(x.rank(), 1));
  if (static_cast<int>(start.size()) != x.rank() || limit.size() != start.size() ||
      strides.size() != start.size()) {
    throw UserError("start_indices, limit_indices and strides need one entry per dim");
  }
  std::string s;
  for (int d = 0; d < x.rank(); ++d) {
    s += (d ? ", " : "") + std::to_string(start[d]) + ":" + std::to_string(limit[d]) + ":" +
         std::to_string(strides[d]);
  }
  n.stmt(n.out().name + " = " + x.name + "[" + s + "]");
}

// The start of a dynamic slice of `size` elements along a dim of `dim` elements, clamped into
// 0..dim - size as JAX does: a number, or "" when the start is a tensor.
std::string static_start(NodeLowering& n, size_t k, int64_t dim, int64_t size, int64_t* out) {
  if (n.is_tensor(arg(k))) return "";
  const int64_t start = std::clamp<int64_t>(n.integer(arg(k)), 0, dim - size);
  *out = start;
  return std::to_string(start);
}

// dynamic_slice(x, start0, start1, ..): static starts slice; a start that is a tensor becomes
// a `take` with the index vector `clamp(start) + j` along its dim.
void dynamic_slice_rule(NodeLowering& n) {
  const TensorInfo x = n.tensor(arg(0));
  const TensorInfo& y = n.out();
  std::string s;
  std::vector<int> dynamic;
  std::vector<int64_t> mid_shape = y.shape;
  for (int d = 0; d < x.rank(); ++d) {
    int64_t start = 0;
    if (static_start(n, d + 1, x.shape[d], y.shape[d], &start).empty()) {
      dynamic.push_back(d);
      mid_shape[d] = x.shape[d];
      s += std::string(d ? ", " : "") + ":";
      continue;
    }
    s += (d ? ", " : "") + std::to_string(start) + ":" + std::to_string(start + y.shape[d]);
  }
  TensorInfo cur = dynamic.empty() ? y : n.temp("static", x.dtype, mid_shape);
  n.stmt(cur.name + " = " + x.name + "[" + s + "]");
  for (size_t k = 0; k < dynamic.size(); ++k) {
    const int d = dynamic[k];
    const TensorInfo start = n.tensor(arg(d + 1));
    const TensorInfo idx = n.temp("index", ir::DType::I64, {y.shape[d]});
    n.kernel("index", "j in 0.." + std::to_string(y.shape[d]), idx.name + "[j]", "=",
             "min(max(" + start.name + "[], 0.0), " + std::to_string(x.shape[d] - y.shape[d]) +
                 ".0) + j");
    std::vector<int64_t> shape = cur.shape;
    shape[d] = y.shape[d];
    const TensorInfo next = k + 1 == dynamic.size() ? y : n.temp("take", x.dtype, shape);
    n.stmt(next.name + " = take(" + cur.name + ", " + idx.name + ", dim=" + std::to_string(d) +
           ")");
    cur = next;
  }
}

// dynamic_update_slice(x, update, start0, ..): y = x with the update copied in at the (clamped)
// static starts.
void dynamic_update_slice_rule(NodeLowering& n) {
  const TensorInfo x = n.tensor(arg(0));
  const TensorInfo u = n.tensor(arg(1));
  const TensorInfo& y = n.out();
  std::string region;
  for (int d = 0; d < x.rank(); ++d) {
    int64_t start = 0;
    if (static_start(n, d + 2, x.shape[d], u.shape[d], &start).empty()) {
      throw UserError(
          "dynamic_update_slice with a start index computed from input data is not "
          "supported (static starts only)");
    }
    region += (d ? ", " : "") + std::to_string(start) + ":" + std::to_string(start + u.shape[d]);
  }
  n.stmt(y.name + " = " + x.name);
  n.stmt(y.name + "[" + region + "] = " + u.name);
}

void concatenate_rule(NodeLowering& n) {
  std::string names;
  for (size_t k = 0; k < lax::operand_count(n); ++k) names += n.tensor(arg(k)).name + ", ";
  n.stmt(n.out().name + " = concat(" + names + "dim=" + std::to_string(n.integer("dimension")) +
         ")");
}

// pad(x, value, padding_config.d = [lo, hi, interior]): negative lo/hi crop, interior inserts
// `interior` elements between neighbours. A literal value without interior padding is one `pad`
// statement; otherwise the padded buffer is filled with the value and x is copied in with a
// strided region copy.
void pad_rule(NodeLowering& n) {
  const TensorInfo x = n.tensor(arg(0));
  const TensorInfo& y = n.out();
  std::vector<int64_t> lo(x.rank()), hi(x.rank()), interior(x.rank());
  bool any_interior = false;
  bool crop = false;
  std::vector<int64_t> full(x.rank());
  for (int d = 0; d < x.rank(); ++d) {
    const std::vector<int64_t> c = n.ints_or("padding_config." + std::to_string(d), {});
    if (c.size() != 3) throw UserError("padding_config needs (lo, hi, interior) per dim");
    lo[d] = c[0];
    hi[d] = c[1];
    interior[d] = c[2];
    any_interior = any_interior || (c[2] != 0 && x.shape[d] > 1);
    crop = crop || c[0] < 0 || c[1] < 0;
    const int64_t body = x.shape[d] == 0 ? 0 : (x.shape[d] - 1) * (c[2] + 1) + 1;
    full[d] = std::max<int64_t>(c[0], 0) + body + std::max<int64_t>(c[1], 0);
  }
  const TensorInfo p = crop ? n.temp("padded", y.dtype, full) : y;
  std::vector<int64_t> plo(x.rank()), phi(x.rank());
  for (int d = 0; d < x.rank(); ++d) {
    plo[d] = std::max<int64_t>(lo[d], 0);
    phi[d] = std::max<int64_t>(hi[d], 0);
  }
  if (!any_interior && !n.is_tensor(arg(1))) {
    n.stmt(p.name + " = pad(" + x.name + ", lo=[" + join_ints(plo) + "], hi=[" + join_ints(phi) +
           "], value=" + lit(n.number(arg(1))) + ")");
  } else {
    map_kernel(n, p, operand(n, 1, p));
    std::string region;
    for (int d = 0; d < x.rank(); ++d) {
      const int64_t body = x.shape[d] == 0 ? 0 : (x.shape[d] - 1) * (interior[d] + 1) + 1;
      region += (d ? ", " : "") + std::to_string(plo[d]) + ":" + std::to_string(plo[d] + body) +
                ":" + std::to_string(interior[d] + 1);
    }
    n.stmt(p.name + "[" + region + "] = " + x.name);
  }
  if (!crop) return;
  std::string slices;
  for (int d = 0; d < x.rank(); ++d) {
    const int64_t start = std::max<int64_t>(-lo[d], 0);
    slices += (d ? ", " : "") + std::to_string(start) + ":" + std::to_string(start + y.shape[d]);
  }
  n.stmt(y.name + " = " + p.name + "[" + slices + "]");
}

// split(x, sizes, axis): output k is the slice after the outputs before it.
void split_rule(NodeLowering& n) {
  const TensorInfo x = n.tensor(arg(0));
  const int64_t axis = norm_dim(n.integer("axis"), x.rank());
  int64_t start = 0;
  for (size_t k = 0; k < n.outputs(); ++k) {
    const TensorInfo& y = n.out(k);
    std::string s;
    for (int d = 0; d < x.rank(); ++d) {
      s += (d ? ", " : "") + (d == axis
                                  ? std::to_string(start) + ":" + std::to_string(start + y.shape[d])
                                  : std::string(":"));
    }
    n.stmt(y.name + " = " + x.name + "[" + s + "]");
    start += y.shape[axis];
  }
}

// iota: y[i..] = i_dimension.
void iota_rule(NodeLowering& n) {
  const TensorInfo& y = n.out();
  map_kernel(n, y, kI + std::to_string(norm_dim(n.integer("dimension"), y.rank())));
}

// A jax.random sampler (a `jax.random.<name>` node, docs/jax.md): every output is a random draw.
void random_draw_rule(NodeLowering& n) {
  for (size_t i = 0; i < n.outputs(); ++i) n.random_output(i);
}

}  // namespace

void register_lax_rules(RuleTable& r) {
  r["jax.neg"] =
      elementwise([](NodeLowering&, const std::vector<std::string>& x) { return "-" + x.at(0); });
  for (const char* f : {"exp", "exp2", "log", "log1p", "expm1", "tanh", "erf", "rsqrt", "sqrt",
                        "abs", "sign", "floor", "ceil", "sin", "cos"}) {
    r[std::string("jax.") + f] = fn1(f);
  }
  r["jax.logistic"] = fn1("sigmoid");
  r["jax.erf_inv"] = fn1("erfinv");
  r["jax.erfc"] = elementwise([](NodeLowering&, const std::vector<std::string>& x) {
    return "(1.0 - erf(" + x.at(0) + "))";
  });
  r["jax.tan"] = elementwise([](NodeLowering&, const std::vector<std::string>& x) {
    return "sin(" + x.at(0) + ") / cos(" + x.at(0) + ")";
  });
  r["jax.round"] = elementwise([](NodeLowering& n, const std::vector<std::string>& x) {
    // rounding_method AWAY_FROM_ZERO (lax.round's default) or TO_NEAREST_EVEN (jnp.round)
    if (n.string_or("rounding_method", "AWAY_FROM_ZERO") == "TO_NEAREST_EVEN") {
      return "round(" + x.at(0) + ")";
    }
    return "sign(" + x.at(0) + ") * floor(abs(" + x.at(0) + ") + 0.5)";
  });
  r["jax.is_finite"] = elementwise([](NodeLowering&, const std::vector<std::string>& x) {
    return "(!isnan(" + x.at(0) + ") && abs(" + x.at(0) + ") != inf)";
  });
  r["jax.square"] = elementwise([](NodeLowering&, const std::vector<std::string>& x) {
    return "(" + x.at(0) + " * " + x.at(0) + ")";
  });
  r["jax.integer_pow"] = elementwise(integer_pow);
  r["jax.reduce_precision"] = elementwise(reduce_precision);
  r["jax.pow"] = fn2("pow");
  r["jax.atan2"] = fn2("atan2");
  r["jax.max"] = fn2("max");
  r["jax.min"] = fn2("min");
  r["jax.add"] = infix("+");
  r["jax.add_any"] = infix("+");  // the sum of two cotangents (a backward's accumulation)
  r["jax.sub"] = infix("-");
  r["jax.mul"] = infix("*");
  r["jax.div"] = infix("/");  // an integer output truncates toward zero, as lax.div does
  r["jax.rem"] = elementwise([](NodeLowering&, const std::vector<std::string>& x) {
    return "(" + x.at(0) + " - " + x.at(1) + " * " + trunc("(" + x.at(0) + " / " + x.at(1) + ")") +
           ")";
  });
  const std::vector<std::pair<const char*, const char*>> compare{
      {"eq", "=="}, {"ne", "!="}, {"lt", "<"}, {"le", "<="}, {"gt", ">"}, {"ge", ">="}};
  for (const auto& c : compare) r[std::string("jax.") + c.first] = infix(c.second);
  r["jax.and"] = logical("&&");
  r["jax.or"] = logical("||");
  r["jax.xor"] = logical("^");
  r["jax.not"] = logical("!");
  r["jax.select_n"] = elementwise(select_n);
  r["jax.clamp"] = elementwise([](NodeLowering&, const std::vector<std::string>& x) {
    return "min(max(" + x.at(1) + ", " + x.at(0) + "), " + x.at(2) + ")";  // clamp(lo, x, hi)
  });

  for (const char* op :
       {"jax.convert_element_type", "jax.copy", "jax.copy_p", "jax.stop_gradient"}) {
    r[op] = copy_rule;
  }
  r["jax.reshape"] = reshape_rule;
  r["jax.squeeze"] = reshape_rule;
  r["jax.broadcast_in_dim"] = broadcast_in_dim_rule;
  r["jax.transpose"] = transpose_rule;
  r["jax.rev"] = rev_rule;
  r["jax.slice"] = slice_rule;
  r["jax.dynamic_slice"] = dynamic_slice_rule;
  r["jax.dynamic_update_slice"] = dynamic_update_slice_rule;
  r["jax.concatenate"] = concatenate_rule;
  r["jax.pad"] = pad_rule;
  r["jax.split"] = split_rule;
  r["jax.iota"] = iota_rule;
  // jax.random samplers, captured whole (docs/jax.md, "Random draws"): every output is a random
  // draw, JAX's values supplied at run time. Their operands (bernoulli's p, randint's bounds) are
  // not read: leaving out a read only makes the bound smaller. Samplers that do linear algebra or
  // move an input's data (ball, orthogonal, multivariate_normal) have no rule.
  const char* const samplers[] = {"bernoulli",
                                  "beta",
                                  "cauchy",
                                  "chisquare",
                                  "dirichlet",
                                  "double_sided_maxwell",
                                  "exponential",
                                  "f",
                                  "gamma",
                                  "generalized_normal",
                                  "geometric",
                                  "gumbel",
                                  "laplace",
                                  "logistic",
                                  "maxwell",
                                  "normal",
                                  "pareto",
                                  "poisson",
                                  "rademacher",
                                  "randint",
                                  "rayleigh",
                                  "t",
                                  "truncated_normal",
                                  "uniform",
                                  "wald",
                                  "weibull_min"};
  for (const char* sampler : samplers) {
    r[std::string("jax.random.") + sampler] = random_draw_rule;
  }
  lax::register_lax_contract_rules(r);
}

}  // namespace solar::frontend
