// Canonical printer: round trips (parse(print(p)) == p), idempotence, exact canonical text for
// hand-written programs, and minimal parenthesisation.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "solar/ir/ast.h"
#include "solar/ir/parser.h"
#include "solar/ir/printer.h"
#include "solar/util/error.h"

namespace {

using namespace solar::ir;

// Programs written in canonical form: printing their parse gives the same text back. A table of
// data, not logic: exempt from the function length limit (.clang-tidy).
// NOLINTNEXTLINE(readability-function-size)
const std::vector<std::string>& canonical_programs() {
  static const std::vector<std::string> programs = {
      // 0: GEMM + bias + relu
      R"(# y = relu(x @ w + b)
size M = 4
size K = 8
size N = 3

input x : f32[M, K]
weight w : f32[K, N]
weight b : f32[N]
tensor acc : f32[M, N]
output y : f32[M, N]

kernel matmul {
  for i in 0..M, j in 0..N, k in 0..K:
    acc[i, j] += x[i, k] * w[k, j]
}
kernel bias_relu {
  for i in 0..M, j in 0..N:
    y[i, j] = max(acc[i, j] + b[j], 0.0)
}
)",
      // 1: convolution with stride and padding
      R"(# conv2d, stride 2, padding 1
size N = 1
size C = 3
size H = 8
size W = 8
size F = 4
size KH = 3
size KW = 3
size S = 2
size P = 1
size OH = (H + 2 * P - KH) / S + 1
size OW = (W + 2 * P - KW) / S + 1

input x : f32[N, C, H, W]
weight w : f32[F, C, KH, KW]
tensor xp : f32[N, C, H + 2 * P, W + 2 * P]
output y : f32[N, F, OH, OW]

xp = pad(x, lo=[0, 0, P, P], hi=[0, 0, P, P], value=0.0)
kernel conv {
  for n in 0..N, f in 0..F, oh in 0..OH, ow in 0..OW, c in 0..C, kh in 0..KH, kw in 0..KW:
    y[n, f, oh, ow] += xp[n, c, S * oh + kh, S * ow + kw] * w[f, c, kh, kw]
}
)",
      // 2: causal (triangular) attention
      R"(size T = 16
size D = 8

input q : f32[T, D]
input k : f32[T, D]
input v : f32[T, D]
tensor s : f32[T, T]
tensor m : f32[T]
tensor e : f32[T, T]
tensor z : f32[T]
output o : f32[T, D]

kernel scores {
  for i in 0..T, j in 0..i + 1, d in 0..D:
    s[i, j] += q[i, d] * k[j, d] * rsqrt(f32(D))
}
kernel rowmax {
  for i in 0..T, j in 0..i + 1:
    m[i] max= s[i, j]
}
kernel expo {
  for i in 0..T, j in 0..T:
    e[i, j] = select(j <= i, exp(s[i, j] - m[i]), 0.0)
}
kernel rowsum {
  for i in 0..T, j in 0..i + 1:
    z[i] += e[i, j]
}
kernel pv {
  for i in 0..T, d in 0..D, j in 0..i + 1:
    o[i, d] += e[i, j] / z[i] * v[j, d]
}
)",
      // 3: recurrence with repeat
      R"(size T = 5
size H = 4

input x : f32[T, H]
weight wh : f32[H, H]
tensor h : f32[H]
tensor pre : f32[H]
output ys : f32[T, H]

repeat t in 0..T {
  kernel step {
    for i in 0..H, k in 0..H:
      pre[i] += wh[i, k] * h[k]
  }
  kernel act {
    for i in 0..H:
      h[i] = tanh(pre[i] + x[t, i])
  }
  ys[t, :] = h
}
)",
      // 4: nested repeats, repeat indices in indices, values and slices
      R"(size L = 2
size B = 3
size N = 8

input x : f32[L, B, N]
tensor a : f32[N]
tensor half : f32[N / 2]
output y : f32[L, B, N]

repeat l in 0..L {
  # one layer
  repeat b in l..B {
    a = x[l, b, :]
    half = a[0:N:2]
    kernel scale {
      for n in 0..N / 2:
        y[l, b, 2 * n] = half[n] * f32(l + 1) + b
    }
  }
}
)",
      // 5: every composition operation
      R"(size N = 4
