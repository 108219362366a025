//===- Safetensors.cpp - read and write .safetensors files ----------------===//

#include "runtime/io/Safetensors.h"

#include "runtime/support/Json.h"

#include "runtime/support/Files.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>

namespace weft::runtime {
namespace {
using json = nlohmann::json;

/// Headers above this are refused before allocation (the Rust crate's limit).
constexpr uint64_t kMaxHeaderBytes = 100ull << 20;

absl::Status fail(const std::string &label, const std::string &what) {
  return absl::InvalidArgumentError(absl::StrCat(label, ": ", what));
}

std::string shapeText(const std::vector<int64_t> &shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}
} // namespace

int64_t TensorInfo::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

absl::StatusOr<SafetensorsFile> SafetensorsFile::read(const std::string &path) {
  absl::StatusOr<std::string> bytes = readWholeFile(path);
  if (!bytes.ok())
    return bytes.status();
  return parse(std::move(*bytes), path);
}

absl::StatusOr<SafetensorsFile>
SafetensorsFile::parse(std::string bytes, const std::string &label) {
  SafetensorsFile file;
  file.label_ = label;
  if (bytes.size() < 8)
    return fail(label,
                absl::StrCat("file is ", bytes.size(),
                             " bytes, too short for the 8-byte header length"));
  uint64_t headerLen = 0;
  for (int i = 7; i >= 0; --i)
    headerLen = (headerLen << 8) | static_cast<uint8_t>(bytes[i]);
  if (headerLen > kMaxHeaderBytes)
    return fail(label, absl::StrCat("header length ", headerLen,
                                    " exceeds the limit of ", kMaxHeaderBytes));
  if (headerLen > bytes.size() - 8)
    return fail(label, absl::StrCat("header length ", headerLen,
                                    " runs past the end of the file (",
                                    bytes.size(), " bytes): truncated file?"));
  std::string_view headerText(bytes.data() + 8, headerLen);
  if (headerText.empty() || headerText.front() != '{')
    return fail(label, "header is not a JSON object");
  // A tensor named twice would be read as whichever entry the parser kept.
  absl::StatusOr<json> parsed = parseUntrustedJson(headerText);
  if (!parsed.ok())
    return fail(label, absl::StrCat("header: ", parsed.status().message()));
  json header = std::move(*parsed);
  if (!header.is_object())
    return fail(label, "header is not valid JSON");

  file.dataStart_ = 8 + headerLen;
  uint64_t dataSize = bytes.size() - file.dataStart_;
  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string &name = it.key();
    const json &entry = it.value();
    if (name == "__metadata__") {
      if (!entry.is_object())
        return fail(label, "__metadata__ must be an object of strings");
      for (auto m = entry.begin(); m != entry.end(); ++m) {
        if (!m.value().is_string())
          return fail(label, absl::StrCat("__metadata__ value of '", m.key(),
                                          "' is not a string"));
        file.metadata_[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    std::string where = absl::StrCat("tensor '", name, "'");
    if (!entry.is_object())
      return fail(label, absl::StrCat(where, " is not an object"));
    for (auto f = entry.begin(); f != entry.end(); ++f)
      if (f.key() != "dtype" && f.key() != "shape" && f.key() != "data_offsets")
        return fail(label,
                    absl::StrCat(where, " has unknown field '", f.key(), "'"));
    TensorInfo info;
    info.name = name;
    auto dtype = entry.find("dtype");
    if (dtype == entry.end() || !dtype->is_string())
      return fail(label, absl::StrCat(where, " has no dtype string"));
    std::optional<DType> parsed = dtypeFromName(dtype->get<std::string>());
    if (!parsed)
      return fail(label, absl::StrCat(where, " has unknown dtype '",
                                      dtype->get<std::string>(), "'"));
    info.dtype = *parsed;
    auto shape = entry.find("shape");
    if (shape == entry.end() || !shape->is_array())
      return fail(label, absl::StrCat(where, " has no shape array"));
    uint64_t elements = 1;
    for (const json &d : *shape) {
      if (!d.is_number_unsigned())
        return fail(label, absl::StrCat(where, " has a shape entry that is not "
                                               "a non-negative integer"));
      uint64_t size = d.get<uint64_t>();
      if (size != 0 && elements > (uint64_t(1) << 62) / size)
        return fail(label,
                    absl::StrCat(where, " has an impossibly large shape"));
      elements *= size;
      info.shape.push_back(static_cast<int64_t>(size));
    }
    auto offsets = entry.find("data_offsets");
    if (offsets == entry.end() || !offsets->is_array() ||
        offsets->size() != 2 || !(*offsets)[0].is_number_unsigned() ||
        !(*offsets)[1].is_number_unsigned())
      return fail(label,
                  absl::StrCat(where, " needs data_offsets [begin, end]"));
    info.begin = (*offsets)[0].get<uint64_t>();
    info.end = (*offsets)[1].get<uint64_t>();
    if (info.begin > info.end)
      return fail(label, absl::StrCat(where, " has data_offsets [", info.begin,
                                      ", ", info.end, "] with begin > end"));
    if (info.end > dataSize)
      return fail(label,
                  absl::StrCat(where, " has data_offsets [", info.begin, ", ",
                               info.end, "] beyond the data region of ",
                               dataSize, " bytes: truncated file?"));
    uint64_t expected = elements * dtypeSize(info.dtype);
    if (info.end - info.begin != expected)
      return fail(label, absl::StrCat(where, " of dtype ",
                                      std::string(dtypeName(info.dtype)),
                                      " and shape ", shapeText(info.shape),
                                      " needs ", expected,
                                      " bytes but its "
                                      "data_offsets span ",
                                      info.end - info.begin));
    file.tensors_.push_back(std::move(info));
  }

  // The tensors must tile the data region: no overlap, no gap, nothing after.
  std::sort(file.tensors_.begin(), file.tensors_.end(),
            [](const TensorInfo &a, const TensorInfo &b) {
              return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
            });
  uint64_t cursor = 0;
  for (const TensorInfo &t : file.tensors_) {
    if (t.begin < cursor)
      return fail(label, absl::StrCat("tensor '", t.name, "' at [", t.begin,
                                      ", ", t.end,
                                      ") overlaps the previous tensor, "
                                      "which ends at ",
                                      cursor));
    if (t.begin > cursor)
      return fail(label,
                  absl::StrCat("bytes [", cursor, ", ", t.begin,
                               ") of the data region belong to no tensor"));
    cursor = t.end;
  }
  if (cursor != dataSize)
    return fail(label, absl::StrCat("data region is ", dataSize,
                                    " bytes but the tensors cover ", cursor));
  file.bytes_ = std::move(bytes);
  return file;
}

const TensorInfo *SafetensorsFile::find(const std::string &name) const {
  for (const TensorInfo &t : tensors_)
    if (t.name == name)
      return &t;
  return nullptr;
}

const TensorInfo *
SafetensorsFile::findParameter(const std::string &name) const {
  const std::string prefix = "transformer.";
  if (const TensorInfo *t = find(name))
    return t;
  return name.rfind(prefix, 0) == 0 ? find(name.substr(prefix.size()))
                                    : nullptr;
}

const uint8_t *SafetensorsFile::data(const TensorInfo &tensor) const {
  return reinterpret_cast<const uint8_t *>(bytes_.data()) + dataStart_ +
         tensor.begin;
}

std::vector<double> SafetensorsFile::toDoubles(const TensorInfo &tensor) const {
  std::vector<double> values(tensor.numElements());
  const uint8_t *p = data(tensor);
  size_t width = dtypeSize(tensor.dtype);
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = decode(p + i * width, tensor.dtype);
  return values;
}

absl::StatusOr<std::vector<double>>
SafetensorsFile::finiteDoubles(const TensorInfo &tensor) const {
  std::vector<double> values = toDoubles(tensor);
  for (size_t i = 0; i < values.size(); ++i)
    if (!std::isfinite(values[i]))
      return absl::InvalidArgumentError(absl::StrCat(
          label_, ": tensor '", tensor.name, "' holds ", values[i],
          " at element ", i, ": a checkpoint's values must be finite"));
  return values;
}

absl::StatusOr<std::vector<double>>
SafetensorsFile::parameterValues(const std::string &name, DType dtype,
                                 const std::vector<int64_t> &shape) const {
  const TensorInfo *t = findParameter(name);
  if (!t)
    return absl::NotFoundError(
        absl::StrCat(label_, ": no tensor named '", name, "'"));
  if (t->shape != shape || t->dtype != dtype)
    return absl::InvalidArgumentError(absl::StrCat(
        label_, ": tensor '", t->name, "' is ",
        std::string(dtypeName(t->dtype)), " [", absl::StrJoin(t->shape, ", "),
        "] but the model's parameter is ", std::string(dtypeName(dtype)), " [",
        absl::StrJoin(shape, ", "), "]"));
  return finiteDoubles(*t);
}

std::string stackedName(const std::string &pattern, int64_t j) {
  std::string name = pattern;
  size_t star = name.find('*');
  if (star != std::string::npos)
    name.replace(star, 1, std::to_string(j));
  return name;
}

void appendCheckpointTensor(std::vector<TensorToWrite> &out,
                            const std::string &name, const std::string &stack,
                            const std::vector<int64_t> &shape,
                            const float *values) {
  int64_t count = 1;
  for (int64_t n : shape)
    count *= n;
  if (stack.empty()) {
    out.push_back(
        {name, DType::F32, shape, std::vector<double>(values, values + count)});
    return;
  }
  std::vector<int64_t> piece(shape.begin() + 1, shape.end());
  int64_t n = shape[0] > 0 ? count / shape[0] : 0;
  for (int64_t j = 0; j < shape[0]; ++j)
    out.push_back({stackedName(stack, j), DType::F32, piece,
                   std::vector<double>(values + j * n, values + (j + 1) * n)});
}

absl::StatusOr<std::vector<double>> SafetensorsFile::stackedParameterValues(
    const std::string &pattern, DType dtype,
    const std::vector<int64_t> &shape) const {
  if (shape.empty() || std::count(pattern.begin(), pattern.end(), '*') != 1)
    return absl::InvalidArgumentError(absl::StrCat(
        label_, ": checkpoint_stack '", pattern,
        "' must name the slices of a tensor of rank >= 1 with one '*'"));
  std::vector<int64_t> piece(shape.begin() + 1, shape.end());
  std::vector<double> values;
  for (int64_t j = 0; j < shape[0]; ++j) {
    absl::StatusOr<std::vector<double>> slice =
        parameterValues(stackedName(pattern, j), dtype, piece);
    if (!slice.ok())
      return slice.status();
    values.insert(values.end(), slice->begin(), slice->end());
  }
  return values;
}

absl::Status
writeSafetensors(const std::string &path,
                 const std::vector<TensorToWrite> &tensors,
                 const std::map<std::string, std::string> &metadata) {
  json header = json::object();
  if (!metadata.empty())
    header["__metadata__"] = metadata;
  std::set<std::string> names;
  uint64_t offset = 0;
  for (const TensorToWrite &t : tensors) {
    if (!names.insert(t.name).second)
      return fail(path, absl::StrCat("tensor '", t.name, "' is written twice"));
    int64_t n = 1;
    for (int64_t d : t.shape)
      n *= d;
    if (n != static_cast<int64_t>(t.values.size()))
      return fail(path, absl::StrCat("tensor '", t.name, "' has shape ",
                                     shapeText(t.shape), " but ",
                                     t.values.size(), " values"));
    uint64_t bytes = n * dtypeSize(t.dtype);
    header[t.name] = {{"dtype", std::string(dtypeName(t.dtype))},
                      {"shape", t.shape},
                      {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text = header.dump();
  // Pad with spaces so the data region starts 8-byte aligned.
  text.append((8 - text.size() % 8) % 8, ' ');
  std::string out;
  out.reserve(8 + text.size() + offset);
  uint64_t len = text.size();
  for (int i = 0; i < 8; ++i)
    out.push_back(static_cast<char>((len >> (8 * i)) & 0xff));
  out += text;
  for (const TensorToWrite &t : tensors) {
    size_t width = dtypeSize(t.dtype);
    size_t start = out.size();
    out.resize(start + t.values.size() * width);
    for (size_t i = 0; i < t.values.size(); ++i)
      encode(t.values[i], t.dtype,
             reinterpret_cast<uint8_t *>(&out[start + i * width]));
  }
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (!file)
    return absl::PermissionDeniedError(
        absl::StrCat(path, ": cannot write file"));
  file.write(out.data(), static_cast<std::streamsize>(out.size()));
  if (!file)
    return absl::DataLossError(absl::StrCat(path, ": write failed"));
  return absl::OkStatus();
}

} // namespace weft::runtime
