// Bounded mutation fuzzing of the parser, printer and checker.
//
// Seeds: every example program (examples/*.ir) and canonical-form golden case
// (tests/golden/fmt/*.ir). Each iteration applies a few random byte- or token-level mutations to a
// seed and feeds the result to parse -> check -> print. The laws:
//   - only a UserError (a diagnostic) may escape; anything else (InternalError, std::exception of
//     another kind, a crash) fails the test;
//   - a diagnostic is one line that starts with the file name and a line:col position;
//   - when the mutant parses, print(parse(text)) parses again to an equal program.
// The run is deterministic (fixed seed) and bounded (a fixed number of iterations); ctest's
// timeout turns a hang into a failure.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "solar/ir/ast.h"
#include "solar/ir/checker.h"
#include "solar/ir/diagnostic.h"
#include "solar/ir/parser.h"
#include "solar/ir/printer.h"
#include "solar/ir/sizes.h"

namespace {

namespace fs = std::filesystem;
using solar::ir::Program;

std::vector<std::string> load_seeds() {
  std::vector<std::string> seeds;
  const fs::path root = SOLAR_SOURCE_DIR;
  std::vector<fs::path> files;
  for (const char* dir : {"examples", "tests/golden/fmt"}) {
    if (!fs::is_directory(root / dir)) continue;
    for (const auto& entry : fs::directory_iterator(root / dir)) {
      if (entry.path().extension() == ".ir") files.push_back(entry.path());
    }
  }
  std::sort(files.begin(), files.end());  // deterministic order
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    seeds.push_back(ss.str());
  }
  return seeds;
}

// Tokens worth splicing in: they reach deep parser and checker states.
const std::vector<std::string>& splice_tokens() {
  static const std::vector<std::string> tokens = {"[",           "]",
                                                  "(",           ")",
                                                  "{",           "}",
                                                  ",",           ":",
                                                  "..",          "=",
                                                  "+=",          "max=",
                                                  "min=",        "*=",
                                                  "-",           "*",
                                                  "/",           "%",
                                                  "select(",     "exp(",
                                                  "f32",         "bf16",
                                                  "i64",         "bool",
                                                  "kernel",      "for",
                                                  "in",          "repeat",
                                                  "size",        "input",
                                                  "output",      "tensor",
                                                  "weight",      "0",
                                                  "1",           "-1",
                                                  "99999999999", "9223372036854775807",
                                                  "1e308",       "inf",
                                                  "nan",         "i",
                                                  "j",           "N",
                                                  "#",           "\n",
                                                  "\t",          "\xff",
                                                  "reshape(",    "permute(",
                                                  "concat(",     "dim=",
                                                  "dims=[",      "pad(",
                                                  "take(",       "gather(",
                                                  "scatter(",    "reduce=add",
                                                  "broadcast(",  "((((((((",
                                                  "))))))))",    "0..0",
                                                  "i*j",         "/0"};
  return tokens;
}

std::string mutate(std::string text, std::mt19937_64& rng) {
  auto pick = [&](size_t n) { return n == 0 ? size_t{0} : size_t(rng() % n); };
  const int edits = 1 + int(rng() % 4);
  for (int e = 0; e < edits; ++e) {
    const size_t pos = pick(text.size() + 1);
    switch (rng() % 6) {
      case 0:  // delete a short run of bytes
        if (!text.empty()) text.erase(std::min(pos, text.size() - 1), 1 + pick(8));
        break;
      case 1:  // insert a random byte
        text.insert(pos, 1, char(rng() % 256));
        break;
      case 2:  // splice a token
        text.insert(pos, splice_tokens()[pick(splice_tokens().size())]);
        break;
      case 3:  // duplicate a chunk (repeated declarations, nested blocks)
        if (!text.empty()) {
          const size_t start = pick(text.size());
          text.insert(pos, text.substr(start, 1 + pick(40)));
        }
        break;
      case 4:  // replace a digit run with another number
        if (!text.empty()) {
          const size_t start = pick(text.size());
          const auto it = std::find_if(text.begin() + long(start), text.end(),
                                       [](char c) { return c >= '0' && c <= '9'; });
          if (it != text.end()) *it = char('0' + rng() % 10);
        }
        break;
      default:  // swap two lines
      {
        std::vector<std::string> lines;
        std::stringstream ss(text);
        for (std::string line; std::getline(ss, line);) lines.push_back(line);
        if (lines.size() >= 2) {
          std::swap(lines[pick(lines.size())], lines[pick(lines.size())]);
          text.clear();
          for (const auto& l : lines) text += l + "\n";
        }
      }
    }
  }
  return text;
}

// A diagnostic names the file first, then a position: "fuzz.ir:3:14: error: ...".
void expect_one_line_diagnostic(const std::string& message, const std::string& input) {
  EXPECT_EQ(message.find('\n'), std::string::npos) << "multi-line message for:\n" << input;
  EXPECT_EQ(message.rfind("fuzz.ir", 0), 0u) << message << "\nfor:\n" << input;
}

TEST(Fuzz, MutatedProgramsNeverCrashAndRoundTrip) {
  const std::vector<std::string> seeds = load_seeds();
  ASSERT_GE(seeds.size(), 3u) << "fuzzing needs seed programs in examples/ and tests/golden/fmt/";
  std::mt19937_64 rng(20261129);
  const int iterations = 30000;
  int parsed = 0;
  int checked_ok = 0;
  for (int it = 0; it < iterations; ++it) {
    const std::string input = mutate(seeds[size_t(it) % seeds.size()], rng);
    try {
      const Program p = solar::ir::parse(input, "fuzz.ir");
      ++parsed;
      const std::string printed = solar::ir::print(p);
      const Program again = solar::ir::parse(printed, "fuzz.ir");
      ASSERT_TRUE(solar::ir::equal(p, again)) << "round trip changed the program:\n"
                                              << input << "\nprinted:\n"
                                              << printed;
      const auto sizes = solar::ir::bind_sizes(p);
      const auto diags = solar::ir::check(p, sizes);
      if (diags.empty()) ++checked_ok;
      for (const auto& d : diags) expect_one_line_diagnostic(d.str(), input);
    } catch (const solar::UserError& err) {
      expect_one_line_diagnostic(err.what(), input);
    } catch (const std::exception& err) {
      FAIL() << "unexpected exception '" << err.what() << "' for input:\n" << input;
    }
  }
  // The mutations must leave some programs valid, or the round-trip law above is never tested.
  EXPECT_GT(parsed, iterations / 50);
  EXPECT_GT(checked_ok, 0);
}

}  // namespace
