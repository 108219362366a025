//===- safetensors_test.cpp - the safetensors reader and writer -----------===//

#include "runtime/io/Safetensors.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

using namespace weft::runtime;

namespace {
/// A file image with `header` (JSON text) and `dataBytes` zero bytes.
std::string image(const std::string &header, size_t dataBytes,
                  uint64_t declaredLength = UINT64_MAX) {
  uint64_t len = declaredLength == UINT64_MAX ? header.size() : declaredLength;
  std::string out(8, '\0');
  std::memcpy(out.data(), &len, 8);
  return out + header + std::string(dataBytes, '\0');
}

std::string parseError(const std::string &bytes) {
  auto file = SafetensorsFile::parse(bytes, "ckpt.safetensors");
  EXPECT_FALSE(file.ok());
  return file.ok() ? "" : std::string(file.status().message());
}
} // namespace

TEST(Safetensors, RoundTripsEveryFloatType) {
  std::string path = ::testing::TempDir() + "roundtrip.safetensors";
  std::vector<TensorToWrite> tensors = {
      {"a.f32", DType::F32, {2, 3}, {1.5, -2.25, 3.0, 0.1, 1e-30, -0.0}},
      {"b.bf16", DType::BF16, {3}, {1.0, -0.5, 3.140625}},
      {"c.f16", DType::F16, {2}, {65504.0, -6.103515625e-05}},
      {"d.f8", DType::F8E4M3FN, {2}, {448.0, -0.015625}},
      {"e.f8", DType::F8E5M2, {1}, {57344.0}},
      {"f.i32", DType::I32, {2}, {-7, 123456}},
      {"g.empty", DType::F32, {0, 4}, {}},
  };
  ASSERT_TRUE(writeSafetensors(path, tensors, {{"format", "pt"}}).ok());
  auto file = SafetensorsFile::read(path);
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(file->tensors().size(), tensors.size());
  EXPECT_EQ(file->metadata().at("format"), "pt");
  for (const TensorToWrite &t : tensors) {
    const TensorInfo *info = file->find(t.name);
    ASSERT_NE(info, nullptr) << t.name;
    EXPECT_EQ(info->dtype, t.dtype);
    EXPECT_EQ(info->shape, t.shape);
    std::vector<double> values = file->toDoubles(*info);
    ASSERT_EQ(values.size(), t.values.size());
    for (size_t i = 0; i < values.size(); ++i)
      EXPECT_EQ(values[i], roundTo(t.values[i], t.dtype))
          << t.name << "[" << i << "]";
  }
  // Values are rounded on the way out: 0.1 is not exact in f32.
  EXPECT_NE(file->toDoubles(*file->find("a.f32"))[3], 0.1);
}

TEST(Safetensors, DataRegionIsAligned) {
  std::string path = ::testing::TempDir() + "aligned.safetensors";
  ASSERT_TRUE(writeSafetensors(path, {{"x", DType::F64, {1}, {2.0}}}).ok());
  auto file = SafetensorsFile::read(path);
  ASSERT_TRUE(file.ok());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(file->data(file->tensors()[0])) % 8,
            0u);
}

