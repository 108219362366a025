//===- Files.cpp - reading the files a user names ------------------------===//

#include "runtime/support/Files.h"

#include "absl/strings/str_cat.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sys/stat.h>

namespace weft::runtime {

namespace {

/// The bytes of the open `file` (closed here), failing past `maxBytes`.
absl::StatusOr<std::string>
readOpenFile(std::FILE *file, const std::string &path, size_t maxBytes) {
  std::string bytes;
  char chunk[1 << 16];
  size_t got;
  while (bytes.size() <= maxBytes &&
         (got = std::fread(chunk, 1, sizeof(chunk), file)) > 0)
    bytes.append(chunk, got);
  bool failed = std::ferror(file);
  int error = errno;
  std::fclose(file);
  if (failed)
    return absl::DataLossError(
        absl::StrCat(path, ": cannot read: ", std::strerror(error)));
  if (bytes.size() > maxBytes)
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": is more than ", maxBytes,
                     " bytes, the most this file may hold"));
  return bytes;
}

} // namespace

absl::StatusOr<std::string> readWholeFile(const std::string &path) {
  struct stat info;
  if (::stat(path.c_str(), &info) != 0)
    return absl::NotFoundError(
        absl::StrCat(path, ": cannot open file: ", std::strerror(errno)));
  if (S_ISDIR(info.st_mode))
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": is a directory, not a file"));
  if (!S_ISREG(info.st_mode))
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": is not a regular file"));
  std::FILE *file = std::fopen(path.c_str(), "rb");
  if (!file)
    return absl::NotFoundError(
        absl::StrCat(path, ": cannot open file: ", std::strerror(errno)));
  return readOpenFile(file, path, std::string().max_size());
}

absl::StatusOr<std::string> readFileAtMost(const std::string &path,
                                           size_t maxBytes) {
  // A directory opens; reading it fails with EISDIR.
  std::FILE *file = std::fopen(path.c_str(), "rb");
  if (!file)
    return absl::NotFoundError(
        absl::StrCat(path, ": cannot read: ", std::strerror(errno)));
  return readOpenFile(file, path, maxBytes);
}

} // namespace weft::runtime
