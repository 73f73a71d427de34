#include "solar/cli/guard.h"

#include <exception>
#include <new>
#include <ostream>

#include "solar/ir/diagnostic.h"
#include "solar/util/error.h"

namespace solar::cli {

std::string error_line(const std::string& prog, const std::string& message) {
  if (message.find(": error: ") != std::string::npos) return message;
  return prog + ": error: " + message;
}

int run_guarded(std::ostream& err, const std::string& prog, const std::function<int()>& body) {
  try {
    return body();
  } catch (const ir::DiagnosticError& e) {
    for (const ir::Diagnostic& d : e.diagnostics()) err << d.str() << '\n';
    if (e.diagnostics().empty()) err << error_line(prog, e.what()) << '\n';
    return 1;
  } catch (const UserError& e) {
    err << error_line(prog, e.what()) << '\n';
    return 1;
  } catch (const InternalError& e) {
    err << "solar: " << e.what() << '\n';
    return 2;
  } catch (const std::bad_alloc&) {
    err << prog << ": error: out of memory (run at smaller sizes or lower --memory-limit)\n";
    return 1;
  } catch (const std::exception& e) {
    err << "solar: internal error (please report): " << e.what() << '\n';
    return 2;
  } catch (...) {
    err << "solar: internal error (please report): unknown exception\n";
    return 2;
  }
}

}  // namespace solar::cli
