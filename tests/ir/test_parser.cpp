// Parser: the trees it builds (canonical forms, name resolution, comment attachment, source
// positions), its diagnostics (exact file:line:col and text), and robustness on hostile input.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "solar/ir/ast.h"
#include "solar/ir/diagnostic.h"
#include "solar/ir/parser.h"
#include "solar/ir/printer.h"
#include "solar/util/error.h"

namespace {

using namespace solar::ir;

// The one-line diagnostic for `text`, or "" if it parses.
std::string diagnostic(const std::string& text) {
  try {
    parse(text, "in.ir");
  } catch (const DiagnosticError& e) {
    EXPECT_EQ(e.diagnostics().size(), 1u);
    return e.what();
  }
  return "";
}

const Kernel& kernel_at(const Program& p, size_t i) { return std::get<Kernel>(p.body.at(i)->node); }
const Compose& compose_at(const Program& p, size_t i) {
  return std::get<Compose>(p.body.at(i)->node);
}

const char* const kGemm = R"(size M = 4
size K = 8
input x : f32[M, K]
weight w : f32[K, 3]
output y : f32[M, 3]
kernel mm {
  for i in 0..M, j in 0..3, k in 0..K:
    y[i, j] += x[i, k] * w[k, j]
})";

// ---------------------------------------------------------------------------------------------
// Trees

TEST(Parser, Declarations) {
  const Program p = parse(kGemm, "gemm.ir");
  EXPECT_EQ(p.file, "gemm.ir");
  ASSERT_EQ(p.sizes.size(), 2u);
  EXPECT_EQ(p.sizes[0].name, "M");
  EXPECT_TRUE(p.sizes[0].is_free());
  EXPECT_EQ(p.sizes[0].value->value, 4);
  ASSERT_EQ(p.tensors.size(), 3u);
  const TensorDecl* w = p.find_tensor("w");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->role, TensorRole::Weight);
  EXPECT_EQ(w->dtype, DType::F32);
  ASSERT_EQ(w->shape.size(), 2u);
  EXPECT_EQ(w->shape[0]->op, IntOp::Sym);
  EXPECT_EQ(w->shape[0]->sym_kind, SymKind::Size);
  EXPECT_EQ(w->shape[1]->op, IntOp::Const);
  EXPECT_EQ(p.find_size("K"), &p.sizes[1]);
  EXPECT_EQ(p.find_size("x"), nullptr);
  EXPECT_EQ(p.find_tensor("M"), nullptr);
}

TEST(Parser, KernelTree) {
  const Program p = parse(kGemm);
  ASSERT_EQ(p.body.size(), 1u);
  EXPECT_EQ(p.body[0]->kind(), StmtKind::Kernel);
  const Kernel& k = kernel_at(p, 0);
  EXPECT_EQ(k.name, "mm");
  ASSERT_EQ(k.loops.size(), 3u);
  EXPECT_EQ(k.loops[1].name, "j");
  EXPECT_EQ(k.loops[1].hi->value, 3);
  EXPECT_EQ(k.out, "y");
  EXPECT_EQ(k.op, AssignOp::Sum);
  EXPECT_EQ(k.out_indices[0]->sym_kind, SymKind::Loop);
  const Expr& rhs = *k.rhs;
  EXPECT_EQ(rhs.kind, ExprKind::Binary);
  EXPECT_EQ(rhs.binary_op, BinaryOp::Mul);
  EXPECT_EQ(rhs.args[0]->kind, ExprKind::Read);
  EXPECT_EQ(rhs.args[0]->tensor, "x");
  EXPECT_EQ(rhs.args[0]->indices.size(), 2u);
}

TEST(Parser, Locations) {
  const Program p = parse(kGemm);
  EXPECT_EQ(p.sizes[1].loc.line, 2u);  // a declaration is located at its name
  EXPECT_EQ(p.sizes[1].loc.col, 6u);
  EXPECT_EQ(p.tensors[0].loc.col, 7u);
  EXPECT_EQ(p.body[0]->loc.line, 6u);  // a statement at its first token
  EXPECT_EQ(p.body[0]->loc.col, 1u);
  const Kernel& k = kernel_at(p, 0);
  EXPECT_EQ(k.loops[2].loc.line, 7u);
  EXPECT_EQ(k.loops[2].loc.col, 29u);
  EXPECT_EQ(k.rhs->loc.col, 24u);           // a binary operation at its operator
  EXPECT_EQ(k.rhs->args[1]->loc.col, 26u);  // a read at the tensor name
  EXPECT_EQ(k.out_indices[1]->loc.col, 10u);
  EXPECT_EQ(k.out_loc.line, 8u);
  EXPECT_EQ(k.out_loc.col, 5u);
}

