//===- SchedOps.cpp - sched op verifiers ----------------------------------===//
//
// The verifiers are the compile-time half of the bundle's validation: every
// fact a runtime relies on (bounds, shapes, arity, groups, live ranges,
// stream ordering) is checked here on the IR, and again by the bundle
// loader on the bytes.
//
//===----------------------------------------------------------------------===//

#include "dialects/sched/IR/SchedOps.h"

#include "dialects/common/AttentionDropout.h"
#include "dialects/common/MeshAxes.h"
#include "dialects/sched/IR/ScratchLayout.h"
#include "runtime/support/Fp8Scaling.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/CheckedArithmetic.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>

using namespace mlir;
using namespace weft::sched;

#include "dialects/sched/IR/SchedEnums.cpp.inc"
#include "dialects/sched/IR/SchedInterfaces.cpp.inc"

#define GET_OP_CLASSES
#include "dialects/sched/IR/SchedOps.cpp.inc"

namespace {

BufferType bufferOf(Value v) { return cast<BufferType>(v.getType()); }

bool isFloat(Type t) { return isa<FloatType>(t); }
bool isInt(Type t) { return t.isInteger(32) || t.isInteger(64); }

/// The module's mesh, or null.
MeshOp meshOf(Operation *op) {
  auto module = op->getParentOfType<ModuleOp>();
  if (!module)
    return {};
  auto meshes = module.getOps<MeshOp>();
  return meshes.empty() ? MeshOp() : *meshes.begin();
}

/// Checks that `axes` are distinct axes of `mesh` and returns the size of
/// their group.
FailureOr<int64_t> groupSize(Operation *op, MeshOp mesh, ArrayAttr axes) {
  if (!mesh)
    return op->emitOpError("names mesh axes but the module has no sched.mesh"),
           failure();
  int64_t size = 1;
  llvm::StringSet<> seen;
  for (Attribute a : axes) {
    StringRef axis = cast<StringAttr>(a).getValue();
    int64_t n = mesh.axisSize(axis);
    if (n == 0)
      return op->emitOpError("mesh @")
                 << mesh.getSymName() << " has no axis '" << axis << "'",
             failure();
    if (!seen.insert(axis).second)
      return op->emitOpError("names mesh axis '") << axis << "' twice",
             failure();
    std::optional<int64_t> next = llvm::checkedMul(size, n);
    if (!next)
      return op->emitOpError("group of mesh axes overflows int64"), failure();
    size = *next;
  }
  return size;
}

MeshOp lookupMesh(Operation *op, SymbolTableCollection &symbols,
                  FlatSymbolRefAttr name) {
  return symbols.lookupNearestSymbolFrom<MeshOp>(op, name);
}

LogicalResult verifyMeshRef(Operation *op, SymbolTableCollection &symbols,
                            FlatSymbolRefAttr name, MeshOp &mesh) {
  mesh = lookupMesh(op, symbols, name);
  if (!mesh)
    return op->emitOpError("names mesh ")
           << name << ", which is not a sched.mesh";
  return success();
}

/// The size of the group of `axes` of the mesh `name` refers to, both
/// checked.
FailureOr<int64_t> referencedGroupSize(Operation *op,
                                       SymbolTableCollection &symbols,
                                       FlatSymbolRefAttr name, ArrayAttr axes) {
  MeshOp mesh;
  if (failed(verifyMeshRef(op, symbols, name, mesh)))
    return failure();
  return groupSize(op, mesh, axes);
}

LogicalResult sameShape(Operation *op, Value a, StringRef aName, Value b,
                        StringRef bName) {
  if (bufferOf(a).getShape() != bufferOf(b).getShape())
    return op->emitOpError()
           << bName << " has shape [" << bufferOf(b).getShape() << "], not "
           << aName << "'s [" << bufferOf(a).getShape() << "]";
  return success();
}

LogicalResult hasShape(Operation *op, Value v, StringRef name,
                       ArrayRef<int64_t> shape) {
  if (bufferOf(v).getShape() != shape)
    return op->emitOpError() << name << " has shape [" << bufferOf(v).getShape()
                             << "], expected [" << shape << "]";
  return success();
}

LogicalResult hasRank(Operation *op, Value v, StringRef name, int64_t rank) {
  if (static_cast<int64_t>(bufferOf(v).getShape().size()) != rank)
    return op->emitOpError()
           << name << " must have rank " << rank << ", has shape ["
           << bufferOf(v).getShape() << "]";
  return success();
}

LogicalResult isIntBuffer(Operation *op, Value v, StringRef name) {
  if (!isInt(bufferOf(v).getElementType()))
    return op->emitOpError() << name << " must hold i32 or i64, not "
                             << bufferOf(v).getElementType();
  return success();
}

LogicalResult isFloatBuffer(Operation *op, Value v, StringRef name) {
  if (!isFloat(bufferOf(v).getElementType()))
    return op->emitOpError()
           << name << " must hold floats, not " << bufferOf(v).getElementType();
  return success();
}

LogicalResult isF32Scalar(Operation *op, Value v, StringRef name) {
  BufferType t = bufferOf(v);
  if (!t.getElementType().isF32() || t.getNumElements() != 1)
    return op->emitOpError() << name << " must be one f32, not " << t;
  return success();
}

std::string countText(std::optional<int64_t> n) {
  return n ? std::to_string(*n) : std::string("more than 2^63");
}

/// A scratch operand, when there is one (or when `required`), holds f32
/// and at least `need` bytes (nullopt: the layout overflows int64); `who`
/// starts the message.
LogicalResult verifyScratch(Operation *op, Value scratch,
                            std::optional<int64_t> need, bool required = false,
                            StringRef who = "") {
  if (!scratch && !required)
    return success();
  if (scratch && !bufferOf(scratch).getElementType().isF32())
    return op->emitOpError("scratch must hold f32, not ")
           << bufferOf(scratch).getElementType();
  int64_t has = scratch ? bufferOf(scratch).getBytes() : 0;
  if (!scratch || !need || has < *need)
    return op->emitOpError() << who << "needs " << countText(need)
                             << " bytes of scratch, has " << has;
  return success();
}

/// The vocabulary axes name axes of the module's mesh.
LogicalResult verifyVocabAxes(Operation *op, ArrayAttr axes) {
  if (axes.empty())
    return success();
  return groupSize(op, meshOf(op), axes);
}

/// A `split`: per dimension of a rank-`rank` tensor (a `what`), distinct
/// axes of the module's mesh.
LogicalResult verifySplit(Operation *op, ArrayAttr split, size_t rank,
                          StringRef what) {
  if (split.size() != rank)
    return op->emitOpError("split has ")
           << split.size() << " entries for a rank-" << rank << " " << what;
  llvm::StringSet<> used;
  for (Attribute dim : split) {
    auto axes = dyn_cast<ArrayAttr>(dim);
    if (!axes || !llvm::all_of(axes, llvm::IsaPred<StringAttr>))
      return op->emitOpError("split must list mesh axis names per dimension");
    if (failed(groupSize(op, meshOf(op), axes)))
      return failure();
    for (Attribute axis : axes)
      if (!used.insert(cast<StringAttr>(axis).getValue()).second)
        return op->emitOpError("split uses mesh axis '")
               << cast<StringAttr>(axis).getValue() << "' for two dimensions";
  }
  return success();
}

/// Whether a matrix stored with `rows` × `cols` visible elements, leading
/// dimension `ld` and batch stride `stride` over `batch` batches lies
/// inside `elements`; writes the elements it needs to `needed` (nullopt
/// when that overflows int64).
bool matrixFits(int64_t batch, int64_t stride, int64_t rows, int64_t cols,
                int64_t ld, int64_t elements, std::optional<int64_t> &needed) {
  // (batch - 1) * stride + (rows - 1) * ld + cols, with overflow checks.
  std::optional<int64_t> a = llvm::checkedMul(batch - 1, stride);
  std::optional<int64_t> b = llvm::checkedMul(rows - 1, ld);
  std::optional<int64_t> sum = a && b ? llvm::checkedAdd(*a, *b) : std::nullopt;
  needed = sum ? llvm::checkedAdd(*sum, cols) : std::nullopt;
  return needed && *needed <= elements;
}

} // namespace

//===----------------------------------------------------------------------===//
// Module-level declarations
//===----------------------------------------------------------------------===//

int64_t MeshOp::axisSize(StringRef name) {
  return meshAxisSize(getAxes(), getSizes(), name);
}

LogicalResult MeshOp::verify() {
  return verifyMeshAxes(*this, getAxes(), getSizes());
}

LogicalResult ParamOp::verify() {
  bool scaled = getInit() == InitKind::normal || getInit() == InitKind::uniform;
  if (scaled != getScale().has_value())
    return emitOpError("init '")
           << stringifyInitKind(getInit())
           << (scaled ? "' needs a scale" : "' takes no scale");
  if (scaled) {
    double scale = getScale()->convertToDouble();
    if (!(scale > 0) || !std::isfinite(scale))
      return emitOpError("scale must be a positive finite number, not ")
             << scale;
  }
  auto type = cast<BufferType>(getType());
  if (!isFloat(type.getElementType()))
    return emitOpError("must hold floats, not ") << type.getElementType();
  if (getTransient() && !getState())
    return emitOpError("is transient but not state: only a state tensor can "
                       "be left to its initializer between steps");
  if (getProbe().has_value() != getProbeFold().has_value())
    return emitOpError("probe and probe_fold come together");
  if (getProbe()) {
    if (!getTransient())
      return emitOpError("is probe '")
             << *getProbe() << "' but not transient state";
    if (!llvm::is_contained({"mean", "rms", "max", "max_over_mean", "last"},
                            *getProbeFold()))
      return emitOpError(
                 "probe_fold must be mean, rms, max, max_over_mean or last, "
                 "not '")
             << *getProbeFold() << "'";
  }
  if (std::optional<ArrayAttr> split = getSplit())
    if (failed(verifySplit(*this, *split, type.getShape().size(), "parameter")))
      return failure();
  if (std::optional<int64_t> rows = getCheckpointRows()) {
    if (type.getShape().empty())
      return emitOpError("checkpoint_rows needs a tensor of rank 1 or more");
    int64_t global = type.getShape()[0];
    if (std::optional<ArrayAttr> split = getSplit()) {
      FailureOr<int64_t> ways =
          groupSize(*this, meshOf(*this), cast<ArrayAttr>((*split)[0]));
      if (failed(ways))
        return failure();
      global *= *ways;
    }
    if (*rows < 1 || *rows > global)
      return emitOpError("checkpoint_rows ")
             << *rows << " is not in [1, " << global
             << "], the rows of the global tensor";
  }
  if (std::optional<ArrayRef<int64_t>> held = getCheckpointShape()) {
    if (getCheckpointRows())
      return emitOpError("takes checkpoint_rows or checkpoint_shape, not both");
    int64_t global = type.getNumElements(), stored = 1;
    if (std::optional<ArrayAttr> split = getSplit())
      for (Attribute dim : *split) {
        FailureOr<int64_t> ways =
            groupSize(*this, meshOf(*this), cast<ArrayAttr>(dim));
        if (failed(ways))
          return failure();
        global *= *ways;
      }
    for (int64_t n : *held) {
      if (n < 1 || __builtin_mul_overflow(stored, n, &stored))
        return emitOpError("checkpoint_shape must list positive sizes");
    }
    if (stored != global)
      return emitOpError("checkpoint_shape holds ")
             << stored << " elements, but the global tensor has " << global;
  }
  if (std::optional<StringRef> stack = getCheckpointStack()) {
    if (getCheckpointRows() || getCheckpointShape())
      return emitOpError("takes checkpoint_stack alone, without "
                         "checkpoint_rows or checkpoint_shape");
    if (type.getShape().size() < 2 || stack->count('*') != 1)
      return emitOpError("checkpoint_stack '")
             << *stack
             << "' must name slices of a tensor of rank >= 2 with one '*'";
  }
  return success();
}

