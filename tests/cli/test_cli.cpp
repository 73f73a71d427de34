// Tests of the `solar` command line through run_cli with string streams: exit codes, messages,
// `ir fmt --check`, atomic `ir fmt -i`, and `ir run` on .npz files.
#include "solar/cli/cli.h"

#include <gtest/gtest.h>

#include <unistd.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "solar/cli/sol_commands.h"
#include "solar/exec/npz.h"
#include "solar/exec/tensor.h"
#include "solar/ir/parser.h"
#include "solar/report/analyze.h"
#include "solar/report/provenance.h"
#include "solar/report/sol_report.h"
#include "solar/util/error.h"

namespace solar::cli {
namespace {

namespace fs = std::filesystem;

struct Result {
  int rc;
  std::string out;
  std::string err;
};

Result solar(const std::vector<std::string>& args) {
  std::ostringstream out;
  std::ostringstream err;
  const int rc = run_cli(args, out, err);
  return {rc, out.str(), err.str()};
}

int64_t count_lines(const std::string& s) { return std::count(s.begin(), s.end(), '\n'); }

// C = A @ B, M = 2, K = 3, N = 2: the program tests/python/test_api.py runs too.
const std::string kGemm = [] {
  std::ifstream in(SOLAR_SOURCE_DIR "/tests/fixtures/gemm.ir");
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}();

// A fresh directory per test, removed afterwards.
class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("solar_cli_" + std::string(info->name()) + "_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(path(name), std::ios::binary) << text;
    return path(name);
  }

  static std::string read(const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }

  // Names of the files in the test directory (to see that no temporary file is left behind).
  std::vector<std::string> files() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir_)) names.push_back(e.path().filename());
    std::sort(names.begin(), names.end());
    return names;
  }

  static exec::Tensor f32(std::vector<int64_t> shape, const std::vector<double>& values) {
    exec::Tensor t(ir::DType::F32, std::move(shape));
    for (size_t i = 0; i < values.size(); ++i) t.set(static_cast<int64_t>(i), values[i]);
    return t;
  }

  fs::path dir_;
};

// ---------------------------------------------------------------------------------------------
// Commands, help, version

TEST_F(CliTest, VersionPrintsTheVersion) {
  const Result r = solar({"--version"});
  EXPECT_EQ(r.rc, 0);
  EXPECT_EQ(r.out, std::string("solar ") + SOLAR_VERSION + "\n");
  EXPECT_EQ(r.err, "");
}

TEST_F(CliTest, HelpListsCommands) {
  for (const auto& args : {std::vector<std::string>{"--help"}, {"help"}, {"-h"}}) {
    const Result r = solar(args);
    EXPECT_EQ(r.rc, 0) << args[0];
    EXPECT_NE(r.out.find("ir"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("help"), std::string::npos) << r.out;
    EXPECT_EQ(r.err, "");
  }
}

// Every command, the Python package's too, on one line of `solar --help`: `  NAME  text`.
TEST_F(CliTest, HelpListsEveryCommandOnOneLine) {
  const Result r = solar({"--help"});
  ASSERT_EQ(r.rc, 0) << r.err;
  for (const char* cmd : {"help", "compare", "curve", "hw", "lift", "provision", "sol", "ir",
                          "analyze", "bench", "calibrate", "capture", "sweep", "translate"}) {
    const std::regex line(std::string("(^|\n)  ") + cmd + " +[A-Z][^\n]+\n");
    EXPECT_TRUE(std::regex_search(r.out, line)) << cmd << "\n" << r.out;
  }
  // The Python package's commands are listed apart, saying where they run.
  const size_t group = r.out.find("Python package commands (pip install .");
  ASSERT_NE(group, std::string::npos) << r.out;
  EXPECT_GT(r.out.find("\n  analyze "), group);
  EXPECT_GT(r.out.find("\n  translate "), group);
  EXPECT_LT(r.out.find("\n  sol "), group);
}

// The native executable does not run the Python package's commands: one line says where they run.
TEST_F(CliTest, PythonCommandsAreOneLineErrors) {
  for (const char* cmd : {"analyze", "bench", "calibrate", "capture", "sweep", "translate"}) {
    const Result r = solar({cmd, "model.py"});
    EXPECT_EQ(r.rc, 1) << cmd;
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err, std::string("solar ") + cmd + ": error: '" + cmd +
                         "' is a command of the Python package: install it (pip install .) and "
                         "run its `solar " +
                         cmd + "`\n");
  }
  EXPECT_EQ(solar({"help", "analyze"}).rc, 1);
}

