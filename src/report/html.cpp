// The self-contained HTML report (include/solar/report/html.h).
#include "solar/report/html.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "format.h"
#include "solar/report/provenance.h"
#include "solar/report/sections.h"
#include "solar/sol/analysis.h"

namespace solar::report {
namespace {

using detail::format_bytes;
using detail::format_count;
using detail::format_number;
using detail::format_rate;
using detail::format_seconds;
using detail::html_escape;
using nlohmann::json;

// A coordinate or raw value in the file: fixed, short, locale-free.
std::string fixed(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

std::string raw(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

double num(const json& j, const std::string& key, double fallback = 0) {
  const auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : fallback;
}

std::string str(const json& j, const std::string& key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

// The fidelities the report lists, registry order first, then any other name alphabetically.
std::vector<std::string> fidelities_of(const json& report) {
  std::vector<std::string> out;
  const json& bytes = report.at("bytes");
  for (const sol::Fidelity f : sol::implemented_fidelities()) {
    const std::string name(sol::fidelity_key(f));
    if (bytes.contains(name)) out.push_back(name);
  }
  for (const auto& [name, value] : bytes.items()) {
    if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
  }
  return out;
}

constexpr const char* kColors[] = {"#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e"};
std::string color(size_t i) { return kColors[i % std::size(kColors)]; }

constexpr const char* kStyle =
    R"(body{font-family:system-ui,sans-serif;margin:2em;color:#222;max-width:1200px}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #ccc}
table{border-collapse:collapse;margin:.5em 0;font-size:.9em}th,td{padding:.25em .5em;border-bottom:1px solid #e4e4e4;text-align:right}
th:first-child,td:first-child{text-align:left}th{background:#f4f4f4}
table.sortable th{cursor:pointer}table.sortable th[aria-sort=descending]::after{content:" \25BC"}
table.sortable th[aria-sort=ascending]::after{content:" \25B2"}
.cards{display:flex;gap:1em;flex-wrap:wrap}.card{border:1px solid #ccc;border-radius:6px;padding:.8em 1.2em;min-width:12em}
.card h3{margin:.2em 0 .5em 0}.card .time{font-size:1.4em;font-weight:bold}.meta{color:#555}
.warn{color:#b00;font-weight:bold}svg text{font-size:12px}
td.num,#node-table td{white-space:nowrap}#node-table td:first-child{white-space:normal}
)";

constexpr const char* kScript = R"((function(){
function sortTable(t,col,desc){var th=t.tHead.rows[0].cells[col];var isNum=th.getAttribute('data-type')==='number';
var rows=Array.prototype.slice.call(t.tBodies[0].rows);
rows.sort(function(a,b){var x=a.cells[col].getAttribute('data-value'),y=b.cells[col].getAttribute('data-value');
var c=isNum?parseFloat(x)-parseFloat(y):(x<y?-1:(x>y?1:0));if(desc)c=-c;
return c!==0?c:parseInt(a.getAttribute('data-index'),10)-parseInt(b.getAttribute('data-index'),10);});
rows.forEach(function(r){t.tBodies[0].appendChild(r);});
Array.prototype.forEach.call(t.tHead.rows[0].cells,function(h){h.removeAttribute('aria-sort');});
th.setAttribute('aria-sort',desc?'descending':'ascending');
t.setAttribute('data-sort-key',th.getAttribute('data-key'));t.setAttribute('data-sort-order',desc?'descending':'ascending');}
Array.prototype.forEach.call(document.querySelectorAll('table.sortable'),function(t){
Array.prototype.forEach.call(t.tHead.rows[0].cells,function(th,i){th.addEventListener('click',function(){
var cur=th.getAttribute('aria-sort');
sortTable(t,i,cur?cur==='ascending':th.getAttribute('data-type')==='number');});});
var d=t.getAttribute('data-default-sort');if(d!==null){Array.prototype.forEach.call(t.tHead.rows[0].cells,function(th,i){
if(th.getAttribute('data-key')===d)sortTable(t,i,true);});}});
})();
)";

// ---------------------------------------------------------------------------------------------
// Roofline

struct Point {
  std::string label;
  double x = 0;  // FLOP per byte
  double y = 0;  // FLOP/s
};

struct Axes {
  double x0, x1, y0, y1;  // log10 ranges
  // kRight: the column right of the plot with the roof labels and, at its foot, the legend.
  static constexpr double kWidth = 800, kHeight = 460, kLeft = 80, kRight = 200, kTop = 20,
                          kBottom = 50;
  double px(double v) const {
    return kLeft + (std::log10(v) - x0) / (x1 - x0) * (kWidth - kLeft - kRight);
  }
  double py(double v) const {
    return kHeight - kBottom - (std::log10(v) - y0) / (y1 - y0) * (kHeight - kTop - kBottom);
  }
};

std::string decade_label(int e) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "1e%d", e);
  return buf;
}

// A node's main rate as a table cell or a roof shows it: the rate used, '*' marking a fallback
// (the terminal report's convention, `nodes[].precision_used`); the whole label
// (`nodes[].precision`, "bf16 vector->fp32 vector (H100-SXM has no bf16 vector rate)") goes to
// a tooltip and a footnote.
struct ShortPrecision {
  std::string text;  // "bf16 tensor", "fp32 vector*"
  bool fallback = false;
};

ShortPrecision short_precision(const json& node) {
  const auto rate = node.find("rate_flops_per_s");
  if (rate == node.end() || rate->is_null()) return {str(node, "precision"), false};  // "none"
  const std::string used = str(node, "precision_used");
  return {used, used.ends_with('*')};
}

// Baselines for labels stacked in one column, as near as they can be to `wanted` (ascending): at
// least `gap` apart, within [lo, hi] while they fit. Deterministic: two passes, no iteration.
std::vector<double> spread_labels(const std::vector<double>& wanted, double lo, double hi,
                                  double gap) {
  std::vector<double> y = wanted;
  for (size_t i = 0; i < y.size(); ++i) {  // down: each at least `gap` below the one above
    y[i] = std::max(y[i], i == 0 ? lo : y[i - 1] + gap);
  }
  for (size_t i = y.size(); i-- > 0;) {  // up: none below `hi`, each `gap` above the next
    y[i] = std::min(y[i], i + 1 == y.size() ? hi : y[i + 1] - gap);
  }
  return y;
}

// The fallback labels of the nodes' main rates, each once, in node order, with how many nodes
// ran at it: the footnote of the '*'s.
std::vector<std::pair<std::string, size_t>> fallback_labels(const json& report) {
  std::vector<std::pair<std::string, size_t>> out;
  for (const json& n : report.at("nodes")) {
    if (!short_precision(n).fallback) continue;
    const std::string label = str(n, "precision");
    const auto it =
        std::find_if(out.begin(), out.end(), [&](const auto& e) { return e.first == label; });
    if (it == out.end()) {
      out.emplace_back(label, 1);
    } else {
      ++it->second;
    }
  }
  return out;
}

// "* precision fallback (the device lacks the wanted rate): LABEL (N nodes); ...", or "".
std::string fallback_note(const json& report, const std::string& id) {
  std::string s;
  for (const auto& [label, count] : fallback_labels(report)) {
    s += (s.empty() ? "" : "; ") + html_escape(label) + " (" + std::to_string(count) +
         (count == 1 ? " node)" : " nodes)");
  }
  if (s.empty()) return s;
  return "<p class=\"meta\" id=\"" + id +
         "\">* precision fallback (the device lacks the wanted rate): " + s + ".</p>\n";
}

// The legend, a framed list at the foot of the right-hand column: one diamond per fidelity.
constexpr double kLegendLine = 16, kLegendPad = 5;
double legend_top(size_t entries) {
  const double bottom = Axes::kHeight - Axes::kBottom;
  return entries == 0 ? bottom
                      : bottom - 2 * kLegendPad - kLegendLine * static_cast<double>(entries);
}

std::string legend(const std::vector<Point>& marks) {
  if (marks.empty()) return "";
  const double x = Axes::kWidth - Axes::kRight + 8, top = legend_top(marks.size());
  std::string s = "<g class=\"legend\"><rect class=\"legend-box\" x=\"" + fixed(x) + "\" y=\"" +
                  fixed(top) + "\" width=\"" + fixed(Axes::kRight - 16) + "\" height=\"" +
                  fixed(Axes::kHeight - Axes::kBottom - top) +
                  "\" fill=\"#fff\" stroke=\"#ccc\"/>\n";
  for (size_t i = 0; i < marks.size(); ++i) {
    s += "<text class=\"legend-entry\" x=\"" + fixed(x + 6) + "\" y=\"" +
         fixed(top + kLegendPad + kLegendLine * static_cast<double>(i) + 12) + "\" fill=\"" +
         color(i) + "\">&#9670; " + html_escape(marks[i].label) + "</text>\n";
  }
  return s + "</g>\n";
}

// A roof: the rate a node's main work ran at, with its label and the short form of it.
struct Roof {
  std::string label;  // nodes[].precision
  ShortPrecision used;
  double rate;
};

// One label per rate and unit the roofs run at, in the right-hand column beside the roof's end,
// stacked so that none touches another or the legend (a leader line from the roof to its label).
// A roof of fallbacks is marked '*'; its whole label is in the tooltip and the caption.
std::string roof_labels(const std::vector<Roof>& roofs, const Axes& ax, double beta,
                        size_t legend_entries) {
  struct Label {
    std::string text;
    double rate;
    bool fallback;
    std::string title;
  };
  std::vector<Label> labels;  // roofs come sorted by rate, highest first: labels top down
  for (const Roof& roof : roofs) {
    const std::string& label = roof.label;
    const double rate = roof.rate;
    const ShortPrecision& sp = roof.used;
    const std::string used = sp.fallback ? sp.text.substr(0, sp.text.size() - 1) : sp.text;
    const auto it = std::find_if(labels.begin(), labels.end(),
                                 [&](const Label& l) { return l.text == used && l.rate == rate; });
    if (it == labels.end()) {
      labels.push_back({used, rate, sp.fallback, label});
    } else {
      it->fallback = it->fallback || sp.fallback;
      it->title += "; " + label;
    }
  }
  const double right = Axes::kWidth - Axes::kRight, xb = std::pow(10.0, ax.x1);
  std::vector<double> roof_y, wanted;
  for (const Label& l : labels) {
    roof_y.push_back(ax.py(std::min(l.rate, xb * beta)));
    wanted.push_back(roof_y.back() + 4);  // the baseline that centres 12px text on the roof
  }
  const std::vector<double> y =
      spread_labels(wanted, Axes::kTop + 10, legend_top(legend_entries) - 8, 15);
  std::string s;
  for (size_t i = 0; i < labels.size(); ++i) {
    const Label& l = labels[i];
    s += "<line class=\"roof-leader\" x1=\"" + fixed(right) + "\" y1=\"" + fixed(roof_y[i]) +
         "\" x2=\"" + fixed(right + 7) + "\" y2=\"" + fixed(y[i] - 4) +
         "\" stroke=\"#999\"/>\n<text class=\"roof-label\" x=\"" + fixed(right + 9) + "\" y=\"" +
         fixed(y[i]) + "\">" + html_escape(l.text) + (l.fallback ? "*" : "") + "<title>" +
         html_escape(l.title) + ": " + format_rate(l.rate) + "</title></text>\n";
  }
  return s;
}

std::string roofline_svg(const json& report, const std::vector<std::string>& fidelities,
                         size_t& plotted, size_t& skipped) {
  const double beta = num(report.at("hardware"), "dram_bandwidth_bytes_per_s");
  // The roofs: one per distinct rate a node's main work ran at.
  std::vector<Roof> roofs;
  std::vector<Point> nodes;
  for (const json& n : report.at("nodes")) {
    const double flops = num(n, "flops");
    const double bytes = num(n, "bytes_unfused");
    const double t = num(n, "sol_unfused_s");
    const auto rate = n.find("rate_flops_per_s");
    if (rate != n.end() && rate->is_number()) {
      const std::string label = str(n, "precision");
      const double r = rate->get<double>();
      const auto same = [&](const Roof& f) { return f.label == label && f.rate == r; };
      if (std::none_of(roofs.begin(), roofs.end(), same)) {
        roofs.push_back({label, short_precision(n), r});
      }
    }
    if (flops <= 0 || bytes <= 0 || t <= 0) {
      ++skipped;
      continue;
    }
    nodes.push_back({str(n, "name"), flops / bytes, flops / t});
  }
  plotted = nodes.size();
  std::sort(roofs.begin(), roofs.end(), [](const Roof& a, const Roof& b) {
    return a.rate > b.rate || (a.rate == b.rate && a.label < b.label);
  });
  // The whole program at each fidelity.
  const double total_flops = num(report.at("totals"), "flops");
  std::vector<Point> marks;
  for (const std::string& f : fidelities) {
    const double bytes = num(report.at("bytes"), f);
    const double t = num(report.at("sol"), f + "_s");
    if (total_flops > 0 && bytes > 0 && t > 0)
      marks.push_back({f, total_flops / bytes, total_flops / t});
  }
  if ((nodes.empty() && marks.empty()) || beta <= 0) {
    return "<p id=\"roofline-empty\">No node has both arithmetic and bytes: nothing to plot.</p>\n";
  }
  double xlo = 1e300, xhi = 0, ylo = 1e300, yhi = 0;
  const auto extend = [&](double x, double y) {
    xlo = std::min(xlo, x);
    xhi = std::max(xhi, x);
    ylo = std::min(ylo, y);
    yhi = std::max(yhi, y);
  };
  for (const Point& p : nodes) extend(p.x, p.y);
  for (const Point& p : marks) extend(p.x, p.y);
  for (const Roof& r : roofs) extend(r.rate / beta, r.rate);
  Axes ax{std::floor(std::log10(xlo)), std::ceil(std::log10(xhi)), 0, 0};
  if (ax.x1 <= ax.x0) ax.x1 = ax.x0 + 1;
  ylo = std::min(ylo, std::pow(10.0, ax.x0) * beta);
  ax.y0 = std::floor(std::log10(ylo));
  ax.y1 = std::ceil(std::log10(yhi));
  if (ax.y1 <= ax.y0) ax.y1 = ax.y0 + 1;

  std::string s = "<svg id=\"roofline-plot\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" +
                  fixed(Axes::kWidth) + "\" height=\"" + fixed(Axes::kHeight) +
                  "\" role=\"img\" aria-label=\"roofline\">\n";
  const double left = Axes::kLeft, right = Axes::kWidth - Axes::kRight, top = Axes::kTop,
               bottom = Axes::kHeight - Axes::kBottom;
  for (int e = static_cast<int>(ax.x0); e <= static_cast<int>(ax.x1); ++e) {
    const double x = ax.px(std::pow(10.0, e));
    s += "<line class=\"grid\" x1=\"" + fixed(x) + "\" y1=\"" + fixed(top) + "\" x2=\"" + fixed(x) +
         "\" y2=\"" + fixed(bottom) + "\" stroke=\"#eee\"/>\n<text x=\"" + fixed(x) + "\" y=\"" +
         fixed(bottom + 20) + "\" text-anchor=\"middle\">" + decade_label(e) + "</text>\n";
  }
  for (int e = static_cast<int>(ax.y0); e <= static_cast<int>(ax.y1); ++e) {
    const double y = ax.py(std::pow(10.0, e));
    s += "<line class=\"grid\" x1=\"" + fixed(left) + "\" y1=\"" + fixed(y) + "\" x2=\"" +
         fixed(right) + "\" y2=\"" + fixed(y) + "\" stroke=\"#eee\"/>\n<text x=\"" +
         fixed(left - 6) + "\" y=\"" + fixed(y + 4) + "\" text-anchor=\"end\">" + decade_label(e) +
         "</text>\n";
  }
  s += "<rect x=\"" + fixed(left) + "\" y=\"" + fixed(top) + "\" width=\"" + fixed(right - left) +
       "\" height=\"" + fixed(bottom - top) + "\" fill=\"none\" stroke=\"#888\"/>\n";
  s += "<text x=\"" + fixed((left + right) / 2) + "\" y=\"" + fixed(Axes::kHeight - 10) +
       "\" text-anchor=\"middle\">arithmetic intensity (FLOP/byte)</text>\n";
  s += "<text transform=\"translate(16," + fixed((top + bottom) / 2) +
       ") rotate(-90)\" text-anchor=\"middle\">FLOP/s</text>\n";
  // Roofs: min(rate, intensity x bandwidth), from the left edge through the ridge to the right.
  const double xa = std::pow(10.0, ax.x0), xb = std::pow(10.0, ax.x1);
  for (size_t i = 0; i < roofs.size(); ++i) {
    const std::string& label = roofs[i].label;
    const double rate = roofs[i].rate;
    const double ridge = std::clamp(rate / beta, xa, xb);
    std::string pts;
    for (const double x : {xa, ridge, xb}) {
      pts +=
          (pts.empty() ? "" : " ") + fixed(ax.px(x)) + "," + fixed(ax.py(std::min(rate, x * beta)));
    }
    s += "<polyline class=\"roof\" data-precision=\"" + html_escape(label) + "\" data-rate=\"" +
         raw(rate) + "\" points=\"" + pts + "\" fill=\"none\" stroke=\"#444\" stroke-width=\"" +
         (i == 0 ? "2" : "1") + "\"" + (i == 0 ? "" : " stroke-dasharray=\"4 3\"") + "><title>" +
         html_escape(label) + ": " + format_rate(rate) + ", DRAM " +
         detail::format_bandwidth(beta) + "</title></polyline>\n";
  }
  s += roof_labels(roofs, ax, beta, marks.size());
  for (const Point& p : nodes) {
    s += "<circle class=\"node\" data-node=\"" + html_escape(p.label) + "\" cx=\"" +
         fixed(ax.px(p.x)) + "\" cy=\"" + fixed(ax.py(p.y)) +
         "\" r=\"4\" fill=\"#1f77b4\" fill-opacity=\"0.6\"><title>" + html_escape(p.label) + ": " +
         format_number(p.x) + " FLOP/byte, " + format_rate(p.y) + " at its SOL</title></circle>\n";
  }
  for (size_t i = 0; i < marks.size(); ++i) {
    const Point& p = marks[i];
    const double cx = ax.px(p.x), cy = ax.py(p.y);
    const double d = std::max(4.0, 9.0 - 2.0 * static_cast<double>(i));  // later ones smaller,
                                                                         // so none hides another
    s += "<path class=\"fidelity-marker\" data-fidelity=\"" + html_escape(p.label) + "\" d=\"M" +
         fixed(cx) + "," + fixed(cy - d) + " L" + fixed(cx + d) + "," + fixed(cy) + " L" +
         fixed(cx) + "," + fixed(cy + d) + " L" + fixed(cx - d) + "," + fixed(cy) + " Z\" fill=\"" +
         color(i) + "\" stroke=\"#000\"><title>whole program, " + html_escape(p.label) + ": " +
         format_number(p.x) + " FLOP/byte, " + format_rate(p.y) + "</title></path>\n";
  }
  s += legend(marks);
  return s + "</svg>\n";
}

// ---------------------------------------------------------------------------------------------
// Tables

struct Cell {
  std::string text;
  std::string value;    // data-value for sorting; empty: the text
  std::string title;    // a tooltip with what the cell shortens; empty: none
  bool number = false;  // never broken across lines
  bool name = false;    // may break after a '_' or '.' (a node name is one long word)
};

Cell text_cell(const std::string& t) { return {t, t, "", false, false}; }
Cell name_cell(const std::string& t) { return {t, t, "", false, true}; }
Cell num_cell(const std::string& t, double v) { return {t, raw(v), "", true, false}; }

// "67.17 M", "537.4 MB", "1.767 ns", "565.9x", "12.5%", "1.5e-05": a number, with its unit.
bool reads_as_number(const std::string& t) {
  static const std::regex number(R"(^[-+]?\d[\d.,]*(e[-+]?\d+)?( ?[A-Za-z%/]+)?$)");
  return std::regex_match(t, number);
}

// A table cell. A number is class "num" (white-space:nowrap: "67.17 M" never becomes "67.17" over
// "M"); text wraps at its spaces. In the node table nothing wraps but the node's name, after each
// '_' and '.' (<wbr>: scaled_dot_product_attention_logits2 is one word): it fits 1,400 px.
std::string td(const Cell& c, const std::string& attributes = "") {
  std::string body;
  if (c.name) {
    for (const char ch : c.text) {
      body += html_escape(std::string(1, ch));
      if (ch == '_' || ch == '.') body += "<wbr>";
    }
  } else {
    body = html_escape(c.text);
  }
  return "<td" + attributes + (c.number ? " class=\"num\">" : ">") + body + "</td>";
}

std::string simple_table(const std::string& id, const std::vector<std::string>& head,
                         const std::vector<std::vector<std::string>>& rows) {
  std::string s = "<table id=\"" + id + "\"><thead><tr>";
  for (const std::string& h : head) s += "<th>" + html_escape(h) + "</th>";
  s += "</tr></thead><tbody>\n";
  for (const auto& row : rows) {
    s += "<tr>";
    for (const std::string& c : row) s += td({c, c, "", reads_as_number(c), false});
    s += "</tr>\n";
  }
  return s + "</tbody></table>\n";
}

// "captured from MODEL.py by torch.export (torch 2.5.1)<br>" for a captured program.
std::string provenance_meta(const json& r) {
  const std::string line = capture_line(provenance_of_report(r).capture);
  return line.empty() ? "" : html_escape(line) + "<br>\n";
}

std::string fmt_err(const std::optional<double>& x) {
  if (!x) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", *x);
  return buf;
}

std::string check_rows_table(const std::string& id, const std::vector<OutputCheck>& outputs) {
  std::vector<std::vector<std::string>> rows;
  for (const OutputCheck& o : outputs) {
    std::string shape;
    for (const int64_t d : o.shape) shape += (shape.empty() ? "" : ", ") + std::to_string(d);
    rows.push_back({o.name, o.dtype + "[" + shape + "]",
                    o.error.empty() ? fmt_err(o.max_abs_err) : o.error, fmt_err(o.max_rel_err),
                    fmt_err(o.rtol), fmt_err(o.atol), o.passed ? "ok" : "MISMATCH"});
  }
  return simple_table(
      id, {"output", "shape", "max abs err", "max rel err", "rtol", "atol", "result"}, rows);
}

// The unsupported operators (loudly, first) and the verification of a captured program.
std::string provenance_section(const json& r) {
  const Provenance p = provenance_of_report(r);
  std::string s;
  if (p.coverage && !p.coverage->unsupported_ops.empty()) {
    std::vector<std::vector<std::string>> rows;
    for (const UnsupportedOp& u : p.coverage->unsupported_ops) {
      rows.push_back({u.op, u.node, u.location, u.reason,
                      detail::format_bytes(static_cast<double>(u.output_bytes))});
    }
    s += "<h2 id=\"unsupported\">Unsupported operators</h2>\n<p class=\"warning\">" +
         html_escape(coverage_headline(*p.coverage)) +
         " Their outputs are read as program inputs: their work is NOT in the numbers "
         "below.</p>\n" +
         simple_table("unsupported-table", {"op", "node", "location", "reason", "writes"}, rows);
  }
  const Verification& v = p.verification;
  if (p.capture.framework == "ir") return s;
  if (r.contains("agent") && r["agent"].is_array()) {  // what the LLM agent wrote (docs/llm.md)
    std::vector<std::vector<std::string>> rows;
    for (const json& a : r["agent"]) {
      const bool cached = a.value("cached", false);
      rows.push_back({str(a, "scope"), str(a, "name"), str(a, "op"),
                      cached ? "from the cache, verified again"
                             : std::to_string(a.value("attempts", 0)) + " attempt(s), " +
                                   std::to_string(a.value("prompt_tokens", 0)) + " prompt + " +
                                   std::to_string(a.value("completion_tokens", 0)) +
                                   " completion tokens",
                      str(a, "model")});
    }
    s += "<h2 id=\"agent\">Written by the LLM agent</h2>\n" +
         simple_table("agent-table", {"scope", "name", "op", "how", "model"}, rows);
  }
  s += "<h2 id=\"verification\">Verification</h2>\n<p class=\"meta\">" +
       html_escape(std::string(verification_status_name(v.status))) +
       (v.mode.empty() ? "" : " (" + html_escape(v.mode) + ")") + ": " + html_escape(v.detail) +
       (v.why.empty() ? "" : "<br>\n" + html_escape(v.why)) + "</p>\n";
  for (const std::string& note : v.notes)
    s += "<p class=\"meta\">note: " + html_escape(note) + "</p>\n";
  if (!v.outputs.empty()) s += check_rows_table("verification-table", v.outputs);
  if (v.conditioning) {
    s += "<p class=\"meta\">float64 recheck: " + html_escape(v.conditioning->verdict) + "</p>\n";
    if (!v.conditioning->float64_outputs.empty()) {
      s += check_rows_table("float64-table", v.conditioning->float64_outputs);
    }
  }
  if (!v.ops.empty()) {
    std::vector<std::vector<std::string>> rows;
    for (const json& c : v.ops) {
      rows.push_back({str(c, "op"), std::to_string(c.value("nodes", 1)), str(c, "size"),
                      str(c, "result"), str(c, "reason")});
    }
    s += simple_table("per-op-table", {"op", "nodes", "size", "result", "reason"}, rows);
  }
  return s;
}

std::string header_section(const json& r) {
  std::string s = "<h1>SOL of " + html_escape(str(r, "source")) + " on " +
                  html_escape(str(r.at("hardware"), "name")) + "</h1>\n<p class=\"meta\">";
  std::string sizes;
  for (const auto& [name, value] : r.at("sizes").items()) {
    sizes += (sizes.empty() ? "" : ", ") + name + "=" + value.dump();
  }
  if (!sizes.empty()) s += "sizes: " + html_escape(sizes) + "<br>\n";
  const json& t = r.at("totals");
  s += "DRAM " + detail::format_bandwidth(num(r.at("hardware"), "dram_bandwidth_bytes_per_s")) +
       "; precision policy: " + html_escape(str(r, "precision_policy")) +
       "; cache state: " + html_escape(str(r, "cache_state")) + "<br>\n" + provenance_meta(r) +
       "verification: " + html_escape(verification_line(provenance_of_report(r).verification)) +
       "<br>\nwork: " + format_count(num(t, "macs"), "MAC") + ", " +
       format_count(num(t, "other_ops")) + " other ops, " + format_count(num(t, "flops"), "FLOP") +
       " (" + html_escape(str(r, "flops_convention")) + "), " +
       std::to_string(r.at("nodes").size()) +
       " nodes</p>\n<p class=\"meta\">SOL (speed of light) here is the minimum time of the whole "
       "program on the device (docs/fidelities.md), not Nsight Compute's per-kernel percentage "
       "of peak.</p>\n";
  return s;
}

std::string fidelity_section(const json& r, const std::vector<std::string>& fidelities) {
  const json* headroom = r.contains("headroom") ? &r.at("headroom") : nullptr;
  std::string s = "<h2 id=\"fidelities\">Fidelities</h2>\n<div class=\"cards\">\n";
  for (size_t i = 0; i < fidelities.size(); ++i) {
    const std::string& f = fidelities[i];
    const json& sol = r.at("sol");
    s += "<div class=\"card fidelity\" data-fidelity=\"" + html_escape(f) + "\" data-sol-s=\"" +
         raw(num(sol, f + "_s")) + "\" style=\"border-top:4px solid " + color(i) + "\"><h3>" +
         html_escape(f) + "</h3><div class=\"time\">" + format_seconds(num(sol, f + "_s")) +
         "</div>compute " + format_seconds(num(sol, "compute_s")) + "<br>memory " +
         format_seconds(num(sol, "memory_" + f + "_s")) + "<br>DRAM " +
         format_bytes(num(r.at("bytes"), f)) +
         "<br>bound: " + html_escape(str(sol, "bottleneck_" + f));
    if (headroom) {
      s += "<br>headroom: <span class=\"headroom\">" +
           format_ratio(num(headroom->at("by_fidelity"), f)) + "x</span>";
    }
    s += "</div>\n";
  }
  return s + "</div>\n";
}

std::string headroom_section(const json& r, const std::vector<std::string>& fidelities) {
  if (!r.contains("headroom")) return "";
  const json& h = r.at("headroom");
  std::string s = "<h2 id=\"headroom\">Headroom (measured / SOL)</h2>\n<p>measured " +
                  format_seconds(num(h, "measured_s"));
  if (!str(h, "method").empty()) s += " (" + html_escape(str(h, "method")) + ")";
  s += "</p>\n<p class=\"" + std::string(h.value("what_if", false) ? "warn" : "meta") +
       "\" id=\"headroom-note\">" + html_escape(str(h, "note")) + "</p>\n";
  std::vector<std::vector<std::string>> rows;
  for (const std::string& f : fidelities) {
    rows.push_back({f, format_seconds(num(r.at("sol"), f + "_s")),
                    format_ratio(num(h.at("by_fidelity"), f)) + "x"});
  }
  s += simple_table("headroom-table", {"fidelity", "SOL", "headroom"}, rows);
  if (h.value("violation", false)) {
    s += "<p class=\"warn\" id=\"violation\">VIOLATION: the measured time is below the SOL bound " +
         format_seconds(num(h, "bound_s")) + ".</p>\n";
  }
  return s;
}

// A node's precision: the rate used, '*' and a tooltip with the whole label for a fallback.
Cell precision_cell(const json& node) {
  const ShortPrecision sp = short_precision(node);
  const std::string label = str(node, "precision");
  return {sp.text, label, sp.fallback ? label : "", false, false};
}

std::string node_section(const json& r) {
  struct Column {
    const char* key;
    const char* head;
    bool number;
  };
  static constexpr Column kColumns[] = {
      {"name", "node", false},
      {"op", "op", false},
      {"precision", "precision", false},
      {"macs", "MACs", true},
      {"other_ops", "other ops", true},
      {"flops", "FLOPs", true},
      {"bytes_unfused", "bytes", true},
      {"intensity", "FLOP/byte", true},
      {"compute_s", "compute", true},
      {"memory_s", "memory", true},
      {"sol_unfused_s", "SOL alone", true},
      {"share", "share", true},
      {"bottleneck", "bound", false},
  };
  const json& nodes = r.at("nodes");
  double total = 0;
  for (const json& n : nodes) total += num(n, "sol_unfused_s");
  std::string s =
      "<h2 id=\"nodes\">Nodes</h2>\n<p class=\"meta\">Each node (kernel) run alone; the "
      "unfused fidelity runs each framework op, the nodes of one op block, as one kernel. "
      "Click a column to sort.</p>\n<table id=\"node-table\" class=\"sortable\" "
      "data-default-sort=\"sol_unfused_s\"><thead><tr>";
  for (const Column& c : kColumns) {
    s += "<th data-key=\"" + std::string(c.key) + "\" data-type=\"" +
         (c.number ? "number" : "text") + "\">" + c.head + "</th>";
  }
  s += "</tr></thead><tbody>\n";
  for (size_t i = 0; i < nodes.size(); ++i) {
    const json& n = nodes[i];
    const double bytes = num(n, "bytes_unfused");
    const double intensity = bytes > 0 ? num(n, "flops") / bytes : 0;
    const double t = num(n, "sol_unfused_s");
    const std::vector<Cell> cells = {
        name_cell(str(n, "name")),
        text_cell(str(n, "op")),
        precision_cell(n),
        num_cell(format_count(num(n, "macs")), num(n, "macs")),
        num_cell(format_count(num(n, "other_ops")), num(n, "other_ops")),
        num_cell(format_count(num(n, "flops")), num(n, "flops")),
        num_cell(format_bytes(bytes), bytes),
        num_cell(format_number(intensity), intensity),
        num_cell(format_seconds(num(n, "compute_s")), num(n, "compute_s")),
        num_cell(format_seconds(num(n, "memory_s")), num(n, "memory_s")),
        num_cell(format_seconds(t), t),
        num_cell(total > 0 ? format_number(100 * t / total) + "%" : "-", total > 0 ? t / total : 0),
        text_cell(str(n, "bottleneck")),
    };
    s += "<tr data-index=\"" + std::to_string(i) + "\">";
    for (const Cell& c : cells) {
      s += td(c, " data-value=\"" + html_escape(c.value) + "\"" +
                     (c.title.empty() ? "" : " title=\"" + html_escape(c.title) + "\""));
    }
    s += "</tr>\n";
  }
  return s + "</tbody></table>\n" + fallback_note(r, "node-fallbacks");
}

std::string fusion_section(const json& r, const std::vector<std::string>& fidelities) {
  std::string s = "<h2 id=\"fusion\">Fusion groups</h2>\n<ul id=\"fusion-groups\">\n";
  const size_t n = r.at("nodes").size();
  for (const std::string& f : fidelities) {
    s += "<li data-fidelity=\"" + html_escape(f) + "\"><b>" + html_escape(f) + "</b>: ";
    if (f == "unfused") {
      const size_t ops = r.contains("ops") ? r.at("ops").size() : n;
      s += std::to_string(ops) +
           " group(s), one per framework operation (an op block, or a node outside any), in "
           "the table below: each reads its inputs from and writes its outputs to DRAM";
    } else if (f == "fused") {
      s += "1 group of all " + std::to_string(n) +
           " nodes: only graph inputs, weights and "
           "outputs touch DRAM, each once";
    } else if (f == "cache_aware" && r.contains("cache") && r.at("cache").contains("groups")) {
      s += std::to_string(r.at("cache").at("groups").size()) + " group(s), on-chip capacity " +
           format_bytes(num(r.at("cache"), "capacity_bytes")) + " (" +
           html_escape(str(r.at("cache"), "capacity_source")) + "), in the table below";
    } else {
      s += "see the JSON report";
    }
    s += " (" + format_bytes(num(r.at("bytes"), f)) + " of DRAM traffic)</li>\n";
  }
  s += "</ul>\n";
  if (r.contains("ops")) {
    std::vector<std::vector<std::string>> ops;
    for (const json& o : r.at("ops")) {
      const json& members = o.at("nodes");
      std::string names = members.size() == 1 ? members[0].get<std::string>()
                                              : members.front().get<std::string>() + ".." +
                                                    members.back().get<std::string>() + " (" +
                                                    std::to_string(members.size()) + " nodes)";
      ops.push_back({str(o, "name"), names, format_bytes(num(o, "bytes")),
                     format_seconds(num(o, "sol_unfused_s")),
                     format_seconds(num(o, "nodes_alone_s"))});
    }
    s += simple_table("op-table", {"op", "nodes", "DRAM bytes", "SOL alone", "nodes each alone"},
                      ops);
  }
  if (r.contains("cache") && r.at("cache").contains("groups")) {
    std::vector<std::vector<std::string>> groups;
    for (const json& g : r.at("cache").at("groups")) {
      std::string names;
      for (const json& node : g.value("nodes", json::array())) {
        names += (names.empty() ? "" : ", ") + node.get<std::string>();
      }
      std::string order;
      for (const json& l : g.value("loop_order", json::array())) {
        order += (order.empty() ? "" : " ") + l.get<std::string>();
      }
      const std::string mode = str(g, "mode") + (g.value("lower_bound", false) ? " (bound)" : "");
      groups.push_back({std::to_string(groups.size() + 1), names, mode, order,
                        format_bytes(num(g, "working_set_bytes")),
                        format_bytes(num(g, "traffic_bytes")), format_seconds(num(g, "time_s"))});
    }
    s += "<h3>Cache-aware fusion groups</h3>\n" +
         simple_table("cache-group-table",
                      {"group", "nodes", "mode", "loop order", "working set", "DRAM bytes", "time"},
                      groups);
  }
  if (!r.contains("insights")) return s;
  std::vector<std::vector<std::string>> rows;
  for (const json& f : r.at("insights").at("fusion_opportunities")) {
    std::string consumers;
    for (const json& c : f.at("consumers"))
      consumers += (consumers.empty() ? "" : ", ") + c.get<std::string>();
    rows.push_back({str(f, "tensor"), str(f, "producer"), consumers,
                    format_bytes(num(f, "bytes_saved")), format_seconds(num(f, "memory_s_saved"))});
  }
  s += "<h3>Fusion opportunities, by DRAM bytes saved</h3>\n";
  return s + simple_table("fusion-table",
                          {"tensor kept on chip", "producer", "consumers", "bytes saved",
                           "memory time saved"},
                          rows);
}

std::string insights_section(const json& r) {
  if (!r.contains("insights")) return "";
  const json& in = r.at("insights");
  std::string s = "<h2 id=\"insights\">Contraction order</h2>\n";
  std::vector<std::vector<std::string>> rows;
  for (const json& c : in.at("contraction_chains")) {
    std::string nodes;
    for (const json& n : c.at("nodes")) nodes += (nodes.empty() ? "" : ", ") + n.get<std::string>();
    rows.push_back({nodes, str(c, "program_order"), format_count(num(c, "program_macs"), "MAC"),
                    str(c, "best_order"), format_count(num(c, "best_macs"), "MAC"),
                    format_count(num(c, "flops_saved"), "FLOP")});
  }
  if (rows.empty()) {
    s += "<p>No chain of two or more contractions.</p>\n";
  } else {
    s += simple_table("chain-table",
                      {"chain", "program order", "MACs", "cheapest order", "MACs", "FLOPs saved"},
                      rows);
  }
  for (const json& note : in.at("notes"))
    s += "<p class=\"meta\">" + html_escape(note.get<std::string>()) + "</p>\n";
  return s;
}

std::string devices_section(const json& d, const std::vector<std::string>& fidelities) {
  if (d.is_null()) return "";
  std::string s = "<h2 id=\"cross-platform\">Cross-platform</h2>\n";
  std::vector<std::string> head = {"device"};
  for (const std::string& f : fidelities) head.push_back(f);
  head.push_back("bound");
  std::vector<std::vector<std::string>> rows;
  std::vector<std::vector<std::string>> prov;
  for (const json& dev : d.at("devices")) {
    std::vector<std::string> row = {str(dev, "name")};
    if (dev.contains("error")) {
      row.resize(head.size(), "n/a");
      rows.push_back(row);
      prov.push_back({str(dev, "name"), "-", "n/a", "n/a", "n/a", "n/a", "not analysed"});
      continue;
    }
    std::string bound;  // of the last fidelity the device has a figure for
    for (const std::string& f : fidelities) {
      const bool has = dev.at("sol").contains(f + "_s");  // none: n/a (e.g. no on-chip level)
      row.push_back(has ? format_seconds(num(dev.at("sol"), f + "_s")) : "n/a");
      if (has) bound = str(dev.at("sol"), "bottleneck_" + f);
    }
    row.push_back(bound);
    rows.push_back(row);
    if (!dev.contains("provision")) continue;
    for (const std::string& f : fidelities) {
      if (!dev.at("provision").contains(f)) continue;
      const json& p = dev.at("provision").at(f);
      prov.push_back({str(dev, "name"), f, format_seconds(num(p, "time_s")),
                      format_number(num(p, "factor")), format_number(num(p, "compute_factor")),
                      format_number(num(p, "bandwidth_factor")),
                      p.value("meets_target", false) ? "meets" : "short"});
    }
  }
  s += simple_table("device-table", head, rows);
  if (d.contains("latency_s")) {
    s += "<h2 id=\"inverse-roofline\">Inverse roofline</h2>\n<p>What running in " +
         format_seconds(num(d, "latency_s")) +
         " needs: " + format_rate(num(d.at("required"), "flops_per_s")) + " (FLOP / latency)";
    for (const auto& [f, bw] : d.at("required").at("bandwidth_bytes_per_s").items()) {
      s += ", " + html_escape(f) + " " + detail::format_bandwidth(bw.get<double>());
    }
    s += " DRAM. factor = SOL / latency; compute x and bandwidth x: what each alone must grow "
         "by.</p>\n";
    s += simple_table(
        "provision-table",
        {"device", "fidelity", "SOL", "factor", "compute x", "bandwidth x", "verdict"}, prov);
  }
  return s;
}

}  // namespace

std::string render_html(const json& report, const json& devices) {
  const std::vector<std::string> fidelities = fidelities_of(report);
  size_t plotted = 0, skipped = 0;
  const std::string svg = roofline_svg(report, fidelities, plotted, skipped);
  std::string s =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>SOLAR: " +
      html_escape(str(report, "source")) + " on " +
      html_escape(str(report.at("hardware"), "name")) + "</title>\n<style>\n" + kStyle +
      "</style>\n</head>\n<body>\n";
  s += header_section(report);
  s += provenance_section(report);
  s += fidelity_section(report, fidelities);
  s += headroom_section(report, fidelities);
  s += "<h2 id=\"roofline\">Roofline</h2>\n" + svg + "<p class=\"meta\" id=\"roofline-caption\">" +
       std::to_string(plotted) + " node(s) plotted at their SOL (run alone)";
  if (skipped > 0) s += "; " + std::to_string(skipped) + " without arithmetic or bytes not plotted";
  s += ". Diamonds: the whole program at each fidelity. Roofs: min(rate, intensity x DRAM "
       "bandwidth) for each rate the nodes use.</p>\n" +
       fallback_note(report, "roofline-fallbacks");
  s += node_section(report);
  s += fusion_section(report, fidelities);
  s += insights_section(report);
  s += devices_section(devices, fidelities);
  s += "<script>\n" + std::string(kScript) + "</script>\n</body>\n</html>\n";
  return s;
}

}  // namespace solar::report
