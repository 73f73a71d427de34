// `solar sol`, `solar provision` and `solar compare` through their command functions with string
// streams: exit codes, tables, JSON output (to a file and to stdout) and one-line errors.
#include "solar/cli/curve_command.h"
#include "solar/cli/sol_commands.h"

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

#include "solar/hw/device.h"

namespace solar::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct Result {
  int rc;
  std::string out;
  std::string err;
};

using Command = int (*)(const std::vector<std::string>&, std::ostream&, std::ostream&);

Result run(Command command, const std::vector<std::string>& args) {
  std::ostringstream out;
  std::ostringstream err;
  const int rc = command(args, out, err);
  return {rc, out.str(), err.str()};
}

const std::string kGemm = SOLAR_SOURCE_DIR "/examples/gemm.ir";
const std::string kMlp = SOLAR_SOURCE_DIR "/examples/mlp.ir";

// A fresh, empty directory for one test.
fs::path temp_dir(const std::string& name) {
  const fs::path dir =
      fs::temp_directory_path() / ("solar-sol-test-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(SolCommand, PrintsTheReport) {
  const Result r = run(sol_command, {kGemm, "--hw", "H100-SXM"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(r.out.find("SOL of gemm.ir on H100-SXM (DRAM 3.35 TB/s)\n"), 0u) << r.out;
  EXPECT_NE(r.out.find("precision policy: pytorch-cuda-default"), std::string::npos);
  EXPECT_NE(r.out.find("\n  not verified: IR file analysed directly\n"), std::string::npos);
}

TEST(SolCommand, JsonToAFileAndToStdout) {
  const fs::path dir = temp_dir("json");
  const std::string path = (dir / "r.json").string();
  const Result r = run(sol_command, {kMlp, "--hw", "H100-SXM", "--json", path});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("\nwrote " + path + "\n"), std::string::npos) << r.out;
  const Result s = run(sol_command, {kMlp, "--hw", "H100-SXM", "--json", "-"});
  ASSERT_EQ(s.rc, 0) << s.err;
  EXPECT_EQ(read_file(path), s.out);  // same bytes; the table is not printed with `--json -`
  const json j = json::parse(s.out);
  EXPECT_EQ(j["bytes"]["fused"], 3616);  // x + w1 + b1 + w2 + b2 + y (tests/sol/test_analysis.cpp)
  EXPECT_EQ(std::vector<fs::path>(fs::directory_iterator(dir), fs::directory_iterator()),
            std::vector<fs::path>{dir / "r.json"});  // no temporary file left
  fs::remove_all(dir);
}

TEST(SolCommand, OptionsReachTheAnalysis) {
  const Result r =
      run(sol_command, {kGemm, "--hw", "H100-SXM", "--json", "-", "--size", "M=64", "--policy",
                        "tf32", "--fidelity", "fused", "--set", "dram_bandwidth_bytes_per_s=1e12"});
  ASSERT_EQ(r.rc, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["sizes"]["M"], 64);
  EXPECT_EQ(j["precision_policy"], "tf32");
  EXPECT_EQ(j["nodes"][0]["precision"], "tf32 tensor");
  EXPECT_EQ(j["bytes"].size(), 1u);
  EXPECT_EQ(j["hardware"]["overrides"]["memory.DRAM.bandwidth_bytes_per_s"], 1e12);
}

TEST(SolCommand, UserErrorsAreOneLineAndWriteNothing) {
  const fs::path dir = temp_dir("errors");
  const std::string path = (dir / "r.json").string();
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{kGemm, "--hw", "H100-SXM", "--json", path, "--policy", "fast"},
       "solar sol: error: unknown precision policy 'fast' (valid: pytorch-cuda-default, strict, "
       "tf32, jax-default, bf16, fp8, int8-weights, fp8-weights, nvfp4-weights, mxfp4-weights, "
       "int4-weights)\n"},
      {{kGemm, "--hw", "TPU-v5e", "--json", path, "--fidelity", "cache"},
       "solar sol: error: cache fidelity: TPU-v5e has no L2 capacity in its device file; give "
       "one with --capacity\n"},
      {{kGemm, "--hw", "H100-SXM", "--json", path, "--capacity", "8"},
       "solar sol: error: no cache-aware schedule fits in an on-chip capacity of 8 bytes (some "
       "node's smallest tile is larger; give a larger --capacity)\n"},
      {{kGemm, "--hw", "H100-SXM", "--json", path, "--level", "L3"},
       "solar sol: error: unknown on-chip level 'L3' (valid: L2, SMEM)\n"},
      {{kGemm, "--hw", "H100-SXM", "--json", path, "--set", "dram_bandwidth_bytes_per_s=-1"}, ""},
      {{kGemm, "--json", path}, ""},
      {{kGemm, "--hw", "H100", "--json", path}, ""},
  };
  for (const auto& [args, message] : cases) {
    const Result r = run(sol_command, args);
    EXPECT_EQ(r.rc, 1) << args.back();
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    if (!message.empty()) {
      EXPECT_EQ(r.err, message);
    }
    EXPECT_FALSE(fs::exists(path));
  }
  EXPECT_NE(run(sol_command, {kGemm}).err.find("--hw is required"), std::string::npos);
  fs::remove_all(dir);
}

