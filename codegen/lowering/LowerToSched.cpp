//===- LowerToSched.cpp - planned weft programs as sched programs --------===//
//
// The driver of the weft -> sched conversion: module-level declarations
// (mesh, parameters, constants), one sched.program per function, the
// schedule tables, and the value-to-buffer bookkeeping every op family
// shares. The families are in the other files of this folder.
//
//===----------------------------------------------------------------------===//

#include "codegen/KernelExpr.h"
#include "codegen/Passes.h"
#include "codegen/lowering/Lowering.h"

#include "passes/pipeline/Names.h"
#include "passes/precision/Fp8Codes.h"
#include "llvm/ADT/DenseSet.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/StringMap.h"

namespace weft {
#define GEN_PASS_DEF_LOWERTOSCHED
#include "codegen/Passes.h.inc"
} // namespace weft

using namespace mlir;

namespace weft::codegen {

//===----------------------------------------------------------------------===//
// Target rules
//===----------------------------------------------------------------------===//

namespace {
bool isNarrowFloat(Type t) { return isa<FloatType>(t) && !t.isF32(); }

Type elementTypeOf(Value v) {
  return cast<ShapedType>(v.getType()).getElementType();
}

bool allBf16(Operation *op) {
  auto bf16 = [](Value v) { return elementTypeOf(v).isBF16(); };
  return llvm::all_of(op->getOperands(), bf16) &&
         llvm::all_of(op->getResults(), bf16);
}
} // namespace

bool SchedTarget::keepsStored(Operation *op, Value v, bool operand) const {
  if (!isNarrowFloat(elementTypeOf(v)))
    return true;
  // An all-gather only moves: its bytes as stored (the GPU moves whole
  // four-byte words, so a shard of another size goes as f32).
  if (auto gather = dyn_cast<AllGatherOp>(op)) {
    auto shard = cast<ShapedType>(gather.getInput().getType());
    return !cuda ||
           shard.getNumElements() * shard.getElementTypeBitWidth() % 32 == 0;
  }
  // The CPU runtime's kernels compute in f32 only.
  if (!cuda || !elementTypeOf(v).isBF16())
    return false;
  // GEMMs and attention take their operands in the result's type.
  if (isa<FusedOp, MatmulOp, MatmulEpilogueOp, AttentionOp, AttentionGradOp,
          AttentionEntropyOp>(op))
    return true;
  if (isa<ReduceSumOp, ReduceMeanOp, ReduceMaxOp>(op))
    return operand;
  if (isa<CrossEntropyOp, CrossEntropyGradOp>(op)) {
    bool grad = isa<CrossEntropyGradOp>(op);
    bool bf16 = elementTypeOf(op->getOperand(0)).isBF16() &&
                (!grad || elementTypeOf(op->getResult(0)).isBF16());
    return bf16 && (operand ? v == op->getOperand(0) : v == op->getResult(0));
  }
  if (isa<LayerNormGradOp, RMSNormGradOp>(op))
    return allBf16(op);
  // A maximum and an FP8 cast read the tensor they quantize as stored (the
  // values path, sched.fp8_quantize, reads and writes f32: it asks so).
  if (isa<Fp8AmaxOp, Fp8QuantizeOp>(op))
    return operand && v == op->getOperand(0);
  return false;
}

//===----------------------------------------------------------------------===//
// ProgramLowering
//===----------------------------------------------------------------------===//

ProgramLowering::ProgramLowering(sched::ProgramOp program,
                                 const SchedTarget &target,
                                 FlatSymbolRefAttr mesh)
    : program(program), b(program.getBody()), tgt(target), meshRef(mesh) {
  b.setInsertionPointToEnd(&program.getBody().front());
}

sched::BufferType ProgramLowering::bufferType(Type tensorType) {
  auto t = cast<ShapedType>(tensorType);
  return sched::BufferType::get(t.getContext(), t.getShape(),
                                t.getElementType());
}

int64_t ProgramLowering::groupSize(ArrayAttr axes) {
  auto mesh =
      SymbolTable::lookupNearestSymbolFrom<sched::MeshOp>(program, meshRef);
  int64_t size = 1;
  for (Attribute axis : axes)
    size *= mesh ? mesh.axisSize(cast<StringAttr>(axis).getValue()) : 0;
  return size;
}

Value ProgramLowering::stored(Value v) const {
  Value buffer = buffers.lookup(v);
  assert(buffer && "weft value lowered before its definition");
  return buffer;
}

void ProgramLowering::bind(Value r, Value buffer) { buffers[r] = buffer; }

Value ProgramLowering::alloc(ArrayRef<int64_t> shape, Type elementType) {
  auto type = sched::BufferType::get(context(), shape, elementType);
  return sched::AllocOp::create(b, origin ? *origin : b.getUnknownLoc(), type,
                                IntegerAttr(), IntegerAttr(), IntegerAttr());
}

LogicalResult ProgramLowering::addGpuScratch(Operation *op,
                                             sched::ScratchOpInterface instr) {
  if (!tgt.cuda)
    return success();
  std::optional<int64_t> bytes = instr.getScratchBytes();
  if (!bytes)
    return op->emitOpError("needs more than 2^63 bytes of GPU scratch");
  if (*bytes == 0)
    return success();
  Value scratch = alloc({*bytes / 4 + (*bytes % 4 != 0)}, b.getF32Type());
  scratch.getDefiningOp()->moveBefore(instr);
  instr.setScratch(scratch);
  return success();
}

Value ProgramLowering::view(Value buffer, int64_t offsetBytes,
                            ArrayRef<int64_t> shape, Type elementType) {
  auto type = sched::BufferType::get(context(), shape, elementType);
  if (offsetBytes == 0 && buffer.getType() == type)
    return buffer;
  return sched::ViewOp::create(b, buffer.getLoc(), type, buffer,
                               b.getI64IntegerAttr(offsetBytes));
}

void ProgramLowering::copyAll(Location loc, Value from, Value to) {
  int64_t n = cast<sched::BufferType>(to.getType()).getNumElements();
  if (n == 0)
    return;
  sched::CopyOp::create(b, loc, from, to, b.getDenseI64ArrayAttr({n}),
                        b.getDenseI64ArrayAttr({0, 1}),
                        b.getDenseI64ArrayAttr({0, 1}), FlatSymbolRefAttr(),
                        ArrayAttr(), IntegerAttr(), b.getStringAttr("compute"));
}

Value ProgramLowering::read(Operation *op, Value v, bool f32) {
  Value buffer = stored(v);
  if (!isNarrowFloat(elementTypeOf(v)) ||
      (!f32 && tgt.keepsStored(op, v, /*operand=*/true)))
    return buffer;
  auto type = cast<sched::BufferType>(buffer.getType());
  Value wide = alloc(type.getShape(), b.getF32Type());
  copyAll(op->getLoc(), buffer, wide);
  return wide;
}

Value ProgramLowering::define(Value r) {
  return defineAs(r, bufferType(r.getType()).getElementType());
}

Value ProgramLowering::defineAs(Value r, Type elementType) {
  Value buffer = inPlace.lookup(r);
  if (!buffer)
    buffer = alloc(cast<ShapedType>(r.getType()).getShape(), elementType);
  bind(r, buffer);
  return buffer;
}

Value ProgramLowering::write(Operation *op, Value r, bool f32) {
  Value buffer = define(r);
  auto type = cast<sched::BufferType>(buffer.getType());
  if (!isNarrowFloat(type.getElementType()) ||
      (!f32 && tgt.keepsStored(op, r, /*operand=*/false)))
    return buffer;
  Value wide = alloc(type.getShape(), b.getF32Type());
  pending.push_back({op->getLoc(), wide, buffer});
  return wide;
}

void ProgramLowering::planFp8Cast(Operation *op, Fp8Plan plan) {
  // The views lower with the quantization; a gather of its codes where it
  // is (lowerFp8Gather).
  for (Operation *view : plan.views) {
    if (isa<AllGatherOp>(view))
      fp8GatherSources[view] = op;
    else
      elidedOps.insert(view);
  }
  fp8Plans[op] = std::move(plan);
}

const Fp8Plan *ProgramLowering::fp8Plan(Operation *op) const {
  auto it = fp8Plans.find(op);
  return it == fp8Plans.end() ? nullptr : &it->second;
}

Fp8Plan *ProgramLowering::fp8Plan(Operation *op) {
  auto it = fp8Plans.find(op);
  return it == fp8Plans.end() ? nullptr : &it->second;
}

const Fp8Operand *ProgramLowering::fp8Operand(Value v, bool transposed) const {
  auto it = fp8Operands.find({v, unsigned(transposed)});
  return it == fp8Operands.end() ? nullptr : &it->second;
}

Value ProgramLowering::fp8StateCodes(Value v) const {
  auto param = v.getDefiningOp<ParamOp>();
  return param && heldAsFp8Codes(param.getName()) ? stored(v) : Value();
}

void ProgramLowering::setFp8Operand(Value v, bool transposed,
                                    Fp8Operand operand) {
  fp8Operands[{v, unsigned(transposed)}] = operand;
}

void ProgramLowering::finish() {
  for (const Narrowing &n : pending)
    copyAll(n.loc, n.wide, n.stored);
  pending.clear();
}

SmallVector<int64_t> rowMajorStrides(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> strides(shape.size(), 1);
  for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * shape[d + 1];
  return strides;
}

ArrayAttr vocabAxes(Operation *op) {
  if (auto axes = op->getAttrOfType<ArrayAttr>(kVocabAxesAttr))
    return axes;
  return ArrayAttr::get(op->getContext(), {});
}

//===----------------------------------------------------------------------===//
// The driver
//===----------------------------------------------------------------------===//

namespace {

/// A sharding as sched spells it: per dimension, the mesh axes.
ArrayAttr splitOf(ShardingAttr sharding) {
  return sharding ? sharding.getDims() : ArrayAttr();
}

class ModuleLowering {
public:
  ModuleLowering(ModuleOp module, const SchedTarget &target)
      : module(module), target(target), b(module.getContext()) {
    if (target.fp8Storage)
      codeStates = fp8CodeStates(module);
    populateMovementLowerings(table);
    populateMatmulLowerings(table);
    populateAttentionLowerings(table);
    populateLibraryLowerings(table);
    populateCollectiveLowerings(table);
    populateFusedLowerings(table);
  }

