// Test hooks: how many programs `ir::parse` has parsed and `ir::check` has checked in this
// process (one analysis parses its program once and checks it once:
// tests/python/test_entry_points.py).
#pragma once

#include <cstdint>

namespace solar::ir {

int64_t parse_count();
int64_t check_count();

}  // namespace solar::ir
