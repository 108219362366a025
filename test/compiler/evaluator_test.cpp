//===- evaluator_test.cpp - each op of the reference evaluator by hand ----===//
//
// Every expected value here is computed by hand (or by a formula written out
// independently of the evaluator), so a wrong kernel cannot agree with it.
//
//===----------------------------------------------------------------------===//

#include "compiler/reference/Evaluator.h"
#include "runtime/exec/CpuMath.h"
#include "runtime/support/Random.h"
#include "test/compiler/TestUtils.h"

#include "mlir/IR/Diagnostics.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

using namespace weft;
using reference::Precision;
using reference::Tensor;

namespace {
class EvaluatorTest : public ::testing::Test {
protected:
  std::unique_ptr<mlir::MLIRContext> context = testutil::makeContext();

  /// Parses a single-function module and runs it.
  std::vector<Tensor> eval(llvm::StringRef text, std::vector<Tensor> inputs,
                           Precision precision = Precision::F64) {
    module = testutil::parse(*context, text);
    if (!module)
      return {};
    return testutil::run(*module, inputs, precision);
  }

  /// Runs a graph expected to fail and returns the diagnostic.
  std::string evalError(llvm::StringRef text, std::vector<Tensor> inputs) {
    module = testutil::parse(*context, text);
    std::string message;
    testutil::DiagnosticCapture capture(*context, message);
    auto results = reference::evaluate(testutil::firstFunc(*module), inputs,
                                       reference::randomInitProvider(0));
    EXPECT_TRUE(mlir::failed(results));
    return message;
  }

  mlir::OwningOpRef<mlir::ModuleOp> module;
};

void expectNear(const Tensor &t, std::vector<double> expected,
                double tol = 1e-12) {
  ASSERT_EQ(t.data.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i)
    EXPECT_NEAR(t.data[i], expected[i], tol) << "element " << i;
}
} // namespace

TEST_F(EvaluatorTest, ElementwiseArithmetic) {
  auto r = eval(R"(
    func.func @f(%x: tensor<3xf32>, %y: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) {
      %0 = weft.add %x, %y : tensor<3xf32>
      %1 = weft.sub %x, %y : tensor<3xf32>
      %2 = weft.mul %x, %y : tensor<3xf32>
      %3 = weft.div %x, %y : tensor<3xf32>
      %4 = weft.max %x, %y : tensor<3xf32>
      return %0, %1, %2, %3, %4 : tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>
    })",
                {Tensor({3}, {1, -2, 6}), Tensor({3}, {4, 0.5, -3})});
  expectNear(r[0], {5, -1.5, 3});
  expectNear(r[1], {-3, -2.5, 9});
  expectNear(r[2], {4, -1, -18});
  expectNear(r[3], {0.25, -4, -2});
  expectNear(r[4], {4, 0.5, 6});
}

TEST_F(EvaluatorTest, ElementwiseMath) {
  auto r = eval(R"(
    func.func @f(%x: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) {
      %0 = weft.neg %x : tensor<2xf32>
      %1 = weft.exp %x : tensor<2xf32>
      %2 = weft.log %x : tensor<2xf32>
      %3 = weft.tanh %x : tensor<2xf32>
      %4 = weft.sqrt %x : tensor<2xf32>
      %5 = weft.rsqrt %x : tensor<2xf32>
      %6 = weft.square %x : tensor<2xf32>
      %7 = weft.pow %x {exponent = 3.0 : f64} : tensor<2xf32>
      %8 = weft.gelu %x : tensor<2xf32>
      %9 = weft.silu %x : tensor<2xf32>
      return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9 : tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>
    })",
                {Tensor({2}, {1, 4})});
  expectNear(r[0], {-1, -4});
  expectNear(r[1], {M_E, std::exp(4.0)});
  expectNear(r[2], {0, 2 * M_LN2});
  expectNear(r[3], {0.7615941559557649, 0.999329299739067});
  expectNear(r[4], {1, 2});
  expectNear(r[5], {1, 0.5});
  expectNear(r[6], {1, 16});
  expectNear(r[7], {1, 64});
  // gelu_new(1) and gelu_new(4) from the tanh formula (Python math).
  expectNear(r[8], {0.8411919906082768, 3.9999297540518075});
  expectNear(r[9], {1 / (1 + std::exp(-1.0)), 4 / (1 + std::exp(-4.0))});
}

