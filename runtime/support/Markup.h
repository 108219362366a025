//===- Markup.h - text inside XML, SVG and HTML ------------------*- C++
//-*-===//
//
// The charts and pages Weft writes (weft-plot's SVG, weftc --explain's
// HTML) put names from the user's files into markup: escaped, a name with
// '<' or '&' cannot break the document.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_SUPPORT_MARKUP_H
#define WEFT_RUNTIME_SUPPORT_MARKUP_H

#include <string>
#include <string_view>

namespace weft::runtime {

/// `text` with &, <, > and " as entities: safe in element text and in
/// double-quoted attribute values.
inline std::string escapeMarkup(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text)
    switch (c) {
    case '&':
      out += "&amp;";
      break;
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '"':
      out += "&quot;";
      break;
    default:
      out += c;
    }
  return out;
}

} // namespace weft::runtime

#endif // WEFT_RUNTIME_SUPPORT_MARKUP_H
