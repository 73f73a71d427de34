// The semantic checker. Each rule also has a golden case in tests/golden/errors/; these tests
// cover what a single-diagnostic file cannot: programs that must pass, guarded reads, size
// overrides, several diagnostics, repeat blocks, and programs built in code (which the parser's
// own checks would otherwise stop first).
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "solar/ir/checker.h"
#include "solar/ir/parser.h"

namespace solar::ir {
namespace {

std::vector<std::string> strs(const std::vector<Diagnostic>& diags) {
  std::vector<std::string> out;
  for (const Diagnostic& d : diags) out.push_back(d.str());
  return out;
}

// The diagnostics of `text` (file "t.ir") at its default sizes, or with `overrides`.
std::vector<std::string> diags(std::string_view text, const SymbolValues& overrides = {}) {
  const Program p = parse(text, "t.ir");
  return strs(check(p, bind_sizes(p, overrides)));
}

using Lines = std::vector<std::string>;

// ---- valid programs ----

TEST(Checker, ExamplesAreValid) {
  int n = 0;
  for (const auto& entry : std::filesystem::directory_iterator(SOLAR_SOURCE_DIR "/examples")) {
    if (entry.path().extension() != ".ir") continue;
    const Program p = parse_file(entry.path().string());
    EXPECT_EQ(strs(check(p, bind_sizes(p))), Lines{}) << entry.path();
    ++n;
  }
  EXPECT_GE(n, 10);
}

TEST(Checker, CompositionShapesThatAgree) {
  EXPECT_EQ(diags(R"(
input x : f32[8, 5]
input ids : i64[2, 3]
input idx : i32[8, 2]
output a : f32[5]
output b : f32[3, 5]
output c : f32[2, 8, 5]
output d : f32[8, 10]
output e : f32[4, 8, 5]
output f : f32[10, 7]
output g : f32[2, 3, 5]
output h : f32[8, 2]
output s : f32[8, 5]
a = x[1, :]
b = x[1:8:3]
c = broadcast(x)
c[0, :, :] = x
d = concat(x, x, dim=1)
e = broadcast(x, dims=[1, 2])
f = pad(x, lo=[1, 0], hi=[1, 2], value=-inf)
g = take(x, ids, dim=0)
h = gather(x, idx, dim=1)
s = scatter(x, idx, x, dim=1, reduce=max)
)"),
            Lines{});  // x[1:8:3] takes rows 1, 4, 7
}

TEST(Checker, MoreCompositionRules) {
  EXPECT_EQ(diags(R"(input x : f32[4, 6]
input i1 : i64[3]
input i2 : i64[4, 2]
input s : f32[4, 1]
output a : f32[6]
output c : f32[4, 6]
output g : f32[4, 3]
a = x[4, :]
a = x[0, :, 1]
a = broadcast(x)
c = concat(x, a, dim=0)
c = permute(x, [1])
c = take(x, i1, dim=2)
g = gather(x, i2, dim=1)
c = scatter(x, i2, s, dim=1)
c = broadcast(s, dims=[0])
c = broadcast(s)
g = scatter(x, i2, x, dim=1, reduce=none)
)"),
            (Lines{
                "t.ir:8:7: error: index 4 is out of range for dimension 0 of 'x' (size 4)",
                "t.ir:9:13: error: 'x' has 2 dimensions, sliced with 3",
                "t.ir:10:1: error: cannot broadcast 'x' of shape [4, 6] to 'a' of shape [6]: 'x' "
                "has more dimensions",
                "t.ir:11:1: error: 'a' has 1 dimension but 'c' has 2",
                "t.ir:12:17: error: the permutation has 1 entry but 'x' has 2 dimensions",
                "t.ir:13:17: error: dim 2 is out of range for 'x' with 2 dimensions",
                "t.ir:14:1: error: gather gives shape [4, 2] (the shape of 'i2') but 'g' has shape "
                "[4, 3]",
                "t.ir:15:1: error: dimension 1 of index tensor 'i2' (2) is larger than that of 's' "
                "(1)",
                "t.ir:16:18: error: dims has 1 entry but 's' has 2 dimensions",
                "t.ir:18:1: error: scatter gives shape [4, 6] (the shape of 'x') but 'g' has shape "
                "[4, 3]",
            }));
}

TEST(Checker, BroadcastStretchesSizeOneDimensions) {
  EXPECT_EQ(diags("input x : f32[1, 5]\noutput y : f32[3, 4, 5]\ny = broadcast(x)\n"), Lines{});
  EXPECT_EQ(diags("input x : f32[4, 1]\noutput y : f32[4, 2, 6]\ny = broadcast(x, dims=[0, 2])\n"),
            Lines{});
}

TEST(Checker, ScalarKernelsAndLogicalReductions) {
  EXPECT_EQ(diags(R"(
input x : f32[4]
output s : f32[]
output any : bool[]
kernel first { s[] = x[0] * 2.0 }
kernel any_positive { for i in 0..4: any[] max= x[i] > 0.0 }
)"),
            Lines{});
}

// ---- bounds ----

constexpr std::string_view kShift = R"(size N = 8
input x : f32[N]
output y : f32[N]
kernel shift {
  for i in 0..N:
    y[i] = select(i + 1 < N, x[i + 1], 0.0)
}
)";

TEST(CheckerBounds, ReadsInSelectBranchesAreGuarded) {
  EXPECT_EQ(diags(kShift), Lines{});
  EXPECT_EQ(diags(R"(size N = 8
input x : f32[N]
output y : f32[N]
kernel k { for i in 0..N: y[i] = select(x[i] > 0.0, exp(x[i + 1] * 2.0), x[i - 1]) }
)"),
            Lines{});
}

TEST(CheckerBounds, TheConditionOfASelectIsChecked) {
  EXPECT_EQ(diags(R"(size N = 8
input x : f32[N]
output y : f32[N]
kernel k { for i in 0..N: y[i] = select(x[i + 1] > 0.0, 1.0, 0.0) }
)"),
            Lines{"t.ir:4:43: error: index 'i + 1' of 'x' ranges over 1..8 but dimension 0 has "
                  "size 8"});
}

TEST(CheckerBounds, NegativeIndices) {
  EXPECT_EQ(diags(R"(size N = 8
input x : f32[N]
output y : f32[N]
kernel k { for i in 0..N: y[i] = x[i - 1] }
)"),
            Lines{"t.ir:4:36: error: index 'i - 1' of 'x' ranges over -1..6 but dimension 0 has "
                  "size 8"});
}

constexpr std::string_view kSizeDependent = R"(size N = 8
input x : f32[64]
output y : f32[N]
kernel k { for i in 0..N: y[i] = x[i + 1] }
)";