TEST_F(EvaluatorTest, MatmulWithTransposesAndBatchBroadcast) {
  // [[1,2,3],[4,5,6]] @ [[1,0],[0,1],[1,1]] = [[4,5],[10,11]]
  auto r = eval(R"(
    func.func @f(%a: tensor<2x3xf32>, %b: tensor<3x2xf32>, %bt: tensor<2x3xf32>, %batched: tensor<2x2x3xf32>) -> (tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2x2xf32>, tensor<3x3xf32>) {
      %0 = weft.matmul %a, %b : tensor<2x3xf32>, tensor<3x2xf32>
      %1 = weft.matmul %a, %bt transpose_rhs : tensor<2x3xf32>, tensor<2x3xf32>
      %2 = weft.matmul %batched, %b : tensor<2x2x3xf32>, tensor<3x2xf32>
      %3 = weft.matmul %a, %a transpose_lhs : tensor<2x3xf32>, tensor<2x3xf32>
      return %0, %1, %2, %3 : tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2x2xf32>, tensor<3x3xf32>
    })",
                {Tensor({2, 3}, {1, 2, 3, 4, 5, 6}),
                 Tensor({3, 2}, {1, 0, 0, 1, 1, 1}),
                 Tensor({2, 3}, {1, 0, 1, 0, 1, 1}),
                 Tensor({2, 2, 3}, {1, 2, 3, 4, 5, 6, 0, 0, 1, 1, 0, 0})});
  expectNear(r[0], {4, 5, 10, 11});
  expectNear(r[1], {4, 5, 10, 11});
  expectNear(r[2], {4, 5, 10, 11, 1, 1, 1, 0});
  // a^T a
  expectNear(r[3], {17, 22, 27, 22, 29, 36, 27, 36, 45});
}

TEST_F(EvaluatorTest, ShapeOps) {
  auto r = eval(R"(
    func.func @f(%x: tensor<2x3xf32>, %v: tensor<3xf32>) -> (tensor<3x2xf32>, tensor<3x2xf32>, tensor<2x2x3xf32>, tensor<1x2xf32>, tensor<2x6xf32>, tensor<4x3xf32>) {
      %0 = weft.reshape %x : tensor<2x3xf32> -> tensor<3x2xf32>
      %1 = weft.transpose %x [1, 0] : tensor<2x3xf32>
      %2 = weft.broadcast %v dims [2] : tensor<3xf32> -> tensor<2x2x3xf32>
      %3 = weft.slice %x [1, 1] to [2, 3] : tensor<2x3xf32>
      %4 = weft.concat %x, %x dim 1 : tensor<2x3xf32>, tensor<2x3xf32>
      %5 = weft.concat %x, %x dim 0 : tensor<2x3xf32>, tensor<2x3xf32>
      return %0, %1, %2, %3, %4, %5 : tensor<3x2xf32>, tensor<3x2xf32>, tensor<2x2x3xf32>, tensor<1x2xf32>, tensor<2x6xf32>, tensor<4x3xf32>
    })",
                {Tensor({2, 3}, {1, 2, 3, 4, 5, 6}), Tensor({3}, {7, 8, 9})});
  expectNear(r[0], {1, 2, 3, 4, 5, 6});
  expectNear(r[1], {1, 4, 2, 5, 3, 6});
  expectNear(r[2], {7, 8, 9, 7, 8, 9, 7, 8, 9, 7, 8, 9});
  expectNear(r[3], {5, 6});
  expectNear(r[4], {1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6});
  expectNear(r[5], {1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6});
}

TEST_F(EvaluatorTest, BroadcastOfSizeOneDimensions) {
  auto r = eval(R"(
    func.func @f(%x: tensor<2x1xf32>) -> tensor<2x3xf32> {
      %0 = weft.broadcast %x dims [0, 1] : tensor<2x1xf32> -> tensor<2x3xf32>
      return %0 : tensor<2x3xf32>
    })",
                {Tensor({2, 1}, {1, 2})});
  expectNear(r[0], {1, 1, 1, 2, 2, 2});
}

TEST_F(EvaluatorTest, Reductions) {
  auto r = eval(R"(
    func.func @f(%x: tensor<2x3xf32>) -> (tensor<2xf32>, tensor<3xf32>, tensor<f32>) {
      %0 = weft.reduce_sum %x dims [1] : tensor<2x3xf32>
      %1 = weft.reduce_max %x dims [0] : tensor<2x3xf32>
      %2 = weft.reduce_mean %x dims [0, 1] : tensor<2x3xf32>
      return %0, %1, %2 : tensor<2xf32>, tensor<3xf32>, tensor<f32>
    })",
                {Tensor({2, 3}, {1, -2, 3, -4, 5, -6})});
  expectNear(r[0], {2, -5});
  expectNear(r[1], {1, 5, 3});
  expectNear(r[2], {-0.5});
}

