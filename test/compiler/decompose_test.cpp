//===- decompose_test.cpp - composite ops equal their expansions ----------===//
//
// For every composite op, and for whole models, the reference evaluator gives
// the same result before and after weft-decompose, in fp64, on random inputs.
//
//===----------------------------------------------------------------------===//

#include "frontend/models/ModelConfig.h"
#include "passes/decompose/Passes.h"
#include "test/compiler/TestUtils.h"

#include "mlir/Pass/PassManager.h"

using namespace weft;
using reference::Tensor;

namespace {
void decompose(mlir::ModuleOp module) {
  mlir::PassManager pm(module.getContext());
  pm.addPass(createDecompose());
  ASSERT_TRUE(mlir::succeeded(pm.run(module)));
  // Nothing composite is left.
  module.walk([](DecomposableOpInterface op) {
    ADD_FAILURE() << "left undecomposed: "
                  << op->getName().getStringRef().str();
  });
}

void expectSame(const std::vector<Tensor> &a, const std::vector<Tensor> &b,
                double tol) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t r = 0; r < a.size(); ++r) {
    ASSERT_EQ(a[r].shape, b[r].shape);
    for (size_t i = 0; i < a[r].data.size(); ++i)
      ASSERT_NEAR(a[r].data[i], b[r].data[i],
                  tol * (1 + std::fabs(a[r].data[i])))
          << "result " << r << " element " << i;
  }
}

/// Evaluates `text` on `inputs`, decomposes it, evaluates again, compares.
void checkDecomposition(llvm::StringRef text, std::vector<Tensor> inputs) {
  auto context = testutil::makeContext();
  auto module = testutil::parse(*context, text);
  ASSERT_TRUE(module);
  std::vector<Tensor> before = testutil::run(*module, inputs);
  decompose(*module);
  // Expansions hold their constants (scales, epsilons) in the tensor's
  // element type, f32 here, so they agree to f32 rounding, not to fp64.
  expectSame(before, testutil::run(*module, inputs), 1e-6);
}
} // namespace

TEST(Decompose, Attention) {
  std::mt19937 rng(3);
  const char *text = R"(
    func.func @f(%q: tensor<2x5x4x8xf32>, %k: tensor<2x5x2x8xf32>, %v: tensor<2x5x2x6xf32>) -> (tensor<2x5x4x6xf32>, tensor<2x4x5xf32>, tensor<2x5x4x6xf32>, tensor<2x4x5xf32>) {
      %0:2 = weft.attention %q, %k, %v scale = 0.35 causal : tensor<2x5x4x8xf32>, tensor<2x5x2x8xf32>, tensor<2x5x2x6xf32>
      %1:2 = weft.attention %q, %k, %v scale = 0.35 : tensor<2x5x4x8xf32>, tensor<2x5x2x8xf32>, tensor<2x5x2x6xf32>
      return %0#0, %0#1, %1#0, %1#1 : tensor<2x5x4x6xf32>, tensor<2x4x5xf32>, tensor<2x5x4x6xf32>, tensor<2x4x5xf32>
    })";
  checkDecomposition(text, {testutil::randomTensor({2, 5, 4, 8}, rng),
                            testutil::randomTensor({2, 5, 2, 8}, rng),
                            testutil::randomTensor({2, 5, 2, 6}, rng)});
}

// The entropy from its definition (-sum p log p over the visible keys,
// from the given lse) against lse - scale <q, P K>, an attention with the
// keys as its values: causal and not, grouped-query heads.
TEST(Decompose, AttentionEntropy) {
  std::mt19937 rng(7);
  const char *text = R"(
    func.func @f(%q: tensor<2x5x4x8xf32>, %k: tensor<2x5x2x8xf32>) -> (tensor<2x4x5xf32>, tensor<2x4x5xf32>) {
      %v = weft.constant dense<0.0> : tensor<2x5x2x8xf32>
      %0:2 = weft.attention %q, %k, %v scale = 0.7 causal : tensor<2x5x4x8xf32>, tensor<2x5x2x8xf32>, tensor<2x5x2x8xf32>
      %1:2 = weft.attention %q, %k, %v scale = 0.7 : tensor<2x5x4x8xf32>, tensor<2x5x2x8xf32>, tensor<2x5x2x8xf32>
      %h0 = weft.attention_entropy %q, %k, %0#1 scale = 0.7 causal : tensor<2x5x4x8xf32>, tensor<2x5x2x8xf32>, tensor<2x4x5xf32>
      %h1 = weft.attention_entropy %q, %k, %1#1 scale = 0.7 : tensor<2x5x4x8xf32>, tensor<2x5x2x8xf32>, tensor<2x4x5xf32>
      return %h0, %h1 : tensor<2x4x5xf32>, tensor<2x4x5xf32>
    })";
  checkDecomposition(text, {testutil::randomTensor({2, 5, 4, 8}, rng),
                            testutil::randomTensor({2, 5, 2, 8}, rng)});
}

