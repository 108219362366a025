//===- Lowering.h - weft -> sched, shared by the op families ---*- C++ -*-===//
//
// The conversion of planned `weft` programs into `sched` programs is one
// file per op family (Movement, Matmul, Attention, Library, Collectives,
// Fused), as Triton's conversions are. Each family registers a function per
// op in a LoweringTable; the driver (LowerToSched.cpp) walks a function in
// order and calls them with a ProgramLowering, which owns the map from weft
// values to the buffers that hold them and the one decision every family
// shares: which operands a target's kernels read as stored and which
// through an f32 copy.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_CODEGEN_LOWERING_LOWERING_H
#define WEFT_CODEGEN_LOWERING_LOWERING_H

#include "dialects/sched/IR/SchedOps.h"
#include "dialects/weft/IR/WeftOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringMap.h"

#include <functional>
#include <map>
#include <optional>

namespace weft::codegen {

/// The machine a bundle is lowered for.
struct SchedTarget {
  bool cuda = false;
  /// Attention materialises its scores when they take at most this many
  /// bytes of scratch (gemm_softmax), else runs FlashAttention's kernels.
  int64_t attentionScratchBytes = int64_t(4) << 30;
  /// FP8 GEMM operands kept as FP8 codes and scales (Fp8Storage.cpp), as
  /// cuBLASLt multiplies them; else as their dequantized values.
  bool fp8Storage = false;

  /// Arena offsets are multiples of this (cuBLASLt wants 256-byte
  /// operands; 64 is a cache line).
  int64_t alignment() const { return cuda ? 256 : 64; }
  /// Whether `op` reads (`operand`) or writes its narrow float value `v`
  /// as it is stored. Otherwise it gets an f32 copy: the CPU runtime's
  /// kernels compute in f32 only; the GPU's generated kernels, GEMMs,
  /// attention, reductions, bf16 cross-entropy and all-bf16 norm gradients
  /// read bf16 as stored.
  bool keepsStored(mlir::Operation *op, mlir::Value v, bool operand) const;
};

/// A GEMM operand held as FP8 codes (Fp8Storage.cpp): the codes, in the
/// operand's layout or transposed, and the one-f32 factor 1 / s.
struct Fp8Operand {
  mlir::Value codes, scaleInv;
  /// How scaleInv scales the operand (WEFT_FP8_SCALE_* of
  /// runtime/support/Fp8Scaling.h): one f32, per row, 1 x 128 or 128 x 128.
  int scaleMode = 0;
};

/// A GEMM reading an FP8-stored value: which, as its lhs or rhs, and
/// whether cuBLASLt's k-contiguous layout is the value transposed.
struct Fp8GemmUse {
  mlir::Operation *matmul = nullptr;
  bool lhs = false;
  bool transposed = false;
  /// The weft.all_gather between the quantization and the GEMM, if any
  /// (weft-fp8-gather's): the codes are gathered, not the values.
  weft::AllGatherOp gather;
  /// How the operand's scales go to cuBLASLt (WEFT_FP8_SCALE_*).
  int scaleMode = 0;
};

/// How a weft.fp8_quantize lowers to FP8 codes: each GEMM
/// operand reading it (the quantization's result, a reshape of it, or a
/// gather of that) and the reshapes and gathers between, which the
/// quantization's lowering stands in for.
struct Fp8Plan {
  llvm::SmallVector<std::pair<mlir::Value, Fp8GemmUse>> uses;
  llvm::SmallVector<mlir::Operation *> views;
  /// Whether the dequantized values are written too, for readers that are
  /// no GEMM on codes (an expert weight gradient reading a quantization
  /// without group_rows, which weft-fp8 never makes).
  bool keepValues = false;
  /// The casts of the quantized shard its gathers read, by whether
  /// transposed and scale mode: lowerFp8Cast makes them where the
  /// quantization is, lowerFp8Gather gathers them where each gather is.
  std::map<std::pair<bool, int>, Fp8Operand> shardCasts;
};

/// Lowers one weft function into one sched program.
class ProgramLowering {
public:
  ProgramLowering(sched::ProgramOp program, const SchedTarget &target,
                  mlir::FlatSymbolRefAttr mesh);