TEST_F(EvaluatorTest, CastRoundsToTheTargetType) {
  auto r = eval(R"(
    func.func @f(%x: tensor<4xf32>) -> (tensor<4xbf16>, tensor<4xf8E4M3FN>, tensor<4xi32>) {
      %0 = weft.cast %x : tensor<4xf32> to tensor<4xbf16>
      %1 = weft.cast %x : tensor<4xf32> to tensor<4xf8E4M3FN>
      %2 = weft.cast %x : tensor<4xf32> to tensor<4xi32>
      return %0, %1, %2 : tensor<4xbf16>, tensor<4xf8E4M3FN>, tensor<4xi32>
    })",
                {Tensor({4}, {1.00390625, 1.01171875, -2.7, 1000})});
  // bf16 keeps 8 significant bits: 1 + 2^-8 ties to 1, 1 + 3 * 2^-8 to 1 +
  // 2^-6.
  expectNear(r[0], {1.0, 1.015625, -2.703125, 1000});
  // e4m3 keeps 4 significant bits; 1000 is past its range (NaN).
  EXPECT_EQ(r[1].data[0], 1.0);
  EXPECT_EQ(r[1].data[2], -2.75);
  EXPECT_TRUE(std::isnan(r[1].data[3]));
  expectNear(r[2], {1, 1, -2, 1000});
}

TEST_F(EvaluatorTest, PrecisionModes) {
  const char *text = R"(
    func.func @f(%x: tensor<1xf32>) -> tensor<1xf32> {
      %0 = weft.exp %x : tensor<1xf32>
      return %0 : tensor<1xf32>
    })";
  EXPECT_EQ(eval(text, {Tensor({1}, {0.1})}, Precision::F64)[0].data[0],
            std::exp(0.1));
  EXPECT_EQ(eval(text, {Tensor({1}, {0.1})}, Precision::F32)[0].data[0],
            static_cast<double>(static_cast<float>(std::exp(0.1))));
}

TEST_F(EvaluatorTest, NarrowTypesRoundEveryOp) {
  // In bf16, 256 + 1 = 257 is not representable and rounds to 256 (even).
  auto r = eval(R"(
    func.func @f(%x: tensor<1xbf16>, %y: tensor<1xbf16>) -> tensor<1xbf16> {
      %0 = weft.add %x, %y : tensor<1xbf16>
      return %0 : tensor<1xbf16>
    })",
                {Tensor({1}, {256}), Tensor({1}, {1})});
  EXPECT_EQ(r[0].data[0], 256.0);
}

TEST_F(EvaluatorTest, EmbeddingAndOutOfRangeIds) {
  const char *text = R"(
    func.func @f(%t: tensor<3x2xf32>, %ids: tensor<2x2xi32>) -> tensor<2x2x2xf32> {
      %0 = weft.embedding %t, %ids : tensor<3x2xf32>, tensor<2x2xi32>
      return %0 : tensor<2x2x2xf32>
    })";
  Tensor table({3, 2}, {0, 1, 10, 11, 20, 21});
  auto r = eval(text, {table, Tensor({2, 2}, {2, 0, 1, 1})});
  expectNear(r[0], {20, 21, 0, 1, 10, 11, 10, 11});
  EXPECT_EQ(evalError(text, {table, Tensor({2, 2}, {0, 3, 1, 1})}),
            "token id 3 at position 1 is outside the vocabulary [0, 3)");
}

TEST_F(EvaluatorTest, Norms) {
  auto r = eval(R"(
    func.func @f(%x: tensor<1x4xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>, %y: tensor<1x2xf32>, %h: tensor<2xf32>) -> (tensor<1x4xf32>, tensor<1x2xf32>) {
      %0 = weft.layer_norm %x, %g, %b {epsilon = 0.0 : f64} : tensor<1x4xf32>, tensor<4xf32>, tensor<4xf32>
      %1 = weft.rms_norm %y, %h {epsilon = 0.0 : f64} : tensor<1x2xf32>, tensor<2xf32>
      return %0, %1 : tensor<1x4xf32>, tensor<1x2xf32>
    })",
                {Tensor({1, 4}, {1, 2, 3, 4}), Tensor({4}, {1, 1, 2, 2}),
                 Tensor({4}, {0, 0, 0, 1}), Tensor({1, 2}, {3, 4}),
                 Tensor({2}, {1, 2})});
  // mean 2.5, biased variance 1.25.
  double s = 1 / std::sqrt(1.25);
  expectNear(r[0], {-1.5 * s, -0.5 * s, 2 * 0.5 * s, 2 * 1.5 * s + 1});
  // rms = sqrt((9 + 16) / 2).
  double rms = std::sqrt(12.5);
  expectNear(r[1], {3 / rms, 2 * 4 / rms});
}

TEST_F(EvaluatorTest, SoftmaxAlongAnyDimension) {
  auto r = eval(R"(
    func.func @f(%x: tensor<3x1xf32>) -> (tensor<3x1xf32>, tensor<3x1xf32>) {
      %0 = weft.softmax %x dim 0 : tensor<3x1xf32>
      %1 = weft.softmax %x dim 1 : tensor<3x1xf32>
      return %0, %1 : tensor<3x1xf32>, tensor<3x1xf32>
    })",
                {Tensor({3, 1}, {1000, 1000 + M_LN2, 1000 + std::log(3.0)})});
  expectNear(r[0], {1.0 / 6, 2.0 / 6, 3.0 / 6});
  expectNear(r[1], {1, 1, 1});
}

