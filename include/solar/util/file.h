// Whole-file reads and atomic writes, with one-line UserErrors naming the file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace solar {

// The bytes of a file; a missing or unreadable file is a UserError "cannot read 'PATH': reason".
std::string read_text_file(const std::string& path);

// A file written in pieces and put in place whole: the bytes go to a temporary file beside
// `path`, which commit() renames over `path`, so readers see the old file or the new one, never a
// part. The old file's permissions are kept (a new file gets the umask's). Destroyed without
// commit(), it removes the temporary file. Every failure is a UserError "cannot write 'PATH': ..."
// ("cannot replace 'PATH': ..." when the rename fails).
class AtomicFile {
 public:
  explicit AtomicFile(std::string path);
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  ~AtomicFile();

  void write(const void* data, size_t n);
  void write(std::string_view bytes) { write(bytes.data(), bytes.size()); }
  uint64_t written() const { return written_; }  // bytes so far
  // Finishes the temporary file (flushes and closes it); commit() does it when not done yet.
  void close();
  void commit();

 private:
  [[noreturn]] void fail() const;
  std::string path_;
  std::string temp_;
  std::FILE* file_ = nullptr;
  uint64_t written_ = 0;
  bool committed_ = false;
};

// Writes `content` to `path` through an AtomicFile.
void write_file_atomically(const std::string& path, const std::string& content);

// Writes every (path, content) pair: all temporary files first, then the renames, so that a path
// that cannot be written (a missing directory, a directory in its place) leaves none of the files
// written. Two pairs naming the same file are a UserError.
void write_files_atomically(const std::vector<std::pair<std::string, std::string>>& files);

}  // namespace solar