  mlir::OpBuilder &builder() { return b; }
  const SchedTarget &target() const { return tgt; }
  /// The module's sched.mesh (null without one).
  mlir::FlatSymbolRefAttr mesh() const { return meshRef; }
  /// How many ranks differ only along `axes` of the mesh.
  int64_t groupSize(mlir::ArrayAttr axes);
  mlir::MLIRContext *context() { return b.getContext(); }

  /// The buffer holding weft value `v`, as stored.
  mlir::Value stored(mlir::Value v) const;
  /// `v` as the instruction lowering `op` reads it: stored, or an f32 copy
  /// made just before (the target computes in f32). With `f32`, always f32.
  mlir::Value read(mlir::Operation *op, mlir::Value v, bool f32 = false);
  /// A new buffer for result `r` of `op`: as stored, or an f32 one whose
  /// value finish() narrows into the stored buffer after the instruction.
  mlir::Value write(mlir::Operation *op, mlir::Value r, bool f32 = false);
  /// A new buffer for result `r` as stored (data movement, which handles
  /// every type).
  mlir::Value define(mlir::Value r);
  /// The same holding `elementType` (FP8 codes standing for a quantized
  /// value's); in place (computeInto) the storage's own.
  mlir::Value defineAs(mlir::Value r, mlir::Type elementType);
  /// Emits the narrowing copies write() promised; the driver calls it after
  /// each op's lowering.
  void finish();

  /// Result `r` lives in `buffer` (a view: no instruction).
  void bind(mlir::Value r, mlir::Value buffer);
  /// Result `r` is computed into `storage` (a parameter's, in place: see
  /// weft::inPlaceParam): define() and write() use it instead of a new
  /// buffer.
  void computeInto(mlir::Value r, mlir::Value storage) { inPlace[r] = storage; }
  /// The weft op being lowered: the buffers made for it carry its location,
  /// so the memory plan's errors point at the user's line.
  void setOrigin(mlir::Location loc) { origin = loc; }
  /// A fresh arena buffer (unplanned).
  mlir::Value alloc(llvm::ArrayRef<int64_t> shape, mlir::Type elementType);
  /// On the cuda target, gives `instr`, which lowers `op`, the scratch its
  /// operands' shapes need there (ScratchOpInterface::getScratchBytes, from
  /// dialects/sched/IR/ScratchLayout.h): an f32 arena buffer of at least
  /// that many bytes just before it, or none for 0; fails, with a
  /// diagnostic on `op`, when the size overflows int64. The CPU's kernels
  /// need none.
  mlir::LogicalResult addGpuScratch(mlir::Operation *op,
                                    sched::ScratchOpInterface instr);
  /// Bytes [offset, ...) of `buffer` seen as a buffer of `shape` x `type`.
  mlir::Value view(mlir::Value buffer, int64_t offsetBytes,
                   llvm::ArrayRef<int64_t> shape, mlir::Type elementType);
  /// Copies (converting) every element of `from` into `to`.
  void copyAll(mlir::Location loc, mlir::Value from, mlir::Value to);

  /// The buffer type of a weft tensor type.
  static sched::BufferType bufferType(mlir::Type tensorType);