// One error style: `solar COMMAND: error: message`, on one line.
TEST_F(CliTest, ErrorsNameTheirCommand) {
  const std::string f = write("gemm.ir", kGemm);
  const Result run = solar({"ir", "run", f});
  EXPECT_EQ(run.rc, 1);
  EXPECT_EQ(run.err,
            "solar ir run: error: give --inputs IN.npz, or --random-inputs to run on seeded "
            "random data\n");
  const Result fmt = solar({"ir", "fmt", f, f});
  EXPECT_EQ(fmt.err,
            "solar ir fmt: error: one file at a time to stdout; use -i or --check for several "
            "files\n");
  const Result limit = solar({"ir", "run", f, "--random-inputs", "--memory-limit", "8 GiBs"});
  EXPECT_EQ(limit.rc, 1);
  EXPECT_EQ(limit.err,
            "solar ir run: error: --memory-limit '8 GiBs' is not a size (examples: 8GiB, 512MiB, "
            "2GB, 1000000)\n");
  const Result check = solar({"ir", "check", (dir_ / "missing.ir").string()});
  EXPECT_EQ(check.rc, 1);
  EXPECT_EQ(check.err.rfind("solar ir check: error: ", 0), 0u) << check.err;
  EXPECT_EQ(count_lines(check.err), 1) << check.err;
}

// A program that would run for hours is refused before any tensor is made (issue 44's fuzz: the
// triangular cumsum of examples/cumsum.ir over 10^6 columns). Its work: 5 rows x the sum over
// j < 10^6 of (j + 1) adds = 5 x 10^6 (10^6 + 1) / 2 = 2,500,002,500,000 other ops, at 5e7 a
// second: 50,000 s; its bytes (x read, y written: 2 x 5 x 10^6 x 4 B = 4e7) add 0.08 s.
TEST_F(CliTest, ARunOverItsTimeBudgetIsOneLineBeforeAnyTensor) {
  const std::string f = write("cumsum.ir", R"(size R = 5
size C = 1000000

input x : f32[R, C]
output y : f32[R, C]

kernel cumsum {
  for i in 0..R, j in 0..C, k in 0..j + 1:
    y[i, j] += x[i, k]
}
)");
  for (const char* budget : {"3600", "60"}) {
    const Result r = solar({"ir", "run", f, "--random-inputs", "--budget-s", budget});
    EXPECT_EQ(r.rc, 1);
    EXPECT_EQ(r.err, "solar ir run: error: " + f +
                         ": the program would take about 5e+04 s in SOLAR's executor (0 "
                         "multiply-adds, 2.5e+12 other ops, 4e+07 bytes moved), over --budget-s " +
                         budget +
                         "; give a larger --budget-s to run it, or run it at smaller sizes "
                         "(--size)\n");
  }
  // At C = 30 it runs: 5 x 30 x 31 / 2 = 2,325 adds.
  EXPECT_EQ(solar({"ir", "run", f, "--random-inputs", "--size", "C=30"}).rc, 0);
}

TEST_F(CliTest, HelpOfASubcommandShowsItsOptions) {
  const Result a = solar({"help", "ir", "run"});
  const Result b = solar({"ir", "run", "--help"});
  EXPECT_EQ(a.rc, 0);
  EXPECT_EQ(a.out, b.out);
  for (const char* option : {"--inputs", "--out", "--size", "--memory-limit", "--budget-s",
                             "--no-fast-paths", "--random-inputs", "--seed"}) {
    EXPECT_NE(a.out.find(option), std::string::npos) << option;
  }
  const Result ir = solar({"ir", "--help"});
  EXPECT_EQ(ir.rc, 0);
  for (const char* cmd : {"check", "fmt", "run"}) {
    EXPECT_NE(ir.out.find(cmd), std::string::npos) << cmd;
  }
}

