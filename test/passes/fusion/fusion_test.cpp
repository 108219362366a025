//===- fusion_test.cpp - fusing never changes a value ---------------------===//

#include "compiler/Pipeline.h"
#include "frontend/models/ModelConfig.h"
#include "passes/fusion/Passes.h"
#include "test/compiler/TestUtils.h"

#include "mlir/IR/Verifier.h"

using namespace weft;
using reference::Tensor;

TEST(Fusion, TrainingStepsComputeTheSameValuesFused) {
  for (const char *name : {"gpt2-tiny", "llama-tiny"}) {
    SCOPED_TRACE(name);
    auto context = testutil::makeContext();
    auto module = testutil::buildExampleModel(*context, name, {2, 8, "f32"});
    ASSERT_TRUE(module);
    ASSERT_TRUE(
        mlir::succeeded(buildTrainingPrograms(*module, TrainingOptions())));
    auto step = module->lookupSymbol<mlir::func::FuncOp>("step");
    std::mt19937 rng(4);
    std::vector<Tensor> inputs = {testutil::randomIds({2, 8}, 256, rng),
                                  testutil::randomIds({2, 8}, 256, rng),
                                  Tensor({}, {1e-3}), Tensor({}, {1})};
    reference::Assignments before, after;
    auto provider = reference::randomInitProvider(2);
    auto unfused = reference::evaluate(step, inputs, provider,
                                       reference::Precision::F32, &before);
    ASSERT_TRUE(mlir::succeeded(unfused));

    int64_t groups = fuseElementwise(step);
    EXPECT_GT(groups, 20);
    ASSERT_TRUE(mlir::succeeded(mlir::verify(*module)));
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
