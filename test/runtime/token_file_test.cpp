//===- token_file_test.cpp - flat token files and the byte tokenizer ------===//

#include "runtime/data/TokenFile.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

using namespace weft::runtime;

namespace {
std::string writeTemp(const std::string &name, const std::string &bytes) {
  std::string path = ::testing::TempDir() + name;
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}
} // namespace

TEST(TokenFile, ReadsLittleEndianUint16AndUint32) {
  std::string path =
      writeTemp("u16.bin", std::string("\x01\x00\xff\xff\x34\x12", 6));
  auto u16 = readTokenFile(path, 2);
  ASSERT_TRUE(u16.ok()) << u16.status();
  EXPECT_EQ(*u16, (std::vector<uint32_t>{1, 65535, 0x1234}));
  path =
      writeTemp("u32.bin", std::string("\x78\x56\x34\x12\x01\x00\x00\x00", 8));
  auto u32 = readTokenFile(path, 4);
  ASSERT_TRUE(u32.ok()) << u32.status();
  EXPECT_EQ(*u32, (std::vector<uint32_t>{0x12345678, 1}));
}

TEST(TokenFile, RejectsBadSizesAndWidths) {
  std::string path = writeTemp("odd.bin", "abc");
  auto odd = readTokenFile(path, 2);
  ASSERT_FALSE(odd.ok());
  EXPECT_NE(odd.status().message().find(
                "odd.bin: size 3 bytes is not a multiple of the 2-byte"),
            std::string::npos);
  EXPECT_FALSE(readTokenFile(path, 3).ok());
  EXPECT_FALSE(readTokenFile(path + ".missing", 2).ok());
}

TEST(TokenFile, ByteTokenizerRoundTrips) {
  std::string text = "h\xc3\xa9llo\n";
  auto tokens = readByteTokens(writeTemp("text.txt", text));
  ASSERT_TRUE(tokens.ok());
  EXPECT_EQ(tokens->size(), text.size());
  EXPECT_EQ((*tokens)[1], 0xc3u);
  EXPECT_EQ(decodeByteTokens(*tokens), text);
}

TEST(TokenFile, RangeCheckNamesThePosition) {
  absl::Status ok = checkTokenRange({1, 2, 3}, 4, "f");
  EXPECT_TRUE(ok.ok());
  absl::Status bad = checkTokenRange({1, 2, 9, 3}, 4, "data.bin");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(
      bad.message(),
      "data.bin: token id 9 at position 2 is not below the vocabulary size 4");
}