TEST_F(CliTest, UnknownCommandListsTheValidOnes) {
  Result r = solar({"frobnicate"});
  EXPECT_EQ(r.rc, 1);
  // Top-level commands grow with SOLAR: check the form, and two that are always there.
  EXPECT_TRUE(std::regex_match(
      r.err,
      std::regex("solar: error: unknown command 'frobnicate' \\(valid: .*help.*, ir.*\\)\n")))
      << r.err;
  EXPECT_EQ(r.out, "");
  r = solar({"ir", "frobnicate"});
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err,
            "solar ir: error: unknown command 'frobnicate' (valid: check, fmt, run, verify)\n");
  r = solar({"help", "nope"});
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("unknown command 'nope'"), std::string::npos);
}

TEST_F(CliTest, DelegatedCommandsAreListedAndRun) {
  const Result help = solar({"--help"});
  EXPECT_NE(help.out.find("\n  hw "), std::string::npos) << help.out;
  const Result hw = solar({"help", "hw"});
  EXPECT_EQ(hw.rc, 0) << hw.err;
  EXPECT_NE(hw.out.find("solar hw list"), std::string::npos) << hw.out;
  const Result bad = solar({"hw", "frobnicate"});
  EXPECT_EQ(bad.rc, 1);
  EXPECT_EQ(count_lines(bad.err), 1) << bad.err;
}

TEST_F(CliTest, MissingCommandIsAnError) {
  Result r = solar({});
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(count_lines(r.err), 1);
  EXPECT_TRUE(std::regex_search(r.err, std::regex("missing command \\(valid: .*help.*, ir")))
      << r.err;
  r = solar({"ir"});
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("missing command (valid: check, fmt, run"), std::string::npos) << r.err;
}

TEST_F(CliTest, BadOptionsAreOneLineErrors) {
  const std::string f = write("gemm.ir", kGemm);
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"ir", "run", f, "--bogus"},
           {"ir", "check"},
           {"ir", "run", f},  // neither --inputs nor --random-inputs
           {"ir", "run", f, "--random-inputs", "--inputs", "x.npz"},
           {"ir", "run", f, "--random-inputs", "--memory-limit", "lots"},
           {"ir", "run", f, "--random-inputs", "--size", "M"},
           {"ir", "run", f, "--random-inputs", "--size", "M=2", "--size", "M=3"},
           {"ir", "fmt", f, "-i", "--check"},
           {"ir", "fmt", f, f},
       }) {
    const Result r = solar(args);
    std::string joined;
    for (const auto& a : args) joined += a + " ";
    EXPECT_EQ(r.rc, 1) << joined;
    EXPECT_EQ(count_lines(r.err), 1) << joined << "\n" << r.err;
    EXPECT_EQ(r.out, "") << joined;
  }
}

// ---------------------------------------------------------------------------------------------
// ir check

TEST_F(CliTest, CheckAcceptsAValidProgram) {
  const std::string f = write("gemm.ir", kGemm);
  const Result r = solar({"ir", "check", f});
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, f + ": ok\n");
  EXPECT_EQ(r.err, "");
}

TEST_F(CliTest, CheckReportsDiagnosticsWithLocations) {
  std::string text = kGemm;
  text.replace(text.find("B[k, j]"), 7, "Q[k, j]");  // line 12, col 31
  const std::string f = write("bad.ir", text);
  const Result r = solar({"ir", "check", f});
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_GE(count_lines(r.err), 1);
  EXPECT_TRUE(std::regex_search(r.err, std::regex("^" + f + ":12:[0-9]+: error: .*Q"))) << r.err;
}

TEST_F(CliTest, CheckOfSeveralFilesReportsEach) {
  const std::string good = write("good.ir", kGemm);
  const std::string bad = write("bad.ir", "size N = 4\ninput x : f32[N]\noutput y : f32[M]\n");
  const Result r = solar({"ir", "check", good, bad});
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.out, good + ": ok\n");
  EXPECT_EQ(r.err.rfind(bad + ":3:", 0), 0u) << r.err;
}

TEST_F(CliTest, CheckOfAMissingFileNamesIt) {
  const Result r = solar({"ir", "check", path("nope.ir")});
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(count_lines(r.err), 1);
  EXPECT_NE(r.err.find("nope.ir"), std::string::npos) << r.err;
}

