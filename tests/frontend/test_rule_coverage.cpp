// Rule coverage: every registered lowering rule is executed by some test, or waived by name with
// a reason in tests/frontend/rule_waivers.txt (docs/testing.md).
//
// The lowering appends the operators whose rules lowered a node to the file named by
// SOLAR_RULE_LOG (src/frontend/lower.cpp). scripts/test.sh points it at one fresh file for ctest
// and pytest, then runs RuleCoverage.EveryRuleIsExecutedOrWaived with SOLAR_RULE_COVERAGE_LOG
// naming that file. Under a plain ctest that variable is unset and the check skips itself; the
// other tests here (the log itself, the waiver file) run everywhere.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "solar/frontend/lower.h"
#include "solar/util/error.h"

namespace solar::frontend {
namespace {

const std::string kWaivers = std::string(SOLAR_SOURCE_DIR) + "/tests/frontend/rule_waivers.txt";

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// One waiver: an operator whose rule no test executes, the reason, and its line in the file.
struct Waiver {
  std::string reason;
  int line = 0;
};

// The waiver file: `OP  REASON` a line (the name, then white space, then the reason); blank lines
// and lines starting with `#` are skipped. Problems (no reason, a name twice) go to `problems`.
std::map<std::string, Waiver> read_waivers(const std::string& text,
                                           std::vector<std::string>& problems) {
  std::map<std::string, Waiver> waivers;
  std::istringstream in(text);
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    const size_t start = line.find_first_not_of(" \t");
    if (start == std::string::npos || line[start] == '#') continue;
    const size_t name_end = line.find_first_of(" \t", start);
    const std::string name = line.substr(start, name_end - start);
    const size_t reason_start =
        name_end == std::string::npos ? std::string::npos : line.find_first_not_of(" \t", name_end);
    const std::string where = "rule_waivers.txt:" + std::to_string(number) + ": ";
    if (reason_start == std::string::npos) {
      problems.push_back(where + "waiver of '" + name + "' gives no reason");
      continue;
    }
    if (waivers.count(name) != 0) {
      problems.push_back(where + "'" + name + "' is waived twice (first on line " +
                         std::to_string(waivers.at(name).line) + ")");
      continue;
    }
    waivers[name] = {line.substr(reason_start), number};
  }
  return waivers;
}

// The names in a rule log, one a line.
std::set<std::string> read_log(const std::string& text) {
  std::set<std::string> names;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) names.insert(line);
  }
  return names;
}

// Sets an environment variable for the life of the object, then puts the old value back.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          (name + "_" + std::to_string(::getpid()) + ".txt"))
      .string();
}

// linear_relu.json lowers three nodes: aten.t.default, aten.addmm.default, aten.relu.default.
TEST(RuleLog, AppendsTheRulesThatLoweredEachCapture) {
  const std::string log = temp_path("solar_rule_log");
  std::filesystem::remove(log);
  const std::string capture =
      read_text(std::string(SOLAR_SOURCE_DIR) + "/tests/frontend/data/linear_relu.json");
  {
    ScopedEnv env("SOLAR_RULE_LOG", log);
    lower_capture_text(capture, "linear_relu.json");
    lower_capture_text(capture, "linear_relu.json");
  }
  // Two lowerings append the three names twice, each lowering's names sorted.
  EXPECT_EQ(read_text(log),
            "aten.addmm.default\naten.relu.default\naten.t.default\n"
            "aten.addmm.default\naten.relu.default\naten.t.default\n");
  std::filesystem::remove(log);
  {
    ScopedEnv env("SOLAR_RULE_LOG", "");  // empty: no log
    lower_capture_text(capture, "linear_relu.json");
  }
  EXPECT_FALSE(std::filesystem::exists(log));
}

