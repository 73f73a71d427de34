// Whole-file reads and atomic writes (file.h).
#include "solar/util/file.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <system_error>

#include "solar/util/error.h"

namespace solar {

namespace fs = std::filesystem;

std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError("cannot read '" + path + "': " + std::strerror(errno));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw UserError("cannot read '" + path + "': " + std::strerror(errno));
  return text;
}

// Writes `content` to a temporary file beside `path`, then renames it over `path`: readers see
// the old file or the new one, never a part. Keeps the old file's permissions.
void write_file_atomically(const std::string& path, const std::string& content) {
  const fs::path target(path);
  fs::path tmp = target;
  tmp += ".solar-tmp";
  {
    std::ofstream o(tmp, std::ios::binary | std::ios::trunc);
    if (!o) throw UserError("cannot write '" + tmp.string() + "': " + std::strerror(errno));
    o << content;
    o.close();
    if (!o) {
      std::error_code ignored;
      fs::remove(tmp, ignored);
      throw UserError("cannot write '" + tmp.string() + "'");
    }
  }
  std::error_code ec;
  const fs::file_status old = fs::status(target, ec);
  if (!ec && fs::exists(old)) fs::permissions(tmp, old.permissions(), ec);
  fs::rename(tmp, target, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    throw UserError("cannot replace '" + path + "': " + ec.message());
  }
}

}  // namespace solar