TEST(CheckerBounds, DependOnTheBoundSizes) {
  EXPECT_EQ(diags(kSizeDependent), Lines{});  // i + 1 <= 8 < 64
  EXPECT_EQ(diags(kSizeDependent, {{"N", 64}}),
            Lines{"t.ir:4:36: error: index 'i + 1' of 'x' ranges over 1..64 but dimension 0 has "
                  "size 64"});
  EXPECT_EQ(diags(kSizeDependent, {{"N", 0}}), Lines{});  // an empty domain reads nothing
}

TEST(CheckerBounds, TriangularDomainsAreNotBoxes) {
  // Over i in 0..8, j in 0..i+1, i - j ranges 0..7: in bounds, though the box would give -7..7.
  EXPECT_EQ(diags(R"(size N = 8
input x : f32[N]
output y : f32[N]
kernel k { for i in 0..N, j in 0..i + 1: y[i] += x[i - j] }
)"),
            Lines{});
}

TEST(CheckerBounds, OnlyCertainViolationsAreReported) {
  // j in i+1..N is empty for i = 7, so i only reaches 6 where reads happen: x[i] is in bounds
  // (x has 7 elements), though maximising i alone would give 7. x[j] really reaches 7.
  EXPECT_EQ(
      diags(R"(size N = 8
input x : f32[N - 1]
output y : f32[]
kernel k { for i in 0..N, j in i + 1..N: y[] += x[i] * x[j] }
)"),
      Lines{"t.ir:4:58: error: index 'j' of 'x' ranges over 1..7 but dimension 0 has size 7"});
}

