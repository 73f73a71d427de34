#include "lexer.h"

#include <charconv>
#include <cstdio>
#include <iterator>

#include "solar/ir/diagnostic.h"
#include "solar/util/error.h"

namespace solar::ir::detail {

namespace {

constexpr std::string_view kSpellings[] = {
#define SOLAR_X(e, s) s,
    SOLAR_TOKENS(SOLAR_X)
#undef SOLAR_X
};

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_ident_char(char c) { return is_ident_start(c) || is_digit(c); }

std::string hex_byte(unsigned char c) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "0x%02x", c);
  return buf;
}

// Length of the UTF-8 sequence starting at s[i], or 0 if it is malformed (overlong forms,
// surrogates and code points above U+10FFFF included).
size_t utf8_sequence_length(std::string_view s, size_t i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  size_t n = 0;
  uint32_t cp = 0;
  if (b0 < 0x80) return 1;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    n = 2;
    cp = b0 & 0x1Fu;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    n = 3;
    cp = b0 & 0x0Fu;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    n = 4;
    cp = b0 & 0x07u;
  } else
    return 0;
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xC0u) != 0x80u) return 0;
    cp = (cp << 6) | (b & 0x3Fu);
  }
  const bool overlong = (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000);
  const bool surrogate = cp >= 0xD800 && cp <= 0xDFFF;
  return (overlong || surrogate || cp > 0x10FFFF) ? 0 : n;
}

}  // namespace

std::string_view token_spelling(Tok t) {
  const auto i = static_cast<size_t>(t);
  SOLAR_CHECK(i < std::size(kSpellings), "token kind out of range");
  return kSpellings[i];
}

std::string describe(const Token& t) {
  if (t.kind == Tok::End) return "end of file";
  return "'" + std::string(t.text) + "'";
}

void fail_at(const std::string& file, Loc loc, std::string message) {
  throw DiagnosticError({Diagnostic{file, loc, std::move(message)}});
}

void Lexer::fail(Loc at_loc, std::string message) const {
  fail_at(file_, at_loc, std::move(message));
}

void Lexer::advance(size_t n) {
  for (size_t k = 0; k < n && pos_ < text_.size(); ++k) {
    if (text_[pos_++] == '\n') {
      ++line_;
      line_start_ = pos_;
    }
  }
}

Token Lexer::next() {
  Token t;
  skip_space_and_comments(t.comments);
  t.loc = loc();
  if (at_end()) return t;
  const char c = at();
  if (is_ident_start(c)) {
    const size_t start = pos_;
    while (is_ident_char(at())) advance(1);
    t.kind = Tok::Ident;
    t.text = text_.substr(start, pos_ - start);
    return t;
  }
  if (is_digit(c)) return lex_number(std::move(t));
  return lex_punct(std::move(t));
}

void Lexer::skip_space_and_comments(std::vector<Comment>& comments) {
  while (!at_end()) {
    const char c = at();
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
      advance(1);
    } else if (c == '#') {
      comments.push_back(lex_comment());
    } else {
      return;
    }
  }
}

// A comment runs to the end of the line. Its text must be valid UTF-8 without control
// characters other than tab, so that it can be printed back as one line.
Comment Lexer::lex_comment() {
  Comment comment{"", loc()};
  advance(1);  // '#'
  if (at() == ' ') advance(1);
  const size_t start = pos_;
  while (!at_end() && at() != '\n') {
    const auto b = static_cast<unsigned char>(at());
    const size_t n = utf8_sequence_length(text_, pos_);
    if (n == 0) fail(loc(), "invalid UTF-8 byte " + hex_byte(b) + " in comment");
    if ((b < 0x20 && b != '\t' && b != '\r') || b == 0x7F) {
      fail(loc(), "control character " + hex_byte(b) + " in comment");
    }
    advance(n);
  }
  std::string_view body = text_.substr(start, pos_ - start);
  while (!body.empty() && (body.back() == ' ' || body.back() == '\t' || body.back() == '\r')) {
    body.remove_suffix(1);
  }
  if (body.find('\r') != std::string_view::npos) {
    fail(comment.loc, "control character 0x0d in comment");
  }
  comment.text = std::string(body);
  return comment;
}

// Integers `42`; floats `1.5`, `2e-3`, `1.0e4`. `1.` is not a float: `0..N` is a range.
Token Lexer::lex_number(Token t) {
  const size_t start = pos_;
  bool is_float = false;
  while (is_digit(at())) advance(1);
  if (at() == '.' && is_digit(at(1))) {
    is_float = true;
    advance(1);
    while (is_digit(at())) advance(1);
  }
  const bool signed_exp = (at(1) == '+' || at(1) == '-') && is_digit(at(2));
  if ((at() == 'e' || at() == 'E') && (is_digit(at(1)) || signed_exp)) {
    is_float = true;
    advance(signed_exp ? 2 : 1);
    while (is_digit(at())) advance(1);
  }
  if (is_ident_char(at()) || (at() == '.' && is_digit(at(1)))) {
    while (is_ident_char(at()) || at() == '.') advance(1);
    fail(t.loc, "invalid number '" + std::string(text_.substr(start, pos_ - start)) + "'");
  }
  t.text = text_.substr(start, pos_ - start);
  const char* first = t.text.data();
  const char* last = first + t.text.size();
  if (is_float) {
    t.kind = Tok::Float;
    if (std::from_chars(first, last, t.float_value).ec != std::errc()) {
      fail(t.loc, "number '" + std::string(t.text) + "' is out of the range of f64");
    }
  } else {
    t.kind = Tok::Int;
    if (std::from_chars(first, last, t.int_value).ec != std::errc()) {
      fail(t.loc,
           "integer literal '" + std::string(t.text) + "' is too large (max 9223372036854775807)");
    }
  }
  return t;
}

// Operators and punctuation, longest match first.
Token Lexer::lex_punct(Token t) {
  static constexpr Tok kTwoChar[] = {Tok::DotDot, Tok::PlusAssign, Tok::StarAssign,
                                     Tok::Le,     Tok::Ge,         Tok::EqEq,
                                     Tok::Ne,     Tok::AndAnd,     Tok::OrOr};
  static constexpr Tok kOneChar[] = {
      Tok::LBracket, Tok::RBracket, Tok::LParen, Tok::RParen, Tok::LBrace, Tok::RBrace,
      Tok::Comma,    Tok::Colon,    Tok::Assign, Tok::Plus,   Tok::Minus,  Tok::Star,
      Tok::Slash,    Tok::Percent,  Tok::Lt,     Tok::Gt,     Tok::Bang};
  const std::string_view rest = text_.substr(pos_);
  for (Tok k : kTwoChar) {
    if (rest.starts_with(token_spelling(k))) {
      t.kind = k;
      t.text = rest.substr(0, 2);
      advance(2);
      return t;
    }
  }
  for (Tok k : kOneChar) {
    if (rest.starts_with(token_spelling(k))) {
      t.kind = k;
      t.text = rest.substr(0, 1);
      advance(1);
      return t;
    }
  }
  const auto b = static_cast<unsigned char>(at());
  if (b == '&' || b == '|') {
    fail(t.loc,
         std::string("unexpected character '") + at() + "' (did you mean '" + at() + at() + "'?)");
  }
  if (b >= 0x80) {
    fail(t.loc, "unexpected byte " + hex_byte(b) + " (only ASCII is allowed outside comments)");
  }
  if (b < 0x20 || b == 0x7F) fail(t.loc, "unexpected control character " + hex_byte(b));
  fail(t.loc, std::string("unexpected character '") + at() + "'");
}

}  // namespace solar::ir::detail
