// Small string helpers shared by modules: lists, name suggestions and shapes in diagnostics, and
// sizes in bytes as the user writes them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace solar {

// `s` with ASCII letters lower-cased.
std::string to_lower(std::string_view s);

// Levenshtein distance (insertions, deletions, substitutions), O(|a| * |b|) time, O(|b|) memory.
size_t edit_distance(std::string_view a, std::string_view b);

// The words with `separator` between them: join({"a", "b", "c"}) == "a, b, c"; "" for none.
std::string join(const std::vector<std::string>& words, std::string_view separator = ", ");
std::string join(const std::vector<std::string_view>& words, std::string_view separator = ", ");
// A count and its noun, plural unless the count is 1: counted(1, "tensor") == "1 tensor",
// counted(0, "tensor") == "0 tensors" (nouns whose plural adds an s).
std::string counted(int64_t n, std::string_view noun);
// The numbers in decimal, the same way: join_ints({1, -2, 3}) == "1, -2, 3".
std::string join_ints(const std::vector<int64_t>& numbers, std::string_view separator = ", ");

// How `did_you_mean` finds the candidates close to a name.
enum class Suggest : uint8_t {
  // Names in a program or a keyword (IR names, functions, operations): case matters, except that
  // a candidate differing only in case is always close; otherwise one candidate at most a third
  // of the name's length of edits away (at least 1) and fewer edits than the name is long (so
  // 'N' never suggests 'i').
  Identifier,
  // Names the user types from memory (devices, device-file keys): case is ignored; the
  // candidates that contain the name, when there are one to three of them, else one candidate at
  // most a third of the name's length of edits away (at least 1).
  Loose,
};

// " (did you mean 'x'?)", " (did you mean 'x' or 'y'?)", or "" when no candidate is close. Ties
// go to the first candidate, so callers pass a deterministic order. Names and candidates longer
// than 64 characters are never close (the distance is quadratic).
std::string did_you_mean(std::string_view name, const std::vector<std::string_view>& candidates,
                         Suggest mode = Suggest::Identifier);
std::string did_you_mean(std::string_view name, const std::vector<std::string>& candidates,
                         Suggest mode = Suggest::Identifier);

// A size in bytes as written on the command line: a decimal number ("1.5", "1e6", "100000"),
// optional spaces, and an optional unit, case-insensitive: B; kB, MB, GB, TB (powers of 1000);
// KiB, MiB, GiB, TiB (powers of 1024). The bytes, rounded down; nullopt when `text` is anything
// else, negative, or 2^64 bytes or more. parse_bytes("1.5GiB") == 1610612736.
std::optional<uint64_t> parse_bytes(std::string_view text);

// A shape as diagnostics print it: "[2, 3]", "[]" for a scalar.
std::string shape_text(const std::vector<int64_t>& shape);

}  // namespace solar