TEST(SolCommand, IrDiagnosticsNameTheFile) {
  const fs::path dir = temp_dir("diag");
  const fs::path bad = dir / "bad.ir";
  std::ofstream(bad) << "input x : f32[4]\noutput y : f32[4]\nkernel k {\n  for i in 0..4:\n"
                        "    y[i] = z[i]\n}\n";
  const Result r = run(sol_command, {bad.string(), "--hw", "H100-SXM"});
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err.rfind(bad.string() + ":5:", 0), 0u) << r.err;
  fs::remove_all(dir);
}

TEST(SolCommand, HelpGoesToStdout) {
  const Result r = run(sol_command, {"--help"});
  EXPECT_EQ(r.rc, 0);
  for (const char* option : {"--hw", "--json", "--policy", "--fidelity", "--size", "--set"}) {
    EXPECT_NE(r.out.find(option), std::string::npos) << option;
  }
}

TEST(ProvisionCommand, EveryBuiltinDeviceWithoutHw) {
  const Result r = run(provision_command, {kMlp, "--latency", "2ns", "--json", "-"});
  ASSERT_EQ(r.rc, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["latency_s"], 2e-9);
  // required: 6432 FLOP / 2 ns = 3.216e12 FLOP/s; 3616 B / 2 ns = 1.808e12 B/s fused.
  EXPECT_DOUBLE_EQ(j["required"]["flops_per_s"].get<double>(), 6432 / 2e-9);
  EXPECT_DOUBLE_EQ(j["required"]["bandwidth_bytes_per_s"]["fused"].get<double>(), 3616 / 2e-9);
  ASSERT_EQ(j["devices"].size(), hw::builtin_device_names().size());
  for (size_t i = 0; i < j["devices"].size(); ++i) {
    const json& d = j["devices"][i];
    EXPECT_EQ(d["name"], hw::builtin_device_names()[i]);
    // unfused, fused, and cache where the device file has an L2 (not the TPUs).
    const bool l2 = hw::load_builtin_device(d["name"]).level(hw::MemoryLevel::L2).exists();
    EXPECT_EQ(d["provision"].size(), l2 ? 3u : 2u) << d["name"];
  }
  // H100-SXM fused: 3616 / 3.35e12 = 1.079 ns, factor 0.5397: meets 2 ns.
  const Result h = run(provision_command, {kMlp, "--latency", "2ns", "--hw", "H100-SXM"});
  ASSERT_EQ(h.rc, 0) << h.err;
  EXPECT_NE(h.out.find("What mlp.ir needs to run in 2 ns\n"), std::string::npos) << h.out;
  EXPECT_NE(h.out.find("H100-SXM  fused"), std::string::npos) << h.out;
  EXPECT_NE(h.out.find("0.5397"), std::string::npos) << h.out;
}

TEST(ProvisionCommand, LatencyIsRequiredAndChecked) {
  EXPECT_EQ(run(provision_command, {kMlp}).rc, 1);
  const Result r = run(provision_command, {kMlp, "--latency", "2 min"});
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err,
            "solar provision: error: '2 min' is not a duration (examples: 2ms, 1.5us, 0.25s, "
            "800ns)\n");
}