// The canonical rule for value expressions: a bare size or index is Index(Sym); an integer
// literal is Const with is_integer_literal; arithmetic stays Binary; `-1.0` is Neg(Const 1.0).
TEST(Parser, ValueExpressionCanonicalForm) {
  const Program p = parse(
      "size N = 4\ninput x : f32[N]\noutput y : f32[N]\n"
      "repeat t in 0..2 {\n  kernel k { for i in 0..N: y[i] = i * 2 + N - t + -1.0 + x[i + 1] "
      "}\n}");
  const Repeat& r = std::get<Repeat>(p.body[0]->node);
  const Expr& e = *std::get<Kernel>(r.body[0]->node).rhs;
  // ((((i * 2) + N) - t) + -1.0) + x[i + 1]
  ASSERT_EQ(e.kind, ExprKind::Binary);
  const Expr& read = *e.args[1];
  EXPECT_EQ(read.kind, ExprKind::Read);
  EXPECT_EQ(read.indices[0]->op, IntOp::Add);
  const Expr& neg = *e.args[0]->args[1];
  EXPECT_EQ(neg.kind, ExprKind::Unary);
  EXPECT_EQ(neg.unary_op, UnaryOp::Neg);
  EXPECT_EQ(neg.args[0]->kind, ExprKind::Const);
  EXPECT_EQ(neg.args[0]->number, 1.0);
  EXPECT_FALSE(neg.args[0]->is_integer_literal);
  const Expr& minus_t = *e.args[0]->args[0];
  EXPECT_EQ(minus_t.binary_op, BinaryOp::Sub);
  EXPECT_EQ(minus_t.args[1]->kind, ExprKind::Index);
  EXPECT_EQ(minus_t.args[1]->index->sym_kind, SymKind::Repeat);
  const Expr& plus_n = *minus_t.args[0];
  EXPECT_EQ(plus_n.args[1]->index->sym_kind, SymKind::Size);
  const Expr& times = *plus_n.args[0];
  EXPECT_EQ(times.kind, ExprKind::Binary);
  EXPECT_EQ(times.args[0]->kind, ExprKind::Index);
  EXPECT_EQ(times.args[0]->index->op, IntOp::Sym);
  EXPECT_EQ(times.args[0]->index->sym_kind, SymKind::Loop);
  EXPECT_EQ(times.args[1]->kind, ExprKind::Const);
  EXPECT_TRUE(times.args[1]->is_integer_literal);
}

TEST(Parser, CallsAndCasts) {
  const Program p = parse(
      "input x : f32[]\noutput y : f32[]\n"
      "kernel k { y[] = select(x[] < 0.0, pow(x[], 2), bf16(sigmoid(x[]))) }");
  const Expr& e = *kernel_at(p, 0).rhs;
  EXPECT_EQ(e.kind, ExprKind::Select);
  EXPECT_EQ(e.args[0]->binary_op, BinaryOp::Lt);
  EXPECT_EQ(e.args[1]->binary_op, BinaryOp::Pow);
  EXPECT_EQ(e.args[2]->kind, ExprKind::Cast);
  EXPECT_EQ(e.args[2]->cast_to, DType::BF16);
  EXPECT_EQ(e.args[2]->args[0]->unary_op, UnaryOp::Sigmoid);
  EXPECT_TRUE(kernel_at(p, 0).loops.empty());
  EXPECT_TRUE(kernel_at(p, 0).out_indices.empty());
}

TEST(Parser, AssignOperators) {
  const std::string head = "input x : f32[3]\noutput y : f32[]\n";
  const std::vector<std::pair<std::string, AssignOp>> cases = {{"=", AssignOp::Assign},
                                                               {"+=", AssignOp::Sum},
                                                               {"*=", AssignOp::Prod},
                                                               {"max=", AssignOp::Max},
                                                               {"min=", AssignOp::Min}};
  for (const auto& [spelling, op] : cases) {
    const Program p = parse(head + "kernel k { for i in 0..3: y[] " + spelling + " x[i] }");
    EXPECT_EQ(kernel_at(p, 0).op, op) << spelling;
  }
  // `max =` with a space is not an operator.
  EXPECT_EQ(diagnostic(head + "kernel k { for i in 0..3: y[] max = x[i] }"),
            "in.ir:3:31: error: expected an assignment (=, +=, *=, max=, min=) after the output "
            "access, found 'max'");
}

