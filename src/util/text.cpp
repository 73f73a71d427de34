// Small string helpers (include/solar/util/text.h).
#include "solar/util/text.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

namespace solar {

std::string to_lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

namespace {

template <typename Word>
std::string join_words(const std::vector<Word>& words, std::string_view separator) {
  std::string out;
  for (size_t i = 0; i < words.size(); ++i) {
    if (i > 0) out += separator;
    out += words[i];
  }
  return out;
}

// The candidates close to `name` (text.h, Suggest), in the order of `candidates`.
std::vector<std::string_view> close_candidates(std::string_view name,
                                               const std::vector<std::string_view>& candidates,
                                               Suggest mode) {
  constexpr size_t kMaxLength = 64;  // keeps the quadratic distance cheap on absurd input
  if (name.size() > kMaxLength) return {};
  const std::string key = to_lower(name);
  if (mode == Suggest::Loose && !key.empty()) {
    constexpr size_t kMaxContaining = 3;
    std::vector<std::string_view> containing;
    for (std::string_view c : candidates) {
      if (to_lower(c).find(key) != std::string::npos) containing.push_back(c);
    }
    if (!containing.empty() && containing.size() <= kMaxContaining) return containing;
  }
  size_t limit = std::max<size_t>(1, name.size() / 3);
  if (mode == Suggest::Identifier) limit = std::min(limit, name.size() - 1);
  std::string_view best;
  size_t best_distance = limit + 1;
  for (std::string_view c : candidates) {
    if (c.size() > kMaxLength) continue;
    const std::string lower = to_lower(c);
    const size_t d = lower == key                  ? 0
                     : mode == Suggest::Identifier ? edit_distance(name, c)
                                                   : edit_distance(key, lower);
    if (d < best_distance) {
      best = c;
      best_distance = d;
    }
  }
  if (best.empty()) return {};
  return {best};
}

}  // namespace

std::string join(const std::vector<std::string>& words, std::string_view separator) {
  return join_words(words, separator);
}

std::string join(const std::vector<std::string_view>& words, std::string_view separator) {
  return join_words(words, separator);
}

std::string counted(int64_t n, std::string_view noun) {
  return std::to_string(n) + " " + std::string(noun) + (n == 1 ? "" : "s");
}

std::string join_ints(const std::vector<int64_t>& numbers, std::string_view separator) {
  std::string out;
  for (size_t i = 0; i < numbers.size(); ++i) {
    if (i > 0) out += separator;
    out += std::to_string(numbers[i]);
  }
  return out;
}

std::string did_you_mean(std::string_view name, const std::vector<std::string_view>& candidates,
                         Suggest mode) {
  std::vector<std::string> quoted;
  for (std::string_view c : close_candidates(name, candidates, mode)) {
    quoted.push_back("'" + std::string(c) + "'");
  }
  return quoted.empty() ? "" : " (did you mean " + join(quoted, " or ") + "?)";
}

std::string did_you_mean(std::string_view name, const std::vector<std::string>& candidates,
                         Suggest mode) {
  return did_you_mean(name, std::vector<std::string_view>(candidates.begin(), candidates.end()),
                      mode);
}

std::optional<uint64_t> parse_bytes(std::string_view text) {
  // The number: digits, points, and an exponent only when a digit follows the 'e' (so "1e" is
  // not a number and "1EiB" is no unit).
  size_t end = 0;
  while (end < text.size()) {
    const auto c = static_cast<unsigned char>(text[end]);
    const bool exponent = (c == 'e' || c == 'E') && end + 1 < text.size() &&
                          std::isdigit(static_cast<unsigned char>(text[end + 1]));
    if (!std::isdigit(c) && c != '.' && !exponent) break;
    ++end;
  }
  double number = 0;
  const auto [ptr, ec] =
      std::from_chars(text.data(), text.data() + end, number, std::chars_format::general);
  if (end == 0 || ec != std::errc() || ptr != text.data() + end) return std::nullopt;
  std::string unit = to_lower(text.substr(end));
  std::erase(unit, ' ');
  static constexpr std::pair<std::string_view, double> kUnits[] = {
      {"", 1.0},    {"b", 1.0},      {"kb", 1e3},     {"mb", 1e6},     {"gb", 1e9},
      {"tb", 1e12}, {"kib", 0x1p10}, {"mib", 0x1p20}, {"gib", 0x1p30}, {"tib", 0x1p40}};
  for (const auto& [name, scale] : kUnits) {
    if (unit != name) continue;
    const double bytes = std::floor(number * scale);
    if (!std::isfinite(bytes) || bytes >= 0x1p64) return std::nullopt;
    return static_cast<uint64_t>(bytes);
  }
  return std::nullopt;
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

}  // namespace solar
