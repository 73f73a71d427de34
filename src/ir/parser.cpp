// Recursive-descent parser for the Affine Loop IR (grammar: docs/ir.md, "Grammar").
//
// Name resolution happens while parsing: every name is declared before it is used, and no name is
// declared twice while the first is in scope (sizes, tensors and kernels for the whole program;
// loop indices within their kernel; repeat indices within the repeat body). Comments are attached
// to declarations and statements as described in docs/ir.md, "Canonical form".
#include "solar/ir/parser.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <span>
#include <sstream>

#include "lexer.h"
#include "solar/ir/parse_count.h"
#include "solar/util/error.h"
#include "solar/util/text.h"

namespace solar::ir {

namespace {

using detail::Comment;
using detail::describe;
using detail::Tok;
using detail::Token;

// Maximum nesting of expressions (parentheses, unary operators, calls, operator chains) and of
// repeat blocks. Deeper input is rejected, which also bounds the recursion of every pass.
constexpr int kMaxDepth = 200;
// The largest integer literal allowed in a value expression: doubles hold it exactly.
constexpr int64_t kMaxValueInt = int64_t{1} << 53;

constexpr std::string_view kKeywords[] = {"size",   "input",  "weight", "output", "tensor",
                                          "random", "kernel", "for",    "in",     "repeat",
                                          "op",     "inf",    "nan"};

bool is_reserved(std::string_view name) {
  return std::find(std::begin(kKeywords), std::end(kKeywords), name) != std::end(kKeywords) ||
         dtype_from_name(name).has_value();
}

std::optional<TensorRole> role_from_keyword(std::string_view w) {
  for (TensorRole r : {TensorRole::Input, TensorRole::Weight, TensorRole::Output,
                       TensorRole::Intermediate, TensorRole::Random}) {
    if (tensor_role_keyword(r) == w) return r;
  }
  return std::nullopt;
}

std::string loc_str(Loc loc) { return std::to_string(loc.line) + ":" + std::to_string(loc.col); }

// ---------------------------------------------------------------------------------------------
// Names

enum class NameKind : uint8_t { Size, Tensor, Loop, Repeat };

std::string_view kind_noun(NameKind k) {
  switch (k) {
    case NameKind::Size:
      return "a size";
    case NameKind::Tensor:
      return "a tensor";
    case NameKind::Loop:
      return "a loop index";
    case NameKind::Repeat:
      return "a repeat index";
  }
  return "";
}

struct NameInfo {
  NameKind kind;
  Loc loc;
};

constexpr NameKind kIntKinds[] = {NameKind::Size, NameKind::Loop, NameKind::Repeat};
constexpr NameKind kTensorKind[] = {NameKind::Tensor};

SymKind sym_kind(NameKind k) {
  switch (k) {
    case NameKind::Size:
      return SymKind::Size;
    case NameKind::Loop:
      return SymKind::Loop;
    case NameKind::Repeat:
      return SymKind::Repeat;
    case NameKind::Tensor:
      break;
  }
  SOLAR_CHECK(false, "sym_kind of a name that is not an integer");
  return SymKind::Size;
}

// ---------------------------------------------------------------------------------------------
// Composition calls: the arguments each operation takes.

enum class AttrType : uint8_t { Int, List, Number, Word };

struct AttrSpec {
  std::string_view key;
  AttrType type;
};

constexpr AttrSpec kAttrs[] = {
    {"dim", AttrType::Int},        {"dims", AttrType::List},    {"lo", AttrType::List},
    {"hi", AttrType::List},        {"value", AttrType::Number}, {"reduce", AttrType::Word},
    {"descending", AttrType::Int}, {"distinct", AttrType::Int}, {"norm", AttrType::Int}};

constexpr std::string_view kReduceModes[] = {"none", "add", "max", "min"};

struct OpSignature {
  int tensors;                             // exact number of tensor arguments; -1: one or more
  bool list;                               // takes a positional list
  std::vector<std::string_view> keys;      // keyword arguments it accepts
  std::vector<std::string_view> required;  // ... of which these must be given
};

OpSignature signature(ComposeOp op) {
  switch (op) {
    case ComposeOp::Reshape:
      return {1, false, {}, {}};
    case ComposeOp::Permute:
      return {1, true, {}, {}};
    case ComposeOp::Broadcast:
      return {1, false, {"dims"}, {}};
    case ComposeOp::Concat:
      return {-1, false, {"dim"}, {"dim"}};
    case ComposeOp::Pad:
      return {1, false, {"lo", "hi", "value"}, {"lo", "hi"}};
    case ComposeOp::Take:
      return {2, false, {"dim", "distinct"}, {"dim"}};
    case ComposeOp::Gather:
      return {2, false, {"dim"}, {"dim"}};
    case ComposeOp::Scatter:
      return {3, false, {"dim", "reduce"}, {"dim"}};
    case ComposeOp::Argsort:
      return {1, false, {"dim", "descending"}, {"dim"}};
    case ComposeOp::Rfft:
    case ComposeOp::Irfft:
    case ComposeOp::Fft:
    case ComposeOp::Ifft:
      return {1, false, {"dim", "norm"}, {"dim"}};
    case ComposeOp::ViewAsReal:
    case ComposeOp::ViewAsComplex:
      return {1, false, {}, {}};
    case ComposeOp::Copy:
    case ComposeOp::Slice:
      break;
  }
  SOLAR_CHECK(false, "copy and slice have no call syntax");
  return {};
}

// Operations written as calls `Y = op(...)` (copy and slice have their own syntax).
std::vector<std::string_view> call_op_names() {
  std::vector<std::string_view> names;
#define SOLAR_X(e, s) \
  if (ComposeOp::e != ComposeOp::Copy && ComposeOp::e != ComposeOp::Slice) names.push_back(s);
  SOLAR_COMPOSE_OPS(SOLAR_X)
#undef SOLAR_X
  return names;
}

// Every function name of value expressions, for suggestions.
std::vector<std::string_view> value_function_names() {
  std::vector<std::string_view> names;
#define SOLAR_X(e, s, c) \
  if (UnaryOp::e != UnaryOp::Neg && UnaryOp::e != UnaryOp::Not) names.push_back(s);
  SOLAR_UNARY_OPS(SOLAR_X)
#undef SOLAR_X
#define SOLAR_X(e, s, inf, p, c) \
  if (!inf) names.push_back(s);
  SOLAR_BINARY_OPS(SOLAR_X)
#undef SOLAR_X
  names.push_back("select");
#define SOLAR_X(e, s, n, k) names.push_back(s);
  SOLAR_DTYPES(SOLAR_X)
#undef SOLAR_X
  return names;
}

std::optional<BinaryOp> infix_op(const Token& t) {
#define SOLAR_X(e, s, inf, p, c) \
  if (inf && t.text == s && t.kind != Tok::Ident) return BinaryOp::e;
  SOLAR_BINARY_OPS(SOLAR_X)
#undef SOLAR_X
  return std::nullopt;
}

std::vector<std::string> texts(std::vector<Comment>& comments) {
  std::vector<std::string> out;
  for (Comment& c : comments) out.push_back(std::move(c.text));
  comments.clear();
  return out;
}

// ---------------------------------------------------------------------------------------------

class Parser {
 public:
  Parser(std::string_view text, const std::string& file) : lexer_(text, file), file_(file) {}
  Program parse_program();