TEST(Parser, ComposeTrees) {
  const Program p = parse(
      "size N = 4\ninput x : f32[N, N]\ninput i : i64[N]\ntensor y : f32[N, N]\n"
      "tensor r : f32[N]\n"
      "y[1:, ::2] = x\nr = x[N - 1, 0:N:2]\ny = permute(x, [1, 0])\n"
      "y = scatter(y, i, x, dim=0, reduce=max)\ny = pad(x, lo=[0, 0], hi=[0, 0], value=-1)\n");
  const Compose& region = compose_at(p, 0);
  EXPECT_EQ(region.op, ComposeOp::Copy);
  ASSERT_EQ(region.dst_region.size(), 2u);
  EXPECT_FALSE(region.dst_region[0].is_index);
  EXPECT_EQ(region.dst_region[0].start->value, 1);
  EXPECT_EQ(region.dst_region[0].stop, nullptr);
  EXPECT_EQ(region.dst_region[1].start, nullptr);
  EXPECT_EQ(region.dst_region[1].step->value, 2);
  EXPECT_EQ(region.srcs, std::vector<std::string>{"x"});
  const Compose& slice = compose_at(p, 1);
  EXPECT_EQ(slice.op, ComposeOp::Slice);
  EXPECT_TRUE(slice.src_slices[0].is_index);
  EXPECT_EQ(slice.src_slices[0].start->op, IntOp::Sub);
  EXPECT_EQ(slice.src_slices[1].stop->name, "N");
  const Compose& perm = compose_at(p, 2);
  EXPECT_EQ(perm.op, ComposeOp::Permute);
  EXPECT_EQ(perm.list.size(), 2u);
  const Compose& scatter = compose_at(p, 3);
  EXPECT_EQ(scatter.srcs, (std::vector<std::string>{"y", "i", "x"}));
  ASSERT_EQ(scatter.attrs.size(), 2u);
  EXPECT_EQ(scatter.attrs[0].key, "dim");
  EXPECT_FALSE(scatter.attrs[0].is_list);
  EXPECT_EQ(scatter.attrs[1].word, "max");
  const Compose& pad = compose_at(p, 4);
  EXPECT_TRUE(pad.attrs[0].is_list);
  EXPECT_EQ(pad.attrs[2].number, -1.0);
}

// ---------------------------------------------------------------------------------------------
// Names and scopes

TEST(Parser, LoopIndicesAreScopedToTheirKernel) {
  const std::string head = "input x : f32[3, 3]\noutput y : f32[3, 3]\n";
  EXPECT_NO_THROW(parse(head + "kernel a { for i in 0..3, j in 0..i: y[i, j] = x[j, i] }\n"
                               "kernel b { for i in 0..3, j in i..3: y[i, j] = 1.0 }\n"
                               "size i = 2"));
  EXPECT_EQ(diagnostic(head + "kernel a { for i in 0..j, j in 0..3: y[i, j] = 1.0 }"),
            "in.ir:3:24: error: unknown name 'j'");
  EXPECT_EQ(diagnostic(head + "kernel a { for i in 0..3: y[i, 0] = 1.0 }\ny[i:, :] = x"),
            "in.ir:4:3: error: unknown name 'i'");
}

TEST(Parser, RepeatIndicesAreScopedToTheBody) {
  const std::string head = "input x : f32[3]\noutput y : f32[3]\n";
  EXPECT_NO_THROW(parse(head + "repeat t in 0..3 { repeat u in t..3 { y[t:u] = x } }\n"
                               "repeat t in 0..2 { }"));
  EXPECT_EQ(diagnostic(head + "repeat t in 0..3 { y = x }\ny[t] = x"),
            "in.ir:4:3: error: unknown name 't'");
  EXPECT_EQ(diagnostic(head + "repeat t in 0..3 { repeat t in 0..3 { } }"),
            "in.ir:3:27: error: 't' is already declared at 3:8");
  EXPECT_EQ(diagnostic(head + "repeat t in 0..t { }"), "in.ir:3:16: error: unknown name 't'");
}

