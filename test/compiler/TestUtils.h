//===- TestUtils.h - helpers for tests that evaluate weft graphs -*- C++
//-*-===//

#ifndef WEFT_TEST_COMPILER_TESTUTILS_H
#define WEFT_TEST_COMPILER_TESTUTILS_H

#include "codegen/SchedBundle.h"
#include "compiler/Pipeline.h"
#include "compiler/Registration.h"
#include "compiler/reference/Evaluator.h"
#include "frontend/models/ModelConfig.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <chrono>
#include <random>
#include <string>
#include <unistd.h>

namespace weft::testutil {

/// A path under the test temp directory private to this test and process:
/// ctest runs tests in parallel, and two writing one bundle directory (or a
/// kernels.so one of them is loading) would race.
inline std::string uniqueTempPath(const std::string &name) {
  const ::testing::TestInfo *test =
      ::testing::UnitTest::GetInstance()->current_test_info();
  // The pid and the process's start time: a pid comes back across runs, and
  // a path an earlier run left (a checkpoint directory a test expects
  // absent) must not be found again.
  static const std::string run =
      std::to_string(::getpid()) + "-" +
      std::to_string(std::chrono::system_clock::now().time_since_epoch() /
                     std::chrono::microseconds(1));
  return ::testing::TempDir() + (test ? test->name() : "global") + "-" + run +
         "-" + name;
}

/// Stores the last diagnostic emitted while it lives into `message`.
class DiagnosticCapture {
public:
  DiagnosticCapture(mlir::MLIRContext &context, std::string &message)
      : handler(&context, [&message](mlir::Diagnostic &d) {
          message = d.str();
          return mlir::success();
        }) {}

private:
  mlir::ScopedDiagnosticHandler handler;
};

/// An MLIRContext with every Weft dialect loaded.
inline std::unique_ptr<mlir::MLIRContext> makeContext() {
  mlir::DialectRegistry registry;
  registerAllDialects(registry);
  auto context = std::make_unique<mlir::MLIRContext>(registry);
  context->loadAllAvailableDialects();
  return context;
}

/// Parses `text`; fails the test (and returns null) if it does not verify.
inline mlir::OwningOpRef<mlir::ModuleOp> parse(mlir::MLIRContext &context,
                                               llvm::StringRef text) {
  auto module = mlir::parseSourceString<mlir::ModuleOp>(text, &context);
  EXPECT_TRUE(module) << "failed to parse:\n" << text.str();
  return module;
}

inline mlir::func::FuncOp firstFunc(mlir::ModuleOp module) {
  return *module.getOps<mlir::func::FuncOp>().begin();
}

/// Evaluates the first function of `module`; fails the test on error.
inline std::vector<reference::Tensor>
run(mlir::ModuleOp module, llvm::ArrayRef<reference::Tensor> inputs,
    reference::Precision precision = reference::Precision::F64,
    uint64_t seed = 0) {
  auto results =
      reference::evaluate(firstFunc(module), inputs,
                          reference::randomInitProvider(seed), precision);
  EXPECT_TRUE(mlir::succeeded(results));
  return mlir::succeeded(results) ? *results : std::vector<reference::Tensor>{};
}

/// The static shape of a value as a vector.
inline std::vector<int64_t> shapeOf(mlir::Value v) {
  auto shape = llvm::cast<mlir::RankedTensorType>(v.getType()).getShape();
  return {shape.begin(), shape.end()};
}

/// Writes a sched `module` (programs planned) as a bundle's manifest.json,
/// without kernel files, in a fresh directory named after `label`, which it
/// returns ("" on failure, which also fails the test).
inline std::string writeManifestBundle(mlir::ModuleOp module,
                                       const std::string &label) {
  llvm::json::Object meta, kernels;
  mlir::FailureOr<llvm::json::Object> manifest =
      codegen::writeSchedManifest(module, &meta, &kernels);
  EXPECT_TRUE(mlir::succeeded(manifest)) << label;
  if (mlir::failed(manifest))
    return "";
  std::string dir = uniqueTempPath(label + "-v2");
  std::filesystem::create_directories(dir);
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::json::Value(std::move(*manifest));
  std::ofstream(dir + "/manifest.json") << text;
  return dir;
}

/// Builds examples/configs/<name>.json (with `layers` layers instead of
/// the config's, when positive); fails the test (and returns null) if the
/// config or the build fails.
inline mlir::OwningOpRef<mlir::ModuleOp>
buildExampleModel(mlir::MLIRContext &context, const std::string &name,
                  const ModelBuildOptions &options, int64_t layers = 0) {
  auto config = ModelConfig::load(std::string(WEFT_SOURCE_DIR) +
                                  "/examples/configs/" + name + ".json");
  EXPECT_TRUE(static_cast<bool>(config)) << llvm::toString(config.takeError());
  if (!config)
    return nullptr;
  if (layers > 0)
    config->numLayers = layers;
  auto module = buildModel(context, *config, options);
  EXPECT_TRUE(static_cast<bool>(module)) << llvm::toString(module.takeError());
  return module ? std::move(*module) : nullptr;
}

/// A tensor of `shape` with uniform values in [lo, hi).
inline reference::Tensor randomTensor(std::vector<int64_t> shape,
                                      std::mt19937 &rng, double lo = -2.0,
                                      double hi = 2.0) {
  reference::Tensor t = reference::Tensor::zeros(std::move(shape));
  std::uniform_real_distribution<double> dist(lo, hi);
  for (double &x : t.data)
    x = dist(rng);
  return t;
}

/// Random token ids in [0, vocab).
inline reference::Tensor randomIds(std::vector<int64_t> shape, int64_t vocab,
                                   std::mt19937 &rng) {
  reference::Tensor t = reference::Tensor::zeros(std::move(shape));
  std::uniform_int_distribution<int64_t> dist(0, vocab - 1);
  for (double &x : t.data)
    x = static_cast<double>(dist(rng));
  return t;
}

/// examples/configs/<name>.json built and turned into its training
/// programs (buildTrainingPrograms); null (with a test failure) if any step
/// fails.
inline mlir::OwningOpRef<mlir::ModuleOp>
buildExampleStep(mlir::MLIRContext &context, const std::string &name,
                 int64_t batch, int64_t seq) {
  mlir::OwningOpRef<mlir::ModuleOp> module = buildExampleModel(
      context, name, {batch, seq, "f32", /*masterWeights=*/true});
  if (!module || failed(buildTrainingPrograms(*module, {}))) {
    ADD_FAILURE() << "cannot build the training step of " << name;
    return nullptr;
  }
  return module;
}

/// Compiles example model `name` (batch 2, sequence 16, `dtype`, f32 master
/// weights) into a training bundle (compileSchedBundle) in a fresh
/// directory (named with `label` too, when a test makes several), which it
/// returns.
inline std::string compileExampleBundle(const std::string &name,
                                        const std::string &dtype,
                                        const TrainingOptions &options,
                                        const std::string &label = "") {
  auto context = makeContext();
  mlir::OwningOpRef<mlir::ModuleOp> module =
      buildExampleModel(*context, name, {2, 16, dtype, /*masterWeights=*/true});
  EXPECT_TRUE(module);
  std::string dir = uniqueTempPath(name + "-" + dtype + label + "-v2");
  if (module)
    EXPECT_TRUE(mlir::succeeded(
        compileSchedBundle(*module, dir, options, llvm::json::Object{})));
  return dir;
}

} // namespace weft::testutil

#endif // WEFT_TEST_COMPILER_TESTUTILS_H