 private:
  // Counts nesting levels entered in one scope and leaves them on exit.
  class Depth {
   public:
    explicit Depth(Parser& p) : p_(p) {}
    Depth(const Depth&) = delete;
    Depth& operator=(const Depth&) = delete;
    ~Depth() { p_.depth_ -= entered_; }
    void enter(Loc loc) {
      ++entered_;
      if (++p_.depth_ > kMaxDepth) {
        p_.fail(loc, "nesting is too deep (more than " + std::to_string(kMaxDepth) + " levels)");
      }
    }

   private:
    Parser& p_;
    int entered_ = 0;
  };

  // Tokens
  Token& peek(size_t k = 0);
  Token take();
  bool at(Tok kind, size_t k = 0) { return peek(k).kind == kind; }
  bool at_word(std::string_view word, size_t k = 0);
  bool accept(Tok kind);
  Token expect(Tok kind, std::string_view context);
  void expect_word(std::string_view word, std::string_view context);
  [[noreturn]] void fail(Loc loc, std::string message) const;
  [[noreturn]] void fail_expected(std::string_view what, std::string_view context);

  // Comments
  std::vector<std::string> begin_item();
  std::vector<std::string> end_item(std::vector<std::string> comments);

  // Names
  Token expect_name(std::string_view context);
  void check_new_name(const Token& name) const;
  void declare(const Token& name, NameKind kind);
  NameKind resolve(const Token& name, std::span<const NameKind> wanted, std::string_view noun);

  // Items
  void parse_item(Program& p);
  SizeDecl parse_size();
  TensorDecl parse_tensor();
  DType parse_dtype();
  StmtP parse_statement();
  Kernel parse_kernel();
  Loop parse_loop();
  AssignOp parse_assign_op();
  Repeat parse_repeat();
  OpBlock parse_op();
  Compose parse_compose();
  void parse_call(Compose& c);
  void parse_call_arg(Compose& c, const Token& op_name, bool& had_list);
  ComposeAttr parse_attr(const Compose& c, const Token& op_name);
  double parse_signed_number(std::string_view context);
  void check_signature(const Compose& c, const Token& op_name, bool had_list) const;
  std::vector<SliceSpec> parse_slices();
  SliceSpec parse_slice();

  // Integer expressions
  std::vector<IntExprP> parse_int_items();
  std::vector<IntExprP> parse_int_list(std::string_view context);
  std::vector<IntExprP> parse_index_list();
  IntExprP parse_int();
  IntExprP parse_int_term();
  IntExprP parse_int_unary();
  IntExprP parse_int_primary();
  IntExprP parse_int_call(const Token& name);