size M = 6

input x : f32[N, M]
input idx : i64[N]
input gidx : i32[N, M]
tensor c : f32[N, M]
tensor sl : f32[2, M]
tensor row : f32[M]
tensor col : f32[N]
tensor flat : f32[N * M]
tensor p : f32[M, N]
tensor bc : f32[N, M, 2]
tensor bd : f32[2, N, M]
tensor cat : f32[N, 2 * M]
tensor pd : f32[N + 2, M]
tensor tk : f32[N, M]
tensor g : f32[N, M]
tensor sc : f32[N, M]
output y : f32[N, M]

c = x
sl = x[1:3]
c[0:2, ::2] = sl
c[:2, 1:] = sl
row = x[2]
row = x[N - 1, :]
col = x[:, -1]
flat = reshape(x)
p = permute(x, [1, 0])
bc = broadcast(x, dims=[0, 1])
bd = broadcast(x)
cat = concat(x, c, dim=1)
pd = pad(x, lo=[1, 0], hi=[1, 0], value=-inf)
tk = take(x, idx, dim=0)
g = gather(x, gidx, dim=1)
sc = scatter(x, gidx, g, dim=1, reduce=add)
sc = scatter(sc, gidx, g, dim=1)
sc = scatter(sc, gidx, g, reduce=none, dim=-1)
y = scatter(sc, gidx, g, dim=1, reduce=max)
y = scatter(y, gidx, g, dim=1, reduce=min)
)",
      // 6: comments on every kind of item
      R"(# leading comment of a size
size N = 4
#
#   indented text
size M = 2

# a tensor comment
input x : f32[N]
output y : f32[N]

# a kernel comment
kernel k {
  for i in 0..N:
    y[i] = x[i]
}
repeat t in 0..M {
  # inner statement
  y = x
}

# trailing 1
# trailing 2
)",
      // 7: scalars and kernels without loops
      R"(input x : f32[4]
tensor s : f32[]
output o : f32[]

kernel total {
  for i in 0..4:
    s[] += x[i]
}
kernel k {
  o[] = s[] * 0.25
}
)",
      // 8: every reduction
      R"(size N = 3

input x : f32[N, N]
tensor a : f32[N]
tensor b : f32[N]
tensor c : f32[N]
output d : f32[N]

kernel s {
  for i in 0..N, j in 0..N:
    a[i] += x[i, j]
}
kernel p {
  for i in 0..N, j in 0..N:
    b[i] *= x[i, j]
}
kernel mx {
  for i in 0..N, j in 0..N:
    c[i] max= x[i, j]
}
kernel mn {
  for i in 0..N, j in 0..N:
    d[i] min= x[i, j] + a[i] - b[i] + c[i]
}
)",
      // 9: integer expressions
      R"(size N = 10
size M = 3
size A = max(N, 3) - min(N, 2) * 2 % 5
size B = -N + 1
size C = N - (M - 1)
size D = (N + 1) * 2
size E = N / 2 / 2
size F = N / (2 * 2)
size G = -(N + M)
size H = N % M * M

input x : f32[N]
output y : f32[N]

kernel k {
  for i in 0..N, j in max(i - 1, 0)..min(i + 2, N):
    y[i] += x[(j + M) % N] * x[N - 1 - j]
}
)",
      // 10: indices and sizes as values, comparisons and logic
      R"(size N = 4

input x : f32[N, N]
output y : f32[N, N]

kernel k {
  for i in 0..N, j in 0..N:
    y[i, j] = select(i < j && !(j == 0) || N != 3, -inf, x[i, j] + i * N + j)
}
)",
      // 11: layer normalisation
      R"(size R = 2
size C = 8

input x : f32[R, C]
weight gamma : f32[C]
weight beta : f32[C]
tensor mean : f32[R]
tensor var : f32[R]
output y : f32[R, C]

kernel mean_k {
  for r in 0..R, c in 0..C:
    mean[r] += x[r, c] / C
}
kernel var_k {
  for r in 0..R, c in 0..C:
    var[r] += (x[r, c] - mean[r]) * (x[r, c] - mean[r]) / C
}
kernel norm {
  for r in 0..R, c in 0..C:
    y[r, c] = (x[r, c] - mean[r]) * rsqrt(var[r] + 1e-05) * gamma[c] + beta[c]
}
)",
      // 12: embedding lookup with integer dtypes, and casts
      R"(size V = 10
