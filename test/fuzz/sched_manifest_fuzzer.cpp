//===- sched_manifest_fuzzer.cpp - libFuzzer target for weftc inspect
//------===//
//
// The compiler side reads bundles too (`weftc inspect`, weft-translate
// --bundle-to-sched): any bytes must become a verified sched module or a
// diagnostic, never a crash.
//
//===----------------------------------------------------------------------===//

#include "codegen/SchedBundle.h"
#include "dialects/sched/IR/SchedOps.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/JSON.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static mlir::MLIRContext *context = [] {
    auto *c = new mlir::MLIRContext();
    c->getOrLoadDialect<weft::sched::SchedDialect>();
    c->getDiagEngine().registerHandler([](mlir::Diagnostic &) {});
    return c;
  }();
  mlir::OwningOpRef<mlir::ModuleOp> module = weft::codegen::readSchedManifest(
      llvm::StringRef(reinterpret_cast<const char *>(data), size), "fuzz.json",
      context);
  (void)module;
  return 0;
}
