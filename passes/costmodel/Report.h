//===- Report.h - per-rank memory and communication estimate ----*- C++ -*-===//
//
// What `weftc compile --report` prints: for every rank of a placed training
// step, the bytes it holds for parameters, gradients and optimizer state,
// the peak of its step arena (the memory plan), and the bytes it sends per
// step in collectives.
//
// Bytes per parameter follow mixed-precision Adam as ZeRO counts them
// (Rajbhandari et al.): the compute-precision parameter (2 bytes in bf16,
// 4 in f32), its gradient in the same precision, and optimizer state of
// 8 bytes (fp32 momentum and variance) plus a 4-byte fp32 master when the
// compute precision is not f32. Which of them a rank holds whole and which
// as 1/N comes from the placed program: tensor-parallel and ZeRO-3 splits
// of the parameter, the shape of its Adam state (ZeRO-1/2), and whether its
// gradient was reduce-scattered (ZeRO-2). Collectives count ring traffic
// by CostModel.h's collectiveSendBytes: an all-reduce sends 2(n-1)/n of its
// bytes, an all-gather (n-1)/n of its result, a reduce-scatter and an
// all-to-all (n-1)/n of their operand. With micro-batches the gradients are
// their accumulators, the arena the larger of @accumulate's and @step's (a
// rank's programs share one), and @accumulate's collectives count once per
// micro-batch. A pipelined step (weft-pipeline-split) is estimated per pp
// rank from its own step and stage programs: the largest of their arenas,
// sends once per micro-batch, and the forward's stash times the
// micro-batches the schedule keeps in flight.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_PASSES_COSTMODEL_REPORT_H
#define WEFT_PASSES_COSTMODEL_REPORT_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/JSON.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace weft {

struct RankEstimate {
  int64_t rank = 0;
  int64_t paramBytes = 0, gradBytes = 0, optimizerBytes = 0;
  int64_t activationBytes = 0, commBytes = 0;
  /// Pipelines: the stash one micro-batch leaves on this rank (summed over
  /// its virtual stages), and the most micro-batches the schedule keeps in
  /// flight here (GPipe: all; 1F1B: up to pp - rank).
  int64_t stashBytes = 0, inFlight = 0;
  /// With zb-h1: what one micro-batch's B hands its W, and the most
  /// micro-batches between the two at once.
  int64_t weightStashBytes = 0, awaitingW = 0;

  /// What the rank holds at its peak: parameters, gradients, optimizer
  /// state and activations.
  int64_t totalBytes() const {
    return paramBytes + gradBytes + optimizerBytes + activationBytes;
  }
};

/// A pipelined step's schedule and its bubble: idle over compute time, by
/// the published formula and by simulating the table with uniform stages.
struct PipelineEstimate {
  std::string schedule;
  int64_t ranks = 1, microbatches = 1, chunks = 1;
  double formulaBubble = 0, simulatedBubble = 0;
  /// Per pipeline rank (`rank` is the pp coordinate): what each of the
  /// `ranksPerStage` ranks (its dp × tp group) holds.
  std::vector<RankEstimate> stages;
  int64_t ranksPerStage = 1;
};

struct PlacementReport {
  int64_t parameters = 0; // Ψ: elements of every model parameter, whole.
  std::vector<RankEstimate> ranks;
  std::optional<PipelineEstimate> pipeline;
  /// The training step's recompute policy (weft-recompute) and, per layer,
  /// the activation bytes a rank keeps for the backward of one
  /// micro-batch (under pp the whole model's, which each stage's backward
  /// records); empty when no program records them.
  std::string recompute;
  std::vector<int64_t> layerActivationBytes;
  /// The FP8 recipe (weft-fp8; empty without one), its GEMMs, and the
  /// bytes their operands take in FP8 (with scales) and in bf16, for the
  /// whole model's step.
  std::string fp8;
  int64_t fp8Gemms = 0, fp8Bytes = 0, fp8Bf16Bytes = 0;
  /// The GEMMs the recipe could take that stayed because FP8 would not
  /// gain on the device they were judged on (--fp8-min-dim auto with a
  /// topology): the weights they read, each layer index as `*`
  /// (model.layers.*.self_attn.k_proj.weight), with how many GEMMs each, in
  /// the model's order; none judged: nullopt.
  std::optional<std::vector<std::pair<std::string, int64_t>>> fp8NoGain;
  /// How many GEMMs fp8NoGain counts.
  int64_t fp8NoGainGemms() const;

  /// {"parameters": Ψ, "ranks": [{"rank", "param_bytes", "grad_bytes",
  /// "optimizer_bytes", "activation_bytes", "comm_bytes"}...], with a
  /// recompute policy also "recompute" and "layer_activation_bytes", with
  /// an FP8 recipe "fp8": {"recipe", "gemms", "fp8_bytes", "bf16_bytes"}}
  llvm::json::Object toJSON() const;
  /// A table, one row per rank, sizes in MiB / GiB.
  std::string table() const;
};

/// Estimates every rank of `module`'s planned @step (after
/// buildTrainingPrograms); fails if there is none. With `fp8Codes` (the
/// programs lower with FP8 storage), a gather of quantized values that
/// storage moves as FP8 codes counts one byte an element.
mlir::FailureOr<PlacementReport> estimatePlacement(mlir::ModuleOp module,
                                                   bool fp8Codes = false);

struct Topology;

/// "rank R needs X GiB, more than the Y GiB of a T device: activations A
/// GiB, optimizer state B GiB, ..." (the items largest first, the device's
/// runtime reserve among them) when rank `r` does not fit a device of
/// `topology`; empty when it does or the topology gives no memory.
std::string overMemory(const RankEstimate &r, const Topology &topology);

} // namespace weft

#endif // WEFT_PASSES_COSTMODEL_REPORT_H
