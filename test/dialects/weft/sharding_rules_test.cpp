//===- sharding_rules_test.cpp - sharding rules of weft ops ---------------===//

#include "test/compiler/TestUtils.h"

using namespace weft;

namespace {
/// The rule of the op defining the function's first result.
std::string ruleOf(llvm::StringRef text) {
  auto context = testutil::makeContext();
  auto module = testutil::parse(*context, text);
  if (!module)
    return "";
  auto ret = llvm::cast<mlir::func::ReturnOp>(
      testutil::firstFunc(*module).getBody().front().getTerminator());
  auto op = llvm::dyn_cast<ShardingRuleOpInterface>(
      ret.getOperand(0).getDefiningOp());
  EXPECT_TRUE(op) << "no sharding rule";
  return op ? op.getShardingRule().str() : "";
}
} // namespace

TEST(ShardingRules, Elementwise) {
  EXPECT_EQ(ruleOf(R"(
    func.func @f(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> tensor<4x8xf32> {
      %0 = weft.add %x, %y : tensor<4x8xf32>
      return %0 : tensor<4x8xf32>
    })"),
            "([i, j], [i, j]) -> ([i, j]) {i=4, j=8}");
}

TEST(ShardingRules, MatmulWithABatchAndTransposedWeight) {
  // Factors: batch i, rows j, columns k, contraction l (a reduction).
  // Megatron's column-parallel layers split k, its row-parallel layers l.
  EXPECT_EQ(ruleOf(R"(
    func.func @f(%x: tensor<2x16x64xf32>, %w: tensor<256x64xf32>) -> tensor<2x16x256xf32> {
      %0 = weft.matmul %x, %w transpose_rhs : tensor<2x16x64xf32>, tensor<256x64xf32>
      return %0 : tensor<2x16x256xf32>
    })"),
            "([i, j, l], [k, l]) -> ([i, j, k]) {i=2, j=16, k=256, l=64} "
            "reduction={l}");
}

TEST(ShardingRules, ReductionsAndTranspose) {
  EXPECT_EQ(ruleOf(R"(
    func.func @f(%x: tensor<4x8x16xf32>) -> tensor<4xf32> {
      %0 = weft.reduce_sum %x dims [1, 2] : tensor<4x8x16xf32>
      return %0 : tensor<4xf32>
    })"),
            "([i, j, k]) -> ([i]) {i=4, j=8, k=16} reduction={j, k}");
  EXPECT_EQ(ruleOf(R"(
    func.func @f(%x: tensor<4x8xf32>) -> tensor<4xf32> {
      %0 = weft.reduce_mean %x dims [1] : tensor<4x8xf32>
      return %0 : tensor<4xf32>
    })"),
            "([i, j]) -> ([i]) {i=4, j=8} mean={j}");
  // A max does not combine by sum or mean: its reduced dims stay whole.
  EXPECT_EQ(ruleOf(R"(
    func.func @f(%x: tensor<4x8xf32>) -> tensor<4xf32> {
      %0 = weft.reduce_max %x dims [1] : tensor<4x8xf32>
      return %0 : tensor<4xf32>
    })"),
            "([i, -]) -> ([i]) {i=4}");
  EXPECT_EQ(ruleOf(R"(
    func.func @f(%x: tensor<2x3x4xf32>) -> tensor<4x2x3xf32> {
      %0 = weft.transpose %x [2, 0, 1] : tensor<2x3x4xf32>
      return %0 : tensor<4x2x3xf32>
    })"),
            "([i, j, k]) -> ([k, i, j]) {i=2, j=3, k=4}");
}

TEST(ShardingRules, NormsKeepRowsWhole) {
  EXPECT_EQ(ruleOf(R"(
    func.func @f(%x: tensor<2x8x64xf32>, %g: tensor<64xf32>) -> tensor<2x8x64xf32> {
      %0 = weft.layer_norm %x, %g, %g : tensor<2x8x64xf32>, tensor<64xf32>, tensor<64xf32>
      return %0 : tensor<2x8x64xf32>
    })"),
            "([i, j, -], [-], [-]) -> ([i, j, -]) {i=2, j=8}");
}

TEST(ShardingRules, EmbeddingAndAttention) {
  EXPECT_EQ(
      ruleOf(R"(
    func.func @f(%t: tensor<256x64xf32>, %ids: tensor<2x8xi32>) -> tensor<2x8x64xf32> {
      %0 = weft.embedding %t, %ids : tensor<256x64xf32>, tensor<2x8xi32>
      return %0 : tensor<2x8x64xf32>
    })"),
      "([l, k], [i, j]) -> ([i, j, k]) {i=2, j=8, k=64, l=256} reduction={l}");
  // Multi-head: heads split everywhere; grouped-query: kv heads stay whole.
  EXPECT_EQ(ruleOf(R"(
    func.func @f(%q: tensor<2x8x4x16xf32>) -> tensor<2x8x4x16xf32> {
      %0:2 = weft.attention %q, %q, %q scale = 0.25 causal : tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>
      return %0#0 : tensor<2x8x4x16xf32>
    })"),
            "([i, -, j, -], [i, -, j, -], [i, -, j, -]) -> ([i, -, j, -], [i, "
            "j, -]) {i=2, j=4}");
  EXPECT_EQ(ruleOf(R"(
    func.func @f(%q: tensor<2x8x4x16xf32>, %kv: tensor<2x8x2x16xf32>) -> tensor<2x8x4x16xf32> {
      %0:2 = weft.attention %q, %kv, %kv scale = 0.25 : tensor<2x8x4x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32>
      return %0#0 : tensor<2x8x4x16xf32>
    })"),
            "([i, -, j, -], [i, -, j, -], [i, -, j, -]) -> ([i, -, j, -], [i, "
            "j, -]) {i=2, j=4}");
}

TEST(ShardingRules, ShapesSoftmaxRopeAndLoss) {
  EXPECT_EQ(ruleOf(R"(
    func.func @f(%b: tensor<64xf32>) -> tensor<2x8x64xf32> {
      %0 = weft.broadcast %b dims [2] : tensor<64xf32> -> tensor<2x8x64xf32>
      return %0 : tensor<2x8x64xf32>
    })"),
            "([k]) -> ([i, j, k]) {i=2, j=8, k=64}");
  EXPECT_EQ(ruleOf(R"(
    func.func @f(%x: tensor<2x8x192xf32>) -> tensor<2x8x64xf32> {
      %0 = weft.slice %x [0, 0, 64] to [2, 8, 128] : tensor<2x8x192xf32>
      return %0 : tensor<2x8x64xf32>
    })"),
            "([i, j, -]) -> ([i, j, -]) {i=2, j=8}");
  EXPECT_EQ(ruleOf(R"(
    func.func @f(%x: tensor<2x8x64xf32>) -> tensor<2x8x4x16xf32> {
      %0 = weft.reshape %x : tensor<2x8x64xf32> -> tensor<2x8x4x16xf32>
      return %0 : tensor<2x8x4x16xf32>
    })"),
            "([i, j, k]) -> ([i, j, k, -]) {i=2, j=8, k=4}");
  // Merging dims: the batch splits through the flatten of [B, S].
  EXPECT_EQ(ruleOf(R"(
    func.func @f(%x: tensor<2x8x64xf32>) -> tensor<16x64xf32> {
      %0 = weft.reshape %x : tensor<2x8x64xf32> -> tensor<16x64xf32>
      return %0 : tensor<16x64xf32>
    })"),
            "([i, -, j]) -> ([i, j]) {i=2, j=64}");
  // Size-1 dims never split; the run's major non-unit dims pair up.
  EXPECT_EQ(ruleOf(R"(
    func.func @f(%x: tensor<1x6x4xf32>) -> tensor<3x8xf32> {
      %0 = weft.reshape %x : tensor<1x6x4xf32> -> tensor<3x8xf32>
      return %0 : tensor<3x8xf32>
    })"),
            "([-, i, -]) -> ([i, -]) {i=3}");
  EXPECT_EQ(ruleOf(R"(
    func.func @f(%x: tensor<2x8x64xf32>) -> tensor<2x8x64xf32> {
      %0 = weft.softmax %x dim 1 : tensor<2x8x64xf32>
      return %0 : tensor<2x8x64xf32>
    })"),
            "([i, -, j]) -> ([i, -, j]) {i=2, j=64}");
  EXPECT_EQ(ruleOf(R"(
    func.func @f(%x: tensor<2x8x4x16xf32>) -> tensor<2x8x4x16xf32> {
      %0 = weft.rope %x : tensor<2x8x4x16xf32>
      return %0 : tensor<2x8x4x16xf32>
    })"),
            "([i, -, j, -]) -> ([i, -, j, -]) {i=2, j=4}");
  EXPECT_EQ(
      ruleOf(R"(
    func.func @f(%l: tensor<2x8x256xf32>, %y: tensor<2x8xi32>) -> tensor<f32> {
      %0 = weft.cross_entropy %l, %y : tensor<2x8x256xf32>, tensor<2x8xi32>
      return %0 : tensor<f32>
    })"),
      "([i, j, k], [i, j]) -> ([]) {i=2, j=8, k=256} mean={i, j} combined={k}");
  EXPECT_EQ(ruleOf(R"(
    func.func @f(%a: tensor<2x3xf32>, %b: tensor<2x5xf32>) -> tensor<2x8xf32> {
      %0 = weft.concat %a, %b dim 1 : tensor<2x3xf32>, tensor<2x5xf32>
      return %0 : tensor<2x8xf32>
    })"),
            "([i, -], [i, -]) -> ([i, -]) {i=2}");
}

TEST(ShardingRules, Fp8TilesSplitBetweenWholeTiles) {
  // Row-wise maxima: the rows split with the tensor, the row's one block
  // is a max over a split of the columns.
  EXPECT_EQ(ruleOf(R"(
    func.func @f(%x: tensor<8x256xf32>) -> tensor<8x1xf32> {
      %0 = weft.fp8_amax %x : tensor<8x256xf32> -> tensor<8x1xf32>
      return %0 : tensor<8x1xf32>
    })"),
            "([i, j]) -> ([i, -]) {i=8, j=256} max={j}");
  // 1 x 128 tiles: the columns split only between whole tiles (j's
  // granule), the maxima with them.
  EXPECT_EQ(ruleOf(R"(
    func.func @f(%x: tensor<8x256xf32>, %a: tensor<8x2xf32>) -> tensor<8x256xf32> {
      %0 = weft.fp8_quantize %x, %a {format = f8E4M3FN} : tensor<8x256xf32>, tensor<8x2xf32>
      return %0 : tensor<8x256xf32>
    })"),
            "([i, j], [i, j]) -> ([i, j]) {i=8, j=256/128}");
  // A backward re-quantization's 128 x 1 tiles of 256 tokens keep the
  // tokens' split between them too.
  EXPECT_EQ(ruleOf(R"(
    func.func @f(%x: tensor<256x256xf32>, %a: tensor<256x2xf32>) -> tensor<256x256xf32> {
      %0 = weft.fp8_quantize %x, %a {backward_block = array<i64: 128, 1>, format = f8E4M3FN} : tensor<256x256xf32>, tensor<256x2xf32>
      return %0 : tensor<256x256xf32>
    })"),
            "([i, j], [i, j]) -> ([i, j]) {i=256/128, j=256/128}");
}