TEST(CompareCommand, OneRowPerDevice) {
  const Result r = run(compare_command, {kMlp, "--hw", "B200,H100-SXM,A6000,Jetson-AGX-Thor"});
  ASSERT_EQ(r.rc, 0) << r.err;
  for (const char* d : {"\nB200 ", "\nH100-SXM ", "\nA6000 ", "\nJetson-AGX-Thor "}) {
    EXPECT_NE(r.out.find(d), std::string::npos) << d << r.out;
  }
  EXPECT_NE(r.out.find("fused/unfused"), std::string::npos);
  // The MLP is tiny, so the kernel floor decides every row: all four devices' files give
  // min_kernel_s 0.4 us. Unfused runs mlp.ir's 4 kernels (fc1, bias_relu, fc2, bias), each at
  // least 400 ns: 4 * 400 ns = 1.6 us; fused is one kernel, 400 ns; ratio 400 / 1600 = 0.25.
  EXPECT_NE(r.out.find("\nH100-SXM          1.6 us  memory  400 ns  memory  400 ns  memory"
                       "           0.25\n"),
            std::string::npos)
      << r.out;
  // Without the floor the bytes decide: fused/unfused = 3616 / 5920 = 0.6108 on every device
  // (all memory-bound).
  const Result off = run(compare_command, {kMlp, "--hw", "B200,A6000", "--kernel-floor", "off"});
  ASSERT_EQ(off.rc, 0) << off.err;
  EXPECT_NE(off.out.find("0.6108"), std::string::npos) << off.out;
  EXPECT_EQ(off.out.find("0.25\n"), std::string::npos) << off.out;
  const Result j = run(compare_command, {kMlp, "--hw", "B200", "--hw", "TPU-v5e", "--json", "-"});
  ASSERT_EQ(j.rc, 0) << j.err;
  const json parsed = json::parse(j.out);
  ASSERT_EQ(parsed["devices"].size(), 2u);
  EXPECT_EQ(parsed["devices"][1]["name"], "TPU-v5e");
  EXPECT_EQ(parsed["devices"][1]["precision_fallback_nodes"], 4);
  EXPECT_FALSE(parsed.contains("latency_s"));
}

TEST(CompareCommand, ADeviceThatCannotRunTheGraphKeepsItsRow) {
  const fs::path dir = temp_dir("f64");
  const fs::path file = dir / "dot.ir";
  std::ofstream(file) << "size N = 4\ninput a : f64[N]\ninput b : f64[N]\noutput c : f64[]\n"
                         "kernel dot {\n  for i in 0..N:\n    c[] += a[i] * b[i]\n}\n";
  const Result r = run(compare_command, {file.string(), "--hw", "H100-SXM,TPU-v5e"});
  ASSERT_EQ(r.rc, 0) << r.err;
  const size_t row = r.out.find("\nTPU-v5e ");
  ASSERT_NE(row, std::string::npos) << r.out;
  EXPECT_EQ(
      r.out.substr(row + 1, r.out.find('\n', row + 1) - row - 1).find_first_not_of("TPU-v5e n/a"),
      std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("  TPU-v5e: not analysed: TPU-v5e has no rate for fp64 tensor"),
            std::string::npos)
      << r.out;
  fs::remove_all(dir);
}

