// The worked example of docs/einsum.md ("Text form"): the program shown lifts to exactly the
// output shown, so the page cannot drift from the code.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "solar/einsum/graph.h"
#include "solar/ir/parser.h"

namespace solar::einsum {
namespace {

// The contents of the fenced blocks (```) after the first line that starts with `marker`.
std::vector<std::string> blocks_after(const std::string& text, const std::string& marker) {
  std::istringstream in(text.substr(text.find("\n" + marker) + 1));
  std::vector<std::string> blocks;
  std::string line, block;
  bool inside = false;
  while (std::getline(in, line)) {
    if (line.rfind("```", 0) == 0) {
      if (inside) blocks.push_back(block);
      inside = !inside;
      block.clear();
    } else if (inside) {
      block += line + "\n";
    }
  }
  return blocks;
}

TEST(Docs, LiftExampleMatchesTheOutputShown) {
  std::ifstream f(SOLAR_SOURCE_DIR "/docs/einsum.md");
  ASSERT_TRUE(f) << "cannot read docs/einsum.md";
  std::ostringstream text;
  text << f.rdbuf();
  const std::vector<std::string> blocks = blocks_after(text.str(), "<!-- lift-example:");
  ASSERT_GE(blocks.size(), 2u);
  EXPECT_EQ(print_graph(lift(ir::parse(blocks[0], "docs/mlp.ir"), {})), blocks[1]);
}

}  // namespace
}  // namespace solar::einsum