  // Value expressions
  ExprP parse_expr();
  ExprP parse_binary(int precedence);
  ExprP parse_unary();
  ExprP parse_primary();
  ExprP parse_call_expr(const Token& name);
  ExprP parse_name_expr(const Token& name);
  std::vector<ExprP> parse_call_args(const Token& name, size_t count);

  detail::Lexer lexer_;
  const std::string& file_;
  std::deque<Token> buffer_;  // lookahead
  uint32_t last_line_ = 0;    // line of the last token taken
  int depth_ = 0;
  std::map<std::string, NameInfo, std::less<>> names_;  // names in scope
  // Kernel names live in a namespace of their own (nothing refers to them inside expressions), so
  // `kernel scores` may write `tensor scores` and a kernel `k` may have a loop `k`.
  std::map<std::string, Loc, std::less<>> kernel_names_;
  std::map<std::string, Loc, std::less<>> op_names_;
  // The innermost block being parsed ("a repeat body", "an op block"), for messages.
  std::vector<std::string_view> blocks_;
  std::vector<std::string> pending_;                     // comments inside the current item
  std::vector<std::vector<std::string>> outer_pending_;  // ... of the enclosing items
};

// ---------------------------------------------------------------------------------------------
// Tokens

Token& Parser::peek(size_t k) {
  while (buffer_.size() <= k) buffer_.push_back(lexer_.next());
  return buffer_[k];
}

Token Parser::take() {
  Token t = std::move(peek());
  buffer_.pop_front();
  for (std::string& c : texts(t.comments)) pending_.push_back(std::move(c));
  if (t.kind != Tok::End) last_line_ = t.loc.line;
  return t;
}

bool Parser::at_word(std::string_view word, size_t k) {
  const Token& t = peek(k);
  return t.kind == Tok::Ident && t.text == word;
}

bool Parser::accept(Tok kind) {
  if (!at(kind)) return false;
  take();
  return true;
}

Token Parser::expect(Tok kind, std::string_view context) {
  if (!at(kind)) fail_expected("'" + std::string(detail::token_spelling(kind)) + "'", context);
  return take();
}

void Parser::expect_word(std::string_view word, std::string_view context) {
  if (!at_word(word)) fail_expected("'" + std::string(word) + "'", context);
  take();
}

void Parser::fail(Loc loc, std::string message) const {
  detail::fail_at(file_, loc, std::move(message));
}

// "expected WHAT CONTEXT, found TOKEN" at the next token.
void Parser::fail_expected(std::string_view what, std::string_view context) {
  std::string message = "expected " + std::string(what);
  if (!context.empty()) message += " " + std::string(context);
  fail(peek().loc, message + ", found " + describe(peek()));
}

// ---------------------------------------------------------------------------------------------
// Comments: an item owns the comments just above it (returned here), the comments inside it,
// and a comment at the end of its last line (both added by end_item).

std::vector<std::string> Parser::begin_item() {
  outer_pending_.push_back(std::move(pending_));
  pending_.clear();
  return texts(peek().comments);
}

std::vector<std::string> Parser::end_item(std::vector<std::string> comments) {
  for (std::string& c : pending_) comments.push_back(std::move(c));
  pending_ = std::move(outer_pending_.back());
  outer_pending_.pop_back();
  std::vector<Comment>& next = peek().comments;
  if (!next.empty() && next.front().loc.line == last_line_) {
    comments.push_back(std::move(next.front().text));
    next.erase(next.begin());
  }
  return comments;
}

// ---------------------------------------------------------------------------------------------
// Names

Token Parser::expect_name(std::string_view context) {
  if (!at(Tok::Ident)) fail_expected("a name", context);
  if (is_reserved(peek().text)) {
    fail(peek().loc, "'" + std::string(peek().text) + "' is reserved and cannot be used as a name");
  }
  return take();
}

void Parser::check_new_name(const Token& name) const {
  const auto it = names_.find(name.text);
  if (it != names_.end()) {
    fail(name.loc,
         "'" + std::string(name.text) + "' is already declared at " + loc_str(it->second.loc));
  }
}

void Parser::declare(const Token& name, NameKind kind) {
  check_new_name(name);
  names_.emplace(std::string(name.text), NameInfo{kind, name.loc});
}

// The kind of a name in scope that must be one of `wanted` (described by `noun`).
NameKind Parser::resolve(const Token& name, std::span<const NameKind> wanted,
                         std::string_view noun) {
  const auto it = names_.find(name.text);
  if (it == names_.end()) {
    std::vector<std::string_view> candidates;
    for (const auto& [n, info] : names_) {
      if (std::find(wanted.begin(), wanted.end(), info.kind) != wanted.end()) {
        candidates.push_back(n);
      }
    }
    fail(name.loc,
         "unknown name '" + std::string(name.text) + "'" + did_you_mean(name.text, candidates));
  }
  const NameKind kind = it->second.kind;
  if (std::find(wanted.begin(), wanted.end(), kind) == wanted.end()) {
    fail(name.loc, "'" + std::string(name.text) + "' is " + std::string(kind_noun(kind)) +
                       ", not " + std::string(noun));
  }
  return kind;
}

// ---------------------------------------------------------------------------------------------
// Program and declarations

Program Parser::parse_program() {
  Program p;
  p.file = file_;
  while (!at(Tok::End)) parse_item(p);
  p.trailing_comments = texts(peek().comments);
  return p;
}

void Parser::parse_item(Program& p) {
  if (at_word("size")) {
    std::vector<std::string> comments = begin_item();
    p.sizes.push_back(parse_size());
    p.sizes.back().comments = end_item(std::move(comments));
  } else if (at(Tok::Ident) && role_from_keyword(peek().text)) {
    std::vector<std::string> comments = begin_item();
    p.tensors.push_back(parse_tensor());
    p.tensors.back().comments = end_item(std::move(comments));
  } else if (at(Tok::Ident)) {
    p.body.push_back(parse_statement());
  } else {
    fail_expected("a declaration or statement", "");
  }
}

SizeDecl Parser::parse_size() {
  take();  // 'size'
  const Token name = expect_name("after 'size'");
  check_new_name(name);
  expect(Tok::Assign, "after the size name");
  SizeDecl d{std::string(name.text), parse_int(), {}, name.loc};
  declare(name, NameKind::Size);
  return d;
}

TensorDecl Parser::parse_tensor() {
  const TensorRole role = *role_from_keyword(take().text);
  const Token name = expect_name("after '" + std::string(tensor_role_keyword(role)) + "'");
  declare(name, NameKind::Tensor);
  expect(Tok::Colon, "after the tensor name");
  TensorDecl d;
  d.name = std::string(name.text);
  d.role = role;
  d.loc = name.loc;
  d.dtype = parse_dtype();
  expect(Tok::LBracket, "after the dtype (a scalar is written f32[])");
  d.shape = parse_int_list("after the shape");
  return d;
}

DType Parser::parse_dtype() {
  if (!at(Tok::Ident)) fail_expected("a dtype", "after ':'");
  const Token t = take();
  const std::optional<DType> dt = dtype_from_name(t.text);
  if (!dt) {
    fail(t.loc,
         "unknown dtype '" + std::string(t.text) + "'; valid: " + std::string(dtype_all_names()));
  }
  return *dt;
}

// ---------------------------------------------------------------------------------------------
// Statements

StmtP Parser::parse_statement() {
  std::vector<std::string> comments = begin_item();
  const Loc loc = peek().loc;
  if (at_word("kernel")) {
    Kernel k = parse_kernel();
    return make_stmt(std::move(k), loc, end_item(std::move(comments)));
  }
  if (at_word("repeat")) {
    Repeat r = parse_repeat();
    return make_stmt(std::move(r), loc, end_item(std::move(comments)));
  }
  if (at_word("op")) {
    OpBlock o = parse_op();
    return make_stmt(std::move(o), loc, end_item(std::move(comments)));
  }
  if (at_word("size") || (at(Tok::Ident) && role_from_keyword(peek().text))) {
    fail(loc, "declarations are not allowed inside " +
                  std::string(blocks_.empty() ? "a block" : blocks_.back()));
  }
  if (!at(Tok::Ident) || is_reserved(peek().text)) fail_expected("a statement", "");
  Compose c = parse_compose();
  return make_stmt(std::move(c), loc, end_item(std::move(comments)));
}

// `kernel NAME { [for LOOPS:] OUT[idx] OP EXPR }`
Kernel Parser::parse_kernel() {
  take();  // 'kernel'
  const Token name = expect_name("after 'kernel'");
  const auto [prev, inserted] = kernel_names_.emplace(std::string(name.text), name.loc);
  if (!inserted) {
    fail(name.loc,
         "kernel '" + std::string(name.text) + "' is already declared at " + loc_str(prev->second));
  }
  expect(Tok::LBrace, "after the kernel name");
  Kernel k;
  k.name = std::string(name.text);
  if (at_word("for")) {
    take();
    do {
      k.loops.push_back(parse_loop());
    } while (accept(Tok::Comma));
    expect(Tok::Colon, "after the loop list");
  }
  const Token out = expect_name("(the kernel's output tensor)");
  resolve(out, kTensorKind, "a tensor");
  k.out = std::string(out.text);
  k.out_loc = out.loc;
  expect(Tok::LBracket, "after the output tensor (a scalar is written s[])");
  k.out_indices = parse_index_list();
  k.op = parse_assign_op();
  k.rhs = parse_expr();
  expect(Tok::RBrace, "after the kernel's assignment (a kernel holds one assignment)");
  for (const Loop& l : k.loops) names_.erase(l.name);
  return k;
}

// `NAME in LO..HI`; the name is in scope from the next loop on.
Loop Parser::parse_loop() {
  const Token name = expect_name("(a loop index)");
  check_new_name(name);
  expect_word("in", "after the loop index");
  Loop l;
  l.name = std::string(name.text);
  l.loc = name.loc;
  l.lo = parse_int();
  expect(Tok::DotDot, "after the loop's lower bound");
  l.hi = parse_int();
  declare(name, NameKind::Loop);
  return l;
}

// `=`, `+=`, `*=`, `max=`, `min=` (the last two: the word and `=` with no space between).
AssignOp Parser::parse_assign_op() {
  if (accept(Tok::Assign)) return AssignOp::Assign;
  if (accept(Tok::PlusAssign)) return AssignOp::Sum;
  if (accept(Tok::StarAssign)) return AssignOp::Prod;
  const Token& word = peek();
  const Token& eq = peek(1);
  const bool adjacent =
      eq.kind == Tok::Assign && eq.loc.line == word.loc.line && eq.loc.col == word.loc.col + 3;
  if ((at_word("max") || at_word("min")) && adjacent) {
    const AssignOp op = word.text == "max" ? AssignOp::Max : AssignOp::Min;
    take();
    take();
    return op;
  }
  fail_expected("an assignment (=, +=, *=, max=, min=)", "after the output access");
}

// `repeat NAME in LO..HI { statements }`
Repeat Parser::parse_repeat() {
  const Token keyword = take();
  Depth depth(*this);
  depth.enter(keyword.loc);
  const Token var = expect_name("after 'repeat'");
  check_new_name(var);
  expect_word("in", "after the repeat index");
  Repeat r;
  r.var = std::string(var.text);
  r.lo = parse_int();
  expect(Tok::DotDot, "after the repeat's lower bound");
  r.hi = parse_int();
  expect(Tok::LBrace, "after the repeat range");
  declare(var, NameKind::Repeat);
  blocks_.push_back("a repeat body");
  while (!at(Tok::RBrace)) {
    if (at(Tok::End)) {
      fail_expected("'}'", "to close the repeat opened at " + loc_str(keyword.loc));
    }
    r.body.push_back(parse_statement());
  }
  take();  // '}'
  blocks_.pop_back();
  names_.erase(r.var);
  return r;
}

// `op NAME { statements }`: no op block inside another (also not through a repeat body).
OpBlock Parser::parse_op() {
  const Token keyword = take();
  Depth depth(*this);
  depth.enter(keyword.loc);
  if (std::find(blocks_.begin(), blocks_.end(), "an op block") != blocks_.end()) {
    fail(keyword.loc, "an op block cannot hold another op block");
  }
  const Token name = expect_name("after 'op'");
  const auto [prev, inserted] = op_names_.emplace(std::string(name.text), name.loc);
  if (!inserted) {
    fail(name.loc,
         "op '" + std::string(name.text) + "' is already declared at " + loc_str(prev->second));
  }
  expect(Tok::LBrace, "after the op name");
  OpBlock o;
  o.name = std::string(name.text);
  blocks_.push_back("an op block");
  while (!at(Tok::RBrace)) {
    if (at(Tok::End)) fail_expected("'}'", "to close the op opened at " + loc_str(keyword.loc));
    o.body.push_back(parse_statement());
  }
  take();  // '}'
  blocks_.pop_back();
  return o;
}

// `Y = X`, `Y[slices] = X`, `Y = X[slices]`, `Y = op(args)`.
Compose Parser::parse_compose() {
  const Token dst = expect_name("");
  resolve(dst, kTensorKind, "a tensor");
  Compose c;
  c.dst = std::string(dst.text);
  if (accept(Tok::LBracket)) {
    c.dst_region = parse_slices();
    expect(Tok::Assign, "after the destination region");
  } else if (!accept(Tok::Assign)) {
    fail_expected("'=' or '['", "after '" + c.dst + "'");
  }
  if (!at(Tok::Ident)) fail_expected("a tensor or an operation", "after '='");
  const bool region = !c.dst_region.empty();
  const auto check_whole_source = [&](Loc loc) {
    if (region) {
      fail(loc,
           "the source of a region copy is a whole tensor; compute or slice into a tensor "
           "first");
    }
  };
  if (at(Tok::LParen, 1)) {
    check_whole_source(peek().loc);
    parse_call(c);
    return c;
  }
  const Token src = expect_name("after '='");
  resolve(src, kTensorKind, "a tensor");
  c.srcs.push_back(std::string(src.text));
  if (at(Tok::LBracket)) {
    check_whole_source(peek().loc);
    take();
    c.op = ComposeOp::Slice;
    c.src_slices = parse_slices();
  }
  return c;
}

void Parser::parse_call(Compose& c) {
  const Token name = take();
  const std::optional<ComposeOp> op = compose_op_from_name(name.text);
  if (!op || *op == ComposeOp::Copy || *op == ComposeOp::Slice) {
    const std::vector<std::string_view> valid = call_op_names();
    fail(name.loc, "unknown operation '" + std::string(name.text) + "'" +
                       did_you_mean(name.text, valid) + "; valid: " + join(valid));
  }
  c.op = *op;
  take();  // '('
  bool had_list = false;
  if (!at(Tok::RParen)) {
    do {
      parse_call_arg(c, name, had_list);
    } while (accept(Tok::Comma));
  }
  expect(Tok::RParen, "after the arguments");
  check_signature(c, name, had_list);
}

// One argument: a tensor, a list `[...]` (after the tensors), or `key=value` (last).
void Parser::parse_call_arg(Compose& c, const Token& op_name, bool& had_list) {
  if (at(Tok::Ident) && at(Tok::Assign, 1)) {
    c.attrs.push_back(parse_attr(c, op_name));
    return;
  }
  if (!c.attrs.empty()) fail_expected("a keyword argument (key=value)", "after a keyword argument");
  if (accept(Tok::LBracket)) {
    if (had_list) fail(peek().loc, "only one list argument is allowed");
    had_list = true;
    c.list = parse_int_list("after the list");
    return;
  }
  if (had_list) fail_expected("a keyword argument (key=value)", "after the list");
  const Token t = expect_name("(a tensor argument)");
  resolve(t, kTensorKind, "a tensor");
  c.srcs.push_back(std::string(t.text));
}

// `key=value`; the key must be one the operation takes, given once.
ComposeAttr Parser::parse_attr(const Compose& c, const Token& op_name) {
  const Token key = take();
  take();  // '='
  ComposeAttr a;
  a.key = std::string(key.text);
  a.loc = key.loc;
  const std::string op = "'" + std::string(op_name.text) + "'";
  const std::vector<std::string_view> keys = signature(c.op).keys;
  if (std::find(keys.begin(), keys.end(), key.text) == keys.end()) {
    const std::string valid = keys.empty() ? op + " takes none" : "valid: " + join(keys);
    fail(a.loc,
         "unknown argument '" + a.key + "' for " + op + did_you_mean(a.key, keys) + "; " + valid);
  }
  for (const ComposeAttr& other : c.attrs) {
    if (other.key == a.key) fail(a.loc, "argument '" + a.key + "' is given twice");
  }
  const auto* spec = std::find_if(std::begin(kAttrs), std::end(kAttrs),
                                  [&](const AttrSpec& as) { return as.key == key.text; });
  SOLAR_CHECK(spec != std::end(kAttrs), "an operation takes an argument of no known type");
  const std::string context = "after '" + a.key + "='";
  switch (spec->type) {
    case AttrType::Int:
      a.ints.push_back(parse_int());
      break;
    case AttrType::List:
      a.is_list = true;
      expect(Tok::LBracket, context);
      a.ints = parse_int_list("after the list");
      break;
    case AttrType::Number:
      a.number = parse_signed_number(context);
      break;
    case AttrType::Word: {
      const Token w = expect_name(context);
      if (std::find(std::begin(kReduceModes), std::end(kReduceModes), w.text) ==
          std::end(kReduceModes)) {
        fail(w.loc, "unknown reduce mode '" + std::string(w.text) + "'; valid: " +
                        join(std::vector<std::string_view>(std::begin(kReduceModes),
                                                           std::end(kReduceModes))));
      }
      a.word = std::string(w.text);
      break;
    }
  }
  return a;
}

// `[-](INT | FLOAT | inf | nan)`
double parse_number_token(const Token& t) {
  if (t.kind == Tok::Int) return static_cast<double>(t.int_value);
  if (t.kind == Tok::Float) return t.float_value;
  return t.text == "inf" ? std::numeric_limits<double>::infinity()
                         : std::numeric_limits<double>::quiet_NaN();
}

double Parser::parse_signed_number(std::string_view context) {
  const bool negative = accept(Tok::Minus);
  if (!at(Tok::Int) && !at(Tok::Float) && !at_word("inf") && !at_word("nan")) {
    fail_expected("a number", context);
  }
  const double v = parse_number_token(take());
  return negative ? -v : v;
}

void Parser::check_signature(const Compose& c, const Token& op_name, bool had_list) const {
  const std::string op = "'" + std::string(op_name.text) + "'";
  const OpSignature sig = signature(c.op);
  const int n = static_cast<int>(c.srcs.size());
  if (sig.tensors < 0 && n == 0) fail(op_name.loc, op + " takes at least 1 tensor argument");
  if (sig.tensors >= 0 && n != sig.tensors) {
    fail(op_name.loc, op + " takes " + std::to_string(sig.tensors) + " tensor argument" +
                          (sig.tensors == 1 ? "" : "s") + ", found " + std::to_string(n));
  }
  if (sig.list && !had_list) {
    fail(op_name.loc, op + " needs a permutation list, e.g. permute(x, [1, 0])");
  }
  if (!sig.list && had_list) fail(op_name.loc, op + " takes no list argument");
  for (std::string_view key : sig.required) {
    if (std::none_of(c.attrs.begin(), c.attrs.end(),
                     [&](const ComposeAttr& a) { return a.key == key; })) {
      fail(op_name.loc, op + " needs the argument '" + std::string(key) + "='");
    }
  }
}

// After '[': `slice (',' slice)* ']'`.
std::vector<SliceSpec> Parser::parse_slices() {
  std::vector<SliceSpec> slices;
  do {
    slices.push_back(parse_slice());
  } while (accept(Tok::Comma));
  expect(Tok::RBracket, "after the slice list");
  return slices;
}

// `a`, `a:b`, `a:b:c`, with any of a, b, c left out around the colons.
SliceSpec Parser::parse_slice() {
  SliceSpec s;
  s.loc = peek().loc;
  const auto ends_part = [&] { return at(Tok::Colon) || at(Tok::Comma) || at(Tok::RBracket); };
  if (!at(Tok::Colon)) s.start = parse_int();
  if (!accept(Tok::Colon)) {
    s.is_index = true;
    return s;
  }
  if (!ends_part()) s.stop = parse_int();
  if (accept(Tok::Colon) && !ends_part()) s.step = parse_int();
  return s;
}

// ---------------------------------------------------------------------------------------------
// Integer expressions

// `[int (',' int)*]`, up to the closing bracket.
std::vector<IntExprP> Parser::parse_int_items() {
  std::vector<IntExprP> out;
  if (!at(Tok::RBracket)) {
    do {
      out.push_back(parse_int());
    } while (accept(Tok::Comma));
  }
  return out;
}

// After '[': int items and ']'.
std::vector<IntExprP> Parser::parse_int_list(std::string_view context) {
  std::vector<IntExprP> out = parse_int_items();
  expect(Tok::RBracket, context);
  return out;
}

// After '[' of a tensor access in a kernel.
std::vector<IntExprP> Parser::parse_index_list() {
  std::vector<IntExprP> out = parse_int_items();
  if (at(Tok::Colon)) {
    fail_expected("']'", "after index list (slices are only allowed outside kernels)");
  }
  expect(Tok::RBracket, "after index list");
  return out;
}

IntExprP Parser::parse_int() {
  IntExprP lhs = parse_int_term();
  Depth depth(*this);
  while (at(Tok::Plus) || at(Tok::Minus)) {
    const Token op = take();
    depth.enter(op.loc);
    lhs = int_binary(op.kind == Tok::Plus ? IntOp::Add : IntOp::Sub, lhs, parse_int_term(), op.loc);
  }
  return lhs;
}

IntExprP Parser::parse_int_term() {
  IntExprP lhs = parse_int_unary();
  Depth depth(*this);
  while (at(Tok::Star) || at(Tok::Slash) || at(Tok::Percent)) {
    const Token op = take();
    depth.enter(op.loc);
    const IntOp iop = op.kind == Tok::Star    ? IntOp::Mul
                      : op.kind == Tok::Slash ? IntOp::FloorDiv
                                              : IntOp::Mod;
    lhs = int_binary(iop, lhs, parse_int_unary(), op.loc);
  }
  return lhs;
}

IntExprP Parser::parse_int_unary() {
  Depth depth(*this);
  depth.enter(peek().loc);
  if (at(Tok::Minus)) {
    const Token op = take();
    return int_unary(IntOp::Neg, parse_int_unary(), op.loc);
  }
  return parse_int_primary();
}

IntExprP Parser::parse_int_primary() {
  if (at(Tok::Int)) {
    const Token t = take();
    return int_const(t.int_value, t.loc);
  }
  if (accept(Tok::LParen)) {
    IntExprP e = parse_int();
    expect(Tok::RParen, "to close '('");
    return e;
  }
  if (!at(Tok::Ident) || is_reserved(peek().text)) fail_expected("an integer expression", "");
  const Token name = take();
  if (at(Tok::LParen)) return parse_int_call(name);
  if (at(Tok::LBracket)) {
    fail(name.loc, "an index cannot read a tensor ('" + std::string(name.text) +
                       "[...]'); use take or gather for data-dependent indexing");
  }
  const NameKind kind = resolve(name, kIntKinds, "an integer (a size or an index)");
  return int_sym(std::string(name.text), sym_kind(kind), name.loc);
}

// `min(a, b)` or `max(a, b)`; the '(' is next.
IntExprP Parser::parse_int_call(const Token& name) {
  if (name.text != "min" && name.text != "max") {
    fail(name.loc, "unknown integer function '" + std::string(name.text) + "'; valid: min, max");
  }
  take();  // '('
  IntExprP a = parse_int();
  expect(Tok::Comma, "between the arguments of '" + std::string(name.text) + "'");
  IntExprP b = parse_int();
  expect(Tok::RParen, "after the arguments of '" + std::string(name.text) + "'");
  return int_binary(name.text == "min" ? IntOp::Min : IntOp::Max, a, b, name.loc);
}

// ---------------------------------------------------------------------------------------------
// Value expressions: precedence climbing over the infix operators of SOLAR_BINARY_OPS.

ExprP Parser::parse_expr() { return parse_binary(1); }

ExprP Parser::parse_binary(int precedence) {
  constexpr int kTightest = 6;
  if (precedence > kTightest) return parse_unary();
  ExprP lhs = parse_binary(precedence + 1);
  Depth depth(*this);
  while (true) {
    const std::optional<BinaryOp> op = infix_op(peek());
    if (!op || binary_op_precedence(*op) != precedence) return lhs;
    const Token t = take();
    depth.enter(t.loc);
    lhs = expr_binary(*op, lhs, parse_binary(precedence + 1), t.loc);
  }
}

ExprP Parser::parse_unary() {
  Depth depth(*this);
  depth.enter(peek().loc);
  if (at(Tok::Minus) || at(Tok::Bang)) {
    const Token op = take();
    return expr_unary(op.kind == Tok::Minus ? UnaryOp::Neg : UnaryOp::Not, parse_unary(), op.loc);
  }
  return parse_primary();
}

ExprP Parser::parse_primary() {
  if (at(Tok::Int)) {
    const Token t = take();
    if (t.int_value > kMaxValueInt) {
      fail(t.loc, "integer literal '" + std::string(t.text) +
                      "' is too large for a value (max 2^53 = 9007199254740992); write it as "
                      "a float");
    }
    return expr_const(static_cast<double>(t.int_value), true, t.loc);
  }
  if (at(Tok::Float) || at_word("inf") || at_word("nan")) {
    const Token t = take();
    return expr_const(parse_number_token(t), false, t.loc);
  }
  if (accept(Tok::LParen)) {
    ExprP e = parse_expr();
    expect(Tok::RParen, "to close '('");
    return e;
  }
  if (!at(Tok::Ident)) fail_expected("an expression", "");
  const Token name = take();
  if (at(Tok::LParen)) return parse_call_expr(name);
  return parse_name_expr(name);
}

// `T[indices]` (a read) or a size / index used as a value.
ExprP Parser::parse_name_expr(const Token& name) {
  if (is_reserved(name.text)) {
    fail(name.loc, "expected an expression, found '" + std::string(name.text) + "'");
  }
  if (accept(Tok::LBracket)) {
    resolve(name, kTensorKind, "a tensor");
    return expr_read(std::string(name.text), parse_index_list(), name.loc);
  }
  const auto it = names_.find(name.text);
  if (it != names_.end() && it->second.kind == NameKind::Tensor) {
    fail(name.loc, "tensor '" + std::string(name.text) +
                       "' needs an index list: " + std::string(name.text) + "[...]");
  }
  const NameKind kind = resolve(name, kIntKinds, "a value (a tensor read, size or index)");
  return expr_index(int_sym(std::string(name.text), sym_kind(kind), name.loc), name.loc);
}

// `f(args)`: a unary or binary function, select, or a cast; the '(' is next.
ExprP Parser::parse_call_expr(const Token& name) {
  if (const std::optional<DType> dt = dtype_from_name(name.text)) {
    return expr_cast(*dt, parse_call_args(name, 1)[0], name.loc);
  }
  if (name.text == "select") {
    std::vector<ExprP> a = parse_call_args(name, 3);
    return expr_select(a[0], a[1], a[2], name.loc);
  }
  if (const std::optional<UnaryOp> op = unary_op_from_name(name.text)) {
    return expr_unary(*op, parse_call_args(name, 1)[0], name.loc);
  }
  if (const std::optional<BinaryOp> op = binary_op_from_call_name(name.text)) {
    std::vector<ExprP> a = parse_call_args(name, 2);
    return expr_binary(*op, a[0], a[1], name.loc);
  }
  fail(name.loc, "unknown function '" + std::string(name.text) + "'" +
                     did_you_mean(name.text, value_function_names()));
}

std::vector<ExprP> Parser::parse_call_args(const Token& name, size_t count) {
  take();  // '('
  Depth depth(*this);
  depth.enter(name.loc);
  std::vector<ExprP> args;
  if (!at(Tok::RParen)) {
    do {
      args.push_back(parse_expr());
    } while (accept(Tok::Comma));
  }
  expect(Tok::RParen, "after the arguments of '" + std::string(name.text) + "'");
  if (args.size() != count) {
    fail(name.loc, "'" + std::string(name.text) + "' takes " + std::to_string(count) + " argument" +
                       (count == 1 ? "" : "s") + ", found " + std::to_string(args.size()));
  }
  return args;
}

}  // namespace

namespace {
std::atomic<int64_t> parses{0};
}  // namespace

Program parse(std::string_view text, const std::string& file) {
  parses.fetch_add(1, std::memory_order_relaxed);
  return Parser(text, file).parse_program();
}

int64_t parse_count() { return parses.load(std::memory_order_relaxed); }

Program parse_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw UserError("cannot read " + path + ": is a directory");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError("cannot read " + path + ": " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw UserError("cannot read " + path + ": " + std::strerror(errno));
  return parse(ss.str(), path);
}

bool is_reserved_word(std::string_view name) { return is_reserved(name); }

}  // namespace solar::ir
