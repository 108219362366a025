//===- Json.cpp - parse untrusted JSON text -------------------------------===//

#include "runtime/support/Json.h"

#include "absl/strings/str_cat.h"

#include <set>
#include <string>
#include <vector>

namespace weft::runtime {
namespace {
using json = nlohmann::json;

/// A SAX pass that builds nothing: it tracks the open objects' keys and the
/// depth, and stops at the first repeated key or level too deep.
class Checker : public nlohmann::json_sax<json> {
public:
  explicit Checker(int maxDepth) : maxDepth(maxDepth) {}

  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t &) override { return true; }
  bool string(string_t &) override { return true; }
  bool binary(binary_t &) override { return true; }
  bool start_object(std::size_t) override {
    keys.emplace_back();
    return open();
  }
  bool key(string_t &k) override {
    if (!keys.back().insert(k).second) {
      problem = absl::StrCat("an object has key \"", k, "\" twice");
      return false;
    }
    return true;
  }
  bool end_object() override {
    keys.pop_back();
    --depth;
    return true;
  }
  bool start_array(std::size_t) override {
    keys.emplace_back(); // Keeps `keys` aligned with the nesting.
    return open();
  }
  bool end_array() override {
    keys.pop_back();
    --depth;
    return true;
  }
  bool parse_error(std::size_t position, const std::string &,
                   const nlohmann::detail::exception &e) override {
    problem = absl::StrCat("is not valid JSON at byte ", position, " (",
                           e.what(), ")");
    return false;
  }

  std::string problem;

private:
  bool open() {
    if (++depth > maxDepth) {
      problem = absl::StrCat("nests arrays and objects deeper than ", maxDepth,
                             " levels");
      return false;
    }
    return true;
  }

  int maxDepth;
  int depth = 0;
  std::vector<std::set<std::string>> keys;
};

} // namespace

absl::Status checkUntrustedJson(std::string_view text, int maxDepth) {
  Checker checker(maxDepth);
  if (!json::sax_parse(text.begin(), text.end(), &checker))
    return absl::InvalidArgumentError(checker.problem.empty()
                                          ? std::string("is not valid JSON")
                                          : checker.problem);
  return absl::OkStatus();
}

absl::StatusOr<json> parseUntrustedJson(std::string_view text, int maxDepth) {
  if (absl::Status s = checkUntrustedJson(text, maxDepth); !s.ok())
    return s;
  // The checked text parses: the SAX pass accepted exactly this grammar.
  json doc = json::parse(text.begin(), text.end(), nullptr,
                         /*allow_exceptions=*/false);
  if (doc.is_discarded())
    return absl::InvalidArgumentError("is not valid JSON");
  return doc;
}

} // namespace weft::runtime
