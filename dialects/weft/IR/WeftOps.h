//===- WeftOps.h - weft graph ops -------------------------------*- C++ -*-===//

#ifndef WEFT_DIALECTS_WEFT_IR_WEFTOPS_H
#define WEFT_DIALECTS_WEFT_IR_WEFTOPS_H

#include "dialects/weft/IR/WeftDialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <algorithm>
#include <cmath>

#include "dialects/weft/IR/ShardingRule.h"

#include "dialects/weft/IR/WeftEnums.h.inc"

namespace weft {
/// A ranked tensor whose dimensions are all positive and whose byte size
/// (elements times element bytes) is at most 2^62, computed without
/// overflow: the type constraint of every weft value.
bool isSizedTensor(mlir::Type type);
} // namespace weft

#define GET_ATTRDEF_CLASSES
#include "dialects/weft/IR/WeftAttrs.h.inc"
#include "dialects/weft/IR/WeftInterfaces.h.inc"

#define GET_OP_CLASSES
#include "dialects/weft/IR/WeftOps.h.inc"

namespace weft {

/// Registers the weft dialect and the dialects its graphs use (func).
void registerWeftDialects(mlir::DialectRegistry &registry);

/// Attributes placement passes put on ops and functions (the dialect
/// verifies the first two wherever they appear):
///   weft.sharding      #weft.sharding per result / on an argument: how a
///                      global value splits (before weft-partition).
///   weft.vocab_axes    mesh axes splitting an embedding's or
///                      cross-entropy's vocabulary (after weft-partition).
///   weft.shard_of      on a local argument, result or parameter: the global
///                      tensor (split how) it is one rank's block of.
///   weft.zero_shard    on a parameter: its ZeRO storage split.
///   weft.tp_dim, weft.tp_unit
///                      on a parameter: the dimension tensor parallelism
///                      splits, in blocks of whole units (heads).
///   weft.optimizer_shard
///                      on a parameter: how its optimizer state and update
///                      are split across ranks (ZeRO-1/2; the plan sets it).
///   weft.grad_shard    on such a parameter: its gradient is reduced straight
///                      into that split (ZeRO-2's reduce-scatter), not whole.
///   weft.grad_elements on a parameter of a step: gradient elements a rank
///                      holds (the memory report reads it).
///   weft.layer         on a parameter: the transformer layer it belongs to
///                      (the frontends set it; pipeline stages are cut
///                      between layers).
///   weft.stage         on a parameter or an op: the pipeline stage that
///                      holds or runs it (weft-pipeline-assign-stages; the
///                      gradient ops autodiff builds run on their forward
///                      op's stage). Ops without one depend on no stage's
///                      values and are copied to every stage that uses
///                      them.
///   weft.grad_of       on an op of a training step: per result, the name of
///                      the parameter it is the gradient of ("" for none);
///                      weft-optimizer-adamw writes it, weft-partition-
///                      optimizer reads and removes it.
inline constexpr const char *kShardingAttr = "weft.sharding";
inline constexpr const char *kVocabAxesAttr = "weft.vocab_axes";
/// On a weft.expert_route of a partitioned program: the mesh axes its
/// tokens are split over, across which it agrees on the kept pairs.
inline constexpr const char *kTokenAxesAttr = "weft.token_axes";
inline constexpr const char *kShardOfAttr = "weft.shard_of";
inline constexpr const char *kZeroShardAttr = "weft.zero_shard";
inline constexpr const char *kTpDimAttr = "weft.tp_dim";
/// On a weft.param: its dimension of experts, which expert parallelism
/// splits over ep (the frontends set it on stacked expert weights).
inline constexpr const char *kExpertDimAttr = "weft.expert_dim";
inline constexpr const char *kTpUnitAttr = "weft.tp_unit";
/// On a weft.expert_route with a capacity: the capacity factor the frontend
/// derived it from (capacity = max(1, ceil(factor * pairs / experts))), so
/// weft-rebatch gives the capacity a frontend gives at another batch.
inline constexpr const char *kCapacityFactorAttr = "weft.capacity_factor";
/// The capacity `factor` gives `pairs` routing pairs over `experts`
/// (Switch / GShard): max(1, ceil(factor * pairs / experts)). The frontend
/// and weft-rebatch both compute it here, so they round alike.
inline int64_t expertCapacity(double factor, int64_t pairs, int64_t experts) {
  return std::max<int64_t>(1, static_cast<int64_t>(std::ceil(
                                  factor * double(pairs) / double(experts))));
}
inline constexpr const char *kOptimizerShardAttr = "weft.optimizer_shard";
inline constexpr const char *kGradShardAttr = "weft.grad_shard";
/// On a weft.param: checkpoints (Hugging Face's shapes) hold only its first
/// N rows; the rest pads it (a vocabulary made divisible by tp).
inline constexpr const char *kCheckpointRowsAttr = "weft.checkpoint_rows";
/// On a weft.param: checkpoints hold it in this shape (same elements, same
/// order): GPT-2's fused c_attn [d, 3d] held as [d, 3, d] so that tp splits
/// it by heads.
inline constexpr const char *kCheckpointShapeAttr = "weft.checkpoint_shape";
/// On a weft.param [N, ...]: checkpoints hold it as N tensors [...], slice
/// j named by this pattern with its `*` replaced by j (Mixtral's experts
/// stacked into one parameter that ep splits, stored per expert as
/// Hugging Face does).
inline constexpr const char *kCheckpointStackAttr = "weft.checkpoint_stack";
/// On a state weft.param: no step reads the value an earlier step left
/// (a gradient accumulator or micro-batch counter the step zeroes, a
/// ZeRO-3 gather refilled before use), so checkpoints skip it.
inline constexpr const char *kTransientAttr = "weft.transient";
/// On a transient state weft.param: the health metric it holds after a
/// step (weft-probes), and how a step's micro-batches fold into it
/// ("mean", "rms", "max", "max_over_mean" or "last").
inline constexpr const char *kProbeAttr = "weft.probe";
inline constexpr const char *kProbeFoldAttr = "weft.probe_fold";
inline constexpr const char *kGradElementsAttr = "weft.grad_elements";
inline constexpr const char *kGradOfAttr = "weft.grad_of";
inline constexpr const char *kLayerAttr = "weft.layer";
/// On weft.fp8_quantize_grad after partitioning: the mesh axes that split a
/// dimension its blocks span, and the mesh (the gradient's block maxima
/// max-reduce over them).
inline constexpr const char *kAmaxAxesAttr = "weft.amax_axes";
inline constexpr const char *kAmaxMeshAttr = "weft.amax_mesh";
/// On a weft.fp8_quantize or weft.fp8_quantize_grad with a backward_block,
/// after partitioning: the axes that split a dimension one of those blocks
/// spans (the backward re-quantization's maxima max-reduce over them, on
/// the mesh of kAmaxMeshAttr).
inline constexpr const char *kBackwardAmaxAxesAttr = "weft.backward_amax_axes";
/// On a weft.fp8_quantize that a backward GEMM's re-quantization made
/// (weft-autodiff, from a backward_block): GEMMs that need the same one
/// share it.
inline constexpr const char *kFp8BackwardAttr = "weft.fp8_backward";
/// Delayed scaling: on a weft.fp8_amax, the state parameter (an amax
/// history) its value is recorded into after the step; on a
/// weft.fp8_quantize_grad, the same for its gradient's maximum.
inline constexpr const char *kAmaxHistoryAttr = "weft.amax_history";

/// The grid of FP8 blocks of `block` sizes over `shape` (each divides).
inline llvm::SmallVector<int64_t> fp8Grid(llvm::ArrayRef<int64_t> shape,
                                          llvm::ArrayRef<int64_t> block) {
  llvm::SmallVector<int64_t> grid;
  for (auto [size, b] : llvm::zip(shape, block))
    grid.push_back(size / b);
  return grid;
}

/// The dimensions each backward GEMM of a weft.matmul contracts, as its
/// gradient rule builds them: the input gradient dC op(B)^T contracts `rhs`
/// and `grad` (dC) along n; the weight gradient op(A)^T dC contracts `lhs`
/// and `weightGrad` (dC again) along m, and along the batch too when B, a
/// weight shared by it, lets one GEMM sum over it. weft-fp8 gives each
/// quantized operand the blocks these need (backward_block).
struct MatmulBackwardDims {
  llvm::SmallVector<int64_t> lhs, rhs, grad, weightGrad;
};
MatmulBackwardDims matmulBackwardDims(MatmulOp op);

/// Delayed scaling's block maxima: `history` (the largest of earlier
/// steps, 0 before any) where it is positive, else `current`.
mlir::Value delayedAmax(mlir::OpBuilder &b, mlir::Location loc,
                        mlir::Value current, mlir::Value history);
/// Dynamic loss scaling (weft-autodiff's loss-scale): the state parameter
/// holding the scale over its initial value, and that parameter's
/// attributes: the initial scale (f64) and the clean steps before it
/// doubles (i64).
inline constexpr const char *kLossScaleParam = "loss_scale";
inline constexpr const char *kLossScaleAttr = "weft.loss_scale";
inline constexpr const char *kLossScaleWindowAttr = "weft.loss_scale_window";
/// With loss scaling, the optimizer step's state: the steps it applied
/// (Adam's bias correction counts them, not skipped ones) and the clean
/// steps since the scale last moved.
inline constexpr const char *kOptimizerStepParam = "optimizer_step";
/// The training step dropout masks are drawn for (an f32 scalar state
/// parameter the model declares when it has dropout; the optimizer step
/// adds 1 to it).
inline constexpr const char *kDropoutStepParam = "dropout_step";
/// The state parameter weft-accumulate-gradients adds when @accumulate has
/// dropout: the micro-batch of the step it runs (weft.dropout's
/// `microbatch`).
inline constexpr const char *kDropoutMicrobatchParam = "dropout_microbatch";
inline constexpr const char *kLossScaleGoodStepsParam = "loss_scale_good_steps";
/// On the forward and the programs made from it (weft-fp8): the recipe,
/// how many GEMMs it quantized, and [FP8 bytes, bf16 bytes] of those GEMMs'
/// operands (x, w, output gradient; FP8 with their f32 scales), whole.
inline constexpr const char *kFp8Attr = "weft.fp8";
inline constexpr const char *kFp8GemmsAttr = "weft.fp8_gemms";
inline constexpr const char *kFp8BytesAttr = "weft.fp8_bytes";
/// With a device to judge on: the GEMMs the recipe could quantize that
/// stayed in the model's precision because FP8 would not gain there, as
/// the names of the weights they read (one per GEMM).
inline constexpr const char *kFp8NoGainAttr = "weft.fp8_no_gain";
/// On a training step (weft-recompute): per layer, the bytes of forward
/// values the backward reads.
inline constexpr const char *kActivationBytesAttr = "weft.activation_bytes";
/// The same values under Korthikanti et al.'s accounting (2 bytes an
/// element, a 1-byte mask per dropout, no log-sum-exp), and apart, per
/// layer, their attention core: the softmax output (2 bytes), with
/// attention dropout its mask (1) and output (2), per score.
inline constexpr const char *kKorthikantiBytesAttr = "weft.korthikanti_bytes";
inline constexpr const char *kKorthikantiCoreBytesAttr =
    "weft.korthikanti_core_bytes";
/// On a training step: the weft-recompute policy it was rewritten by.
inline constexpr const char *kRecomputeAttr = "weft.recompute";
/// On a training step (weft-recompute): the FLOPs its recomputation adds
/// (f64; matrix FLOPs of GEMMs and attention, one per element elsewhere).
inline constexpr const char *kRecomputeFlopsAttr = "weft.recompute_flops";
/// The same per layer (array<f64>, a layer's ops' clones), what the
/// budget search adds up.
inline constexpr const char *kRecomputeLayerFlopsAttr =
    "weft.recompute_layer_flops";
/// On a weft.constant [S] of i32: the positions of the sequence the program
/// holds, which context parallelism reorders (weft-apply-plan).
inline constexpr const char *kPositionsAttr = "weft.positions";
/// On a token input [B, S]: its sequence is held in context parallelism's
/// load-balanced order of this many chunks (2 cp): chunks i and 2cp - 1 - i
/// (of the natural order) are rank i's block. The runtime reorders each
/// row so before cutting its block.
inline constexpr const char *kSequenceChunksAttr = "weft.sequence_chunks";
inline constexpr const char *kStageAttr = "weft.stage";

/// Puts the ops after `after` (null: from the start of `end`'s block) and
/// before `end` that have no `weft.stage` on `stage`; nothing for a null
/// stage. Passes that build ops for a staged op (autodiff's gradient
/// rules, gradient accumulation) run them where that op runs.
inline void placeOnStage(mlir::Operation *after, mlir::Operation *end,
                         mlir::Attribute stage) {
  if (!stage)
    return;
  for (mlir::Operation *op = after ? after->getNextNode()
                                   : &end->getBlock()->front();
       op != end; op = op->getNextNode())
    if (!op->hasAttr(kStageAttr))
      op->setAttr(kStageAttr, stage);
}

/// Checks the `weft.param`s and `weft.assign`s of `block` together: unique
/// parameter names, every assign naming a parameter of its type. Run once
/// per block (by its first parameter's verifier).
mlir::LogicalResult verifyParamsAndAssigns(mlir::Block *block);

/// The `weft.sharding` of a function argument or op result, or null.
ShardingAttr getSharding(mlir::Value value);
/// Sets the `weft.sharding` of a function argument or op result (an op's
/// other results keep theirs, or become replicated).
void setSharding(mlir::Value value, ShardingAttr sharding);

/// Returns true if `type` is an element type weft computes in floating point.
bool isWeftFloat(mlir::Type type);

/// The `weft.fp8_quantize` that `v` is, or is read from through reshapes,
/// casts and all-gathers;
/// null if none. Such an operand is what FP8 storage may keep as FP8 codes
/// and scales (codegen's Fp8Storage), when its blocks are a scale mode's.
Fp8QuantizeOp fp8GemmOperandOf(mlir::Value v);

/// Whether `func` reads an integer tensor (token ids, labels, routing
/// positions): values the device checks as it runs, so that a step they
/// fail must leave every parameter as it was.
bool readsCheckedData(mlir::Operation *func);

/// The parameter P whose storage the `weft.fused` or `weft.all_gather`
/// result `result` may be computed into, in place of an arena buffer and
/// an assign at the step's end: the result's one user assigns it to P, the
/// types match, the function reads no checked data (`readsChecked`, from
/// readsCheckedData), and P's value is read by that fused op alone (no
/// later reader wants the old value and no other stream reads it; the
/// kernel reads each element before it writes it) or, for a gather, by no
/// op of the function. The optimizer's update of each parameter and moment
/// so needs no arena: without it every new value is held until the step
/// ends, 12 bytes a parameter with Adam; nor does weft-gather-per-step's
/// @gather, which would hold every gathered parameter until its end. Null
/// otherwise. weft-lower-to-sched asks.
ParamOp inPlaceParam(mlir::OpResult result, bool readsChecked);

} // namespace weft

#endif // WEFT_DIALECTS_WEFT_IR_WEFTOPS_H
