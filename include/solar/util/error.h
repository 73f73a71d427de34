// Errors. Two kinds (see ../shared/STYLE.md):
//  - UserError: the user's fault (bad file, bad option). Carries a one-line message, already
//    formatted; for IR files the message starts with `file:line:col: `. CLI prints it, exits 1.
//  - InternalError: a broken invariant of ours. Raised by SOLAR_CHECK, which stays on in release.
#pragma once

#include <stdexcept>
#include <string>

namespace solar {

class UserError : public std::runtime_error {
 public:
  explicit UserError(const std::string& message) : std::runtime_error(message) {}
};

class InternalError : public std::logic_error {
 public:
  explicit InternalError(const std::string& message) : std::logic_error(message) {}
};

[[noreturn]] void internal_error(const char* file, int line, const std::string& what);

}  // namespace solar

// Invariant check that stays on in release builds. Never use it on user input.
#define SOLAR_CHECK(cond, what)                                     \
  do {                                                              \
    if (!(cond)) ::solar::internal_error(__FILE__, __LINE__, what); \
  } while (0)