TEST(RuleLog, AnUnwritableLogIsAnError) {
  const std::string capture =
      read_text(std::string(SOLAR_SOURCE_DIR) + "/tests/frontend/data/linear_relu.json");
  ScopedEnv env("SOLAR_RULE_LOG", "/nonexistent-dir/rules.txt");
  EXPECT_THROW(lower_capture_text(capture, "linear_relu.json"), UserError);
}

TEST(RuleWaivers, ParsesNamesAndReasons) {
  std::vector<std::string> problems;
  const auto waivers = read_waivers(
      "# comment\n\naten.a.default  reason one\n  aten.b\tsecond reason\naten.c\n"
      "aten.a.default again\n",
      problems);
  ASSERT_EQ(waivers.size(), 2u);
  EXPECT_EQ(waivers.at("aten.a.default").reason, "reason one");
  EXPECT_EQ(waivers.at("aten.a.default").line, 3);
  EXPECT_EQ(waivers.at("aten.b").reason, "second reason");
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_EQ(problems[0], "rule_waivers.txt:5: waiver of 'aten.c' gives no reason");
  EXPECT_EQ(problems[1], "rule_waivers.txt:6: 'aten.a.default' is waived twice (first on line 3)");
}

// Runs everywhere: the waiver file is well formed and names registered rules only.
TEST(RuleWaivers, NameRegisteredRulesWithAReason) {
  std::vector<std::string> problems;
  const auto waivers = read_waivers(read_text(kWaivers), problems);
  const std::vector<std::string> ops = registered_ops();
  const std::set<std::string> registered(ops.begin(), ops.end());
  for (const auto& [name, waiver] : waivers) {
    if (registered.count(name) == 0) {
      problems.push_back("rule_waivers.txt:" + std::to_string(waiver.line) + ": '" + name +
                         "' names no registered rule");
    }
  }
  std::string text;
  for (const std::string& p : problems) text += p + "\n";
  EXPECT_TRUE(problems.empty()) << text;
}

// Run by scripts/test.sh after ctest and pytest, with SOLAR_RULE_COVERAGE_LOG naming the
// SOLAR_RULE_LOG file they wrote (several files: separated by ':').
TEST(RuleCoverage, EveryRuleIsExecutedOrWaived) {
  const char* logs = std::getenv("SOLAR_RULE_COVERAGE_LOG");
  if (logs == nullptr || *logs == '\0') {
    GTEST_SKIP() << "SOLAR_RULE_COVERAGE_LOG is unset; scripts/test.sh runs this after pytest";
  }
  std::set<std::string> executed;
  std::istringstream paths(logs);
  for (std::string path; std::getline(paths, path, ':');) {
    ASSERT_TRUE(std::filesystem::exists(path)) << "no rule log " << path;
    const std::set<std::string> names = read_log(read_text(path));
    executed.insert(names.begin(), names.end());
  }
  std::vector<std::string> problems;
  const auto waivers = read_waivers(read_text(kWaivers), problems);
  std::string missing;
  int waived = 0;
  for (const std::string& op : registered_ops()) {
    const auto w = waivers.find(op);
    if (executed.count(op) != 0 && w != waivers.end()) {
      problems.push_back("rule_waivers.txt:" + std::to_string(w->second.line) + ": '" + op +
                         "' is waived but a test executes it: remove the waiver");
    } else if (executed.count(op) == 0 && w == waivers.end()) {
      missing += "  " + op + "\n";
    } else if (w != waivers.end()) {
      ++waived;
    }
  }
  std::string text;
  for (const std::string& p : problems) text += p + "\n";
  EXPECT_TRUE(problems.empty()) << text;
  EXPECT_TRUE(missing.empty())
      << "rules that no test executes (add a test, or a line `OP  REASON` to "
         "tests/frontend/rule_waivers.txt):\n"
      << missing;
  std::printf("rule coverage: %zu rules, %zu executed by a test, %d waived\n",
              registered_ops().size(), executed.size(), waived);
}

}  // namespace
}  // namespace solar::frontend