size T = 3
size D = 4

input ids : i64[T]
weight emb : bf16[V, D]
tensor tok : bf16[T, D]
output y : f32[T, D]

tok = take(emb, ids, dim=0)
kernel up {
  for t in 0..T, d in 0..D:
    y[t, d] = f32(tok[t, d]) * f32(bf16(i32(ids[t])))
}
)",
      // 13: literal spellings
      R"(input x : f64[2]
output y : f64[2]

kernel lit {
  for i in 0..2:
    y[i] = x[i] * 1e-05 + 1e+20 + 0.1 + 2 + inf + nan + 123456789012345683968.0 + 5e-324 + -1.5
}
)",
      // 14: softmax with pow, atan2, min and a negated constant
      R"(size N = 6

input x : f16[N]
tensor m : f32[]
tensor z : f32[]
output y : f16[N]

kernel mx {
  for i in 0..N:
    m[] max= f32(x[i])
}
kernel sum {
  for i in 0..N:
    z[] += exp(f32(x[i]) - m[])
}
kernel out {
  for i in 0..N:
    y[i] = f16(min(exp(f32(x[i]) - m[]) / z[], pow(2.0, -3)) + atan2(-1.0, -(2.0 - 1)))
}
)",
      // 15: op blocks (framework operations), one inside a repeat body
      R"(size N = 4

input x : f32[N]
tensor t : f32[N]
output y : f32[N]
output z : f32[3, N]

# hardsigmoid, as export decomposes it
op hardsigmoid {
  kernel add {
    for i in 0..N:
      t[i] = x[i] + 3.0
  }
  kernel clamp_div {
    for i in 0..N:
      y[i] = min(max(t[i], 0.0), 6.0) / 6.0
  }
}
repeat r in 0..3 {
  op row {
    z[r, :] = y
  }
}
)",
      // 16: an empty program and one with only comments
      "",
      "# nothing here\n",
  };
  return programs;
}

TEST(Printer, CanonicalProgramsPrintBackUnchanged) {
  const auto& programs = canonical_programs();
  for (size_t i = 0; i < programs.size(); ++i) {
    SCOPED_TRACE("program " + std::to_string(i));
    const Program p = parse(programs[i]);
    EXPECT_EQ(print(p), programs[i]);
  }
}

TEST(Printer, RoundTripAndIdempotence) {
  for (const std::string& text : canonical_programs()) {
    const Program p = parse(text);
    const std::string printed = print(p);
    const Program q = parse(printed, "printed.ir");
    EXPECT_TRUE(equal(p, q)) << printed;
    EXPECT_EQ(print(q), printed);
  }
}

// Layout of a program written in a free style: sections are reordered and regrouped, spacing and
// blank lines normalised, and comments move with the items they belong to.
TEST(Printer, NormalisesLayout) {
  const std::string messy =
      "size N=4 input x:f32[N]  # the input\n"
      "kernel k{for i in 0..N:y[i]=x[ i ]*(2.0)}\n\n\n"
      "output y : f32[ N ]\n"
      "tensor t : f32 [N]   kernel k2 { for i in 0 .. N , j in 0..N : t[i] += x[j] }\n"
      "# end";
  EXPECT_THROW(parse(messy), solar::UserError);  // y is used before it is declared
  const std::string ok =
      "size N=4 input x:f32[N]  # the input\n"
      "output y : f32[ N ]\n\n\n"
      "kernel k{for i in 0..N:y[i]=x[ i ]*(2.0)}\n"
      "tensor t : f32 [N]   kernel k2 { for i in 0 .. N , j in 0..N : t[i] += x[j] }\n"
      "# end";
  EXPECT_EQ(print(parse(ok)),
            "size N = 4\n"
            "\n"
            "# the input\n"
            "input x : f32[N]\n"
            "output y : f32[N]\n"
            "tensor t : f32[N]\n"
            "\n"
            "kernel k {\n"
            "  for i in 0..N:\n"
            "    y[i] = x[i] * 2.0\n"
            "}\n"
            "kernel k2 {\n"
            "  for i in 0..N, j in 0..N:\n"
            "    t[i] += x[j]\n"
            "}\n"
            "\n"
            "# end\n");
}

