// Lowering rules for elementwise operators: arithmetic, comparisons, logic, activations and
// unary functions. See docs/lowering.md.
#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "rules.h"
#include "solar/util/error.h"

namespace solar::frontend {

namespace {

// `self OP other`.
Rule infix(const std::string& op) {
  return binary([op](NodeLowering&, const std::string& a, const std::string& b) {
    return "(" + a + " " + op + " " + b + ")";
  });
}

// add and sub: `self OP other * alpha`.
Rule add_sub(const std::string& op) {
  return binary([op](NodeLowering& n, const std::string& a, const std::string& b) {
    return a + " " + op + " " + scaled(b, n.number_or("alpha", 1.0));
  });
}

// `min(max(x, lo), hi)`; an absent (or unnamed, "") bound is skipped.
Rule clamp_rule(const std::string& lo_key, const std::string& hi_key) {
  return unary([lo_key, hi_key](NodeLowering& n, const std::string& x) {
    std::string e = x;
    if (n.has(lo_key)) e = "max(" + e + ", " + read(n, lo_key, n.out()) + ")";
    if (n.has(hi_key)) e = "min(" + e + ", " + read(n, hi_key, n.out()) + ")";
    return e;
  });
}

// GELU, exact (erf) or with approximate="tanh".
std::string gelu(NodeLowering& n, const std::string& x) {
  if (n.string_or("approximate", "none") == "tanh") {
    return "0.5 * " + x + " * (1.0 + tanh(0.7978845608028654 * (" + x + " + 0.044715 * " + x +
           " * " + x + " * " + x + ")))";
  }
  return "0.5 * " + x + " * (1.0 + erf(" + x + " * 0.7071067811865476))";
}

}  // namespace

void register_elementwise_rules(RuleTable& r) {
  for (const char* v : {".Tensor", ".Scalar"}) {
    r[std::string("aten.add") + v] = complex_aware(add_sub("+"), "add");
    r[std::string("aten.sub") + v] = complex_aware(add_sub("-"), "sub");
    r[std::string("aten.mul") + v] = complex_aware(infix("*"), "mul");
    r[std::string("aten.div") + v] = complex_aware(infix("/"), "div");
    r[std::string("aten.eq") + v] = infix("==");
    r[std::string("aten.ne") + v] = infix("!=");
    r[std::string("aten.lt") + v] = infix("<");
    r[std::string("aten.le") + v] = infix("<=");
    r[std::string("aten.gt") + v] = infix(">");
    r[std::string("aten.ge") + v] = infix(">=");
  }
  for (const char* v : {"aten.rsub.Scalar", "aten.rsub.Tensor"}) {
    r[v] = binary([](NodeLowering& n, const std::string& a, const std::string& b) {
      return b + " - " + scaled(a, n.number_or("alpha", 1.0));
    });
  }
  r["aten.logical_and.default"] = infix("&&");
  r["aten.logical_or.default"] = infix("||");
  r["aten.logical_xor.default"] =
      binary([](NodeLowering&, const std::string& a, const std::string& b) {
        return "((" + a + " != 0.0) != (" + b + " != 0.0))";
      });
  r["aten.logical_not.default"] =
      unary([](NodeLowering&, const std::string& x) { return "!" + x; });
  r["aten.maximum.default"] = binary([](NodeLowering&, const std::string& a, const std::string& b) {
    return "max(" + a + ", " + b + ")";
  });
  r["aten.minimum.default"] = binary([](NodeLowering&, const std::string& a, const std::string& b) {
    return "min(" + a + ", " + b + ")";
  });
  for (const char* v : {"aten.pow.Tensor_Scalar", "aten.pow.Tensor_Tensor", "aten.pow.Scalar"}) {
    r[v] = binary([](NodeLowering&, const std::string& a,
                     const std::string& b) { return "pow(" + a + ", " + b + ")"; },
                  "self", "exponent");
  }
  r["aten.where.self"] = [](NodeLowering& n) {
    pointwise(n, "select(" + read(n, "condition", n.out()) + ", " + read(n, "self", n.out()) +
                     ", " + read(n, "other", n.out()) + ")");
  };
  for (const char* v : {"aten.masked_fill.Scalar", "aten.masked_fill.Tensor"}) {
    r[v] = [](NodeLowering& n) {
      pointwise(n, "select(" + read(n, "mask", n.out()) + ", " + read(n, "value", n.out()) + ", " +
                       read(n, "self", n.out()) + ")");
    };
  }

  for (const char* fn : {"exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "erf", "sin", "cos",
                         "floor", "ceil", "sign", "expm1", "log1p", "log2"}) {
    r[std::string("aten.") + fn + ".default"] = call(fn);
  }
  r["aten.abs.default"] = complex_aware(call("abs"), "abs");
  r["aten.reciprocal.default"] = call("recip");
  r["aten.neg.default"] = unary([](NodeLowering&, const std::string& x) { return "-" + x; });
  r["aten.relu.default"] =
      unary([](NodeLowering&, const std::string& x) { return "max(" + x + ", 0.0)"; });
  r["aten.silu.default"] =
      unary([](NodeLowering&, const std::string& x) { return x + " * sigmoid(" + x + ")"; });
  r["aten.gelu.default"] = unary(gelu);
  r["aten.leaky_relu.default"] = unary([](NodeLowering& n, const std::string& x) {
    return "select(" + x + " > 0.0, " + x + ", " + x + " * " +
           lit(n.number_or("negative_slope", 0.01)) + ")";
  });
  r["aten.hardswish.default"] = unary([](NodeLowering&, const std::string& x) {
    return x + " * min(max(" + x + " + 3.0, 0.0), 6.0) / 6.0";
  });
  r["aten.hardsigmoid.default"] = unary([](NodeLowering&, const std::string& x) {
    return "min(max(" + x + " + 3.0, 0.0), 6.0) / 6.0";
  });
  r["aten.elu.default"] = unary([](NodeLowering& n, const std::string& x) {
    const double scale = n.number_or("scale", 1.0);
    return "select(" + x + " > 0.0, " + scaled(x, scale) + ", expm1(" +
           scaled(x, n.number_or("input_scale", 1.0)) + ") * " +
           lit(n.number_or("alpha", 1.0) * scale) + ")";
  });
  r["aten.softplus.default"] = unary([](NodeLowering& n, const std::string& x) {
    const double beta = n.number_or("beta", 1.0);
    return "select(" + scaled(x, beta) + " > " + lit(n.number_or("threshold", 20.0)) + ", " + x +
           ", log1p(exp(" + scaled(x, beta) + ")) / " + lit(beta) + ")";
  });
  r["aten.mish.default"] = unary(
      [](NodeLowering&, const std::string& x) { return x + " * tanh(log1p(exp(" + x + ")))"; });
  r["aten.xlogy.Tensor"] = binary([](NodeLowering&, const std::string& a, const std::string& b) {
    return "select(isnan(" + b + "), nan, select(" + a + " == 0.0, 0.0, " + a + " * log(" + b +
           ")))";
  });
  r["aten.div.Tensor_mode"] =
      binary([](NodeLowering& n, const std::string& a, const std::string& b) {
        const std::string q = "(" + a + " / " + b + ")";
        const std::string mode = n.string_or("rounding_mode", "");
        if (mode.empty()) return q;
        if (mode == "floor") return "floor" + q;
        if (mode == "trunc") return "sign" + q + " * floor(abs" + q + ")";
        throw UserError("unknown rounding_mode '" + mode + "'");
      });
  r["aten.trunc.default"] = unary([](NodeLowering&, const std::string& x) {
    return "sign(" + x + ") * floor(abs(" + x + "))";
  });
  r["aten.round.default"] = call("round");
  for (const char* v : {"aten.remainder.Scalar", "aten.remainder.Tensor"}) {
    r[v] = infix("%");
  }
  for (const char* v : {"aten.fmod.Scalar", "aten.fmod.Tensor"}) {
    // a % b has b's sign; fmod has a's: subtract b when the signs differ and it is nonzero.
    r[v] = binary([](NodeLowering&, const std::string& a, const std::string& b) {
      const std::string m = "(" + a + " % " + b + ")";
      return "select(" + m + " != 0.0 && (" + a + " < 0.0) != (" + b + " < 0.0), " + m + " - " + b +
             ", " + m + ")";
    });
  }
  r["aten.isnan.default"] = call("isnan");
  r["aten.isinf.default"] =
      unary([](NodeLowering&, const std::string& x) { return "(abs(" + x + ") == inf)"; });
  r["aten.bitwise_not.default"] = [](NodeLowering& n) {
    const std::string x = read(n, "self", n.out());
    pointwise(n, n.tensor("self").dtype == ir::DType::Bool ? "!" + x : "-" + x + " - 1.0");
  };
  r["aten.exp2.default"] = call("exp2");
  r["aten.log10.default"] = unary(
      [](NodeLowering&, const std::string& x) { return "log(" + x + ") * 0.4342944819032518"; });
  r["aten.atan.default"] =
      unary([](NodeLowering&, const std::string& x) { return "atan2(" + x + ", 1.0)"; });
  r["aten.asin.default"] = unary([](NodeLowering&, const std::string& x) {
    return "atan2(" + x + ", sqrt(1.0 - " + x + " * " + x + "))";
  });
  r["aten.acos.default"] = unary([](NodeLowering&, const std::string& x) {
    return "atan2(sqrt(1.0 - " + x + " * " + x + "), " + x + ")";
  });
  r["aten.tan.default"] =
      unary([](NodeLowering&, const std::string& x) { return "sin(" + x + ") / cos(" + x + ")"; });
  r["aten.sinh.default"] = unary([](NodeLowering&, const std::string& x) {
    return "(exp(" + x + ") - exp(-" + x + ")) * 0.5";
  });
  r["aten.cosh.default"] = unary([](NodeLowering&, const std::string& x) {
    return "(exp(" + x + ") + exp(-" + x + ")) * 0.5";
  });
  r["aten.clamp.default"] = clamp_rule("min", "max");
  r["aten.clamp.Tensor"] = clamp_rule("min", "max");
  r["aten.clamp_min.default"] = clamp_rule("min", "");
  r["aten.clamp_max.default"] = clamp_rule("", "max");
  r["aten.hardtanh.default"] = clamp_rule("min_val", "max_val");
}

}  // namespace solar::frontend
