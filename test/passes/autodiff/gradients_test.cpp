//===- gradients_test.cpp - every gradient against finite differences -----===//
//
// For each differentiable op (and whole models), weft-autodiff's gradient
// function is evaluated in fp64 and compared with central finite differences
// of the forward loss, element by element, on random parameter values.
//
//===----------------------------------------------------------------------===//

#include "frontend/models/ModelConfig.h"
#include "passes/autodiff/Passes.h"
#include "test/compiler/TestUtils.h"

#include "mlir/IR/Verifier.h"

#include <map>

using namespace weft;
using reference::Tensor;

namespace {
using ParamValues = std::map<std::string, Tensor>;

reference::ParamProvider mapProvider(ParamValues &values) {
  return [&values](ParamOp p) -> mlir::FailureOr<Tensor> {
    auto it = values.find(p.getName().str());
    if (it == values.end())
      return p.emitError("test has no value for ") << p.getName();
    return it->second;
  };
}

double evalLoss(mlir::func::FuncOp func, llvm::ArrayRef<Tensor> inputs,
                ParamValues &values) {
  auto r = reference::evaluate(func, inputs, mapProvider(values),
                               reference::Precision::F64);
  EXPECT_TRUE(mlir::succeeded(r));
  return mlir::succeeded(r) ? (*r)[0].data[0] : NAN;
}

/// Differentiates @forward of `module` and checks up to `samples` elements of
/// every parameter's gradient against central differences.
void checkGradients(mlir::ModuleOp module, llvm::ArrayRef<Tensor> inputs,
                    ParamValues values, int samples = 16, double step = 1e-5,
                    double rtol = 1e-5, double atol = 1e-8) {
  auto forward = module.lookupSymbol<mlir::func::FuncOp>("forward");
  ASSERT_TRUE(forward);
  mlir::FailureOr<mlir::func::FuncOp> grad =
      differentiate(forward, "train_step");
  ASSERT_TRUE(mlir::succeeded(grad));
  ASSERT_TRUE(mlir::succeeded(mlir::verify(module)));
  auto analytic = reference::evaluate(*grad, inputs, mapProvider(values),
                                      reference::Precision::F64);
  ASSERT_TRUE(mlir::succeeded(analytic));
  EXPECT_NEAR((*analytic)[0].data[0], evalLoss(forward, inputs, values), 1e-12);

  std::mt19937 rng(99);
  for (unsigned r = 1; r < grad->getNumResults(); ++r) {
    std::string name =
        grad->getResultAttrOfType<mlir::StringAttr>(r, "weft.grad")
            .getValue()
            .str();
    SCOPED_TRACE("gradient of " + name);
    Tensor &param = values.at(name);
    const Tensor &g = (*analytic)[r];
    ASSERT_EQ(g.shape, param.shape);
    std::uniform_int_distribution<size_t> pick(0, param.data.size() - 1);
    int count = std::min<int>(samples, param.data.size());
    for (int s = 0; s < count; ++s) {
      size_t i = count == static_cast<int>(param.data.size()) ? s : pick(rng);
      double saved = param.data[i];
      param.data[i] = saved + step;
      double up = evalLoss(forward, inputs, values);
      param.data[i] = saved - step;
      double down = evalLoss(forward, inputs, values);
      param.data[i] = saved;
      double fd = (up - down) / (2 * step);
      EXPECT_NEAR(g.data[i], fd, atol + rtol * std::fabs(fd))
          << "element " << i;
    }
  }
}

/// Random values in [-1, 1) for every weft.param of @forward.
ParamValues randomParams(mlir::ModuleOp module, unsigned seed) {
  ParamValues values;
  std::mt19937 rng(seed);
  module.walk([&](ParamOp p) {
    auto shape = llvm::cast<mlir::RankedTensorType>(p.getType()).getShape();
    values[p.getName().str()] =
        testutil::randomTensor({shape.begin(), shape.end()}, rng, -1.0, 1.0);
  });
  return values;
}

/// Wraps `body`, which computes %out of type `outType` from the params it
/// declares, into @forward with loss = sum(%out * probe) for a random probe,
/// so every output element carries a different weight.
class GradientTest : public ::testing::Test {
protected:
  std::unique_ptr<mlir::MLIRContext> context = testutil::makeContext();

