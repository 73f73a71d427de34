// `solar` executable: dispatches to the CLI library (src/cli/cli.cpp).
#include <iostream>
#include <string>
#include <vector>

#include "solar/cli/cli.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  return solar::cli::run_cli(args, std::cout, std::cerr);
}