  LogicalResult run() {
    // Launches name the generated kernels as the kernel source does.
    if (failed(nameKernels(module)))
      return failure();
    b.setInsertionPointToEnd(module.getBody());
    FlatSymbolRefAttr mesh;
    for (MeshOp m : llvm::make_early_inc_range(module.getOps<MeshOp>())) {
      if (mesh)
        return m.emitError("sched holds one mesh; the module has several");
      pipelineRanks = m.axisSize(kPipelineAxis);
      sched::MeshOp::create(b, m.getLoc(), m.getSymNameAttr(), m.getAxes(),
                            m.getSizesAttr());
      mesh = FlatSymbolRefAttr::get(m.getSymNameAttr());
      m.erase();
    }
    SmallVector<func::FuncOp> funcs;
    for (func::FuncOp f : module.getOps<func::FuncOp>())
      if (!f.isExternal())
        funcs.push_back(f);
    SmallVector<std::pair<sched::ProgramOp, std::string>> programs;
    // Gradient accumulation: @accumulate runs once per micro-batch before
    // @step (weft-accumulate-gradients).
    int64_t microbatches = 0;
    for (func::FuncOp f : funcs)
      if (auto m = f->getAttrOfType<IntegerAttr>(kMicrobatchesAttr))
        microbatches = m.getInt();
    for (func::FuncOp f : funcs) {
      FailureOr<sched::ProgramOp> program = lower(f, mesh);
      if (failed(program))
        return failure();
      programs.push_back({*program, f.getSymName().str()});
    }
    for (func::FuncOp f : funcs)
      f.erase();
    for (auto &[program, name] : programs)
      program.setSymName(name);
    if (auto table =
            module->getAttrOfType<DictionaryAttr>(kPipelineScheduleAttr)) {
      if (failed(addPipelineSchedule(table)))
        return failure();
      module->removeAttr(kPipelineScheduleAttr);
    } else if (microbatches > 0)
      addSchedule("train", {kAccumulateFunc, "step"}, microbatches, kGatherFunc,
                  kAccumulateLastFunc);
    else
      addSchedule("train", {"step"}, 1);
    addSchedule("eval", {"forward"}, 1);
    return success();
  }

private:
  /// `sched.param @name`, declared on first use.
  FailureOr<FlatSymbolRefAttr> declareParam(ParamOp param) {
    StringAttr name = param.getNameAttr();
    sched::BufferType type = ProgramLowering::bufferType(param.getType());
    // A quantized state FP8 storage holds as its codes (fp8CodeStates).
    if (Type format = codeStates.lookup(name.getValue()))
      type = sched::BufferType::get(b.getContext(), type.getShape(), format);
    if (auto it = params.find(name.getValue()); it != params.end()) {
      if (it->second.getType() != type)
        return param.emitError("parameter '")
                   << name.getValue() << "' is " << type << " here but "
                   << it->second.getType() << " in an earlier program",
               failure();
      return FlatSymbolRefAttr::get(name);
    }
    if (SymbolTable::lookupSymbolIn(module, name))
      return param.emitError("parameter '")
                 << name.getValue()
                 << "' has the name of another symbol of the module",
             failure();
    auto kind = sched::symbolizeInitKind(stringifyInitKind(param.getInit()));
    if (!kind)
      return param.emitError("initializer '")
                 << stringifyInitKind(param.getInit())
                 << "' has no sched equivalent",
             failure();
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(firstProgram);
    auto decl = sched::ParamOp::create(
        b, param.getLoc(), name,
        sched::InitKindAttr::get(b.getContext(), *kind), param.getScaleAttr(),
        param.getStateAttr(),
        splitOf(param->getAttrOfType<ShardingAttr>(kShardOfAttr)),
        TypeAttr::get(type), pipelineRankOf(param),
        param->getAttrOfType<IntegerAttr>(kCheckpointRowsAttr),
        param->getAttrOfType<DenseI64ArrayAttr>(kCheckpointShapeAttr),
        param->getAttrOfType<StringAttr>(kCheckpointStackAttr),
        param->hasAttr(kTransientAttr) ? b.getUnitAttr() : UnitAttr(),
        param->getAttrOfType<StringAttr>(kProbeAttr),
        param->getAttrOfType<StringAttr>(kProbeFoldAttr));
    params[name.getValue()] = decl;
    return FlatSymbolRefAttr::get(name);
  }

