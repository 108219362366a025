//===- Files.h - reading the files a user names -----------------*- C++ -*-===//
//
// Every file a user names (data, checkpoints, manifests) is read through
// readWholeFile, so a path that is a directory, missing or unreadable is an
// error naming it, not an exception out of iostreams (libstdc++'s filebuf
// throws from inside an istreambuf_iterator on a directory).
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_SUPPORT_FILES_H
#define WEFT_RUNTIME_SUPPORT_FILES_H

#include "absl/status/statusor.h"

#include <cstddef>
#include <string>

namespace weft::runtime {

/// The bytes of regular file `path`; errors start with the path and say
/// what it is instead (missing, a directory, unreadable).
absl::StatusOr<std::string> readWholeFile(const std::string &path);

/// The bytes of `path`, which may also be a pipe or a device (/dev/stdin,
/// a shell's <(...)), reading no more than `maxBytes`: a longer file, or
/// an endless one (/dev/zero), is an error naming it and the limit, for
/// small files a user names (model configs). Errors start with the
/// path: "cannot read: <reason>" (missing, a directory), "is more than N
/// bytes".
absl::StatusOr<std::string> readFileAtMost(const std::string &path,
                                           size_t maxBytes);

} // namespace weft::runtime

#endif // WEFT_RUNTIME_SUPPORT_FILES_H