TEST(Parser, OpBlocks) {
  const std::string head = "input x : f32[3]\noutput y : f32[3]\n";
  const Program p = parse(head + "op relu { kernel k { for i in 0..3: y[i] = max(x[i], 0.0) } }");
  ASSERT_EQ(p.body.size(), 1u);
  ASSERT_EQ(p.body[0]->kind(), StmtKind::Op);
  const OpBlock& o = std::get<OpBlock>(p.body[0]->node);
  EXPECT_EQ(o.name, "relu");
  ASSERT_EQ(o.body.size(), 1u);
  EXPECT_EQ(o.body[0]->kind(), StmtKind::Kernel);
  // Op names have their own namespace: an op may share a tensor's or a kernel's name.
  EXPECT_NO_THROW(parse(head + "op y { kernel y { for i in 0..3: y[i] = x[i] } }"));
  EXPECT_NO_THROW(parse(head + "repeat t in 0..2 { op o { y = x } }"));
  EXPECT_EQ(diagnostic(head + "op a { y = x }\nop a { y = x }"),
            "in.ir:4:4: error: op 'a' is already declared at 3:4");
  EXPECT_EQ(diagnostic(head + "op a { op b { y = x } }"),
            "in.ir:3:8: error: an op block cannot hold another op block");
  EXPECT_EQ(diagnostic(head + "op a { repeat t in 0..2 { op b { y = x } } }"),
            "in.ir:3:27: error: an op block cannot hold another op block");
  EXPECT_EQ(diagnostic(head + "op a { tensor t : f32[3] }"),
            "in.ir:3:8: error: declarations are not allowed inside an op block");
  EXPECT_EQ(diagnostic(head + "op a { y = x"),
            "in.ir:3:13: error: expected '}' to close the op opened at 3:1, found end of file");
  EXPECT_EQ(diagnostic(head + "op { }"), "in.ir:3:4: error: expected a name after 'op', found '{'");
  // `op` is reserved: not a tensor name.
  EXPECT_EQ(diagnostic("input op : f32[3]"),
            "in.ir:1:7: error: 'op' is reserved and cannot be used as a name");
}

TEST(Parser, OneNamespace) {
  EXPECT_EQ(diagnostic("size x = 1\ninput x : f32[]"),
            "in.ir:2:7: error: 'x' is already declared at 1:6");
  // Kernel names have a namespace of their own: a kernel may share its tensor's or a loop's name.
  EXPECT_NO_THROW(parse("output y : f32[2]\nkernel y { for y2 in 0..2: y[y2] = 1.0 }", "in.ir"));
  EXPECT_NO_THROW(parse("output y : f32[2]\nkernel k { for k in 0..2: y[k] = 1.0 }", "in.ir"));
  EXPECT_EQ(diagnostic("size N = 2\noutput y : f32[2]\nkernel k { for N in 0..2: y[N] = 1.0 }"),
            "in.ir:3:16: error: 'N' is already declared at 1:6");
  EXPECT_EQ(diagnostic("output y : f32[2]\nkernel k { y[0] = 1.0 }\nkernel k { y[1] = 1.0 }"),
            "in.ir:3:8: error: kernel 'k' is already declared at 2:8");
  EXPECT_EQ(diagnostic("size N = N"), "in.ir:1:10: error: unknown name 'N'");
}

// ---------------------------------------------------------------------------------------------
// Comments

TEST(Parser, CommentsAttachToTheNextItem) {
  const Program p = parse(
      "#  two spaces kept: one is stripped\n#\nsize N = 4   \n"
      "# about x   \ninput x : f32[N]\n"
      "output y : f32[N]  # same line as y\n"
      "# before k\nkernel k {  # on the kernel line\n  for i in 0..N:\n    # inside\n"
      "    y[i] = x[i]\n}  # after k\n"
      "repeat t in 0..2 {\n  # before copy\n  y = x\n  # end of body\n}\n"
      "# trailing\r\n#\ttab\n");
  EXPECT_EQ(p.sizes[0].comments,
            (std::vector<std::string>{" two spaces kept: one is stripped", ""}));
  EXPECT_EQ(p.tensors[0].comments, std::vector<std::string>{"about x"});
  EXPECT_EQ(p.tensors[1].comments, std::vector<std::string>{"same line as y"});
  EXPECT_EQ(p.body[0]->comments,
            (std::vector<std::string>{"before k", "on the kernel line", "inside", "after k"}));
  EXPECT_EQ(p.body[1]->comments, std::vector<std::string>{"end of body"});
  const Repeat& r = std::get<Repeat>(p.body[1]->node);
  EXPECT_EQ(r.body[0]->comments, std::vector<std::string>{"before copy"});
  EXPECT_EQ(p.trailing_comments, (std::vector<std::string>{"trailing", "\ttab"}));
}

