//===- Passes.h - precision rewrites ----------------------------*- C++ -*-===//

#ifndef WEFT_PASSES_PRECISION_PASSES_H
#define WEFT_PASSES_PRECISION_PASSES_H

#include "dialects/weft/IR/WeftOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace weft {
#define GEN_PASS_DECL
#include "passes/precision/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/precision/Passes.h.inc"

/// An FP8 choice as `--fp8` spells it: one recipe for every layer
/// ("tensorwise"), or one per layer in order with runs
/// ("none,tensorwise*30,none"; passes/LayerRuns.h), as the planner chooses
/// a recipe per pipeline rank. GEMMs outside the layers (the LM head)
/// take the last layer's recipe unless the keep list names head.
struct Fp8Choice {
  std::string uniform = "none";
  std::vector<std::string> layers; // Empty: `uniform` for every layer.

  /// The recipe of the `l`-th layer (counted from the model's first).
  const std::string &of(int64_t l) const {
    return layers.empty() ? uniform : layers[l];
  }
  /// The recipe of GEMMs outside the layers (not kept).
  const std::string &outside() const {
    return layers.empty() ? uniform : layers.back();
  }
  /// Whether some layer quantizes, and with delayed scaling.
  bool any() const;
  bool anyDelayed() const;
};

/// Parses `text` (see Fp8Choice), or an error that says what it accepts.
llvm::Expected<Fp8Choice> parseFp8(llvm::StringRef text);

/// Checks weft-fp8's options (see its description): an error that names
/// the option and says what it accepts. With `flag` ("--fp8"), the error
/// names weftc's flag for it instead (--fp8, --fp8-keep, --fp8-history).
llvm::Error checkFp8Options(const Fp8Options &options,
                            llvm::StringRef flag = "");

/// weft-fp8 sets kFp8Attr, kFp8GemmsAttr and kFp8BytesAttr (WeftOps.h) on
/// the function it rewrites, and kFp8NoGainAttr where it judged GEMMs on a
/// device. Its `plan` is the training pipeline's own (weft-train passes
/// its `plan`; TrainingOptions' fp8.plan is not read).
} // namespace weft

#endif // WEFT_PASSES_PRECISION_PASSES_H
