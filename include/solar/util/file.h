// Whole-file reads and atomic writes, with one-line UserErrors naming the file.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace solar {

// The bytes of a file; a missing or unreadable file is a UserError "cannot read 'PATH': reason".
std::string read_text_file(const std::string& path);

// Writes `content` to a temporary file beside `path`, then renames it over `path`: readers see
// the old file or the new one, never a part, and nothing is left behind on error. Keeps the old
// file's permissions.
void write_file_atomically(const std::string& path, const std::string& content);

// Writes every (path, content) pair: all temporary files first, then the renames, so that a path
// that cannot be written (a missing directory, a directory in its place) leaves none of the files
// written. Two pairs naming the same file are a UserError.
void write_files_atomically(const std::vector<std::pair<std::string, std::string>>& files);

}  // namespace solar
