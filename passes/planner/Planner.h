//===- Planner.h - the search over placements, rewrites and schedules -----===//
//
// `--plan auto` and `weftc plan`: which plan trains a model fastest on a
// topology, with what recomputation and precision, and what it costs.
//
// The planner does not guess what a layer costs: it asks the compiler. A
// *slice* is the model cut to one layer (and to two), compiled through the
// real training pipeline with one layer-local configuration (tensor
// parallelism tp, sequence parallelism, a recomputation policy, an FP8
// recipe), lowered to sched and timed by the one cost model
// (CostModel.h), with its memory from the placement report (Report.h). The
// difference of the two-layer and the one-layer slice is one layer; the
// rest is the embedding, the head and the loss. A ProfileFn (the
// compiler's, compiler/Planning.h) answers for each configuration once.
//
// What varies across ranks and micro-batches is composed here, in closed
// form, with the cost model's own rules (collectiveSeconds, the schedule
// tables' bubble and in-flight counts):
//   - the pipeline: layers cut into stages by dynamic programming over the
//     layers' times (balanceStages, Alpa's stage construction for a chain),
//     the step M + (p - 1)/v stage-times long for 1F1B and interleaved, a
//     third of that bubble for ZB-H1, the boundary activation sent and its
//     gradient received per micro-batch over the link between stages;
//   - data parallelism and ZeRO: one collective per gradient tensor (the
//     all-reduces in 25 MiB buckets), all-reduced (zero=0, 1) or
//     reduce-scattered (2, 3), the experts' over dp and the others over
//     dp x ep x cp; zero=0 and 1 reduce once, in the last micro-batch
//     (@accumulate_last, a stage's backward_last), 2 and 3 in each
//     (@accumulate); ZeRO-1 and up all-gather the
//     updated parameters per tensor, zero=3 also each micro-batch's
//     forward and backward (with a stream for collectives, prefetched:
//     hidden under the pass's compute but for the first tensor's),
//     zero=2 all-reduces its partial gradient norm once; with a stream
//     for collectives (the GPU's) zero=2 and 3's reduce-scatters hide
//     under each micro-batch's backward but for the last tensor's, and
//     zero=0 and 1's all-reduce under the last micro-batch's backward
//     (each pipeline stage its own, in its backward_last);
//   - memory per rank of each stage: parameters, gradients and optimizer
//     state divided by ZeRO's stage, the activations of the micro-batches
//     the schedule keeps in flight (1F1B: p - s on stage s; ZB-H1 also
//     those awaiting their W; under pp their stashes and the stage's
//     arenas, from the slice placed as two stages), the slice's working
//     set (the head's logits
//     on the last stage only) or the optimizer step's arena, the larger
//     (a rank's programs share one arena, as the runtimes allocate it),
//     and the device's runtime reserve, against its memory;
//   - recomputation per layer group: each stage takes the least of the
//     ladder none → selective (layer by layer) → full (layer by layer) that
//     fits, so the first stage, which holds the most micro-batches,
//     recomputes more than the last;
//   - FP8 per layer group: with a pipeline and several recipes searched,
//     each pipeline rank also takes the recipe fastest on it that fits
//     (its own ladder under each), and the stages are cut again with each
//     rank's layers at its recipe's speed (balanceStages' stage scales),
//     kept when that fits and is faster.
// Each slice is compiled at the micro-batch size it is asked for. Layers
// that differ (ModelShape::layerKinds, a graph's) are timed by kind
// (SliceProfile::kinds), and every per-rank sum above runs over the
// rank's own layers, each at its kind's cost.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_PASSES_PLANNER_PLANNER_H
#define WEFT_PASSES_PLANNER_PLANNER_H

#include "passes/costmodel/Topology.h"
#include "passes/sharding/Passes.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace weft::planner {

/// What one layer, or the model outside its layers, costs one rank for a
/// micro-batch (SliceKey::microbatch sequences per data-parallel rank).
struct PartCost {
  double forward = 0, backward = 0; // Seconds; backward with recomputation.
  double optimizer = 0;             // Seconds of the update, per step.
  /// Without ZeRO: held for the whole step.
  double paramBytes = 0, gradBytes = 0, optimizerBytes = 0;
  /// Kept from the forward for the backward (one micro-batch).
  double activationBytes = 0;
  /// The forward and backward's transient peak above what is kept (per
  /// layer: what grows with layers whatever the batch, as the weights'
  /// compute-type copies; the rest: the remainder of the arena).
  double workingBytes = 0;
  /// The optimizer step's arena: the new parameters and moments, which the
  /// step assigns when it ends (sched.assign), so all are held at once;
  /// ZeRO-1 and up divide it with the state.
  double updateBytes = 0;
  /// Matrix FLOPs of forward and backward, recomputation included, and
  /// the model's (the forward's three times, as MFU counts them).
  double flops = 0, modelFlops = 0;
  /// Trainable tensors: with micro-batches each gradient is reduced over
  /// dp on its own, paying the link's latency per ring step.
  double tensors = 0;
  /// Of gradBytes and tensors, the experts' (split over ep), which reduce
  /// over dp alone.
  double expertGradBytes = 0, expertTensors = 0;
  /// Under a pipeline: what a micro-batch's forward leaves for its
  /// backward (the stash), per layer.
  double stashBytes = 0;
};

