// Small string helpers shared by modules (name suggestions in diagnostics).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace solar {

// `s` with ASCII letters lower-cased.
std::string to_lower(std::string_view s);

// Levenshtein distance (insertions, deletions, substitutions), O(|a| * |b|) time, O(|b|) memory.
size_t edit_distance(std::string_view a, std::string_view b);

}  // namespace solar
