// The report data model, its JSON form and the terminal renderers (include/solar/report/*.h):
// required keys and their values, determinism, every key documented in docs/report.md, the
// documented terminal example, and number formatting.
#include "solar/report/report.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "../../src/report/format.h"
#include "solar/einsum/graph.h"
#include "solar/hw/device.h"
#include "solar/ir/checker.h"
#include "solar/ir/parser.h"
#include "solar/report/sol_report.h"
#include "solar/report/whatif.h"
#include "solar/sol/precision.h"
#include "solar/sol/whatif.h"

namespace solar::report {
namespace {

using nlohmann::json;

const sol::PrecisionPolicy& default_policy() {
  return sol::find_precision_policy(sol::kDefaultPrecisionPolicy);
}

einsum::Graph lift_file(const std::string& relative) {
  const ir::Program p = ir::parse_file(SOLAR_SOURCE_DIR "/" + relative);
  einsum::Graph g = einsum::lift(p, ir::check_or_throw(p));
  g.source = relative;
  return g;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Without the kernel floor: the times below are the formulas' (nanoseconds, under H100-SXM's
// 0.4 us min_kernel_s); tests/sol/test_cache_state.cpp has the floor's.
Report mlp_report(const std::vector<sol::Fidelity>& fidelities = sol::implemented_fidelities()) {
  sol::AnalysisOptions unfloored;
  unfloored.kernel_floor = false;
  return make_report(lift_file("examples/mlp.ir"), hw::load_builtin_device("H100-SXM"),
                     default_policy(), fidelities, unfloored);
}

// A weight-format policy's stored weights, in the JSON and under the policy line. mlp.ir's
// linear weights w1 f32[16, 32] (512 elements) and w2 f32[32, 8] (256) in NVFP4, 4.5 bits an
// element: 512 x 72 / 128 = 288 B and 256 x 72 / 128 = 144 B, 432 B; the biases (rank 1) stay.
// Without such a policy, no key and no line.
TEST(ReportJson, StoredWeightsStateTheFormatTheTensorsAndTheirBytes) {
  const Report r =
      make_report(lift_file("examples/mlp.ir"), hw::load_builtin_device("B200"),
                  sol::find_precision_policy("nvfp4-weights"), sol::implemented_fidelities(), {});
  const json j = report_to_json(r);
  EXPECT_EQ(j["stored_weights"]["format"], "nvfp4");
  EXPECT_EQ(j["stored_weights"]["tensors"], (json{"w1", "w2"}));
  EXPECT_EQ(j["stored_weights"]["bytes"], 432);
  EXPECT_NE(render_report(r).find("weights stored as nvfp4 (scales included): 2 tensors"),
            std::string::npos);
  EXPECT_FALSE(report_to_json(mlp_report()).contains("stored_weights"));
  EXPECT_EQ(render_report(mlp_report()).find("weights stored as"), std::string::npos);
}

TEST(ReportJson, RequiredKeysAndValues) {
  // examples/mlp.ir: B = 4, I = 16, HID = 32, O = 8 (the MLP of tests/sol/test_analysis.cpp):
  // MACs 2048 + 1024 = 3072, other ops 256 + 32 = 288, FLOPs 2 * 3072 + 288 = 6432,
  // bytes unfused 5920, fused 3616; every node memory-bound on H100 (3.35e12 B/s).
  const json j = report_to_json(mlp_report());
  EXPECT_EQ(j["schema_version"], kSchemaVersion);
  EXPECT_EQ(j["source"], "mlp.ir");  // the file name, without directories
  EXPECT_EQ(j["sizes"], (json{{"B", 4}, {"HID", 32}, {"I", 16}, {"O", 8}}));
  EXPECT_EQ(j["hardware"]["name"], "H100-SXM");
  EXPECT_EQ(j["hardware"]["dram_bandwidth_bytes_per_s"], 3.35e12);
  EXPECT_EQ(j["hardware"]["overrides"], json::object());
  EXPECT_EQ(j["precision_policy"], "pytorch-cuda-default");
  EXPECT_EQ(j["flops_convention"], "1 MAC = 2 FLOPs; FLOPs = 2*MACs + other ops");
  EXPECT_EQ(j["verification"]["status"], "not_verified");
  EXPECT_EQ(j["verification"]["detail"], "IR file analysed directly");
  EXPECT_EQ(j["capture"]["framework"], "ir");
  EXPECT_EQ(j["capture"]["source"], "mlp.ir");
  EXPECT_TRUE(j["coverage"].is_null());
  EXPECT_EQ(j["totals"]["macs"], 3072);
  EXPECT_EQ(j["totals"]["other_ops"], 288);
  EXPECT_EQ(j["totals"]["flops"], 6432);
  // Cache-aware at H100's 50 MB L2: the four kernels are one tiled group moving each input,
  // weight and output once: the fused 3616 B.
  EXPECT_EQ(j["bytes"], (json{{"unfused", 5920}, {"fused", 3616}, {"cache_aware", 3616}}));
  EXPECT_EQ(j["cache"]["capacity_bytes"], 50000000);
  EXPECT_EQ(j["cache"]["groups"].size(), 1u);
  EXPECT_DOUBLE_EQ(j["sol"]["unfused_s"].get<double>(), 5920 / 3.35e12);
  EXPECT_DOUBLE_EQ(j["sol"]["fused_s"].get<double>(), 3616 / 3.35e12);
  EXPECT_EQ(j["sol"]["bottleneck_fused"], "memory");
  EXPECT_EQ(j["sol"]["bottleneck_unfused"], "memory");
  EXPECT_DOUBLE_EQ(j["sol"]["fused_over_unfused"].get<double>(),
                   (3616 / 3.35e12) / (5920 / 3.35e12));  // 0.6108

  ASSERT_EQ(j["nodes"].size(), 4u);
  const json& fc1 = j["nodes"][0];
  EXPECT_EQ(fc1["name"], "fc1");
  EXPECT_EQ(fc1["macs"], 2048);
  EXPECT_EQ(fc1["other_ops"], 0);
  EXPECT_EQ(fc1["bytes_unfused"], 2816);  // x 256 + w1 2048 + z 512
  EXPECT_DOUBLE_EQ(fc1["sol_unfused_s"].get<double>(), 2816 / 3.35e12);
  EXPECT_EQ(fc1["precision"], "fp32 vector");
  EXPECT_EQ(fc1["rate_flops_per_s"], 67e12);
  EXPECT_EQ(fc1["other_ops_precision"], "none");
  EXPECT_TRUE(fc1["other_ops_rate_flops_per_s"].is_null());
  EXPECT_FALSE(fc1["einsum"].get<std::string>().empty());
  const json& relu = j["nodes"][1];
  EXPECT_EQ(relu["macs"], 0);
  EXPECT_EQ(relu["other_ops"], 256);  // 4 * 32 points x (add, max)
  EXPECT_EQ(relu["precision"], "fp32 vector");
  EXPECT_EQ(relu["other_ops_precision"], "fp32 vector");
  EXPECT_EQ(relu["bottleneck"], "memory");
}

TEST(ReportJson, SameInputSameBytes) {
  EXPECT_EQ(report_to_json(mlp_report()).dump(2), report_to_json(mlp_report()).dump(2));
}

TEST(ReportJson, OverridesAndFallbacksAreRecorded) {
  hw::Device d = hw::load_builtin_device("TPU-v5e");
  hw::apply_override(d, "dram_bandwidth_bytes_per_s=1e12");
  const json j = report_to_json(make_report(lift_file("examples/mlp.ir"), d, default_policy(),
                                            {sol::Fidelity::Unfused, sol::Fidelity::Fused}));
  EXPECT_EQ(j["hardware"]["overrides"], (json{{"memory.DRAM.bandwidth_bytes_per_s", 1e12}}));
  EXPECT_EQ(j["hardware"]["dram_bandwidth_bytes_per_s"], 1e12);
  for (const json& n : j["nodes"]) {
    EXPECT_TRUE(n["precision_fallback"].get<bool>()) << n["name"];
    EXPECT_EQ(n["precision"],
              "fp32 vector->bf16 tensor (TPU-v5e has no fp32 vector or tf32 tensor rate)");
    EXPECT_EQ(n["rate_flops_per_s"], 197e12);
  }
}

TEST(ReportJson, OnlyTheRequestedFidelities) {
  const json j = report_to_json(mlp_report({sol::Fidelity::Fused}));
  EXPECT_EQ(j["bytes"], (json{{"fused", 3616}}));
  EXPECT_TRUE(j["sol"].contains("fused_s"));
  EXPECT_FALSE(j["sol"].contains("unfused_s"));
  EXPECT_FALSE(j["sol"].contains("fused_over_unfused"));
  EXPECT_TRUE(j["nodes"][0].contains("sol_unfused_s"));  // per-node costs always
}

// A key as docs/report.md writes it: a fidelity's name in it as `<fidelity>` ("unfused_s" ->
// "<fidelity>_s", "bottleneck_fused" -> "bottleneck_<fidelity>").
std::string doc_key(const std::string& key) {
  static const std::regex fidelity_key("^(bottleneck_|memory_)?(unfused|fused|cache_aware)(_s)?$");
  return std::regex_replace(key, fidelity_key, "$1<fidelity>$3");
}

// Every key path of `j` as documented: objects joined by '.', arrays as "[]". The walk stops at
// user-chosen names (children of `sizes` and `hardware.overrides`), at `devices[].sol` and
// `attainable.sol` (documented as the report's `sol`) and at `attainable.peak_flops_per_s` (the
// device JSON's rates, docs/devices.md).
void key_paths(const json& j, const std::string& prefix, std::set<std::string>& out) {
  if (j.is_array()) {
    for (const json& e : j) key_paths(e, prefix + "[]", out);
    return;
  }
  if (!j.is_object()) return;
  for (const auto& [key, value] : j.items()) {
    const std::string path = (prefix.empty() ? "" : prefix + ".") + doc_key(key);
    out.insert(path);
    if (path != "sizes" && path != "hardware.overrides" && path != "devices[].sol" &&
        path != "attainable.sol" && path != "attainable.peak_flops_per_s") {
      key_paths(value, path, out);
    }
  }
}

TEST(ReportDocs, EveryKeyIsDocumented) {
  const std::string doc = read_file(SOLAR_SOURCE_DIR "/docs/report.md");
  ASSERT_FALSE(doc.empty());
  std::set<std::string> paths;
  key_paths(report_to_json(mlp_report()), "", paths);
  // With the kernel floor (one_kernel_floor) and measured ceilings (attainable): H200-SXM.
  const json h200 =
      report_to_json(make_report(lift_file("examples/mlp.ir"), hw::load_builtin_device("H200-SXM"),
                                 default_policy(), sol::implemented_fidelities()));
  ASSERT_TRUE(h200.contains("attainable"));
  ASSERT_TRUE(h200.contains("one_kernel_floor"));
  key_paths(h200, "", paths);
  {
    std::set<std::string> at_ceilings, report_sol;
    key_paths(h200["attainable"]["sol"], "", at_ceilings);
    key_paths(h200["sol"], "", report_sol);
    EXPECT_EQ(at_ceilings, report_sol);
  }
  const std::vector<hw::Device> devices = {hw::load_builtin_device("H100-SXM"),
                                           hw::load_builtin_device("TPU-v5e")};
  MultiDeviceReport m;
  m.comparison = sol::compare_devices(lift_file("examples/mlp.ir"), devices, default_policy(),
                                      sol::implemented_fidelities(), 1e-3);
  const json multi = multi_device_to_json(m);
  key_paths(multi, "", paths);
  // devices[].sol is the report's sol, on that device: the same keys.
  for (const json& d : multi["devices"]) {
    if (d.contains("error") || d.contains("cache_error")) continue;  // TPU-v5e: no L2
    std::set<std::string> device_sol;
    std::set<std::string> report_sol;
    key_paths(d["sol"], "", device_sol);
    key_paths(report_to_json(mlp_report())["sol"], "", report_sol);
    EXPECT_EQ(device_sol, report_sol);
  }
  for (const std::string& path : paths) {
    EXPECT_NE(doc.find("`" + path + "`"), std::string::npos) << path << " is not in docs/report.md";
  }
}

TEST(ReportTerminal, ShowsTotalsFidelitiesNodesAndFallbacks) {
  hw::Device tpu = hw::load_builtin_device("TPU-v5e");
  sol::AnalysisOptions skip_cache;  // the TPU has no L2 in its device file
  skip_cache.cache_optional = true;
  const std::string s =
      render_report(make_report(lift_file("examples/mlp.ir"), tpu, default_policy(),
                                sol::implemented_fidelities(), skip_cache),
                    2);
  EXPECT_NE(s.find("SOL of mlp.ir on TPU-v5e (DRAM 819 GB/s)\n"), std::string::npos) << s;
  EXPECT_NE(s.find("work: 3.072 kMAC, 288 other ops, 6.432 kFLOP"), std::string::npos) << s;
  EXPECT_NE(s.find("\nunfused "), std::string::npos) << s;
  EXPECT_NE(s.find("\nfused "), std::string::npos) << s;
  EXPECT_NE(s.find("Slowest ops, each run alone as one kernel (2 of 4):"), std::string::npos) << s;
  EXPECT_NE(s.find("bf16 tensor*"), std::string::npos) << s;
  // The four nodes fall back alike: one line with their count; --details names each.
  const std::string label =
      "fp32 vector->bf16 tensor (TPU-v5e has no fp32 vector or tf32 tensor rate)\n";
  EXPECT_NE(s.find("  4 nodes: " + label), std::string::npos) << s;
  const std::string details =
      render_report(make_report(lift_file("examples/mlp.ir"), tpu, default_policy(),
                                sol::implemented_fidelities(), skip_cache),
                    2, true);
  EXPECT_NE(details.find("  fc1: " + label), std::string::npos) << details;
}

TEST(Format, UnitsScaleWithMagnitude) {
  using namespace detail;
  EXPECT_EQ(format_seconds(0), "0 ps");
  EXPECT_EQ(format_seconds(812e-9), "812 ns");
  EXPECT_EQ(format_seconds(3.2052e-5), "32.05 us");
  EXPECT_EQ(format_seconds(1.5e-3), "1.5 ms");
  EXPECT_EQ(format_seconds(2.25), "2.25 s");
  EXPECT_EQ(format_seconds(21.49e-12), "21.49 ps");
  EXPECT_EQ(format_seconds(1e-15), "0.001 ps");
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_bytes(5920), "5.92 kB");
  EXPECT_EQ(format_bytes(67141632), "67.14 MB");
  EXPECT_EQ(format_bytes(80e9), "80 GB");
  EXPECT_EQ(format_bandwidth(3.35e12), "3.35 TB/s");
  EXPECT_EQ(format_rate(67e12), "67 TFLOP/s");
  EXPECT_EQ(format_rate(2.25e15), "2.25 PFLOP/s");
  EXPECT_EQ(format_count(512), "512");
  EXPECT_EQ(format_count(36864, "MAC"), "36.86 kMAC");
  EXPECT_EQ(format_count(1073741824), "1.074 G");
  EXPECT_EQ(format_table({{"a", "bb", "x"}, {"ccc", "d", "yy"}}, "lr"),
            "a    bb  x\nccc   d  yy\n");
}

// H200-SXM's measured ceilings (S67): a 1024^3 f32 GEMM runs at the fp32 vector rate.
// Work 2 x 1024^3 = 2,147,483,648 FLOP; bytes 3 x 1024^2 x 4 = 12,582,912 B.
// Datasheet: compute 2,147,483,648 / 67e12 = 32.052 us, memory 12,582,912 / 4.8e12 = 2.621 us:
// SOL 32.052 us. At the ceilings: compute / 50.6e12 = 42.440 us, memory / 4.28e12 = 2.940 us:
// 42.440 us. A measured 40 us: headroom 40 / 32.052 = 1.248 against the SOL and 40 / 42.440 =
// 0.9425 against the attainable time (below 1: no violation, the ceilings are not a bound).
TEST(ReportAttainable, LineJsonAndHeadroomAtTheMeasuredCeilings) {
  const ir::Program p = ir::parse(
      "size N = 1024\ninput a : f32[N, N]\ninput b : f32[N, N]\noutput c : f32[N, N]\n"
      "kernel mm {\n  for i in 0..N, j in 0..N, k in 0..N:\n    c[i, j] += a[i, k] * b[k, j]\n}\n",
      "mm.ir");
  const einsum::Graph g = einsum::lift(p, ir::check_or_throw(p));
  const hw::Device h200 = hw::load_builtin_device("H200-SXM");
  Measured measured;
  measured.ms = 40e-3;  // 40 us
  SolReport s = make_sol_report(
      make_report(g, h200, default_policy(), sol::implemented_fidelities()), measured, 10);
  ASSERT_TRUE(s.report.attainable.has_value());
  const json& a = s.json["attainable"];
  EXPECT_DOUBLE_EQ(a["dram_bandwidth_bytes_per_s"].get<double>(), 4.28e12);
  EXPECT_DOUBLE_EQ(a["peak_flops_per_s"]["vector"]["fp32"].get<double>(), 50.6e12);
  EXPECT_NEAR(s.json["sol"]["fused_s"].get<double>(), 2147483648.0 / 67e12, 1e-12);
  EXPECT_NEAR(a["sol"]["fused_s"].get<double>(), 2147483648.0 / 50.6e12, 1e-12);
  EXPECT_NEAR(a["sol"]["unfused_s"].get<double>(), 2147483648.0 / 50.6e12, 1e-12);
  EXPECT_NEAR(a["sol"]["memory_fused_s"].get<double>(), 12582912.0 / 4.28e12, 1e-15);
  EXPECT_NE(s.table.find("attainable at H200-SXM's measured ceilings (its file's attainable "
                         "block; not a bound): unfused 42.44 us, fused 42.44 us, cache 42.44 us\n"
                         "  measured: DRAM 4.28 TB/s (datasheet 4.8 TB/s), "),
            std::string::npos)
      << s.table;
  EXPECT_NE(s.table.find("vector fp32 50.6 TFLOP/s (67 TFLOP/s); other rates at the datasheet's"),
            std::string::npos);
  const json& h = s.json["headroom"];
  EXPECT_NEAR(h["by_fidelity"]["fused"].get<double>(), 40e-6 / (2147483648.0 / 67e12), 1e-9);
  EXPECT_NEAR(h["attainable"]["by_fidelity"]["fused"].get<double>(),
              40e-6 / (2147483648.0 / 50.6e12), 1e-9);
  EXPECT_FALSE(h["violation"].get<bool>());
  EXPECT_NE(s.table.find("  unfused 1.248x fused 1.248x cache 1.248x\n  against the attainable "
                         "times (measured ceilings, not a bound): unfused 0.9425x fused 0.9425x "
                         "cache 0.9425x\n"),
            std::string::npos)
      << s.table;
  // A device without the block: no line, no key.
  const Report plain = make_report(g, hw::load_builtin_device("H100-SXM"), default_policy(),
                                   sol::implemented_fidelities());
  EXPECT_FALSE(plain.attainable.has_value());
  EXPECT_FALSE(report_to_json(plain).contains("attainable"));
  EXPECT_EQ(render_report(plain).find("attainable"), std::string::npos);
}

}  // namespace
}  // namespace solar::report
