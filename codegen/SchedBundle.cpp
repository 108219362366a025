//===- SchedBundle.cpp - sched modules as bundle v2 manifests -------------===//
//
// Both directions of docs/bundle-format.md share one table: every
// instruction attribute by name and how it is spelled in JSON. The writer
// refuses an attribute the table does not know (so a new op attribute
// cannot silently go missing from bundles), and the reader rebuilds each
// attribute with its exact type (10000.0 is written "10000" but read back
// as the F64 it was).
//
//===----------------------------------------------------------------------===//

#include "codegen/SchedBundle.h"

#include "runtime/support/Json.h"

#include "dialects/sched/IR/SchedOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
namespace json = llvm::json;

namespace weft::codegen {
namespace {

//===----------------------------------------------------------------------===//
// The attribute table
//===----------------------------------------------------------------------===//

enum class Kind {
  I64,
  F64,
  Bool,
  Unit,
  Str,
  StrArray,
  I64Array,
  Symbol,
  Epilogue,
  CollectiveKind,
  Reduction,
  Algorithm,
  Scalars,
  Split,
};

const llvm::StringMap<Kind> &attributeKinds() {
  static const llvm::StringMap<Kind> kinds = {
      {"batch", Kind::I64},
      {"block", Kind::I64},
      {"event", Kind::I64},
      {"k", Kind::I64},
      {"dim", Kind::I64},
      {"seed", Kind::I64},
      {"ignore_index", Kind::I64},
      {"position_offset", Kind::I64},
      {"capacity", Kind::I64},
      {"tile_rows", Kind::I64},
      {"experts", Kind::I64},
      {"microbatches", Kind::I64},
      {"delta", Kind::I64},
      {"tag", Kind::I64},
      {"scale", Kind::F64},
      {"theta", Kind::F64},
      {"rate", Kind::F64},
      {"dropout", Kind::F64},
      {"epsilon", Kind::F64},
      {"value", Kind::F64},
      {"inverse", Kind::Bool},
      {"normalize", Kind::Bool},
      {"transpose_rhs", Kind::Bool},
      {"transpose_a", Kind::Unit},
      {"transpose_b", Kind::Unit},
      {"accumulate", Kind::Unit},
      {"causal", Kind::Unit},
      {"pow2_scales", Kind::Unit},
      {"transpose", Kind::Unit},
      {"axis", Kind::Str},
      {"format", Kind::Str},
      {"scale_mode", Kind::Str},
      {"scale_modes", Kind::StrArray},
      {"axes", Kind::StrArray},
      {"vocab_axes", Kind::StrArray},
      {"token_axes", Kind::StrArray},
      {"mnk", Kind::I64Array},
      {"ld", Kind::I64Array},
      {"strides", Kind::I64Array},
      {"sizes", Kind::I64Array},
      {"src", Kind::I64Array},
      {"dst", Kind::I64Array},
      {"grid", Kind::I64Array},
      {"dims", Kind::I64Array},
      {"kernel", Kind::Symbol},
      {"epilogue", Kind::Epilogue},
      {"kind", Kind::CollectiveKind},
      {"reduction", Kind::Reduction},
      {"algorithm", Kind::Algorithm},
      {"scalars", Kind::Scalars},
      {"split", Kind::Split},
  };
  return kinds;
}

/// Attributes the table does not spell one by one: the stream (always
/// written), the mesh (the module has one), and what per-op fields say
/// (operand segments, a copy's by_rank).
bool isStructural(StringRef name) {
  return name == "stream" || name == "mesh" || name == "operandSegmentSizes" ||
         name == "rank_axes" || name == "rank_step";
}

/// Optional attributes the format spells by leaving the field out.
bool isOmittable(StringRef name) {
  return name == "split" || name == "microbatches" || name == "dropout" ||
         name == "seed" || name == "scale_mode" || name == "scale_modes" ||
         name == "tile_rows";
}

std::string dtypeName(Type t) {
  if (t.isF32())
    return "f32";
  if (t.isBF16())
    return "bf16";
  if (t.isF16())
    return "f16";
  if (isa<Float8E4M3FNType>(t))
    return "f8e4m3fn";
  if (isa<Float8E5M2Type>(t))
    return "f8e5m2";
  if (t.isInteger(32))
    return "i32";
  if (t.isInteger(64))
    return "i64";
  if (t.isF64()) // Kernel scalars only: buffers hold no f64.
    return "f64";
  return "";
}

Type dtypeOf(StringRef name, MLIRContext *ctx) {
  Builder b(ctx);
  return llvm::StringSwitch<Type>(name)
      .Case("f32", b.getF32Type())
      .Case("bf16", b.getBF16Type())
      .Case("f16", b.getF16Type())
      .Case("f8e4m3fn", b.getType<Float8E4M3FNType>())
      .Case("f8e5m2", b.getType<Float8E5M2Type>())
      .Case("i32", b.getI32Type())
      .Case("i64", b.getI64Type())
      .Case("f64", b.getF64Type())
      .Default(Type());
}

json::Array strings(ArrayAttr list) {
  json::Array out;
  for (Attribute a : list)
    out.push_back(cast<StringAttr>(a).str());
  return out;
}

json::Array i64s(ArrayRef<int64_t> list) {
  json::Array out;
  for (int64_t v : list)
    out.push_back(v);
  return out;
}

//===----------------------------------------------------------------------===//
// Writer
//===----------------------------------------------------------------------===//

json::Value splitOf(std::optional<ArrayAttr> split) {
  json::Array dims;
  for (Attribute dim : *split)
    dims.push_back(strings(cast<ArrayAttr>(dim)));
  return dims;
}

FailureOr<json::Value> encode(Operation *op, StringRef name, Attribute attr) {
  auto it = attributeKinds().find(name);
  if (it == attributeKinds().end())
    return op->emitOpError("has attribute '")
               << name << "', which bundle v2 cannot say (SchedBundle.cpp)",
           failure();
  auto integer = [&] { return cast<IntegerAttr>(attr).getInt(); };
  switch (it->second) {
  case Kind::I64:
    return json::Value(integer());
  case Kind::F64:
    return json::Value(cast<FloatAttr>(attr).getValueAsDouble());
  case Kind::Bool:
    return json::Value(cast<BoolAttr>(attr).getValue());
  case Kind::Unit:
    return json::Value(true);
  case Kind::Str:
    return json::Value(cast<StringAttr>(attr).str());
  case Kind::StrArray:
    return json::Value(strings(cast<ArrayAttr>(attr)));
  case Kind::I64Array:
    return json::Value(i64s(cast<DenseI64ArrayAttr>(attr).asArrayRef()));
  case Kind::Symbol:
    return json::Value(cast<FlatSymbolRefAttr>(attr).getValue().str());
  case Kind::Epilogue:
    return json::Value(
        sched::stringifyEpilogue(static_cast<sched::Epilogue>(integer())));
  case Kind::CollectiveKind:
    return json::Value(sched::stringifyCollectiveKind(
        static_cast<sched::CollectiveKind>(integer())));
  case Kind::Reduction:
    return json::Value(
        sched::stringifyReduction(static_cast<sched::Reduction>(integer())));
  case Kind::Algorithm:
    return json::Value(sched::stringifyAttentionAlgorithm(
        static_cast<sched::AttentionAlgorithm>(integer())));
  case Kind::Split:
    return splitOf(cast<ArrayAttr>(attr));
  case Kind::Scalars: {
    json::Array out;
    for (Attribute s : cast<ArrayAttr>(attr)) {
      std::string type = dtypeName(cast<TypedAttr>(s).getType());
      if (auto f = dyn_cast<FloatAttr>(s))
        out.push_back(json::Object{{type, f.getValueAsDouble()}});
      else
        out.push_back(json::Object{{type, cast<IntegerAttr>(s).getInt()}});
    }
    return json::Value(std::move(out));
  }
  }
  llvm_unreachable("unknown attribute kind");
}

json::Object typed(sched::BufferType type) {
  return json::Object{{"shape", i64s(type.getShape())},
                      {"dtype", dtypeName(type.getElementType())}};
}

/// The first name in `loc` ("transformer.h.0.mlp"), or "".
std::string layerOf(Location loc) {
  std::string name;
  loc->walk([&](Location inner) {
    if (auto named = dyn_cast<NameLoc>(inner)) {
      name = named.getName().str();
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return name;
}

FailureOr<json::Object> writeInstruction(Operation *op,
                                         llvm::DenseMap<Value, int64_t> &ids) {
  json::Object out{
      {"op", op->getName().stripDialect().str()},
      {"stream",
       cast<sched::InstructionOpInterface>(op).getStreamName().str()}};
  json::Array operands;
  for (Value v : op->getOperands())
    operands.push_back(ids.lookup(v));
  out["operands"] = std::move(operands);
  // The layer the instruction computes (the frontends name each module's
  // ops by its Hugging Face path), for the runtime's messages.
  if (std::string layer = layerOf(op->getLoc()); !layer.empty())
    out["layer"] = layer;
  for (StringAttr name : op->getName().getAttributeNames()) {
    if (isStructural(name))
      continue;
    Attribute attr = op->getAttr(name);
    auto kind = attributeKinds().find(name);
    if (!attr && kind != attributeKinds().end() && kind->second == Kind::Unit) {
      out[name.getValue()] = false;
      continue;
    }
    if (!attr && isOmittable(name))
      continue;
    if (!attr)
      return op->emitOpError("has no '") << name << "' to write", failure();
    FailureOr<json::Value> value = encode(op, name, attr);
    if (failed(value))
      return failure();
    out[name.getValue()] = std::move(*value);
  }
  // What the optional operands are, as the format spells it.
  if (auto launch = dyn_cast<sched::LaunchOp>(op)) {
    out["inputs"] = static_cast<int64_t>(launch.getInputs().size());
    out["outputs"] = static_cast<int64_t>(launch.getOutputs().size());
  } else if (auto gemm = dyn_cast<sched::GemmOp>(op)) {
    out["has_bias"] = static_cast<bool>(gemm.getBias());
    out["has_aux"] = static_cast<bool>(gemm.getAux());
    out["has_scales"] = static_cast<bool>(gemm.getScaleA());
  } else if (auto grouped = dyn_cast<sched::GroupedMatmulOp>(op)) {
    out["has_scales"] = static_cast<bool>(grouped.getScaleInput());
  } else if (auto wgrad = dyn_cast<sched::GroupedMatmulWgradOp>(op)) {
    out["has_scales"] = static_cast<bool>(wgrad.getScaleLhs());
  } else if (auto scratch = dyn_cast<sched::ScratchOpInterface>(op)) {
    out["has_scratch"] = static_cast<bool>(scratch.getScratch());
    if (auto attention = dyn_cast<sched::AttentionOp>(op)) {
      out["has_positions"] = static_cast<bool>(attention.getQueryPositions());
      out["has_entropy"] = static_cast<bool>(attention.getEntropy());
      out["has_step"] = static_cast<bool>(attention.getStep());
      out["has_microbatch"] = static_cast<bool>(attention.getMicrobatch());
    }
    if (auto grad = dyn_cast<sched::AttentionGradOp>(op)) {
      out["has_positions"] = static_cast<bool>(grad.getQueryPositions());
      out["has_lse_grad"] = static_cast<bool>(grad.getLseGrad());
      out["has_step"] = static_cast<bool>(grad.getStep());
      out["has_microbatch"] = static_cast<bool>(grad.getMicrobatch());
    }
  } else if (auto rope = dyn_cast<sched::RopeOp>(op)) {
    out["has_positions"] = static_cast<bool>(rope.getPositions());
  } else if (auto dropout = dyn_cast<sched::DropoutOp>(op)) {
    out["has_step"] = static_cast<bool>(dropout.getStep());
    out["has_microbatch"] = static_cast<bool>(dropout.getMicrobatch());
    out["has_positions"] = static_cast<bool>(dropout.getPositions());
  } else if (auto copy = dyn_cast<sched::CopyOp>(op); copy && copy.getMesh()) {
    out["by_rank"] = json::Object{{"axes", strings(*copy.getRankAxes())},
                                  {"step", *copy.getRankStep()}};
  }
  return out;
}

FailureOr<json::Object> writeProgram(sched::ProgramOp program) {
  if (!program.isPlanned())
    return program.emitOpError("is not planned (run weft-sched-plan-memory "
                               "before writing a bundle)"),
           failure();
  Block &body = program.getBody().front();
  llvm::DenseMap<Value, int64_t> ids;
  json::Array inputs, buffers, instructions, assigns, outputs;
  auto define = [&](Value v, json::Object desc) {
    json::Object entry = typed(cast<sched::BufferType>(v.getType()));
    for (auto &kv : desc)
      entry[kv.first] = std::move(kv.second);
    ids[v] = buffers.size();
    buffers.push_back(std::move(entry));
  };
  std::optional<ArrayAttr> inputSplit = program.getInputSplit();
  std::optional<ArrayRef<int64_t>> inputChunks = program.getInputChunks();
  for (BlockArgument arg : body.getArguments()) {
    json::Object input = typed(cast<sched::BufferType>(arg.getType()));
    if (inputSplit)
      input["split"] =
          splitOf(cast<ArrayAttr>((*inputSplit)[arg.getArgNumber()]));
    if (inputChunks && (*inputChunks)[arg.getArgNumber()])
      input["sequence_chunks"] = (*inputChunks)[arg.getArgNumber()];
    inputs.push_back(std::move(input));
    define(arg, json::Object{{"kind", "input"},
                             {"index", int64_t(arg.getArgNumber())}});
  }
  for (Operation &op : body) {
    if (auto get = dyn_cast<sched::GetOp>(op)) {
      bool isParam = isa_and_nonnull<sched::ParamOp>(
          SymbolTable::lookupNearestSymbolFrom(&op, get.getNameAttr()));
      define(get, json::Object{{"kind", isParam ? "param" : "constant"},
                               {"name", get.getName().str()}});
    } else if (auto alloc = dyn_cast<sched::AllocOp>(op)) {
      define(alloc, json::Object{{"kind", "alloc"},
                                 {"offset", *alloc.getOffset()},
                                 {"first", *alloc.getFirst()},
                                 {"last", *alloc.getLast()}});
    } else if (auto view = dyn_cast<sched::ViewOp>(op)) {
      define(view, json::Object{{"kind", "view"},
                                {"of", ids.lookup(view.getSource())},
                                {"offset", view.getOffset()}});
    } else if (isa<sched::InstructionOpInterface>(op)) {
      FailureOr<json::Object> instruction = writeInstruction(&op, ids);
      if (failed(instruction))
        return failure();
      instructions.push_back(std::move(*instruction));
    } else if (auto assign = dyn_cast<sched::AssignOp>(op)) {
      assigns.push_back(
          json::Object{{"param", assign.getParam().str()},
                       {"buffer", ids.lookup(assign.getValue())}});
    } else if (auto ret = dyn_cast<sched::ReturnOp>(op)) {
      for (auto [i, name, v] : llvm::enumerate(
               ret.getNames().getAsValueRange<StringAttr>(), ret.getValues())) {
        json::Object output{{"name", name.str()}, {"buffer", ids.lookup(v)}};
        if (std::optional<ArrayAttr> split = ret.getSplit())
          output["split"] = splitOf(cast<ArrayAttr>((*split)[i]));
        outputs.push_back(std::move(output));
      }
    }
  }
  return json::Object{
      {"name", program.getSymName().str()},
      {"arena", *program.getArena()},
      {"align", program.getAlign()},
      {"events", program.getEvents()},
      {"streams", strings(program.getStreams())},
      {"inputs", std::move(inputs)},
      {"buffers", std::move(buffers)},
      {"instructions", std::move(instructions)},
      {"assigns", std::move(assigns)},
      {"outputs", std::move(outputs)},
  };
}

FailureOr<json::Value> constantValues(sched::ConstantOp constant) {
  auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
  if (!dense)
    return constant.emitOpError("bundles hold dense constants only"), failure();
  auto number = [&](Attribute a) -> json::Value {
    if (auto f = dyn_cast<FloatAttr>(a))
      return f.getValueAsDouble();
    return cast<IntegerAttr>(a).getInt();
  };
  if (dense.isSplat())
    return number(dense.getSplatValue<Attribute>());
  json::Array values;
  for (Attribute a : dense.getValues<Attribute>())
    values.push_back(number(a));
  return json::Value(std::move(values));
}

//===----------------------------------------------------------------------===//
// Reader
//===----------------------------------------------------------------------===//

/// A JSON walker whose errors say where in the manifest they are.
class Reader {
public:
  Reader(StringRef source, MLIRContext *ctx)
      : source(source), ctx(ctx), b(ctx) {}

  OwningOpRef<ModuleOp> read(const json::Value &manifest);

private:
  /// Converts to whatever failure the caller returns.
  struct Failed {
    operator LogicalResult() const { return failure(); }
    template <typename T> operator FailureOr<T>() const { return failure(); }
    operator OwningOpRef<ModuleOp>() const { return nullptr; }
  };
  /// Where in the manifest an op came from, for the verifier's messages
  /// ("file: program 'step', instruction 12 (gemm)"; JSON has no lines).
  Location locate(const Twine &place) {
    return FileLineColLoc::get(b.getStringAttr(source + ": " + place), 0, 0);
  }
  Failed fail(const Twine &where, const Twine &what) {
    emitError(locate(where)) << what;
    return {};
  }

  FailureOr<sched::BufferType> bufferType(const json::Object &o,
                                          const Twine &where) {
    const json::Array *shape = o.getArray("shape");
    std::optional<StringRef> dtype = o.getString("dtype");
    if (!shape || !dtype)
      return fail(where, "needs \"shape\" and \"dtype\"");
    SmallVector<int64_t> dims;
    for (const json::Value &d : *shape) {
      std::optional<int64_t> n = d.getAsInteger();
      if (!n)
        return fail(where, "shape entries must be integers");
      dims.push_back(*n);
    }
    Type element = dtypeOf(*dtype, ctx);
    if (!element || element.isF64())
      return fail(where, "unknown dtype '" + *dtype + "'");
    auto diag = [&] { return emitError(locate(where)); };
    auto type = sched::BufferType::getChecked(diag, ctx,
                                              ArrayRef<int64_t>(dims), element);
    if (!type)
      return failure();
    return type;
  }

  FailureOr<Attribute> decode(Kind kind, const json::Value &v,
                              const Twine &where);
  /// `v` as a name of enum E; else an error at `where` saying what it is
  /// and listing the names, as weft-run does.
  template <typename E>
  FailureOr<E> enumNamed(const json::Value &v, const Twine &where);
  LogicalResult readProgram(const json::Object &p, ModuleOp module);
  FailureOr<ArrayAttr> splitAttr(const json::Value *v, const Twine &where);

  std::string source;
  MLIRContext *ctx;
  OpBuilder b;
  FlatSymbolRefAttr mesh;
  /// What `has_scratch` says of each instruction that may have a scratch,
  /// checked once the module verifies (its operands are sound then).
  struct ScratchFlag {
    sched::ScratchOpInterface op;
    bool hasScratch;
    std::string at;
  };
  std::vector<ScratchFlag> scratchFlags;
};

FailureOr<ArrayAttr> Reader::splitAttr(const json::Value *v,
                                       const Twine &where) {
  const json::Array *dims = v ? v->getAsArray() : nullptr;
  if (!dims)
    return fail(where, "split must be a list per dimension");
  SmallVector<Attribute> out;
  for (const json::Value &dim : *dims) {
    FailureOr<Attribute> axes = decode(Kind::StrArray, dim, where);
    if (failed(axes))
      return failure();
    out.push_back(*axes);
  }
  return b.getArrayAttr(out);
}

template <typename E>
FailureOr<E> Reader::enumNamed(const json::Value &v, const Twine &where) {
  std::optional<StringRef> s = v.getAsString();
  if (std::optional<E> e = s ? sched::symbolizeEnum<E>(*s) : std::nullopt)
    return *e;
  // The enums number their cases from 0 up; past the last the name is "".
  std::string names;
  for (unsigned i = 0; !sched::stringifyEnum(static_cast<E>(i)).empty(); ++i)
    names += (i ? ", \"" : "\"") +
             sched::stringifyEnum(static_cast<E>(i)).str() + "\"";
  if (s)
    return fail(where, "is \"" + *s + "\", not one of " + names);
  return fail(where, "must be one of " + names);
}

FailureOr<Attribute> Reader::decode(Kind kind, const json::Value &v,
                                    const Twine &where) {
  auto bad = [&](StringRef want) -> FailureOr<Attribute> {
    return fail(where, "must be " + want);
  };
  auto enumOf = [&](auto value) -> FailureOr<Attribute> {
    if (failed(value))
      return failure();
    return Attribute(b.getI32IntegerAttr(static_cast<int32_t>(*value)));
  };
  switch (kind) {
  case Kind::I64:
    if (std::optional<int64_t> i = v.getAsInteger())
      return Attribute(b.getI64IntegerAttr(*i));
    return bad("an integer");
  case Kind::F64:
    if (std::optional<double> d = v.getAsNumber())
      return Attribute(b.getF64FloatAttr(*d));
    return bad("a number");
  case Kind::Bool:
  case Kind::Unit:
    if (std::optional<bool> x = v.getAsBoolean())
      return Attribute(kind == Kind::Bool ? Attribute(b.getBoolAttr(*x))
                                          : Attribute(b.getUnitAttr()));
    return bad("true or false");
  case Kind::Str:
    if (std::optional<StringRef> s = v.getAsString())
      return Attribute(b.getStringAttr(*s));
    return bad("a string");
  case Kind::Symbol:
    if (std::optional<StringRef> s = v.getAsString())
      return Attribute(FlatSymbolRefAttr::get(ctx, *s));
    return bad("a string");
  case Kind::StrArray: {
    const json::Array *list = v.getAsArray();
    if (!list)
      return bad("a list of strings");
    SmallVector<StringRef> out;
    for (const json::Value &e : *list) {
      std::optional<StringRef> s = e.getAsString();
      if (!s)
        return bad("a list of strings");
      out.push_back(*s);
    }
    return Attribute(b.getStrArrayAttr(out));
  }
  case Kind::I64Array: {
    const json::Array *list = v.getAsArray();
    if (!list)
      return bad("a list of integers");
    SmallVector<int64_t> out;
    for (const json::Value &e : *list) {
      std::optional<int64_t> i = e.getAsInteger();
      if (!i)
        return bad("a list of integers");
      out.push_back(*i);
    }
    return Attribute(b.getDenseI64ArrayAttr(out));
  }
  case Kind::Split: {
    FailureOr<ArrayAttr> split = splitAttr(&v, where);
    if (failed(split))
      return failure();
    return Attribute(*split);
  }
  case Kind::Epilogue:
    return enumOf(enumNamed<sched::Epilogue>(v, where));
  case Kind::CollectiveKind:
    return enumOf(enumNamed<sched::CollectiveKind>(v, where));
  case Kind::Reduction:
    return enumOf(enumNamed<sched::Reduction>(v, where));
  case Kind::Algorithm:
    return enumOf(enumNamed<sched::AttentionAlgorithm>(v, where));
  case Kind::Scalars: {
    const json::Array *list = v.getAsArray();
    if (!list)
      return bad("a list of typed scalars");
    SmallVector<Attribute> out;
    for (const json::Value &e : *list) {
      const json::Object *o = e.getAsObject();
      if (!o || o->size() != 1)
        return bad("a list of {\"i64\": n} / {\"f32\": x} scalars");
      auto [type, value] = *o->begin();
      unsigned width = type == "i64" ? 64 : 32;
      if ((type == "i64" || type == "i32") && value.getAsInteger() &&
          llvm::isIntN(width, *value.getAsInteger()))
        out.push_back(
            b.getIntegerAttr(b.getIntegerType(width), *value.getAsInteger()));
      else if ((type == "f32" || type == "f64") && value.getAsNumber())
        out.push_back(
            b.getFloatAttr(type == "f32" ? b.getF32Type() : b.getF64Type(),
                           *value.getAsNumber()));
      else
        return bad("a list of {\"i64\": n} / {\"f32\": x} scalars");
    }
    return Attribute(b.getArrayAttr(out));
  }
  }
  llvm_unreachable("unknown attribute kind");
}

LogicalResult Reader::readProgram(const json::Object &p, ModuleOp module) {
  std::optional<StringRef> name = p.getString("name");
  if (!name)
    return fail("a program", "needs a \"name\"");
  std::string where = ("program '" + *name + "'").str();
  std::optional<int64_t> arena = p.getInteger("arena"),
                         align = p.getInteger("align"),
                         events = p.getInteger("events");
  const json::Array *streams = p.getArray("streams"),
                    *inputs = p.getArray("inputs"),
                    *buffers = p.getArray("buffers"),
                    *instructions = p.getArray("instructions"),
                    *assigns = p.getArray("assigns"),
                    *outputs = p.getArray("outputs");
  if (!arena || !align || !events || !streams || !inputs || !buffers ||
      !instructions || !assigns || !outputs)
    return fail(where, "needs arena, align, events, streams, inputs, "
                       "buffers, instructions, assigns and outputs");
  FailureOr<Attribute> streamNames =
      decode(Kind::StrArray, json::Value(json::Array(*streams)), where);
  if (failed(streamNames))
    return failure();
  b.setInsertionPointToEnd(module.getBody());
  Location loc = locate(where);
  auto program = sched::ProgramOp::create(
      b, loc, b.getStringAttr(*name), b.getI64IntegerAttr(*arena),
      b.getI64IntegerAttr(*align), b.getI64IntegerAttr(*events),
      cast<ArrayAttr>(*streamNames), ArrayAttr(), DenseI64ArrayAttr());
  Block *body = new Block();
  program.getBody().push_back(body);
  b.setInsertionPointToEnd(body);

  SmallVector<Attribute> inputSplit;
  SmallVector<int64_t> inputChunks;
  bool anySplit = false;
  for (auto [i, input] : llvm::enumerate(*inputs)) {
    std::string at = llvm::formatv("{0}, input {1}", where, i).str();
    const json::Object *o = input.getAsObject();
    if (!o)
      return fail(at, "must be an object");
    FailureOr<sched::BufferType> type = bufferType(*o, at);
    if (failed(type))
      return failure();
    body->addArgument(*type, loc);
    inputChunks.push_back(o->getInteger("sequence_chunks").value_or(0));
    if (const json::Value *split = o->get("split")) {
      FailureOr<ArrayAttr> dims = splitAttr(split, at);
      if (failed(dims))
        return failure();
      inputSplit.push_back(*dims);
      anySplit = true;
    } else {
      inputSplit.push_back(b.getArrayAttr({}));
    }
  }
  if (anySplit)
    program.setInputSplitAttr(b.getArrayAttr(inputSplit));
  if (llvm::any_of(inputChunks, [](int64_t c) { return c != 0; }))
    program.setInputChunksAttr(b.getDenseI64ArrayAttr(inputChunks));

  SmallVector<Value> values;
  for (auto [i, buffer] : llvm::enumerate(*buffers)) {
    std::string at = llvm::formatv("{0}, buffer {1}", where, i).str();
    const json::Object *o = buffer.getAsObject();
    if (!o)
      return fail(at, "must be an object");
    FailureOr<sched::BufferType> type = bufferType(*o, at);
    if (failed(type))
      return failure();
    std::optional<StringRef> kind = o->getString("kind");
    Location bufLoc = locate(at);
    Value v;
    if (kind == "input") {
      std::optional<int64_t> index = o->getInteger("index");
      if (!index || *index < 0 || *index >= int64_t(body->getNumArguments()))
        return fail(at, "\"index\" must name an input");
      v = body->getArgument(*index);
      if (v.getType() != *type)
        return fail(at, "is not of its input's type");
    } else if (kind == "param" || kind == "constant") {
      std::optional<StringRef> symbol = o->getString("name");
      if (!symbol)
        return fail(at, "needs a \"name\"");
      v = sched::GetOp::create(b, bufLoc, *type,
                               FlatSymbolRefAttr::get(ctx, *symbol));
    } else if (kind == "alloc") {
      std::optional<int64_t> offset = o->getInteger("offset"),
                             first = o->getInteger("first"),
                             last = o->getInteger("last");
      if (!offset || !first || !last)
        return fail(at, "needs offset, first and last");
      v = sched::AllocOp::create(b, bufLoc, *type, b.getI64IntegerAttr(*offset),
                                 b.getI64IntegerAttr(*first),
                                 b.getI64IntegerAttr(*last));
    } else if (kind == "view") {
      std::optional<int64_t> of = o->getInteger("of"),
                             offset = o->getInteger("offset");
      if (!of || !offset || *of < 0 || *of >= int64_t(values.size()))
        return fail(at, "a view needs \"of\" (an earlier buffer) and "
                        "\"offset\"");
      v = sched::ViewOp::create(b, bufLoc, *type, values[*of],
                                b.getI64IntegerAttr(*offset));
    } else {
      return fail(at, "unknown kind; expected input, param, constant, alloc "
                      "or view");
    }
    values.push_back(v);
  }
  auto buffer = [&](const json::Value &id, const Twine &at) -> Value {
    std::optional<int64_t> i = id.getAsInteger();
    if (!i || *i < 0 || *i >= int64_t(values.size())) {
      (void)fail(at, "names no buffer");
      return Value();
    }
    return values[*i];
  };

  for (auto [i, instruction] : llvm::enumerate(*instructions)) {
    const json::Object *o = instruction.getAsObject();
    std::optional<StringRef> op = o ? o->getString("op") : std::nullopt;
    std::string at =
        llvm::formatv("{0}, instruction {1} ({2})", where, i, op ? *op : "?")
            .str();
    if (!op)
      return fail(at, "needs an \"op\"");
    std::string opName = ("sched." + *op).str();
    std::optional<RegisteredOperationName> info =
        RegisteredOperationName::lookup(opName, ctx);
    if (!info || !info->hasInterface<sched::InstructionOpInterface>())
      return fail(at, "is not a sched instruction");
    Location loc = locate(at);
    if (const json::Value *layer = o->get("layer")) {
      std::optional<StringRef> name = layer->getAsString();
      if (!name)
        return fail(at + ", \"layer\"", "must be a string");
      loc = NameLoc::get(StringAttr::get(ctx, *name), loc);
    }
    OperationState state(loc, opName);
    const json::Array *operands = o->getArray("operands");
    if (!operands)
      return fail(at, "needs \"operands\"");
    for (const json::Value &id : *operands) {
      Value v = buffer(id, at + ", operand");
      if (!v)
        return failure();
      state.operands.push_back(v);
    }
    NamedAttrList attrs;
    for (const auto &[key, value] : *o) {
      StringRef k = key;
      std::string field = (at + ", \"" + k + "\"").str();
      if (k == "op" || k == "operands" || k == "layer")
        continue;
      if (k == "stream") {
        FailureOr<Attribute> s = decode(Kind::Str, value, field);
        if (failed(s))
          return failure();
        attrs.set("stream", *s);
        continue;
      }
      if (k == "has_scratch" &&
          !info->hasInterface<sched::ScratchOpInterface>())
        return fail(field,
                    "is not a field of " + opName + ", which takes no scratch");
      // Operand presence, as the format spells it.
      if (k == "inputs" || k == "outputs" || k.starts_with("has_"))
        continue;
      if (k == "by_rank") {
        const json::Object *r = value.getAsObject();
        const json::Value *axes = r ? r->get("axes") : nullptr;
        std::optional<int64_t> step = r ? r->getInteger("step") : std::nullopt;
        if (!axes || !step || !mesh)
          return fail(field, "needs axes and a step (and a mesh)");
        FailureOr<Attribute> a = decode(Kind::StrArray, *axes, field);
        if (failed(a))
          return failure();
        attrs.set("mesh", mesh);
        attrs.set("rank_axes", *a);
        attrs.set("rank_step", b.getI64IntegerAttr(*step));
        continue;
      }
      auto kind = attributeKinds().find(k);
      if (kind == attributeKinds().end() ||
          !llvm::is_contained(info->getAttributeNames(), b.getStringAttr(k)))
        return fail(field, "is not an attribute of " + opName);
      if (kind->second == Kind::Unit && value.getAsBoolean() == false)
        continue;
      FailureOr<Attribute> a = decode(kind->second, value, field);
      if (failed(a))
        return failure();
      attrs.set(k, *a);
    }
    if (opName == "sched.collective" || opName == "sched.send" ||
        opName == "sched.recv" || opName == "sched.ring_shift") {
      if (!mesh)
        return fail(at, "communicates, but the bundle has no mesh");
      attrs.set("mesh", mesh);
    }
    auto count = [&](StringRef key) { return o->getInteger(key).value_or(-1); };
    auto flag = [&](StringRef key) {
      return o->getBoolean(key).value_or(false) ? 1 : 0;
    };
    size_t n = state.operands.size();
    if (opName == "sched.launch") {
      if (count("inputs") < 0 || count("outputs") < 0 ||
          count("inputs") + count("outputs") != int64_t(n))
        return fail(at, "\"inputs\" and \"outputs\" must count its operands");
      attrs.set("operandSegmentSizes",
                b.getDenseI32ArrayAttr(
                    {int32_t(count("inputs")), int32_t(count("outputs"))}));
    } else if (opName == "sched.gemm") {
      int32_t bias = flag("has_bias"), aux = flag("has_aux"),
              scales = flag("has_scales");
      if (n != size_t(3 + bias + aux + 2 * scales))
        return fail(at, "has " + Twine(n) +
                            " operands, not what has_bias, has_aux and "
                            "has_scales say");
      attrs.set("operandSegmentSizes",
                b.getDenseI32ArrayAttr({1, 1, 1, bias, aux, scales, scales}));
    } else if (opName == "sched.grouped_matmul" ||
               opName == "sched.grouped_matmul_wgrad") {
      int32_t scales = flag("has_scales");
      if (n != size_t(4 + 2 * scales))
        return fail(at,
                    "has " + Twine(n) + " operands, not what has_scales says");
      attrs.set("operandSegmentSizes",
                b.getDenseI32ArrayAttr({1, 1, 1, 1, scales, scales}));
    } else if (opName == "sched.dropout") {
      int32_t step = flag("has_step"), microbatch = flag("has_microbatch"),
              positions = flag("has_positions");
      if (n != size_t(2 + step + microbatch + positions))
        return fail(at, "has " + Twine(n) +
                            " operands, not what has_step, has_microbatch "
                            "and has_positions say");
      attrs.set("operandSegmentSizes",
                b.getDenseI32ArrayAttr({1, 1, step, microbatch, positions}));
    } else if (opName == "sched.attention" ||
               opName == "sched.attention_grad") {
      bool grad = opName == "sched.attention_grad";
      int32_t positions = flag("has_positions"), lseGrad = flag("has_lse_grad"),
              entropy = flag("has_entropy"), step = flag("has_step"),
              microbatch = flag("has_microbatch"),
              scratch = flag("has_scratch");
      if (lseGrad && !grad)
        return fail(at, "has_lse_grad is attention_grad's, not attention's");
      if (entropy && grad)
        return fail(at, "has_entropy is attention's, not attention_grad's");
      size_t fixed = grad ? 9 : 5;
      if (n != fixed + 2 * positions + lseGrad + entropy + step + microbatch +
                   scratch)
        return fail(at, "has " + Twine(n) +
                            " operands, not what has_positions, "
                            "has_lse_grad, has_entropy, has_step, "
                            "has_microbatch and has_scratch say");
      SmallVector<int32_t> sizes(fixed, 1);
      sizes.append({positions, positions});
      if (grad)
        sizes.push_back(lseGrad);
      else
        sizes.push_back(entropy);
      sizes.append({step, microbatch, scratch});
      attrs.set("operandSegmentSizes", b.getDenseI32ArrayAttr(sizes));
    }
    std::optional<bool> hasScratch = o->getBoolean("has_scratch");
    bool mayHaveScratch = info->hasInterface<sched::ScratchOpInterface>();
    // An expert route or ragged exchange may lack it (bundles from before
    // they could have one).
    if (mayHaveScratch && !hasScratch &&
        (opName == "sched.expert_route" || opName == "sched.ragged_all_to_all"))
      hasScratch = false;
    if (mayHaveScratch && !hasScratch)
      return fail(at, "needs \"has_scratch\" (true or false)");
    state.propertiesAttr = attrs.getDictionary(ctx);
    Operation *created = b.create(state);
    if (!created)
      return failure();
    if (mayHaveScratch)
      scratchFlags.push_back(
          {cast<sched::ScratchOpInterface>(created), *hasScratch, at});
  }

  for (auto [i, assign] : llvm::enumerate(*assigns)) {
    std::string at = llvm::formatv("{0}, assign {1}", where, i).str();
    const json::Object *o = assign.getAsObject();
    std::optional<StringRef> param = o ? o->getString("param") : std::nullopt;
    const json::Value *id = o ? o->get("buffer") : nullptr;
    if (!param || !id)
      return fail(at, "needs \"param\" and \"buffer\"");
    Value v = buffer(*id, at);
    if (!v)
      return failure();
    sched::AssignOp::create(b, loc, *param, v);
  }
  SmallVector<Attribute> names, split;
  SmallVector<Value> results;
  bool anyOutputSplit = false;
  for (auto [i, output] : llvm::enumerate(*outputs)) {
    std::string at = llvm::formatv("{0}, output {1}", where, i).str();
    const json::Object *o = output.getAsObject();
    std::optional<StringRef> oname = o ? o->getString("name") : std::nullopt;
    const json::Value *id = o ? o->get("buffer") : nullptr;
    if (!oname || !id)
      return fail(at, "needs \"name\" and \"buffer\"");
    Value v = buffer(*id, at);
    if (!v)
      return failure();
    names.push_back(b.getStringAttr(*oname));
    results.push_back(v);
    if (const json::Value *s = o->get("split")) {
      FailureOr<ArrayAttr> dims = splitAttr(s, at);
      if (failed(dims))
        return failure();
      split.push_back(*dims);
      anyOutputSplit = true;
    } else {
      split.push_back(b.getArrayAttr({}));
    }
  }
  sched::ReturnOp::create(b, loc, b.getArrayAttr(names), results,
                          anyOutputSplit ? b.getArrayAttr(split) : ArrayAttr());
  return success();
}

OwningOpRef<ModuleOp> Reader::read(const json::Value &manifest) {
  const json::Object *top = manifest.getAsObject();
  if (!top || top->getString("format") != "weft-bundle")
    return fail("the manifest", "is not a weft bundle (\"format\" must be "
                                "\"weft-bundle\")");
  std::optional<int64_t> version = top->getInteger("version");
  if (version != kSchedBundleVersion)
    return fail("the manifest",
                version == 1
                    ? Twine("is a version 1 bundle, which holds weft ops, "
                            "not sched: only version 2 reads as sched IR")
                    : "version must be " + Twine(kSchedBundleVersion));
  OwningOpRef<ModuleOp> module =
      ModuleOp::create(FileLineColLoc::get(b.getStringAttr(source), 0, 0));
  // What the model is and which kernel files: kept for the writer.
  for (StringRef key : {"meta", "kernels"})
    if (const json::Value *v = top->get(key)) {
      std::string text;
      llvm::raw_string_ostream os(text);
      os << *v;
      (*module)->setAttr(("sched." + key).str(), b.getStringAttr(text));
    }
  b.setInsertionPointToEnd(module->getBody());
  Location loc = FileLineColLoc::get(b.getStringAttr(source), 0, 0);
  if (const json::Object *m = top->getObject("mesh")) {
    std::optional<StringRef> name = m->getString("name");
    const json::Value *axes = m->get("axes"), *sizes = m->get("sizes");
    if (!name || !axes || !sizes)
      return fail("the mesh", "needs name, axes and sizes");
    FailureOr<Attribute> a = decode(Kind::StrArray, *axes, "the mesh axes");
    FailureOr<Attribute> s = decode(Kind::I64Array, *sizes, "the mesh sizes");
    if (failed(a) || failed(s))
      return nullptr;
    sched::MeshOp::create(b, loc, *name, cast<ArrayAttr>(*a),
                          cast<DenseI64ArrayAttr>(*s));
    mesh = FlatSymbolRefAttr::get(ctx, *name);
  }
  auto list = [&](StringRef key) -> const json::Array * {
    const json::Array *a = top->getArray(key);
    if (!a)
      (void)fail("the manifest", "needs \"" + key + "\" (a list)");
    return a;
  };
  const json::Array *params = list("params"), *constants = list("constants"),
                    *decls = list("kernel_decls"), *programs = list("programs"),
                    *schedules = list("schedules");
  if (!params || !constants || !decls || !programs || !schedules)
    return nullptr;
  for (auto [i, p] : llvm::enumerate(*params)) {
    std::string at = llvm::formatv("param {0}", i).str();
    const json::Object *o = p.getAsObject();
    if (!o)
      return fail(at, "must be an object");
    std::optional<StringRef> name = o->getString("name");
    if (!name)
      return fail(at, "needs a \"name\" (a string)");
    at = ("param '" + *name + "'").str();
    FailureOr<sched::BufferType> type = bufferType(*o, at);
    if (failed(type))
      return nullptr;
    const json::Value *init = o->get("init");
    if (!init)
      return fail(at, "needs \"init\"");
    FailureOr<sched::InitKind> kind =
        enumNamed<sched::InitKind>(*init, at + ", \"init\"");
    if (failed(kind))
      return nullptr;
    std::optional<bool> state = o->getBoolean("state");
    if (!state)
      return fail(at, "needs \"state\" (true or false)");
    FloatAttr scale;
    if (const json::Value *s = o->get("scale")) {
      if (!s->getAsNumber())
        return fail(at, "scale must be a number");
      scale = b.getF64FloatAttr(*s->getAsNumber());
    }
    ArrayAttr split;
    if (const json::Value *s = o->get("split")) {
      FailureOr<ArrayAttr> dims = splitAttr(s, at);
      if (failed(dims))
        return nullptr;
      split = *dims;
    }
    // The optional integer fields, decoded as the instructions' are.
    auto optional = [&](StringRef key, Kind kind) -> FailureOr<Attribute> {
      const json::Value *v = o->get(key);
      if (!v)
        return Attribute();
      return decode(kind, *v, at + ", \"" + key + "\"");
    };
    FailureOr<Attribute> pipelineRank = optional("pipeline_rank", Kind::I64),
                         checkpointRows =
                             optional("checkpoint_rows", Kind::I64),
                         checkpointShape =
                             optional("checkpoint_shape", Kind::I64Array),
                         checkpointStack =
                             optional("checkpoint_stack", Kind::Str),
                         probe = optional("probe", Kind::Str),
                         probeFold = optional("probe_fold", Kind::Str);
    if (failed(pipelineRank) || failed(checkpointRows) ||
        failed(checkpointShape) || failed(checkpointStack) || failed(probe) ||
        failed(probeFold))
      return nullptr;
    bool transient = false;
    if (const json::Value *t = o->get("transient")) {
      if (!t->getAsBoolean())
        return fail(at, "\"transient\" must be true or false");
      transient = *t->getAsBoolean();
    }
    sched::ParamOp::create(
        b, loc, b.getStringAttr(*name), sched::InitKindAttr::get(ctx, *kind),
        scale, *state ? b.getUnitAttr() : UnitAttr(), split,
        TypeAttr::get(*type), cast_if_present<IntegerAttr>(*pipelineRank),
        cast_if_present<IntegerAttr>(*checkpointRows),
        cast_if_present<DenseI64ArrayAttr>(*checkpointShape),
        cast_if_present<StringAttr>(*checkpointStack),
        transient ? b.getUnitAttr() : UnitAttr(),
        cast_if_present<StringAttr>(*probe),
        cast_if_present<StringAttr>(*probeFold));
  }
  for (auto [i, c] : llvm::enumerate(*constants)) {
    std::string at = llvm::formatv("constant {0}", i).str();
    const json::Object *o = c.getAsObject();
    if (!o)
      return fail(at, "must be an object");
    FailureOr<sched::BufferType> type = bufferType(*o, at);
    std::optional<StringRef> name = o->getString("name");
    if (failed(type) || !name)
      return fail(at, "needs shape, dtype and name");
    auto tensor =
        RankedTensorType::get(type->getShape(), type->getElementType());
    auto element = [&](const json::Value &v) -> Attribute {
      if (isa<FloatType>(type->getElementType()) && v.getAsNumber())
        return b.getFloatAttr(type->getElementType(), *v.getAsNumber());
      if (isa<IntegerType>(type->getElementType()) && v.getAsInteger() &&
          llvm::isIntN(type->getElementType().getIntOrFloatBitWidth(),
                       *v.getAsInteger()))
        return b.getIntegerAttr(type->getElementType(), *v.getAsInteger());
      return Attribute();
    };
    DenseElementsAttr value;
    if (const json::Value *splat = o->get("splat")) {
      Attribute e = element(*splat);
      if (!e)
        return fail(at, "splat must be a number of its dtype");
      value = DenseElementsAttr::get(tensor, e);
    } else if (const json::Array *values = o->getArray("values")) {
      SmallVector<Attribute> elements;
      for (const json::Value &v : *values) {
        Attribute e = element(v);
        if (!e)
          return fail(at, "values must be numbers of its dtype");
        elements.push_back(e);
      }
      if (int64_t(elements.size()) != type->getNumElements())
        return fail(at, "has " + Twine(elements.size()) + " values for " +
                            Twine(type->getNumElements()) + " elements");
      value = DenseElementsAttr::get(tensor, elements);
    } else {
      return fail(at, "needs \"splat\" or \"values\"");
    }
    sched::ConstantOp::create(b, loc, b.getStringAttr(*name), value);
  }
  for (auto [i, d] : llvm::enumerate(*decls)) {
    std::string at = llvm::formatv("kernel_decl {0}", i).str();
    const json::Object *o = d.getAsObject();
    std::optional<StringRef> name = o ? o->getString("name") : std::nullopt;
    const json::Array *ins = o ? o->getArray("inputs") : nullptr,
                      *outs = o ? o->getArray("outputs") : nullptr,
                      *scalars = o ? o->getArray("scalars") : nullptr;
    if (!name || !ins || !outs || !scalars)
      return fail(at, "needs name, inputs, outputs and scalars");
    auto types = [&](const json::Array &list) -> FailureOr<ArrayAttr> {
      SmallVector<Attribute> out;
      for (const json::Value &t : list) {
        const json::Object *to = t.getAsObject();
        if (!to)
          return fail(at, "argument types must be objects");
        FailureOr<sched::BufferType> type = bufferType(*to, at);
        if (failed(type))
          return failure();
        out.push_back(TypeAttr::get(*type));
      }
      return b.getArrayAttr(out);
    };
    FailureOr<ArrayAttr> inTypes = types(*ins), outTypes = types(*outs);
    if (failed(inTypes) || failed(outTypes))
      return nullptr;
    SmallVector<Attribute> scalarTypes;
    for (const json::Value &s : *scalars) {
      Type t = s.getAsString() ? dtypeOf(*s.getAsString(), ctx) : Type();
      if (!t || !(t.isInteger(64) || t.isInteger(32) || t.isF32() || t.isF64()))
        return fail(at, "scalar types must be i64, i32, f32 or f64");
      scalarTypes.push_back(TypeAttr::get(t));
    }
    sched::KernelOp::create(b, loc, *name, *inTypes, *outTypes,
                            b.getArrayAttr(scalarTypes));
  }
  for (const json::Value &p : *programs) {
    const json::Object *o = p.getAsObject();
    if (!o)
      return fail("a program", "must be an object");
    if (failed(readProgram(*o, *module)))
      return nullptr;
  }
  b.setInsertionPointToEnd(module->getBody());
  for (auto [i, s] : llvm::enumerate(*schedules)) {
    std::string at = llvm::formatv("schedule {0}", i).str();
    const json::Object *o = s.getAsObject();
    std::optional<StringRef> name = o ? o->getString("name") : std::nullopt;
    std::optional<int64_t> mb =
        o ? o->getInteger("microbatches") : std::nullopt;
    const json::Array *seqs = o ? o->getArray("sequences") : nullptr;
    if (!name || !mb || !seqs)
      return fail(at, "needs name, microbatches and sequences");
    auto schedule = sched::ScheduleOp::create(b, loc, b.getStringAttr(*name),
                                              b.getI64IntegerAttr(*mb));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToEnd(&schedule.getBody().emplaceBlock());
    for (const json::Value &q : *seqs) {
      const json::Object *so = q.getAsObject();
      const json::Array *runs = so ? so->getArray("runs") : nullptr;
      if (!runs)
        return fail(at, "a sequence needs \"runs\"");
      std::optional<StringRef> axis = so->getString("axis");
      std::optional<int64_t> coordinate = so->getInteger("coordinate");
      auto seq = sched::SequenceOp::create(
          b, loc, axis ? b.getStringAttr(*axis) : StringAttr(),
          coordinate ? b.getI64IntegerAttr(*coordinate) : IntegerAttr());
      OpBuilder::InsertionGuard inner(b);
      b.setInsertionPointToEnd(&seq.getBody().emplaceBlock());
      for (const json::Value &r : *runs) {
        const json::Object *ro = r.getAsObject();
        std::optional<StringRef> program =
            ro ? ro->getString("program") : std::nullopt;
        std::optional<int64_t> micro =
            ro ? ro->getInteger("microbatch") : std::nullopt;
        std::optional<int64_t> chunk =
            ro ? ro->getInteger("chunk") : std::nullopt;
        if (!program || !micro || !chunk)
          return fail(at, "a run needs program, microbatch and chunk");
        sched::RunOp::create(b, loc, *program, *micro, *chunk);
      }
    }
  }
  if (failed(verify(*module)))
    return nullptr;
  for (ScratchFlag &f : scratchFlags)
    if (static_cast<bool>(f.op.getScratch()) != f.hasScratch)
      return fail(
          f.at,
          Twine("\"has_scratch\" is ") + (f.hasScratch ? "true" : "false") +
              " but the operands " +
              (f.hasScratch ? "end before a scratch" : "end with a scratch"));
  return module;
}

} // namespace

FailureOr<json::Object> writeSchedManifest(ModuleOp module,
                                           const json::Object *meta,
                                           const json::Object *kernels) {
  auto stored = [&](StringRef key) -> json::Value {
    auto text = module->getAttrOfType<StringAttr>(key);
    if (!text)
      return json::Object();
    llvm::Expected<json::Value> v = json::parse(text.getValue());
    if (v)
      return std::move(*v);
    llvm::consumeError(v.takeError());
    return json::Object();
  };
  json::Object out{
      {"format", "weft-bundle"},
      {"version", kSchedBundleVersion},
      {"meta", meta ? json::Value(json::Object(*meta)) : stored("sched.meta")},
      {"kernels", kernels ? json::Value(json::Object(*kernels))
                          : stored("sched.kernels")}};
  json::Array params, constants, decls, programs, schedules;
  for (Operation &op : module.getBody()->getOperations()) {
    if (auto mesh = dyn_cast<sched::MeshOp>(op)) {
      out["mesh"] = json::Object{{"name", mesh.getSymName().str()},
                                 {"axes", strings(mesh.getAxes())},
                                 {"sizes", i64s(mesh.getSizes())}};
    } else if (auto param = dyn_cast<sched::ParamOp>(op)) {
      json::Object p = typed(cast<sched::BufferType>(param.getType()));
      p["name"] = param.getSymName().str();
      p["init"] = sched::stringifyInitKind(param.getInit()).str();
      if (std::optional<APFloat> scale = param.getScale())
        p["scale"] = scale->convertToDouble();
      p["state"] = param.getState();
      if (param.getSplit())
        p["split"] = splitOf(param.getSplit());
      if (std::optional<int64_t> r = param.getPipelineRank())
        p["pipeline_rank"] = *r;
      if (std::optional<int64_t> r = param.getCheckpointRows())
        p["checkpoint_rows"] = *r;
      if (std::optional<ArrayRef<int64_t>> held = param.getCheckpointShape())
        p["checkpoint_shape"] = i64s(*held);
      if (std::optional<StringRef> stack = param.getCheckpointStack())
        p["checkpoint_stack"] = *stack;
      if (param.getTransient())
        p["transient"] = true;
      if (std::optional<StringRef> probe = param.getProbe()) {
        p["probe"] = *probe;
        p["probe_fold"] = *param.getProbeFold();
      }
      params.push_back(std::move(p));
    } else if (auto constant = dyn_cast<sched::ConstantOp>(op)) {
      FailureOr<json::Value> values = constantValues(constant);
      if (failed(values))
        return failure();
      json::Object c = typed(constant.getBufferType());
      c["name"] = constant.getSymName().str();
      c[values->getAsArray() ? "values" : "splat"] = std::move(*values);
      constants.push_back(std::move(c));
    } else if (auto kernel = dyn_cast<sched::KernelOp>(op)) {
      auto types = [](ArrayAttr list) {
        json::Array out;
        for (Attribute t : list)
          out.push_back(
              typed(cast<sched::BufferType>(cast<TypeAttr>(t).getValue())));
        return out;
      };
      json::Array scalars;
      for (Attribute t : kernel.getScalars())
        scalars.push_back(dtypeName(cast<TypeAttr>(t).getValue()));
      decls.push_back(json::Object{{"name", kernel.getSymName().str()},
                                   {"inputs", types(kernel.getInputs())},
                                   {"outputs", types(kernel.getOutputs())},
                                   {"scalars", std::move(scalars)}});
    } else if (auto program = dyn_cast<sched::ProgramOp>(op)) {
      FailureOr<json::Object> p = writeProgram(program);
      if (failed(p))
        return failure();
      programs.push_back(std::move(*p));
    } else if (auto schedule = dyn_cast<sched::ScheduleOp>(op)) {
      json::Array sequences;
      for (auto seq : schedule.getBody().front().getOps<sched::SequenceOp>()) {
        json::Array runs;
        for (auto run : seq.getBody().front().getOps<sched::RunOp>())
          runs.push_back(json::Object{{"program", run.getProgram().str()},
                                      {"microbatch", run.getMicrobatch()},
                                      {"chunk", run.getChunk()}});
        json::Value axis = nullptr, coordinate = nullptr;
        if (seq.getAxis()) {
          axis = seq.getAxis()->str();
          coordinate = *seq.getCoordinate();
        }
        sequences.push_back(json::Object{{"axis", std::move(axis)},
                                         {"coordinate", std::move(coordinate)},
                                         {"runs", std::move(runs)}});
      }
      schedules.push_back(
          json::Object{{"name", schedule.getSymName().str()},
                       {"microbatches", schedule.getMicrobatches()},
                       {"sequences", std::move(sequences)}});
    } else {
      return op.emitOpError("cannot be written to a bundle: only sched "
                            "declarations, programs and schedules can"),
             failure();
    }
  }
  out["params"] = std::move(params);
  out["constants"] = std::move(constants);
  out["kernel_decls"] = std::move(decls);
  out["programs"] = std::move(programs);
  out["schedules"] = std::move(schedules);
  return out;
}

OwningOpRef<ModuleOp> readSchedManifest(StringRef text, StringRef source,
                                        MLIRContext *context) {
  context->getOrLoadDialect<sched::SchedDialect>();
  if (absl::Status s = runtime::checkUntrustedJson({text.data(), text.size()});
      !s.ok()) {
    emitError(UnknownLoc::get(context))
        << source << ": " << std::string(s.message());
    return nullptr;
  }
  llvm::Expected<json::Value> manifest = json::parse(text);
  if (!manifest) {
    emitError(UnknownLoc::get(context))
        << source << ": " << llvm::toString(manifest.takeError());
    return nullptr;
  }
  return Reader(source, context).read(*manifest);
}

} // namespace weft::codegen