// ---- repeat blocks ----

TEST(CheckerRepeat, IndicesAreCheckedForEveryValue) {
  // t + i reaches 3 + 4 = 7 only in the last iteration.
  EXPECT_EQ(diags(R"(size T = 4
input x : f32[7]
output y : f32[T, 5]
repeat t in 0..T {
  kernel k { for i in 0..5: y[t, i] = x[t + i] }
}
)"),
            Lines{"t.ir:5:41: error: index 't + i' of 'x' ranges over 3..7 (t = 3) but dimension 0 "
                  "has size 7"});
}

TEST(CheckerRepeat, EmptyRepeatsStillCheckStructure) {
  const std::string text = R"(size T = 4
input x : f32[T, 16]
output y : f32[T, 4]
repeat t in 0..T {
  kernel k { for i in 0..4, j in 0..4: y[t, i] += x[t + 1, i * j] }
}
)";
  // T = 0: no iteration runs, so no bounds error, but the non-affine index is reported.
  EXPECT_EQ(diags(text, {{"T", 0}}),
            Lines{"t.ir:5:60: error: index 'i * j' of 'x' is not affine in the loop indices"});
  // T = 4: t + 1 is 4 when t = 3; the other index of the same read is still bounds-checked.
  EXPECT_EQ(diags(text),
            (Lines{"t.ir:5:53: error: index 't + 1' of 'x' is 4 (t = 3) but dimension 0 has size 4",
                   "t.ir:5:60: error: index 'i * j' of 'x' is not affine in the loop indices"}));
}

TEST(CheckerRepeat, LongRepeatsStayFast) {
  // 10^7 iterations: checked within a budget; the violation at t = 1 is still found.
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(diags(R"(size T = 10000000
input x : f32[4]
output y : f32[4]
repeat t in 0..T {
  kernel k { for i in 0..4: y[i] = x[i + t] }
}
)"),
            Lines{"t.ir:5:38: error: index 'i + t' of 'x' ranges over 1..4 (t = 1) but dimension 0 "
                  "has size 4"});  // checking stops after the first iteration with an error
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
}

// ---- zero-size dimensions (issue 44) ----

// An output of zero elements has every one of its elements written without a statement (a
// cumsum along a dimension of size 0 lowers to no statement at all); an output with elements
// still must be written, also at a size where it is empty at another.
TEST(Checker, AnOutputOfZeroElementsNeedsNoWrite) {
  const std::string text = R"(size N = 0
input x : f32[16, N]
output y : f32[16, N]
output z : f32[N]
output w : f32[4]
)";
  EXPECT_EQ(diags(text), Lines{"t.ir:5:8: error: output 'w' is never written"});
  EXPECT_EQ(diags(text, {{"N", 3}}), (Lines{"t.ir:3:8: error: output 'y' is never written",
                                            "t.ir:4:8: error: output 'z' is never written",
                                            "t.ir:5:8: error: output 'w' is never written"}));
}

// ---- several diagnostics ----