TEST(Parser, CommentsDoNotChangeEquality) {
  const Program a = parse("size N = 4 # n\n");
  const Program b = parse("# n\nsize N = 4\n");
  const Program c = parse("size N = 4\n");
  EXPECT_TRUE(equal(a, b));
  EXPECT_FALSE(equal(a, c));  // comments are part of the program
}

TEST(Parser, NonAsciiCommentsAreKept) {
  const Program p = parse("# caf\xc3\xa9 \xe2\x86\x92 \xf0\x9f\x98\x80\nsize N = 1");
  EXPECT_EQ(p.sizes[0].comments[0], "caf\xc3\xa9 \xe2\x86\x92 \xf0\x9f\x98\x80");
}

// ---------------------------------------------------------------------------------------------
// Diagnostics: exact position and text

struct ErrorCase {
  std::string text;
  std::string expected;
};

const std::string kHead = "size N = 4\ninput x : f32[N]\noutput y : f32[N]\n";  // 3 lines

TEST(Parser, SyntaxErrors) {
  const std::vector<ErrorCase> cases = {
      {kHead + "kernel k {\n  for i in 0..N:\n    y[i] = x[i:2]\n}",
       "in.ir:6:15: error: expected ']' after index list (slices are only allowed outside "
       "kernels), found ':'"},
      {kHead + "kernel k { for i in 0..N y[i] = 1.0 }",
       "in.ir:4:26: error: expected ':' after the loop list, found 'y'"},
      {kHead + "kernel k { for i in 0..N: y[i] = 1.0 y[i] = 2.0 }",
       "in.ir:4:38: error: expected '}' after the kernel's assignment (a kernel holds one "
       "assignment), found 'y'"},
      {kHead + "kernel k { for i in 0..N: y[i] == 1.0 }",
       "in.ir:4:32: error: expected an assignment (=, +=, *=, max=, min=) after the output "
       "access, found '=='"},
      {kHead + "kernel k { for i 0..N: y[i] = 1.0 }",
       "in.ir:4:18: error: expected 'in' after the loop index, found '0'"},
      {kHead + "kernel k { for i in 0..N: y[i] = (x[i] + 1.0 }",
       "in.ir:4:46: error: expected ')' to close '(', found '}'"},
      {kHead + "kernel k { for i in 0..N: y[i] = x[i] + }",
       "in.ir:4:41: error: expected an expression, found '}'"},
      {"size N = 4\nsize = 3", "in.ir:2:6: error: expected a name after 'size', found '='"},
      {"size for = 2", "in.ir:1:6: error: 'for' is reserved and cannot be used as a name"},
      {"input f32 : f32[2]", "in.ir:1:7: error: 'f32' is reserved and cannot be used as a name"},
      {"input x f32[2]", "in.ir:1:9: error: expected ':' after the tensor name, found 'f32'"},
      {"input x : f32",
       "in.ir:1:14: error: expected '[' after the dtype (a scalar is written "
       "f32[]), found end of file"},
      {"input x : f32[2, 3", "in.ir:1:19: error: expected ']' after the shape, found end of file"},
      {"input x : f32[2:3]", "in.ir:1:16: error: expected ']' after the shape, found ':'"},
      {"input x : fp32[2]",
       "in.ir:1:11: error: unknown dtype 'fp32'; valid: f64, f32, f16, bf16, f8e4m3, f8e5m2, "
       "i64, i32, i8, u8, f4e2m1x2, bool, c64, c128"},
      {"]", "in.ir:1:1: error: expected a declaration or statement, found ']'"},
      {"size N = 2\nfor i in 0..N", "in.ir:2:1: error: expected a statement, found 'for'"},
      {"input x : f32[2]\nx", "in.ir:2:2: error: expected '=' or '[' after 'x', found end of file"},
      {"repeat t in 0..3 {",
       "in.ir:1:19: error: expected '}' to close the repeat opened at 1:1, "
       "found end of file"},
      {"repeat t in 0..3 {\n  size N = 3\n}",
       "in.ir:2:3: error: declarations are not allowed inside a repeat body"},
      {"size N = (2 + 3", "in.ir:1:16: error: expected ')' to close '(', found end of file"},
      {"size N = 2 +", "in.ir:1:13: error: expected an integer expression, found end of file"},
      {"size N = floor(2)", "in.ir:1:10: error: unknown integer function 'floor'; valid: min, max"},
      {"size N = min(2 3)",
       "in.ir:1:16: error: expected ',' between the arguments of 'min', found '3'"},
  };
  for (const ErrorCase& c : cases) EXPECT_EQ(diagnostic(c.text), c.expected) << c.text;
}