TEST_F(EvaluatorTest, RotaryEmbedding) {
  // One head, head_dim 4, theta 100: frequencies 1 and 1/10 per position.
  auto r = eval(R"(
    func.func @f(%x: tensor<1x2x1x4xf32>) -> tensor<1x2x1x4xf32> {
      %0 = weft.rope %x {theta = 100.0 : f64} : tensor<1x2x1x4xf32>
      return %0 : tensor<1x2x1x4xf32>
    })",
                {Tensor({1, 2, 1, 4}, {1, 2, 3, 4, 1, 2, 3, 4})});
  // Position 0 is unchanged. Position 1 rotates (x0, x2) by 1 rad and
  // (x1, x3) by 0.1 rad.
  expectNear(r[0], {1, 2, 3, 4, std::cos(1.0) - 3 * std::sin(1.0),
                    2 * std::cos(0.1) - 4 * std::sin(0.1),
                    3 * std::cos(1.0) + std::sin(1.0),
                    4 * std::cos(0.1) + 2 * std::sin(0.1)});
}

TEST_F(EvaluatorTest, CausalGroupedQueryAttention) {
  // B=1, S=2, Hq=2, Hkv=1, D=1. Scores scale * q * k with k = [0, ln 2].
  auto r = eval(R"(
    func.func @f(%q: tensor<1x2x2x1xf32>, %k: tensor<1x2x1x1xf32>, %v: tensor<1x2x1x2xf32>) -> (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) {
      %0, %lse0 = weft.attention %q, %k, %v scale = 1.0 causal : tensor<1x2x2x1xf32>, tensor<1x2x1x1xf32>, tensor<1x2x1x2xf32>
      %1, %lse1 = weft.attention %q, %k, %v scale = 1.0 : tensor<1x2x2x1xf32>, tensor<1x2x1x1xf32>, tensor<1x2x1x2xf32>
      return %0, %1 : tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>
    })",
                {Tensor({1, 2, 2, 1}, {1, 2, 1, 0}),
                 Tensor({1, 2, 1, 1}, {0, M_LN2}),
                 Tensor({1, 2, 1, 2}, {1, 0, 0, 1})});
  // Query 0 sees only key 0 -> v0. Query 1, head 0 (q=1): weights [1/3, 2/3];
  // head 1 (q=0): uniform.
  expectNear(r[0], {1, 0, 1, 0, 1.0 / 3, 2.0 / 3, 0.5, 0.5});
  // Without the mask query 0 also sees key 1: head 0 (q=1) [1/3, 2/3];
  // head 1 (q=2): exp(2 ln 2) = 4 -> [1/5, 4/5].
  expectNear(r[1], {1.0 / 3, 2.0 / 3, 0.2, 0.8, 1.0 / 3, 2.0 / 3, 0.5, 0.5});
}

TEST_F(EvaluatorTest, AttentionAndRopeWithPositionsFollowTheReorderedSequence) {
  // Context parallelism holds the sequence as chunks 0, 3, 1, 2 (cp=2 of a
  // sequence of 4): with the positions beside them, rope and causal
  // attention over the reordered rows give the natural run's rows,
  // reordered the same way.
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(-1, 1);
  auto random = [&](std::vector<int64_t> shape) {
    Tensor t = Tensor::zeros(shape);
    for (double &x : t.data)
      x = u(rng);
    return t;
  };
  const std::vector<int64_t> order = {0, 3, 1, 2};
  auto reorder = [&](const Tensor &t) { // Along dimension 1 of [1, 4, H, D].
    Tensor r = Tensor::zeros(t.shape);
    int64_t row = t.numElements() / 4;
    for (int64_t i = 0; i < 4; ++i)
      std::copy_n(t.data.begin() + order[i] * row, row,
                  r.data.begin() + i * row);
    return r;
  };
  Tensor q = random({1, 4, 2, 4}), k = random({1, 4, 1, 4}),
         v = random({1, 4, 1, 3});
  const char *natural = R"(
    func.func @f(%q: tensor<1x4x2x4xf32>, %k: tensor<1x4x1x4xf32>, %v: tensor<1x4x1x3xf32>) -> tensor<1x4x2x3xf32> {
      %qr = weft.rope %q : tensor<1x4x2x4xf32>
      %kr = weft.rope %k : tensor<1x4x1x4xf32>
      %o, %lse = weft.attention %qr, %kr, %v scale = 0.5 causal : tensor<1x4x2x4xf32>, tensor<1x4x1x4xf32>, tensor<1x4x1x3xf32>
      return %o : tensor<1x4x2x3xf32>
    })";
  const char *reordered = R"(
    func.func @f(%q: tensor<1x4x2x4xf32>, %k: tensor<1x4x1x4xf32>, %v: tensor<1x4x1x3xf32>) -> tensor<1x4x2x3xf32> {
      %p = weft.constant dense<[0, 3, 1, 2]> : tensor<4xi32>
      %qr = weft.rope %q positions %p : tensor<1x4x2x4xf32>, tensor<4xi32>
      %kr = weft.rope %k positions %p : tensor<1x4x1x4xf32>, tensor<4xi32>
      %o, %lse = weft.attention %qr, %kr, %v positions(%p, %p) scale = 0.5 causal : tensor<1x4x2x4xf32>, tensor<1x4x1x4xf32>, tensor<1x4x1x3xf32>, tensor<4xi32>, tensor<4xi32>
      return %o : tensor<1x4x2x3xf32>
    })";
  std::vector<Tensor> want = eval(natural, {q, k, v});
  std::vector<Tensor> got =
      eval(reordered, {reorder(q), reorder(k), reorder(v)});
  ASSERT_EQ(want.size(), 1u);
  ASSERT_EQ(got.size(), 1u);
  expectNear(got[0], reorder(want[0]).data);
}

