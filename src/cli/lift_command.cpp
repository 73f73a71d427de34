// `solar lift` (include/solar/cli/lift_command.h, docs/einsum.md).
#include "solar/cli/lift_command.h"

#include <algorithm>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "solar/cli/guard.h"
#include "solar/einsum/graph.h"
#include "solar/ir/diagnostic.h"
#include "solar/ir/parser.h"
#include "solar/ir/sizes.h"
#include "solar/util/error.h"

namespace solar::cli {
namespace {

constexpr std::string_view kUsage =
    "usage: solar lift FILE.ir [--size N=64 ...] [--dot]\n"
    "\n"
    "Lifts a program to its einsum graph and prints it (docs/einsum.md): tensors, and per node\n"
    "its einsum, MACs and other operations, and the bytes of each access.\n"
    "\n"
    "  --size N=V    set a free size (repeatable, or N=V,M=W)\n"
    "  --dot         print the graph as Graphviz DOT instead\n";

struct LiftArgs {
  std::string file;
  std::vector<std::string> sizes;  // the --size options
  bool dot = false;
};

LiftArgs parse_args(const std::vector<std::string>& args) {
  LiftArgs a;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& w = args[i];
    if (w == "--dot") {
      a.dot = true;
    } else if (w == "--size") {
      if (i + 1 == args.size()) throw UserError("--size needs NAME=VALUE");
      a.sizes.push_back(args[++i]);
    } else if (w.starts_with("--size=")) {
      a.sizes.push_back(w.substr(7));
    } else if (w.starts_with("-")) {
      throw UserError("unknown option '" + w + "' (valid: --size, --dot)");
    } else if (!a.file.empty()) {
      throw UserError("one file at a time (got '" + a.file + "' and '" + w + "')");
    } else {
      a.file = w;
    }
  }
  if (a.file.empty()) throw UserError("missing FILE.ir (see 'solar lift --help')");
  return a;
}

bool is_help(const std::string& w) { return w == "-h" || w == "--help" || w == "help"; }

int run(const std::vector<std::string>& args, std::ostream& out) {
  if (std::any_of(args.begin(), args.end(), is_help)) {
    out << kUsage;
    return 0;
  }
  const LiftArgs a = parse_args(args);
  const ir::SymbolValues sizes = ir::parse_size_overrides(a.sizes);  // bad options before the file
  // One parse, one check (with the overrides; a derived size may be given at the value it
  // derives to, unlike `solar sol`), one lift of the checked program.
  const einsum::Graph g = einsum::lift(ir::parse_file(a.file), sizes);
  out << (a.dot ? einsum::graph_to_dot(g) : einsum::print_graph(g));
  return 0;
}

}  // namespace

int lift_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  return run_guarded(err, "solar lift", [&] { return run(args, out); });
}

}  // namespace solar::cli
