//===- fusion_test.cpp - fusing never changes a value ---------------------===//

#include "compiler/Pipeline.h"
#include "frontend/models/ModelConfig.h"
#include "passes/fusion/Passes.h"
#include "test/compiler/TestUtils.h"

#include "mlir/IR/Verifier.h"

using namespace weft;
using reference::Tensor;

namespace {
/// `name`'s training programs before fusion, and inputs for @step.
struct PlainStep {
  std::unique_ptr<mlir::MLIRContext> context;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  mlir::func::FuncOp step;
  std::vector<Tensor> inputs;
};

PlainStep plainStep(const char *name, const char *dtype) {
  PlainStep p;
  p.context = testutil::makeContext();
  p.module = testutil::buildExampleModel(*p.context, name,
                                         {2, 8, dtype, /*masterWeights=*/true});
  TrainingOptions unfused;
  unfused.fuseAndPlan = false;
  if (!p.module || failed(buildTrainingPrograms(*p.module, unfused))) {
    ADD_FAILURE() << "cannot build " << name;
    return p;
  }
  p.step = p.module->lookupSymbol<mlir::func::FuncOp>("step");
  std::mt19937 rng(4);
  p.inputs = {testutil::randomIds({2, 8}, 256, rng),
              testutil::randomIds({2, 8}, 256, rng), Tensor({}, {1e-3}),
              Tensor({}, {1})};
  return p;
}
} // namespace

TEST(Fusion, TrainingStepsComputeTheSameValuesFused) {
  for (const char *name : {"gpt2-tiny", "llama-tiny"}) {
    SCOPED_TRACE(name);
    PlainStep p = plainStep(name, "f32");
    ASSERT_TRUE(p.step);
    mlir::func::FuncOp step = p.step;
    mlir::ModuleOp module = *p.module;
    const std::vector<Tensor> &inputs = p.inputs;
    reference::Assignments before, after;
    auto provider = reference::randomInitProvider(2);
    auto unfused = reference::evaluate(step, inputs, provider,
                                       reference::Precision::F32, &before);
    ASSERT_TRUE(mlir::succeeded(unfused));

    int64_t groups = fuseElementwise(step);
    EXPECT_GT(groups, 20);
    ASSERT_TRUE(mlir::succeeded(mlir::verify(module)));
    auto fused = reference::evaluate(step, inputs, provider,
                                     reference::Precision::F32, &after);
    ASSERT_TRUE(mlir::succeeded(fused));
    // Every op still rounds its own result, so the values are identical.
    EXPECT_EQ((*fused)[0].data, (*unfused)[0].data);
    EXPECT_EQ((*fused)[1].data, (*unfused)[1].data);
    ASSERT_EQ(after.size(), before.size());
    for (const auto &[pname, value] : before)
      EXPECT_EQ(after.at(pname).data, value.data) << pname;
  }
}

// weft-gemm-epilogue keeps every value: in f32 the epilogue's f32
// intermediates are the replaced ops' results; in bf16 it rounds once where
// they rounded at each op, so values move by bf16 rounding only.
TEST(GemmEpilogue, TrainingStepComputesTheSameValues) {
  for (const char *dtype : {"f32", "bf16"}) {
    SCOPED_TRACE(dtype);
    bool f32 = std::string(dtype) == "f32";
    PlainStep p = plainStep("gpt2-tiny", dtype);
    ASSERT_TRUE(p.step);
    mlir::func::FuncOp step = p.step;
    mlir::ModuleOp module = *p.module;
    const std::vector<Tensor> &inputs = p.inputs;
    reference::Assignments before, after;
    // Biases start at zero, where a lost bias would go unseen: every
    // parameter (not optimizer state) gets small random values.
    auto provider = [](ParamOp p) -> mlir::FailureOr<Tensor> {
      Tensor t = reference::initialParamValue(p, 2);
      if (p.getState())
        return t;
      std::mt19937 rng(std::hash<std::string>()(p.getName().str()));
      std::uniform_real_distribution<double> u(-0.1, 0.1);
      for (double &x : t.data)
        x += u(rng);
      return t;
    };
    auto plain = reference::evaluate(step, inputs, provider,
                                     reference::Precision::F32, &before);
    ASSERT_TRUE(mlir::succeeded(plain));

    // Per block: q, k, v, attention out and MLP out with a bias, MLP in
    // with bias and GELU, and its GELU gradient.
    EXPECT_EQ(foldGemmEpilogues(step), 14);
    ASSERT_TRUE(mlir::succeeded(mlir::verify(module)));
    auto folded = reference::evaluate(step, inputs, provider,
                                      reference::Precision::F32, &after);
    ASSERT_TRUE(mlir::succeeded(folded));
    double loss = (*plain)[0].data[0];
    if (f32)
      EXPECT_EQ((*folded)[0].data, (*plain)[0].data);
    else
      EXPECT_NEAR((*folded)[0].data[0], loss, 1e-2 * std::fabs(loss));
    ASSERT_EQ(after.size(), before.size());
    for (const auto &[pname, value] : before) {
      if (f32) {
        EXPECT_EQ(after.at(pname).data, value.data) << pname;
        continue;
      }
      // One AdamW step (lr 1e-3) from equal parameters. Adam turns a
      // gradient at rounding-noise level (a key bias's, zero in exact
      // arithmetic) into a full step of either sign: within 2.5 lr.
      for (size_t i = 0; i < value.data.size(); ++i)
        ASSERT_NEAR(after.at(pname).data[i], value.data[i], 2.5e-3)
            << pname << "[" << i << "]";
    }
  }
}