TEST_F(CliTest, CheckAppliesSizeOverrides) {
  const std::string f = write("gemm.ir", kGemm);
  EXPECT_EQ(solar({"ir", "check", f, "--size", "M=7", "--size", "N=1"}).rc, 0);
  EXPECT_EQ(solar({"ir", "check", f, "--size", "M=7,N=1"}).rc, 0);
  const Result r = solar({"ir", "check", f, "--size", "Z=3"});  // not a size of the program
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
}

// ---------------------------------------------------------------------------------------------
// ir fmt

TEST_F(CliTest, FmtPrintsTheCanonicalFormWhichIsAFixedPoint) {
  std::string messy =
      "size M=2\nsize K =3\n   size N = 2\ninput A:f32[M,K]\n"
      "input B : f32[K, N]\noutput C : f32[M, N]\n"
      "kernel gemm { for i in 0..M, j in 0..N, k in 0..K: C[i,j] += A[i,k]*B[k,j] }\n";
  const std::string f = write("messy.ir", messy);
  const Result r = solar({"ir", "fmt", f});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out, messy);
  EXPECT_NE(r.out.find("C[i, j] += A[i, k] * B[k, j]"), std::string::npos) << r.out;
  const std::string g = write("canonical.ir", r.out);
  const Result again = solar({"ir", "fmt", g});
  EXPECT_EQ(again.out, r.out);
  EXPECT_EQ(solar({"ir", "fmt", "--check", g}).rc, 0);
}

TEST_F(CliTest, FmtCheckFailsOnNonCanonicalText) {
  const std::string f = write("gemm.ir", std::string(kGemm) + "\n\n\n");
  const Result r = solar({"ir", "fmt", "--check", f});
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, f + ": not in canonical form (run 'solar ir fmt -i " + f + "')\n");
  EXPECT_EQ(read(f), std::string(kGemm) + "\n\n\n");  // --check never writes
}

