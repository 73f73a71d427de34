#include "solar/util/error.h"

namespace solar {

void internal_error(const char* file, int line, const std::string& what) {
  throw InternalError(std::string("internal error (please report): ") + what + " [" + file + ":" +
                      std::to_string(line) + "]");
}

}  // namespace solar