/// A layer-local configuration and the micro-batch it runs.
struct SliceKey {
  int64_t tp = 1;
  bool sequenceParallel = false;
  /// Expert parallelism (a mixture of experts: the experts split, tokens
  /// exchanged all-to-all) and context parallelism (the sequence split,
  /// keys and values passed round a ring).
  int64_t ep = 1, cp = 1;
  std::string recompute = "none"; // none, selective or full.
  std::string fp8 = "none";       // A weft-fp8 recipe.
  /// Sequences per rank in a micro-batch. Costs are not linear in it: a
  /// larger one runs larger GEMMs nearer their peak, and may take another
  /// attention algorithm (materialised scores only up to the scratch
  /// budget), so each size is compiled.
  int64_t microbatch = 1;
  /// Also measure the slice as two pipeline stages (SliceProfile's stash
  /// and stage arenas), for plans with pp.
  bool pipelined = false;
  /// A capacity-limited mixture of experts: the data-parallel ranks whose
  /// tokens one routing decision spans (a capacity is the group's, so each
  /// rank's expert buffers hold more than its own tokens' capacity); 1
  /// otherwise.
  int64_t routing = 1;

  bool operator<(const SliceKey &o) const {
    return std::tie(tp, sequenceParallel, ep, cp, recompute, fp8, microbatch,
                    pipelined, routing) <
           std::tie(o.tp, o.sequenceParallel, o.ep, o.cp, o.recompute, o.fp8,
                    o.microbatch, o.pipelined, o.routing);
  }
  std::string str() const;
};

struct SliceProfile {
  PartCost layer, rest;
  /// What a pipeline stage sends its successor per micro-batch (the
  /// residual stream of its sequences, a tp rank's part of it under sp).
  double boundaryBytes = 0;
  /// With SliceKey::pipelined: the arenas of a first stage (embedding and a
  /// layer) and a last one (a layer and the head), each the largest of its
  /// forward's, backward's and step's (which share one); the stash is the
  /// layer's stashBytes.
  bool pipelined = false;
  double firstStageArena = 0, lastStageArena = 0;
  /// Whether the lowered programs put collectives on a stream of their own
  /// (the GPU's `comm`), so that the gradients' reduction can run under
  /// the backward; the CPU's run on the compute stream.
  bool overlapsCommunication = false;
  /// Whether they also run weft-sched-prefetch-gathers and
  /// weft-sched-defer-reduction-readers (--overlap-collectives): ZeRO-3's
  /// gathers ahead of their readers, each reduction read one later.
  bool overlapsCollectives = false;
  /// With ModelShape::layerKinds: a layer of each kind (kinds[0] is
  /// `layer`); its stash under a pipeline is `layer`'s scaled by the
  /// kinds' activations (measured on the first kind's two stages).
  std::vector<PartCost> kinds;
};

/// Compiles and times a slice; an error says why the configuration cannot
/// be built (tp not dividing the heads, ...), and the planner then leaves
/// it out.
using ProfileFn = std::function<llvm::Expected<SliceProfile>(const SliceKey &)>;

/// The model as the planner needs it.
struct ModelShape {
  std::string name;
  int64_t layers = 1, heads = 1, kvHeads = 1, hidden = 1, vocab = 1;
  int64_t experts = 0; // A mixture of experts' experts per layer (ep).
  /// Its experts keep at most a capacity of pairs (routed per dp group).
  bool capacityLimited = false;
  int64_t batch = 1, seq = 1; // The step's global batch, in sequences.
  bool narrow = true;         // bf16/f16 compute (FP8 applies).
  /// When the layers differ (a graph's dense and expert layers): each
  /// layer's kind, from 0 (SliceProfile::kinds holds a layer of each);
  /// empty when they are alike.
  std::vector<int64_t> layerKinds;
  int64_t kindOf(int64_t layer) const {
    return layerKinds.empty() ? 0 : layerKinds[layer];
  }
};

/// What the search may choose, and limits a user can set.
struct SearchOptions {
  int64_t topK = 5;
  std::vector<std::string> recompute = {"none", "selective", "full"};
  std::vector<std::string> fp8 = {"none"};
  std::vector<std::string> schedules = {"1f1b", "interleaved", "zb-h1"};
  std::vector<int> zero = {0, 1, 2, 3};
  int64_t maxMicrobatchSize = 8;
  /// Nor more than this many tokens a micro-batch on a rank (past it the
  /// GEMMs are as efficient as they get, and memory only grows).
  int64_t maxMicrobatchTokens = 16384;
  /// Context parallelism is tried for sequences of at least this many
  /// tokens per cp rank (it pays a ring of key and value exchanges).
  int64_t minContextPerRank = 8192;
};

