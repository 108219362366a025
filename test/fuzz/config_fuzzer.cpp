//===- config_fuzzer.cpp - libFuzzer target for Hugging Face configs ------===//
//
// Any config.json text must be refused with an error naming the field, or
// give a config whose model builds: a small one (at most 2^20 parameters,
// so an input runs in milliseconds) is built into its forward graph, which
// must verify.
//
//===----------------------------------------------------------------------===//

#include "frontend/models/ModelConfig.h"

#include "dialects/weft/IR/WeftOps.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::Expected<weft::ModelConfig> config = weft::ModelConfig::parse(
      llvm::StringRef(reinterpret_cast<const char *>(data), size), "fuzz.json");
  if (!config) {
    llvm::consumeError(config.takeError());
    return 0;
  }
  (void)config->analyticParameterCount();
  if (config->analyticParameterCountApprox() > double(1 << 20) ||
      config->numLayers > 4)
    return 0;
  mlir::DialectRegistry registry;
  weft::registerWeftDialects(registry);
  mlir::MLIRContext context(registry, mlir::MLIRContext::Threading::DISABLED);
  context.loadAllAvailableDialects();
  mlir::ScopedDiagnosticHandler quiet(
      &context, [](mlir::Diagnostic &) { return mlir::success(); });
  weft::ModelBuildOptions options;
  options.seq = std::min<int64_t>(config->maxPositions, 4);
  auto module = weft::buildModel(context, *config, options);
  if (!module) {
    llvm::consumeError(module.takeError());
    return 0;
  }
  // The reader accepted the config, so the graph built from it is valid.
  if (mlir::failed(mlir::verify(**module)))
    std::abort();
  return 0;
}