BufferType ConstantOp::getBufferType() {
  auto type = cast<ShapedType>(getValue().getType());
  return BufferType::get(getContext(), type.getShape(), type.getElementType());
}

LogicalResult ConstantOp::verify() {
  auto type = dyn_cast<ShapedType>(getValue().getType());
  if (!type || !type.hasStaticShape())
    return emitOpError("value must have a static shape");
  return BufferType::verify([&] { return emitOpError(); }, type.getShape(),
                            type.getElementType());
}

LogicalResult KernelOp::verify() {
  for (ArrayAttr list : {getInputs(), getOutputs()})
    for (Attribute t : list)
      if (!isa<BufferType>(cast<TypeAttr>(t).getValue()))
        return emitOpError("buffer arguments must be !sched.buffer, not ") << t;
  for (Attribute t : getScalars()) {
    Type type = cast<TypeAttr>(t).getValue();
    if (!isa<IntegerType, FloatType>(type))
      return emitOpError("scalar arguments must be integers or floats, not ")
             << type;
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Schedules
//===----------------------------------------------------------------------===//

LogicalResult ScheduleOp::verifyRegions() {
  int64_t microbatches = getMicrobatches();
  if (microbatches < 1)
    return emitOpError("needs at least one micro-batch, has ") << microbatches;
  auto sequences = llvm::to_vector(getBody().front().getOps<SequenceOp>());
  if (sequences.empty())
    return emitOpError("has no sched.sequence");
  for (Operation &op : getBody().front())
    if (!isa<SequenceOp>(op))
      return op.emitOpError("cannot appear in a schedule outside a sequence");
  for (SequenceOp seq : sequences)
    if (seq.getAxis().has_value() != seq.getCoordinate().has_value())
      return seq.emitOpError("needs both an axis and a coordinate");
  // One sequence for every rank, or one per coordinate of one axis.
  if (!sequences.front().getAxis()) {
    if (sequences.size() != 1)
      return sequences[1].emitOpError(
          "follows a sequence for every rank; select ranks with 'where'");
  } else {
    StringRef axis = *sequences.front().getAxis();
    MeshOp mesh = meshOf(*this);
    int64_t size = mesh ? mesh.axisSize(axis) : 0;
    if (size == 0)
      return sequences.front().emitOpError("selects ranks along '")
             << axis << "', which is not an axis of the module's sched.mesh";
    llvm::DenseMap<int64_t, SequenceOp> byCoordinate;
    for (SequenceOp seq : sequences) {
      if (!seq.getAxis() || *seq.getAxis() != axis)
        return seq.emitOpError("must select ranks along '") << axis
                                                            << "' as the "
                                                               "first "
                                                               "sequence does";
      int64_t c = *seq.getCoordinate();
      if (c < 0 || c >= size)
        return seq.emitOpError("coordinate ")
               << c << " is outside axis '" << axis << "' of size " << size;
      if (!byCoordinate.try_emplace(c, seq).second)
        return seq.emitOpError("selects coordinate ")
               << c << " of '" << axis << "' a second time";
    }
    if (static_cast<int64_t>(byCoordinate.size()) != size)
      return emitOpError("has sequences for ")
             << byCoordinate.size() << " of the " << size << " coordinates of '"
             << axis << "'";
  }
  for (SequenceOp seq : sequences) {
    for (Operation &op : seq.getBody().front()) {
      auto run = dyn_cast<RunOp>(op);
      if (!run)
        return op.emitOpError("cannot appear in a sequence; only sched.run");
      if (run.getMicrobatch() < 0 || run.getMicrobatch() >= microbatches)
        return run.emitOpError("micro-batch ")
               << run.getMicrobatch() << " is outside [0, " << microbatches
               << ")";
      if (run.getChunk() < 0)
        return run.emitOpError("chunk ") << run.getChunk() << " is negative";
    }
  }
  return success();
}

LogicalResult RunOp::verifySymbolUses(SymbolTableCollection &symbols) {
  if (!symbols.lookupNearestSymbolFrom<ProgramOp>(*this, getProgramAttr()))
    return emitOpError("runs ")
           << getProgramAttr() << ", which is not a sched.program";
  return success();
}

//===----------------------------------------------------------------------===//
// Buffers
//===----------------------------------------------------------------------===//

LogicalResult GetOp::verifySymbolUses(SymbolTableCollection &symbols) {
  Operation *target = symbols.lookupNearestSymbolFrom(*this, getNameAttr());
  Type expected;
  if (auto param = dyn_cast_or_null<ParamOp>(target))
    expected = param.getType();
  else if (auto constant = dyn_cast_or_null<ConstantOp>(target))
    expected = constant.getBufferType();
  else
    return emitOpError("names ")
           << getNameAttr() << ", which is not a sched.param or sched.constant";
  if (expected != getType())
    return emitOpError("yields ")
           << getType() << " but " << getNameAttr() << " is " << expected;
  return success();
}

LogicalResult ViewOp::verify() {
  BufferType source = bufferOf(getSource()), result = getType();
  int64_t offset = getOffset();
  if (offset < 0 || offset % result.getElementBytes() != 0)
    return emitOpError("offset ")
           << offset << " is not a non-negative multiple of "
           << result.getElementBytes() << " bytes";
  if (result.getBytes() > source.getBytes() ||
      offset > source.getBytes() - result.getBytes())
    return emitOpError("bytes [")
           << offset << ", "
           << countText(llvm::checkedAdd(offset, result.getBytes()))
           << ") lie outside the " << source.getBytes() << "-byte source";
  return success();
}

LogicalResult AssignOp::verifySymbolUses(SymbolTableCollection &symbols) {
  auto param = symbols.lookupNearestSymbolFrom<ParamOp>(*this, getParamAttr());
  if (!param)
    return emitOpError("assigns ")
           << getParamAttr() << ", which is not a sched.param";
  if (param.getType() != getValue().getType())
    return emitOpError("assigns a ")
           << getValue().getType() << " to " << getParamAttr() << " of type "
           << param.getType();
  return success();
}

LogicalResult ReturnOp::verify() {
  if (getNames().size() != getValues().size())
    return emitOpError("names ") << getNames().size() << " outputs but returns "
                                 << getValues().size();
  llvm::StringSet<> seen;
  for (Attribute name : getNames())
    if (!seen.insert(cast<StringAttr>(name).getValue()).second)
      return emitOpError("names output '")
             << cast<StringAttr>(name).getValue() << "' twice";
  if (std::optional<ArrayAttr> split = getSplit())
    if (split->size() != getValues().size())
      return emitOpError("split has ") << split->size() << " entries for "
                                       << getValues().size() << " outputs";
  return success();
}

//===----------------------------------------------------------------------===//
// Programs: the memory plan and the stream order
//===----------------------------------------------------------------------===//

namespace {

/// Where a buffer's bytes come from: an alloc, a parameter or constant (by
/// name), or a program input.
struct Storage {
  AllocOp alloc;             // Arena storage, or null.
  const void *key = nullptr; // Identifies the storage for hazards.
  bool isConstant = false;   // Instructions must not write it.
  bool isParam = false;      // Only sched.assign writes it.
  FlatSymbolRefAttr symbol;  // For a get.
  int64_t offset = 0;        // Bytes into the storage (through views).
};

Storage storageOf(Value v) {
  Storage s;
  while (auto view = v.getDefiningOp<ViewOp>()) {
    s.offset += view.getOffset();
    v = view.getSource();
  }
  if (auto alloc = v.getDefiningOp<AllocOp>()) {
    s.alloc = alloc;
    s.key = alloc.getOperation();
  } else if (auto get = v.getDefiningOp<GetOp>()) {
    s.symbol = get.getNameAttr();
    s.key = get.getNameAttr().getAttr().getAsOpaquePointer();
    Operation *target =
        SymbolTable::lookupNearestSymbolFrom(get, get.getNameAttr());
    s.isConstant = isa_and_nonnull<ConstantOp>(target);
    s.isParam = isa_and_nonnull<ParamOp>(target);
  } else {
    s.key = v.getAsOpaquePointer();
  }
  return s;
}

/// Happens-before across streams, as vector clocks: clock[s][t] is how
/// many instructions of stream t stream s knows have completed.
struct StreamOrder {
  struct Access {
    int64_t stream = -1, position = -1;
    Operation *op = nullptr;
  };
  struct History {
    Access lastWrite;
    std::vector<Access> lastRead; // Per stream, since the last write.
  };

  explicit StreamOrder(size_t streams)
      : clock(streams, std::vector<int64_t>(streams, 0)), position(streams, 0) {
  }

  bool ordered(int64_t stream, const Access &before) const {
    return before.op == nullptr || before.stream == stream ||
           clock[stream][before.stream] > before.position;
  }

  std::vector<std::vector<int64_t>> clock;
  std::vector<int64_t> position;
  struct Recorded {
    int64_t stream;
    std::vector<int64_t> clock;
  };
  std::map<int64_t, Recorded> events; // The latest record of each event.
  llvm::DenseMap<const void *, History> history;
};

InFlightDiagnostic hazard(Operation *op, StringRef what, StringRef stream,
                          const StreamOrder::Access &other, ArrayAttr streams) {
  InFlightDiagnostic diag =
      op->emitOpError() << what << " on stream '" << stream
                        << "' a buffer the instruction below "
                        << (what == "reads" ? "writes" : "accesses")
                        << " on stream '"
                        << cast<StringAttr>(streams[other.stream]).getValue()
                        << "', with no event between";
  diag.attachNote(other.op->getLoc()) << "the other access";
  return diag;
}

} // namespace

LogicalResult ProgramOp::verifyRegions() {
  int64_t align = getAlign(), arena = getArena().value_or(0);
  if (align < 1 || !llvm::isPowerOf2_64(align))
    return emitOpError("alignment ") << align << " is not a power of two";
  if (arena < 0)
    return emitOpError("arena of ") << arena << " bytes";
  if (getEvents() < 0)
    return emitOpError("has ") << getEvents() << " events";
  ArrayAttr streams = getStreams();
  llvm::StringMap<int64_t> streamIndex;
  for (auto [i, s] : llvm::enumerate(streams))
    if (!streamIndex.try_emplace(cast<StringAttr>(s).getValue(), i).second)
      return emitOpError("names stream '")
             << cast<StringAttr>(s).getValue() << "' twice";
  if (streams.empty())
    return emitOpError("has no streams");
  Block &body = getBody().front();
  for (BlockArgument arg : body.getArguments())
    if (!isa<BufferType>(arg.getType()))
      return emitOpError("input ")
             << arg.getArgNumber() << " is not a !sched.buffer";

  // Number the instructions; assigns follow the last of them.
  llvm::DenseMap<Operation *, int64_t> index;
  SmallVector<AllocOp> allocs;
  Operation *firstAssign = nullptr;
  for (Operation &op : body) {
    if (isa<InstructionOpInterface>(op)) {
      if (firstAssign)
        return op.emitOpError("follows a sched.assign; assigns come after "
                              "every instruction");
      index[&op] = index.size();
    } else if (isa<AssignOp>(op) && !firstAssign) {
      firstAssign = &op;
    } else if (auto alloc = dyn_cast<AllocOp>(op)) {
      allocs.push_back(alloc);
    } else if (!isa<GetOp, ViewOp, AssignOp, ReturnOp>(op)) {
      return op.emitOpError("cannot appear in a sched.program");
    }
  }
  const int64_t end = index.size();

  if (std::optional<ArrayAttr> split = getInputSplit())
    if (split->size() != body.getNumArguments())
      return emitOpError("input_split has ")
             << split->size() << " entries for " << body.getNumArguments()
             << " inputs";
  if (std::optional<ArrayRef<int64_t>> chunks = getInputChunks()) {
    if (chunks->size() != body.getNumArguments())
      return emitOpError("input_chunks has ")
             << chunks->size() << " entries for " << body.getNumArguments()
             << " inputs";
    for (auto [i, n] : llvm::enumerate(*chunks)) {
      ArrayRef<int64_t> shape =
          cast<BufferType>(body.getArgument(i).getType()).getShape();
      if (n != 0 && (n < 2 || n % 2 != 0 || shape.size() != 2))
        return emitOpError("input ")
               << i << " has " << n
               << " sequence chunks; only a [batch, seq] input has them, an "
                  "even count of two or more";
    }
  }

  // An unplanned program (straight from the lowering) has no offsets yet:
  // only its stream order can be checked.
  bool planned = isPlanned();
  for (AllocOp alloc : allocs) {
    bool hasPlan = alloc.getOffset() && alloc.getFirst() && alloc.getLast();
    if (planned != hasPlan)
      return alloc.emitOpError(planned ? "needs an offset and a live range: "
                                         "the program is planned"
                                       : "has an offset, but the program has "
                                         "no arena: it is not planned");
  }
  if (!planned)
    allocs.clear();

  for (AllocOp alloc : allocs) {
    int64_t offset = *alloc.getOffset(), bytes = alloc.getType().getBytes();
    if (offset < 0 || offset % align != 0)
      return alloc.emitOpError("offset ")
             << offset << " is not a non-negative multiple of the program's "
             << align << "-byte alignment";
    if (bytes > arena || offset > arena - bytes)
      return alloc.emitOpError("bytes [")
             << offset << ", " << countText(llvm::checkedAdd(offset, bytes))
             << ") lie outside the " << arena << "-byte arena";
    if (*alloc.getFirst() < 0 || *alloc.getFirst() > *alloc.getLast() ||
        *alloc.getLast() > end)
      return alloc.emitOpError("live range [")
             << *alloc.getFirst() << ", " << *alloc.getLast()
             << "] is not inside [0, " << end << "]";
  }

  // No two buffers alive at once share a byte: sweep by offset. The plan is
  // read out of the attributes once; a large step has thousands of buffers
  // and the sweep meets each pair that shares an offset range.
  struct Placed {
    AllocOp alloc;
    int64_t offset, end, first, last;
  };
  SmallVector<Placed> byOffset;
  for (AllocOp alloc : allocs)
    byOffset.push_back({alloc, *alloc.getOffset(),
                        *alloc.getOffset() + alloc.getType().getBytes(),
                        *alloc.getFirst(), *alloc.getLast()});
  llvm::sort(byOffset, [](const Placed &a, const Placed &b) {
    return std::make_pair(a.offset, a.first) <
           std::make_pair(b.offset, b.first);
  });
  // With one stream every access is ordered after the one before it, so
  // the stream-order check below needs no record of the buffers that reuse
  // each other's bytes.
  bool oneStream = streams.size() == 1;
  SmallVector<std::pair<AllocOp, AllocOp>> sharing; // Disjoint in time.
  for (size_t i = 0; i < byOffset.size(); ++i) {
    Placed &a = byOffset[i]; // Not const: emitOpError is not.
    for (size_t j = i + 1; j < byOffset.size() && byOffset[j].offset < a.end;
         ++j) {
      Placed &b = byOffset[j];
      if (b.end == b.offset || a.end == a.offset)
        continue;
      if (a.first <= b.last && b.first <= a.last) {
        InFlightDiagnostic diag =
            b.alloc.emitOpError(
                "shares bytes with a buffer live at the same time: [")
            << b.offset << ", " << b.end << ") live [" << b.first << ", "
            << b.last << "] against [" << a.offset << ", " << a.end
            << ") live [" << a.first << ", " << a.last << "]";
        diag.attachNote(a.alloc.getLoc()) << "the other buffer";
        return diag;
      }
      if (!oneStream)
        sharing.push_back({a.alloc, b.alloc});
    }
  }
  // Buffers that reuse each other's bytes are one storage for stream
  // ordering: the later must not start before the earlier's last access.
  llvm::DenseMap<const void *, SmallVector<const void *>> aliases;
  for (auto [a, b] : sharing) {
    aliases[a.getOperation()].push_back(b.getOperation());
    aliases[b.getOperation()].push_back(a.getOperation());
  }

  StreamOrder order(streams.size());
  // Parameters instructions write in place, and the first to write each.
  llvm::StringMap<Operation *> writtenParams;
  int64_t events = getEvents();
  for (Operation &op : body) {
    auto instr = dyn_cast<InstructionOpInterface>(&op);
    if (!instr)
      continue;
    int64_t i = index[&op];
    StringRef streamName = instr.getStreamName();
    auto found = streamIndex.find(streamName);
    if (found == streamIndex.end())
      return op.emitOpError("runs on stream '")
             << streamName << "', which the program does not declare";
    int64_t s = found->second;

    if (auto record = dyn_cast<RecordOp>(op)) {
      if (record.getEvent() < 0 || record.getEvent() >= events)
        return op.emitOpError("event ")
               << record.getEvent() << " is outside the program's " << events
               << " events";
      std::vector<int64_t> clock = order.clock[s];
      clock[s] = order.position[s];
      order.events[record.getEvent()] = {s, std::move(clock)};
    } else if (auto wait = dyn_cast<WaitOp>(op)) {
      if (wait.getEvent() < 0 || wait.getEvent() >= events)
        return op.emitOpError("event ")
               << wait.getEvent() << " is outside the program's " << events
               << " events";
      auto recorded = order.events.find(wait.getEvent());
      if (recorded == order.events.end())
        return op.emitOpError("waits for event ")
               << wait.getEvent() << " before any sched.record of it";
      if (recorded->second.stream == s)
        return op.emitOpError("waits on stream '")
               << streamName << "' for event " << wait.getEvent()
               << ", which that stream recorded: order within a stream "
                  "needs no event";
      for (size_t t = 0; t < streams.size(); ++t)
        order.clock[s][t] =
            std::max(order.clock[s][t], recorded->second.clock[t]);
    }

    // Buffers: live ranges, writes to read-only storage, stream hazards.
    StreamOrder::Access here{s, order.position[s], &op};
    // Events touch no buffer, and so have no memory effects interface.
    SmallVector<MemoryEffects::EffectInstance> list;
    if (auto effects = dyn_cast<MemoryEffectOpInterface>(op))
      effects.getEffects(list);
    // An instruction's writes overlap none of its other operands (kernels
    // and libraries assume distinct buffers); only a collective may reduce
    // in place, its input being its output.
    for (MemoryEffects::EffectInstance &effect : list) {
      auto *written = effect.getEffectValue<OpOperand *>();
      if (!written || !isa<MemoryEffects::Write>(effect.getEffect()))
        continue;
      Storage w = storageOf(written->get());
      int64_t wEnd = w.offset + bufferOf(written->get()).getBytes();
      for (OpOperand &other : op.getOpOperands()) {
        // A collective may reduce in place; a generated elementwise kernel
        // may write a buffer it reads as an input (each element is read
        // before it is written: the optimizer's update in place).
        auto launch = dyn_cast<LaunchOp>(op);
        if (&other == written ||
            (isa<CollectiveOp>(op) && other.get() == written->get()) ||
            (launch && other.get() == written->get() &&
             llvm::is_contained(launch.getInputs(), other.get())))
          continue;
        Storage o = storageOf(other.get());
        int64_t oEnd = o.offset + bufferOf(other.get()).getBytes();
        if (o.key == w.key && o.offset < wEnd && w.offset < oEnd &&
            wEnd > w.offset && oEnd > o.offset)
          return op.emitOpError("writes operand ")
                 << written->getOperandNumber() << " over the bytes of operand "
                 << other.getOperandNumber()
                 << ": an instruction's outputs must not overlap its other "
                    "operands";
      }
    }
    for (MemoryEffects::EffectInstance &effect : list) {
      Value v = effect.getValue();
      if (!v)
        continue;
      bool write = isa<MemoryEffects::Write>(effect.getEffect());
      Storage storage = storageOf(v);
      if (planned && storage.alloc &&
          (i < *storage.alloc.getFirst() || i > *storage.alloc.getLast())) {
        InFlightDiagnostic diag = op.emitOpError("is instruction ")
                                  << i << " but uses a buffer live only in ["
                                  << *storage.alloc.getFirst() << ", "
                                  << *storage.alloc.getLast() << "]";
        diag.attachNote(storage.alloc.getLoc()) << "the buffer";
        return diag;
      }
      if (write && storage.isConstant)
        return op.emitOpError("writes constant ") << storage.symbol;
      if (write && storage.isParam) {
        // A kernel's update in place, or the narrowing copy after it; a
        // state gathered whole into its storage (as FP8 codes, or decoded).
        auto collective = dyn_cast<CollectiveOp>(op);
        if (!isa<LaunchOp, CopyOp, Fp8DecodeOp>(op) &&
            !(collective && collective.getKind() == CollectiveKind::all_gather))
          return op.emitOpError("writes parameter ")
                 << storage.symbol
                 << "; parameters change by sched.assign, or in place by a "
                    "kernel launch (or the copy narrowing its result), an "
                    "all_gather or an fp8_decode";
        writtenParams.try_emplace(storage.symbol.getValue(), &op);
      }
      if (oneStream)
        continue;
      SmallVector<const void *> keys = {storage.key};
      llvm::append_range(keys, aliases.lookup(storage.key));
      for (const void *key : keys) {
        StreamOrder::History &h = order.history[key];
        if (!order.ordered(s, h.lastWrite))
          return hazard(&op, write ? "writes" : "reads", streamName,
                        h.lastWrite, streams);
        if (write)
          for (const StreamOrder::Access &read : h.lastRead)
            if (!order.ordered(s, read))
              return hazard(&op, "writes", streamName, read, streams);
      }
      StreamOrder::History &h = order.history[storage.key];
      if (write) {
        h.lastWrite = here;
        h.lastRead.clear();
      } else {
        if (h.lastRead.size() < streams.size())
          h.lastRead.resize(streams.size());
        h.lastRead[s] = here;
      }
    }
    ++order.position[s];
  }

  llvm::StringSet<> assigned;
  for (auto assign : body.getOps<AssignOp>()) {
    if (!assigned.insert(assign.getParam()).second)
      return assign.emitOpError("assigns @")
             << assign.getParam() << " a second time";
    if (Operation *writer = writtenParams.lookup(assign.getParam())) {
      InFlightDiagnostic diag =
          assign.emitOpError("assigns @")
          << assign.getParam()
          << ", which an instruction writes in place: a parameter changes "
             "by one or the other";
      diag.attachNote(writer->getLoc()) << "the instruction";
      return diag;
    }
  }
  // What the caller reads after the program must live to its end.
  for (Operation &op : body) {
    if (!isa<AssignOp, ReturnOp>(op))
      continue;
    for (Value v : op.getOperands()) {
      Storage storage = storageOf(v);
      if (planned && storage.alloc && *storage.alloc.getLast() != end) {
        InFlightDiagnostic diag =
            op.emitOpError("reads a buffer after the last instruction, but "
                           "its live range ends at ")
            << *storage.alloc.getLast() << " (the program has " << end
            << " instructions)";
        diag.attachNote(storage.alloc.getLoc()) << "the buffer";
        return diag;
      }
    }
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Generated kernels, GEMMs, attention
//===----------------------------------------------------------------------===//

LogicalResult LaunchOp::verify() {
  if (getGrid().size() != 3 || llvm::any_of(getGrid(), [](int64_t g) {
        return g < 1 || g > (int64_t(1) << 31) - 1;
      }))
    return emitOpError("grid must be three sizes in [1, 2^31), not [")
           << getGrid() << "]";
  if (getBlock() < 1 || getBlock() > 1024)
    return emitOpError("block of ") << getBlock() << " threads is outside "
                                    << "[1, 1024]";
  return success();
}

LogicalResult LaunchOp::verifySymbolUses(SymbolTableCollection &symbols) {
  auto kernel =
      symbols.lookupNearestSymbolFrom<KernelOp>(*this, getKernelAttr());
  if (!kernel)
    return emitOpError("launches ")
           << getKernelAttr() << ", which is not a sched.kernel";
  auto check = [&](StringRef what, ArrayAttr declared,
                   TypeRange actual) -> LogicalResult {
    if (declared.size() != actual.size())
      return emitOpError("passes ")
             << actual.size() << " " << what << " to " << getKernelAttr()
             << ", which takes " << declared.size();
    for (auto [i, pair] : llvm::enumerate(llvm::zip(declared, actual))) {
      Type want = cast<TypeAttr>(std::get<0>(pair)).getValue();
      if (want != std::get<1>(pair))
        return emitOpError() << what << " " << i << " is " << std::get<1>(pair)
                             << " but " << getKernelAttr() << " takes " << want;
    }
    return success();
  };
  SmallVector<Type> scalarTypes;
  for (Attribute a : getScalars()) {
    auto typed = dyn_cast<TypedAttr>(a);
    if (!typed || !isa<IntegerAttr, FloatAttr>(a))
      return emitOpError("scalar ") << a << " is not an integer or float";
    scalarTypes.push_back(typed.getType());
  }
  if (failed(check("inputs", kernel.getInputs(), getInputs().getTypes())) ||
      failed(check("outputs", kernel.getOutputs(), getOutputs().getTypes())) ||
      failed(check("scalars", kernel.getScalars(), scalarTypes)))
    return failure();
  // The generated kernels' ABI: a first i64 scalar is the element count of
  // the first output, which the GPU launcher loops over.
  auto count = getScalars().empty() ? IntegerAttr()
                                    : dyn_cast<IntegerAttr>(getScalars()[0]);
  if (count && count.getType().isInteger(64) && !getOutputs().empty() &&
      count.getInt() != bufferOf(getOutputs()[0]).getNumElements())
    return emitOpError("scalar 0 (the element count) is ")
           << count.getInt() << " but the first output holds "
           << bufferOf(getOutputs()[0]).getNumElements() << " elements";
  return success();
}

/// A GEMM's operands `a` and `b` (named `nameA`, `nameB` in errors): of
/// one type, or both FP8 with their scales `scaleA` and `scaleB`.
static LogicalResult verifyGemmTypes(Operation *op, Value a, Value b,
                                     Value scaleA, Value scaleB,
                                     StringRef nameA, StringRef nameB) {
  Type aType = bufferOf(a).getElementType(),
       bType = bufferOf(b).getElementType();
  bool fp8 = isa<Float8E4M3FNType, Float8E5M2Type>(aType);
  if (fp8 != isa<Float8E4M3FNType, Float8E5M2Type>(bType) ||
      (!fp8 && aType != bType))
    return op->emitOpError("multiplies ")
           << aType << " by " << bType << "; " << nameA << " and " << nameB
           << " must have one type, or both be FP8";
  if (fp8 != (scaleA != nullptr) || !scaleA != !scaleB)
    return op->emitOpError()
           << (fp8 ? "FP8 operands need scales for " + nameA.str() + " and " +
                         nameB.str()
                   : std::string("takes scales only for FP8 operands"));
  return success();
}

LogicalResult GemmOp::verify() {
  ArrayRef<int64_t> mnk = getMnk(), ld = getLd(), strides = getStrides();
  if (mnk.size() != 3 || ld.size() != 3 || strides.size() != 3)
    return emitOpError("mnk, ld and strides need three entries each");
  if (llvm::any_of(mnk, [](int64_t d) { return d < 1; }) || getBatch() < 1)
    return emitOpError("sizes mnk [")
           << mnk << "] and batch " << getBatch() << " must be positive";
  if (llvm::any_of(strides, [](int64_t d) { return d < 0; }))
    return emitOpError("batch strides [")
           << strides << "] must not be negative";
  int64_t m = mnk[0], n = mnk[1], k = mnk[2];
  struct Matrix {
    StringRef name;
    Value value;
    int64_t rows, cols, ld, stride;
  };
  Matrix matrices[] = {{"A", getA(), getTransposeA() ? k : m,
                        getTransposeA() ? m : k, ld[0], strides[0]},
                       {"B", getB(), getTransposeB() ? n : k,
                        getTransposeB() ? k : n, ld[1], strides[1]},
                       {"C", getC(), m, n, ld[2], strides[2]}};
  for (const Matrix &x : matrices) {
    if (x.ld < x.cols)
      return emitOpError("leading dimension ")
             << x.ld << " of " << x.name << " is less than its " << x.cols
             << " columns";
    int64_t elements = bufferOf(x.value).getNumElements();
    std::optional<int64_t> needed;
    if (!matrixFits(getBatch(), x.stride, x.rows, x.cols, x.ld, elements,
                    needed))
      return emitOpError() << x.name << " needs " << countText(needed)
                           << " elements but its buffer holds " << elements;
    if (failed(isFloatBuffer(*this, x.value, x.name)))
      return failure();
  }
  if (failed(verifyGemmTypes(*this, getA(), getB(), getScaleA(), getScaleB(),
                             "A", "B")) ||
      failed(verifyScaleModes()))
    return failure();
  Epilogue e = getEpilogue();
  bool wantsBias = e == Epilogue::bias || e == Epilogue::bias_gelu;
  bool wantsAux =
      e == Epilogue::gelu || e == Epilogue::bias_gelu || e == Epilogue::dgelu;
  if (wantsBias != (getBias() != nullptr))
    return emitOpError("epilogue '")
           << stringifyEpilogue(e) << (wantsBias ? "' needs" : "' takes no")
           << " bias";
  if (wantsAux != (getAux() != nullptr))
    return emitOpError("epilogue '")
           << stringifyEpilogue(e) << (wantsAux ? "' needs" : "' takes no")
           << " aux";
  if (getBias() && bufferOf(getBias()).getNumElements() != n)
    return emitOpError("bias holds ") << bufferOf(getBias()).getNumElements()
                                      << " elements, not n = " << n;
  if (getAux()) {
    std::optional<int64_t> mn = llvm::checkedMul(m, n);
    std::optional<int64_t> want =
        mn ? llvm::checkedMul(*mn, getBatch()) : std::nullopt;
    if (!want || bufferOf(getAux()).getNumElements() != *want)
      return emitOpError("aux holds ")
             << bufferOf(getAux()).getNumElements()
             << " elements, not batch * m * n = " << countText(want);
  }
  for (auto [value, name] : {std::pair{getBias(), "bias"}, {getAux(), "aux"}})
    if (value && failed(isFloatBuffer(*this, value, name)))
      return failure();
  // Batches write disjoint blocks of C (and aux, laid out like C).
  if (getBatch() > 1) {
    std::optional<int64_t> block = llvm::checkedMul(m - 1, ld[2]);
    block = block ? llvm::checkedAdd(*block, n) : std::nullopt;
    if (!block || strides[2] < *block)
      return emitOpError("batch stride ")
             << strides[2] << " of C makes batches overlap (each batch writes "
             << (block ? std::to_string(*block) : std::string("too many"))
             << " elements)";
  }
  return success();
}

namespace {

/// The shapes attention's operands must have, from q and k.
LogicalResult verifyAttentionShapes(Operation *op, Value q, Value k, Value v,
                                    Value out, Value lse,
                                    AttentionAlgorithm algorithm,
                                    Value scratch) {
  for (auto [value, name] :
       {std::pair{q, "q"}, {k, "k"}, {v, "v"}, {out, "out"}})
    if (failed(hasRank(op, value, name, 4)) ||
        failed(isFloatBuffer(op, value, name)))
      return failure();
  ArrayRef<int64_t> qs = bufferOf(q).getShape(), ks = bufferOf(k).getShape(),
                    vs = bufferOf(v).getShape();
  int64_t b = qs[0], s = qs[1], hq = qs[2], d = qs[3], t = ks[1], hkv = ks[2];
  if (failed(hasShape(op, k, "k", {b, t, hkv, d})) ||
      failed(hasShape(op, v, "v", {b, t, hkv, vs[3]})) ||
      failed(hasShape(op, out, "out", {b, s, hq, vs[3]})) ||
      failed(hasShape(op, lse, "lse", {b, hq, s})))
    return failure();
  if (hkv < 1 || hq % hkv != 0)
    return op->emitOpError("query heads ")
           << hq << " are not a multiple of key/value heads " << hkv;
  if (!bufferOf(lse).getElementType().isF32())
    return op->emitOpError("lse must hold f32");
  int64_t es = bufferOf(q).getElementBytes();
  bool gemms = algorithm == AttentionAlgorithm::gemm_softmax;
  if (gemms && !scratch::attentionRowsAligned(s, t, d, vs[3], es))
    return op->emitOpError("algorithm 'gemm_softmax' needs S, T, D and Dv "
                           "that make 16-byte rows, got [")
           << qs << "] and [" << ks << "]";
  std::optional<int64_t> need = cast<ScratchOpInterface>(op).getScratchBytes();
  if (need && *need == 0 && scratch)
    return op->emitOpError("algorithm 'flash' takes no scratch forward");
  // The flash backward's delta may also be computed without scratch (the
  // CPU does); gemm_softmax cannot.
  std::string who =
      ("algorithm '" + stringifyAttentionAlgorithm(algorithm) + "' ").str();
  return verifyScratch(op, scratch, need, /*required=*/gemms, who);
}

} // namespace

/// Attention's optional positions: both or neither, i32, [S] and [T].
static LogicalResult verifyPositions(Operation *op, Value q, Value k,
                                     Value queryPositions, Value keyPositions,
                                     bool causal) {
  if (!queryPositions && !keyPositions)
    return success();
  if (!queryPositions || !keyPositions || !causal)
    return op->emitOpError(
        "takes query and key positions together, with causal");
  for (auto [positions, of, name] :
       {std::tuple{queryPositions, q, "query_positions"},
        std::tuple{keyPositions, k, "key_positions"}}) {
    if (!bufferOf(positions).getElementType().isInteger(32))
      return op->emitOpError() << name << " must hold i32";
    if (failed(hasShape(op, positions, name, {bufferOf(of).getShape()[1]})))
      return failure();
  }
  return success();
}

/// A dropout mask's counters and block: `step` and `microbatch` f32
/// scalars, `microbatch` exactly with `microbatches` (at least 1, cutting
/// dimension 0), `split` per dimension of a rank-`rank` tensor.
static LogicalResult verifyMask(Operation *op, Value step, Value microbatch,
                                std::optional<int64_t> microbatches,
                                std::optional<ArrayAttr> split, size_t rank) {
  if (step && failed(isF32Scalar(op, step, "step")))
    return failure();
  if (microbatch && failed(isF32Scalar(op, microbatch, "microbatch")))
    return failure();
  if (static_cast<bool>(microbatch) != microbatches.has_value())
    return op->emitOpError("takes a microbatch operand exactly when it has "
                           "microbatches");
  if (microbatches && (*microbatches < 1 || rank == 0))
    return op->emitOpError("microbatches ")
           << *microbatches
           << " must be at least 1 and cut dimension 0 of a tensor";
  if (split && failed(verifySplit(op, *split, rank, "input")))
    return failure();
  // The mask's index takes four dimensions: dimension 0 and each later
  // split one (whole ones merge into the one before).
  if (split && split->size() > 1 &&
      llvm::count_if(split->getValue().drop_front(), [](Attribute a) {
        return !cast<ArrayAttr>(a).empty();
      }) > 3)
    return op->emitOpError("split cuts more than 3 dimensions after the "
                           "first; a dropout mask's index takes 4");
  return success();
}

LogicalResult AttentionOp::verify() {
  if (failed(verifyAttentionShapes(*this, getQ(), getK(), getV(), getOut(),
                                   getLse(), getAlgorithm(), getScratch())) ||
      failed(verifyPositions(*this, getQ(), getK(), getQueryPositions(),
                             getKeyPositions(), getCausal())))
    return failure();
  if (Value entropy = getEntropy()) {
    if (failed(
            hasShape(*this, entropy, "entropy", bufferOf(getLse()).getShape())))
      return failure();
    if (!bufferOf(entropy).getElementType().isF32())
      return emitOpError("entropy must hold f32");
  }
  return weft::verifyAttentionDropout(*this, [&] {
    return verifyMask(*this, getStep(), getMicrobatch(), getMicrobatches(),
                      getSplit(), 4);
  });
}

LogicalResult AttentionGradOp::verify() {
  if (failed(verifyAttentionShapes(*this, getQ(), getK(), getV(), getOut(),
                                   getLse(), getAlgorithm(), getScratch())) ||
      failed(verifyPositions(*this, getQ(), getK(), getQueryPositions(),
                             getKeyPositions(), getCausal())))
    return failure();
  if (getLseGrad() && getLseGrad().getType() != getLse().getType())
    return emitOpError("lse_grad is ")
           << getLseGrad().getType() << ", not lse's " << getLse().getType();
  if (failed(weft::verifyAttentionDropout(*this, [&] {
        return verifyMask(*this, getStep(), getMicrobatch(), getMicrobatches(),
                          getSplit(), 4);
      })))
    return failure();
  for (auto [x, dx, name] : {std::tuple{getQ(), getDq(), "dq"},
                             {getK(), getDk(), "dk"},
                             {getV(), getDv(), "dv"}})
    if (x.getType() != dx.getType())
      return emitOpError() << name << " is " << dx.getType() << ", not "
                           << x.getType();
  return sameShape(*this, getOut(), "out", getDout(), "dout");
}

//===----------------------------------------------------------------------===//
// Library kernels
//===----------------------------------------------------------------------===//

namespace {

/// `rows` is `ids`' shape followed by `width`.
LogicalResult rowsOf(Operation *op, Value ids, Value rows, StringRef name,
                     int64_t width) {
  SmallVector<int64_t> shape(bufferOf(ids).getShape());
  shape.push_back(width);
  return hasShape(op, rows, name, shape);
}

} // namespace

LogicalResult EmbeddingOp::verify() {
  if (failed(hasRank(*this, getTable(), "table", 2)) ||
      failed(isIntBuffer(*this, getIds(), "ids")))
    return failure();
  if (failed(rowsOf(*this, getIds(), getOut(), "out",
                    bufferOf(getTable()).getShape()[1])))
    return failure();
  return verifyVocabAxes(*this, getVocabAxes());
}

LogicalResult EmbeddingGradOp::verify() {
  if (failed(hasRank(*this, getDtable(), "dtable", 2)) ||
      failed(isIntBuffer(*this, getIds(), "ids")))
    return failure();
  if (failed(rowsOf(*this, getIds(), getDout(), "dout",
                    bufferOf(getDtable()).getShape()[1])))
    return failure();
  return verifyVocabAxes(*this, getVocabAxes());
}

LogicalResult RopeOp::verify() {
  ArrayRef<int64_t> shape = bufferOf(getInput()).getShape();
  if (shape.empty() || shape.back() % 2 != 0)
    return emitOpError("rotates pairs: the last dimension of [")
           << shape << "] must be even";
  if (!(getTheta().convertToDouble() > 0))
    return emitOpError("theta must be positive");
  if (getPositions() &&
      (shape.size() < 2 ||
       !bufferOf(getPositions()).getElementType().isInteger(32) ||
       bufferOf(getPositions()).getShape() != ArrayRef<int64_t>{shape[1]}))
    return emitOpError("positions must be i32 [sequence] for input [")
           << shape << "]";
  return sameShape(*this, getInput(), "input", getOut(), "out");
}

namespace {
LogicalResult verifyLogitsAndLabels(Operation *op, Value logits, Value labels) {
  ArrayRef<int64_t> shape = bufferOf(logits).getShape();
  if (shape.empty())
    return op->emitOpError("logits need a vocabulary dimension; they are 0-d");
  if (failed(isFloatBuffer(op, logits, "logits")) ||
      failed(isIntBuffer(op, labels, "labels")))
    return failure();
  return hasShape(op, labels, "labels", shape.drop_back());
}
} // namespace

LogicalResult CrossEntropyOp::verify() {
  if (failed(verifyLogitsAndLabels(*this, getLogits(), getLabels())) ||
      failed(isF32Scalar(*this, getLoss(), "loss")) ||
      failed(verifyScratch(*this, getScratch(), getScratchBytes())))
    return failure();
  return verifyVocabAxes(*this, getVocabAxes());
}

LogicalResult CrossEntropyGradOp::verify() {
  if (failed(verifyLogitsAndLabels(*this, getLogits(), getLabels())) ||
      failed(isF32Scalar(*this, getDloss(), "dloss")) ||
      failed(
          sameShape(*this, getLogits(), "logits", getDlogits(), "dlogits")) ||
      failed(verifyScratch(*this, getScratch(), getScratchBytes())))
    return failure();
  return verifyVocabAxes(*this, getVocabAxes());
}

LogicalResult ReduceOp::verify() {
  if (getReduction() == Reduction::none)
    return emitOpError("needs a reduction: sum, max or mean");
  ArrayRef<int64_t> shape = bufferOf(getInput()).getShape();
  SmallVector<int64_t> kept;
  int64_t previous = -1;
  for (int64_t d : getDims()) {
    if (d <= previous || d >= static_cast<int64_t>(shape.size()))
      return emitOpError("dims [")
             << getDims() << "] must increase and lie inside rank "
             << shape.size();
    previous = d;
  }
  for (auto [d, size] : llvm::enumerate(shape))
    if (!llvm::is_contained(getDims(), static_cast<int64_t>(d)))
      kept.push_back(size);
  if (failed(hasShape(*this, getOut(), "out", kept)))
    return failure();
  return verifyScratch(*this, getScratch(), getScratchBytes());
}

LogicalResult SoftmaxOp::verify() {
  int64_t rank = bufferOf(getInput()).getShape().size();
  if (getDim() < 0 || getDim() >= rank)
    return emitOpError("dim ") << getDim() << " is outside rank " << rank;
  return sameShape(*this, getInput(), "input", getOut(), "out");
}

LogicalResult DropoutOp::verify() {
  double rate = getRate().convertToDouble();
  if (!(rate >= 0 && rate < 1))
    return emitOpError("rate ") << rate << " is outside [0, 1)";
  if (failed(verifyMask(*this, getStep(), getMicrobatch(), getMicrobatches(),
                        getSplit(), bufferOf(getInput()).getShape().size())))
    return failure();
  if (Value positions = getPositions()) {
    ArrayRef<int64_t> in = bufferOf(getInput()).getShape();
    BufferType type = bufferOf(positions);
    if (in.size() < 2 || in.size() > 4 ||
        !type.getElementType().isInteger(32) ||
        type.getShape() != ArrayRef<int64_t>{in[1]})
      return emitOpError("positions must be i32, one per element of "
                         "dimension 1 of an input of rank 2 to 4");
  }
  return sameShape(*this, getInput(), "input", getOut(), "out");
}

/// FP8 blocks: `grid` (the block maxima's shape) has the rank of `shape`
/// and divides it.
static LogicalResult verifyFp8Grid(Operation *op, ArrayRef<int64_t> shape,
                                   ArrayRef<int64_t> grid) {
  if (grid.size() != shape.size())
    return op->emitOpError("block maxima [")
           << grid << "] need the rank of [" << shape << "]";
  for (auto [d, size] : llvm::enumerate(grid))
    if (size < 1 || shape[d] % size != 0)
      return op->emitOpError("block maxima [")
             << grid << "] do not divide [" << shape << "]";
  return success();
}

LogicalResult Fp8AmaxOp::verify() {
  return verifyFp8Grid(*this, bufferOf(getInput()).getShape(),
                       bufferOf(getOut()).getShape());
}

LogicalResult Fp8QuantizeOp::verify() {
  if (getFormat() != "f8e4m3fn" && getFormat() != "f8e5m2")
    return emitOpError("format must be f8e4m3fn or f8e5m2, got '")
           << getFormat() << "'";
  if (failed(verifyFp8Grid(*this, bufferOf(getInput()).getShape(),
                           bufferOf(getAmax()).getShape())))
    return failure();
  return sameShape(*this, getInput(), "input", getOut(), "out");
}

/// fp8_encode's and fp8_decode's operands: the values (f32, or bf16 a GPU
/// reads or writes as stored) on one side and the FP8 codes on the other,
/// of one shape that the block maxima `amax` divide.
static LogicalResult verifyCodes(Operation *op, Value input, Value amax,
                                 Value out, bool encode) {
  auto [values, codes] = encode ? std::pair{input, out} : std::pair{out, input};
  StringRef valuesName = encode ? "input" : "out",
            codesName = encode ? "out" : "input";
  Type v = bufferOf(values).getElementType();
  if (!v.isF32() && !v.isBF16())
    return op->emitOpError() << valuesName << " must hold f32 or bf16";
  if (!isa<Float8E4M3FNType, Float8E5M2Type>(bufferOf(codes).getElementType()))
    return op->emitOpError() << codesName << " must hold f8E4M3FN or f8E5M2";
  if (failed(verifyFp8Grid(op, bufferOf(input).getShape(),
                           bufferOf(amax).getShape())))
    return failure();
  return sameShape(op, input, "input", out, "out");
}

LogicalResult Fp8EncodeOp::verify() {
  return verifyCodes(*this, getInput(), getAmax(), getOut(), /*encode=*/true);
}

LogicalResult Fp8DecodeOp::verify() {
  return verifyCodes(*this, getInput(), getAmax(), getOut(), /*encode=*/false);
}

std::optional<int> weft::sched::parseFp8ScaleMode(StringRef name) {
  return llvm::StringSwitch<std::optional<int>>(name)
      .Case("tensor", WEFT_FP8_SCALE_TENSOR)
      .Case("rows", WEFT_FP8_SCALE_ROWS)
      .Case("vec128", WEFT_FP8_SCALE_VEC128)
      .Case("blk128", WEFT_FP8_SCALE_BLK128)
      .Case("vec32", WEFT_FP8_SCALE_VEC32)
      .Default(std::nullopt);
}

StringRef weft::sched::fp8ScaleModeName(int mode) {
  switch (mode) {
  case WEFT_FP8_SCALE_ROWS:
    return "rows";
  case WEFT_FP8_SCALE_VEC128:
    return "vec128";
  case WEFT_FP8_SCALE_BLK128:
    return "blk128";
  case WEFT_FP8_SCALE_VEC32:
    return "vec32";
  default:
    return "tensor";
  }
}

/// A scale mode attribute's value, or failure with an error on `op`.
static FailureOr<int> scaleModeOf(Operation *op, StringRef name) {
  std::optional<int> mode = parseFp8ScaleMode(name);
  if (!mode)
    return op->emitOpError("scale mode '")
           << name << "' is not tensor, rows, vec128, blk128 or vec32";
  return *mode;
}

/// An FP8 GEMM's `scale_modes` (A's and B's, "tensor" without them), or
/// failure with an error on `op`.
static FailureOr<std::array<int, 2>>
scaleModesOf(Operation *op, std::optional<ArrayAttr> names, Value scaleA) {
  std::array<int, 2> modes = {WEFT_FP8_SCALE_TENSOR, WEFT_FP8_SCALE_TENSOR};
  if (!names)
    return modes;
  if (!scaleA)
    return op->emitOpError("takes scale_modes only with FP8 scales");
  if (names->size() != 2)
    return op->emitOpError("scale_modes needs A's and B's, has ")
           << names->size();
  for (int i = 0; i < 2; ++i) {
    FailureOr<int> mode =
        scaleModeOf(op, cast<StringAttr>((*names)[i]).getValue());
    if (failed(mode))
      return failure();
    modes[i] = *mode;
  }
  return modes;
}

/// Block scales `scaleA` of A [rowsA, k] and `scaleB` of B [rowsB, k] in
/// `modes`, which must pair; A and B name them in errors.
static LogicalResult verifyBlockScales(Operation *op, std::array<int, 2> modes,
                                       Value scaleA, Value scaleB,
                                       int64_t rowsA, int64_t rowsB, int64_t k,
                                       StringRef nameA, StringRef nameB) {
  if (!weft_fp8_scale_modes_pair(modes[0], modes[1]))
    return op->emitOpError("no GEMM scales a ")
           << fp8ScaleModeName(modes[0]) << " " << nameA << " by a "
           << fp8ScaleModeName(modes[1]) << " " << nameB;
  if (int64_t block = weft_fp8_scale_block_k(modes[0], k); k % block != 0)
    return op->emitOpError() << block << "-element blocks need k a multiple of "
                             << block << ", not " << k;
  for (auto [scale, mode, rows, name] :
       {std::tuple{scaleA, modes[0], rowsA, nameA},
        std::tuple{scaleB, modes[1], rowsB, nameB}}) {
    BufferType type = bufferOf(scale);
    int64_t count = weft_fp8_scale_count(mode, rows, k);
    if (!type.getElementType().isF32() || type.getNumElements() != count)
      return op->emitOpError("scale of ")
             << name << " must hold " << count << " f32 ("
             << fp8ScaleModeName(mode) << " of " << rows << " x " << k
             << "), not " << type;
  }
  return success();
}

LogicalResult GemmOp::verifyScaleModes() {
  FailureOr<std::array<int, 2>> modes =
      scaleModesOf(*this, getScaleModes(), getScaleA());
  if (failed(modes))
    return failure();
  if (!getScaleA())
    return success();
  if ((*modes)[0] == WEFT_FP8_SCALE_TENSOR &&
      (*modes)[1] == WEFT_FP8_SCALE_TENSOR)
    return failure(failed(isF32Scalar(*this, getScaleA(), "scale of A")) ||
                   failed(isF32Scalar(*this, getScaleB(), "scale of B")));
  if (weft_fp8_scale_modes_pair((*modes)[0], (*modes)[1]) &&
      (getTransposeA() || !getTransposeB() || getBatch() != 1))
    return emitOpError("block scales read one A [m, k] and B [n, k] "
                       "(transpose_b, not transpose_a, batch 1)");
  ArrayRef<int64_t> mnk = getMnk();
  return verifyBlockScales(*this, *modes, getScaleA(), getScaleB(), mnk[0],
                           mnk[1], mnk[2], "A", "B");
}

/// The scales of a cast of `input` by the maxima `amax` into codes of shape
/// `out` (`input`'s, or with `transpose` its last two dimensions swapped):
/// `modeName`'s blocks (one f32 maximum without one), and `scaleInv`
/// holding that mode's scales for out's matrix. fp8_cast's and
/// fp8_scale_inv's (whose codes are the cast's input).
static LogicalResult verifyCastScales(Operation *op, Value input, Value amax,
                                      ArrayRef<int64_t> out, Value scaleInv,
                                      bool transpose,
                                      std::optional<StringRef> modeName) {
  int mode = WEFT_FP8_SCALE_TENSOR;
  if (modeName) {
    FailureOr<int> parsed = scaleModeOf(op, *modeName);
    if (failed(parsed))
      return failure();
    mode = *parsed;
  }
  if (mode == WEFT_FP8_SCALE_TENSOR) {
    if (!bufferOf(amax).getElementType().isF32() ||
        bufferOf(amax).getNumElements() != 1)
      return op->emitOpError("amax must be one f32 (a per-tensor scale), not ")
             << bufferOf(amax);
    return isF32Scalar(op, scaleInv, "scale_inv");
  }
  BufferType in = bufferOf(input), grid = bufferOf(amax);
  if (!grid.getElementType().isF32() ||
      !bufferOf(scaleInv).getElementType().isF32())
    return op->emitOpError("amax and scale_inv must hold f32");
  if (failed(verifyFp8Grid(op, in.getShape(), grid.getShape())))
    return failure();
  long rows = 0, cols = 0;
  if (!weft_fp8_matrix_blocks(in.getShape().data(), grid.getShape().data(),
                              static_cast<int>(in.getShape().size()), &rows,
                              &cols))
    return op->emitOpError("block maxima [")
           << grid.getShape() << "] cut [" << in.getShape()
           << "] into blocks that are no rectangles of its matrix";
  int64_t k = out.empty() ? 1 : out.back();
  int64_t operandRows =
      ShapedType::getNumElements(out) / std::max<int64_t>(k, 1);
  if (transpose) {
    // Each matrix of a batch transposes on its own: a block must lie in one.
    if (in.getShape().size() < 2 || rows < 1 ||
        in.getShape()[in.getShape().size() - 2] % rows != 0)
      return op->emitOpError("a block-scaled transposing cast needs blocks "
                             "inside one matrix; ")
             << rows << "-row blocks cut [" << in.getShape() << "]";
    std::swap(rows, cols);
  }
  if (!(weft_fp8_scale_modes_of(operandRows, k, rows, cols) >> mode & 1))
    return op->emitOpError("blocks ")
           << rows << " x " << cols << " of " << operandRows << " x " << k
           << " are not scale mode '" << fp8ScaleModeName(mode) << "''s";
  int64_t count = weft_fp8_scale_count(mode, operandRows, k);
  if (bufferOf(scaleInv).getNumElements() != count)
    return op->emitOpError("scale_inv must hold ")
           << count << " f32 (" << fp8ScaleModeName(mode) << " of "
           << operandRows << " x " << k << "), not " << bufferOf(scaleInv);
  return success();
}

LogicalResult Fp8CastOp::verify() {
  BufferType in = bufferOf(getInput()), out = bufferOf(getOut());
  if (!in.getElementType().isF32() && !in.getElementType().isBF16())
    return emitOpError("input must hold f32 or bf16, not ")
           << in.getElementType();
  if (!isa<Float8E4M3FNType, Float8E5M2Type>(out.getElementType()))
    return emitOpError("out must hold f8E4M3FN or f8E5M2, not ")
           << out.getElementType();
  SmallVector<int64_t> want(in.getShape());
  if (getTranspose()) {
    if (want.size() < 2)
      return emitOpError("transposes the last two dimensions; input has rank ")
             << want.size();
    std::swap(want[want.size() - 2], want[want.size() - 1]);
  }
  if (out.getShape() != ArrayRef<int64_t>(want))
    return emitOpError("out must have shape [")
           << want << "]" << (getTranspose() ? " (input's, transposed)" : "")
           << ", not [" << out.getShape() << "]";
  return verifyCastScales(*this, getInput(), getAmax(), out.getShape(),
                          getScaleInv(), getTranspose(), getScaleMode());
}

LogicalResult Fp8ScaleInvOp::verify() {
  Type format = bufferOf(getCodes()).getElementType();
  if (!isa<Float8E4M3FNType, Float8E5M2Type>(format))
    return emitOpError("codes must hold f8E4M3FN or f8E5M2, not ") << format;
  SmallVector<int64_t> operand(bufferOf(getCodes()).getShape());
  if (getTranspose()) {
    if (operand.size() < 2)
      return emitOpError("transposes the last two dimensions; codes have rank ")
             << operand.size();
    std::swap(operand[operand.size() - 2], operand.back());
  }
  return verifyCastScales(*this, getCodes(), getAmax(), operand, getScaleInv(),
                          getTranspose(), getScaleMode());
}

namespace {
LogicalResult verifyNormGrad(Operation *op, Value input, Value weight,
                             Value dout, Value dinput, Value dweight,
                             Value dbias, double epsilon) {
  if (!(epsilon > 0))
    return op->emitOpError("epsilon must be positive");
  ArrayRef<int64_t> shape = bufferOf(input).getShape();
  if (shape.empty())
    return op->emitOpError("normalises the last dimension; input is 0-d");
  if (failed(hasShape(op, weight, "weight", {shape.back()})) ||
      failed(sameShape(op, input, "input", dout, "dout")) ||
      failed(sameShape(op, input, "input", dinput, "dinput")) ||
      failed(sameShape(op, weight, "weight", dweight, "dweight")))
    return failure();
  if (dbias && failed(sameShape(op, weight, "weight", dbias, "dbias")))
    return failure();
  auto scratchOp = cast<ScratchOpInterface>(op);
  return verifyScratch(op, scratchOp.getScratch(), scratchOp.getScratchBytes());
}
} // namespace

LogicalResult LayerNormGradOp::verify() {
  return verifyNormGrad(*this, getInput(), getWeight(), getDout(), getDinput(),
                        getDweight(), getDbias(),
                        getEpsilon().convertToDouble());
}

LogicalResult RMSNormGradOp::verify() {
  return verifyNormGrad(*this, getInput(), getWeight(), getDout(), getDinput(),
                        getDweight(), Value(), getEpsilon().convertToDouble());
}

LogicalResult OneHotOp::verify() {
  if (failed(isIntBuffer(*this, getIndices(), "indices")))
    return failure();
  ArrayRef<int64_t> out = bufferOf(getOut()).getShape();
  if (out.empty())
    return emitOpError("out must have a class dimension");
  return rowsOf(*this, getIndices(), getOut(), "out", out.back());
}

namespace {
/// values/indices of the k best per row of [..., n].
LogicalResult verifyTopK(Operation *op, Value input, Value values,
                         Value indices, int64_t k) {
  SmallVector<int64_t> shape(bufferOf(input).getShape());
  if (shape.empty() || k < 1 || k > shape.back())
    return op->emitOpError("k = ") << k << " must lie in [1, "
                                   << (shape.empty() ? 0 : shape.back()) << "]";
  shape.back() = k;
  if (failed(isIntBuffer(op, indices, "indices")) ||
      failed(hasShape(op, indices, "indices", shape)))
    return failure();
  return hasShape(op, values, "values", shape);
}
} // namespace

LogicalResult TopKOp::verify() {
  return verifyTopK(*this, getInput(), getValues(), getIndices(), getK());
}

LogicalResult TopKGatingOp::verify() {
  if (failed(hasRank(*this, getLogits(), "logits", 2)))
    return failure();
  return verifyTopK(*this, getLogits(), getWeights(), getIndices(), getK());
}

namespace {
/// Positions [T, k] (i32) of `tokens` tokens, optionally with weights of
/// the same shape.
LogicalResult verifyPositions(Operation *op, Value positions, int64_t tokens,
                              Value weights = Value()) {
  if (failed(isIntBuffer(op, positions, "positions")) ||
      failed(hasRank(op, positions, "positions", 2)))
    return failure();
  if (bufferOf(positions).getShape()[0] != tokens)
    return op->emitOpError("positions route ")
           << bufferOf(positions).getShape()[0] << " tokens, not " << tokens;
  return weights ? sameShape(op, positions, "positions", weights, "weights")
                 : success();
}

/// Rows [N, D] of width `width`.
LogicalResult verifyRows(Operation *op, Value rows, StringRef name,
                         int64_t width) {
  if (failed(hasRank(op, rows, name, 2)))
    return failure();
  if (bufferOf(rows).getShape()[1] != width)
    return op->emitOpError(name)
           << " rows have " << bufferOf(rows).getShape()[1] << " elements, not "
           << width;
  return success();
}

/// Group sizes [G] (i32) with G a multiple of `experts`.
LogicalResult verifySizes(Operation *op, Value sizes, int64_t experts) {
  if (failed(isIntBuffer(op, sizes, "sizes")) ||
      failed(hasRank(op, sizes, "sizes", 1)))
    return failure();
  if (experts < 1 || bufferOf(sizes).getShape()[0] % experts != 0)
    return op->emitOpError("the ")
           << experts << " experts do not divide the "
           << bufferOf(sizes).getShape()[0] << " groups";
  return success();
}
} // namespace

LogicalResult ExpertRouteOp::verify() {
  if (failed(isIntBuffer(*this, getIndices(), "indices")) ||
      failed(hasRank(*this, getIndices(), "indices", 2)) ||
      failed(isIntBuffer(*this, getPositions(), "positions")) ||
      failed(sameShape(*this, getIndices(), "indices", getPositions(),
                       "positions")) ||
      failed(isIntBuffer(*this, getCounts(), "counts")) ||
      failed(hasRank(*this, getCounts(), "counts", 1)))
    return failure();
  if (getCapacity() < 0)
    return emitOpError("capacity ")
           << getCapacity() << " must be >= 0 (0: dropless)";
  return verifyScratch(*this, getScratch(), getScratchBytes(),
                       /*required=*/false, "");
}

LogicalResult ExpertDispatchOp::verify() {
  if (failed(hasRank(*this, getInput(), "input", 2)))
    return failure();
  ArrayRef<int64_t> x = bufferOf(getInput()).getShape();
  if (failed(verifyPositions(*this, getPositions(), x[0])))
    return failure();
  return verifyRows(*this, getOut(), "out", x[1]);
}

LogicalResult ExpertCombineOp::verify() {
  if (failed(hasRank(*this, getOut(), "out", 2)))
    return failure();
  ArrayRef<int64_t> out = bufferOf(getOut()).getShape();
  if (failed(verifyRows(*this, getExpertOutputs(), "expert_outputs", out[1])))
    return failure();
  return verifyPositions(*this, getPositions(), out[0], getWeights());
}

LogicalResult ExpertGatherOp::verify() {
  if (failed(hasRank(*this, getExpertOutputs(), "expert_outputs", 2)) ||
      failed(hasRank(*this, getPositions(), "positions", 2)))
    return failure();
  ArrayRef<int64_t> pos = bufferOf(getPositions()).getShape();
  if (failed(verifyPositions(*this, getPositions(), pos[0])))
    return failure();
  return hasShape(*this, getOut(), "out",
                  {pos[0], pos[1], bufferOf(getExpertOutputs()).getShape()[1]});
}

LogicalResult ExpertScatterOp::verify() {
  if (failed(hasRank(*this, getPairs(), "pairs", 3)))
    return failure();
  ArrayRef<int64_t> pairs = bufferOf(getPairs()).getShape();
  if (failed(verifyPositions(*this, getPositions(), pairs[0])) ||
      failed(
          hasShape(*this, getPositions(), "positions", {pairs[0], pairs[1]})))
    return failure();
  return verifyRows(*this, getOut(), "out", pairs[2]);
}

LogicalResult GroupedMatmulOp::verify() {
  if (failed(hasRank(*this, getInput(), "input", 2)) ||
      failed(hasRank(*this, getWeight(), "weight", 3)))
    return failure();
  ArrayRef<int64_t> x = bufferOf(getInput()).getShape(),
                    w = bufferOf(getWeight()).getShape();
  bool t = getTransposeRhs();
  if (w[t ? 2 : 1] != x[1])
    return emitOpError("weight [")
           << w << "] does not take input rows of " << x[1] << " elements"
           << (t ? " (transposed)" : "");
  if (failed(verifySizes(*this, getSizes(), w[0])) ||
      failed(hasShape(*this, getOut(), "out", {x[0], w[t ? 1 : 2]})))
    return failure();
  // FP8 codes: both with scales, k contiguous, in 32-element blocks (the
  // kernel's), a 128 x 128 weight block inside one expert.
  if (failed(verifyGemmTypes(*this, getInput(), getWeight(), getScaleInput(),
                             getScaleWeight(), "input", "weight")))
    return failure();
  Type xType = bufferOf(getInput()).getElementType(),
       wType = bufferOf(getWeight()).getElementType();
  bool fp8 = isa<Float8E4M3FNType, Float8E5M2Type>(xType);
  FailureOr<std::array<int, 2>> modes =
      scaleModesOf(*this, getScaleModes(), getScaleInput());
  if (failed(modes) || !fp8)
    return failure(failed(modes));
  if (isa<Float8E5M2Type>(xType) && isa<Float8E5M2Type>(wType))
    return emitOpError("multiplies f8E5M2 by f8E5M2, which no FP8 GEMM does");
  if (!t)
    return emitOpError("FP8 operands need transpose_rhs (k contiguous in "
                       "the weight [E, M, K])");
  if (x[1] < 1 || x[1] % 32 != 0)
    return emitOpError("FP8 operands need k a positive multiple of 32, not ")
           << x[1];
  if ((*modes)[1] == WEFT_FP8_SCALE_BLK128 && w[1] % 128 != 0)
    return emitOpError("128 x 128 weight blocks need each expert's ")
           << w[1] << " rows a multiple of 128";
  return verifyBlockScales(*this, *modes, getScaleInput(), getScaleWeight(),
                           x[0], w[0] * w[1], x[1], "input", "weight");
}

/// Tiles of an expert's rows (fp8_group_cast's, an FP8 wgrad's): 0 (all
/// of them) or a positive multiple of 32, the GEMM's k-blocks.
static LogicalResult verifyTileRows(Operation *op, int64_t rows) {
  if (rows < 0 || rows % 32 != 0)
    return op->emitOpError("tile_rows must be 0 (all of an expert's rows) "
                           "or a positive multiple of 32, not ")
           << rows;
  return success();
}

/// The f32 rows [N, C] of `experts` experts' groups `sizes` that a group
/// quantization reads.
static LogicalResult verifyGroupRowsInput(Operation *op, Value input,
                                          Value sizes, int64_t tileRows,
                                          int64_t experts) {
  if (failed(hasRank(op, input, "input", 2)) ||
      failed(verifySizes(op, sizes, experts)) ||
      failed(verifyTileRows(op, tileRows)))
    return failure();
  Type in = bufferOf(input).getElementType();
  if (!in.isF32())
    return op->emitOpError("input must hold f32, not ") << in;
  return success();
}

/// The scales of an expert weight gradient's FP8 operand [cols, N] in
/// tiles of `tileRows` of each of `experts` experts' rows: [T, cols] f32.
static LogicalResult verifyGroupScales(Operation *op, Value scale,
                                       int64_t experts, int64_t n, int64_t cols,
                                       int64_t tileRows, StringRef name) {
  int64_t tiles = weft_fp8_group_tiles(experts, n, tileRows);
  BufferType type = bufferOf(scale);
  if (!type.getElementType().isF32() ||
      type.getShape() != ArrayRef<int64_t>{tiles, cols})
    return op->emitOpError("scale of ")
           << name << " must be f32 [" << tiles << ", " << cols
           << "] (a scale per tile of an expert's rows and column), not "
           << type;
  return success();
}

LogicalResult Fp8GroupQuantizeOp::verify() {
  if (getFormat() != "f8e4m3fn" && getFormat() != "f8e5m2")
    return emitOpError("format must be f8e4m3fn or f8e5m2, got '")
           << getFormat() << "'";
  if (failed(verifyGroupRowsInput(*this, getInput(), getSizes(), getTileRows(),
                                  getExperts())))
    return failure();
  return sameShape(*this, getInput(), "input", getOut(), "out");
}

LogicalResult Fp8GroupCastOp::verify() {
  if (failed(verifyGroupRowsInput(*this, getInput(), getSizes(), getTileRows(),
                                  getExperts())))
    return failure();
  BufferType out = bufferOf(getOut());
  if (!isa<Float8E4M3FNType, Float8E5M2Type>(out.getElementType()))
    return emitOpError("out must hold f8E4M3FN or f8E5M2, not ")
           << out.getElementType();
  ArrayRef<int64_t> in = bufferOf(getInput()).getShape();
  if (failed(hasShape(*this, getOut(), "out", {in[1], in[0]})))
    return failure();
  return verifyGroupScales(*this, getScaleInv(), getExperts(), in[0], in[1],
                           getTileRows(), "out");
}

LogicalResult GroupedMatmulWgradOp::verify() {
  if (failed(hasRank(*this, getLhs(), "lhs", 2)) ||
      failed(hasRank(*this, getRhs(), "rhs", 2)) ||
      failed(hasRank(*this, getOut(), "out", 3)))
    return failure();
  if (failed(verifyGemmTypes(*this, getLhs(), getRhs(), getScaleLhs(),
                             getScaleRhs(), "lhs", "rhs")))
    return failure();
  bool fp8 = getScaleLhs() != nullptr;
  if (fp8 != getTileRows().has_value())
    return emitOpError(fp8 ? "FP8 operands need tile_rows"
                           : "takes tile_rows only with FP8 operands");
  // FP8 operands are [P, N] and [Q, N]: each expert's rows contiguous.
  ArrayRef<int64_t> a = bufferOf(getLhs()).getShape(),
                    r = bufferOf(getRhs()).getShape(),
                    out = bufferOf(getOut()).getShape();
  int64_t n = fp8 ? a[1] : a[0], p = fp8 ? a[0] : a[1], q = fp8 ? r[0] : r[1];
  if ((fp8 ? r[1] : r[0]) != n)
    return emitOpError("lhs has ") << n << " rows, rhs " << (fp8 ? r[1] : r[0])
                                   << (fp8 ? " (FP8 operands transposed)" : "");
  if (failed(verifySizes(*this, getSizes(), out[0])) ||
      failed(hasShape(*this, getOut(), "out", {out[0], p, q})))
    return failure();
  if (!fp8)
    return success();
  if (isa<Float8E5M2Type>(bufferOf(getLhs()).getElementType()) &&
      isa<Float8E5M2Type>(bufferOf(getRhs()).getElementType()))
    return emitOpError("multiplies f8E5M2 by f8E5M2, which no FP8 GEMM does");
  Type outType = bufferOf(getOut()).getElementType();
  if (!outType.isF32() && !outType.isBF16())
    return emitOpError("FP8 operands write f32 or bf16, not ") << outType;
  if (failed(verifyTileRows(*this, *getTileRows())))
    return failure();
  return failure(failed(verifyGroupScales(*this, getScaleLhs(), out[0], n, p,
                                          *getTileRows(), "lhs")) ||
                 failed(verifyGroupScales(*this, getScaleRhs(), out[0], n, q,
                                          *getTileRows(), "rhs")));
}

//===----------------------------------------------------------------------===//
// GPU scratch: the sizes of dialects/sched/IR/ScratchLayout.h, from the
// operands' shapes (for operands that verify)
//===----------------------------------------------------------------------===//

namespace {
int64_t elementsOf(Value v) { return bufferOf(v).getNumElements(); }

std::optional<int64_t> attentionScratchBytes(Value q, Value k,
                                             AttentionAlgorithm algorithm,
                                             bool grad) {
  ArrayRef<int64_t> qs = bufferOf(q).getShape(), ks = bufferOf(k).getShape();
  if (qs.size() != 4 || ks.size() != 4)
    return 0;
  return scratch::bytesOf(scratch::attentionLayout(
      algorithm == AttentionAlgorithm::gemm_softmax, grad, qs[0], qs[1], qs[2],
      ks[1], bufferOf(q).getElementBytes()));
}

/// Over the rows of `input`'s last dimension.
std::optional<int64_t> normGradScratchBytes(Value input) {
  ArrayRef<int64_t> shape = bufferOf(input).getShape();
  int64_t dim = shape.empty() ? 0 : shape.back();
  int64_t rows = dim ? elementsOf(input) / dim : 0;
  return scratch::bytesOf(scratch::normGradLayout(rows, dim));
}

/// Statistics for each position of `labels`.
std::optional<int64_t> crossEntropyScratchBytes(Value labels) {
  return scratch::bytesOf(scratch::crossEntropyLayout(elementsOf(labels)));
}
} // namespace

std::optional<int64_t> AttentionOp::getScratchBytes() {
  return attentionScratchBytes(getQ(), getK(), getAlgorithm(), /*grad=*/false);
}
std::optional<int64_t> AttentionGradOp::getScratchBytes() {
  return attentionScratchBytes(getQ(), getK(), getAlgorithm(), /*grad=*/true);
}
std::optional<int64_t> ReduceOp::getScratchBytes() {
  int64_t outputs = elementsOf(getOut());
  int64_t reduced = outputs ? elementsOf(getInput()) / outputs : 0;
  return scratch::bytesOf(scratch::reduceLayout(outputs, reduced));
}
std::optional<int64_t> LayerNormGradOp::getScratchBytes() {
  return normGradScratchBytes(getInput());
}
std::optional<int64_t> RMSNormGradOp::getScratchBytes() {
  return normGradScratchBytes(getInput());
}
std::optional<int64_t> CrossEntropyOp::getScratchBytes() {
  return crossEntropyScratchBytes(getLabels());
}
std::optional<int64_t> RaggedAllToAllOp::getScratchBytes() {
  int64_t group = 1;
  if (auto mesh =
          SymbolTable::lookupNearestSymbolFrom<MeshOp>(*this, getMeshAttr()))
    for (StringRef axis : getAxes().getAsValueRange<StringAttr>())
      group *= std::max<int64_t>(mesh.axisSize(axis), 1);
  ArrayRef<int64_t> rows = bufferOf(getInput()).getShape();
  if (rows.size() != 2)
    return 0; // The verifier reports the shape.
  return scratch::bytesOf(scratch::raggedLayout(group, rows[0], rows[1]));
}
std::optional<int64_t> ExpertRouteOp::getScratchBytes() {
  // The group of the token axes (one rank when they name none or no mesh
  // declares them; the verifier reports that).
  int64_t group = 1;
  if (MeshOp mesh = meshOf(*this))
    for (StringRef axis : getTokenAxes().getAsValueRange<StringAttr>())
      group *= std::max<int64_t>(mesh.axisSize(axis), 1);
  ArrayRef<int64_t> indices = bufferOf(getIndices()).getShape();
  return scratch::bytesOf(scratch::expertRouteLayout(
      indices.size() == 2 ? indices[1] : 0, elementsOf(getCounts()), group));
}
std::optional<int64_t> CrossEntropyGradOp::getScratchBytes() {
  return crossEntropyScratchBytes(getLabels());
}
//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

namespace {
/// Checks that a strided walk over `sizes` from offset layout[0] (plus
/// `extra`) with strides layout[1..] stays inside `buffer`.
LogicalResult walkFits(Operation *op, StringRef name, Value buffer,
                       ArrayRef<int64_t> sizes, ArrayRef<int64_t> layout,
                       int64_t extra) {
  // The last element touched: offset + Σ (size_d - 1) * stride_d.
  std::optional<int64_t> last = llvm::checkedAdd(layout[0], extra);
  for (auto [size, stride] : llvm::zip(sizes, layout.drop_front())) {
    std::optional<int64_t> step = llvm::checkedMul(size - 1, stride);
    last = last && step ? llvm::checkedAdd(*last, *step) : std::nullopt;
  }
  int64_t elements = bufferOf(buffer).getNumElements();
  if (!last || *last >= elements)
    return op->emitOpError()
           << name << " [" << layout << "] over sizes [" << sizes << "]"
           << (extra ? " on the group's last rank" : "") << " reaches past the "
           << elements << " elements of its buffer";
  return success();
}
} // namespace

LogicalResult CopyOp::verify() {
  ArrayRef<int64_t> sizes = getSizes();
  if (llvm::any_of(sizes, [](int64_t x) { return x < 1; }))
    return emitOpError("sizes [") << sizes << "] must be positive";
  for (auto [name, value, layout] : {std::tuple{"src", getSource(), getSrc()},
                                     {"dst", getDest(), getDst()}}) {
    if (layout.size() != sizes.size() + 1)
      return emitOpError() << name << " must be [offset, " << sizes.size()
                           << " strides], has " << layout.size() << " entries";
    if (llvm::any_of(layout, [](int64_t x) { return x < 0; }))
      return emitOpError() << name << " [" << layout
                           << "] must not be negative";
    if (failed(walkFits(*this, name, value, sizes, layout, 0)))
      return failure();
  }
  if (getMesh().has_value() != getRankAxes().has_value() ||
      getMesh().has_value() != getRankStep().has_value())
    return emitOpError("by_rank needs a mesh, axes and a step");
  if (getRankStep() && *getRankStep() < 0)
    return emitOpError("by_rank step ") << *getRankStep() << " is negative";
  for (auto [size, stride] : llvm::zip(sizes, getDst().drop_front()))
    if (stride == 0 && size > 1)
      return emitOpError("dst stride 0 along a dimension of size ")
             << size << " writes one element several times";
  return success();
}

LogicalResult CopyOp::verifySymbolUses(SymbolTableCollection &symbols) {
  if (!getMesh())
    return success();
  FailureOr<int64_t> group =
      referencedGroupSize(*this, symbols, getMeshAttr(), *getRankAxes());
  if (failed(group))
    return failure();
  std::optional<int64_t> extra = llvm::checkedMul(*group - 1, *getRankStep());
  if (!extra)
    return emitOpError("by_rank offsets overflow");
  return walkFits(*this, "src", getSource(), getSizes(), getSrc(), *extra);
}

//===----------------------------------------------------------------------===//
// Communication
//===----------------------------------------------------------------------===//

LogicalResult CollectiveOp::verify() {
  bool reduces = getKind() == CollectiveKind::all_reduce ||
                 getKind() == CollectiveKind::reduce_scatter;
  if (reduces == (getReduction() == Reduction::none))
    return emitOpError() << stringifyCollectiveKind(getKind())
                         << (reduces ? " needs a reduction (sum, max, mean)"
                                     : " takes reduction 'none'");
  if (bufferOf(getInput()).getElementType() !=
      bufferOf(getOutput()).getElementType())
    return emitOpError("changes the element type from ")
           << bufferOf(getInput()).getElementType() << " to "
           << bufferOf(getOutput()).getElementType();
  return success();
}

LogicalResult CollectiveOp::verifySymbolUses(SymbolTableCollection &symbols) {
  FailureOr<int64_t> group =
      referencedGroupSize(*this, symbols, getMeshAttr(), getAxes());
  if (failed(group))
    return failure();
  int64_t g = *group, in = bufferOf(getInput()).getNumElements(),
          out = bufferOf(getOutput()).getNumElements();
  auto counts = [&](int64_t want, int64_t have) -> LogicalResult {
    if (want == have)
      return success();
    return emitOpError() << stringifyCollectiveKind(getKind())
                         << " over a group of " << g << " from " << in
                         << " elements needs an output of " << want << ", not "
                         << have;
  };
  switch (getKind()) {
  case CollectiveKind::all_reduce:
    return counts(in, out);
  case CollectiveKind::all_gather: {
    std::optional<int64_t> gathered = llvm::checkedMul(in, g);
    if (!gathered)
      return emitOpError("gathers more than 2^63 elements");
    return counts(*gathered, out);
  }
  case CollectiveKind::reduce_scatter:
  case CollectiveKind::all_to_all:
    if (in % g != 0)
      return emitOpError() << in << " elements do not split into " << g
                           << " blocks";
    return counts(getKind() == CollectiveKind::all_to_all ? in : in / g, out);
  }
  llvm_unreachable("unknown collective");
}

LogicalResult RaggedAllToAllOp::verify() {
  if (failed(hasRank(*this, getInput(), "input", 2)) ||
      failed(hasRank(*this, getOutput(), "output", 2)))
    return failure();
  for (auto [v, name] : {std::pair{getSendSizes(), "send_sizes"},
                         std::pair{getRecvSizes(), "recv_sizes"}})
    if (failed(isIntBuffer(*this, v, name)) ||
        failed(hasRank(*this, v, name, 1)))
      return failure();
  if (bufferOf(getInput()).getShape()[1] !=
          bufferOf(getOutput()).getShape()[1] ||
      bufferOf(getInput()).getElementType() !=
          bufferOf(getOutput()).getElementType())
    return emitOpError("output rows must be the input's: ")
           << bufferOf(getInput()) << " and " << bufferOf(getOutput());
  return verifyScratch(*this, getScratch(), getScratchBytes());
}

LogicalResult
RaggedAllToAllOp::verifySymbolUses(SymbolTableCollection &symbols) {
  FailureOr<int64_t> group =
      referencedGroupSize(*this, symbols, getMeshAttr(), getAxes());
  if (failed(group))
    return failure();
  for (auto [v, name] : {std::pair{getSendSizes(), "send_sizes"},
                         std::pair{getRecvSizes(), "recv_sizes"}})
    if (bufferOf(v).getNumElements() % *group != 0)
      return emitOpError("the group's ")
             << *group << " members do not divide the "
             << bufferOf(v).getNumElements() << " segments of " << name;
  return success();
}

namespace {
template <typename Op>
LogicalResult verifyPeer(Op op, SymbolTableCollection &symbols) {
  MeshOp mesh;
  if (failed(verifyMeshRef(op, symbols, op.getMeshAttr(), mesh)))
    return failure();
  int64_t size = mesh.axisSize(op.getAxis());
  if (size == 0)
    return op.emitOpError("mesh @")
           << mesh.getSymName() << " has no axis '" << op.getAxis() << "'";
  if (op.getDelta() % size == 0)
    return op.emitOpError("peer offset ")
           << op.getDelta() << " along '" << op.getAxis() << "' of size "
           << size << " is the rank itself";
  if (op.getTag() < 0)
    return op.emitOpError("tag ") << op.getTag() << " is negative";
  return success();
}
} // namespace

LogicalResult SendOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return verifyPeer(*this, symbols);
}

LogicalResult RecvOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return verifyPeer(*this, symbols);
}

LogicalResult RingShiftOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return verifyPeer(*this, symbols);
}

LogicalResult RingShiftOp::verify() {
  if (getInput().getType() != getOutput().getType())
    return emitOpError("output ") << getOutput().getType() << " is not input's "
                                  << getInput().getType();
  return success();
}

Value weft::sched::storageRoot(Value v) {
  while (auto view = v.getDefiningOp<ViewOp>())
    v = view.getSource();
  return v;
}

BufferAccess weft::sched::bufferAccess(Operation *op) {
  BufferAccess a;
  SmallVector<MemoryEffects::EffectInstance> effects;
  if (auto e = dyn_cast<MemoryEffectOpInterface>(op))
    e.getEffects(effects);
  for (MemoryEffects::EffectInstance &effect : effects)
    if (Value v = effect.getValue())
      (isa<MemoryEffects::Write>(effect.getEffect()) ? a.writes : a.reads)
          .insert(storageRoot(v));
  return a;
}

Operation *weft::sched::nextReader(Operation *op, Value buffer) {
  Value root = storageRoot(buffer);
  for (Operation *next = op->getNextNode(); next; next = next->getNextNode())
    if (isa<InstructionOpInterface>(next) &&
        bufferAccess(next).reads.contains(root))
      return next;
  return nullptr;
}

LogicalResult weft::sched::requireUnplanned(ProgramOp program, StringRef pass) {
  if (!program.isPlanned())
    return success();
  return program.emitOpError(pass)
         << " runs before memory planning (the program is planned)";
}