TEST(Parser, NameErrors) {
  const std::vector<ErrorCase> cases = {
      {"size N = 4\ninput x : f32[Q]", "in.ir:2:15: error: unknown name 'Q'"},
      {"size Num = 4\ninput x : f32[Nun]",
       "in.ir:2:15: error: unknown name 'Nun' (did you mean 'Num'?)"},
      {"size N = 4\ninput x : f32[n]", "in.ir:2:15: error: unknown name 'n' (did you mean 'N'?)"},
      {kHead + "kernel k { for i in 0..N: y[i] = tanhh(x[i]) }",
       "in.ir:4:34: error: unknown function 'tanhh' (did you mean 'tanh'?)"},
      {kHead + "kernel k { for i in 0..N: y[i] = foo(x[i]) }",
       "in.ir:4:34: error: unknown function 'foo'"},
      {kHead + "kernel k { for i in 0..N: y[i] = x }",
       "in.ir:4:34: error: tensor 'x' needs an index list: x[...]"},
      {kHead + "kernel k { for i in 0..N: y[i] = k }",
       "in.ir:4:34: error: unknown name 'k'"},  // kernel names are not values
      {kHead + "kernel k { for i in 0..N: N[i] = 1.0 }",
       "in.ir:4:27: error: 'N' is a size, not a tensor"},
      {kHead + "kernel k { for i in 0..N: y[x] = 1.0 }",
       "in.ir:4:29: error: 'x' is a tensor, not an integer (a size or an index)"},
      {kHead + "kernel k { for i in 0..N: y[i] = x[x[i]] }",
       "in.ir:4:36: error: an index cannot read a tensor ('x[...]'); use take or gather for "
       "data-dependent indexing"},
      {kHead + "kernel k { for i in 0..N: y[i] = exp(x[i], 2.0) }",
       "in.ir:4:34: error: 'exp' takes 1 argument, found 2"},
      {kHead + "kernel k { for i in 0..N: y[i] = select(x[i], 1.0) }",
       "in.ir:4:34: error: 'select' takes 3 arguments, found 2"},
      {kHead + "kernel k { for i in 0..N: y[i] = 1.0 + for }",
       "in.ir:4:40: error: expected an expression, found 'for'"},
      {kHead + "z = x", "in.ir:4:1: error: unknown name 'z'"},
  };
  for (const ErrorCase& c : cases) EXPECT_EQ(diagnostic(c.text), c.expected) << c.text;
}

TEST(Parser, CompositionErrors) {
  const std::string head = "input x : f32[4]\ninput i : i64[4]\noutput y : f32[4]\n";
  const std::vector<ErrorCase> cases = {
      {head + "y = reshap(x)",
       "in.ir:4:5: error: unknown operation 'reshap' (did you mean 'reshape'?); valid: "
       "reshape, permute, broadcast, concat, pad, take, gather, scatter, argsort, rfft, irfft, "
       "fft, ifft, view_as_real, view_as_complex"},
      {head + "y = copy(x)",
       "in.ir:4:5: error: unknown operation 'copy'; valid: reshape, permute, broadcast, concat, "
       "pad, take, gather, scatter, argsort, rfft, irfft, fft, ifft, view_as_real, "
       "view_as_complex"},
      {head + "y = concat(x, x)", "in.ir:4:5: error: 'concat' needs the argument 'dim='"},
      {head + "y = concat(dim=0)", "in.ir:4:5: error: 'concat' takes at least 1 tensor argument"},
      {head + "y = concat(x, x, dimm=0)",
       "in.ir:4:18: error: unknown argument 'dimm' for 'concat' (did you mean 'dim'?); valid: dim"},
      {head + "y = reshape(x, dim=0)",
       "in.ir:4:16: error: unknown argument 'dim' for 'reshape'; 'reshape' takes none"},
      {head + "y = take(x, i, dim=0, dim=1)", "in.ir:4:23: error: argument 'dim' is given twice"},
      {head + "y = take(x, dim=0)", "in.ir:4:5: error: 'take' takes 2 tensor arguments, found 1"},
      {head + "y = reshape(x, y)", "in.ir:4:5: error: 'reshape' takes 1 tensor argument, found 2"},
      {head + "y = permute(x)",
       "in.ir:4:5: error: 'permute' needs a permutation list, e.g. permute(x, [1, 0])"},
      {head + "y = reshape(x, [0])", "in.ir:4:5: error: 'reshape' takes no list argument"},
      {head + "y = scatter(x, i, x, dim=0, reduce=sum)",
       "in.ir:4:36: error: unknown reduce mode 'sum'; valid: none, add, max, min"},
      {head + "y = pad(x, lo=[1], hi=[1], value=zero)",
       "in.ir:4:34: error: expected a number after 'value=', found 'zero'"},
      {head + "y = concat(x, dim=0, x)",
       "in.ir:4:22: error: expected a keyword argument (key=value) after a keyword argument, "
       "found 'x'"},
      {head + "y = x[]", "in.ir:4:7: error: expected an integer expression, found ']'"},
      {head + "y[0:2] = x[0:2]",
       "in.ir:4:11: error: the source of a region copy is a whole tensor; compute or slice into "
       "a tensor first"},
      {head + "y[0:2] = reshape(x)",
       "in.ir:4:10: error: the source of a region copy is a whole tensor; compute or slice into "
       "a tensor first"},
  };
  for (const ErrorCase& c : cases) EXPECT_EQ(diagnostic(c.text), c.expected) << c.text;
}