  void check(const std::string &args, const std::string &body,
             const std::string &outType, int rank,
             std::vector<Tensor> inputs = {}, unsigned seed = 1) {
    std::string dims;
    for (int d = 0; d < rank; ++d)
      dims += (d ? ", " : "") + std::to_string(d);
    std::string text =
        "func.func @forward(" + args + ") -> tensor<f32> {\n" + body;
    if (rank == 0) {
      text += "  return %out : tensor<f32>\n}\n";
    } else {
      text += "  %probe = weft.param \"probe\" init(zeros) : " + outType +
              "\n" + "  %pm = weft.mul %out, %probe : " + outType + "\n" +
              "  %loss = weft.reduce_sum %pm dims [" + dims + "] : " + outType +
              "\n  return %loss : tensor<f32>\n}\n";
    }
    auto module = testutil::parse(*context, text);
    ASSERT_TRUE(module);
    checkGradients(*module, inputs, randomParams(*module, seed));
  }
};
} // namespace

TEST_F(GradientTest, UnaryMath) {
  check("", R"(
    %x = weft.param "x" init(zeros) : tensor<3x4xf32>
    %xp = weft.exp %x : tensor<3x4xf32>
    %a = weft.log %xp : tensor<3x4xf32>
    %b = weft.sqrt %xp : tensor<3x4xf32>
    %c = weft.rsqrt %xp : tensor<3x4xf32>
    %d = weft.pow %xp {exponent = 1.5 : f64} : tensor<3x4xf32>
    %e = weft.tanh %x : tensor<3x4xf32>
    %f = weft.square %x : tensor<3x4xf32>
    %g = weft.neg %x : tensor<3x4xf32>
    %h = weft.gelu %x : tensor<3x4xf32>
    %i = weft.silu %x : tensor<3x4xf32>
    %j = weft.pow %x {exponent = 3.0 : f64} : tensor<3x4xf32>
    %k = weft.pow %x {exponent = 2.0 : f64} : tensor<3x4xf32>
    %s0 = weft.add %a, %b : tensor<3x4xf32>
    %s1 = weft.add %s0, %c : tensor<3x4xf32>
    %s2 = weft.add %s1, %d : tensor<3x4xf32>
    %s3 = weft.mul %s2, %e : tensor<3x4xf32>
    %s4 = weft.add %s3, %f : tensor<3x4xf32>
    %s5 = weft.mul %s4, %g : tensor<3x4xf32>
    %s6 = weft.add %s5, %h : tensor<3x4xf32>
    %s7 = weft.add %s6, %i : tensor<3x4xf32>
    %s8 = weft.add %s7, %j : tensor<3x4xf32>
    %out = weft.add %s8, %k : tensor<3x4xf32>
  )",
        "tensor<3x4xf32>", 2);
}

TEST_F(GradientTest, BinaryArithmetic) {
  check("", R"(
    %x = weft.param "x" init(zeros) : tensor<5xf32>
    %y = weft.param "y" init(zeros) : tensor<5xf32>
    %ey = weft.exp %y : tensor<5xf32>
    %a = weft.sub %x, %y : tensor<5xf32>
    %b = weft.div %a, %ey : tensor<5xf32>
    %c = weft.max %b, %x : tensor<5xf32>
    %out = weft.mul %c, %y : tensor<5xf32>
  )",
        "tensor<5xf32>", 1);
}

