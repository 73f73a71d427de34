#include "hw_util.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <system_error>

#include "solar/util/text.h"

namespace solar::hw::detail {
namespace {

// The (at most three) candidates containing `name` ignoring case, else the nearest by edit distance
// when at most a third of the name's length (at least 1) away. Order follows `candidates`.
std::vector<std::string> close_candidates(std::string_view name,
                                          const std::vector<std::string>& candidates) {
  constexpr size_t kMaxLength = 64;  // keeps the quadratic distance cheap on absurd input
  const std::string key = to_lower(name);
  std::vector<std::string> containing;
  for (const std::string& c : candidates) {
    if (!key.empty() && to_lower(c).find(key) != std::string::npos) containing.push_back(c);
  }
  constexpr size_t kMaxContaining = 3;
  if (!containing.empty() && containing.size() <= kMaxContaining) return containing;
  if (key.size() > kMaxLength) return {};
  const size_t limit = std::max<size_t>(1, key.size() / 3);
  std::string best;
  size_t best_distance = limit + 1;
  for (const std::string& c : candidates) {
    const size_t d = edit_distance(key, to_lower(c));
    if (d < best_distance) {
      best = c;
      best_distance = d;
    }
  }
  if (best.empty()) return {};
  return {best};
}

}  // namespace

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

std::string join(const std::vector<std::string>& words, std::string_view separator) {
  std::string out;
  for (const std::string& w : words) {
    if (!out.empty()) out += separator;
    out += w;
  }
  return out;
}

std::string did_you_mean(std::string_view name, const std::vector<std::string>& candidates) {
  std::vector<std::string> close = close_candidates(name, candidates);
  if (close.empty()) return "";
  for (std::string& c : close) c = "'" + c + "'";
  return " (did you mean " + join(close, " or ") + "?)";
}

}  // namespace solar::hw::detail
