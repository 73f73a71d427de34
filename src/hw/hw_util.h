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

}  // namespace solar::hw::detail
