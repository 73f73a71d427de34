// `solar curve` (include/solar/report/curve.h, include/solar/cli/curve_command.h): the sweep, its
// JSON, CSV and SVG, and the command writing them.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "sol_test_util.h"
#include "solar/cli/curve_command.h"
#include "solar/hw/device.h"
#include "solar/report/curve.h"
#include "solar/sol/curve.h"
#include "solar/sol/precision.h"

namespace solar::report {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const sol::PrecisionPolicy& policy() {
  return sol::find_precision_policy(sol::kDefaultPrecisionPolicy);
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// GEMM 64 x 64 x 64, f32: A, B, C are 16384 B each; fused 49152 B, unfused the same (one node).
TEST(CacheCurve, SweepMarksAndLaws) {
  const einsum::Graph g = sol::testing::lift_gemm("f32", 64, 64, 64);
  const sol::Curve c = sol::make_curve(g, hw::load_builtin_device("H100-SXM"), policy());
  // 1 KiB .. 1 GiB is 21 powers of two, plus L2 (50e6 B) and SMEM (30818304 B).
  ASSERT_EQ(c.points.size(), 23u);
  EXPECT_EQ(c.points.front().capacity_bytes, 1024);
  EXPECT_EQ(c.points.back().capacity_bytes, int64_t{1} << 30);
  EXPECT_EQ(c.l2_bytes, 50000000);
  EXPECT_EQ(c.smem_bytes, 30818304);
  EXPECT_EQ(c.fused_bytes, 49152);
  int marks = 0;
  int64_t previous = -1;
  for (const sol::CurvePoint& p : c.points) {
    if (p.mark == "L2") {
      EXPECT_EQ(p.capacity_bytes, 50000000);
    } else if (p.mark == "SMEM") {
      EXPECT_EQ(p.capacity_bytes, 30818304);
    }
    marks += p.mark.empty() ? 0 : 1;
    ASSERT_TRUE(p.traffic_bytes);  // a 12 B tile always fits in 1 KiB
    EXPECT_GE(*p.traffic_bytes, c.fused_bytes);
    if (previous >= 0) {
      EXPECT_LE(*p.traffic_bytes, previous);
    }
    previous = *p.traffic_bytes;
    EXPECT_GE(p.time_s, c.fused_s);
  }
  EXPECT_EQ(marks, 2);
  // From 32 KiB: C whole (64 x 64 x 4 = 16384 B) with a column of A and a row of B (k tiled
  // by 1: 2 x 64 x 4 = 512 B), 16896 B, moves each once: the fused traffic. At 16 KiB it does
  // not fit.
  EXPECT_EQ(c.points[5].capacity_bytes, 32768);
  EXPECT_EQ(*c.points[5].traffic_bytes, 49152);
  EXPECT_GT(*c.points[4].traffic_bytes, 49152);
  // Same input, same bytes.
  const sol::Curve again = sol::make_curve(g, hw::load_builtin_device("H100-SXM"), policy());
  EXPECT_EQ(curve_to_svg(c), curve_to_svg(again));
  EXPECT_EQ(curve_to_json(c).dump(), curve_to_json(again).dump());
}

// The one-kernel floor, as the fused fidelity has it: on H100-SXM (min_kernel_s 0.4 us) every
// point of the 64^3 GEMM is at least 400 ns. Unfloored, the slowest point (1 KiB: 212992 B /
// 3.35e12 B/s = 63.58 ns) is far below it, so every point is exactly 400 ns; off, the 32 KiB
// point is the fused traffic's 49152 / 3.35e12 = 14.67 ns.
TEST(CacheCurve, KernelFloorBoundsEveryPoint) {
  const einsum::Graph g = sol::testing::lift_gemm("f32", 64, 64, 64);
  const hw::Device h100 = hw::load_builtin_device("H100-SXM");
  const sol::Curve on = sol::make_curve(g, h100, policy(), sol::CacheState::Cold, true);
  const sol::Curve off = sol::make_curve(g, h100, policy(), sol::CacheState::Cold, false);
  EXPECT_DOUBLE_EQ(on.kernel_floor_s, 0.4e-6);
  EXPECT_EQ(off.kernel_floor_s, 0);
  ASSERT_EQ(on.points.size(), off.points.size());
  for (size_t i = 0; i < on.points.size(); ++i) {
    EXPECT_DOUBLE_EQ(on.points[i].time_s, 0.4e-6) << i;
    EXPECT_LT(off.points[i].time_s, 64e-9) << i;
    EXPECT_EQ(on.points[i].traffic_bytes, off.points[i].traffic_bytes) << i;  // bytes unchanged
  }
  EXPECT_NEAR(off.points[5].time_s, 49152 / 3.35e12, 1e-15);
  EXPECT_EQ(curve_to_json(on)["kernel_floor_s"], 0.4e-6);
  EXPECT_TRUE(curve_to_json(off)["kernel_floor_s"].is_null());
  EXPECT_NE(render_curve(on).find("  kernel floor: 400 ns (one kernel, min_kernel_s;"),
            std::string::npos);
  EXPECT_EQ(render_curve(off).find("kernel floor"), std::string::npos);
  // A device without the figure: no floor, and the header says why.
  hw::Device bare = h100;
  bare.min_kernel_s.reset();
  const sol::Curve none = sol::make_curve(g, bare, policy());
  EXPECT_EQ(none.kernel_floor_s, 0);
  EXPECT_NE(render_curve(none).find("  kernel floor: none (H100-SXM has no min_kernel_s"),
            std::string::npos)
      << render_curve(none);
}

TEST(CacheCurve, JsonCsvSvg) {
  const einsum::Graph g = sol::testing::lift_gemm("f32", 64, 64, 64);
  const sol::Curve c = sol::make_curve(g, hw::load_builtin_device("H100-SXM"), policy());
  const json j = curve_to_json(c);
  EXPECT_EQ(j["points"].size(), 23u);
  EXPECT_EQ(j["hardware"]["l2_bytes"], 50000000);
  EXPECT_EQ(j["bytes"]["fused"], 49152);
  EXPECT_EQ(j["points"][6]["traffic_bytes"], 49152);
  const std::string csv = curve_to_csv(c);
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "capacity_bytes,mark,traffic_bytes,sol_s,groups,tiled_groups,cache_state");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 24);
  const std::string svg = curve_to_svg(c);
  EXPECT_EQ(svg.rfind("<svg ", 0), 0u);
  EXPECT_NE(svg.find("L2 47.68 MiB"), std::string::npos);    // 50e6 B = 47.68 MiB
  EXPECT_NE(svg.find("SMEM 29.39 MiB"), std::string::npos);  // 30818304 B = 29.39 MiB
  EXPECT_NE(svg.find("<polyline"), std::string::npos);
  EXPECT_EQ(svg.substr(svg.size() - 7), "</svg>\n");
}

TEST(CacheCurve, CommandWritesItsFiles) {
  const fs::path dir = fs::temp_directory_path() / ("solar_curve_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ostringstream out, err;
  const int rc = cli::curve_command({SOLAR_SOURCE_DIR "/examples/gemm.ir", "--hw", "H100-SXM",
                                     "--json", (dir / "c.json").string(), "--csv",
                                     (dir / "c.csv").string(), "--svg", (dir / "c.svg").string()},
                                    out, err);
  EXPECT_EQ(rc, 0) << err.str();
  EXPECT_NE(out.str().find("capacity"), std::string::npos);
  EXPECT_EQ(json::parse(read_file(dir / "c.json"))["points"].size(), 23u);
  EXPECT_NE(read_file(dir / "c.csv").find("capacity_bytes"), std::string::npos);
  EXPECT_NE(read_file(dir / "c.svg").find("</svg>"), std::string::npos);
  std::ostringstream out2, err2;
  EXPECT_EQ(cli::curve_command({SOLAR_SOURCE_DIR "/examples/gemm.ir"}, out2, err2), 1);
  EXPECT_NE(err2.str().find("--hw"), std::string::npos);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace solar::report