TEST_F(CliTest, FmtCheckGoesOnAfterAFileItCannotRead) {
  const std::string canonical = write("a.ir", solar({"ir", "fmt", write("b.ir", kGemm)}).out);
  const std::string messy = write("c.ir", std::string(kGemm) + "\n\n");
  const Result r = solar({"ir", "fmt", "--check", path("missing.ir"), canonical, messy});
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(count_lines(r.err), 2) << r.err;
  EXPECT_NE(r.err.find("missing.ir"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(messy + ": not in canonical form"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find(canonical), std::string::npos) << r.err;
}

TEST_F(CliTest, FmtInPlaceRewritesAtomically) {
  const std::string messy = std::string(kGemm) + "\n\n\n";
  const std::string f = write("gemm.ir", messy);
  const std::string canonical = solar({"ir", "fmt", f}).out;
  fs::permissions(f, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  const Result r = solar({"ir", "fmt", "-i", f});
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, f + ": reformatted\n");
  EXPECT_EQ(read(f), canonical);
  EXPECT_EQ(files(), std::vector<std::string>{"gemm.ir"});  // no temporary file left
  EXPECT_EQ(fs::status(f).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  // Already canonical: nothing to say, nothing written.
  const auto mtime = fs::last_write_time(f);
  const Result again = solar({"ir", "fmt", "--in-place", f});
  EXPECT_EQ(again.rc, 0);
  EXPECT_EQ(again.out, "");
  EXPECT_EQ(fs::last_write_time(f), mtime);
}

TEST_F(CliTest, FmtInPlaceLeavesInvalidFilesAlone) {
  // Parses but fails the checker (reads x[N], out of bounds)...
  const std::string unchecked =
      "size N = 4\ninput x : f32[N]\noutput y : f32[N]\n\n\n"
      "kernel k {\n  for i in 0..N:\n    y[i] = x[i + 1]\n}\n";
  // ...and does not parse.
  const std::string unparsed = "size N = 4\ninput x : f32[N]\nkernel {\n";
  for (const std::string& text : {unchecked, unparsed}) {
    const std::string f = write("bad.ir", text);
    const Result r = solar({"ir", "fmt", "-i", f});
    EXPECT_EQ(r.rc, 1) << text;
    EXPECT_TRUE(std::regex_search(r.err, std::regex(f + ":[0-9]+:[0-9]+: error: "))) << r.err;
    EXPECT_EQ(read(f), text);
    EXPECT_EQ(files(), std::vector<std::string>{"bad.ir"});
  }
}

// ---------------------------------------------------------------------------------------------
// ir run

TEST_F(CliTest, RunComputesTheOutputs) {
  const std::string f = write("gemm.ir", kGemm);
  exec::TensorMap inputs;
  inputs.emplace("A", f32({2, 3}, {1, 2, 3, 4, 5, 6}));
  inputs.emplace("B", f32({3, 2}, {1, 0, 0, 1, 1, 1}));
  exec::write_npz(path("in.npz"), inputs);
  for (const char* fast : {"", "--no-fast-paths"}) {
    std::vector<std::string> args = {"ir",    "run",          f, "--inputs", path("in.npz"),
                                     "--out", path("out.npz")};
    if (*fast) args.emplace_back(fast);
    const Result r = solar(args);
    ASSERT_EQ(r.rc, 0) << r.err;
    EXPECT_EQ(r.err, "");
    EXPECT_NE(r.out.find("C: f32[2, 2]"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("wrote " + path("out.npz")), std::string::npos) << r.out;
    const exec::TensorMap out = exec::read_npz(path("out.npz"));
    ASSERT_EQ(out.size(), 1u);
    const exec::Tensor& c = out.at("C");
    EXPECT_EQ(c.shape(), (std::vector<int64_t>{2, 2}));
    // [[1,2,3],[4,5,6]] @ [[1,0],[0,1],[1,1]] = [[4,5],[10,11]]
    EXPECT_EQ(c.get(0), 4);
    EXPECT_EQ(c.get(1), 5);
    EXPECT_EQ(c.get(2), 10);
    EXPECT_EQ(c.get(3), 11);
  }
}

// ---------------------------------------------------------------------------------------------
// ir verify

TEST_F(CliTest, VerifyComparesEveryOutputWithTheExpectedValues) {
  const std::string f = write("gemm.ir", kGemm);
  exec::TensorMap inputs;
  inputs.emplace("A", f32({2, 3}, {1, 2, 3, 4, 5, 6}));
  inputs.emplace("B", f32({3, 2}, {1, 0, 0, 1, 1, 1}));
  exec::write_npz(path("in.npz"), inputs);
  // [[1,2,3],[4,5,6]] @ [[1,0],[0,1],[1,1]] = [[4,5],[10,11]]
  exec::TensorMap good;
  good.emplace("C", f32({2, 2}, {4, 5, 10, 11}));
  exec::write_npz(path("good.npz"), good);
  const Result ok = solar({"ir", "verify", f, "--inputs", path("in.npz"), "--expected",
                           path("good.npz"), "--json", path("v.json")});
  ASSERT_EQ(ok.rc, 0) << ok.err;
  EXPECT_NE(ok.out.find("C f32[2, 2]: max abs err 0, max rel err 0 (rtol 0.0001, atol 1e-05): ok"),
            std::string::npos)
      << ok.out;
  EXPECT_NE(ok.out.find("passed: 1 of 1 outputs within tolerance"), std::string::npos) << ok.out;
  EXPECT_NE(read(path("v.json")).find("\"status\": \"passed\""), std::string::npos);
  // 11 expected as 11.5: off by 0.5, relative 0.5 / 11.5 = 0.0435 (printed %.3g)
  exec::TensorMap bad;
  bad.emplace("C", f32({2, 2}, {4, 5, 10, 11.5}));
  exec::write_npz(path("bad.npz"), bad);
  const Result differs =
      solar({"ir", "verify", f, "--inputs", path("in.npz"), "--expected", path("bad.npz")});
  EXPECT_EQ(differs.rc, 3);  // ran, but an output differs (docs/cli.md, exit codes)
  EXPECT_NE(differs.out.find("max abs err 0.5, max rel err 0.0435"), std::string::npos)
      << differs.out;
  EXPECT_NE(differs.out.find("failed: 0 of 1 outputs within tolerance"), std::string::npos);
  // bad input: one line, exit 1
  const Result missing =
      solar({"ir", "verify", f, "--inputs", path("in.npz"), "--expected", path("none.npz")});
  EXPECT_EQ(missing.rc, 1);
  EXPECT_EQ(count_lines(missing.err), 1) << missing.err;
  const Result no_expected = solar({"ir", "verify", f, "--inputs", path("in.npz")});
  EXPECT_EQ(no_expected.rc, 1);
  EXPECT_NE(no_expected.err.find("--expected"), std::string::npos) << no_expected.err;
}

TEST_F(CliTest, RunConvertsInputsOnlyWhenExact) {
  const std::string f = write("gemm.ir", kGemm);
  exec::TensorMap inputs;
  exec::Tensor a(ir::DType::F64, {2, 3});
  for (int64_t i = 0; i < 6; ++i) a.set(i, 0.5 * static_cast<double>(i));  // exact in f32
  inputs.emplace("A", a);
  inputs.emplace("B", f32({3, 2}, {1, 0, 0, 1, 1, 1}));
  exec::write_npz(path("in.npz"), inputs);
  Result r = solar({"ir", "run", f, "--inputs", path("in.npz"), "--out", path("out.npz")});
  EXPECT_EQ(r.rc, 0) << r.err;

  inputs.at("A").set(4, 0.1);  // not a float32 value
  exec::write_npz(path("in.npz"), inputs);
  fs::remove(path("out.npz"));
  r = solar({"ir", "run", f, "--inputs", path("in.npz"), "--out", path("out.npz")});
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(count_lines(r.err), 1);
  EXPECT_NE(r.err.find("input 'A' has dtype f64 but is declared f32"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("element 4"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(path("out.npz")));
}

TEST_F(CliTest, RunFailuresWriteNoOutput) {
  const std::string f = write("gemm.ir", kGemm);
  exec::TensorMap inputs;
  inputs.emplace("A", f32({2, 3}, {1, 2, 3, 4, 5, 6}));  // B is missing
  exec::write_npz(path("in.npz"), inputs);
  Result r = solar({"ir", "run", f, "--inputs", path("in.npz"), "--out", path("out.npz")});
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("B"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(path("out.npz")));

  r = solar({"ir", "run", f, "--inputs", path("missing.npz"), "--out", path("out.npz")});
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("missing.npz"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(path("out.npz")));

  r = solar({"ir", "run", f, "--random-inputs", "--out", path("no/such/dir/out.npz")});
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("does not exist"), std::string::npos) << r.err;
}

TEST_F(CliTest, RunRefusesToExceedTheMemoryLimit) {
  const std::string f = write("gemm.ir", kGemm);
  // M=K=N=1000: three 4 MB tensors, 12 MB in all.
  const Result r = solar({"ir", "run", f, "--random-inputs", "--size", "M=1000,K=1000,N=1000",
                          "--memory-limit", "10MB", "--out", path("out.npz")});
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("memory limit"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(path("out.npz")));
  EXPECT_EQ(
      solar({"ir", "run", f, "--random-inputs", "--size", "M=10", "--memory-limit", "1MiB"}).rc, 0);
}

TEST_F(CliTest, RandomInputsAreDeterministicPerSeed) {
  const std::string f = write("gemm.ir", kGemm);
  const auto run_seed = [&](const std::string& seed, const std::string& out) {
    const Result r = solar({"ir", "run", f, "--random-inputs", "--seed", seed, "--out", path(out),
                            "--save-inputs", path("in_" + out)});
    EXPECT_EQ(r.rc, 0) << r.err;
    return read(path(out)) + read(path("in_" + out));
  };
  const std::string a = run_seed("1", "a.npz");
  EXPECT_EQ(run_seed("1", "b.npz"), a);
  EXPECT_NE(run_seed("2", "c.npz"), a);
  // The saved inputs reproduce the run.
  const Result r = solar({"ir", "run", f, "--inputs", path("in_a.npz"), "--out", path("d.npz")});
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(read(path("d.npz")), read(path("a.npz")));
}

TEST_F(CliTest, RandomIndicesAreInRange) {
  // The index tensor feeds take() over a dimension of 3 rows: any index >= 3 fails the run.
  const std::string f = write("take.ir",
                              "size V = 3\nsize T = 50\nsize E = 2\ninput ids : i64[T]\n"
                              "weight table : f32[V, E]\noutput y : f32[T, E]\n\n"
                              "y = take(table, ids, dim=0)\n");
  for (const char* seed : {"0", "1", "2", "3"}) {
    const Result r = solar({"ir", "run", f, "--random-inputs", "--seed", seed});
    EXPECT_EQ(r.rc, 0) << r.err;
  }
}

// ---------------------------------------------------------------------------------------------
// The shipped examples are valid, canonical, and run.

TEST_F(CliTest, ExamplesCheckAndAreCanonical) {
  int count = 0;
  for (const auto& e : fs::directory_iterator(fs::path(SOLAR_SOURCE_DIR) / "examples")) {
    if (e.path().extension() != ".ir") continue;
    ++count;
    const std::string f = e.path().string();
    const Result check = solar({"ir", "check", f});
    EXPECT_EQ(check.rc, 0) << check.err;
    const Result fmt = solar({"ir", "fmt", "--check", f});
    EXPECT_EQ(fmt.rc, 0) << fmt.err;
    const Result run = solar({"ir", "run", f, "--random-inputs"});
    EXPECT_EQ(run.rc, 0) << run.err;
  }
  EXPECT_GE(count, 20);
}

}  // namespace
}  // namespace solar::cli

namespace solar::cli {
namespace {

// `solar sol --devices N --parallel LAYOUT` on an IR file, no Python (docs/parallel.md):
// examples/mlp.ir (x [4, 16], w1 [16, 32], w2 [32, 8]) over 2 devices: fc1 column-parallel, fc2
// row-parallel, one all-reduce of u [4, 8] f32 = 128 B, 2 (2 - 1) / 2 x 128 = 128 B sent.
TEST(CliParallel, SolTakesALayout) {
  const Result r = solar({"sol", SOLAR_SOURCE_DIR "/examples/mlp.ir", "--hw", "H100-SXM",
                          "--devices", "2", "--parallel", "tp=2", "--json", "-"});
  ASSERT_EQ(r.rc, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  const nlohmann::json& comms = j["parallel"]["communication"];
  ASSERT_EQ(comms.size(), 1U);
  EXPECT_EQ(comms[0]["collective"], "all-reduce");
  EXPECT_EQ(comms[0]["tensor"], "u");
  EXPECT_EQ(comms[0]["buffer_bytes"], 128);
  EXPECT_EQ(comms[0]["sent_bytes"], 128.0);
  const Result table =
      solar({"sol", SOLAR_SOURCE_DIR "/examples/mlp.ir", "--hw", "H100-SXM", "--parallel", "tp=2"});
  EXPECT_NE(table.out.find("Parallel: tp=2 on 2 x H100-SXM"), std::string::npos) << table.out;
}

TEST(CliParallel, BadLayoutsAreOneLineErrors) {
  for (const std::vector<std::string>& extra :
       std::vector<std::vector<std::string>>{{"--devices", "4", "--parallel", "tp=2"},
                                             {"--devices", "2"},
                                             {"--parallel", "tp=two"},
                                             {"--devices", "0", "--parallel", "tp=2"}}) {
    std::vector<std::string> args = {"sol", SOLAR_SOURCE_DIR "/examples/mlp.ir", "--hw",
                                     "H100-SXM"};
    args.insert(args.end(), extra.begin(), extra.end());
    const Result r = solar(args);
    EXPECT_EQ(r.rc, 1) << extra[0];
    EXPECT_EQ(count_lines(r.err), 1) << r.err;
    EXPECT_TRUE(r.out.empty());
  }
  // A device without a scale-up link figure (L4: none published).
  const Result r =
      solar({"sol", SOLAR_SOURCE_DIR "/examples/mlp.ir", "--hw", "L4", "--parallel", "tp=2"});
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("no scale-up interconnect figure"), std::string::npos) << r.err;
}

// `solar sol` and report::analyze (what `solar._core.analyze` calls) are one analysis: the same
// JSON report and table, with the insights and a headroom section, from the same options.
TEST_F(CliTest, SolOfAnIrFileIsReportAnalyze) {
  const std::string file = SOLAR_SOURCE_DIR "/examples/mlp.ir";
  const Result r = solar({"sol", file, "--hw", "H100-SXM", "--capacity", "64KiB", "--kernel-floor",
                          "on", "--measured-ms", "0.01", "--top", "3", "--json", "-"});
  ASSERT_EQ(r.rc, 0) << r.err;
  const Result table = solar({"sol", file, "--hw", "H100-SXM", "--capacity", "64KiB",
                              "--kernel-floor", "on", "--measured-ms", "0.01", "--top", "3"});
  ASSERT_EQ(table.rc, 0) << table.err;
  report::AnalysisOptions o;
  o.capacity = "64KiB";
  o.kernel_floor = "on";
  o.top = 3;
  o.measured.ms = 0.01;
  const report::SolReport s =
      report::analyze(ir::parse_file(file), "H100-SXM", o, report::Provenance{}, file);
  EXPECT_EQ(s.json.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n", r.out);
  EXPECT_EQ(s.table, table.out);
  EXPECT_TRUE(s.json.contains("insights"));
  EXPECT_TRUE(s.json.contains("headroom"));
  EXPECT_THROW(report::render_output(s, "pdf"), UserError);
}

// check_program_args: what `solar CMD MODEL.py` checks before it captures the model. The FILE
// named does not exist: nothing of the program is read.
TEST(CliProgramArgs, AreCheckedWithoutTheProgram) {
  const auto check = [](const std::string& command, const std::vector<std::string>& args) {
    std::ostringstream out;
    std::ostringstream err;
    const std::optional<int> rc = check_program_args(command, args, out, err);
    return std::pair{rc, err.str()};
  };
  for (const std::string command : {"sol", "curve"}) {
    EXPECT_EQ(check(command, {"absent.py", "--hw", "H100-SXM"}).first, std::nullopt) << command;
    const auto [rc, err] = check(command, {"absent.py", "--hw", "H100-SMX"});
    EXPECT_EQ(rc, 1) << command;
    EXPECT_EQ(count_lines(err), 1) << err;
    EXPECT_EQ(err.rfind("solar " + command +
                            ": error: unknown device 'H100-SMX' (did you mean "
                            "'H100-SXM'?); built-in devices: B200, ",
                        0),
              0U)
        << err;
  }
  EXPECT_EQ(check("compare", {"absent.py"}).first, std::nullopt);  // every built-in device
  EXPECT_EQ(check("compare", {"absent.py", "--hw", "B200,nope"}).first, 1);
  EXPECT_EQ(check("provision", {"absent.py", "--hw", "B200", "--latency", "1ms"}).first,
            std::nullopt);
  EXPECT_EQ(check("provision", {"absent.py", "--hw", "B200"}).first, 1);  // --latency required
  EXPECT_EQ(check("provision", {"absent.py", "--hw", "B200", "--latency", "soon"}).first, 1);
  EXPECT_EQ(check("sol", {"absent.py", "--hw", "B200", "--policy", "nope"}).first, 1);
  EXPECT_EQ(check("sol", {"absent.py", "--hw", "B200", "--fidelity", "nope"}).first, 1);
  EXPECT_EQ(check("sol", {"absent.py", "--hw", "B200", "--parallel", "tp=two"}).first, 1);
  EXPECT_EQ(check("sol", {"absent.py", "--hw", "B200", "--size", "N"}).first, 1);
  EXPECT_EQ(check("curve", {"absent.py", "--hw", "B200", "--set", "no_such_key=1"}).first, 1);
  EXPECT_EQ(check("curve", {"absent.py", "--hw", "B200", "--routing", "sideways"}).first, 1);
  EXPECT_EQ(check("lift", {"absent.py"}).first, 1);  // not a command on a program
  const auto [help, err] = check("sol", {"absent.py", "--help"});
  EXPECT_EQ(help, 0) << err;
}

// `solar sol FILE.ir` checks its device before it reads FILE.
TEST(CliProgramArgs, AnIrFileIsReadAfterTheDevice) {
  const Result r = solar({"sol", "absent.ir", "--hw", "H100-SMX"});
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("unknown device 'H100-SMX'"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace solar::cli
