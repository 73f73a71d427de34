// Size binding, integer evaluation (floor semantics, overflow) and --size parsing.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "solar/ir/diagnostic.h"
#include "solar/ir/parser.h"
#include "solar/ir/sizes.h"

namespace solar::ir {
namespace {

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

int64_t eval_op(IntOp op, int64_t a, int64_t b) {
  return eval_int(*int_binary(op, int_const(a), int_const(b)), {});
}

// The message of the UserError that `f` throws ("" when it throws none).
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

TEST(EvalInt, FloorDivisionRoundsTowardNegativeInfinity) {
  EXPECT_EQ(eval_op(IntOp::FloorDiv, 7, 2), 3);
  EXPECT_EQ(eval_op(IntOp::FloorDiv, -7, 2), -4);  // -3.5 -> -4 (C++ would give -3)
  EXPECT_EQ(eval_op(IntOp::FloorDiv, 7, -2), -4);
  EXPECT_EQ(eval_op(IntOp::FloorDiv, -7, -2), 3);  // 3.5 -> 3
  EXPECT_EQ(eval_op(IntOp::FloorDiv, -8, 2), -4);  // exact
  EXPECT_EQ(eval_op(IntOp::FloorDiv, kMin, 1), kMin);
}

TEST(EvalInt, FloorModuloTakesTheDivisorsSign) {
  EXPECT_EQ(eval_op(IntOp::Mod, 7, 3), 1);
  EXPECT_EQ(eval_op(IntOp::Mod, -7, 3), 2);   // -7 = 3 * -3 + 2
  EXPECT_EQ(eval_op(IntOp::Mod, 7, -3), -2);  // 7 = -3 * -3 - 2
  EXPECT_EQ(eval_op(IntOp::Mod, -7, -3), -1);
  EXPECT_EQ(eval_op(IntOp::Mod, kMin, -1), 0);  // C++'s % is undefined here; Python gives 0
}

TEST(EvalInt, MinMaxNegationAndSymbols) {
  EXPECT_EQ(eval_op(IntOp::Min, -3, 2), -3);
  EXPECT_EQ(eval_op(IntOp::Max, -3, 2), 2);
  const IntExprP e = int_binary(IntOp::Sub, int_unary(IntOp::Neg, int_sym("N", SymKind::Size)),
                                int_const(1));  // -N - 1
  EXPECT_EQ(eval_int(*e, {{"N", 5}}), -6);
}

TEST(EvalInt, OverflowIsAUserError) {
  EXPECT_THROW(eval_op(IntOp::Add, kMax, 1), UserError);
  EXPECT_THROW(eval_op(IntOp::Sub, kMin, 1), UserError);
  EXPECT_THROW(eval_op(IntOp::Mul, int64_t{1} << 32, int64_t{1} << 31), UserError);
  EXPECT_THROW(eval_op(IntOp::FloorDiv, kMin, -1), UserError);  // 2^63 does not fit
  const IntExprP neg = int_unary(IntOp::Neg, int_sym("X", SymKind::Size));
  EXPECT_EQ(error_of([&] {
              eval_int(*neg, {{"X", kMin}}, "f.ir");
            }),
            "f.ir: error: integer overflow in '-X'");
  // Just inside the range: 2^31 * 2^31 = 2^62.
  EXPECT_EQ(eval_op(IntOp::Mul, int64_t{1} << 31, int64_t{1} << 31), int64_t{1} << 62);
}

TEST(EvalInt, DivisionByZeroAndUnknownNamesNameThePosition) {
  const IntExprP div = int_binary(IntOp::FloorDiv, int_sym("N", SymKind::Size, {3, 10}),
                                  int_const(0, {3, 14}), {3, 12});
  EXPECT_EQ(error_of([&] {
              eval_int(*div, {{"N", 4}}, "f.ir");
            }),
            "f.ir:3:10: error: division by zero in 'N / 0'");
  const IntExprP mod = int_binary(IntOp::Mod, int_const(4), int_const(0));
  EXPECT_EQ(error_of([&] { eval_int(*mod, {}, "f.ir"); }),
            "f.ir: error: modulo by zero in '4 % 0'");
  const IntExprP sym = int_sym("Q", SymKind::Size, {2, 5});
  EXPECT_EQ(error_of([&] { eval_int(*sym, {}, "f.ir"); }), "f.ir:2:5: error: unknown name 'Q'");
}

constexpr std::string_view kConv = R"(size H = 11
size P = 1
size K = 3
size S = 2
size OH = (H + 2 * P - K) / S + 1
)";

TEST(BindSizes, DefaultsAndDerivedSizes) {
  const SymbolValues v = bind_sizes(parse(kConv, "f.ir"));
  EXPECT_EQ(v.at("OH"), 6);  // (11 + 2 - 3) / 2 + 1 = 10 / 2 + 1
  EXPECT_EQ(v.size(), 5u);
}

TEST(BindSizes, OverridesChangeDerivedSizes) {
  const Program p = parse(kConv, "f.ir");
  EXPECT_EQ(bind_sizes(p, {{"H", 12}}).at("OH"), 6);  // 11 / 2 + 1 = 5 + 1
  EXPECT_EQ(bind_sizes(p, {{"H", 13}}).at("OH"), 7);  // 12 / 2 + 1
  EXPECT_EQ(bind_sizes(p, {{"H", 0}}).at("OH"), 0);   // (0 + 2 - 3) / 2 + 1 = -1 + 1 (floor)
}

TEST(BindSizes, BadOverrides) {
  const Program p = parse(kConv, "f.ir");
  EXPECT_EQ(error_of([&] {
              bind_sizes(p, {{"OH", 4}});
            }),
            "f.ir:5:6: error: cannot set size 'OH': it is derived from other sizes");
  EXPECT_EQ(error_of([&] {
              bind_sizes(p, {{"Q", 4}});
            }),
            "cannot set size 'Q': no such size (sizes: H, P, K, S, OH)");
  EXPECT_EQ(error_of([&] {
              bind_sizes(parse("", "e.ir"), {{"Q", 4}});
            }),
            "cannot set size 'Q': no such size (the program declares none)");
}

TEST(BindSizes, NegativeSizesAndFailedEvaluationNameTheSize) {
  const Program p = parse("size N = 2\nsize M = N - 5\n", "f.ir");
  EXPECT_EQ(error_of([&] { bind_sizes(p); }),
            "f.ir:2:6: error: size 'M' is -3; sizes must be non-negative");
  EXPECT_EQ(bind_sizes(p, {{"N", 5}}).at("M"), 0);
  EXPECT_EQ(error_of([&] { bind_sizes(parse("size Z = 0\nsize Q = 8 / Z\n", "f.ir")); }),
            "f.ir:2:10: error: division by zero in '8 / Z' of size 'Q'");
  EXPECT_EQ(error_of([&] {
              bind_sizes(parse("size N = 4611686018427387904\nsize M = N * 2\n", "f.ir"));
            }),
            "f.ir:2:10: error: integer overflow in 'N * 2' of size 'M'");  // 2^62 * 2 = 2^63
}

TEST(ParseSizeOverrides, ListsAndSpaces) {
  const SymbolValues v = parse_size_overrides("N=1024,M=64");
  EXPECT_EQ(v, (SymbolValues{{"M", 64}, {"N", 1024}}));
  EXPECT_EQ(parse_size_overrides(" B_2 = 0 "), (SymbolValues{{"B_2", 0}}));
  EXPECT_EQ(parse_size_overrides("X=9223372036854775807").at("X"), kMax);
}

TEST(ParseSizeOverrides, Junk) {
  EXPECT_EQ(error_of([] { parse_size_overrides("N"); }),
            "bad size override 'N': expected NAME=VALUE, e.g. N=1024");
  EXPECT_EQ(error_of([] { parse_size_overrides("N=-1"); }),
            "bad size override 'N=-1': the value must be a non-negative integer");
  EXPECT_EQ(error_of([] { parse_size_overrides("N=1,N=2"); }),
            "bad size override: 'N' is set twice");
  for (const char* junk :
       {"", "=4", "1N=4", "N=", "N=4x", "N=1,", "N=9223372036854775808", "N=1.5", "N M=1"}) {
    EXPECT_THROW(parse_size_overrides(junk), UserError) << junk;
  }
}

TEST(ParseSizeOverrides, SeveralOptions) {
  using Items = std::vector<std::string>;
  EXPECT_EQ(parse_size_overrides(Items{"N=8", "M=2,K=3"}),
            (SymbolValues{{"K", 3}, {"M", 2}, {"N", 8}}));
  EXPECT_EQ(parse_size_overrides(Items{}), SymbolValues{});
  EXPECT_EQ(error_of([] {
              parse_size_overrides(Items{"N=8", "M=1,N=9"});
            }),
            "--size N is given more than once");
}

}  // namespace
}  // namespace solar::ir
