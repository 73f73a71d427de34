// Number formatting and plain-text tables shared by the report renderers (not public API).
// Every number is printed with four significant digits in a unit chosen by its magnitude.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace solar::report::detail {

// "21.49 ps", "812 ns", "3.204 us", "1.5 ms", "2.25 s".
std::string format_seconds(double s);
// Decimal units: "512 B", "1.536 kB", "24.58 MB", "3.2 GB", "1.1 TB".
std::string format_bytes(double b);
// Bytes per second in the same units: "3.35 TB/s".
std::string format_bandwidth(double bytes_per_s);
// FLOP per second: "812 MFLOP/s", "67 TFLOP/s", "2.25 PFLOP/s".
std::string format_rate(double flops_per_s);
// A count, with an optional unit: "512", "36.86 k", "1.074 G"; "512 MAC", "36.86 kMAC".
std::string format_count(double n, std::string_view unit = "");
// A plain number, four significant digits: "0.6667", "1", "12.5".
std::string format_number(double v);

// Rows as columns two spaces apart, column c aligned by align[c]: 'r' right, anything else (or
// past the end of `align`) left. No trailing spaces; one '\n' per row.
std::string format_table(const std::vector<std::vector<std::string>>& rows, std::string_view align);

// `s` safe in HTML/SVG text and in a double-quoted attribute: & < > " as entities.
std::string html_escape(const std::string& s);

}  // namespace solar::report::detail
