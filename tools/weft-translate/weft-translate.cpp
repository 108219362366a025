//===- weft-translate.cpp - sched IR to and from bundle manifests ---------===//
//
// `weft-translate --sched-to-bundle` writes a planned sched module as the
// bundle v2 manifest the runtime executes (docs/bundle-format.md);
// `--bundle-to-sched` reads a manifest back as sched IR. Together they show
// that a bundle says exactly what the IR says (the round trip is tested).
//
//===----------------------------------------------------------------------===//

#include "codegen/SchedBundle.h"
#include "compiler/Registration.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"
#include "mlir/Tools/mlir-translate/Translation.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/SourceMgr.h"

using namespace mlir;

int main(int argc, char **argv) {
  auto dialects = [](DialectRegistry &registry) {
    weft::registerAllDialects(registry);
  };
  TranslateFromMLIRRegistration toBundle(
      "sched-to-bundle", "Write a planned sched module as a bundle manifest",
      [](Operation *op, llvm::raw_ostream &os) -> LogicalResult {
        auto module = dyn_cast<ModuleOp>(op);
        if (!module)
          return op->emitError("expected a module");
        FailureOr<llvm::json::Object> manifest =
            weft::codegen::writeSchedManifest(module, nullptr, nullptr);
        if (failed(manifest))
          return failure();
        os << llvm::formatv("{0:2}", llvm::json::Value(std::move(*manifest)))
           << "\n";
        return success();
      },
      dialects);
  TranslateToMLIRRegistration toSched(
      "bundle-to-sched", "Read a bundle manifest as sched IR",
      [](llvm::SourceMgr &sources,
         MLIRContext *context) -> OwningOpRef<Operation *> {
        const llvm::MemoryBuffer *buffer =
            sources.getMemoryBuffer(sources.getMainFileID());
        llvm::StringRef name = buffer->getBufferIdentifier();
        return weft::codegen::readSchedManifest(buffer->getBuffer(), name,
                                                context);
      },
      dialects);
  return failed(mlirTranslateMain(argc, argv, "Weft translation driver"));
}
