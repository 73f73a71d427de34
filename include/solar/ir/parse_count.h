// A test hook: how many programs `ir::parse` has parsed in this process (one analysis parses its
// program once: tests/python/test_entry_points.py).
#pragma once

#include <cstdint>

namespace solar::ir {

int64_t parse_count();

}  // namespace solar::ir
