// The device database: every built-in device loads and obeys sanity laws; figures spot-checked by
// hand against /work/shared/reference/hardware.md (arithmetic in the test); file validation with
// exact `file:line:col` messages; overrides; the JSON form.
#include "solar/hw/device.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "solar/util/error.h"

namespace solar::hw {
namespace {

namespace fs = std::filesystem;

constexpr double kTera = 1e12;

// A fresh directory under the system temp dir, removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ =
        fs::temp_directory_path() / ("solar_hw_" + std::to_string(::getpid()) + "_" + info->name());
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const fs::path& path() const { return path_; }

  std::string write(const std::string& name, const std::string& text) const {
    const fs::path p = path_ / name;
    std::ofstream(p, std::ios::binary) << text;
    return p.string();
  }

 private:
  fs::path path_;
};

// The message of the UserError `f` throws ("" and a test failure when it throws none).
template <class F>
std::string user_error(F&& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a UserError";
  return "";
}

double rate(const Device& d, ComputeUnit u, Precision p) {
  const auto& f = d.peak(u, p);
  return f ? f->value : -1;
}
double tensor(const Device& d, Precision p) { return rate(d, ComputeUnit::Tensor, p); }
double vector(const Device& d, Precision p) { return rate(d, ComputeUnit::Vector, p); }
double capacity(const Device& d, MemoryLevel l) {
  const auto& f = d.level(l).capacity_bytes;
  return f ? f->value : -1;
}

// ---------------------------------------------------------------------------------------------
// Names and the registry

TEST(HwNames, XMacroListsRoundTrip) {
#define SOLAR_X(e, s)                         \
  EXPECT_EQ(precision_name(Precision::e), s); \
  EXPECT_EQ(precision_from_name(s), Precision::e);
  SOLAR_PRECISIONS(SOLAR_X)
#undef SOLAR_X
#define SOLAR_X(e, s)                              \
  EXPECT_EQ(memory_level_name(MemoryLevel::e), s); \
  EXPECT_EQ(memory_level_from_name(s), MemoryLevel::e);
  SOLAR_MEMORY_LEVELS(SOLAR_X)
#undef SOLAR_X
#define SOLAR_X(e, s)                              \
  EXPECT_EQ(compute_unit_name(ComputeUnit::e), s); \
  EXPECT_EQ(compute_unit_from_name(s), ComputeUnit::e);
  SOLAR_COMPUTE_UNITS(SOLAR_X)
#undef SOLAR_X
#define SOLAR_X(e, s)               \
  EXPECT_EQ(link_name(Link::e), s); \
  EXPECT_EQ(link_from_name(s), Link::e);
  SOLAR_LINKS(SOLAR_X)
#undef SOLAR_X
  EXPECT_EQ(kPrecisionCount, 8u);
  EXPECT_EQ(precision_from_name("FP32"), std::nullopt);  // one spelling per concept
  EXPECT_EQ(memory_level_from_name("dram"), std::nullopt);
}

TEST(HwRegistry, NamesAreTheIssuesList) {
  const std::vector<std::string> expected = {"B200",
                                             "GB200",
                                             "H200-SXM",
                                             "H100-SXM",
                                             "H100-PCIe",
                                             "A100-SXM-80GB",
                                             "A100-PCIe-40GB",
                                             "A6000",
                                             "L40S",
                                             "L4",
                                             "RTX-4090",
                                             "Jetson-AGX-Thor",
                                             "Jetson-AGX-Orin-64GB",
                                             "MI300X",
                                             "MI355X",
                                             "TPU-v5e",
                                             "TPU-v5p",
                                             "TPU-v6e"};
  EXPECT_EQ(builtin_device_names(), expected);
}

// A file added to data/hardware without a registry entry (or the reverse) fails here.
TEST(HwRegistry, EveryFileIsRegisteredAndEveryNameHasAFile) {
  std::set<std::string> files;
  for (const auto& entry : fs::directory_iterator(fs::path(SOLAR_SOURCE_DIR) / "data/hardware")) {
    files.insert(entry.path().filename().string());
  }
  std::set<std::string> names;
  for (const std::string& n : builtin_device_names()) names.insert(n + ".yaml");
  EXPECT_EQ(files, names);
}

TEST(HwRegistry, EveryBuiltinDeviceLoads) {
  for (const std::string& name : builtin_device_names()) {
    SCOPED_TRACE(name);
    const Device d = load_builtin_device(name);
    EXPECT_EQ(d.name, name);
    EXPECT_FALSE(d.vendor.empty());
    EXPECT_FALSE(d.description.empty());
    EXPECT_GT(d.dram_bandwidth_bytes_per_s(), 0);
    EXPECT_TRUE(d.level(MemoryLevel::Dram).exists());
    EXPECT_EQ(resolve_device(name), d);
  }
}

TEST(HwRegistry, UnknownNameListsValidNamesAndSuggests) {
  const std::string m = user_error([] { load_builtin_device("h100-sxm"); });
  EXPECT_NE(m.find("unknown device 'h100-sxm' (did you mean 'H100-SXM'?)"), std::string::npos) << m;
  EXPECT_NE(m.find("built-in devices: B200, GB200, H200-SXM,"), std::string::npos) << m;
  EXPECT_NE(m.find("TPU-v6e (or give a device file ending in .yaml)"), std::string::npos) << m;
  EXPECT_NE(user_error([] {
              load_builtin_device("H100");
            }).find("(did you mean 'H100-SXM' or 'H100-PCIe'?)"),
            std::string::npos);
  EXPECT_NE(user_error([] { load_builtin_device("MI300"); }).find("(did you mean 'MI300X'?)"),
            std::string::npos);
  EXPECT_EQ(user_error([] { load_builtin_device("zzz"); }).find("did you mean"), std::string::npos);
}

TEST(HwRegistry, DataDirEnvironmentVariableIsAuthoritative) {
  const char* old = std::getenv("SOLAR_DATA_DIR");
  const std::optional<std::string> saved = old ? std::optional<std::string>(old) : std::nullopt;
  TempDir tmp;
  ::setenv("SOLAR_DATA_DIR", tmp.path().c_str(), 1);  // a folder without hardware/
  const std::string m = user_error([] { load_builtin_device("H100-SXM"); });
  if (saved) {
    ::setenv("SOLAR_DATA_DIR", saved->c_str(), 1);
  } else {
    ::unsetenv("SOLAR_DATA_DIR");
  }
  EXPECT_NE(m.find("has no 'hardware' folder"), std::string::npos) << m;
  EXPECT_EQ(data_dir(), saved.value_or(data_dir()));
}

// ---------------------------------------------------------------------------------------------
// Every figure of every built-in device

TEST(HwData, EveryFigureCitesTheReference) {
  const std::regex source_id(R"(\bS[0-9]+\b)");
  for (const std::string& name : builtin_device_names()) {
    for (const FigureEntry& entry : list_figures(load_builtin_device(name))) {
      SCOPED_TRACE(name + " " + entry.path);
      EXPECT_FALSE(entry.figure.source.empty());
      EXPECT_TRUE(std::regex_search(entry.figure.source, source_id)) << entry.figure.source;
      EXPECT_GT(entry.figure.value, 0);
    }
  }
}

// The reference marks few figures unconfirmed; only these are kept (docs/devices.md says why).
TEST(HwData, UnconfirmedFiguresAreExactlyTheDocumentedOnes) {
  std::set<std::string> found;
  for (const std::string& name : builtin_device_names()) {
    for (const FigureEntry& entry : list_figures(load_builtin_device(name))) {
      if (entry.figure.source.find("unconfirmed") != std::string::npos) {
        found.insert(name + " " + entry.path);
      }
    }
  }
  const std::set<std::string> expected = {
      "H200-SXM memory.L2.capacity_bytes",
      "Jetson-AGX-Orin-64GB peak_flops_per_s.tensor.bf16",
      "Jetson-AGX-Orin-64GB peak_flops_per_s.tensor.fp16",
  };
  EXPECT_EQ(found, expected);
}

// rate(a) <= factor * rate(b) wherever the device has both.
struct RateLaw {
  ComputeUnit unit_a;
  Precision a;
  double factor;
  ComputeUnit unit_b;
  Precision b;
};

// Laws that catch a sparse figure taken for dense, or a unit slip (TFLOP/s written as FLOP/s).
TEST(HwData, SanityLaws) {
  using enum Precision;
  using enum ComputeUnit;
  constexpr double kHalving = 2 * 1.03;  // vendors round dense and sparse figures separately
  const std::vector<RateLaw> laws = {
      {Vector, Fp32, 1, Tensor, Bf16},        // tensor bf16 >= vector fp32
      {Tensor, Fp16, 1, Tensor, Bf16},        // fp16 == bf16 on every listed device
      {Tensor, Bf16, 1, Tensor, Fp16},        //
      {Tensor, Fp8, kHalving, Tensor, Bf16},  // halving the width at most doubles the rate
      {Tensor, Fp4, kHalving, Tensor, Fp8},   //
      {Vector, Fp64, 1, Tensor, Fp64},        // the tensor path is never slower
      {Vector, Fp64, 1, Vector, Fp32},        //
  };
  for (const std::string& name : builtin_device_names()) {
    SCOPED_TRACE(name);
    const Device d = load_builtin_device(name);
    EXPECT_TRUE(d.peak(Tensor, Bf16).has_value());  // every device in the issue runs bf16
    for (const RateLaw& law : laws) {
      const auto& a = d.peak(law.unit_a, law.a);
      const auto& b = d.peak(law.unit_b, law.b);
      if (a && b) {
        EXPECT_LE(a->value, law.factor * b->value)
            << compute_unit_name(law.unit_a) << " " << precision_name(law.a) << " vs "
            << compute_unit_name(law.unit_b) << " " << precision_name(law.b);
      }
    }
    for (const FigureEntry& entry : list_figures(d)) {
      SCOPED_TRACE(entry.path);
      const double v = entry.figure.value;
      if (entry.path.starts_with("peak_flops_per_s.")) {
        EXPECT_TRUE(v >= 1e11 && v <= 1e17) << v;
      } else if (entry.path.ends_with("bandwidth_bytes_per_s")) {
        EXPECT_TRUE(v >= 1e10 && v <= 1e14) << v;
      } else if (entry.path.ends_with("capacity_bytes")) {
        EXPECT_TRUE(v >= 1e6 && v <= 1e12) << v;
      } else if (entry.path == "clock_hz") {
        EXPECT_TRUE(v >= 0.5e9 && v <= 3e9) << v;
      }
    }
    if (d.level(MemoryLevel::L2).exists()) {
      EXPECT_LT(capacity(d, MemoryLevel::L2), capacity(d, MemoryLevel::Dram));
    }
  }
}

// Spot checks: each expectation is the reference's figure, with the arithmetic written out.
TEST(HwData, SpotChecksAgainstTheReference) {
  using enum Precision;
  const Device h100 = load_builtin_device("H100-SXM");
  EXPECT_DOUBLE_EQ(tensor(h100, Bf16), 1979e12 / 2);  // 1,979 sparse halved
  EXPECT_DOUBLE_EQ(tensor(h100, Bf16), 989.5 * kTera);
  EXPECT_DOUBLE_EQ(tensor(h100, Fp8), 3958e12 / 2);
  EXPECT_DOUBLE_EQ(tensor(h100, Tf32), 989e12 / 2);
  EXPECT_DOUBLE_EQ(vector(h100, Fp32), 67 * kTera);
  EXPECT_DOUBLE_EQ(h100.dram_bandwidth_bytes_per_s(), 3.35e12);
  EXPECT_DOUBLE_EQ(capacity(h100, MemoryLevel::Dram), 80e9);
  EXPECT_DOUBLE_EQ(capacity(h100, MemoryLevel::L2), 50e6);
  EXPECT_DOUBLE_EQ(capacity(h100, MemoryLevel::Smem), 228.0 * 1024 * 132);  // per-SM max x SMs
  EXPECT_FALSE(h100.peak(ComputeUnit::Tensor, Fp4).has_value());            // Hopper: no FP4

  const Device rtx = load_builtin_device("RTX-4090");
  EXPECT_DOUBLE_EQ(tensor(rtx, Bf16), 165.2 * kTera);  // FP32 accumulate, not 330.3
  EXPECT_DOUBLE_EQ(tensor(rtx, Fp16), 165.2 * kTera);
  EXPECT_DOUBLE_EQ(tensor(rtx, Fp8), 330.3 * kTera);  // FP32 accumulate, not 660.6

  const Device b200 = load_builtin_device("B200");
  EXPECT_DOUBLE_EQ(tensor(b200, Bf16), 4.5e15 / 2);
  EXPECT_DOUBLE_EQ(tensor(b200, Fp4), 18e15 / 2);
  EXPECT_DOUBLE_EQ(b200.dram_bandwidth_bytes_per_s(), 7.7e12);

  const Device a100 = load_builtin_device("A100-SXM-80GB");
  EXPECT_DOUBLE_EQ(tensor(a100, Bf16), 312 * kTera);
  EXPECT_DOUBLE_EQ(tensor(a100, Tf32), 156 * kTera);
  EXPECT_FALSE(a100.peak(ComputeUnit::Tensor, Fp8).has_value());  // Ampere: no FP8

  const Device a6000 = load_builtin_device("A6000");
  EXPECT_DOUBLE_EQ(tensor(a6000, Bf16), 154.8 * kTera);  // not the sparse "309.7 TFLOPS tensor"
  EXPECT_DOUBLE_EQ(tensor(a6000, Tf32), 154.8e12 / 2);   // GA102: TF32 = FP16 / 2

  const Device l4 = load_builtin_device("L4");
  EXPECT_DOUBLE_EQ(tensor(l4, Bf16), 242e12 / 2);

  const Device mi300x = load_builtin_device("MI300X");
  EXPECT_DOUBLE_EQ(tensor(mi300x, Bf16), 1307.4 * kTera);
  EXPECT_DOUBLE_EQ(tensor(mi300x, Fp8), 2614.9 * kTera);
  EXPECT_DOUBLE_EQ(capacity(mi300x, MemoryLevel::Smem), 64.0 * 1024 * 304);  // LDS x CUs

  const Device mi355x = load_builtin_device("MI355X");
  EXPECT_DOUBLE_EQ(tensor(mi355x, Bf16), 256 * 4096 * 2.4e9);  // CUs x FLOP/clk/CU x clock
  EXPECT_DOUBLE_EQ(tensor(mi355x, Fp8), 256 * 8192 * 2.4e9);
  EXPECT_DOUBLE_EQ(vector(mi355x, Fp32), 256 * 128 * 2 * 2.4e9);
  EXPECT_FALSE(mi355x.peak(ComputeUnit::Tensor, Tf32).has_value());  // no TF32 in hardware

  const Device thor = load_builtin_device("Jetson-AGX-Thor");
  EXPECT_DOUBLE_EQ(tensor(thor, Bf16), 517e12 / 2);
  EXPECT_DOUBLE_EQ(tensor(thor, Fp4), 2070e12 / 2);
  EXPECT_DOUBLE_EQ(vector(thor, Fp32), 2560 * 2 * 1.57e9);                // CUDA cores x 2 x clock
  EXPECT_DOUBLE_EQ(capacity(thor, MemoryLevel::L2), 32.0 * 1024 * 1024);  // 32 MiB reported
  EXPECT_FALSE(thor.peak(ComputeUnit::Vector, Fp64).has_value());         // unconfirmed

  const Device v5e = load_builtin_device("TPU-v5e");
  EXPECT_DOUBLE_EQ(tensor(v5e, Bf16), 197 * kTera);
  EXPECT_DOUBLE_EQ(tensor(v5e, Int8), 393 * kTera);
  for (Precision p : kAllPrecisions) {
    EXPECT_FALSE(v5e.peak(ComputeUnit::Vector, p).has_value());  // not published
  }
  EXPECT_FALSE(v5e.level(MemoryLevel::L2).exists());
}

// ---------------------------------------------------------------------------------------------
// Device files: validation and messages

// A valid file; cases below replace one line. Line numbers are 1-based, as in the messages.
const std::vector<std::string> kGoodLines = {
    "name: Test-GPU",                                                // 1
    "vendor: ACME",                                                  // 2
    "peak_flops_per_s:",                                             // 3
    "  tensor:",                                                     // 4
    "    bf16: {value: 1e15, source: \"S0 test sheet\"}",            // 5
    "memory:",                                                       // 6
    "  - level: DRAM",                                               // 7
    "    capacity_bytes: {value: 80e9, source: \"S0 test sheet\"}",  // 8
    "    bandwidth_bytes_per_s: {value: 3e12, source: \"S0\"}",      // 9
    "clock_hz: {value: 1.5e9, source: \"S0\"}",                      // 10
};

std::string text_with(int line, const std::string& replacement) {
  std::string text;
  for (size_t i = 0; i < kGoodLines.size(); ++i) {
    text += (static_cast<int>(i) + 1 == line ? replacement : kGoodLines[i]) + "\n";
  }
  return text;
}

TEST(HwFile, ValidFileLoads) {
  TempDir tmp;
  const Device d = load_device_file(tmp.write("ok.yaml", text_with(0, "")));
  EXPECT_EQ(d.name, "Test-GPU");
  EXPECT_EQ(d.vendor, "ACME");
  EXPECT_EQ(d.description, "");
  EXPECT_EQ(d.peak(ComputeUnit::Tensor, Precision::Bf16), (Figure{1e15, "S0 test sheet"}));
  EXPECT_DOUBLE_EQ(d.dram_bandwidth_bytes_per_s(), 3e12);
  EXPECT_EQ(d.clock_hz, (Figure{1.5e9, "S0"}));
  EXPECT_FALSE(d.compute_units.has_value());
  EXPECT_EQ(list_figures(d).size(), 4u);
  EXPECT_EQ(resolve_device(tmp.write("ok.yml", text_with(0, ""))), d);
}

TEST(HwFile, UnknownKeyNamesFileLineColumnAndValidKeys) {
  TempDir tmp;
  const std::string path = tmp.write(
      "bad.yaml", text_with(9, "    bandwith_bytes_per_s: {value: 3e12, source: \"S0\"}"));
  EXPECT_EQ(user_error([&] { load_device_file(path); }),
            path +
                ":9:5: error: unknown key 'bandwith_bytes_per_s' in memory[0]; valid: level, "
                "capacity_bytes, bandwidth_bytes_per_s");
}

struct BadCase {
  int line;                 // line of kGoodLines to replace (0: none)
  std::string replacement;  // its new text
  std::string message;      // expected message after "FILE:"
};

TEST(HwFile, InvalidFilesGiveOneExactMessage) {
  const std::vector<BadCase> cases = {
      {1, "nmae: Test-GPU",
       "1:1: error: unknown key 'nmae' at top level; valid: name, vendor, description, "
       "peak_flops_per_s, memory, interconnect, compute_units, clock_hz, min_kernel_s, "
       "attainable"},
      {10,
       "interconnect: {nvlink: {link: NVLink, bandwidth_bytes_per_s: {value: 9e11, source: S0}}}",
       "10:16: error: unknown key 'nvlink' in interconnect; valid: scale_up, host"},
      {10, "interconnect: {host: {bandwidth_bytes_per_s: {value: 64e9, source: S0}}}",
       "10:22: error: missing key 'link' in interconnect.host"},
      {10, "interconnect: {host: {link: PCIe, bandwidth_bytes_per_s: {value: 0, source: S0}}}",
       "10:66: error: interconnect.host.bandwidth_bytes_per_s.value must be a positive finite "
       "number (e.g. 989.5e12), not '0'"},
      {10, "interconnect: [PCIe]",
       "10:15: error: interconnect must be a mapping with keys "
       "scale_up, host"},
      {5, "    bf61: {value: 1e15, source: \"S0\"}",
       "5:5: error: unknown key 'bf61' in peak_flops_per_s.tensor; valid: fp64, fp32, tf32, "
       "fp16, bf16, fp8, int8, fp4"},
      {4,
       "  matrix:", "4:3: error: unknown key 'matrix' in peak_flops_per_s; valid: tensor, vector"},
      {5, "    bf16: {value: 1e15, source: \"S0\", note: x}",
       "5:39: error: unknown key 'note' in peak_flops_per_s.tensor.bf16; valid: value, source"},
      {2, "name: Again", "2:1: error: duplicate key 'name' at top level"},
      {1, "description: no name", "1:1: error: missing key 'name' at top level"},
      {5, "    bf16: {value: -1e15, source: \"S0\"}",
       "5:19: error: peak_flops_per_s.tensor.bf16.value must be a positive finite number (e.g. "
       "989.5e12), not '-1e15'"},
      {5, "    bf16: {value: 0, source: \"S0\"}",
       "5:19: error: peak_flops_per_s.tensor.bf16.value must be a positive finite number (e.g. "
       "989.5e12), not '0'"},
      {5, "    bf16: {value: .inf, source: \"S0\"}",
       "5:19: error: peak_flops_per_s.tensor.bf16.value must be a positive finite number (e.g. "
       "989.5e12), not '.inf'"},
      {5, "    bf16: {value: \"1e15\", source: \"S0\"}",
       "5:19: error: peak_flops_per_s.tensor.bf16.value must be a positive finite number (e.g. "
       "989.5e12), not '1e15'"},
      {5, "    bf16: {value: 1e15}",
       "5:11: error: missing key 'source' in peak_flops_per_s.tensor.bf16"},
      {5, "    bf16: {value: 1e15, source: \"\"}",
       "5:33: error: peak_flops_per_s.tensor.bf16.source must be a non-empty string"},
      {5, "    bf16: 1e15",
       "5:11: error: peak_flops_per_s.tensor.bf16 must be a mapping {value: NUMBER, source: "
       "TEXT}"},
      {9, "", "7:5: error: missing key 'bandwidth_bytes_per_s' in memory[0] (DRAM needs one)"},
      {7, "  - level: L2", "7:3: error: memory has no DRAM level"},
      {7, "  - level: HBM",
       "7:12: error: memory[0].level 'HBM' is not a memory level; valid: DRAM, L2, SMEM"},
      {10, "compute_units: {value: 1.5, source: \"S0\"}",
       "10:16: error: compute_units.value must be a whole number"},
      {5, "    {}", "4:3: error: peak_flops_per_s lists no rates"},
      {1, "name: Test GPU",
       "1:7: error: name 'Test GPU' must use only letters, digits and - _ . +"},
      {5, "    bf16: {value: 1e15, source: \"S0\"",
       "6:1: error: invalid YAML: end of map flow not found"},
  };
  TempDir tmp;
  for (const BadCase& c : cases) {
    SCOPED_TRACE(c.replacement);
    const std::string path = tmp.write("bad.yaml", text_with(c.line, c.replacement));
    EXPECT_EQ(user_error([&] { load_device_file(path); }), path + ":" + c.message);
  }
}

TEST(HwFile, DuplicateLevelEmptyAndMissingFiles) {
  TempDir tmp;
  // Line 10 (clock_hz) is blanked so that lines 11-12 continue the memory list.
  const std::string dup =
      tmp.write("dup.yaml", text_with(10, "") +
                                "  - level: DRAM\n    capacity_bytes: {value: 1e9, source: S0}\n");
  EXPECT_EQ(user_error([&] { load_device_file(dup); }),
            dup + ":11:12: error: memory level DRAM is listed twice");
  const std::string empty = tmp.write("empty.yaml", "");
  EXPECT_EQ(user_error([&] { load_device_file(empty); }),
            empty +
                ": error: a device file is a mapping with keys name, vendor, description, "
                "peak_flops_per_s, memory, interconnect, compute_units, clock_hz, min_kernel_s, "
                "attainable");
  const std::string missing = (fs::path(SOLAR_SOURCE_DIR) / "no-such-device.yaml").string();
  EXPECT_NE(
      user_error([&] { resolve_device(missing); }).find("cannot read device file '" + missing),
      std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// Overrides

TEST(HwOverride, ShortFormAndDottedPaths) {
  Device d = load_builtin_device("H100-SXM");
  apply_override(d, "dram_bandwidth_bytes_per_s=4e12");
  EXPECT_EQ(d.level(MemoryLevel::Dram).bandwidth_bytes_per_s,
            (Figure{4e12, std::string(kOverrideSource)}));
  apply_override(d, "peak_flops_per_s.tensor.bf16=1e15");
  EXPECT_EQ(d.peak(ComputeUnit::Tensor, Precision::Bf16), (Figure{1e15, "command-line override"}));
  apply_override(d, "memory.L2.capacity_bytes=60e6");
  EXPECT_DOUBLE_EQ(capacity(d, MemoryLevel::L2), 60e6);
  apply_override(d, "compute_units=100");
  EXPECT_DOUBLE_EQ(d.compute_units->value, 100);
  // Untouched figures keep their source.
  EXPECT_NE(d.peak(ComputeUnit::Tensor, Precision::Fp16)->source, kOverrideSource);
}

TEST(HwOverride, AddsMissingRatesAndLevels) {
  Device d = load_builtin_device("TPU-v5e");
  apply_override(d, "peak_flops_per_s.vector.fp32=1e13");
  EXPECT_DOUBLE_EQ(vector(d, Precision::Fp32), 1e13);
  EXPECT_NE(user_error([&] {
              apply_override(d, "memory.L2.bandwidth_bytes_per_s=1e13");
            }).find("TPU-v5e has no L2 level; set memory.L2.capacity_bytes first"),
            std::string::npos);
  apply_override(d, "l2_capacity_bytes=48e6");
  apply_override(d, "memory.L2.bandwidth_bytes_per_s=1e13");
  EXPECT_TRUE(d.level(MemoryLevel::L2).exists());
}

// Every advertised key is accepted (capacity keys come before bandwidth keys in the list).
TEST(HwOverride, EveryListedKeyApplies) {
  Device d = load_builtin_device("TPU-v5e");
  for (const std::string& key : override_keys()) {
    SCOPED_TRACE(key);
    apply_override(d, key + "=7");
  }
  for (const FigureEntry& entry : list_figures(d)) EXPECT_EQ(entry.figure.value, 7) << entry.path;
  // rates per unit and precision, capacity and bandwidth per level, a bandwidth per link,
  // compute_units, clock_hz and min_kernel_s: 2 x 8 + 2 x 3 + 2 + 3 = 27.
  EXPECT_EQ(list_figures(d).size(), 2 * kPrecisionCount + 2 * kMemoryLevelCount + kLinkCount + 3);
}

TEST(HwOverride, Errors) {
  Device d = load_builtin_device("H100-SXM");
  const Device before = d;
  const std::string unknown =
      user_error([&] { apply_override(d, "dram_bandwith_bytes_per_s=4e12"); });
  EXPECT_NE(
      unknown.find("unknown key 'dram_bandwith_bytes_per_s' (did you mean "
                   "'dram_bandwidth_bytes_per_s'?); valid: peak_flops_per_s.{tensor,vector}."),
      std::string::npos)
      << unknown;
  EXPECT_NE(unknown.find("compute_units, clock_hz"), std::string::npos);
  for (const char* bad : {"clock_hz=fast", "clock_hz=-1", "clock_hz=0", "clock_hz=inf",
                          "clock_hz=1e9x", "clock_hz=", "clock_hz 1e9"}) {
    SCOPED_TRACE(bad);
    EXPECT_FALSE(user_error([&] { apply_override(d, bad); }).empty());
  }
  EXPECT_NE(user_error([&] { apply_override(d, "compute_units=1.5"); }).find("whole number"),
            std::string::npos);
  EXPECT_EQ(d, before);  // a rejected override changes nothing
}

// ---------------------------------------------------------------------------------------------
// JSON

TEST(HwJson, Shape) {
  const nlohmann::json j = device_to_json(load_builtin_device("H100-SXM"));
  EXPECT_EQ(j["name"], "H100-SXM");
  EXPECT_EQ(j["vendor"], "NVIDIA");
  EXPECT_EQ(j["peak_flops_per_s"]["tensor"]["bf16"], 989.5e12);
  EXPECT_EQ(j["peak_flops_per_s"]["vector"]["fp32"], 67e12);
  EXPECT_FALSE(j["peak_flops_per_s"]["tensor"].contains("fp4"));  // absent, not null or 0
  const nlohmann::json& mem = j["memory"];
  ASSERT_EQ(mem.size(), 3u);
  EXPECT_EQ(mem[0]["level"], "DRAM");
  EXPECT_EQ(mem[0]["capacity_bytes"], 80e9);
  EXPECT_EQ(mem[0]["bandwidth_bytes_per_s"], 3.35e12);
  EXPECT_EQ(mem[1]["level"], "L2");
  EXPECT_EQ(mem[1]["bandwidth_bytes_per_s"], 12.4e12);
  EXPECT_EQ(mem[2]["level"], "SMEM");
  EXPECT_EQ(j["compute_units"], 132);
  EXPECT_TRUE(j["compute_units"].is_number_integer());
  EXPECT_EQ(j["clock_hz"], 1.98e9);
  // S1: NVLink 900 GB/s per GPU, both directions together: 450 GB/s each way.
  EXPECT_EQ(j["interconnect"]["scale_up"]["link"], "NVLink 4");
  EXPECT_EQ(j["interconnect"]["scale_up"]["bandwidth_bytes_per_s"], 900e9);
  EXPECT_EQ(j["interconnect"]["scale_up"]["per_direction_bytes_per_s"], 450e9);
  EXPECT_EQ(j["interconnect"]["host"]["bandwidth_bytes_per_s"], 128e9);
  const nlohmann::json& sources = j["sources"];
  // 6 tensor + 2 vector + 5 memory (L2 with its bandwidth) + 2 interconnect + compute_units +
  // clock_hz + min_kernel_s
  EXPECT_EQ(sources.size(), 18u);
  EXPECT_NE(sources["peak_flops_per_s.tensor.bf16"].get<std::string>().find("S1"),
            std::string::npos);
  EXPECT_TRUE(sources.contains("memory.DRAM.bandwidth_bytes_per_s"));
  std::vector<std::string> keys;
  for (const auto& [key, value] : j.items()) keys.push_back(key);
  EXPECT_EQ(keys, (std::vector<std::string>{"clock_hz", "compute_units", "description",
                                            "interconnect", "memory", "min_kernel_s", "name",
                                            "peak_flops_per_s", "sources", "vendor"}));
}

// Interconnect figures (docs/devices.md, "Interconnect"), from ../shared/reference/hardware.md
// section 5: the scale-up link per device, both directions together, and the host link.
TEST(HwData, InterconnectFiguresAreTheReferences) {
  struct Row {
    std::string device;
    std::optional<double> scale_up, host;
  };
  const std::vector<Row> rows = {
      {"B200", 1.8e12, 128e9},
      {"GB200", 1.8e12, std::nullopt},
      {"H200-SXM", 900e9, 128e9},
      {"H100-SXM", 900e9, 128e9},
      {"H100-PCIe", 600e9, 128e9},
      {"A100-SXM-80GB", 600e9, 64e9},
      {"A100-PCIe-40GB", std::nullopt, 64e9},  // its bridge figure is unconfirmed
      {"A6000", 112.5e9, std::nullopt},
      {"L40S", std::nullopt, 64e9},
      {"MI300X", 896e9, 128e9},  // 7 Infinity Fabric links x 128 GB/s
      {"TPU-v5e", 400e9, std::nullopt},
      {"TPU-v5p", 1.2e12, std::nullopt},
      {"TPU-v6e", 800e9, std::nullopt},
      {"L4", std::nullopt, std::nullopt},
      {"Jetson-AGX-Thor", std::nullopt, std::nullopt},  // an integrated SoC: no link
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.device);
    const Device d = load_builtin_device(r.device);
    for (const auto& [link, want] :
         {std::pair{hw::Link::ScaleUp, r.scale_up}, std::pair{hw::Link::Host, r.host}}) {
      const hw::LinkSpec& spec = d.link(link);
      ASSERT_EQ(spec.exists(), want.has_value()) << hw::link_name(link);
      if (!want) continue;
      EXPECT_EQ(spec.bandwidth_bytes_per_s->value, *want);
      EXPECT_EQ(spec.per_direction_bytes_per_s(), *want / 2);
      EXPECT_FALSE(spec.link.empty());
    }
  }
}

TEST(HwOverride, SetsAnInterconnectBandwidth) {
  Device d = load_builtin_device("L4");  // no NVLink
  apply_override(d, "interconnect.scale_up.bandwidth_bytes_per_s=100e9");
  ASSERT_TRUE(d.link(hw::Link::ScaleUp).exists());
  EXPECT_EQ(d.link(hw::Link::ScaleUp).bandwidth_bytes_per_s,
            (Figure{100e9, std::string(hw::kOverrideSource)}));
  EXPECT_EQ(d.link(hw::Link::ScaleUp).per_direction_bytes_per_s(), 50e9);
}

TEST(HwJson, MinimalDeviceOmitsAbsentParts) {
  const nlohmann::json j = device_to_json(load_builtin_device("TPU-v5e"));
  EXPECT_FALSE(j["peak_flops_per_s"].contains("vector"));
  EXPECT_EQ(j["memory"].size(), 1u);
  EXPECT_FALSE(j.contains("compute_units"));
  EXPECT_FALSE(j.contains("clock_hz"));
}

TEST(HwJson, DeterministicAndEverySourcePathIsAnOverrideKey) {
  for (const std::string& name : builtin_device_names()) {
    SCOPED_TRACE(name);
    const std::string a = device_to_json(load_builtin_device(name)).dump(2);
    const std::string b = device_to_json(load_builtin_device(name)).dump(2);
    EXPECT_EQ(a, b);
    const nlohmann::json j = nlohmann::json::parse(a);
    for (const auto& [path, source] : j["sources"].items()) {
      EXPECT_NE(std::find(override_keys().begin(), override_keys().end(), path),
                override_keys().end())
          << path;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// docs/devices.md: its examples are the shipped files and output, so they cannot drift.

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// The body of the first fenced block opened by "```<lang>\n".
std::string doc_block(const std::string& doc, const std::string& lang) {
  const std::string open = "```" + lang + "\n";
  const size_t start = doc.find(open);
  if (start == std::string::npos) return "";
  const size_t body = start + open.size();
  return doc.substr(body, doc.find("```", body) - body);
}

const fs::path kDoc = fs::path(SOLAR_SOURCE_DIR) / "docs/devices.md";

TEST(HwDocs, ExamplesAreTheShippedFileAndOutput) {
  const std::string doc = read_file(kDoc);
  EXPECT_EQ(doc_block(doc, "yaml"),
            read_file(fs::path(SOLAR_SOURCE_DIR) / "data/hardware/H100-SXM.yaml"));
  EXPECT_EQ(doc_block(doc, "json"), device_to_json(load_builtin_device("TPU-v5e")).dump(2) + "\n");
}

TEST(HwDocs, EverySourceIdIsListed) {
  const std::string doc = read_file(kDoc);
  const std::regex source_id(R"(\bS[0-9]+\b)");
  for (const std::string& name : builtin_device_names()) {
    const Device d = load_builtin_device(name);
    for (const FigureEntry& entry : list_figures(d)) {
      const std::string& s = entry.figure.source;
      for (auto it = std::sregex_iterator(s.begin(), s.end(), source_id);
           it != std::sregex_iterator(); ++it) {
        EXPECT_NE(doc.find("- **" + it->str() + "** "), std::string::npos)
            << name << " " << entry.path << " cites " << it->str();
      }
    }
  }
}

}  // namespace
}  // namespace solar::hw

namespace solar::hw {
namespace {

// The kernel floor's figure and the warm cache state's (docs/cache-state.md): min_kernel_s is a
// top-level figure with a source, in the JSON form and an override key; the L2 bandwidth is
// given exactly where a published microbenchmark backs it.
TEST(HwFile, MinKernelAndL2BandwidthFigures) {
  Device d = load_device_file(
      (std::filesystem::path(SOLAR_SOURCE_DIR) / "tests/fixtures/round-gpu.yaml").string());
  ASSERT_TRUE(d.min_kernel_s.has_value());
  EXPECT_EQ(d.min_kernel_s->value, 5e-6);
  EXPECT_EQ(d.level(MemoryLevel::L2).bandwidth_bytes_per_s->value, 4e12);
  const nlohmann::json j = device_to_json(d);
  EXPECT_EQ(j["min_kernel_s"], 5e-6);
  EXPECT_EQ(j["sources"]["min_kernel_s"], "test figure");
  apply_override(d, "min_kernel_s=2e-6");
  EXPECT_EQ(d.min_kernel_s->value, 2e-6);
  EXPECT_EQ(d.min_kernel_s->source, kOverrideSource);
  for (const char* name : {"L40S", "L4", "RTX-4090"}) {
    EXPECT_TRUE(load_builtin_device(name).level(MemoryLevel::L2).bandwidth_bytes_per_s) << name;
  }
  // The devices people benchmark on have both (issue 40): a sourced min_kernel_s of 0.4 us (the
  // shortest per-kernel GPU time found, 0.5 us, rounded down) and an L2 bandwidth.
  for (const char* name :
       {"H100-SXM", "H100-PCIe", "H200-SXM", "B200", "GB200", "A100-SXM-80GB", "A100-PCIe-40GB"}) {
    const Device b = load_builtin_device(name);
    ASSERT_TRUE(b.min_kernel_s.has_value()) << name;
    EXPECT_EQ(b.min_kernel_s->value, 0.4e-6) << name;
    EXPECT_NE(b.min_kernel_s->source.find("S62"), std::string::npos) << name;
    EXPECT_TRUE(b.level(MemoryLevel::L2).bandwidth_bytes_per_s) << name;
  }
  // The other NVIDIA parts: the same 0.5 us at 1.98 GHz, scaled down where the boost clock is
  // higher (0.5 x 1.98 / 2.52 = 0.393 us, rounded down to 0.3), kept where it is lower.
  EXPECT_EQ(load_builtin_device("RTX-4090").min_kernel_s->value, 0.3e-6);
  EXPECT_EQ(load_builtin_device("L40S").min_kernel_s->value, 0.3e-6);
  EXPECT_EQ(load_builtin_device("L4").min_kernel_s->value, 0.4e-6);  // 0.485 us at 2.04 GHz
  for (const char* name : {"A6000", "Jetson-AGX-Orin-64GB", "Jetson-AGX-Thor"}) {
    EXPECT_EQ(load_builtin_device(name).min_kernel_s->value, 0.4e-6) << name;
  }
  // AMD's and the TPUs' have no published kernel time: no floor rather than a guessed one.
  for (const char* name : {"MI300X", "MI355X", "TPU-v5e", "TPU-v5p", "TPU-v6e"}) {
    EXPECT_FALSE(load_builtin_device(name).min_kernel_s.has_value()) << name;
  }
  EXPECT_FALSE(load_builtin_device("Jetson-AGX-Thor").level(MemoryLevel::L2).bandwidth_bytes_per_s);
  EXPECT_EQ(load_builtin_device("Jetson-AGX-Thor").compute_units->value, 20);
}

}  // namespace
}  // namespace solar::hw

namespace solar::hw {
namespace {

// ---------------------------------------------------------------------------------------------
// Measured ceilings: the `attainable:` block

// kGoodLines (tensor bf16 1e15, DRAM 3e12) with an attainable block after it.
std::string with_attainable(const std::string& block) { return text_with(0, "") + block; }

TEST(HwAttainable, BlockLoadsAndReplacesOnlyTheMeasuredFigures) {
  TempDir tmp;
  const Device d = load_device_file(tmp.write(
      "a.yaml", with_attainable("attainable:\n"
                                "  dram_bandwidth_bytes_per_s: {value: 2.5e12, source: \"S9 m\"}\n"
                                "  peak_flops_per_s:\n"
                                "    tensor:\n"
                                "      bf16: {value: 7e14, source: \"S9 mm\"}\n")));
  ASSERT_TRUE(d.attainable.has_value());
  EXPECT_EQ(d.attainable->dram_bandwidth_bytes_per_s, (Figure{2.5e12, "S9 m"}));
  EXPECT_EQ(d.attainable->peak(ComputeUnit::Tensor, Precision::Bf16), (Figure{7e14, "S9 mm"}));
  // The datasheet figures are untouched; the block's are not overridable or listed as sources.
  EXPECT_DOUBLE_EQ(d.dram_bandwidth_bytes_per_s(), 3e12);
  EXPECT_EQ(list_figures(d).size(), 4u);
  const Device a = attainable_device(d);
  EXPECT_FALSE(a.attainable.has_value());
  EXPECT_DOUBLE_EQ(a.dram_bandwidth_bytes_per_s(), 2.5e12);
  EXPECT_DOUBLE_EQ(a.peak(ComputeUnit::Tensor, Precision::Bf16)->value, 7e14);
  EXPECT_EQ(a.name, d.name);
  // A datasheet figure lowered below the measurement (--set) stays: min(2.5e12, 2e12) = 2e12.
  Device lowered = d;
  apply_override(lowered, "dram_bandwidth_bytes_per_s=2e12");
  EXPECT_DOUBLE_EQ(attainable_device(lowered).dram_bandwidth_bytes_per_s(), 2e12);
  // JSON: the measured figures under `attainable`.
  const nlohmann::json j = device_to_json(d);
  EXPECT_EQ(j["attainable"]["dram_bandwidth_bytes_per_s"], 2.5e12);
  EXPECT_EQ(j["attainable"]["peak_flops_per_s"]["tensor"]["bf16"], 7e14);
  EXPECT_FALSE(device_to_json(attainable_device(d)).contains("attainable"));
  // Without a block: nothing, and attainable_device is an internal error.
  EXPECT_FALSE(load_device_file(tmp.write("b.yaml", text_with(0, ""))).attainable.has_value());
}

TEST(HwAttainable, BadBlocksGiveOneExactMessage) {
  // Lines 1-10 are kGoodLines; the block starts at line 11.
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"attainable:\n  dram_bandwidth_bytes_per_s: {value: 3.5e12, source: \"S9\"}\n",
       "12:31: error: attainable.dram_bandwidth_bytes_per_s (3.5e+12) is above the datasheet's "
       "memory DRAM bandwidth_bytes_per_s (3e+12): a measured ceiling is at most the peak"},
      {"attainable:\n  peak_flops_per_s:\n    tensor:\n      fp8: {value: 1e15, source: S9}\n",
       "14:12: error: attainable.peak_flops_per_s.tensor.fp8: the datasheet has no "
       "peak_flops_per_s.tensor.fp8 to measure against"},
      {"attainable:\n  peak_flops_per_s:\n    tensor:\n      bf16: {value: 2e15, source: S9}\n",
       "14:13: error: attainable.peak_flops_per_s.tensor.bf16 (2e+15) is above the datasheet's "
       "peak_flops_per_s.tensor.bf16 (1e+15): a measured ceiling is at most the peak"},
      {"attainable:\n  l2_bandwidth_bytes_per_s: {value: 1e12, source: S9}\n",
       "12:3: error: unknown key 'l2_bandwidth_bytes_per_s' in attainable; valid: "
       "dram_bandwidth_bytes_per_s, peak_flops_per_s"},
      {"attainable: {}\n", "11:13: error: attainable lists no figures"},
      {"attainable: 4e12\n",
       "11:13: error: attainable must be a mapping with keys dram_bandwidth_bytes_per_s, "
       "peak_flops_per_s (measured ceilings)"},
  };
  TempDir tmp;
  for (const auto& [block, message] : cases) {
    SCOPED_TRACE(block);
    const std::string path = tmp.write("bad.yaml", with_attainable(block));
    EXPECT_EQ(user_error([&] { load_device_file(path); }), path + ":" + message);
  }
}

// H200-SXM's block: the measurements on one H200 of issue 40 (S67), each below its datasheet
// figure: DRAM 4.28 of 4.8 TB/s (0.89), bf16 753 of 989.5 TFLOP/s (0.76), tf32 399 of 494.5
// (0.81), fp8 1,338 of 1,979 (0.68), fp32 vector 50.6 of 67 (0.76).
TEST(HwAttainable, H200CarriesTheMeasuredCeilings) {
  const Device d = load_builtin_device("H200-SXM");
  ASSERT_TRUE(d.attainable.has_value());
  const Attainable& a = *d.attainable;
  EXPECT_DOUBLE_EQ(a.dram_bandwidth_bytes_per_s->value, 4.28e12);
  EXPECT_DOUBLE_EQ(a.peak(ComputeUnit::Tensor, Precision::Bf16)->value, 753e12);
  EXPECT_DOUBLE_EQ(a.peak(ComputeUnit::Tensor, Precision::Tf32)->value, 399e12);
  EXPECT_DOUBLE_EQ(a.peak(ComputeUnit::Tensor, Precision::Fp8)->value, 1338e12);
  EXPECT_DOUBLE_EQ(a.peak(ComputeUnit::Vector, Precision::Fp32)->value, 50.6e12);
  EXPECT_FALSE(a.peak(ComputeUnit::Tensor, Precision::Fp16).has_value());  // not measured
  for (ComputeUnit u : kAllComputeUnits) {
    for (Precision p : kAllPrecisions) {
      if (a.peak(u, p)) {
        EXPECT_NE(a.peak(u, p)->source.find("S67"), std::string::npos);
      }
    }
  }
  // fp16 keeps the datasheet's 989.5e12 at the ceilings.
  EXPECT_DOUBLE_EQ(attainable_device(d).peak(ComputeUnit::Tensor, Precision::Fp16)->value,
                   989.5e12);
}

}  // namespace
}  // namespace solar::hw
