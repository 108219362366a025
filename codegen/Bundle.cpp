//===- Bundle.cpp - write planned programs as a bundle --------------------===//

#include "codegen/Bundle.h"

#include "codegen/KernelExpr.h"

#include "dialects/weft/IR/WeftOps.h"
#include "runtime/exec/BundleFormat.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
namespace json = llvm::json;

namespace weft::codegen {
namespace {

FailureOr<std::string> dtypeName(Location loc, Type type) {
  if (type.isF32())
    return std::string("F32");
  if (type.isBF16())
    return std::string("BF16");
  if (type.isF16())
    return std::string("F16");
  if (type.isInteger(32))
    return std::string("I32");
  if (type.isInteger(64))
    return std::string("I64");
  return emitError(loc, "bundles cannot hold element type ") << type, failure();
}

json::Array shapeOf(RankedTensorType type) {
  json::Array shape;
  for (int64_t d : type.getShape())
    shape.push_back(d);
  return shape;
}

/// Encodes an op's inherent attributes as JSON values.
FailureOr<json::Value> encodeAttr(Operation *op, Attribute attr) {
  // Enum attributes are integer attributes too: match them first.
  if (auto kind = dyn_cast<ReduceKindAttr>(attr))
    return json::Value(stringifyReduceKind(kind.getValue()).str());
  if (auto i = dyn_cast<IntegerAttr>(attr))
    return json::Value(i.getValue().getSExtValue());
  if (auto f = dyn_cast<FloatAttr>(attr))
    return json::Value(f.getValueAsDouble());
  if (isa<UnitAttr>(attr))
    return json::Value(true);
  if (auto s = dyn_cast<StringAttr>(attr))
    return json::Value(s.str());
  if (auto s = dyn_cast<FlatSymbolRefAttr>(attr))
    return json::Value(s.getValue().str());
  if (auto list = dyn_cast<ArrayAttr>(attr)) {
    json::Array values;
    for (Attribute element : list) {
      FailureOr<json::Value> value = encodeAttr(op, element);
      if (failed(value))
        return failure();
      values.push_back(std::move(*value));
    }
    return json::Value(std::move(values));
  }
  if (auto a = dyn_cast<DenseI64ArrayAttr>(attr)) {
    json::Array values;
    for (int64_t v : a.asArrayRef())
      values.push_back(v);
    return json::Value(std::move(values));
  }
  return op->emitError("bundles cannot encode attribute ") << attr, failure();
}

/// A sharding as the runtime reads it: the mesh axes of each dimension.
json::Array encodeSharding(ShardingAttr sharding) {
  json::Array dims;
  for (Attribute entry : sharding.getDims()) {
    json::Array axes;
    for (Attribute axis : cast<ArrayAttr>(entry))
      axes.push_back(cast<StringAttr>(axis).str());
    dims.push_back(std::move(axes));
  }
  return dims;
}

class ProgramWriter {
public:
  ProgramWriter(json::Array &constants) : constants(constants) {}

