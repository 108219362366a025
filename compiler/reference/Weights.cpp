//===- Weights.cpp - parameters from safetensors checkpoints --------------===//

#include "compiler/reference/Weights.h"

#include "absl/strings/str_cat.h"

#include <map>
#include <memory>

using namespace mlir;

namespace weft::reference {

absl::StatusOr<ParamProvider>
safetensorsProvider(func::FuncOp func, const runtime::SafetensorsFile &file) {
  auto values = std::make_shared<std::map<std::string, Tensor>>();
  for (ParamOp param : func.getOps<ParamOp>()) {
    std::string name = param.getName().str();
    auto type = cast<RankedTensorType>(param.getResult().getType());
    std::optional<runtime::DType> dtype = storageType(type.getElementType());
    if (!dtype)
      return absl::InvalidArgumentError(
          absl::StrCat("parameter '", name, "' has an element type no ",
                       "safetensors file stores"));
    std::vector<int64_t> shape(type.getShape());
    // A parameter held in another shape than its checkpoint's reads the
    // checkpoint's (the same elements in the same order).
    std::vector<int64_t> stored = shape;
    if (auto held =
            param->getAttrOfType<DenseI64ArrayAttr>(kCheckpointShapeAttr))
      stored.assign(held.asArrayRef().begin(), held.asArrayRef().end());
    auto stack = param->getAttrOfType<StringAttr>(kCheckpointStackAttr);
    absl::StatusOr<std::vector<double>> read =
        stack ? file.stackedParameterValues(stack.str(), *dtype, stored)
              : file.parameterValues(name, *dtype, stored);
    if (!read.ok())
      return read.status();
    values->emplace(name, Tensor(shape, std::move(*read)));
  }
  return ParamProvider([values](ParamOp param) -> FailureOr<Tensor> {
    auto it = values->find(param.getName().str());
    if (it == values->end())
      return param.emitError("no weights were read for this parameter");
    return it->second;
  });
}

} // namespace weft::reference