TEST(Parser, LexicalErrors) {
  const std::vector<ErrorCase> cases = {
      {"size N = 99999999999999999999",
       "in.ir:1:10: error: integer literal '99999999999999999999' is too large (max "
       "9223372036854775807)"},
      {kHead + "kernel k { for i in 0..N: y[i] = x[i] + 9007199254740993 }",
       "in.ir:4:41: error: integer literal '9007199254740993' is too large for a value (max "
       "2^53 = 9007199254740992); write it as a float"},
      {kHead + "kernel k { for i in 0..N: y[i] = 1e999 }",
       "in.ir:4:34: error: number '1e999' is out of the range of f64"},
      {kHead + "kernel k { for i in 0..N: y[i] = 1.5e }",
       "in.ir:4:34: error: invalid number '1.5e'"},
      {"size N = 12abc", "in.ir:1:10: error: invalid number '12abc'"},
      {kHead + "kernel k { for i in 0..N: y[i] = x[i] $ 1.0 }",
       "in.ir:4:39: error: unexpected character '$'"},
      {kHead + "kernel k { for i in 0..N: y[i] = x[i] & x[i] }",
       "in.ir:4:39: error: unexpected character '&' (did you mean '&&'?)"},
      {"size N = 4\n\xff",
       "in.ir:2:1: error: unexpected byte 0xff (only ASCII is allowed outside "
       "comments)"},
      {"size N = 4\nsize \xc3\xa9 = 2",
       "in.ir:2:6: error: unexpected byte 0xc3 (only ASCII is allowed outside comments)"},
      {std::string("size N = 4\x00", 11), "in.ir:1:11: error: unexpected control character 0x00"},
      {"# ok\n# bad \xc3\x28\n", "in.ir:2:7: error: invalid UTF-8 byte 0xc3 in comment"},
      {"# overlong \xc0\xaf\n", "in.ir:1:12: error: invalid UTF-8 byte 0xc0 in comment"},
      {"# surrogate \xed\xa0\x80\n", "in.ir:1:13: error: invalid UTF-8 byte 0xed in comment"},
      {"# bell \x07\n", "in.ir:1:8: error: control character 0x07 in comment"},
      {"\tsize N = .5", "in.ir:1:11: error: unexpected character '.'"},  // a tab is one column
  };
  for (const ErrorCase& c : cases) EXPECT_EQ(diagnostic(c.text), c.expected) << c.text;
}

// The first error in the file is reported, lexical or not.
TEST(Parser, FirstErrorWins) {
  EXPECT_EQ(diagnostic("size N = \nsize M = $"),
            "in.ir:2:1: error: expected an integer expression, found 'size'");
}

// ---------------------------------------------------------------------------------------------
// Robustness

