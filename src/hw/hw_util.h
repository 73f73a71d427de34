// Helpers shared by the hw module's source files (not part of the public API).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace solar::hw::detail {

// A decimal number as written in a device file or on the command line ("989.5e12", "132"), or
// nullopt when `text` is anything else or the number is not positive and finite.
std::optional<double> parse_positive_number(std::string_view text);

// A whole number of units (SMs, CUs) that fits in an int64 with room to spare: 1 .. 2^31.
bool is_count(double value);

// "a, b, c".
std::string join(const std::vector<std::string>& words, std::string_view separator = ", ");

// " (did you mean 'X'?)" or " (did you mean 'X' or 'Y'?)", or "" when nothing is close. Close:
// the same ignoring case, containing `name` ignoring case, or a few edits away.
std::string did_you_mean(std::string_view name, const std::vector<std::string>& candidates);

}  // namespace solar::hw::detail