  /// The pp coordinate holding a pipeline stage's parameter (stage s is on
  /// rank s mod pp), or null.
  IntegerAttr pipelineRankOf(ParamOp param) {
    auto stage = param->getAttrOfType<IntegerAttr>(kStageAttr);
    if (!stage || pipelineRanks < 2)
      return IntegerAttr();
    return b.getI64IntegerAttr(stage.getInt() % pipelineRanks);
  }

  /// `sched.constant @cN`, one per distinct value.
  FlatSymbolRefAttr declareConstant(ConstantOp constant) {
    Attribute value = constant.getValue();
    auto it = constants.find(value);
    if (it != constants.end())
      return it->second;
    std::string name = "const" + std::to_string(constants.size());
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(firstProgram);
    auto decl = sched::ConstantOp::create(b, constant.getLoc(), name,
                                          cast<ElementsAttr>(value));
    return constants[value] = FlatSymbolRefAttr::get(decl.getSymNameAttr());
  }

  FailureOr<sched::ProgramOp> lower(func::FuncOp f, FlatSymbolRefAttr mesh) {
    Location loc = f.getLoc();
    // Every value becomes a buffer: its type must make one (at most 2^62
    // bytes of an element type buffers hold).
    auto checkType = [&](Location at, Type type) -> LogicalResult {
      auto shaped = dyn_cast<ShapedType>(type);
      if (!shaped)
        return success();
      return sched::BufferType::verify([&] { return emitError(at); },
                                       shaped.getShape(),
                                       shaped.getElementType());
    };
    for (BlockArgument arg : f.getArguments())
      if (failed(checkType(loc, arg.getType())))
        return failure();
    WalkResult types = f.walk([&](Operation *op) {
      if (op->getParentOfType<FusedOp>())
        return WalkResult::advance();
      for (Type t : op->getResultTypes())
        if (failed(checkType(op->getLoc(), t)))
          return WalkResult::interrupt();
      return WalkResult::advance();
    });
    if (types.wasInterrupted())
      return failure();
    auto program = sched::ProgramOp::create(
        b, loc, b.getStringAttr(f.getSymName() + ".lowering"), IntegerAttr(),
        b.getI64IntegerAttr(target.alignment()), b.getI64IntegerAttr(0),
        b.getStrArrayAttr({"compute"}), ArrayAttr(), DenseI64ArrayAttr());
    if (!firstProgram)
      firstProgram = program;
    Block *body = new Block();
    program.getBody().push_back(body);
    ProgramLowering lowering(program, target, mesh);
    lowering.setFp8CodeStates(&codeStates);
    SmallVector<Attribute> inputSplit;
    SmallVector<int64_t> inputChunks;
    bool anySplit = false;
    for (BlockArgument arg : f.getArguments()) {
      auto chunks = f.getArgAttrOfType<IntegerAttr>(arg.getArgNumber(),
                                                    kSequenceChunksAttr);
      inputChunks.push_back(chunks ? chunks.getInt() : 0);
      Value input =
          body->addArgument(ProgramLowering::bufferType(arg.getType()), loc);
      lowering.bind(arg, input);
      auto split =
          f.getArgAttrOfType<ShardingAttr>(arg.getArgNumber(), kShardOfAttr);
      anySplit |= static_cast<bool>(split);
      // An input nobody split (a pipeline stash beside dp-split tokens)
      // is whole on every rank: no axis on any dimension.
      int64_t rank = cast<ShapedType>(arg.getType()).getRank();
      inputSplit.push_back(
          split ? Attribute(split.getDims())
                : Attribute(b.getArrayAttr(
                      SmallVector<Attribute>(rank, b.getArrayAttr({})))));
    }
    if (anySplit)
      program.setInputSplitAttr(b.getArrayAttr(inputSplit));
    if (llvm::any_of(inputChunks, [](int64_t c) { return c != 0; }))
      program.setInputChunksAttr(b.getDenseI64ArrayAttr(inputChunks));

    if (target.fp8Storage)
      planFp8Storage(f, lowering);
    OpBuilder &pb = lowering.builder();
    SmallVector<AssignOp> assigns;
    func::ReturnOp ret;
    // Updates computed into their parameters need no assign.
    bool readsChecked = readsCheckedData(f);
    llvm::DenseSet<Value> inPlace;
    for (Operation &op : f.getBody().front()) {
      if (isa<FusedOp, AllGatherOp>(op))
        for (OpResult r : op.getResults())
          if (ParamOp param = inPlaceParam(r, readsChecked)) {
            lowering.computeInto(r, lowering.stored(param.getResult()));
            inPlace.insert(r);
          }
      if (auto param = dyn_cast<ParamOp>(op)) {
        FailureOr<FlatSymbolRefAttr> name = declareParam(param);
        if (failed(name))
          return failure();
        lowering.bind(param.getResult(),
                      sched::GetOp::create(
                          pb, op.getLoc(),
                          params.lookup(name->getValue()).getType(), *name));
        continue;
      }
      if (auto constant = dyn_cast<ConstantOp>(op)) {
        lowering.bind(constant.getResult(),
                      sched::GetOp::create(
                          pb, op.getLoc(),
                          ProgramLowering::bufferType(constant.getType()),
                          declareConstant(constant)));
        continue;
      }
      if (auto assign = dyn_cast<AssignOp>(op)) {
        assigns.push_back(assign);
        continue;
      }
      if ((ret = dyn_cast<func::ReturnOp>(op)))
        continue;
      if (lowering.elided(&op))
        continue;
      auto fn = table.find(op.getName().getTypeID());
      if (fn == table.end())
        return op.emitOpError("has no lowering to sched")
                   << (op.getDialect() &&
                               op.getDialect()->getNamespace() == "weft"
                           ? " (elementwise ops and norms must be fused "
                             "first: weft-fusion-group single-ops)"
                           : ""),
               failure();
      lowering.setOrigin(op.getLoc());
      if (failed(fn->second(&op, lowering)))
        return failure();
      lowering.finish();
    }
    for (AssignOp assign : assigns) {
      if (inPlace.contains(assign.getValue()))
        continue;
      FailureOr<FlatSymbolRefAttr> name =
          FlatSymbolRefAttr::get(assign.getNameAttr());
      sched::AssignOp::create(pb, assign.getLoc(), *name,
                              lowering.stored(assign.getValue()));
    }
    SmallVector<Attribute> names, split;
    SmallVector<Value> values;
    bool anyOutputSplit = false;
    for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
      auto name = f.getResultAttrOfType<StringAttr>(i, "weft.output");
      auto grad = f.getResultAttrOfType<StringAttr>(i, "weft.grad");
      names.push_back(b.getStringAttr(name   ? name.str()
                                      : grad ? "grad:" + grad.str()
                                             : "result" + std::to_string(i)));
      values.push_back(lowering.stored(v));
      auto sharding = f.getResultAttrOfType<ShardingAttr>(i, kShardingAttr);
      anyOutputSplit |= static_cast<bool>(sharding);
      split.push_back(sharding ? Attribute(sharding.getDims())
                               : Attribute(b.getArrayAttr({})));
    }
    sched::ReturnOp::create(pb, ret.getLoc(), b.getArrayAttr(names), values,
                            anyOutputSplit ? b.getArrayAttr(split)
                                           : ArrayAttr());
    return program;
  }