  /// FP8 storage (Fp8Storage.cpp): quantization `op` lowers by `plan`.
  void planFp8Cast(mlir::Operation *op, Fp8Plan plan);
  const Fp8Plan *fp8Plan(mlir::Operation *op) const;
  Fp8Plan *fp8Plan(mlir::Operation *op);
  /// The quantization whose FP8 codes all-gather `gather` moves (a gather
  /// in its plan), or null.
  mlir::Operation *fp8GatherSource(mlir::Operation *gather) const {
    return fp8GatherSources.lookup(gather);
  }
  /// `gather` moves quantization `q`'s FP8 codes and decodes them, for
  /// readers of the gathered values (planFp8Storage).
  void planFp8DecodedGather(mlir::Operation *gather, mlir::Operation *q) {
    fp8DecodedGathers[gather] = q;
    fp8EncodedCodes.try_emplace(q, mlir::Value());
  }
  /// Whether quantization `q` lowers to the codes its decoded gathers move
  /// (its values unwritten); `codes` is where, once lowered.
  bool fp8Encoded(mlir::Operation *q) const { return fp8EncodedCodes.count(q); }
  mlir::Value &fp8Codes(mlir::Operation *q) { return fp8EncodedCodes[q]; }
  /// The quantization whose codes `gather` moves and decodes, or null.
  mlir::Operation *fp8DecodedGatherSource(mlir::Operation *gather) const {
    return fp8DecodedGathers.lookup(gather);
  }
  /// The states FP8 storage holds as FP8 codes (weft::fp8CodeStates).
  void setFp8CodeStates(const llvm::StringMap<mlir::Type> *states) {
    codeStates = states;
  }
  /// Whether state `name` is held as FP8 codes.
  bool heldAsFp8Codes(llvm::StringRef name) const {
    return codeStates && codeStates->count(name);
  }
  /// The codes of such a state, when `v` is a read of one; else null.
  mlir::Value fp8StateCodes(mlir::Value v) const;
  /// Whether `op` lowers to nothing (a reshape of FP8 codes, an entropy
  /// its attention computes).
  bool elided(mlir::Operation *op) const { return elidedOps.contains(op); }
  /// `op` was lowered with another op's instruction: the driver skips it.
  void elide(mlir::Operation *op) { elidedOps.insert(op); }
  /// GEMM operand `v` in FP8, as stored or `transposed`; null if it is not.
  const Fp8Operand *fp8Operand(mlir::Value v, bool transposed) const;
  void setFp8Operand(mlir::Value v, bool transposed, Fp8Operand operand);

private:
  sched::ProgramOp program;
  mlir::OpBuilder b;
  const SchedTarget &tgt;
  mlir::FlatSymbolRefAttr meshRef;
  llvm::DenseMap<mlir::Value, mlir::Value> buffers;
  llvm::DenseMap<mlir::Value, mlir::Value> inPlace; // computeInto's.
  std::optional<mlir::Location> origin;
  struct Narrowing {
    mlir::Location loc;
    mlir::Value wide, stored;
  };
  llvm::SmallVector<Narrowing> pending;
  llvm::DenseMap<mlir::Operation *, Fp8Plan> fp8Plans;
  llvm::DenseMap<mlir::Operation *, mlir::Operation *> fp8GatherSources;
  llvm::DenseMap<mlir::Operation *, mlir::Operation *> fp8DecodedGathers;
  llvm::DenseMap<mlir::Operation *, mlir::Value> fp8EncodedCodes;
  llvm::DenseSet<mlir::Operation *> elidedOps;
  const llvm::StringMap<mlir::Type> *codeStates = nullptr;
  /// By value and whether transposed (0 or 1).
  llvm::DenseMap<std::pair<mlir::Value, unsigned>, Fp8Operand> fp8Operands;
};

/// Lowers one op; emits a diagnostic and fails on what it cannot express.
using LowerFn =
    std::function<mlir::LogicalResult(mlir::Operation *, ProgramLowering &)>;
using LoweringTable = llvm::DenseMap<mlir::TypeID, LowerFn>;

/// Registers `fn` as the lowering of ops of class `OpTy`.
template <typename OpTy>
void addLowering(LoweringTable &table,
                 mlir::LogicalResult (*fn)(OpTy, ProgramLowering &)) {
  table[mlir::TypeID::get<OpTy>()] = [fn](mlir::Operation *op,
                                          ProgramLowering &lowering) {
    return fn(mlir::cast<OpTy>(op), lowering);
  };
}

void populateMovementLowerings(LoweringTable &table);
void populateMatmulLowerings(LoweringTable &table);
void populateAttentionLowerings(LoweringTable &table);
void populateLibraryLowerings(LoweringTable &table);
void populateCollectiveLowerings(LoweringTable &table);
void populateFusedLowerings(LoweringTable &table);

/// Lowers `op`'s exchange from buffer `in` (this rank's block) into `out`
/// (the whole tensor), of any element type: one all-gather, and an unpack
/// when the gathered dimension is not the outermost.
void gatherInto(ProgramLowering &l, weft::AllGatherOp op, mlir::Value in,
                mlir::Value out);
/// The same for a tensor of shape `whole` gathered along `dim` over `axes`
/// (a gathered FP8 operand's codes or scales, in the GEMM's layout).
void gatherInto(ProgramLowering &l, mlir::Location loc, mlir::ArrayAttr axes,
                llvm::ArrayRef<int64_t> whole, int64_t dim, mlir::Value in,
                mlir::Value out);

/// Plans which of `f`'s FP8 quantizations `l` keeps as FP8 codes and
/// scales for FP8 GEMMs (cuBLASLt's or Weft's kernel), and in which scale
/// mode each GEMM reads them (Fp8Storage.cpp).
void planFp8Storage(mlir::func::FuncOp f, ProgramLowering &l);
/// Lowers an expert weight gradient's quantization `op` to FP8 codes
/// (sched.fp8_group_cast, the operand of an FP8 grouped_matmul_wgrad) when
/// FP8 storage is on and its every reader can multiply them; false when it
/// keeps the values path.
bool lowerFp8GroupCast(weft::Fp8GroupQuantizeOp op, ProgramLowering &l);
/// Lowers quantization `op` by its plan: sched.fp8_cast per layout (of a
/// state held as FP8 codes, those codes with sched.fp8_scale_inv's scales
/// where a layout has them).
mlir::LogicalResult lowerFp8Cast(weft::Fp8QuantizeOp op, Fp8Plan &plan,
                                 ProgramLowering &l);
/// Lowers quantization `op`'s values, when its input is a state held as
/// FP8 codes (ProgramLowering::fp8StateCodes), to the decode of the codes;
/// false for any other input.
bool lowerFp8StateValues(weft::Fp8QuantizeOp op, ProgramLowering &l);
/// Lowers an all-gather of a quantization's FP8 codes (fp8GatherSource):
/// the codes its plan cast gathered, with their scales, for the GEMMs
/// reading the gathered value.
mlir::LogicalResult lowerFp8Gather(weft::AllGatherOp gather,
                                   ProgramLowering &l);
/// The FP8 codes of quantization `q` (its blocks' scales), which its
/// decoded gathers move.
mlir::Value lowerFp8Encode(weft::Fp8QuantizeOp q, ProgramLowering &l);
/// Lowers an all-gather of a quantization's codes `codes` read as values:
/// the codes gathered, then decoded with the whole tensor's maxima.
mlir::LogicalResult lowerFp8DecodedGather(weft::AllGatherOp gather,
                                          mlir::Value codes,
                                          ProgramLowering &l);
/// The FP8 codes Fp8Storage planned for GEMM `op`'s operands `lhs` and
/// `rhs`, each read k-contiguous (`lhsTransposed`, `rhsTransposed`: that
/// layout is the value transposed): both, neither (two nulls), or failure
/// with an error on `op` for one alone.
mlir::FailureOr<std::pair<const Fp8Operand *, const Fp8Operand *>>
fp8OperandPair(mlir::Operation *op, const ProgramLowering &l, mlir::Value lhs,
               bool lhsTransposed, mlir::Value rhs, bool rhsTransposed);
/// The `scale_modes` of a GEMM on FP8 operands `a` and `b`; null where
/// both are per tensor (the default).
mlir::ArrayAttr fp8ScaleModes(mlir::Builder &b, const Fp8Operand &a,
                              const Fp8Operand &c);

/// Row-major strides of `shape`, in elements.
llvm::SmallVector<int64_t> rowMajorStrides(llvm::ArrayRef<int64_t> shape);
/// The mesh axes of a `weft.vocab_axes` attribute on `op` (empty: none).
mlir::ArrayAttr vocabAxes(mlir::Operation *op);

} // namespace weft::codegen

#endif // WEFT_CODEGEN_LOWERING_LOWERING_H
