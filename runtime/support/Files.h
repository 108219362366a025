//===- Files.h - reading the files a user names ------------------*- C++
//-*-===//
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

#include <string>

namespace weft::runtime {

/// The bytes of regular file `path`; errors start with the path and say
/// what it is instead (missing, a directory, unreadable).
absl::StatusOr<std::string> readWholeFile(const std::string &path);

} // namespace weft::runtime

#endif // WEFT_RUNTIME_SUPPORT_FILES_H