  /// `sched.schedule @name` for `microbatches` micro-batches: program
  /// `first` once if the module has it, then every program of `programs`
  /// but the last once per micro-batch, in order, then the last once (all
  /// of them once for 1). Nothing if a program of `programs` is missing.
  /// Program `lastMicrobatch`, if the module has it, stands in for the
  /// first of `programs` on the last micro-batch.
  void addSchedule(StringRef name, ArrayRef<StringRef> programs,
                   int64_t microbatches, StringRef first = "",
                   StringRef lastMicrobatch = "") {
    if (llvm::any_of(programs, [&](StringRef p) {
          return !module.lookupSymbol<sched::ProgramOp>(p);
        }))
      return;
    auto schedule =
        sched::ScheduleOp::create(b, module.getLoc(), b.getStringAttr(name),
                                  b.getI64IntegerAttr(microbatches));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToEnd(&schedule.getBody().emplaceBlock());
    auto seq = sched::SequenceOp::create(b, module.getLoc(), StringAttr(),
                                         IntegerAttr());
    b.setInsertionPointToEnd(&seq.getBody().emplaceBlock());
    if (!first.empty() && module.lookupSymbol<sched::ProgramOp>(first))
      sched::RunOp::create(b, module.getLoc(), first, 0, 0);
    bool substitute = !lastMicrobatch.empty() &&
                      module.lookupSymbol<sched::ProgramOp>(lastMicrobatch);
    for (int64_t i = 0; i < microbatches; ++i)
      for (auto [k, p] : llvm::enumerate(programs.drop_back()))
        sched::RunOp::create(
            b, module.getLoc(),
            k == 0 && substitute && i == microbatches - 1 ? lastMicrobatch : p,
            i, 0);
    sched::RunOp::create(b, module.getLoc(), programs.back(), microbatches - 1,
                         0);
  }

