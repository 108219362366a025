//===- MlirText.cpp - limits on .mlir text before it is parsed ------------===//

#include "frontend/MlirText.h"

#include "llvm/Support/FormatVariadic.h"

using namespace llvm;

namespace weft {

Error checkMlirNesting(StringRef text, StringRef name, int maxDepth) {
  int depth = 0;
  int64_t line = 1, column = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    ++column;
    if (c == '\n') {
      ++line, column = 0;
      continue;
    }
    if (c == '"') { // A string: to its closing quote, past escapes.
      for (++i; i < text.size() && text[i] != '"' && text[i] != '\n'; ++i)
        i += text[i] == '\\';
      continue; // Column counting inside strings is not needed exactly.
    }
    if (c == '/' && i + 1 < text.size() && text[i + 1] == '/') {
      while (i + 1 < text.size() && text[i + 1] != '\n')
        ++i;
      continue;
    }
    if (c == '{' || c == '[' || c == '(' || c == '<') {
      if (++depth > maxDepth)
        return createStringError(
            inconvertibleErrorCode(),
            formatv("{0}:{1}:{2}: the IR nests deeper than {3} levels of "
                    "braces, brackets, parentheses and angle brackets",
                    name, line, column, maxDepth));
    } else if ((c == '}' || c == ']' || c == ')' ||
                (c == '>' && (i == 0 || text[i - 1] != '-'))) &&
               depth > 0) {
      --depth;
    }
  }
  return Error::success();
}

} // namespace weft
