//===- compiler_test.cpp - the JIT API ------------------------------------===//

#include "compiler/Compiler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

using namespace weft;

TEST(Compiler, CompilesAConfigAndTrains) {
  Compiler compiler;
  CompileOptions options;
  options.batch = 2;
  options.seq = 8;
  options.seed = 3;
  auto exe = compiler.compileConfig(std::string(WEFT_SOURCE_DIR) +
                                        "/examples/configs/llama-tiny.json",
                                    options);
  ASSERT_TRUE(exe.ok()) << exe.status();
  EXPECT_EQ((*exe)->batch(), 2);
  EXPECT_EQ((*exe)->seq(), 8);
  std::vector<int32_t> x(16), y(16);
  for (int i = 0; i < 16; ++i) {
    x[i] = (7 * i) % 256;
    y[i] = (7 * i + 1) % 256;
  }
  std::vector<float> logits;
  auto before = (*exe)->evaluate(x.data(), y.data(), &logits);
  ASSERT_TRUE(before.ok());
  EXPECT_NEAR(*before, std::log(256.0), 0.1);
  EXPECT_EQ(logits.size(), 2u * 8 * 256);
  for (int s = 0; s < 20; ++s)
    ASSERT_TRUE((*exe)->trainStep(x.data(), y.data(), 1e-2f).ok());
  auto after = (*exe)->evaluate(x.data(), y.data());
  ASSERT_TRUE(after.ok());
  EXPECT_LT(*after, *before - 2.0);
  auto names = (*exe)->parameterNames();
  EXPECT_EQ(names.front(), "model.embed_tokens.weight");
  auto norm = (*exe)->parameter("model.norm.weight");
  ASSERT_TRUE(norm.ok()) << norm.status();
  EXPECT_EQ(norm->size(), 64u);
  // Written weights are what the next evaluation reads.
  std::vector<float> zeros(norm->size(), 0.0f);
  ASSERT_TRUE((*exe)->setParameter("model.norm.weight", zeros).ok());
  EXPECT_EQ(*(*exe)->parameter("model.norm.weight"), zeros);
  auto blind = (*exe)->evaluate(x.data(), y.data());
  ASSERT_TRUE(blind.ok());
  // A zero final norm zeroes the logits: every token equally likely.
  EXPECT_NEAR(*blind, std::log(256.0), 1e-3);
  EXPECT_FALSE((*exe)->setParameter("model.norm.weight", {1.0f}).ok());
}

TEST(Compiler, ReportsBadInput) {
  Compiler compiler;
  auto missing = compiler.compileConfig("/nonexistent/config.json", {});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(
      missing.status().message().find("/nonexistent/config.json: cannot read"),
      std::string::npos);
  auto bad =
      compiler.compileMlir("func.func @forward() {\n  %0 = weft.exp\n}", {});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("cannot parse the module"),
            std::string::npos);
  auto noLoss = compiler.compileMlir(R"(
    func.func @forward(%t: tensor<1x2xi32>, %l: tensor<1x2xi32>) -> tensor<2xf32> {
      %w = weft.param "w" init(zeros) : tensor<2xf32>
      return %w : tensor<2xf32>
    })",
                                     {});
  ASSERT_FALSE(noLoss.ok());
  EXPECT_NE(noLoss.status().message().find("must be the 0-d f32 loss"),
            std::string::npos);
  EXPECT_FALSE(compiler.compileGraph({}).ok());
}
