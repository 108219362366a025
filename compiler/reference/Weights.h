//===- Weights.h - parameters from and to safetensors checkpoints -*- C++
//-*-===//

#ifndef WEFT_COMPILER_REFERENCE_WEIGHTS_H
#define WEFT_COMPILER_REFERENCE_WEIGHTS_H

#include "compiler/reference/Evaluator.h"
#include "runtime/io/Safetensors.h"

#include <optional>

namespace weft::reference {

/// A provider reading each weft.param from `file` (which must outlive it).
/// A tensor named "transformer.X" may also be stored as "X" (the layout of
/// the original GPT-2 checkpoints). A missing tensor, or one whose dtype or
/// shape differs from the parameter's, is an error naming the file.
ParamProvider safetensorsProvider(const runtime::SafetensorsFile &file);

} // namespace weft::reference

#endif // WEFT_COMPILER_REFERENCE_WEIGHTS_H