TEST_F(GradientTest, MatmulTransposesAndBatchBroadcast) {
  check("", R"(
    %a = weft.param "a" init(zeros) : tensor<2x3x4xf32>
    %w = weft.param "w" init(zeros) : tensor<5x4xf32>
    %v = weft.param "v" init(zeros) : tensor<5x3xf32>
    %b = weft.param "b" init(zeros) : tensor<2x5x6xf32>
    %m1 = weft.matmul %a, %w transpose_rhs : tensor<2x3x4xf32>, tensor<5x4xf32>
    %m2 = weft.matmul %m1, %b : tensor<2x3x5xf32>, tensor<2x5x6xf32>
    %m3 = weft.matmul %v, %m2 : tensor<5x3xf32>, tensor<2x3x6xf32>
    %out = weft.matmul %m3, %b transpose_lhs : tensor<2x5x6xf32>, tensor<2x5x6xf32>
  )",
        "tensor<2x6x6xf32>", 3);
}

TEST_F(GradientTest, ShapeOps) {
  check("", R"(
    %x = weft.param "x" init(zeros) : tensor<2x3x4xf32>
    %s = weft.param "s" init(zeros) : tensor<3x1xf32>
    %r = weft.reshape %x : tensor<2x3x4xf32> -> tensor<6x4xf32>
    %t = weft.transpose %r [1, 0] : tensor<6x4xf32>
    %sl = weft.slice %t [1, 2] to [3, 5] : tensor<4x6xf32>
    %b = weft.broadcast %s dims [1, 2] : tensor<3x1xf32> -> tensor<2x3x3xf32>
    %br = weft.reshape %b : tensor<2x3x3xf32> -> tensor<2x9xf32>
    %c = weft.concat %sl, %br, %sl dim 1 : tensor<2x3xf32>, tensor<2x9xf32>, tensor<2x3xf32>
    %out = weft.cast %c : tensor<2x15xf32> to tensor<2x15xf32>
  )",
        "tensor<2x15xf32>", 2);
}

// Slices that split a tensor have their zero-padded gradients merged into
// one concat (Autodiff.cpp); overlapping ones are added. Both against
// finite differences.
TEST_F(GradientTest, SlicesThatSplitOrOverlap) {
  check("", R"(
    %x = weft.param "x" init(zeros) : tensor<2x12xf32>
    %q = weft.slice %x [0, 0] to [2, 4] : tensor<2x12xf32>
    %k = weft.slice %x [0, 4] to [2, 8] : tensor<2x12xf32>
    %v = weft.slice %x [0, 8] to [2, 12] : tensor<2x12xf32>
    %o = weft.slice %x [0, 2] to [2, 6] : tensor<2x12xf32>
    %qk = weft.mul %q, %k : tensor<2x4xf32>
    %e = weft.exp %v : tensor<2x4xf32>
    %s = weft.add %qk, %e : tensor<2x4xf32>
    %out = weft.mul %s, %o : tensor<2x4xf32>
  )",
        "tensor<2x4xf32>", 2);
}

TEST_F(GradientTest, Reductions) {
  check("", R"(
    %x = weft.param "x" init(zeros) : tensor<3x4x5xf32>
    %a = weft.reduce_sum %x dims [0, 2] : tensor<3x4x5xf32>
    %b = weft.reduce_mean %x dims [1, 2] : tensor<3x4x5xf32>
    %c = weft.reduce_max %x dims [1] : tensor<3x4x5xf32>
    %d = weft.reduce_max %c dims [1] : tensor<3x5xf32>
    %ab = weft.concat %a, %b, %d dim 0 : tensor<4xf32>, tensor<3xf32>, tensor<3xf32>
    %out = weft.square %ab : tensor<10xf32>
  )",
        "tensor<10xf32>", 1);
}

TEST_F(GradientTest, EmbeddingAndNorms) {
  check("%ids: tensor<2x3xi32>", R"(
    %t = weft.param "table" init(zeros) : tensor<5x4xf32>
    %g = weft.param "g" init(zeros) : tensor<4xf32>
    %b = weft.param "b" init(zeros) : tensor<4xf32>
    %h = weft.embedding %t, %ids : tensor<5x4xf32>, tensor<2x3xi32>
    %l = weft.layer_norm %h, %g, %b {epsilon = 0.1 : f64} : tensor<2x3x4xf32>, tensor<4xf32>, tensor<4xf32>
    %out = weft.rms_norm %l, %g {epsilon = 0.1 : f64} : tensor<2x3x4xf32>, tensor<4xf32>
  )",
        "tensor<2x3x4xf32>", 3, {Tensor({2, 3}, {1, 4, 1, 0, 2, 1})});
}