TEST_F(EvaluatorTest, AQueryThatSeesNoKeyGetsZerosAndLseMinusInfinity) {
  // A ring block whose keys all come after the query: nothing visible.
  auto r =
      eval(R"(
    func.func @f(%q: tensor<1x1x1x2xf32>, %k: tensor<1x2x1x2xf32>) -> (tensor<1x1x1x2xf32>, tensor<1x1x1xf32>) {
      %qp = weft.constant dense<[1]> : tensor<1xi32>
      %kp = weft.constant dense<[2, 3]> : tensor<2xi32>
      %o, %lse = weft.attention %q, %k, %k positions(%qp, %kp) scale = 1.0 causal : tensor<1x1x1x2xf32>, tensor<1x2x1x2xf32>, tensor<1x2x1x2xf32>, tensor<1xi32>, tensor<2xi32>
      return %o, %lse : tensor<1x1x1x2xf32>, tensor<1x1x1xf32>
    })",
           {Tensor({1, 1, 1, 2}, {1, 2}), Tensor({1, 2, 1, 2}, {1, 0, 0, 1})});
  ASSERT_EQ(r.size(), 2u);
  expectNear(r[0], {0, 0});
  EXPECT_EQ(r[1].data[0], -std::numeric_limits<double>::infinity());
}

TEST_F(EvaluatorTest, DropoutIsSeededAndScaled) {
  const char *text = R"(
    func.func @f(%x: tensor<1000xf32>) -> tensor<1000xf32> {
      %0 = weft.dropout %x {rate = 0.25 : f64, seed = 42 : i64} : tensor<1000xf32>
      return %0 : tensor<1000xf32>
    })";
  Tensor ones({1000}, std::vector<double>(1000, 1.0));
  auto r = eval(text, {ones});
  int kept = 0;
  for (size_t i = 0; i < 1000; ++i) {
    bool keep = runtime::uniform24(42, i) >= 0.25;
    EXPECT_EQ(r[0].data[i], keep ? 1.0 / 0.75 : 0.0) << i;
    kept += keep;
  }
  EXPECT_NEAR(kept, 750, 60);
  EXPECT_EQ(eval(text, {ones})[0].data, r[0].data);
}

TEST_F(EvaluatorTest, CrossEntropyMeanWithIgnoreIndex) {
  const char *text = R"(
    func.func @f(%l: tensor<3x2xf32>, %y: tensor<3xi32>) -> tensor<f32> {
      %0 = weft.cross_entropy %l, %y : tensor<3x2xf32>, tensor<3xi32>
      return %0 : tensor<f32>
    })";
  Tensor logits({3, 2}, {0, 0, std::log(3.0), 0, 5, 5});
  // Row 0: ln 2. Row 1 (label 1): ln 4 - 0. Row 2 ignored.
  auto r = eval(text, {logits, Tensor({3}, {0, 1, -100})});
  expectNear(r[0], {(M_LN2 + 2 * M_LN2) / 2});
  // Every label ignored: the mean over nothing is 0.
  expectNear(eval(text, {logits, Tensor({3}, {-100, -100, -100})})[0], {0});
  EXPECT_EQ(evalError(text, {logits, Tensor({3}, {0, 2, 0})}),
            "label 2 at position 1 is outside the vocabulary [0, 2)");
}

TEST_F(EvaluatorTest, OneHotAndTopK) {
  auto r = eval(
      R"(
    func.func @f(%i: tensor<3xi32>, %x: tensor<2x4xf32>) -> (tensor<3x3xf32>, tensor<2x2xf32>, tensor<2x2xi32>) {
      %0 = weft.one_hot %i : tensor<3xi32> -> tensor<3x3xf32>
      %1:2 = weft.topk %x k = 2 : tensor<2x4xf32>
      return %0, %1#0, %1#1 : tensor<3x3xf32>, tensor<2x2xf32>, tensor<2x2xi32>
    })",
      {Tensor({3}, {2, -100, 0}), Tensor({2, 4}, {1, 5, 3, 5, 0, -1, 2, 1})});
  expectNear(r[0], {0, 0, 1, 0, 0, 0, 1, 0, 0});
  // Ties keep the lower position first.
  expectNear(r[1], {5, 5, 2, 1});
  expectNear(r[2], {1, 3, 2, 3});
}

