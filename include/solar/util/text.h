// Small string helpers shared by modules (name suggestions and shapes in diagnostics).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace solar {

// `s` with ASCII letters lower-cased.
std::string to_lower(std::string_view s);

// Levenshtein distance (insertions, deletions, substitutions), O(|a| * |b|) time, O(|b|) memory.
size_t edit_distance(std::string_view a, std::string_view b);

// A shape as diagnostics print it: "[2, 3]", "[]" for a scalar.
std::string shape_text(const std::vector<int64_t>& shape);

}  // namespace solar