TEST_F(GradientTest, SoftmaxRopeDropout) {
  check("", R"(
    %x = weft.param "x" init(zeros) : tensor<2x3x2x4xf32>
    %a = weft.softmax %x dim 3 : tensor<2x3x2x4xf32>
    %b = weft.softmax %a dim 1 : tensor<2x3x2x4xf32>
    %c = weft.rope %b {theta = 100.0 : f64} : tensor<2x3x2x4xf32>
    %d = weft.rope %x inverse {theta = 7.0 : f64, position_offset = 3 : i64} : tensor<2x3x2x4xf32>
    %e = weft.mul %c, %d : tensor<2x3x2x4xf32>
    %out = weft.dropout %e {rate = 0.3 : f64, seed = 5 : i64} : tensor<2x3x2x4xf32>
  )",
        "tensor<2x3x2x4xf32>", 4);
}

TEST_F(GradientTest, CausalGroupedQueryAttention) {
  check("", R"(
    %q = weft.param "q" init(zeros) : tensor<2x4x4x3xf32>
    %k = weft.param "k" init(zeros) : tensor<2x4x2x3xf32>
    %v = weft.param "v" init(zeros) : tensor<2x4x2x5xf32>
    %a:2 = weft.attention %q, %k, %v scale = 0.7 causal : tensor<2x4x4x3xf32>, tensor<2x4x2x3xf32>, tensor<2x4x2x5xf32>
    %b:2 = weft.attention %q, %k, %v scale = 0.5 : tensor<2x4x4x3xf32>, tensor<2x4x2x3xf32>, tensor<2x4x2x5xf32>
    %out = weft.add %a#0, %b#0 : tensor<2x4x4x5xf32>
  )",
        "tensor<2x4x4x5xf32>", 4);
}

// Attention-probability dropout: the gradient regenerates the forward's
// mask (a rate high enough that every row drops some keys), and the lse
// stays the undropped one.
TEST_F(GradientTest, AttentionWithDropoutAndItsLogSumExp) {
  check("", R"(
    %q = weft.param "q" init(zeros) : tensor<2x4x4x3xf32>
    %k = weft.param "k" init(zeros) : tensor<2x4x2x3xf32>
    %v = weft.param "v" init(zeros) : tensor<2x4x2x5xf32>
    %s = weft.constant dense<3.0> : tensor<f32>
    %a:2 = weft.attention %q, %k, %v scale = 0.7 causal dropout = 0.4 step %s : tensor<f32> {seed = 9 : i64} : tensor<2x4x4x3xf32>, tensor<2x4x2x3xf32>, tensor<2x4x2x5xf32>
    %l = weft.broadcast %a#1 dims [0, 1, 2] : tensor<2x4x4xf32> -> tensor<2x4x4x5xf32>
    %out = weft.add %a#0, %l : tensor<2x4x4x5xf32>
  )",
        "tensor<2x4x4x5xf32>", 4);
}

TEST_F(GradientTest, AttentionWithPositionsAndItsLogSumExp) {
  // Positions in no order, every query seeing at least one key; the
  // log-sum-exp is used too (ring attention merges blocks by it), so its
  // gradient (attention_grad's lse_grad) is checked with the output's.
  check("", R"(
    %q = weft.param "q" init(zeros) : tensor<2x4x4x4xf32>
    %k = weft.param "k" init(zeros) : tensor<2x4x2x4xf32>
    %v = weft.param "v" init(zeros) : tensor<2x4x2x5xf32>
    %qp = weft.constant dense<[2, 0, 3, 1]> : tensor<4xi32>
    %kp = weft.constant dense<[1, 3, 0, 2]> : tensor<4xi32>
    %qr = weft.rope %q positions %qp : tensor<2x4x4x4xf32>, tensor<4xi32>
    %a:2 = weft.attention %qr, %k, %v positions(%qp, %kp) scale = 0.7 causal : tensor<2x4x4x4xf32>, tensor<2x4x2x4xf32>, tensor<2x4x2x5xf32>, tensor<4xi32>, tensor<4xi32>
    %l = weft.transpose %a#1 [0, 2, 1] : tensor<2x4x4xf32>
    %lb = weft.broadcast %l dims [0, 1, 2] : tensor<2x4x4xf32> -> tensor<2x4x4x5xf32>
    %out = weft.add %a#0, %lb : tensor<2x4x4x5xf32>
  )",
        "tensor<2x4x4x5xf32>", 4);
}