TEST_F(EvaluatorTest, TopKGatingNormalizes) {
  auto r = eval(R"(
    func.func @f(%x: tensor<1x3xf32>) -> (tensor<1x2xf32>, tensor<1x2xi32>, tensor<1x2xf32>) {
      %0:2 = weft.topk_gating %x k = 2 normalize : tensor<1x3xf32>
      %1:2 = weft.topk_gating %x k = 2 : tensor<1x3xf32>
      return %0#0, %0#1, %1#0 : tensor<1x2xf32>, tensor<1x2xi32>, tensor<1x2xf32>
    })",
                {Tensor({1, 3}, {0, std::log(3.0), M_LN2})});
  // softmax = [1, 3, 2] / 6; top-2 are experts 1 and 2.
  expectNear(r[0], {0.6, 0.4});
  expectNear(r[1], {1, 2});
  expectNear(r[2], {0.5, 1.0 / 3});
}

TEST_F(EvaluatorTest, ExpertRouteKeepsFirstChoicesFirst) {
  // T=3 tokens, k=2, E=2 experts, capacity 2, GShard's order: every first
  // choice before any second one. Both experts fill up with first choices
  // and token 0's second, so the second choices of tokens 1 and 2 are
  // dropped; a token-major order would have dropped token 2's first.
  const char *text = R"(
    func.func @f(%e: tensor<3x2xi32>) -> (tensor<3x2xi32>, tensor<2xi32>) {
      %p, %c = weft.expert_route %e experts = 2 capacity = 2 : tensor<3x2xi32>
      return %p, %c : tensor<3x2xi32>, tensor<2xi32>
    })";
  auto r = eval(text, {Tensor({3, 2}, {0, 1, 0, 1, 1, 0})});
  // Expert 0 keeps (t0, j0) and (t1, j0) in rows 0 and 1; expert 1 keeps
  // (t2, j0) then (t0, j1) in rows 2 and 3.
  expectNear(r[0], {0, 3, 1, -1, 2, -1});
  expectNear(r[1], {2, 2});
  // Dropless: every pair kept, in the same order.
  auto dropless = eval(R"(
    func.func @f(%e: tensor<3x2xi32>) -> (tensor<3x2xi32>, tensor<2xi32>) {
      %p, %c = weft.expert_route %e experts = 2 : tensor<3x2xi32>
      return %p, %c : tensor<3x2xi32>, tensor<2xi32>
    })",
                       {Tensor({3, 2}, {0, 1, 0, 1, 1, 0})});
  // Expert 0: (t0, j0), (t1, j0), (t2, j1); expert 1 after it: (t2, j0),
  // (t0, j1), (t1, j1).
  expectNear(dropless[0], {0, 4, 1, 5, 3, 2});
  expectNear(dropless[1], {3, 3});
  EXPECT_EQ(evalError(text, {Tensor({3, 2}, {0, 2, 1, 0, 0, 1})}),
            "expert id 2 at index 1 is outside [0, 2)");
}

TEST_F(EvaluatorTest, ExpertDispatchAndCombineFollowPositions) {
  // Token 1's only pair is dropped (-1); rows 0..2 hold tokens 2, 0, 2.
  const char *text = R"(
    func.func @f(%x: tensor<3x2xf32>, %p: tensor<3x2xi32>, %w: tensor<3x2xf32>) -> (tensor<4x2xf32>, tensor<3x2xf32>) {
      %0 = weft.expert_dispatch %x, %p rows = 4 : tensor<3x2xf32>, tensor<3x2xi32>
      %1 = weft.expert_combine %0, %w, %p : tensor<4x2xf32>, tensor<3x2xf32>, tensor<3x2xi32>
      return %0, %1 : tensor<4x2xf32>, tensor<3x2xf32>
    })";
  Tensor x({3, 2}, {1, 2, 3, 4, 5, 6}), w({3, 2}, {0.5, 9, 9, 9, 1, 2});
  auto r = eval(text, {x, Tensor({3, 2}, {1, -1, -1, -1, 0, 2}), w});
  expectNear(r[0], {5, 6, 1, 2, 5, 6, 0, 0});
  expectNear(r[1], {0.5, 1, 0, 0, 15, 18});
  EXPECT_EQ(evalError(text, {x, Tensor({3, 2}, {1, -1, 4, -1, 0, 2}), w}),
            "position 4 at index 2 is outside [-1, 4)");
  EXPECT_EQ(evalError(text, {x, Tensor({3, 2}, {1, -1, 1, -1, 0, 2}), w}),
            "row 1 is named by two positions");
}