TEST(Checker, DiagnosticsComeInSourceOrder) {
  const std::string text = R"(size N = 4
input x : f32[N]
output y : f32[N]
output z : f32[N]
kernel k { for i in 0..N: y[i] = x[i + 1] }
kernel m { for i in 0..N, j in 0..N: y[i] = x[j] }
)";
  const Lines expected = {
      "t.ir:4:8: error: output 'z' is never written",
      "t.ir:5:36: error: index 'i + 1' of 'x' ranges over 1..4 but dimension 0 has size 4",
      "t.ir:6:27: error: loop 'j' does not appear in the output index of '=' kernel 'm'; use a "
      "reduction such as '+='"};
  EXPECT_EQ(diags(text), expected);
  const Program p = parse(text, "t.ir");
  try {
    check_or_throw(p);
    ADD_FAILURE() << "check_or_throw accepted an invalid program";
  } catch (const DiagnosticError& e) {
    EXPECT_EQ(strs(e.diagnostics()), expected);
    EXPECT_EQ(std::string(e.what()), expected[0]);
  }
}

TEST(Checker, CheckOrThrowReturnsTheSizes) {
  const Program p = parse(kSizeDependent, "t.ir");
  EXPECT_EQ(check_or_throw(p, {{"N", 3}}), (SymbolValues{{"N", 3}}));
  EXPECT_THROW(check_or_throw(p, {{"N", 64}}), DiagnosticError);
}

TEST(Checker, SizeValuesAreChecked) {
  const Program p = parse("size N = 4\nsize M = 2\n", "t.ir");
  EXPECT_EQ(strs(check(p, {{"N", -1}})),
            (Lines{"t.ir:1:6: error: size 'N' is -1; sizes must be non-negative",
                   "t.ir:2:6: error: size 'M' has no value"}));
}

// ---- programs built in code: rules the parser normally enforces first ----

Program base() {
  return parse("size N = 4\ninput x : f32[N]\ninput ix : i64[N]\noutput y : f32[N]\n", "t.ir");
}

IntExprP loop(const char* name, Loc loc = {}) { return int_sym(name, SymKind::Loop, loc); }
IntExprP size_n() { return int_sym("N", SymKind::Size); }

StmtP kernel(std::vector<Loop> loops, ExprP rhs, AssignOp op = AssignOp::Assign) {
  Kernel k;
  k.name = "k";
  k.loops = std::move(loops);
  k.out = "y";
  k.out_indices = {loop("i")};
  k.op = op;
  k.rhs = std::move(rhs);
  return make_stmt(std::move(k), {9, 1});
}

std::vector<std::string> diags(const Program& p) { return strs(check(p, bind_sizes(p))); }

TEST(CheckerDefensive, UnknownNames) {
  Program p = base();
  p.body.push_back(kernel({{"i", int_const(0), size_n(), {}}},
                          expr_binary(BinaryOp::Add, expr_read("w", {loop("i")}, {9, 20}),
                                      expr_index(int_sym("Q", SymKind::Size, {9, 30})))));
  EXPECT_EQ(diags(p),
            (Lines{"t.ir:9:20: error: unknown tensor 'w'", "t.ir:9:30: error: unknown name 'Q'"}));
}

TEST(CheckerDefensive, LoopBoundsUseOnlyLoopsToTheirLeft) {
  Program p = base();
  p.body.push_back(kernel(
      {{"i", int_const(0), loop("j", {9, 15}), {}}, {"j", int_const(0), loop("j", {9, 25}), {}}},
      expr_read("x", {loop("j")}), AssignOp::Sum));
  EXPECT_EQ(diags(p), (Lines{"t.ir:9:15: error: bound of loop 'i' uses 'j', a loop to its right",
                             "t.ir:9:25: error: bound of loop 'j' uses 'j', its own index"}));
}

Compose compose(ComposeOp op, std::vector<std::string> srcs) {
  Compose c;
  c.op = op;
  c.dst = "y";
  c.srcs = std::move(srcs);
  return c;
}

ComposeAttr attr(const char* key, std::vector<IntExprP> ints, bool is_list, Loc loc) {
  ComposeAttr a;
  a.key = key;
  a.ints = std::move(ints);
  a.is_list = is_list;
  a.loc = loc;
  return a;
}