  /// The `train` schedule of a pipeline: weft-pipeline-split's table
  /// (kPipelineScheduleAttr), one sequence per pp coordinate.
  LogicalResult addPipelineSchedule(DictionaryAttr table) {
    auto microbatches = table.getAs<IntegerAttr>("microbatches");
    auto ranks = table.getAs<ArrayAttr>("ranks");
    if (!microbatches || !ranks)
      return module.emitError("malformed ")
             << kPipelineScheduleAttr << " attribute: " << table;
    auto schedule = sched::ScheduleOp::create(
        b, module.getLoc(), b.getStringAttr("train"), microbatches);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToEnd(&schedule.getBody().emplaceBlock());
    Block *sequences = b.getInsertionBlock();
    for (auto [r, entries] : llvm::enumerate(ranks)) {
      b.setInsertionPointToEnd(sequences);
      auto seq = sched::SequenceOp::create(
          b, module.getLoc(), b.getStringAttr(kPipelineAxis),
          b.getI64IntegerAttr(static_cast<int64_t>(r)));
      b.setInsertionPointToEnd(&seq.getBody().emplaceBlock());
      for (Attribute entry : cast<ArrayAttr>(entries)) {
        auto e = cast<ArrayAttr>(entry);
        sched::RunOp::create(
            b, module.getLoc(), cast<StringAttr>(e[0]).getValue(),
            cast<IntegerAttr>(e[1]).getInt(), cast<IntegerAttr>(e[2]).getInt());
      }
    }
    return success();
  }

