// A fixture of the ctest test `layering_catches_a_violation` (CMakeLists.txt): the IR may not
// use the SOL module, so cmake/check_layering.cmake must fail on this line.
#pragma once

#include "solar/sol/analysis.h"