TEST_F(GradientTest, CrossEntropyWithIgnoredLabels) {
  check("%labels: tensor<2x3xi32>", R"(
    %x = weft.param "logits" init(zeros) : tensor<2x3x6xf32>
    %out = weft.cross_entropy %x, %labels : tensor<2x3x6xf32>, tensor<2x3xi32>
  )",
        "tensor<f32>", 0, {Tensor({2, 3}, {1, 5, -100, 0, 2, 2})});
}

TEST_F(GradientTest, TopKAndGating) {
  check("", R"(
    %r = weft.param "router" init(zeros) : tensor<4x5xf32>
    %t:2 = weft.topk %r k = 2 : tensor<4x5xf32>
    %g:2 = weft.topk_gating %r k = 3 normalize : tensor<4x5xf32>
    %h:2 = weft.topk_gating %r k = 2 : tensor<4x5xf32>
    %out = weft.concat %t#0, %g#0, %h#0 dim 1 : tensor<4x2xf32>, tensor<4x3xf32>, tensor<4x2xf32>
  )",
        "tensor<4x7xf32>", 2);
}

TEST_F(GradientTest, ExpertOpsWithDroppedTokens) {
  // 5 tokens, top-2 of 3 experts, capacity 3 (rows 9 of the 10 pairs):
  // some pairs are dropped. Both grouped matmul layouts.
  check("", R"(
    %x = weft.param "x" init(zeros) : tensor<5x4xf32>
    %r = weft.param "router" init(zeros) : tensor<5x3xf32>
    %w = weft.param "w" init(zeros) : tensor<3x4x4xf32>
    %v = weft.param "v" init(zeros) : tensor<3x4x4xf32>
    %g:2 = weft.topk_gating %r k = 2 normalize : tensor<5x3xf32>
    %pos, %counts = weft.expert_route %g#1 experts = 3 capacity = 3 : tensor<5x2xi32>
    %d = weft.expert_dispatch %x, %pos rows = 9 : tensor<5x4xf32>, tensor<5x2xi32>
    %y0 = weft.grouped_matmul %d, %w, %counts : tensor<9x4xf32>, tensor<3x4x4xf32>, tensor<3xi32>
    %y = weft.grouped_matmul %y0, %v, %counts transpose_rhs : tensor<9x4xf32>, tensor<3x4x4xf32>, tensor<3xi32>
    %c = weft.expert_combine %y, %g#0, %pos : tensor<9x4xf32>, tensor<5x2xf32>, tensor<5x2xi32>
    %p = weft.expert_gather %y, %pos : tensor<9x4xf32>, tensor<5x2xi32>
    %s = weft.expert_scatter %p, %pos rows = 9 : tensor<5x2x4xf32>, tensor<5x2xi32>
    %out = weft.concat %c, %s dim 0 : tensor<5x4xf32>, tensor<9x4xf32>
  )",
        "tensor<14x4xf32>", 2);
}

namespace {
/// Checks a [2, 4]-token model's gradients at its initial values scaled up
/// (N(0, 0.2), norm weights 10) so every path carries signal.
void checkModelGradients(mlir::ModuleOp module) {
  ParamValues values;
  module->walk([&](ParamOp p) {
    Tensor t = reference::initialParamValue(p, 4);
    for (double &x : t.data)
      x *= 10;
    values[p.getName().str()] = t;
  });
  std::mt19937 rng(8);
  checkGradients(module,
                 {testutil::randomIds({2, 4}, 256, rng),
                  testutil::randomIds({2, 4}, 256, rng)},
                 values, /*samples=*/4);
}
} // namespace