// Every block of docs/report.md that starts with `$ solar COMMAND ARGS`: the command prints the
// rest of the block. Paths under examples/ are taken from the source tree.
// Every output file of one run is written, or none: a path in a missing directory, a directory
// in a file's place or two outputs to the same file stop the command before anything is written.
TEST(SolCommand, OneUnwritableOutputWritesNoneOfTheFiles) {
  const fs::path dir = temp_dir("outputs");
  const auto p = [&](const std::string& name) { return (dir / name).string(); };
  const std::string missing = p("missing/r.json");
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--html", p("r.html"), "--csv", p("r.csv"), "--trace", p("t.json"), "--dot", p("g.dot"),
        "--json", missing},
       "cannot write '" + missing + "': No such file or directory"},
      {{"--html", p("r.html"), "--csv", missing, "--json", p("r.json")},
       "cannot write '" + missing + "': No such file or directory"},
      {{"--html", p("r.html"), "--csv", dir.string()},
       "cannot write '" + dir.string() + "': it is a directory"},
      {{"--html", p("r.html"), "--json", p("r.html")},
       "two outputs are written to the same file '" + p("r.html") + "'"},
  };
  for (const auto& [outputs, message] : cases) {
    std::vector<std::string> args = {kGemm, "--hw", "H100-SXM"};
    args.insert(args.end(), outputs.begin(), outputs.end());
    const Result r = run(sol_command, args);
    EXPECT_EQ(r.rc, 1) << message;
    EXPECT_EQ(r.err, "solar sol: error: " + message + "\n");
    EXPECT_EQ(r.out, "");
    EXPECT_TRUE(fs::is_empty(dir)) << message;  // neither outputs nor temporary files
  }
  const Result curve = run(cli::curve_command, {kGemm, "--hw", "H100-SXM", "--csv", p("c.csv"),
                                                "--svg", p("c.svg"), "--json", missing});
  EXPECT_EQ(curve.rc, 1);
  EXPECT_EQ(curve.err,
            "solar curve: error: cannot write '" + missing + "': No such file or directory\n");
  EXPECT_TRUE(fs::is_empty(dir));
  // The same files once the path is good: all five, the same bytes on a second run.
  const std::vector<std::string> all = {
      kGemm,     "--hw",      "H100-SXM", "--html",   p("r.html"), "--csv",    p("r.csv"),
      "--trace", p("t.json"), "--dot",    p("g.dot"), "--json",    p("r.json")};
  ASSERT_EQ(run(sol_command, all).rc, 0);
  std::vector<std::string> first;
  for (const char* f : {"r.html", "r.csv", "t.json", "g.dot", "r.json"}) {
    first.push_back(read_file(dir / f));
  }
  ASSERT_EQ(run(sol_command, all).rc, 0);
  size_t i = 0;
  for (const char* f : {"r.html", "r.csv", "t.json", "g.dot", "r.json"}) {
    EXPECT_EQ(read_file(dir / f), first[i++]) << f;
  }
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 5);
  fs::remove_all(dir);
}

TEST(SolCommand, NegativeTopIsAnError) {  // not wrapped around to a huge size_t
  const Result r = run(sol_command, {kGemm, "--hw", "H100-SXM", "--top", "-1"});
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, "solar sol: error: --top: '-1' is negative (see 'solar sol --help')\n");
}

TEST(DocExamples, ReportPageBlocksAreWhatTheCommandsPrint) {
  const std::string doc = read_file(SOLAR_SOURCE_DIR "/docs/report.md");
  // the page's ```console blocks (tests/python/test_studies.py runs them too)
  const std::string opening = "```console\n$ solar ";
  int blocks = 0;
  for (size_t at = doc.find(opening); at != std::string::npos; at = doc.find(opening, at + 1)) {
    const size_t command_at = at + opening.size();
    const size_t line_end = doc.find('\n', command_at);
    const size_t block_end = doc.find("```\n", line_end);
    std::istringstream words(doc.substr(command_at, line_end - command_at));
    std::vector<std::string> args{std::istream_iterator<std::string>(words), {}};
    for (std::string& a : args) {
      if (a.starts_with("examples/")) a = SOLAR_SOURCE_DIR "/" + a;
    }
    const std::string name = args.front();
    args.erase(args.begin());
    const Command command = name == "sol"         ? sol_command
                            : name == "compare"   ? compare_command
                            : name == "provision" ? provision_command
                            : name == "curve"     ? cli::curve_command
                                                  : nullptr;
    ASSERT_NE(command, nullptr) << name;
    const Result r = run(command, args);
    EXPECT_EQ(r.rc, 0) << r.err;
    EXPECT_EQ(r.out, doc.substr(line_end + 1, block_end - line_end - 1)) << name;
    ++blocks;
  }
  EXPECT_EQ(blocks, 4);
}

}  // namespace
}  // namespace solar::cli