TEST(Decompose, NormsSoftmaxActivations) {
  std::mt19937 rng(4);
  const char *text = R"(
    func.func @f(%x: tensor<3x4x16xf32>, %g: tensor<16xf32>, %b: tensor<16xf32>) -> (tensor<3x4x16xf32>, tensor<3x4x16xf32>, tensor<3x4x16xf32>, tensor<3x4x16xf32>, tensor<3x4x16xf32>) {
      %0 = weft.layer_norm %x, %g, %b : tensor<3x4x16xf32>, tensor<16xf32>, tensor<16xf32>
      %1 = weft.rms_norm %x, %g {epsilon = 1.0e-5 : f64} : tensor<3x4x16xf32>, tensor<16xf32>
      %2 = weft.softmax %x dim 1 : tensor<3x4x16xf32>
      %3 = weft.gelu %x : tensor<3x4x16xf32>
      %4 = weft.silu %x : tensor<3x4x16xf32>
      return %0, %1, %2, %3, %4 : tensor<3x4x16xf32>, tensor<3x4x16xf32>, tensor<3x4x16xf32>, tensor<3x4x16xf32>, tensor<3x4x16xf32>
    })";
  checkDecomposition(text, {testutil::randomTensor({3, 4, 16}, rng),
                            testutil::randomTensor({16}, rng),
                            testutil::randomTensor({16}, rng)});
}

TEST(Decompose, CrossEntropyWithIgnoredLabels) {
  std::mt19937 rng(5);
  Tensor labels = testutil::randomIds({2, 6}, 10, rng);
  labels.data[3] = -100;
  labels.data[7] = -100;
  checkDecomposition(R"(
    func.func @f(%l: tensor<2x6x10xf32>, %y: tensor<2x6xi32>) -> tensor<f32> {
      %0 = weft.cross_entropy %l, %y : tensor<2x6x10xf32>, tensor<2x6xi32>
      return %0 : tensor<f32>
    })",
                     {testutil::randomTensor({2, 6, 10}, rng, -5, 5), labels});
}

TEST(Decompose, TopKGating) {
  std::mt19937 rng(6);
  checkDecomposition(R"(
    func.func @f(%r: tensor<7x5xf32>) -> (tensor<7x2xf32>, tensor<7x2xi32>, tensor<7x3xf32>, tensor<7x3xi32>) {
      %0:2 = weft.topk_gating %r k = 2 normalize : tensor<7x5xf32>
      %1:2 = weft.topk_gating %r k = 3 : tensor<7x5xf32>
      return %0#0, %0#1, %1#0, %1#1 : tensor<7x2xf32>, tensor<7x2xi32>, tensor<7x3xf32>, tensor<7x3xi32>
    })",
                     {testutil::randomTensor({7, 5}, rng)});
}

TEST(Decompose, WholeModelsKeepTheirLossAndLogits) {
  for (const char *name : {"gpt2-tiny", "llama-tiny", "mixtral-tiny"}) {
    SCOPED_TRACE(name);
    auto context = testutil::makeContext();
    auto module = testutil::buildExampleModel(*context, name, {2, 8, "f32"});
    ASSERT_TRUE(module);
    std::mt19937 rng(7);
    std::vector<Tensor> inputs = {testutil::randomIds({2, 8}, 256, rng),
                                  testutil::randomIds({2, 8}, 256, rng)};
    std::vector<Tensor> before = testutil::run(*module, inputs);
    decompose(*module);
    expectSame(before, testutil::run(*module, inputs), 1e-6);
  }
}
