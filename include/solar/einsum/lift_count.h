// A test hook: how many programs `einsum::lift` has lifted in this process (one analysis lifts
// its program once: tests/python/test_entry_points.py).
#pragma once

#include <cstdint>

namespace solar::einsum {

int64_t lift_count();

}  // namespace solar::einsum
