// The HTML report, the trace and the CSV (include/solar/report/html.h, exports.h): content of
// examples/mlp.ir's report checked element by element, self-containment, determinism, and a
// fidelity the renderer does not know appearing because the JSON lists it.
#include "solar/report/html.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "solar/einsum/graph.h"
#include "solar/hw/device.h"
#include "solar/ir/checker.h"
#include "solar/ir/parser.h"
#include "solar/report/exports.h"
#include "solar/report/report.h"
#include "solar/report/sections.h"
#include "solar/report/whatif.h"
#include "solar/sol/headroom.h"
#include "solar/sol/insights.h"
#include "solar/sol/precision.h"
#include "solar/sol/whatif.h"

namespace solar::report {
namespace {

using nlohmann::json;

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

// The full report of examples/mlp.ir on H100-SXM as `solar sol --measured-ms 0.001
// --kernel-floor off` builds it: without the floor the times are the formulas' (nanoseconds,
// under H100-SXM's 0.4 us min_kernel_s), so the arithmetic below shows. mlp.ir: fc1 2,048 MACs,
// bias_relu 256 other ops, fc2 1,024 MACs, bias 32 other ops; every node's main work at the fp32
// vector rate (67e12). Bytes unfused 5,920, fused 3,616.
struct Mlp {
  Report report;
  json j;
};

Mlp mlp(double measured_s = 1e-6) {
  const ir::Program p = ir::parse_file(SOLAR_SOURCE_DIR "/examples/mlp.ir");
  einsum::Graph g = einsum::lift(p, ir::check_or_throw(p));
  g.source = "examples/mlp.ir";
  sol::AnalysisOptions unfloored;
  unfloored.kernel_floor = false;
  Report r = make_report(std::move(g), hw::load_builtin_device("H100-SXM"),
                         sol::find_precision_policy(sol::kDefaultPrecisionPolicy),
                         sol::implemented_fidelities(), unfloored);
  json j = report_to_json(r);
  j["insights"] = insights_to_json(sol::find_insights(r.graph, r.analysis));
  j["headroom"] = headroom_to_json(
      sol::compute_headroom(r.analysis, "H100-SXM", {measured_s, "cpu-test", "test"}));
  return {std::move(r), std::move(j)};
}

json devices(const Report& r) {
  MultiDeviceReport m;
  m.comparison = sol::compare_devices(
      r.graph, {hw::load_builtin_device("H100-SXM"), hw::load_builtin_device("A6000")},
      sol::find_precision_policy(sol::kDefaultPrecisionPolicy), sol::implemented_fidelities(),
      1e-6);
  return multi_device_to_json(m);
}

TEST(Html, RooflineTablesAndSections) {
  const Mlp m = mlp();
  const std::string html = render_html(m.j, devices(m.report));
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  // One point per node (all four have FLOPs and bytes), one roof (every node at fp32 vector),
  // one diamond per fidelity (unfused, fused, and every other the report lists).
  const size_t fidelities = m.j["bytes"].size();
  ASSERT_GE(fidelities, 2u);
  EXPECT_EQ(count(html, "<circle class=\"node\""), 4u);
  EXPECT_EQ(count(html, "<polyline class=\"roof\""), 1u);
  EXPECT_NE(html.find("data-precision=\"fp32 vector\" data-rate=\"67000000000000\""),
            std::string::npos);
  EXPECT_EQ(count(html, "<path class=\"fidelity-marker\""), fidelities);
  EXPECT_NE(html.find("data-fidelity=\"unfused\""), std::string::npos);
  EXPECT_NE(html.find("data-fidelity=\"fused\""), std::string::npos);
  // The node table: 4 rows, sortable, sorted by SOL time when the script runs.
  const size_t table = html.find("<table id=\"node-table\" class=\"sortable\"");
  ASSERT_NE(table, std::string::npos);
  const std::string nodes = html.substr(table, html.find("</table>", table) - table);
  EXPECT_EQ(count(nodes, "<tr data-index="), 4u);
  EXPECT_NE(nodes.find("data-default-sort=\"sol_unfused_s\""), std::string::npos);
  // Cards side by side: unfused 5920 / 3.35e12 = 1.767 ns, fused 3616 / 3.35e12 = 1.079 ns.
  EXPECT_EQ(count(html, "<div class=\"card fidelity\""), fidelities);
  EXPECT_NE(html.find("<div class=\"time\">1.767 ns</div>"), std::string::npos);
  EXPECT_NE(html.find("<div class=\"time\">1.079 ns</div>"), std::string::npos);
  // Headroom 1 us / 1.767 ns = 1e-6 * 3.35e12 / 5920 = 565.88 (unfused), 3.35e6 / 3616 =
  // 926.44 (fused);
  // measured on cpu-test, not the target: a what-if, said plainly.
  EXPECT_NE(html.find("<td class=\"num\">565.9x</td>"), std::string::npos);
  EXPECT_NE(html.find("<td class=\"num\">926.4x</td>"), std::string::npos);
  EXPECT_NE(html.find("headroom is a what-if"), std::string::npos);
  // Fusion opportunities: z, a, u (1.024 kB, 1.024 kB, 256 B).
  const size_t fusion = html.find("<table id=\"fusion-table\">");
  ASSERT_NE(fusion, std::string::npos);
  EXPECT_EQ(count(html.substr(fusion, html.find("</table>", fusion) - fusion), "<tr>"), 4u);
  // Cross-platform: 2 devices (+ the header row); inverse roofline: 2 devices x each fidelity.
  const size_t dev = html.find("<table id=\"device-table\">");
  const size_t prov = html.find("<table id=\"provision-table\">");
  ASSERT_NE(dev, std::string::npos);
  ASSERT_NE(prov, std::string::npos);
  EXPECT_EQ(count(html.substr(dev, html.find("</table>", dev) - dev), "<tr>"), 3u);
  EXPECT_EQ(count(html.substr(prov, html.find("</table>", prov) - prov), "<tr>"),
            1 + 2 * fidelities);
}

TEST(Html, SelfContainedAndDeterministic) {
  const Mlp m = mlp();
  const std::string html = render_html(m.j, nullptr);
  EXPECT_EQ(html, render_html(mlp().j, nullptr));
  // No resource from anywhere: the only URL is the SVG namespace, which is never fetched.
  EXPECT_EQ(count(html, "http"), 1u);
  EXPECT_NE(html.find("xmlns=\"http://www.w3.org/2000/svg\""), std::string::npos);
  EXPECT_EQ(count(html, "src="), 0u);
  EXPECT_EQ(count(html, "<link"), 0u);
  EXPECT_EQ(html.find("device-table"), std::string::npos);  // no devices given: no table
}

TEST(Html, EveryFidelityTheReportListsAppears) {
  // A fidelity the renderer was not written for ("future", with its keys) shows up as a card
  // and a marker, after the registry's ones.
  Mlp m = mlp();
  const size_t known = m.j["bytes"].size();
  m.j["bytes"]["future"] = 4000;
  m.j["sol"]["future_s"] = 1.5e-9;
  m.j["sol"]["memory_future_s"] = 1.5e-9;
  m.j["sol"]["bottleneck_future"] = "memory";
  const std::string html = render_html(m.j, nullptr);
  EXPECT_EQ(count(html, "<div class=\"card fidelity\""), known + 1);
  EXPECT_EQ(count(html, "<path class=\"fidelity-marker\""), known + 1);
  EXPECT_LT(html.find("data-fidelity=\"fused\""), html.find("data-fidelity=\"future\""));
  EXPECT_NE(html.find("<h3>future</h3><div class=\"time\">1.5 ns</div>"), std::string::npos);
}

TEST(Html, EscapesNames) {
  Mlp m = mlp();
  m.j["source"] = "<script>x&y</script>.py";
  const std::string html = render_html(m.j, nullptr);
  EXPECT_EQ(html.find("<script>x"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;x&amp;y&lt;/script&gt;.py"), std::string::npos);
}

// Every value of attribute `attr` on the elements whose tag starts with `open`, in order.
std::vector<double> attribute_values(const std::string& html, const std::string& open,
                                     const std::string& attr) {
  std::vector<double> out;
  const std::regex value(" " + attr + "=\"([-0-9.]+)\"");
  for (size_t p = html.find(open); p != std::string::npos; p = html.find(open, p + 1)) {
    const std::string tag = html.substr(p, html.find('>', p) - p);
    std::smatch m;
    if (std::regex_search(tag, m, value)) out.push_back(std::stod(m[1].str()));
  }
  return out;
}

constexpr const char* kFallback = "bf16 vector->fp32 vector (H100-SXM has no bf16 vector rate)";

TEST(Html, FallbackLabelsShortInTheCellAndOnTheRoofWholeInTooltipAndFootnote) {
  // bias_relu's work wanted bf16 vector and ran at fp32 vector (same rate, 67e12): its cell and
  // the roof say "fp32 vector*"; the whole label is in the tooltip and in a footnote under the
  // plot and under the table, never as the text of a cell or a roof.
  Mlp m = mlp();
  m.j["nodes"][1]["precision"] = kFallback;
  m.j["nodes"][1]["precision_used"] = "fp32 vector*";  // as the report writes it beside
  const std::string html = render_html(m.j, nullptr);
  const std::string escaped = "bf16 vector-&gt;fp32 vector (H100-SXM has no bf16 vector rate)";
  EXPECT_EQ(count(html, "<polyline class=\"roof\""), 2u);    // one per (label, rate), as before
  EXPECT_EQ(count(html, "<text class=\"roof-label\""), 1u);  // one per rate and unit used
  // The roofs at one rate come in label order: "bf16 vector->..." before "fp32 vector".
  EXPECT_NE(html.find(">fp32 vector*<title>" + escaped + "; fp32 vector: 67 TFLOP/s</title>"),
            std::string::npos);
  EXPECT_NE(
      html.find("<td data-value=\"" + escaped + "\" title=\"" + escaped + "\">fp32 vector*</td>"),
      std::string::npos);
  EXPECT_EQ(count(html, "<td data-value=\"fp32 vector\">fp32 vector</td>"), 3u);
  EXPECT_EQ(count(html, ">" + escaped + "<"), 0u);
  const std::string note =
      "* precision fallback (the device lacks the wanted rate): " + escaped + " (1 node).</p>";
  EXPECT_NE(html.find("<p class=\"meta\" id=\"roofline-fallbacks\">" + note), std::string::npos);
  EXPECT_NE(html.find("<p class=\"meta\" id=\"node-fallbacks\">" + note), std::string::npos);
  // Without a fallback, no '*' and no footnote.
  const std::string plain = render_html(mlp().j, nullptr);
  EXPECT_EQ(plain.find("fallbacks\""), std::string::npos);
  EXPECT_EQ(plain.find("vector*"), std::string::npos);
}

TEST(Html, RoofLabelsStackedApartAboveTheLegend) {
  // Four rates, three of them within 12% of each other (a few px apart on a log axis of
  // several decades): the labels keep the rates' order, each 15 px (a 12 px line and a gap)
  // below the one above, all below the plot's top and 8 px above the legend's box.
  Mlp m = mlp();
  const std::pair<const char*, double> rates[] = {{"bf16 tensor", 989e12},
                                                  {"fp32 vector", 67e12},
                                                  {"fp16 vector", 66e12},
                                                  {"tf32 tensor", 60e12}};
  for (size_t i = 0; i < 4; ++i) {
    m.j["nodes"][i]["precision"] = rates[i].first;
    m.j["nodes"][i]["precision_used"] = rates[i].first;  // none a fallback
    m.j["nodes"][i]["rate_flops_per_s"] = rates[i].second;
  }
  const std::string html = render_html(m.j, nullptr);
  const std::vector<double> y = attribute_values(html, "<text class=\"roof-label\"", "y");
  ASSERT_EQ(y.size(), 4u);
  const std::vector<double> box = attribute_values(html, "<rect class=\"legend-box\"", "y");
  ASSERT_EQ(box.size(), 1u);
  EXPECT_GE(y[0], 20.0 + 10);  // Axes::kTop + 10
  for (size_t i = 1; i < y.size(); ++i) EXPECT_GE(y[i] - y[i - 1], 15.0 - 1e-9) << i;
  EXPECT_LE(y.back(), box[0] - 8);
  // In the rates' order, top down.
  size_t at = 0;
  for (const auto& [name, rate] : rates) {
    const size_t found = html.find("<text class=\"roof-label\"", at);
    ASSERT_NE(found, std::string::npos);
    EXPECT_EQ(html.substr(html.find('>', found) + 1, std::string(name).size()), name);
    at = found + 1;
  }
  // The legend's entries: one per fidelity, inside its box.
  const std::vector<double> entries = attribute_values(html, "<text class=\"legend-entry\"", "y");
  EXPECT_EQ(entries.size(), m.j["bytes"].size());
  EXPECT_GT(entries.front(), box[0]);
}

TEST(Html, NumbersOnOneLineNamesBreakAtUnderscores) {
  // A number's cell is class "num" (white-space:nowrap), in the node table by its column, in the
  // other tables by its text; a node name may break after each '_' and '.' (<wbr>), the node
  // table's other cells never; other text is left as it was.
  Mlp m = mlp();
  m.j["nodes"][0]["name"] = "scaled_dot_product_attention_logits2";
  const std::string html = render_html(m.j, devices(m.report));
  EXPECT_NE(html.find("td.num,#node-table td{white-space:nowrap}"), std::string::npos);
  EXPECT_NE(
      html.find("<td data-value=\"scaled_dot_product_attention_logits2\">scaled_<wbr>dot_<wbr>"
                "product_<wbr>attention_<wbr>logits2</td>"),
      std::string::npos);
  EXPECT_NE(html.find("<td data-value=\"fp32 vector\">fp32 vector</td>"), std::string::npos);
  // fc1: 2,048 MACs, 4,096 FLOPs, 2,816 bytes (mlp.ir).
  EXPECT_NE(html.find("<td data-value=\"2048\" class=\"num\">2.048 k</td><td data-value=\"0\" "
                      "class=\"num\">0</td><td data-value=\"4096\" class=\"num\">4.096 k</td><td "
                      "data-value=\"2816\" class=\"num\">2.816 kB</td>"),
            std::string::npos);
  // Every cell of every table: class "num" exactly when its text reads as a number.
  const std::regex number(R"(^[-+]?\d[\d.,]*(e[-+]?\d+)?( ?[A-Za-z%/]+)?$)");
  const std::regex cell("<td([^>]*)>([^<]*)</td>");
  size_t numbers = 0, cells = 0;
  for (auto it = std::sregex_iterator(html.begin(), html.end(), cell); it != std::sregex_iterator();
       ++it, ++cells) {
    const bool num = (*it)[1].str().find("class=\"num\"") != std::string::npos;
    EXPECT_EQ(num, std::regex_match((*it)[2].str(), number)) << (*it)[0].str();
    numbers += num ? 1 : 0;
  }
  EXPECT_GT(cells, 100u);
  EXPECT_GT(numbers, 60u);
}

TEST(Trace, UnfusedTimelineInProgramOrder) {
  const json t = json::parse(render_trace(mlp().j));
  const json& ev = t.at("traceEvents");
  ASSERT_EQ(ev.size(), 2u + 4u);  // process and thread names, then one event per node
  // fc1 first, at 0, lasting 2816 / 3.35e12 s = 0.0008406 us; bias_relu starts where it ends.
  EXPECT_EQ(ev[2]["name"], "fc1");
  EXPECT_EQ(ev[2]["ph"], "X");
  EXPECT_EQ(ev[2]["ts"], 0.0);
  EXPECT_DOUBLE_EQ(ev[2]["dur"].get<double>(), 2816 / 3.35e12 * 1e6);
  EXPECT_EQ(ev[3]["name"], "bias_relu");
  EXPECT_DOUBLE_EQ(ev[3]["ts"].get<double>(), ev[2]["dur"].get<double>());
  double end = 0;
  for (size_t i = 2; i < ev.size(); ++i)
    end = ev[i]["ts"].get<double>() + ev[i]["dur"].get<double>();
  EXPECT_NEAR(end, 5920 / 3.35e12 * 1e6, 1e-15);  // the unfused SOL
}

TEST(Csv, OneLinePerNode) {
  const std::string csv = render_csv(mlp().j);
  EXPECT_EQ(count(csv, "\n"), 5u);
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "name,kind,op,precision,macs,other_ops,flops,bytes_read,bytes_written,bytes_unfused,"
            "compute_s,memory_s,sol_unfused_s,bottleneck,cache_state");
  // fc1: 2,048 MACs, 4,096 FLOPs; reads x 4*16*4 = 256 + w1 16*32*4 = 2,048 = 2,304 bytes,
  // writes z 4*32*4 = 512: 2,816.
  EXPECT_EQ(
      csv.find("\nfc1,einsum,kernel,fp32 vector,2048,0,4096,2304,512,2816,") != std::string::npos,
      true);
}

TEST(Sections, TerminalLines) {
  // A chain (A(50x5) B(5x100) C(100x10): (A B) C = 75,000 MACs, A (B C) = 7,500; saves
  // 75,000 - 7,500 = 67,500 MACs, 2 x 67,500 = 135,000 FLOPs; no steps, so no einsum line) and
  // four fusions, of which the table shows three.
  sol::Insights in;
  in.chains.push_back({{"ab", "abc"}, {"A", "B", "C"}, {75000, "((A B) C)"}, {7500, "(A (B C))"}});
  for (const char* t : {"p", "q", "r", "s"}) in.fusions.push_back({t, "x", {"y", "z"}, 2048, 0});
  EXPECT_EQ(render_insights(in),
            "Insights:\n"
            "  contraction order of ab, abc: ((A B) C) 75 kMAC -> (A (B C)) 7.5 kMAC, saves 67.5 "
            "kMAC (135 kFLOP)\n"
            "  fuse x -> y, z (keep p on chip): saves 2.048 kB of DRAM traffic\n"
            "  fuse x -> y, z (keep q on chip): saves 2.048 kB of DRAM traffic\n"
            "  fuse x -> y, z (keep r on chip): saves 2.048 kB of DRAM traffic\n"
            "  (1 more fusion opportunities in the JSON report)\n");
  EXPECT_EQ(render_insights(sol::Insights{}), "");
  // Headroom: mlp.ir's bound is the fused 3616 / 3.35e12 = 1.079 ns; 1 ns is below it.
  const Mlp m = mlp();
  const std::string h =
      render_headroom(sol::compute_headroom(m.report.analysis, "H100-SXM", {1e-9, "H100-SXM", ""}));
  EXPECT_NE(h.find("  measured on H100-SXM\n"), std::string::npos);
  EXPECT_NE(h.find("  VIOLATION: the measured time is below the SOL bound 1.079 ns"),
            std::string::npos);
  EXPECT_EQ(format_ratio(0.98765), "0.9877");
  EXPECT_EQ(format_ratio(565.878), "565.9");
  EXPECT_EQ(format_ratio(28293.9), "28294");
}

// Every key path of the insights and headroom sections (arrays as "[]", a fidelity's name as
// `<fidelity>`) is in docs/report.md.
void key_paths(const json& j, const std::string& prefix, std::set<std::string>& out) {
  if (j.is_array()) {
    for (const json& e : j) key_paths(e, prefix + "[]", out);
    return;
  }
  if (!j.is_object()) return;
  for (const auto& [key, value] : j.items()) {
    const bool fidelity = key == "unfused" || key == "fused" || key == "cache_aware";
    const std::string path = prefix + "." + (fidelity ? "<fidelity>" : key);
    out.insert(path);
    key_paths(value, path, out);
  }
}

TEST(ReportDocs, InsightsAndHeadroomKeysAreDocumented) {
  std::ifstream file(SOLAR_SOURCE_DIR "/docs/report.md");
  const std::string doc{std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
  ASSERT_FALSE(doc.empty());
  // One entry of each list, so that every key appears.
  const Mlp m = mlp();
  sol::Insights in = sol::find_insights(m.report.graph, m.report.analysis);
  in.chains.push_back({{"ab", "abc"}, {"A", "B", "C"}, {75000, "((A B) C)"}, {7500, "(A (B C))"}});
  in.notes.push_back("a note");
  std::set<std::string> paths;
  key_paths(insights_to_json(in), "insights", paths);
  key_paths(
      headroom_to_json(sol::compute_headroom(m.report.analysis, "H100-SXM", {1e-3, "x", "y"})),
      "headroom", paths);
  EXPECT_GT(paths.size(), 20u);
  for (const std::string& path : paths) {
    EXPECT_NE(doc.find("`" + path + "`"), std::string::npos) << path << " is not in docs/report.md";
  }
}

}  // namespace
}  // namespace solar::report
