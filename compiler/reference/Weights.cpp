//===- Weights.cpp - parameters from safetensors checkpoints --------------===//

#include "compiler/reference/Weights.h"

#include "llvm/ADT/StringExtras.h"

using namespace mlir;

namespace weft::reference {

ParamProvider safetensorsProvider(const runtime::SafetensorsFile &file) {
  return [&file](ParamOp param) -> FailureOr<Tensor> {
    std::string name = param.getName().str();
    const runtime::TensorInfo *info = file.findParameter(name);
    if (!info)
      return param.emitError() << file.label() << ": no tensor named '" << name
                               << "' for this parameter";
    auto type = cast<RankedTensorType>(param.getResult().getType());
    std::optional<runtime::DType> want = storageType(type.getElementType());
    if (!want || *want != info->dtype)
      return param.emitError()
             << file.label() << ": tensor '" << info->name << "' has dtype "
             << runtime::dtypeName(info->dtype) << " but the parameter is "
             << type.getElementType();
    if (ArrayRef<int64_t>(info->shape) != type.getShape())
      return param.emitError()
             << file.label() << ": tensor '" << info->name << "' has shape ["
             << llvm::join(llvm::map_range(
                               info->shape,
                               [](int64_t d) { return std::to_string(d); }),
                           ", ")
             << "] but the parameter is " << param.getResult().getType();
    absl::StatusOr<std::vector<double>> values = file.finiteDoubles(*info);
    if (!values.ok())
      return param.emitError() << std::string(values.status().message());
    return Tensor(info->shape, std::move(*values));
  };
}

} // namespace weft::reference