TEST(Printer, NoBlankLinesForMissingSections) {
  EXPECT_EQ(print(parse("input x : f32[2]")), "input x : f32[2]\n");
  EXPECT_EQ(print(parse("size N = 2")), "size N = 2\n");
  EXPECT_EQ(print(parse("size N = 2\n# end")), "size N = 2\n\n# end\n");
}

// Every unary, binary and cast spelling, generated from the X-macro lists, prints and parses
// back (so a new entry is covered automatically).
std::string elementwise_program(const std::string& rhs) {
  return "input x : f32[3]\ninput z : f32[3]\noutput y : f32[3]\n\nkernel k {\n  for i in 0..3:\n"
         "    y[i] = " +
         rhs + "\n}\n";
}

std::vector<std::string> every_operator_rhs() {
  std::vector<std::string> out;
#define SOLAR_X(e, s, c)               \
  if (UnaryOp::e == UnaryOp::Neg)      \
    out.push_back("-x[i]");            \
  else if (UnaryOp::e == UnaryOp::Not) \
    out.push_back("!x[i]");            \
  else                                 \
    out.push_back(std::string(s) + "(x[i])");
  SOLAR_UNARY_OPS(SOLAR_X)
#undef SOLAR_X
#define SOLAR_X(e, s, inf, p, c) \
  out.push_back(inf ? "x[i] " + std::string(s) + " z[i]" : std::string(s) + "(x[i], z[i])");
  SOLAR_BINARY_OPS(SOLAR_X)
#undef SOLAR_X
#define SOLAR_X(e, s, n, k) out.push_back(std::string(s) + "(x[i])");
  SOLAR_DTYPES(SOLAR_X)
#undef SOLAR_X
  return out;
}

TEST(Printer, EveryOperatorRoundTrips) {
  for (const std::string& rhs : every_operator_rhs()) {
    const std::string text = elementwise_program(rhs);
    const Program p = parse(text);
    EXPECT_EQ(print(p), text);
    EXPECT_TRUE(equal(p, parse(print(p))));
  }
}

// ---------------------------------------------------------------------------------------------
// Minimal parentheses. a, b, c, d are sizes, so they parse to Index nodes in value expressions.

const std::string kSizes = "size a = 1\nsize b = 2\nsize c = 3\nsize d = 4\n";

std::string reprint_value(const std::string& expr) {
  const Program p = parse(kSizes + "output y : f32[]\nkernel k { y[] = " + expr + " }");
  return print(*std::get<Kernel>(p.body.at(0)->node).rhs);
}

std::string reprint_int(const std::string& expr) {
  const Program p = parse(kSizes + "size z = " + expr);
  return print(*p.sizes.back().value);
}

TEST(Printer, ValueParentheses) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"a - (b - c)", "a - (b - c)"},
      {"a - b - c", "a - b - c"},
      {"(a - b) - c", "a - b - c"},
      {"a * (b + c)", "a * (b + c)"},
      {"(a * b) + c", "a * b + c"},
      {"a / (b * c)", "a / (b * c)"},
      {"(a / b) * c", "a / b * c"},
      {"a % (b % c)", "a % (b % c)"},
      {"-(a + b)", "-(a + b)"},
      {"(-a) + b", "-a + b"},
      {"-(-a)", "--a"},
      {"- -a", "--a"},
      {"!(a < b)", "!(a < b)"},
      {"!!a", "!!a"},
      {"a < b == c < d", "a < b == c < d"},
      {"(a == b) < c", "(a == b) < c"},
      {"a == (b == c)", "a == (b == c)"},
      {"a || b && c", "a || b && c"},
      {"(a || b) && c", "(a || b) && c"},
      {"a && b || c && d", "a && b || c && d"},
      {"max(a, b) * -c", "max(a, b) * -c"},
      {"((a + b))", "a + b"},
      {"-(1.0)", "-1.0"},
      {"-1.0 * a", "-1.0 * a"},
      {"-(1.0 * a)", "-(1.0 * a)"},
      {"a + b * c - d", "a + b * c - d"},
      {"(a + b) * (c - d)", "(a + b) * (c - d)"},
      {"select(a, b, c) + exp((a))", "select(a, b, c) + exp(a)"},
      {"f32(a + b) / 2", "f32(a + b) / 2"},
  };
  for (const auto& [in, out] : cases) EXPECT_EQ(reprint_value(in), out) << in;
}