TEST(Parser, DeepNestingIsADiagnostic) {
  // The 201st '(' is at column 10 + 200.
  const std::string parens(1000, '(');
  EXPECT_EQ(diagnostic("size N = " + parens + "1" + std::string(1000, ')')),
            "in.ir:1:210: error: nesting is too deep (more than 200 levels)");
  std::string sum = "output y : f32[]\nkernel k { y[] = 1.0";
  for (int i = 0; i < 500; ++i) sum += " + 1.0";
  sum += " }";
  EXPECT_NE(diagnostic(sum).find("nesting is too deep"), std::string::npos);
  std::string minus(1000, '-');
  EXPECT_NE(diagnostic("output y : f32[]\nkernel k { y[] = " + minus + "1.0 }").find("too deep"),
            std::string::npos);
  std::string repeats;
  for (int i = 0; i < 300; ++i) repeats += "repeat t" + std::to_string(i) + " in 0..1 { ";
  EXPECT_NE(diagnostic(repeats).find("too deep"), std::string::npos);
  // Within the limit, nesting is fine.
  EXPECT_EQ(diagnostic("size N = " + std::string(150, '(') + "1" + std::string(150, ')')), "");
}

// Every byte value in every position of a small program yields a program or a diagnostic.
TEST(Parser, EveryByteIsHandled) {
  const std::string base =
      "size N = 2\ninput x : f32[N]\noutput y : f32[N]\n"
      "kernel k { for i in 0..N: y[i] = -x[i] * 2.0 }\n";
  for (size_t pos = 0; pos < base.size(); pos += 7) {
    for (int b = 0; b < 256; ++b) {
      std::string text = base;
      text[pos] = static_cast<char>(b);
      try {
        const Program p = parse(text);
        EXPECT_TRUE(equal(p, parse(print(p)))) << text;
      } catch (const solar::UserError&) {
      }
    }
  }
}

TEST(Parser, EveryPrefixIsHandled) {
  const std::string base = R"(# c
size N = 2
input x : f32[N, N]
tensor t : f32[N, N]
output y : f32[N]
t = pad(x, lo=[0, 0], hi=[0, 0], value=-inf)
repeat r in 0..2 {
  kernel k {
    for i in 0..N, j in 0..i + 1:
      y[i] max= select(j < r, t[i, j], 1e-3)
  }
}
)";
  for (size_t n = 0; n <= base.size(); ++n) {
    try {
      const Program p = parse(base.substr(0, n));
      EXPECT_TRUE(equal(p, parse(print(p))));
    } catch (const DiagnosticError& e) {
      EXPECT_EQ(std::string(e.what()).rfind("<input>:", 0), 0u) << e.what();
    }
  }
}

TEST(Parser, RandomBytesAreHandled) {
  std::mt19937 rng(12345);
  const std::string alphabet = "abxyN01.:[](){},=+-*/%<>!&|#\n \tsizeinputkernelforrepeat";
  for (int iter = 0; iter < 2000; ++iter) {
    std::string text;
    const int len = static_cast<int>(rng() % 80);
    for (int i = 0; i < len; ++i) text += alphabet[rng() % alphabet.size()];
    try {
      parse(text);
    } catch (const solar::UserError&) {
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Files

TEST(Parser, ParseFile) {
  const auto dir = std::filesystem::temp_directory_path() / "solar_test_parser";
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "bad.ir").string();
  {
    std::ofstream out(path);
    out << "size N = 4\ninput x : f32[Q]\n";
  }
  try {
    parse_file(path);
    FAIL() << "expected a diagnostic";
  } catch (const DiagnosticError& e) {
    EXPECT_EQ(std::string(e.what()), path + ":2:15: error: unknown name 'Q'");
  }
  const std::string missing = (dir / "missing.ir").string();
  try {
    parse_file(missing);
    FAIL() << "expected an error";
  } catch (const solar::UserError& e) {
    EXPECT_EQ(std::string(e.what()), "cannot read " + missing + ": No such file or directory");
  }
  try {
    parse_file(dir.string());
    FAIL() << "expected an error";
  } catch (const solar::UserError& e) {
    EXPECT_EQ(std::string(e.what()), "cannot read " + dir.string() + ": is a directory");
  }
  std::filesystem::remove_all(dir);
}

TEST(Diagnostic, Format) {
  EXPECT_EQ((Diagnostic{"a.ir", {3, 12}, "unknown name 'Q'"}.str()),
            "a.ir:3:12: error: unknown name 'Q'");
  EXPECT_EQ((Diagnostic{"a.ir", {}, "no position"}.str()), "a.ir: error: no position");
  const DiagnosticError e(
      {Diagnostic{"a.ir", {1, 2}, "first"}, Diagnostic{"a.ir", {3, 4}, "second"}});
  EXPECT_EQ(std::string(e.what()), "a.ir:1:2: error: first");
  EXPECT_EQ(e.diagnostics().size(), 2u);
}

}  // namespace
