//===- Decompose.cpp - expand composite weft ops --------------------------===//

#include "passes/decompose/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"

namespace weft {
#define GEN_PASS_DEF_DECOMPOSE
#include "passes/decompose/Passes.h.inc"
} // namespace weft

using namespace mlir;

namespace {
struct DecomposePass : weft::impl::DecomposeBase<DecomposePass> {
  using DecomposeBase::DecomposeBase;

  void runOnOperation() override {
    llvm::StringSet<> wanted;
    for (const std::string &name : ops) {
      if (failed(checkComposite(name)))
        return signalPassFailure();
      wanted.insert(name);
    }
    auto selected = [&](Operation *op) {
      return wanted.empty() || wanted.contains(op->getName().getStringRef());
    };
    // Expansions may create composites (attention -> softmax), so sweep until
    // a sweep finds nothing selected.
    while (true) {
      SmallVector<weft::DecomposableOpInterface> work;
      getOperation()->walk([&](weft::DecomposableOpInterface op) {
        if (selected(op))
          work.push_back(op);
      });
      if (work.empty())
        return;
      for (weft::DecomposableOpInterface op : work) {
        // Its primitives would compute over the local block of the
        // vocabulary alone.
        if (op->hasAttr(weft::kVocabAxesAttr)) {
          op->emitOpError("is vocabulary-parallel and cannot be decomposed");
          return signalPassFailure();
        }
        OpBuilder builder(op);
        FailureOr<SmallVector<Value>> replacement = op.decompose(builder);
        if (failed(replacement))
          return signalPassFailure();
        op->replaceAllUsesWith(*replacement);
        op->erase();
      }
    }
  }

  /// A name given in ops= is a registered op with a decomposition; else the
  /// error names it and lists the ops that have one.
  LogicalResult checkComposite(StringRef name) {
    std::optional<RegisteredOperationName> op =
        RegisteredOperationName::lookup(name, &getContext());
    if (op && op->hasInterface<weft::DecomposableOpInterface>())
      return success();
    SmallVector<StringRef> composites;
    for (RegisteredOperationName known : getContext().getRegisteredOperations())
      if (known.hasInterface<weft::DecomposableOpInterface>())
        composites.push_back(known.getStringRef());
    llvm::sort(composites);
    return emitError(getOperation()->getLoc())
           << "weft-decompose: ops names '" << name << "', which "
           << (op ? "has no decomposition" : "is not a registered op")
           << " (the composites: " << llvm::join(composites, ", ") << ")";
  }
};
} // namespace