  ModuleOp module;
  const SchedTarget &target;
  OpBuilder b;
  LoweringTable table;
  sched::ProgramOp firstProgram;
  llvm::StringMap<sched::ParamOp> params;
  /// The quantized states held as FP8 codes, with their format.
  llvm::StringMap<Type> codeStates;
  llvm::DenseMap<Attribute, FlatSymbolRefAttr> constants;
  int64_t pipelineRanks = 0; // The mesh's pp size (0: none).
};

struct LowerToSchedPass : weft::impl::LowerToSchedBase<LowerToSchedPass> {
  using LowerToSchedBase::LowerToSchedBase;
  void runOnOperation() override {
    if (target != "cpu" && target != "cuda") {
      getOperation().emitError("weft-lower-to-sched: target must be 'cpu' or "
                               "'cuda', not '")
          << target << "'";
      return signalPassFailure();
    }
    SchedTarget t;
    t.cuda = target == "cuda";
    if (fp8Storage != "auto" && fp8Storage != "on" && fp8Storage != "off") {
      getOperation().emitError("weft-lower-to-sched: fp8-storage must be "
                               "'auto', 'on' or 'off', not '")
          << fp8Storage << "'";
      return signalPassFailure();
    }
    t.fp8Storage = fp8StorageOn(fp8Storage, t.cuda);
    t.attentionScratchBytes = attentionScratchMb * (int64_t(1) << 20);
    if (failed(lowerToSched(getOperation(), t)))
      signalPassFailure();
  }
};

} // namespace

LogicalResult lowerToSched(ModuleOp module, const SchedTarget &target) {
  return ModuleLowering(module, target).run();
}

} // namespace weft::codegen
