//===- Registration.cpp - register Weft dialects and passes ---------------===//

#include "compiler/Registration.h"

#include "codegen/Passes.h"
#include "compiler/Passes.h"
#include "compiler/Pipeline.h"
#include "dialects/sched/IR/SchedOps.h"
#include "dialects/weft/IR/WeftOps.h"
#include "passes/autodiff/Passes.h"
#include "passes/decompose/Passes.h"
#include "passes/fusion/Passes.h"
#include "passes/health/Passes.h"
#include "passes/memory/Passes.h"
#include "passes/optimizer/Passes.h"
#include "passes/pipeline/Passes.h"
#include "passes/precision/Passes.h"
#include "passes/recompute/Passes.h"
#include "passes/sharding/Passes.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/CommandLine.h"

void weft::registerAllDialects(mlir::DialectRegistry &registry) {
  registerWeftDialects(registry);
  sched::registerSchedDialect(registry);
}

void weft::registerAllPasses() {
  registerWeftAutodiffPasses();
  registerWeftCodegenPasses();
  registerWeftCompilerPasses();
  registerWeftDecomposePasses();
  registerWeftFusionPasses();
  registerWeftMemoryPasses();
  registerWeftOptimizerPasses();
  registerWeftPipelinePasses();
  registerWeftPrecisionPasses();
  registerWeftRecomputePasses();
  registerWeftHealthPasses();
  registerWeftShardingPasses();
  registerTrainingPipeline();
}

void weft::registerContextOptionsQuietly() {
  mlir::registerMLIRContextCLOptions();
  auto &options = llvm::cl::getRegisteredOptions();
  auto it = options.find("mlir-print-op-on-diagnostic");
  if (it != options.end())
    if (auto *flag = static_cast<llvm::cl::opt<bool> *>(it->second))
      flag->setInitialValue(false);
}