  FailureOr<json::Object> write(func::FuncOp func) {
    auto arena = func->getAttrOfType<IntegerAttr>("weft.arena_bytes");
    if (!arena)
      return func.emitError("@")
                 << func.getSymName()
                 << " has no memory plan (run weft-memory-plan)",
             failure();
    json::Array inputs, outputs, steps, assigns;
    for (BlockArgument arg : func.getArguments()) {
      json::Object desc{{"kind", "input"}, {"index", arg.getArgNumber()}};
      if (auto sharding = func.getArgAttrOfType<ShardingAttr>(
              arg.getArgNumber(), weft::kShardOfAttr))
        desc["sharding"] = encodeSharding(sharding);
      auto id = define(arg, std::move(desc));
      if (failed(id))
        return failure();
      inputs.push_back(*id);
    }
    for (Operation &op : func.getBody().front()) {
      if (auto param = dyn_cast<ParamOp>(op)) {
        if (failed(define(param.getResult(),
                          json::Object{{"kind", "param"},
                                       {"name", param.getName().str()}})))
          return failure();
        continue;
      }
      if (auto constant = dyn_cast<ConstantOp>(op)) {
        if (failed(defineConstant(constant)))
          return failure();
        continue;
      }
      if (auto assign = dyn_cast<AssignOp>(op)) {
        assigns.push_back(
            json::Object{{"param", assign.getName().str()},
                         {"value", ids.lookup(assign.getValue())}});
        continue;
      }
      if (auto ret = dyn_cast<func::ReturnOp>(op)) {
        for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
          auto name = func.getResultAttrOfType<StringAttr>(i, "weft.output");
          auto grad = func.getResultAttrOfType<StringAttr>(i, "weft.grad");
          std::string label = name   ? name.str()
                              : grad ? "grad:" + grad.str()
                                     : "result" + std::to_string(i);
          json::Object output{{"name", label}, {"value", ids.lookup(v)}};
          if (auto sharding = func.getResultAttrOfType<ShardingAttr>(
                  i, weft::kShardingAttr))
            output["sharding"] = encodeSharding(sharding);
          outputs.push_back(std::move(output));
        }
        continue;
      }
      auto offsets = op.getAttrOfType<DenseI64ArrayAttr>("weft.offsets");
      if (!offsets)
        return op.emitError("op has no planned offsets"), failure();
      json::Array operands, results;
      for (Value v : op.getOperands())
        operands.push_back(ids.lookup(v));
      for (auto [r, offset] :
           llvm::zip(op.getResults(), offsets.asArrayRef())) {
        auto id =
            define(r, json::Object{{"kind", "arena"}, {"offset", offset}});
        if (failed(id))
          return failure();
        results.push_back(*id);
      }
      json::Object attrs;
      if (auto kernel = op.getAttrOfType<StringAttr>("weft.kernel"))
        attrs["kernel"] = kernel.str();
      // The GPU runs a group holding a norm one block per row.
      if (auto fused = dyn_cast<FusedOp>(op); fused && isRowGroup(fused))
        attrs["rows"] = true;
      if (Attribute axes = op.getAttr(weft::kVocabAxesAttr)) {
        FailureOr<json::Value> value = encodeAttr(&op, axes);
        if (failed(value))
          return failure();
        attrs["vocab_axes"] = std::move(*value);
      }
      if (auto props =
              dyn_cast_or_null<DictionaryAttr>(op.getPropertiesAsAttribute()))
        for (NamedAttribute a : props) {
          // Which optional operands are present: the runtime reads that
          // from the op's own attributes (an epilogue's kind).
          if (a.getName() == "operandSegmentSizes")
            continue;
          FailureOr<json::Value> value = encodeAttr(&op, a.getValue());
          if (failed(value))
            return failure();
          attrs[a.getName().str()] = std::move(*value);
        }
      // An enum is an integer attribute that any enum's class accepts: say
      // which one by name.
      if (auto gemm = dyn_cast<MatmulEpilogueOp>(op))
        attrs["epilogue"] = stringifyEpilogue(gemm.getEpilogue()).str();
      steps.push_back(json::Object{{"op", op.getName().getStringRef().str()},
                                   {"operands", std::move(operands)},
                                   {"results", std::move(results)},
                                   {"attrs", std::move(attrs)}});
    }
    return json::Object{
        {"arena_bytes", arena.getInt()}, {"values", std::move(values)},
        {"inputs", std::move(inputs)},   {"outputs", std::move(outputs)},
        {"steps", std::move(steps)},     {"assigns", std::move(assigns)}};
  }

private:
  FailureOr<int64_t> define(Value v, json::Object desc) {
    auto type = cast<RankedTensorType>(v.getType());
    FailureOr<std::string> dtype = dtypeName(v.getLoc(), type.getElementType());
    if (failed(dtype))
      return failure();
    desc["shape"] = shapeOf(type);
    desc["dtype"] = *dtype;
    int64_t id = values.size();
    values.push_back(std::move(desc));
    ids[v] = id;
    return id;
  }