TEST(CheckerDefensive, CompositionSignatures) {
  Program p = base();
  Compose take = compose(ComposeOp::Take, {"x"});
  take.attrs = {attr("dimm", {int_const(0)}, false, {9, 20}),
                attr("dim", {int_const(0)}, true, {9, 30})};
  p.body.push_back(make_stmt(take, {9, 1}));
  Compose permute = compose(ComposeOp::Permute, {"x"});
  p.body.push_back(make_stmt(permute, {10, 1}));
  Compose concat = compose(ComposeOp::Concat, {"x"});
  concat.attrs = {attr("dim", {int_const(0)}, false, {11, 20}),
                  attr("dim", {int_const(0)}, false, {11, 30})};
  p.body.push_back(make_stmt(concat, {11, 1}));
  p.body.push_back(make_stmt(compose(ComposeOp::Pad, {"x"}), {12, 1}));
  EXPECT_EQ(diags(p),
            (Lines{
                "t.ir:9:1: error: 'take' takes 2 tensor arguments, found 1",
                "t.ir:9:20: error: unknown argument 'dimm' for 'take'; valid: dim, distinct",
                "t.ir:9:30: error: argument 'dim' of 'take' must be an integer",
                "t.ir:10:1: error: 'permute' needs a permutation list, e.g. "
                "permute(x, [1, 0])",
                "t.ir:11:30: error: argument 'dim' is given twice",
                "t.ir:12:1: error: 'pad' needs the argument 'lo='",
                "t.ir:12:1: error: 'pad' needs the argument 'hi='",
            }));
}

TEST(CheckerDefensive, ArgumentsOfOperationsWithoutKeywords) {
  Program p = base();
  Compose reshape = compose(ComposeOp::Reshape, {"x"});
  reshape.attrs = {attr("dim", {int_const(0)}, false, {9, 20})};
  p.body.push_back(make_stmt(reshape, {9, 1}));
  EXPECT_EQ(diags(p),
            Lines{"t.ir:9:20: error: unknown argument 'dim' for 'reshape'; 'reshape' takes none"});
}

// ---- docs/ir.md, "Checker rules" ----

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The message of a golden error case `FILE.ir#CASE`: the `# expected-error: LINE:COL: message`
// line of the case CASE of tests/golden/errors/FILE.ir (from its `# ----- CASE` line to the next).
std::string golden_message(const std::string& reference) {
  const size_t hash = reference.find('#');
  const std::string file = reference.substr(0, hash);
  const std::string text = read_text(SOLAR_SOURCE_DIR "/tests/golden/errors/" + file);
  const std::string start = "# ----- " + reference.substr(hash + 1) + "\n";
  const size_t at = hash == std::string::npos ? std::string::npos : text.find(start);
  if (at == std::string::npos) return "(no case " + reference + ")";
  const size_t end = text.find("\n# ----- ", at + start.size());
  const std::string body = text.substr(at, end == std::string::npos ? end : end - at);
  std::smatch m;
  const std::regex expected("# expected-error: [0-9]+:[0-9]+: ([^\n]*)");
  return std::regex_search(body, m, expected) ? m[1].str()
                                              : "(no expected-error in " + reference + ")";
}

TEST(CheckerDocs, TableRowsQuoteTheirGoldenCases) {
  const std::string doc = read_text(SOLAR_SOURCE_DIR "/docs/ir.md");
  const size_t start = doc.find("## Checker rules");
  ASSERT_NE(start, std::string::npos);
  std::istringstream section(doc.substr(start));
  const std::regex reference("errors/([a-z0-9_]+\\.ir(#[a-z0-9_]+)?)");
  int references = 0;
  for (std::string line; std::getline(section, line);) {
    for (std::sregex_iterator it(line.begin(), line.end(), reference), end; it != end; ++it) {
      const std::string name = (*it)[1].str();
      EXPECT_NE(line.find("`" + golden_message(name) + "`"), std::string::npos)
          << name << " is cited with a different message in docs/ir.md:\n"
          << line;
      ++references;
    }
  }
  EXPECT_GE(references, 30);
}

}  // namespace
}  // namespace solar::ir