TEST_F(EvaluatorTest, GroupedMatmulUsesEachGroupsExpert) {
  // Four groups over two experts: groups 0 and 2 use w[0], 1 and 3 w[1];
  // group 1 is empty; row 4 is past the groups and stays zero.
  const char *text = R"(
    func.func @f(%x: tensor<5x1xf32>, %w: tensor<2x1x2xf32>, %s: tensor<4xi32>) -> (tensor<5x2xf32>, tensor<2x1x2xf32>) {
      %0 = weft.grouped_matmul %x, %w, %s : tensor<5x1xf32>, tensor<2x1x2xf32>, tensor<4xi32>
      %1 = weft.grouped_matmul_wgrad %x, %0, %s experts = 2 : tensor<5x1xf32>, tensor<5x2xf32>, tensor<4xi32>
      return %0, %1 : tensor<5x2xf32>, tensor<2x1x2xf32>
    })";
  Tensor x({5, 1}, {1, 2, 3, 4, 5}), w({2, 1, 2}, {1, 10, 2, 20});
  auto r = eval(text, {x, w, Tensor({4}, {1, 0, 2, 1})});
  expectNear(r[0], {1, 10, 2, 20, 3, 30, 8, 80, 0, 0});
  // w[0]'s rows 0..2 give sum x^2 = 14 times (1, 10); w[1]'s row 3 gives
  // 16 times (2, 20).
  expectNear(r[1], {14, 140, 32, 320});
  EXPECT_EQ(evalError(text, {x, w, Tensor({4}, {1, 0, 2, 3})}),
            "group 3 of 3 rows does not fit the 5 rows after the 3 before it");
}

TEST_F(EvaluatorTest, ParamsAndConstants) {
  auto r = eval(R"(
    func.func @f() -> (tensor<2xf32>, tensor<2xf32>, tensor<2x2xf32>, tensor<20000xf32>, tensor<20000xf32>) {
      %0 = weft.param "a" init(ones) : tensor<2xf32>
      %1 = weft.param "b" init(zeros) : tensor<2xf32>
      %2 = weft.constant dense<[[1.5, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
      %3 = weft.param "n" init(normal, 0.5) : tensor<20000xf32>
      %4 = weft.param "u" init(uniform, 2.0) : tensor<20000xf32>
      return %0, %1, %2, %3, %4 : tensor<2xf32>, tensor<2xf32>, tensor<2x2xf32>, tensor<20000xf32>, tensor<20000xf32>
    })",
                {});
  expectNear(r[0], {1, 1});
  expectNear(r[1], {0, 0});
  expectNear(r[2], {1.5, 2, 3, 4});
  auto moments = [](const Tensor &t) {
    double mean = 0, sq = 0;
    for (double x : t.data)
      mean += x;
    mean /= t.data.size();
    for (double x : t.data)
      sq += (x - mean) * (x - mean);
    return std::make_pair(mean, std::sqrt(sq / t.data.size()));
  };
  auto [nMean, nStd] = moments(r[3]);
  EXPECT_NEAR(nMean, 0.0, 0.02);
  EXPECT_NEAR(nStd, 0.5, 0.01);
  auto [uMean, uStd] = moments(r[4]);
  EXPECT_NEAR(uMean, 0.0, 0.05);
  EXPECT_NEAR(uStd, 2.0 / std::sqrt(3.0), 0.02); // U(-a, a) has std a/sqrt(3).
  for (double x : r[4].data)
    ASSERT_LT(std::fabs(x), 2.0);
}

TEST_F(EvaluatorTest, RejectsMismatchedInputs) {
  module = testutil::parse(*context, R"(
    func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
      return %x : tensor<2xf32>
    })");
  std::string message;
  testutil::DiagnosticCapture capture(*context, message);
  auto results = reference::evaluate(testutil::firstFunc(*module),
                                     {Tensor({3}, {1, 2, 3})},
                                     reference::randomInitProvider(0));
  EXPECT_TRUE(mlir::failed(results));
  EXPECT_EQ(message, "input 0 does not match argument type 'tensor<2xf32>'");
}

