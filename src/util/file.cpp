// Whole-file reads and atomic writes (file.h).
#include "solar/util/file.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <system_error>
#include <utility>
#include <vector>

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

namespace {

fs::path temp_path(const std::string& path) {
  fs::path tmp(path);
  tmp += ".solar-tmp";
  return tmp;
}

void remove_quietly(const fs::path& p) {
  std::error_code ignored;
  fs::remove(p, ignored);
}

// Writes `content` to the temporary file beside `path`; a UserError naming `path` on failure
// (nothing left behind).
void write_temp(const std::string& path, const std::string& content) {
  const fs::path tmp = temp_path(path);
  std::error_code ec;
  if (fs::is_directory(fs::path(path), ec)) {
    throw UserError("cannot write '" + path + "': it is a directory");
  }
  std::ofstream o(tmp, std::ios::binary | std::ios::trunc);
  if (!o) throw UserError("cannot write '" + path + "': " + std::strerror(errno));
  o << content;
  o.close();
  if (!o) {
    remove_quietly(tmp);
    throw UserError("cannot write '" + path + "'");
  }
}

}  // namespace

void write_file_atomically(const std::string& path, const std::string& content) {
  write_files_atomically({{path, content}});
}

void write_files_atomically(const std::vector<std::pair<std::string, std::string>>& files) {
  for (size_t i = 0; i < files.size(); ++i) {
    for (size_t k = 0; k < i; ++k) {
      if (fs::absolute(files[k].first).lexically_normal() ==
          fs::absolute(files[i].first).lexically_normal()) {
        throw UserError("two outputs are written to the same file '" + files[i].first + "'");
      }
    }
  }
  for (size_t i = 0; i < files.size(); ++i) {
    try {
      write_temp(files[i].first, files[i].second);
    } catch (...) {
      for (size_t k = 0; k < i; ++k) remove_quietly(temp_path(files[k].first));
      throw;
    }
  }
  for (size_t i = 0; i < files.size(); ++i) {
    const fs::path target(files[i].first), tmp = temp_path(files[i].first);
    std::error_code ec;
    const fs::file_status old = fs::status(target, ec);
    if (!ec && fs::exists(old)) fs::permissions(tmp, old.permissions(), ec);
    fs::rename(tmp, target, ec);
    if (ec) {
      for (size_t k = i; k < files.size(); ++k) remove_quietly(temp_path(files[k].first));
      throw UserError("cannot replace '" + files[i].first + "': " + ec.message());
    }
  }
}

}  // namespace solar