/// One plan: where everything goes and in what order.
struct Candidate {
  int64_t tp = 1, pp = 1, dp = 1, ep = 1, cp = 1;
  bool sequenceParallel = false;
  int zero = 0;
  int64_t microbatchSize = 1, microbatches = 1;
  std::string schedule = "1f1b";
  int64_t chunks = 1;
  std::string fp8 = "none";
  /// Per pipeline rank, its layers' FP8 recipe when the ranks differ
  /// (empty: `fp8` everywhere). `fp8` is then the first rank's.
  std::vector<std::string> rankFp8;
  /// Per pipeline rank: the ladder step (see the file comment) from
  /// `ladderBase` (0 none, 1 selective, 2 full); per stage: its layers.
  std::vector<int64_t> ladder;
  int ladderBase = 0;
  std::vector<std::pair<int64_t, int64_t>> stageRanges;
  /// A uniform policy, when not searched ("none", "selective", "full").
  std::string uniformRecompute;

  /// The plan weftc compiles: mesh axes in Megatron's order (tp the
  /// innermost, inside a node, then cp, ep, dp; pp the outermost), ZeRO-3
  /// gathering per micro-batch when there are several.
  Plan toPlan() const;
  /// Its --plan text (Plan::str): "pp=2,dp=4,tp=8,zero=1,sp=on,
  /// microbatches=24,schedule=interleaved,virtual=2,stages=0-5,...".
  std::string plan() const;
  /// Ranks of one pipeline stage: dp x ep x cp x tp.
  int64_t stageRanks() const { return dp * ep * cp * tp; }
  /// --recompute text: per layer ("selective*3,none*9,...") or uniform.
  std::string recompute(int64_t layers) const;
  /// --fp8 text: one recipe, or per layer ("none*4,tensorwise*28").
  std::string fp8Choice(int64_t layers) const;
  /// The layers pipeline rank `rank` holds (its chunks'), in order.
  std::vector<int64_t> layersOf(int64_t rank) const;
};

struct StageMemory {
  double paramBytes = 0, gradBytes = 0, optimizerBytes = 0;
  double activationBytes = 0, reserveBytes = 0;
  int64_t inFlight = 1;
  double total() const {
    return paramBytes + gradBytes + optimizerBytes + activationBytes +
           reserveBytes;
  }
};

struct Estimate {
  Candidate candidate;
  double stepSeconds = 0, tokensPerSecond = 0;
  double mfu = 0, hfu = 0;
  /// Matrix FLOP/s per device, recomputation included (Megatron-LM's
  /// "achieved teraFLOP/s per GPU" counts so).
  double flopsPerDevice = 0;
  /// Where the step goes: the slowest stage's compute for all
  /// micro-batches, the pipeline's bubble, the exposed data-parallel
  /// communication, the optimizer.
  double computeSeconds = 0, bubbleSeconds = 0, dpSeconds = 0,
         optimizerSeconds = 0, p2pSeconds = 0;
  std::vector<StageMemory> stages;
  bool fits = true;
  std::string why; // Why it lost or does not fit (runners-up).

  double peakBytes() const;
  llvm::json::Object toJSON(int64_t layers) const;
};

struct SearchResult {
  std::vector<Estimate> best;      // Fastest first, fitting.
  std::vector<Estimate> runnersUp; // Each a different kind of loser.
  int64_t evaluated = 0, pruned = 0, profiles = 0;
  /// The slice configurations that did not build, each with why: the
  /// plans needing them were not searched.
  std::vector<std::string> unbuilt;
};

/// Predicts `candidate` (its recomputation: uniformRecompute for every
/// layer, or its ladder) on `topology`; stageRanges empty: balanced here.
llvm::Expected<Estimate> evaluate(const ModelShape &model,
                                  const Topology &topology, Candidate candidate,
                                  const ProfileFn &profile);

/// Searches every plan of `options` on `topology` (every device used, as
/// published runs use them); fails when no plan fits
/// (naming the closest and what fills it) or no configuration compiles.
llvm::Expected<SearchResult> search(const ModelShape &model,
                                    const Topology &topology,
                                    const SearchOptions &options,
                                    const ProfileFn &profile);

/// A table of `estimates`: plan, recomputation, step time, tokens/s, MFU,
/// memory of the fullest rank.
std::string table(const std::vector<Estimate> &estimates,
                  const ModelShape &model, const Topology &topology);

} // namespace weft::planner

#endif // WEFT_PASSES_PLANNER_PLANNER_H
