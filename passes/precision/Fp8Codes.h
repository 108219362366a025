//===- Fp8Codes.h - FP8 quantizations kept as codes -------------*- C++ -*-===//
//
// Under FP8 storage (codegen's SchedTarget::fp8Storage, on for the cuda
// target) some quantized values live as their FP8 codes, one byte an
// element: the codes of a quantization only all-gathers read move and are
// decoded on arrival, and weft-gather-per-step's quantized state of a
// weight is held as the codes its gather moved. Two layers apply these
// rules: codegen's lowering (codegen/lowering/Fp8Storage.cpp), which makes
// the decision, and the cost model's report, which counts the bytes it
// moves and holds without lowering. So the rules are here, once.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_PASSES_PRECISION_FP8CODES_H
#define WEFT_PASSES_PRECISION_FP8CODES_H

#include "dialects/weft/IR/WeftOps.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringMap.h"

namespace weft {

/// Whether a maximum's blocks, `blocks` of them along a dimension of `whole`
/// elements, straddle the shards of `shard` elements that gathering that
/// dimension joins. One block spanning the dimension, or blocks that each
/// lie inside a shard, do not. weft-fp8-gather moves a gather after a
/// quantization only where no block straddles, and weft-gather-per-step
/// counts a state as held codes by the same rule.
inline bool blocksStraddleShards(int64_t whole, int64_t shard, int64_t blocks) {
  return blocks != 1 && shard % (whole / blocks) != 0;
}

/// Whether the all-gathers reading quantization `q` move its FP8 codes,
/// decoded on arrival: only all-gathers read its values, and they are
/// whole four-byte words (the collectives move words).
bool gathersFp8Codes(Fp8QuantizeOp q);

/// Whether `v` is the same on every rank of a group over mesh `axes`: a
/// max all-reduce over them (a shard's maximum all-reduced), an unsplit
/// parameter or a constant, or elementwise ops, views and copies of such
/// values (not a dropout; through weft-fusion-group's regions), a few ops
/// deep. A shard's own maxima are not. `seen` holds the values already
/// checked: a value read twice is walked once, so the walk is linear; any
/// but the first visit answers true (a false answer ends the walk).
bool sameOnEveryRank(mlir::Value v, mlir::ArrayAttr axes,
                     llvm::SmallPtrSetImpl<mlir::Value> &seen, int depth = 12);

/// The maxima that decode the FP8 codes `gather` moves (gathersFp8Codes of
/// its input): the quantization's own where every rank's are the same and
/// one block spans the gathered dimension, else an all-gather of them
/// along that dimension earlier in the block (weft-gather-per-step's for
/// its maxima state); null when the codes' gather must move them too.
mlir::Value decodingMaxima(AllGatherOp gather);

/// The state parameters (weft-gather-per-step's `<name>.fp8.gathered`) that
/// FP8 storage holds as FP8 codes, by name, with their format. Each is
/// assigned once, the all-gather of a quantization whose codes it moves
/// (gathersFp8Codes), and read only by quantizations of its format and
/// scales by the state its decoding maxima are assigned to: those read
/// back the codes it holds, since a quantization's values quantized again
/// by the same maxima are themselves.
llvm::StringMap<mlir::Type> fp8CodeStates(mlir::ModuleOp module);

} // namespace weft

#endif // WEFT_PASSES_PRECISION_FP8CODES_H