// weft.fp8_quantize in the evaluator (APFloat's rounding) and in the CPU
// runtime (Fp8Scaling.h on the bits) agree bit for bit on spread values,
// per block, for both formats and MXFP8's power-of-two scales.
TEST_F(EvaluatorTest, Fp8QuantizeMatchesTheRuntime) {
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> exponent(-12, 8);
  std::vector<double> x(4 * 64);
  for (double &v : x)
    v = std::ldexp(normal(rng), exponent(rng));
  struct Case {
    const char *format;
    std::vector<int64_t> blockShape;
    bool pow2;
  };
  for (const Case &c :
       {Case{"f8E4M3FN", {4, 64}, false}, Case{"f8E5M2", {1, 64}, false},
        Case{"f8E4M3FN", {2, 16}, false}, Case{"f8E4M3FN", {1, 32}, true}}) {
    SCOPED_TRACE(std::string(c.format) + " block " +
                 std::to_string(c.blockShape[0]) + "x" +
                 std::to_string(c.blockShape[1]));
    std::vector<int64_t> grid = {4 / c.blockShape[0], 64 / c.blockShape[1]};
    std::string amaxType = "tensor<" + std::to_string(grid[0]) + "x" +
                           std::to_string(grid[1]) + "xf32>";
    std::string text =
        R"(func.func @f(%x: tensor<4x64xf32>) -> tensor<4x64xf32> {
             %a = weft.fp8_amax %x : tensor<4x64xf32> -> )" +
        amaxType + R"(
             %q = weft.fp8_quantize %x, %a {format = )" +
        c.format + (c.pow2 ? ", pow2_scales" : "") + "} : tensor<4x64xf32>, " +
        amaxType + R"(
             return %q : tensor<4x64xf32>
           })";
    auto r = eval(text, {Tensor({4, 64}, x)});
    ASSERT_EQ(r.size(), 1u);
    std::vector<float> in(x.begin(), x.end()), out(in.size()),
        amax(grid[0] * grid[1]);
    runtime::cpu::fp8Amax(in.data(), amax.data(), {4, 64}, grid);
    runtime::cpu::fp8Quantize(in.data(), amax.data(), out.data(), {4, 64}, grid,
                              c.format == std::string("f8E4M3FN"), c.pow2);
    for (size_t i = 0; i < out.size(); ++i)
      ASSERT_EQ(static_cast<float>(r[0].data[i]), out[i]) << "element " << i;
  }
}

// weft.fp8_group_quantize in the evaluator (its own walk over the groups,
// APFloat's rounding) and in the CPU runtime (Fp8Scaling.h's
// weft_fp8_expert_column) agree bit for bit: six groups on three experts
// (group g on expert g mod 3; group 1 empty; experts 0 and 2 each have
// two groups, and a 32-row tile spans both), 40 rows after the groups
// (zero), columns whose magnitudes differ by 32-row span of x and by
// column, one NaN, for each tiling
// (whole experts: row-wise; 32 rows: MXFP8's with power-of-two scales, and
// without them) and both formats.
TEST_F(EvaluatorTest, Fp8GroupQuantizeMatchesTheRuntime) {
  constexpr int64_t n = 200, cols = 5;
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<double> x(n * cols);
  for (int64_t r = 0; r < n; ++r)
    for (int64_t c = 0; c < cols; ++c)
      x[r * cols + c] = std::ldexp(normal(rng), (r / 32 % 3) * 3 - 2 * c);
  x[77 * cols + 2] = std::numeric_limits<double>::quiet_NaN();
  const std::vector<double> sizes = {30, 0, 41, 17, 45, 27}; // 160 of 200.
  struct Case {
    int rows;
    const char *format;
    bool pow2;
  };
  for (const Case &c : {Case{0, "f8E4M3FN", false}, Case{0, "f8E5M2", false},
                        Case{32, "f8E4M3FN", true}, Case{32, "f8E5M2", true},
                        Case{32, "f8E4M3FN", false}}) {
    SCOPED_TRACE(std::string(c.format) + " tiles of " + std::to_string(c.rows) +
                 " rows");
    std::string text =
        R"(func.func @f(%x: tensor<200x5xf32>, %s: tensor<6xi32>)
               -> tensor<200x5xf32> {
             %q = weft.fp8_group_quantize %x, %s {experts = 3 : i64, format = )" +
        std::string(c.format) + (c.pow2 ? ", pow2_scales" : "") +
        ", rows = " + std::to_string(c.rows) +
        R"( : i64} : tensor<200x5xf32>, tensor<6xi32>
             return %q : tensor<200x5xf32>
           })";
    auto r = eval(text, {Tensor({n, cols}, x), Tensor({6}, sizes)});
    ASSERT_EQ(r.size(), 1u);
    std::vector<float> in(x.begin(), x.end()), out(in.size(), -1.0f);
    std::vector<int32_t> s(sizes.begin(), sizes.end());
    ASSERT_TRUE(runtime::cpu::fp8GroupQuantize(
                    in.data(), s.data(), 6, 3, n, cols, c.rows,
                    c.format == std::string("f8E4M3FN"), c.pow2, out.data(),
                    nullptr, nullptr, "test")
                    .ok());
    int nans = 0;
    for (size_t i = 0; i < out.size(); ++i) {
      auto want = static_cast<float>(r[0].data[i]);
      if (std::isnan(want)) {
        ++nans;
        ASSERT_TRUE(std::isnan(out[i])) << "element " << i;
      } else {
        ASSERT_EQ(want, out[i]) << "element " << i;
      }
      if (i >= 160 * cols)
        ASSERT_EQ(out[i], 0.0f) << "element " << i << " after the groups";
    }
    // A NaN spoils its block only. Row 77 is group 3's, expert 0's row 36
    // (after group 0's 30): in its 47 rows, its last 15 (32 to 46).
    EXPECT_EQ(nans, c.rows == 0 ? 47 : 15);
  }
}
