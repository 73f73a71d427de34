// Lexer for the text form of the Affine Loop IR (lexical structure: docs/ir.md). Private to the
// parser (src/ir/parser.cpp).
//
// Tokens are produced on demand, so the first error in the file is the one reported, whether it
// is lexical or syntactic. Comments are not tokens of their own: each token carries the comments
// written just before it, and the parser decides which declaration or statement owns them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "solar/ir/ast.h"

namespace solar::ir::detail {

// X(enum, spelling) ; spelling is empty for tokens with variable text.
#define SOLAR_TOKENS(X) \
  X(End, "")            \
  X(Ident, "")          \
  X(Int, "")            \
  X(Float, "")          \
  X(LBracket, "[")      \
  X(RBracket, "]")      \
  X(LParen, "(")        \
  X(RParen, ")")        \
  X(LBrace, "{")        \
  X(RBrace, "}")        \
  X(Comma, ",")         \
  X(Colon, ":")         \
  X(DotDot, "..")       \
  X(Assign, "=")        \
  X(PlusAssign, "+=")   \
  X(StarAssign, "*=")   \
  X(Plus, "+")          \
  X(Minus, "-")         \
  X(Star, "*")          \
  X(Slash, "/")         \
  X(Percent, "%")       \
  X(Lt, "<")            \
  X(Le, "<=")           \
  X(Gt, ">")            \
  X(Ge, ">=")           \
  X(EqEq, "==")         \
  X(Ne, "!=")           \
  X(AndAnd, "&&")       \
  X(OrOr, "||")         \
  X(Bang, "!")

enum class Tok : uint8_t {
#define SOLAR_X(e, s) e,
  SOLAR_TOKENS(SOLAR_X)
#undef SOLAR_X
};

// The fixed spelling of a token kind ("" for End, Ident, Int, Float).
std::string_view token_spelling(Tok t);

// A `#` comment: its text without the `#`, one optional space after it, and trailing whitespace.
struct Comment {
  std::string text;
  Loc loc;
};

struct Token {
  Tok kind = Tok::End;
  std::string_view text;  // the source bytes of the token (empty for End)
  Loc loc;
  int64_t int_value = 0;          // Int
  double float_value = 0;         // Float
  std::vector<Comment> comments;  // comments between the previous token and this one
};

// "'text'" for a token, "end of file" for End: the `found ...` part of diagnostics.
std::string describe(const Token& t);

// Throws DiagnosticError with one diagnostic.
[[noreturn]] void fail_at(const std::string& file, Loc loc, std::string message);

class Lexer {
 public:
  Lexer(std::string_view text, const std::string& file) : text_(text), file_(file) {}

  // The next token (End, repeatedly, at the end of the input). Throws DiagnosticError on a
  // malformed token, a byte that is not printable ASCII outside comments, or invalid UTF-8 or a
  // control character in a comment.
  Token next();

 private:
  char at(size_t k = 0) const { return pos_ + k < text_.size() ? text_[pos_ + k] : '\0'; }
  bool at_end() const { return pos_ >= text_.size(); }
  Loc loc() const { return {line_, static_cast<uint32_t>(pos_ - line_start_ + 1)}; }
  void advance(size_t n);
  void skip_space_and_comments(std::vector<Comment>& comments);
  Comment lex_comment();
  Token lex_number(Token t);
  Token lex_punct(Token t);
  [[noreturn]] void fail(Loc loc, std::string message) const;

  std::string_view text_;
  const std::string& file_;
  size_t pos_ = 0;
  size_t line_start_ = 0;
  uint32_t line_ = 1;
};

}  // namespace solar::ir::detail
