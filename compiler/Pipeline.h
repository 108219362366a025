//===- Pipeline.h - named compiler pipelines --------------------*- C++ -*-===//

#ifndef WEFT_COMPILER_PIPELINE_H
#define WEFT_COMPILER_PIPELINE_H

#include "passes/optimizer/Passes.h"
#include "passes/precision/Passes.h"
#include "passes/recompute/Passes.h"
#include "passes/sharding/Passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"
#include "llvm/Support/JSON.h"

namespace weft {

struct TrainingOptions {
  AdamWConfig adamw;
  /// Also keep @train_step (loss and every gradient) as a program, so tests
  /// can compare gradients with the reference evaluator.
  bool keepGradients = false;
  /// How to place the model on ranks (empty: one rank).
  Plan plan;
  /// Largest gradient all-reduce bucket (weft-bucket-all-reduce).
  double bucketMb = 25.0;
  /// GPU architectures to build the fused kernels for with nvcc (sm_90,
  /// sm_80); empty: the CPU kernels only. Non-empty runs the pipeline with
  /// target=cuda.
  std::vector<std::string> cudaArchs;
  /// With cudaArchs, fold linear layers' bias, GELU and GELU gradient into
  /// their GEMMs (weft-gemm-epilogue) for cuBLASLt's epilogues.
  bool gemmEpilogues = true;
  /// With cudaArchs, overlap collectives with compute: issue parameter
  /// all-gathers (ZeRO-3's, tp's) ahead of their readers
  /// (weft-sched-prefetch-gathers) and read reductions (each micro-batch's
  /// reduce-scatter) one later (weft-sched-defer-reduction-readers).
  bool overlapCollectives = true;
  /// False: leave the programs before fusion and memory planning (tests
  /// run those rewrites themselves and compare values before and after).
  bool fuseAndPlan = true;
  /// Lower the planned programs to sched (weft-lower-to-sched and
  /// weft-sched-plan-memory), what bundle v2 holds.
  bool sched = false;
  /// GPU attention materialises its scores (cuBLASLt GEMMs around a
  /// softmax) when they take at most this many MiB, else runs
  /// FlashAttention's kernels (weft-lower-to-sched's attention-scratch-mb).
  int64_t attentionScratchMb = 4096;
  /// What the backward computes again instead of keeping: none, full or
  /// selective (weft-recompute's policy).
  std::string recompute = "none";
  /// Dynamic loss scaling's initial scale (0: none; weftc compile uses 2^16
  /// for f16 models) and the clean steps before the scale doubles
  /// (weft-autodiff's loss-scale and loss-scale-window).
  double lossScale = 0;
  int64_t lossScaleWindow = 2000;
  /// The FP8 recipe of the weight GEMMs (none, tensorwise,
  /// tensorwise-delayed, rowwise, blockwise, mxfp8), the layers that keep
  /// the model's precision, the smallest GEMM dimension quantized, and
  /// delayed scaling's amax history and margin: weft-fp8's options, checked
  /// by checkFp8Options.
  Fp8Options fp8;
  /// Per-tensor FP8 GEMM operands as FP8 codes and FP8 GEMMs (auto: on
  /// for cuda), else their dequantized f32 values (weft-lower-to-sched's
  /// fp8-storage).
  std::string fp8Storage = "auto";
  /// Health probes: activations, attention, router, gradients (comma list;
  /// weft-probes and weft-optimizer-adamw's layer-grad-norms).
  std::string probes;
};

/// The options of the registered pass pipeline `weft-train`, e.g.
///   weft-opt --pass-pipeline='builtin.module(weft-train{plan=dp=2,tp=2})'
/// Each is the weftc compile flag of the same name (TrainingOptions in C++).
struct TrainingPipelineOptions
    : mlir::PassPipelineOptions<TrainingPipelineOptions> {
  Option<std::string> plan{
      *this, "plan",
      llvm::cl::desc("Parallelism plan, e.g. dp=2,tp=2,zero=1 (empty: one "
                     "rank)")};
  Option<std::string> target{
      *this, "target",
      llvm::cl::desc("Kernels the programs are planned for: cpu or cuda"),
      llvm::cl::init("cpu")};
  Option<double> bucketMb{
      *this, "bucket-mb",
      llvm::cl::desc("Largest gradient all-reduce bucket in MiB"),
      llvm::cl::init(TrainingOptions().bucketMb)};
  Option<bool> gemmEpilogues{
      *this, "gemm-epilogues",
      llvm::cl::desc("With target=cuda, fold bias, GELU and GELU gradient "
                     "into GEMM epilogues"),
      llvm::cl::init(TrainingOptions().gemmEpilogues)};
  Option<bool> overlapCollectives{
      *this, "overlap-collectives",
      llvm::cl::desc("With target=cuda, issue parameter all-gathers ahead "
                     "of their readers and read reductions later "
                     "(weft-sched-prefetch-gathers, "
                     "weft-sched-defer-reduction-readers)"),
      llvm::cl::init(TrainingOptions().overlapCollectives)};
  Option<double> beta1{*this, "beta1", llvm::cl::desc("AdamW beta1"),
                       llvm::cl::init(AdamWConfig().beta1)};
  Option<double> beta2{*this, "beta2", llvm::cl::desc("AdamW beta2"),
                       llvm::cl::init(AdamWConfig().beta2)};
  Option<double> eps{*this, "adam-eps", llvm::cl::desc("AdamW epsilon"),
                     llvm::cl::init(AdamWConfig().eps)};
  Option<double> weightDecay{
      *this, "weight-decay",
      llvm::cl::desc("AdamW decoupled weight decay on matrices"),
      llvm::cl::init(AdamWConfig().weightDecay)};
  Option<double> maxGradNorm{
      *this, "max-grad-norm",
      llvm::cl::desc("Global gradient-norm clip (0 disables)"),
      llvm::cl::init(AdamWConfig().maxGradNorm)};
  Option<bool> keepGradients{
      *this, "keep-gradients",
      llvm::cl::desc("Keep @train_step (loss and gradients) as a program"),
      llvm::cl::init(TrainingOptions().keepGradients)};
  Option<bool> fuseAndPlan{
      *this, "fuse-and-plan",
      llvm::cl::desc("Fuse elementwise ops and give each program the "
                     "arena its sched plan needs (false: stop before)"),
      llvm::cl::init(TrainingOptions().fuseAndPlan)};
  Option<bool> sched{
      *this, "sched",
      llvm::cl::desc("Lower the programs to sched and plan their buffers "
                     "(weft-lower-to-sched, weft-sched-plan-memory) in place "
                     "of the weft programs"),
      llvm::cl::init(TrainingOptions().sched)};
  Option<int64_t> attentionScratchMb{
      *this, "attention-scratch-mb",
      llvm::cl::desc("With sched and target=cuda, attention materialises "
                     "its scores up to this many MiB, else runs "
                     "FlashAttention's kernels"),
      llvm::cl::init(TrainingOptions().attentionScratchMb)};
  Option<std::string> recompute{
      *this, "recompute",
      llvm::cl::desc("Activation recomputation: none, full (keep each "
                     "layer's input) or selective (keep GEMM and attention "
                     "outputs)"),
      llvm::cl::init(TrainingOptions().recompute)};
  Option<double> lossScale{
      *this, "loss-scale",
      llvm::cl::desc("Dynamic loss scaling's initial scale (0: none)"),
      llvm::cl::init(TrainingOptions().lossScale)};
  Option<int64_t> lossScaleWindow{
      *this, "loss-scale-window",
      llvm::cl::desc("Clean steps before the loss scale doubles"),
      llvm::cl::init(TrainingOptions().lossScaleWindow)};
  Option<std::string> fp8{
      *this, "fp8",
      llvm::cl::desc("FP8 recipe of the weight GEMMs: none, tensorwise, "
                     "tensorwise-delayed, rowwise, blockwise or mxfp8"),
      llvm::cl::init(Fp8Options().recipe)};
  Option<std::string> fp8Keep{
      *this, "fp8-keep",
      llvm::cl::desc("Layers whose GEMMs stay out of FP8: head, first, last "
                     "(comma list) or none"),
      llvm::cl::init(Fp8Options().keep)};
  Option<int64_t> fp8MinDim{
      *this, "fp8-min-dim",
      llvm::cl::desc("GEMMs with a contraction or output dimension below "
                     "this stay out of FP8"),
      llvm::cl::init(Fp8Options().minDim)};
  Option<std::string> fp8Device{
      *this, "fp8-device",
      llvm::cl::desc("A topology preset or file: GEMMs that would not gain "
                     "from FP8 on its device at one rank's shapes stay out "
                     "of FP8 (weft-fp8's device; empty: none judged)"),
      llvm::cl::init(Fp8Options().device)};
  Option<int64_t> fp8History{
      *this, "fp8-history",
      llvm::cl::desc("tensorwise-delayed: the steps of amax history"),
      llvm::cl::init(Fp8Options().history)};
  Option<int64_t> fp8Margin{
      *this, "fp8-margin",
      llvm::cl::desc("tensorwise-delayed: scales divided by 2^margin"),
      llvm::cl::init(Fp8Options().margin)};
  Option<std::string> fp8Storage{
      *this, "fp8-storage",
      llvm::cl::desc("Per-tensor FP8 GEMM operands as FP8 codes: auto (on "
                     "for cuda), on or off"),
      llvm::cl::init(TrainingOptions().fp8Storage)};
  Option<std::string> probes{
      *this, "probes",
      llvm::cl::desc("Health probes: activations, attention, router, "
                     "gradients (comma list) or all"),
      llvm::cl::init(TrainingOptions().probes)};
};

/// Checks that AdamW's, the gradient bucket's and attention's settings are
/// in range (betas in [0, 1), a positive finite epsilon and bucket, a
/// finite non-negative weight decay and clip, a non-negative attention
/// scratch), before anything runs. The error names the setting as `prefix`
/// followed by its name, which weftc's flags ("--beta1") and the weft-train
/// options ("beta1") share.
llvm::Error checkTrainingSettings(const AdamWConfig &adamw, double bucketMb,
                                  int64_t attentionScratchMb,
                                  llvm::StringRef prefix);

/// Adds the training pipeline to `pm` (anchored on builtin.module), for a
/// module whose @forward returns (loss, logits): with a plan of more than
/// one rank, weft-apply-plan and func.func(weft-sharding-propagate,
/// weft-partition); then weft-autodiff (@train_step),
/// func.func(weft-recompute), with zero=3
/// func.func(weft-reshard-after-forward), weft-optimizer-adamw (@step,
/// erasing @train_step unless keep-gradients); then on every function
/// weft-bucket-all-reduce and, with fuse-and-plan, (target=cuda)
/// weft-gemm-epilogue, weft-fusion-group{single-ops} and weft-sched-arenas
/// (each program's arena from its sched plan); with sched,
/// weft-lower-to-sched and sched.program(weft-sched-plan-memory)
/// (addSchedPasses) in place of weft-sched-arenas. A
/// plan or target that does not parse, or a setting out of range
/// (checkTrainingSettings), is an error.
llvm::Error buildTrainingPipeline(mlir::OpPassManager &pm,
                                  const TrainingPipelineOptions &options);

/// Registers buildTrainingPipeline as the pass pipeline `weft-train`.
void registerTrainingPipeline();

/// Runs the training pipeline (buildTrainingPipeline with `options`) on
/// `module` through an mlir::PassManager, which `configure` may set up
/// first (a tool applies the command line's IR printing and timing flags).
/// The module is left holding the planned programs (what `weftc compile
/// --emit=mlir` prints).
mlir::LogicalResult buildTrainingPrograms(
    mlir::ModuleOp module, const TrainingOptions &options,
    llvm::function_ref<mlir::LogicalResult(mlir::PassManager &)> configure =
        {});

/// Lowers programs buildTrainingPrograms made with sched=false (fused and
/// planned weft programs) to sched as sched=true would have, without
/// running the training pipeline (or a budget's search) again: what a
/// planner slice and `weftc compile --report` are timed on. `configure` as
/// for buildTrainingPrograms.
mlir::LogicalResult lowerTrainingPrograms(
    mlir::ModuleOp module, const TrainingOptions &options,
    llvm::function_ref<mlir::LogicalResult(mlir::PassManager &)> configure =
        {});

/// The recomputation candidates of the training step `options` compile
/// `module` to (weft-recompute's `tensors:` indices; read from a copy
/// compiled up to weft-recompute), or an error at `module`.
mlir::FailureOr<RecomputeCandidates>
stepRecomputeCandidates(mlir::ModuleOp module, const TrainingOptions &options);

/// The training pipeline with sched=true, then a version 2 bundle in
/// `dir` (docs/bundle-format.md): the generated kernels (kernels.so and,
/// for each of options.cudaArchs, a cubin) with their XXH3-128 hashes, and
/// the sched module as manifest.json, with `meta` and the optimizer
/// settings: what `weftc compile -o` writes and the runtimes execute.
mlir::LogicalResult
compileSchedBundle(mlir::ModuleOp module, llvm::StringRef dir,
                   const TrainingOptions &options, llvm::json::Object meta,
                   llvm::function_ref<mlir::LogicalResult(mlir::PassManager &)>
                       configure = {});

/// Generates the C++ kernels of every weft.fused op in `module` and compiles
/// them into `dir/kernels.so` (see codegen/KernelSource.h); returns its path.
mlir::FailureOr<std::string> buildKernelLibrary(mlir::ModuleOp module,
                                                llvm::StringRef dir);

/// Where compiled kernel libraries are cached by source hash:
/// $XDG_CACHE_HOME/weft/kernels or ~/.cache/weft/kernels.
std::string kernelCacheDir();

} // namespace weft

#endif // WEFT_COMPILER_PIPELINE_H
