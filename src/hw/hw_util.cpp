#include "hw_util.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <system_error>

namespace solar::hw::detail {
std::optional<double> parse_positive_number(std::string_view text) {
  double value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value, std::chars_format::general);
  if (ec != std::errc() || ptr != end || !std::isfinite(value) || value <= 0) return std::nullopt;
  return value;
}

bool is_count(double value) {
  constexpr double kMaxCount = 0x1p31;
  return value >= 1 && value <= kMaxCount && value == std::floor(value);
}

}  // namespace solar::hw::detail