TEST(ModelGradients, TinyModelsMatchFiniteDifferences) {
  for (const char *name : {"gpt2-tiny", "llama-tiny", "mixtral-tiny"}) {
    SCOPED_TRACE(name);
    auto context = testutil::makeContext();
    auto module = testutil::buildExampleModel(*context, name, {2, 4, "f32"});
    ASSERT_TRUE(module);
    checkModelGradients(*module);
  }
}

namespace {
/// Mixtral-tiny with a capacity (so pairs drop), the load-balancing loss
/// and the router z-loss.
mlir::OwningOpRef<mlir::ModuleOp>
mixtralWithRouterLosses(mlir::MLIRContext &context, double aux, double z) {
  auto config = ModelConfig::load(std::string(WEFT_SOURCE_DIR) +
                                  "/examples/configs/mixtral-tiny.json");
  EXPECT_TRUE(static_cast<bool>(config)) << llvm::toString(config.takeError());
  if (!config)
    return nullptr;
  config->capacityFactor = 0.75;
  config->routerAuxLossCoef = aux;
  config->routerZLossCoef = z;
  auto module = buildModel(context, *config, {2, 4, "f32"});
  EXPECT_TRUE(static_cast<bool>(module)) << llvm::toString(module.takeError());
  return module ? std::move(*module) : nullptr;
}
} // namespace

TEST(ModelGradients, RouterLossesAndDroppedPairsMatchFiniteDifferences) {
  auto context = testutil::makeContext();
  auto module = mixtralWithRouterLosses(*context, 0.5, 0.25);
  ASSERT_TRUE(module);
  checkModelGradients(*module);
}

TEST(ModelGradients, RouterLossesHaveTheirClosedFormAtAUniformRouter) {
  // With zero router weights every token's probabilities are uniform, 1/E:
  // top-2 of ties picks experts 0 and 1, so f = (1, 1, 0, 0) and P = 1/4,
  // and Switch's loss is E * sum f P = 4 * 2 / 4 = 2; every log-partition
  // is log 4, so the z-loss is (log 4)^2.
  auto context = testutil::makeContext();
  std::mt19937 rng(3);
  std::vector<Tensor> inputs = {testutil::randomIds({2, 4}, 256, rng),
                                testutil::randomIds({2, 4}, 256, rng)};
  auto lossOf = [&](double aux, double z) {
    auto module = mixtralWithRouterLosses(*context, aux, z);
    EXPECT_TRUE(module);
    ParamValues values;
    (*module)->walk([&](ParamOp p) {
      Tensor t = reference::initialParamValue(p, 4);
      if (p.getName().contains(".gate.weight"))
        for (double &x : t.data)
          x = 0;
      values[p.getName().str()] = t;
    });
    auto r =
        reference::evaluate(testutil::firstFunc(*module), inputs,
                            mapProvider(values), reference::Precision::F64);
    EXPECT_TRUE(mlir::succeeded(r));
    return mlir::succeeded(r) ? (*r)[0].data[0] : 0.0;
  };
  double base = lossOf(0, 0);
  EXPECT_NEAR(lossOf(0.5, 0) - base, 0.5 * 2, 1e-9);
  EXPECT_NEAR(lossOf(0, 0.25) - base, 0.25 * std::log(4.0) * std::log(4.0),
              1e-9);
}

TEST(Autodiff, RejectsALossThatIsNotAScalar) {
  auto context = testutil::makeContext();
  auto module = testutil::parse(*context, R"(
    func.func @forward() -> tensor<2xf32> {
      %x = weft.param "x" init(zeros) : tensor<2xf32>
      return %x : tensor<2xf32>
    })");
  std::string message;
  testutil::DiagnosticCapture capture(*context, message);
  EXPECT_TRUE(
      mlir::failed(differentiate(testutil::firstFunc(*module), "train_step")));
  EXPECT_EQ(
      message,
      "weft-autodiff: the first result of @forward must be the 0-d f32 loss");
}