TEST(Safetensors, RejectsDamagedHeaders) {
  EXPECT_EQ(parseError("abc"), "ckpt.safetensors: file is 3 bytes, too short "
                               "for the 8-byte header length");
  EXPECT_EQ(parseError(image("{}", 0, 1000)),
            "ckpt.safetensors: header length 1000 runs past the end of the "
            "file (10 bytes): "
            "truncated file?");
  EXPECT_EQ(parseError(image("{}", 0, uint64_t(1) << 40)),
            "ckpt.safetensors: header length 1099511627776 exceeds the limit "
            "of 104857600");
  EXPECT_EQ(parseError(image("[1, 2]", 0)),
            "ckpt.safetensors: header is not a JSON object");
  EXPECT_EQ(parseError(image("{\"a\": ", 0)).substr(0, 53),
            "ckpt.safetensors: header: is not valid JSON at byte 7");
  // A tensor named twice would be read as whichever entry was kept.
  EXPECT_EQ(parseError(image(R"({"a": {}, "a": {}})", 0)),
            "ckpt.safetensors: header: an object has key \"a\" twice");
  EXPECT_EQ(parseError(image(R"({"a": 3})", 0)),
            "ckpt.safetensors: tensor 'a' is not an object");
  EXPECT_EQ(
      parseError(image(
          R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4], "x": 1}})",
          4)),
      "ckpt.safetensors: tensor 'a' has unknown field 'x'");
  EXPECT_EQ(
      parseError(image(R"({"a": {"shape": [1], "data_offsets": [0, 4]}})", 4)),
      "ckpt.safetensors: tensor 'a' has no dtype string");
  EXPECT_EQ(
      parseError(image(
          R"({"a": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}})",
          4)),
      "ckpt.safetensors: tensor 'a' has a shape entry that is not a "
      "non-negative integer");
  EXPECT_EQ(
      parseError(image(
          R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [4]}})", 4)),
      "ckpt.safetensors: tensor 'a' needs data_offsets [begin, end]");
  EXPECT_EQ(
      parseError(image(
          R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 0]}})",
          4)),
      "ckpt.safetensors: tensor 'a' has data_offsets [4, 0] with begin > end");
  EXPECT_EQ(parseError(image(R"({"__metadata__": {"k": 1}})", 0)),
            "ckpt.safetensors: __metadata__ value of 'k' is not a string");
}

TEST(Safetensors, RejectsBadOffsets) {
  // Out of range: the data region is 4 bytes.
  EXPECT_EQ(
      parseError(image(
          R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})",
          4)),
      "ckpt.safetensors: tensor 'a' has data_offsets [0, 8] beyond the data "
      "region of 4 "
      "bytes: truncated file?");
  // Size disagrees with dtype and shape.
  EXPECT_EQ(
      parseError(image(
          R"({"a": {"dtype": "BF16", "shape": [3], "data_offsets": [0, 4]}})",
          4)),
      "ckpt.safetensors: tensor 'a' of dtype BF16 and shape [3] needs 6 bytes "
      "but its "
      "data_offsets span 4");
  // Overlap.
  EXPECT_EQ(parseError(image(
                R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                                 "b": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})",
                8)),
            "ckpt.safetensors: tensor 'b' at [4, 8) overlaps the previous "
            "tensor, which ends at 8");
  // A gap, and bytes after the last tensor.
  EXPECT_EQ(
      parseError(image(
          R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})",
          8)),
      "ckpt.safetensors: bytes [0, 4) of the data region belong to no tensor");
  EXPECT_EQ(
      parseError(image(
          R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}})",
          6)),
      "ckpt.safetensors: data region is 6 bytes but the tensors cover 4");
}

TEST(Safetensors, WriterRejectsInconsistentTensors) {
  std::string path = ::testing::TempDir() + "bad.safetensors";
  EXPECT_FALSE(writeSafetensors(path, {{"a", DType::F32, {2}, {1.0}}}).ok());
  EXPECT_FALSE(writeSafetensors(path, {{"a", DType::F32, {1}, {1.0}},
                                       {"a", DType::F32, {1}, {2.0}}})
                   .ok());
  EXPECT_FALSE(SafetensorsFile::read(path + ".missing").ok());
}

TEST(Safetensors, FindsGpt2ParametersWithOrWithoutThePrefix) {
  std::string path = ::testing::TempDir() + "prefix.safetensors";
  ASSERT_TRUE(writeSafetensors(
                  path, {{"wte.weight", DType::F32, {1}, {1.0}},
                         {"transformer.wpe.weight", DType::F32, {1}, {2.0}}})
                  .ok());
  auto file = SafetensorsFile::read(path);
  ASSERT_TRUE(file.ok());
  ASSERT_NE(file->findParameter("transformer.wte.weight"), nullptr);
  EXPECT_EQ(file->findParameter("transformer.wte.weight")->name, "wte.weight");
  EXPECT_EQ(file->findParameter("transformer.wpe.weight")->name,
            "transformer.wpe.weight");
  EXPECT_EQ(file->findParameter("lm_head.weight"), nullptr);
  EXPECT_EQ(file->findParameter("wpe.weight"), nullptr); // No reverse mapping.
}