TEST(Printer, IntegerParentheses) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"a - (b - c)", "a - (b - c)"}, {"a - b - c", "a - b - c"},
      {"a / (b / c)", "a / (b / c)"}, {"a / b / c", "a / b / c"},
      {"(a + b) % c", "(a + b) % c"}, {"a + b % c", "a + b % c"},
      {"-(a * b)", "-(a * b)"},       {"-a * b", "-a * b"},
      {"min(a, (b))", "min(a, b)"},   {"max(-a, b - c)", "max(-a, b - c)"},
  };
  for (const auto& [in, out] : cases) EXPECT_EQ(reprint_int(in), out) << in;
}

// ---------------------------------------------------------------------------------------------
// Trees built in code.

TEST(Printer, BuiltTrees) {
  const IntExprP i = int_sym("i", SymKind::Loop);
  const IntExprP two = int_const(2);
  EXPECT_EQ(print(*int_binary(IntOp::Mul, int_binary(IntOp::Add, i, two), two)), "(i + 2) * 2");
  EXPECT_EQ(print(*int_binary(IntOp::Sub, i, int_const(-1))), "i - -1");
  // A compound Index is printed as an equivalent value expression: `/` there is true division,
  // so floor division is written floor(a / b).
  const ExprP half = expr_index(int_binary(IntOp::FloorDiv, int_binary(IntOp::Add, i, two), two));
  EXPECT_EQ(print(*half), "floor((i + 2) / 2)");
  EXPECT_EQ(print(*expr_binary(BinaryOp::Mul, half, expr_const(1.0, false))),
            "floor((i + 2) / 2) * 1.0");
  EXPECT_EQ(print(*expr_const(3, true)), "3");
  EXPECT_EQ(print(*expr_const(1e300, false)), "1e+300");
  EXPECT_EQ(print(*expr_const(100, false)), "100.0");
  EXPECT_EQ(print(*expr_binary(BinaryOp::Sub, expr_const(1.0, false), expr_const(-2.0, false))),
            "1.0 - -2.0");
}

TEST(Printer, BuiltProgramRoundTrips) {
  Program p;
  p.sizes.push_back({"N", int_const(8), {"free"}, {}});
  p.tensors.push_back({"x", TensorRole::Input, DType::F32, {int_sym("N", SymKind::Size)}, {}, {}});
  p.tensors.push_back(
      {"y", TensorRole::Output, DType::BF16, {int_sym("N", SymKind::Size)}, {}, {}});
  Kernel k;
  k.name = "k";
  k.loops.push_back({"i", int_const(0), int_sym("N", SymKind::Size), {}});
  k.out = "y";
  k.out_indices = {int_sym("i", SymKind::Loop)};
  k.rhs = expr_unary(UnaryOp::Neg, expr_read("x", {int_sym("i", SymKind::Loop)}));
  p.body.push_back(make_stmt(std::move(k), {}, {"negate"}));
  Compose c;
  c.op = ComposeOp::Pad;
  c.dst = "y";
  c.srcs = {"y"};
  ComposeAttr lo{"lo", {int_const(0)}, true, std::nullopt, "", {}};
  ComposeAttr hi{"hi", {int_const(0)}, true, std::nullopt, "", {}};
  ComposeAttr value{"value", {}, false, -0.0, "", {}};
  c.attrs = {lo, hi, value};
  p.body.push_back(make_stmt(std::move(c)));
  const std::string text = print(p);
  EXPECT_EQ(text,
            "# free\nsize N = 8\n\ninput x : f32[N]\noutput y : bf16[N]\n\n# negate\n"
            "kernel k {\n  for i in 0..N:\n    y[i] = -x[i]\n}\n"
            "y = pad(y, lo=[0], hi=[0], value=-0.0)\n");
  EXPECT_TRUE(equal(p, parse(text)));
}

}  // namespace