  LogicalResult defineConstant(ConstantOp op) {
    auto dense = dyn_cast<DenseElementsAttr>(op.getValue());
    auto type = cast<RankedTensorType>(op.getType());
    FailureOr<std::string> dtype =
        dtypeName(op.getLoc(), type.getElementType());
    if (!dense || failed(dtype))
      return op.emitError("bundles hold dense constants only"), failure();
    auto scalar = [&](auto it) -> double {
      if constexpr (std::is_same_v<std::decay_t<decltype(*it)>, APFloat>)
        return (*it).convertToDouble();
      else
        return static_cast<double>((*it).getSExtValue());
    };
    json::Object desc{{"shape", shapeOf(type)}, {"dtype", *dtype}};
    bool isFloat = isa<FloatType>(type.getElementType());
    auto toDouble = [&](auto range) {
      json::Array out;
      for (auto it = range.begin(); it != range.end(); ++it)
        out.push_back(scalar(it));
      return out;
    };
    if (dense.isSplat()) {
      desc["splat"] = isFloat
                          ? dense.getSplatValue<APFloat>().convertToDouble()
                          : static_cast<double>(
                                dense.getSplatValue<APInt>().getSExtValue());
    } else {
      desc["values"] = isFloat ? toDouble(dense.getValues<APFloat>())
                               : toDouble(dense.getValues<APInt>());
    }
    int64_t index = constants.size();
    constants.push_back(std::move(desc));
    return success(succeeded(define(
        op.getResult(), json::Object{{"kind", "constant"}, {"index", index}})));
  }

  json::Array &constants;
  json::Array values;
  llvm::DenseMap<Value, int64_t> ids;
};
} // namespace

FailureOr<json::Object> buildManifest(ModuleOp module,
                                      ArrayRef<StringRef> programs,
                                      json::Object meta) {
  json::Array constants, params;
  json::Object programsJson;
  llvm::StringSet<> seenParams;
  for (StringRef name : programs) {
    auto func = module.lookupSymbol<func::FuncOp>(name);
    if (!func)
      return module.emitError("no function @")
                 << name << " to put in the bundle",
             failure();
    ProgramWriter writer(constants);
    FailureOr<json::Object> program = writer.write(func);
    if (failed(program))
      return failure();
    programsJson[name] = std::move(*program);
    for (ParamOp p : func.getBody().front().getOps<ParamOp>()) {
      if (!seenParams.insert(p.getName()).second)
        continue;
      FailureOr<std::string> dtype =
          dtypeName(p.getLoc(), p.getType().getElementType());
      if (failed(dtype))
        return failure();
      json::Object desc{{"name", p.getName().str()},
                        {"shape", shapeOf(p.getType())},
                        {"dtype", *dtype},
                        {"init", stringifyInitKind(p.getInit()).str()},
                        {"state", p.getState()}};
      if (p.getScale())
        desc["scale"] = p.getScale()->convertToDouble();
      if (auto sharding = p->getAttrOfType<ShardingAttr>(weft::kShardOfAttr))
        desc["sharding"] = encodeSharding(sharding);
      params.push_back(std::move(desc));
    }
  }
  json::Object manifest{{"format", runtime::kBundleFormat},
                        {"version", runtime::kBundleVersion},
                        {"meta", std::move(meta)},
                        {"params", std::move(params)},
                        {"constants", std::move(constants)},
                        {"programs", std::move(programsJson)}};
  if (auto mesh = module.lookupSymbol<MeshOp>("mesh")) {
    json::Array axes, sizes;
    for (StringRef axis : mesh.getAxes().getAsValueRange<StringAttr>())
      axes.push_back(axis.str());
    for (int64_t size : mesh.getSizes())
      sizes.push_back(size);
    manifest["mesh"] =
        json::Object{{"axes", std::move(axes)}, {"sizes", std::move(sizes)}};
  }
  return manifest;
}

LogicalResult writeBundle(ModuleOp module, ArrayRef<StringRef> programs,
                          StringRef dir, json::Object meta) {
  FailureOr<json::Object> manifest =
      buildManifest(module, programs, std::move(meta));
  if (failed(manifest))
    return failure();
  if (std::error_code ec = llvm::sys::fs::create_directories(dir))
    return module.emitError("cannot create bundle directory '")
           << dir << "': " << ec.message();
  llvm::SmallString<256> path(dir);
  llvm::sys::path::append(path, runtime::kManifestFile);
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec)
    return module.emitError("cannot write '") << path << "': " << ec.message();
  os << json::Value(std::move(*manifest)) << "\n";
  return success();
}

} // namespace weft::codegen
