// Whole-file reads and atomic writes (file.h).
#include "solar/util/file.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
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

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)), temp_(path_ + ".solar-tmp") {
  std::error_code ec;
  if (fs::is_directory(fs::path(path_), ec)) {
    throw UserError("cannot write '" + path_ + "': it is a directory");
  }
  file_ = std::fopen(temp_.c_str(), "wb");
  if (file_ == nullptr) fail();
}

AtomicFile::~AtomicFile() {
  if (file_ != nullptr) std::fclose(file_);
  if (!committed_) std::remove(temp_.c_str());
}

void AtomicFile::write(const void* data, size_t n) {
  constexpr size_t kChunk = size_t{1} << 20;  // bounded pieces for huge buffers
  SOLAR_CHECK(file_ != nullptr, "AtomicFile::write after close");
  const auto* p = static_cast<const char*>(data);
  for (size_t done = 0; done < n;) {
    const size_t chunk = std::min(kChunk, n - done);
    if (std::fwrite(p + done, 1, chunk, file_) != chunk) fail();
    done += chunk;
  }
  written_ += n;
}

void AtomicFile::close() {
  if (file_ == nullptr) return;
  const int rc = std::fclose(file_);
  file_ = nullptr;
  if (rc != 0) fail();
}

void AtomicFile::commit() {
  close();
  const fs::path target(path_);
  std::error_code ec;
  const fs::file_status old = fs::status(target, ec);
  if (!ec && fs::exists(old)) fs::permissions(temp_, old.permissions(), ec);
  fs::rename(temp_, target, ec);
  if (ec) throw UserError("cannot replace '" + path_ + "': " + ec.message());
  committed_ = true;
}

void AtomicFile::fail() const {
  throw UserError("cannot write '" + path_ + "': " + std::strerror(errno));
}

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
  // Every temporary file first; an error on any removes them all (the destructors).
  std::vector<std::unique_ptr<AtomicFile>> temps;
  for (const auto& [path, content] : files) {
    temps.push_back(std::make_unique<AtomicFile>(path));
    temps.back()->write(content);
    temps.back()->close();
  }
  for (const std::unique_ptr<AtomicFile>& f : temps) f->commit();
}

}  // namespace solar
