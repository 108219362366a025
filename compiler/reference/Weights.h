//===- Weights.h - parameters from and to safetensors checkpoints -*- C++
//-*-===//

#ifndef WEFT_COMPILER_REFERENCE_WEIGHTS_H
#define WEFT_COMPILER_REFERENCE_WEIGHTS_H

#include "compiler/reference/Evaluator.h"
#include "runtime/io/Safetensors.h"

#include <optional>

namespace weft::reference {

/// A provider of every weft.param of `func`, read from `file` up front
/// (file.parameterValues: a tensor named "transformer.X" may also be stored
/// as "X", the original GPT-2 checkpoints' layout). A missing tensor, or one
/// whose dtype or shape differs from the parameter's, is an error naming
/// the file and the tensor, worded as weft-run words it.
absl::StatusOr<ParamProvider>
safetensorsProvider(mlir::func::FuncOp func,
                    const runtime::SafetensorsFile &file);

} // namespace weft::reference

#endif // WEFT_COMPILER_REFERENCE_WEIGHTS_H
