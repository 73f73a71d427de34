// `solar hw list` and `solar hw show` through hw_command with string streams: exit codes, the
// table, JSON output equal to device_to_json, overrides, and one-line errors.
#include "solar/cli/hw_command.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "solar/hw/device.h"

namespace solar::cli {
namespace {

struct Result {
  int rc;
  std::string out;
  std::string err;
};

Result hw(const std::vector<std::string>& args) {
  std::ostringstream out;
  std::ostringstream err;
  const int rc = hw_command(args, out, err);
  return {rc, out.str(), err.str()};
}

size_t count_lines(const std::string& s) { return std::count(s.begin(), s.end(), '\n'); }

TEST(HwCommand, ListShowsEveryBuiltinDevice) {
  const Result r = hw({"list"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.err, "");
  // Header, one row per device, a blank line and the footnote.
  EXPECT_EQ(count_lines(r.out), 1 + hw::builtin_device_names().size() + 2);
  EXPECT_EQ(r.out.rfind("name ", 0), 0u);
  for (const char* header :
       {"vendor", "bf16 tensor TFLOP/s", "fp32 vector TFLOP/s", "DRAM TB/s", "DRAM GB", "L2 MB"}) {
    EXPECT_NE(r.out.find(header), std::string::npos) << header;
  }
  for (const std::string& name : hw::builtin_device_names()) {
    EXPECT_NE(r.out.find("\n" + name + " "), std::string::npos) << name;
  }
  // H100-SXM: bf16 989.5, fp32 67, DRAM 3.35 TB/s, 80 GB, L2 50 MB; TPU-v5e has no fp32 or L2.
  EXPECT_NE(r.out.find("989.5"), std::string::npos);
  const size_t tpu = r.out.find("\nTPU-v5e ");
  const std::string tpu_row = r.out.substr(tpu + 1, r.out.find('\n', tpu + 1) - tpu - 1);
  EXPECT_NE(tpu_row.find(" - "), std::string::npos) << tpu_row;
  EXPECT_EQ(tpu_row.back(), '-') << tpu_row;  // no L2 figure
}

TEST(HwCommand, ShowJsonIsDeviceToJson) {
  const Result r = hw({"show", "H100-SXM", "--json"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out), hw::device_to_json(hw::load_builtin_device("H100-SXM")));
  EXPECT_EQ(hw({"show", "H100-SXM", "--json"}).out, r.out);  // deterministic
}

TEST(HwCommand, ShowTextListsEveryFigureWithItsSource) {
  const Result r = hw({"show", "H100-SXM"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out.rfind("H100-SXM (NVIDIA): H100 SXM5 80GB", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("peak_flops_per_s.tensor.bf16  "), std::string::npos);
  EXPECT_NE(r.out.find("989.5 TFLOP/s"), std::string::npos);
  EXPECT_NE(r.out.find("1979 TOP/s"), std::string::npos);  // int8 is ops/s
  EXPECT_NE(r.out.find("3.35 TB/s"), std::string::npos);
  EXPECT_NE(r.out.find("80 GB"), std::string::npos);
  EXPECT_NE(r.out.find("1.98 GHz"), std::string::npos);
  EXPECT_NE(r.out.find("S1 NVIDIA H100 spec table"), std::string::npos);
}

TEST(HwCommand, ShowAppliesOverrides) {
  const Result r = hw({"show", "H100-SXM", "--json", "--set", "dram_bandwidth_bytes_per_s=4e12",
                       "--set=peak_flops_per_s.tensor.bf16=1e15"});
  ASSERT_EQ(r.rc, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["memory"][0]["bandwidth_bytes_per_s"], 4e12);
  EXPECT_EQ(j["sources"]["memory.DRAM.bandwidth_bytes_per_s"], "command-line override");
  EXPECT_EQ(j["peak_flops_per_s"]["tensor"]["bf16"], 1e15);
}

TEST(HwCommand, Errors) {
  struct Case {
    std::vector<std::string> args;
    std::string message;  // a part of the one-line error
  };
  const std::vector<Case> cases = {
      {{}, "solar hw: error: missing command (valid: list, show)"},
      {{"lsit"}, "solar hw: error: unknown command 'lsit' (valid: list, show)"},
      {{"list", "x"}, "solar hw list: error: takes no arguments"},
      {{"show"}, "solar hw show: error: missing device"},
      {{"show", "A", "B"}, "one device at a time"},
      {{"show", "H100-SXM", "--yaml"}, "unknown option '--yaml' (valid: --json, --set)"},
      {{"show", "H100-SXM", "--set"}, "--set needs KEY=VALUE"},
      {{"show", "H100"}, "(did you mean 'H100-SXM' or 'H100-PCIe'?)"},
      {{"show", "H100-SXM", "--set", "l2_capacity=1"}, "unknown key 'l2_capacity'"},
      {{"show", "/nonexistent/dev.yaml"}, "cannot read device file '/nonexistent/dev.yaml'"},
  };
  for (const Case& c : cases) {
    const Result r = hw(c.args);
    SCOPED_TRACE(r.err);
    EXPECT_EQ(r.rc, 1);
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(count_lines(r.err), 1u);
    EXPECT_NE(r.err.find(c.message), std::string::npos);
  }
}

TEST(HwCommand, Help) {
  const Result r = hw({"--help"});
  EXPECT_EQ(r.rc, 0);
  EXPECT_EQ(r.out.rfind("usage: solar hw list", 0), 0u);
}

}  // namespace
}  // namespace solar::cli
