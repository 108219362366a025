//===- weftc.cpp - the Weft compiler driver -------------------------------===//
//
//   weftc import --config config.json --batch B --seq S -o model.mlir
//   weftc eval model.mlir|--config config.json [--weights W.safetensors]
//              --tokens FILE [--token-bytes 2|4 | --tokenizer bytes]
//              [--logits out.safetensors]
//
// Thin: parsing flags and files, then calls into frontend/ and compiler/.
//
//===----------------------------------------------------------------------===//

#include "codegen/KernelSource.h"
#include "codegen/Passes.h"
#include "codegen/SchedBundle.h"
#include "compiler/Pipeline.h"
#include "compiler/Planning.h"
#include "compiler/Registration.h"
#include "compiler/reference/Evaluator.h"
#include "compiler/reference/Weights.h"
#include "dialects/sched/IR/SchedOps.h"
#include "frontend/MlirText.h"
#include "frontend/models/ModelConfig.h"
#include "passes/autodiff/Passes.h"
#include "passes/costmodel/CostModel.h"
#include "passes/costmodel/Explain.h"
#include "passes/costmodel/Report.h"
#include "passes/costmodel/Topology.h"
#include "passes/health/Passes.h"
#include "passes/pipeline/Passes.h"
#include "passes/pipeline/Schedule.h"
#include "passes/precision/Passes.h"
#include "passes/recompute/Passes.h"
#include "runtime/checkpoint/Checkpoint.h"
#include "runtime/data/TokenFile.h"
#include "runtime/io/Safetensors.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/Timing.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cmath>
#include <tuple>

using namespace llvm;
using namespace mlir;

namespace {
cl::SubCommand
    importCmd("import", "Emit the forward graph (with loss) of a model family");
cl::SubCommand evalCmd("eval", "Run a graph on the reference evaluator and "
                               "print its mean loss");
cl::SubCommand topologyCmd("topology",
                           "Resolve a topology (file or preset), check a mesh "
                           "against it, print it as JSON");
cl::SubCommand compileCmd("compile",
                          "Compile a model into a training bundle (autodiff, "
                          "AdamW, memory plan) for weft-run");
cl::SubCommand inspectCmd("inspect",
                          "Print a bundle (version 2) as the sched IR it "
                          "runs");
cl::SubCommand scheduleCmd("schedule",
                           "Print a pipeline schedule's table per rank, "
                           "checked deadlock-free, with its bubble");
cl::SubCommand planCmd("plan",
                       "Search plans (placement, recomputation, precision, "
                       "pipeline schedule) for a model on a topology and "
                       "print the fastest that fit");
cl::SubCommand exportCmd("export",
                         "Write a checkpoint's model parameters, gathered from "
                         "its shards, as a Hugging Face safetensors model");
cl::opt<std::string> checkpointPath(cl::Positional,
                                    cl::desc("<checkpoint dir>"),
                                    cl::sub(exportCmd));
cl::opt<std::string> hfPath("hf",
                            cl::desc("Directory to write model.safetensors "
                                     "(and config.json) into"),
                            cl::value_desc("dir"), cl::sub(exportCmd));
cl::opt<std::string> exportConfig("config",
                                  cl::desc("The model's config.json, copied "
                                           "into the --hf directory"),
                                  cl::value_desc("file"), cl::sub(exportCmd));
cl::opt<int64_t> pipelineRanks("pp", cl::desc("Pipeline ranks"), cl::init(1),
                               cl::sub(scheduleCmd));
cl::opt<int64_t> microbatchCount("microbatches",
                                 cl::desc("Micro-batches per step"),
                                 cl::init(1), cl::sub(scheduleCmd));
cl::opt<std::string> scheduleKind("schedule",
                                  cl::desc("gpipe, 1f1b, interleaved or zb-h1"),
                                  cl::init("1f1b"), cl::sub(scheduleCmd));
cl::opt<int64_t> virtualStages("virtual",
                               cl::desc("Virtual stages per rank "
                                        "(interleaved)"),
                               cl::init(1), cl::sub(scheduleCmd));
cl::opt<std::string> timelinePath("timeline",
                                  cl::desc("Also draw the simulated schedule "
                                           "into this SVG file"),
                                  cl::value_desc("file"), cl::sub(scheduleCmd),
                                  cl::sub(compileCmd));
cl::opt<std::string> explainPath(
    "explain",
    cl::desc("Also write the plan as one self-contained HTML page (inline "
             "SVG, no script): the mesh on the topology's nodes, memory per "
             "rank, the predicted step time by kind, communication per link "
             "and a pipeline's schedule; needs --topology"),
    cl::value_desc("file"), cl::sub(compileCmd));
cl::opt<std::string> bundlePath(cl::Positional, cl::desc("<bundle dir>"),
                                cl::sub(inspectCmd));
cl::opt<std::string> topologySpec("topology",
                                  cl::desc("Topology file or preset: cpu:N, "
                                           "dgx-a100:N, dgx-h100:N, h200:N"),
                                  cl::sub(topologyCmd), cl::sub(compileCmd),
                                  cl::sub(inspectCmd), cl::sub(planCmd));
cl::opt<std::string> meshSpec("mesh", cl::desc("Mesh to check, e.g. dp=2,tp=4"),
                              cl::sub(topologyCmd));

cl::opt<std::string> configPath("config", cl::desc("Hugging Face config.json"),
                                cl::value_desc("file"), cl::sub(importCmd),
                                cl::sub(evalCmd), cl::sub(compileCmd),
                                cl::sub(planCmd));
cl::opt<int64_t> batchSize("batch",
                           cl::desc("Batch size: the step's sequences (default "
                                    "1, or a .mlir model's own)"),
                           cl::init(1), cl::sub(importCmd), cl::sub(evalCmd),
                           cl::sub(compileCmd), cl::sub(planCmd));
cl::opt<int64_t> seqLen("seq",
                        cl::desc("Sequence length (import: default the model's "
                                 "max positions; eval: as many as the tokens "
                                 "allow, up to that)"),
                        cl::init(0), cl::sub(importCmd), cl::sub(evalCmd),
                        cl::sub(compileCmd), cl::sub(planCmd));
cl::opt<std::string> dtypeName("dtype",
                               cl::desc("Parameter/activation type: f32, bf16 "
                                        "or f16 (default f32)"),
                               cl::init("f32"), cl::sub(importCmd),
                               cl::sub(evalCmd), cl::sub(compileCmd),
                               cl::sub(planCmd));
cl::opt<std::string> outputPath("o", cl::desc("Output file (default stdout)"),
                                cl::value_desc("file"), cl::init("-"),
                                cl::sub(importCmd), cl::sub(compileCmd));

cl::opt<bool> printSummary("summary",
                           cl::desc("Print the parameter count and op count "
                                    "to stderr"),
                           cl::sub(importCmd));
cl::opt<bool> importMasterWeights(
    "master-weights",
    cl::desc("With a narrow --dtype: keep the parameters in f32 and cast them "
             "where they are used (mixed precision, as weftc compile --config "
             "trains), so the model.mlir trains and plans"),
    cl::sub(importCmd));

cl::opt<std::string> modelPath(cl::Positional, cl::desc("[model.mlir]"),
                               cl::sub(evalCmd), cl::sub(compileCmd),
                               cl::sub(planCmd));
cl::opt<std::string> emit("emit",
                          cl::desc("Stop early and print: 'mlir' (the planned "
                                   "step and forward programs), 'sched' (them "
                                   "lowered to the sched IR a bundle v2 "
                                   "holds), 'kernels' (the generated C++ "
                                   "kernel source) or 'cuda' (the same "
                                   "kernels for CUDA)"),
                          cl::sub(compileCmd));
cl::opt<std::string> planSpec(
    "plan",
    cl::desc("Parallelism plan, e.g. dp=4 (default: one rank; see README)"),
    cl::sub(compileCmd));
cl::opt<int64_t> elasticMin(
    "elastic",
    cl::desc("Also compile the plan for fewer data-parallel replicas, down to "
             "MIN, into bundle/elastic/dpN (for weft-run --elastic MIN)"),
    cl::init(0), cl::sub(compileCmd));
cl::opt<std::string> reportFormat(
    "report", cl::ValueOptional,
    cl::desc("Print the per-rank memory and communication estimate and, with "
             "--topology, the predicted time of each program: tables, or "
             "--report=json"),
    cl::sub(compileCmd), cl::sub(inspectCmd));
cl::opt<std::string> target("target",
                            cl::desc("Kernels to build: cpu (default) or cuda "
                                     "(also nvcc cubins, see --cuda-arch)"),
                            cl::init("cpu"), cl::sub(compileCmd));
cl::opt<std::string>
    cudaArch("cuda-arch",
             cl::desc("GPU architectures for --target cuda, e.g. sm_90,sm_80 "
                      "(default sm_90)"),
             cl::init("sm_90"), cl::sub(compileCmd));
cl::opt<int64_t> attentionScratchMb(
    "attention-scratch-mb",
    cl::desc("With --target cuda, attention materialises its scores (cuBLASLt "
             "GEMMs around a softmax) when they take at most this many MiB of "
             "scratch, else runs FlashAttention's kernels (default 4096)"),
    cl::init(weft::TrainingOptions().attentionScratchMb), cl::sub(compileCmd));
cl::opt<std::string> recomputePolicy(
    "recompute",
    cl::desc("Activation recomputation: none (default), full (keep each "
             "layer's input, recompute the rest of the layer in the backward), "
             "selective (keep GEMM and attention outputs, recompute the ops "
             "between), one per layer (full*2,selective*30) where a layer "
             "may name which of its candidates it recomputes (tensors:0+3), or "
             "budget=<GiB> (the least recomputation whose activations fit)"),
    cl::init("none"), cl::sub(compileCmd), cl::sub(planCmd));
cl::opt<double> lossScale(
    "loss-scale",
    cl::desc("Dynamic loss scaling's initial scale, halved and the step "
             "skipped when gradients overflow, doubled after "
             "--loss-scale-window clean steps; 0 turns it off (default: 65536 "
             "for an f16 model, else 0)"),
    cl::init(-1), cl::sub(compileCmd));
cl::opt<int64_t> lossScaleWindow(
    "loss-scale-window",
    cl::desc("Clean steps before the loss scale doubles (default 2000)"),
    cl::init(2000), cl::sub(compileCmd));
cl::opt<std::string> fp8Recipe(
    "fp8",
    cl::desc("FP8 weight GEMMs, emulated exactly on the CPU: none (default), "
             "tensorwise (per-tensor current scaling, E4M3 forward and E5M2 "
             "gradients), tensorwise-delayed (scales from a 16-step amax "
             "history, as Transformer Engine's DelayedScaling), rowwise, "
             "blockwise (1x128 activation tiles, "
             "128x128 weight blocks) or mxfp8 (32-element blocks, power-of-two "
             "scales)"),
    cl::init("none"), cl::sub(compileCmd));
cl::opt<std::string>
    fp8Keep("fp8-keep",
            cl::desc("With --fp8, the layers whose GEMMs stay in the model's "
                     "precision: a comma list of head, first, last, or none "
                     "(default head)"),
            cl::init(weft::Fp8Options().keep), cl::sub(compileCmd));
cl::opt<std::string> fp8MinDim(
    "fp8-min-dim",
    cl::desc("With --fp8, which GEMMs are too small to gain from FP8 and "
             "stay in the model's precision: auto (the default: with "
             "--topology, those the cost model predicts slower in FP8 on its "
             "device at one rank's shapes; without, none) or N (those whose "
             "contraction or output dimension is below N)"),
    cl::init("auto"), cl::sub(compileCmd));
cl::opt<int64_t> fp8History(
    "fp8-history",
    cl::desc("With --fp8 tensorwise-delayed, the steps of amax history a "
             "scale is taken from (default 16)"),
    cl::init(weft::Fp8Options().history), cl::sub(compileCmd));
cl::opt<int64_t>
    fp8Margin("fp8-margin",
              cl::desc("With --fp8 tensorwise-delayed, scales are divided by "
                       "2^margin for headroom (default 0)"),
              cl::init(weft::Fp8Options().margin), cl::sub(compileCmd));
cl::opt<std::string> probes(
    "probes",
    cl::desc("Health probes logged every step in weft-run's --metrics: a "
             "comma list of activations (each layer's output RMS and "
             "largest magnitude), attention (each layer's attention "
             "entropy), router (each MoE layer's load per expert and its "
             "imbalance), gradients (each layer's gradient norm), or all"),
    cl::init(""), cl::sub(compileCmd));
cl::opt<std::string> fp8Storage(
    "fp8-storage",
    cl::desc("With --fp8, keep GEMM operands as FP8 bytes with their "
             "scales and multiply them as FP8 (cuBLASLt with scale pointers "
             "or Weft's kernel on the GPU; decoded on the CPU): auto "
             "(default: on for --target cuda), on or off (f32 dequantized "
             "values)"),
    cl::init("auto"), cl::sub(compileCmd));

/// Whether the programs lower with FP8 storage (--fp8-storage on, or auto
/// on the cuda target): the report counts gathers of quantized values as
/// the codes they move.
bool lowersFp8Codes() {
  return weft::codegen::fp8StorageOn(fp8Storage, target == "cuda");
}

cl::opt<bool> gemmEpilogues(
    "gemm-epilogues",
    cl::desc("With --target cuda, fold linear layers' bias, GELU and GELU "
             "gradient into cuBLASLt GEMM epilogues (default true)"),
    cl::init(true), cl::sub(compileCmd));
cl::opt<bool> overlapCollectives(
    "overlap-collectives",
    cl::desc("With --target cuda, issue ZeRO-3's and tensor parallelism's "
             "parameter all-gathers ahead of their readers, and read each "
             "micro-batch's gradient reduction one later, so they move "
             "under compute (default true)"),
    cl::init(true), cl::sub(compileCmd));
cl::opt<int64_t> vocabDivisibleBy(
    "make-vocab-size-divisible-by",
    cl::desc("With --config: pad the embedding and LM head to a multiple of "
             "N times tp rows (Megatron's flag; default 1: only what tp "
             "needs). Padded logits never count in the loss; checkpoints "
             "keep the config's vocabulary"),
    cl::init(1), cl::sub(compileCmd));
cl::opt<double> bucketMb("bucket-mb",
                         cl::desc("Largest gradient all-reduce bucket in MiB "
                                  "(default 25)"),
                         cl::init(25.0), cl::sub(compileCmd));
cl::opt<double> beta1("beta1", cl::desc("AdamW beta1 (default 0.9)"),
                      cl::init(0.9), cl::sub(compileCmd));
cl::opt<double> beta2("beta2", cl::desc("AdamW beta2 (default 0.95)"),
                      cl::init(0.95), cl::sub(compileCmd));
cl::opt<double> adamEps("adam-eps", cl::desc("AdamW epsilon (default 1e-8)"),
                        cl::init(1e-8), cl::sub(compileCmd));
cl::opt<double> weightDecay("weight-decay",
                            cl::desc("AdamW decoupled weight decay on "
                                     "matrices (default 0.1)"),
                            cl::init(0.1), cl::sub(compileCmd));
cl::opt<double> maxGradNorm("max-grad-norm",
                            cl::desc("Global gradient-norm clip, 0 = off "
                                     "(default 1.0)"),
                            cl::init(1.0), cl::sub(compileCmd));

cl::opt<std::string> weightsPath("weights",
                                 cl::desc("safetensors checkpoint (default: "
                                          "random initialisation from --seed)"),
                                 cl::value_desc("file"), cl::sub(evalCmd));
cl::opt<std::string> tokensPath("tokens", cl::desc("Token file"),
                                cl::value_desc("file"), cl::sub(evalCmd));
cl::opt<int> tokenBytes("token-bytes",
                        cl::desc("Width of a token id in a flat token file: 2 "
                                 "(uint16) or 4 (uint32); default 2"),
                        cl::init(2), cl::sub(evalCmd));
cl::opt<std::string> tokenizer("tokenizer",
                               cl::desc("'bytes': read --tokens as text, one "
                                        "token per byte"),
                               cl::sub(evalCmd));
cl::opt<std::string> logitsPath("logits",
                                cl::desc("Write the logits to this safetensors "
                                         "file (tensor 'logits', F32)"),
                                cl::value_desc("file"), cl::sub(evalCmd));
cl::opt<int64_t> topPlans("top",
                          cl::desc("How many of the fastest plans to print "
                                   "(default 5)"),
                          cl::init(5), cl::sub(planCmd));
cl::opt<std::string> searchRecompute(
    "search-recompute",
    cl::desc("Recomputation policies the search may use per layer group, a "
             "run of none,selective,full (default all three)"),
    cl::init("none,selective,full"), cl::sub(planCmd), cl::sub(compileCmd));
cl::opt<std::string> searchFp8(
    "search-fp8",
    cl::desc("FP8 recipes the search may use for the weight GEMMs, a comma "
             "list with none (default none: FP8 changes numerics, so the "
             "search tries it only when asked, e.g. none,tensorwise)"),
    cl::init("none"), cl::sub(planCmd), cl::sub(compileCmd));
cl::opt<int64_t> maxMicrobatchSize(
    "max-microbatch-size",
    cl::desc("Largest micro-batch (sequences per rank) the search tries "
             "(default 8)"),
    cl::init(8), cl::sub(planCmd), cl::sub(compileCmd));
cl::opt<std::string> evaluatePlan(
    "evaluate",
    cl::desc("Predict this plan (with --recompute, --fp8) instead of "
             "searching, e.g. pp=2,dp=4,tp=8,mb=16"),
    cl::sub(planCmd));
cl::opt<std::string> planFormat("format",
                                cl::desc("Output: table (default) or json"),
                                cl::init("table"), cl::sub(planCmd));
cl::opt<std::string> planFp8("fp8",
                             cl::desc("With --evaluate: the plan's FP8 recipe "
                                      "(default none)"),
                             cl::init("none"), cl::sub(planCmd));
cl::opt<uint64_t> seed("seed", cl::desc("Seed of the random initialisation"),
                       cl::init(0), cl::sub(evalCmd));
cl::opt<std::string> precision("precision",
                               cl::desc("Evaluator precision: f32 (default) "
                                        "or f64"),
                               cl::init("f32"), cl::sub(evalCmd));

/// With --plan auto: the runners-up the search found, for --explain.
std::vector<weft::ExplainAlternative> autoAlternatives;
bool planSearched = false;

int fail(const Twine &message) {
  WithColor::error(errs(), "weftc") << message << "\n";
  return 1;
}
int fail(const absl::Status &status) {
  return fail(std::string(status.message()));
}

/// weftc's diagnostics: one with a place in a file as the source manager
/// prints it (file:line:col, the line and a caret); one with none (about
/// the whole model or a flag, or an op of a model built from a config,
/// whose place is its scope's name) as weftc's own error, naming the
/// scope, rather than at "<unknown>:0". The pass manager's note that dumps
/// the failing op is left out there: with no file to point into, it would
/// print the model.
class Diagnostics {
public:
  Diagnostics(SourceMgr &sources, MLIRContext &context)
      : inFiles(sources, &context), context(context) {
    // Registered after the source manager's, so asked first.
    id = context.getDiagEngine().registerHandler(
        [](Diagnostic &d) { return placeless(d); });
  }
  ~Diagnostics() { context.getDiagEngine().eraseHandler(id); }

private:
  static LogicalResult placeless(Diagnostic &d) {
    if (d.getLocation()->findInstanceOf<FileLineColLoc>())
      return failure();
    auto print = [](DiagnosticSeverity severity, Location loc,
                    const std::string &message) {
      raw_ostream &os = severity == DiagnosticSeverity::Error
                            ? WithColor::error(errs(), "weftc")
                        : severity == DiagnosticSeverity::Warning
                            ? WithColor::warning(errs(), "weftc")
                            : WithColor::note(errs(), "weftc");
      if (auto scope = loc->findInstanceOf<NameLoc>())
        os << "at " << scope.getName() << ": ";
      os << message << "\n";
    };
    print(d.getSeverity(), d.getLocation(), d.str());
    for (Diagnostic &note : d.getNotes())
      if (!StringRef(note.str()).starts_with("see current operation"))
        print(note.getSeverity(), note.getLocation(), note.str());
    return success();
  }

  SourceMgrDiagnosticHandler inFiles;
  MLIRContext &context;
  DiagnosticEngine::HandlerID id;
};

/// --config read, with what the reader noticed printed as warnings.
Expected<weft::ModelConfig> loadConfig() {
  Expected<weft::ModelConfig> config = weft::ModelConfig::load(configPath);
  if (config) {
    for (const std::string &warning : config->warnings)
      WithColor::warning(errs(), "weftc") << warning << "\n";
  }
  return config;
}

int runImport(MLIRContext &context) {
  if (configPath.empty())
    return fail("import needs --config");
  Expected<weft::ModelConfig> config = loadConfig();
  if (!config)
    return fail(toString(config.takeError()));
  weft::ModelBuildOptions options{
      batchSize, seqLen > 0 ? seqLen : config->maxPositions, dtypeName};
  if (importMasterWeights && dtypeName == "f32")
    return fail("--master-weights keeps f32 parameters for a narrow --dtype "
                "(bf16 or f16); the model is f32");
  options.masterWeights = importMasterWeights;
  auto module = weft::buildModel(context, *config, options);
  if (!module)
    return fail(configPath + ": " + toString(module.takeError()));
  std::string error;
  auto output = openOutputFile(outputPath, &error);
  if (!output)
    return fail(error);
  (*module)->print(output->os());
  output->os() << "\n";
  output->keep();
  if (printSummary) {
    int64_t ops = 0;
    (*module)->walk([&](Operation *op) {
      ops += isa<weft::WeftDialect>(op->getDialect());
    });
    func::FuncOp func = *(*module)->getOps<func::FuncOp>().begin();
    errs() << formatv(
        "{0}: {1} parameters, {2} weft ops, batch {3}, seq {4}, {5}\n",
        configPath, weft::reference::countParameters(func), ops, options.batch,
        options.seq, options.dtype);
  }
  return 0;
}

/// Loads the graph named by the positional file or built from --config
/// with `batch` sequences (a .mlir model's @forward, or with `first` its
/// first function, is rewritten at that many, or with 0 kept at its own:
/// weft-rebatch).
OwningOpRef<ModuleOp> loadModel(MLIRContext &context, SourceMgr &sources,
                                int64_t seq, int64_t batch,
                                int64_t vocabMultiple = 1, bool first = false) {
  if (!modelPath.empty()) {
    if (!configPath.empty()) {
      fail("give either a model.mlir or --config, not both");
      return nullptr;
    }
    ErrorOr<std::unique_ptr<MemoryBuffer>> buffer =
        MemoryBuffer::getFileOrSTDIN(modelPath);
    if (!buffer) {
      fail(modelPath + ": cannot read: " + buffer.getError().message());
      return nullptr;
    }
    if (Error e = weft::checkMlirNesting((*buffer)->getBuffer(), modelPath)) {
      fail(toString(std::move(e)));
      return nullptr;
    }
    sources.AddNewSourceBuffer(std::move(*buffer), SMLoc());
    OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sources, &context);
    if (!module || batch <= 0)
      return module;
    // The function compiled (@forward) or evaluated (the first); a model
    // without it is refused by the caller.
    auto funcs = module->getOps<func::FuncOp>();
    auto func = first ? (funcs.empty() ? func::FuncOp() : *funcs.begin())
                      : module->lookupSymbol<func::FuncOp>("forward");
    if (func && failed(weft::rebatch(func, batch)))
      return nullptr;
    return module;
  }
  if (configPath.empty()) {
    fail("eval needs a model.mlir or --config");
    return nullptr;
  }
  Expected<weft::ModelConfig> config = loadConfig();
  if (!config) {
    fail(toString(config.takeError()));
    return nullptr;
  }
  // A sequence length eval derived from the tokens is capped at the model's
  // positions; one the user gave (--seq) is not: past them it is an error.
  bool derived = seq > 0 && seqLen.getNumOccurrences() == 0;
  weft::ModelBuildOptions options{batch,
                                  seq <= 0 ? config->maxPositions
                                  : derived
                                      ? std::min(seq, config->maxPositions)
                                      : seq,
                                  dtypeName};
  // Training keeps f32 master weights and computes in --dtype.
  options.masterWeights = static_cast<bool>(compileCmd);
  options.vocabMultiple = vocabMultiple;
  auto module = weft::buildModel(context, *config, options);
  if (!module) {
    fail(configPath + ": " + toString(module.takeError()));
    return nullptr;
  }
  return std::move(*module);
}

/// The vocabulary a graph's token ids index (its first embedding table).
int64_t vocabOf(func::FuncOp func) {
  int64_t vocab = -1;
  func.walk([&](weft::EmbeddingOp op) {
    if (vocab < 0)
      vocab = cast<RankedTensorType>(op.getTable().getType()).getDimSize(0);
  });
  return vocab;
}

int runTopology() {
  if (topologySpec.empty())
    return fail("topology needs --topology FILE|PRESET");
  Expected<weft::Topology> topology = weft::Topology::load(topologySpec);
  if (!topology)
    return fail(toString(topology.takeError()));
  if (!meshSpec.empty()) {
    auto axes = weft::parseMeshSpec(meshSpec);
    if (!axes)
      return fail(toString(axes.takeError()));
    if (Error e = topology->checkMesh(*axes))
      return fail(toString(std::move(e)));
  }
  outs() << formatv("{0:2}", topology->toJSON()) << "\n";
  return 0;
}

/// --timeline: `table` as simulated in `line`, drawn as SVG; nothing
/// without the flag.
int writeTimeline(const weft::pipeline::ScheduleTable &table,
                  const weft::pipeline::Timeline &line) {
  if (timelinePath.empty())
    return 0;
  std::error_code error;
  llvm::raw_fd_ostream svg(timelinePath, error);
  if (error)
    return fail(timelinePath + ": cannot write (" + error.message() + ")");
  svg << weft::pipeline::timelineSvg(table, line);
  return 0;
}

/// `weftc schedule`: a schedule table (passes/pipeline/Schedule.h) as each
/// rank runs it, proved deadlock-free, then its simulated bubble beside the
/// published formula's and the activations each rank holds at once.
int runSchedule() {
  namespace pl = weft::pipeline;
  Expected<pl::ScheduleKind> kind = pl::parseScheduleKind(scheduleKind);
  if (!kind)
    return fail("--schedule: " + toString(kind.takeError()));
  Expected<pl::ScheduleTable> table =
      pl::buildSchedule(*kind, pipelineRanks, microbatchCount, virtualStages);
  if (!table)
    return fail(toString(table.takeError()));
  // Unit F, B and W (a backward that is not split costs B + W): the
  // convention the bubble formulas assume.
  Expected<pl::Timeline> line = pl::simulateSchedule(*table);
  if (!line)
    return fail(toString(line.takeError()));
  outs() << formatv("schedule {0}: {1} ranks, {2} micro-batches, {3} "
                    "stage(s) per rank\n",
                    scheduleKind, table->ranks, table->microbatches,
                    table->chunks);
  for (int64_t r = 0; r < table->ranks; ++r) {
    outs() << "rank " << r << ":";
    for (const pl::Action &a : table->actions[r])
      outs() << " " << pl::actionName(a, table->chunks > 1);
    outs() << "\n";
  }
  outs() << formatv("bubble: {0:F4} simulated (F = B = W = 1), {1:F4} by the "
                    "formula\n",
                    line->bubbleFraction,
                    pl::formulaBubbleFraction(*kind, table->ranks,
                                              table->microbatches,
                                              table->chunks));
  outs() << "forwards awaiting their B, at most, per rank:";
  for (int64_t n : line->peakInFlight)
    outs() << " " << n;
  outs() << "\n";
  return writeTimeline(*table, *line);
}

/// With a topology: fails, naming each rank that would not fit a device
/// and what fills it, when the placed step `placed` (after
/// buildTrainingPrograms) needs more memory than a device has. A plan that
/// runs out of memory is refused here, not at run time.
LogicalResult checkFits(ModuleOp placed, const weft::Topology &topology) {
  FailureOr<weft::PlacementReport> report =
      weft::estimatePlacement(placed, lowersFp8Codes());
  if (failed(report))
    return failure();
  bool fits = true;
  for (const weft::RankEstimate &r : report->ranks)
    if (std::string over = weft::overMemory(r, topology); !over.empty()) {
      WithColor::error(errs(), "weftc") << over << "\n";
      fits = false;
    }
  if (!fits)
    WithColor::note(errs(), "weftc")
        << "the plan does not fit " << topology.name
        << "; less memory per rank: more tp or pp, zero=1|2|3, "
           "--recompute selective|full|budget=GiB, a smaller --batch or "
           "more micro-batches\n";
  return success(fits);
}

/// ZeRO-3 with micro-batches gathers each parameter once per step where
/// memory allows: when the plan leaves `gather` open and a rank would not
/// fit a device of `topology` that way, it gathers per micro-batch
/// instead, and says so. Fails only if the estimate cannot be made.
LogicalResult chooseGather(ModuleOp module, weft::TrainingOptions &options,
                           const weft::Topology &topology) {
  const weft::Plan &plan = options.plan;
  bool accumulates = plan.microbatches > 1 || plan.size("pp") > 1;
  if (plan.zero != 3 || !accumulates || !plan.gather.empty())
    return success();
  OwningOpRef<ModuleOp> trial = module.clone();
  weft::TrainingOptions once = options;
  once.plan.gather = "step";
  if (failed(weft::buildTrainingPrograms(*trial, once)))
    return failure();
  FailureOr<weft::PlacementReport> report =
      weft::estimatePlacement(*trial, lowersFp8Codes());
  if (failed(report))
    return failure();
  for (const weft::RankEstimate &r : report->ranks)
    if (std::string over = weft::overMemory(r, topology); !over.empty()) {
      WithColor::note(errs(), "weftc")
          << "gathering ZeRO-3 parameters once per step, " << over
          << "; they are gathered per micro-batch instead (gather=microbatch "
             "in the plan says so, gather=step insists)\n";
      options.plan.gather = "microbatch";
      break;
    }
  return success();
}

/// --report: the placed step's per-rank estimate (passes/costmodel/Report.h)
/// of `placed` (the weft programs) and, with a topology, the predicted time
/// of each program of `lowered` (sched; passes/costmodel/CostModel.h).
/// Either may be null.
int printReport(ModuleOp placed, ModuleOp lowered,
                const std::optional<weft::Topology> &topology,
                bool checkMemory = true) {
  llvm::json::Object json;
  if (placed) {
    FailureOr<weft::PlacementReport> report =
        weft::estimatePlacement(placed, lowersFp8Codes());
    if (failed(report))
      return 1;
    if (reportFormat == "json")
      json = report->toJSON();
    else
      outs() << report->table();
  }
  if (lowered && topology) {
    llvm::json::Array programs;
    for (auto program : lowered.getOps<weft::sched::ProgramOp>()) {
      FailureOr<weft::ProgramEstimate> estimate =
          weft::estimateProgram(program, *topology);
      if (failed(estimate))
        return 1;
      if (reportFormat == "json")
        programs.push_back(estimate->toJSON());
      else
        outs() << "\n" << estimate->table();
    }
    json["programs"] = std::move(programs);
  }
  if (reportFormat == "json")
    outs() << formatv("{0:2}", llvm::json::Value(std::move(json))) << "\n";
  // After the report, which shows what fills each rank.
  if (checkMemory && placed && topology && failed(checkFits(placed, *topology)))
    return 1;
  return 0;
}

/// --topology: the file or preset, or nothing without the flag.
FailureOr<std::optional<weft::Topology>> loadTopology() {
  if (topologySpec.empty())
    return std::optional<weft::Topology>();
  Expected<weft::Topology> topology = weft::Topology::load(topologySpec);
  if (!topology) {
    fail(toString(topology.takeError()));
    return failure();
  }
  return std::optional<weft::Topology>(std::move(*topology));
}

/// Whether --report or --report=json was given; a failure for another
/// format.
FailureOr<bool> reportWanted() {
  if (reportFormat.getNumOccurrences() == 0)
    return false;
  if (!reportFormat.empty() && reportFormat != "json") {
    fail("unknown --report format '" + reportFormat +
         "' (use --report or --report=json)");
    return failure();
  }
  return true;
}

/// The bundles --elastic MIN adds: the plan with fewer data-parallel
/// replicas, each rank keeping its micro-batch's rows (so its memory) and
/// the job its global batch, with more micro-batches. A size whose
/// micro-batches would not come out whole is left out.
struct ElasticVariant {
  int64_t dp;
  weft::Plan plan;
  std::string dir; // Inside the bundle.
};

FailureOr<SmallVector<ElasticVariant>>
elasticVariants(const weft::Plan &plan, int64_t batch, int64_t min) {
  int64_t dp = plan.size("dp"), ep = plan.size("ep");
  if (dp < 2 || min < 1 || min >= dp) {
    fail(formatv("--elastic {0}: the plan has dp={1}; --elastic MIN adds "
                 "bundles for dp from {1} - 1 down to MIN, so it needs "
                 "1 <= MIN < dp",
                 min, dp)
             .str());
    return failure();
  }
  int64_t rows = batch / (plan.microbatches * dp * ep);
  SmallVector<ElasticVariant> out;
  for (int64_t d = dp - 1; d >= min; --d) {
    if (batch % (d * ep * rows) != 0) {
      WithColor::note(errs(), "weftc")
          << formatv("--elastic: no bundle for dp={0}: the batch of {1} "
                     "does not split into micro-batches of {2} sequence(s) "
                     "per rank\n",
                     d, batch, rows);
      continue;
    }
    weft::Plan smaller = plan;
    for (auto &[axis, size] : smaller.axes)
      if (axis == "dp")
        size = d;
    smaller.microbatches = batch / (d * ep * rows);
    // One replica has nothing to shard ZeRO's state over.
    if (d == 1) {
      smaller.zero = 0;
      smaller.gather.clear();
    }
    out.push_back({d, smaller, "elastic/dp" + std::to_string(d)});
  }
  return out;
}

/// Sets `options`' FP8 fields from --fp8, --fp8-keep, --fp8-min-dim,
/// --fp8-history and --fp8-margin, or an error naming the flag at fault.
/// --fp8-min-dim auto judges each GEMM on --topology's device.
Error setFp8Options(weft::TrainingOptions &options) {
  int64_t minDim = 0;
  std::string device;
  if (fp8MinDim == "auto")
    device = topologySpec;
  else if (StringRef(fp8MinDim).getAsInteger(10, minDim))
    return createStringError("--fp8-min-dim: '" + fp8MinDim +
                             "' is not auto or a whole number");
  options.fp8 = {fp8Recipe, fp8Keep, minDim, fp8History, fp8Margin, device};
  return weft::checkFp8Options(options.fp8, "--fp8");
}

int compileBundle(MLIRContext &context, const std::string &planText,
                  std::optional<int64_t> givenBatch,
                  const std::string &outputPath, int64_t elastic) {
  int64_t batchSize = givenBatch.value_or(1);
  if (!emit.empty() && emit != "mlir" && emit != "sched" && emit != "kernels" &&
      emit != "cuda")
    return fail("unknown --emit '" + emit +
                "' (supported: mlir, sched, kernels, cuda)");
  if (emit.empty() && outputPath == "-" &&
      reportFormat.getNumOccurrences() == 0 && explainPath.empty())
    return fail(
        "compile needs -o bundle/ (or --emit=mlir, --report, --explain)");
  weft::Plan plan;
  if (!planText.empty()) {
    auto parsed = weft::parsePlan(planText);
    if (!parsed)
      return fail(toString(parsed.takeError()));
    plan = std::move(*parsed);
    // Without --batch, one sequence per data-parallel rank (dp x ep:
    // expert parallelism splits the batch too) and micro-batch.
    if (!givenBatch)
      batchSize = plan.size("dp") * plan.size("ep") * plan.microbatches;
  }
  // The programs run on one micro-batch: the model is built (a .mlir one
  // rewritten) at its size. Without --batch, a .mlir model's own is it.
  bool ownBatch = !modelPath.empty() && !givenBatch;
  if (!modelPath.empty() && givenBatch && *givenBatch < 1)
    return fail("--batch must be positive, got " + Twine(*givenBatch));
  if (!ownBatch && batchSize % plan.microbatches != 0)
    return fail(formatv("--batch {0} does not split into microbatches={1} "
                        "equal micro-batches",
                        batchSize, plan.microbatches)
                    .str());
  if (elastic && (!emit.empty() || outputPath == "-" ||
                  reportFormat.getNumOccurrences() || !timelinePath.empty()))
    return fail("--elastic adds bundles to a bundle: it needs -o bundle/ "
                "and no --emit, --report or --timeline");
  // At most 2^20: a multiple past any vocabulary is a typo.
  if (vocabDivisibleBy < 1 || vocabDivisibleBy > (1 << 20))
    return fail(formatv("--make-vocab-size-divisible-by must be from 1 to "
                        "1048576, got {0}",
                        vocabDivisibleBy.getValue())
                    .str());
  SourceMgr sources;
  Diagnostics diagnostics(sources, context);
  OwningOpRef<ModuleOp> module = loadModel(
      context, sources, seqLen, ownBatch ? 0 : batchSize / plan.microbatches,
      vocabDivisibleBy * plan.size("tp"));
  if (!module)
    return 1;
  auto forward = module->lookupSymbol<func::FuncOp>("forward");
  if (!forward)
    return fail((modelPath.empty() ? configPath : modelPath) +
                ": the model has no @forward function (the function "
                "weftc compiles: tokens and labels in, the loss out)");
  auto tokens =
      forward.getNumArguments()
          ? dyn_cast<RankedTensorType>(forward.getArgumentTypes().front())
          : RankedTensorType();
  if (!tokens || tokens.getRank() != 2 || !tokens.getElementType().isInteger())
    return forward.emitError("@forward must take [batch, seq] integer token "
                             "ids first"),
           1;
  batchSize = tokens.getDimSize(0) * plan.microbatches;
  if (int64_t groups = plan.size("dp") * plan.size("ep");
      plan.microbatches > 1 && (batchSize / plan.microbatches) % groups != 0)
    return fail(
        formatv("--batch {0} in microbatches={1} makes micro-batches "
                "of {2} sequence(s), which {3} does not divide",
                batchSize, plan.microbatches, batchSize / plan.microbatches,
                plan.size("ep") > 1 ? formatv("dp x ep = {0}", groups).str()
                                    : formatv("dp={0}", groups).str())
            .str());
  SmallVector<ElasticVariant> variants;
  if (elastic) {
    FailureOr<SmallVector<ElasticVariant>> found =
        elasticVariants(plan, batchSize, elastic);
    if (failed(found))
      return 1;
    variants = std::move(*found);
    // A .mlir model is rewritten for each variant's micro-batch: one that
    // cannot be fails before any bundle is written.
    if (!modelPath.empty())
      for (const ElasticVariant &v : variants) {
        OwningOpRef<ModuleOp> trial = module->clone();
        if (failed(weft::rebatch(trial->lookupSymbol<func::FuncOp>("forward"),
                                 batchSize / v.plan.microbatches)))
          return 1;
      }
  }
  if (failed(weft::checkForwardOps(forward)))
    return 1;
  if (forward.isExternal() || forward.getBody().getOps<weft::ParamOp>().empty())
    return forward.emitError("@forward declares no weft.param: a model "
                             "without parameters has nothing to train"),
           1;
  // A .mlir model computes in its GEMMs' type, whatever --dtype says.
  std::string dtype = dtypeName;
  if (!modelPath.empty()) {
    dtype = "f32";
    forward.walk([&](weft::MatmulOp mm) {
      Type t = mm.getLhs().getType().getElementType();
      dtype = t.isBF16() ? "bf16" : t.isF16() ? "f16" : "f32";
      return WalkResult::interrupt();
    });
  }
  // The step's batch: every micro-batch's sequences.
  llvm::json::Object meta{{"batch", tokens.getDimSize(0) * plan.microbatches},
                          {"microbatches", plan.microbatches},
                          {"seq", tokens.getDimSize(1)},
                          {"vocab", vocabOf(forward)},
                          {"dtype", dtype}};
  if (!configPath.empty())
    if (auto buffer = MemoryBuffer::getFile(configPath))
      if (auto config = llvm::json::parse((*buffer)->getBuffer()))
        meta["config"] = std::move(*config);
  // weft-run --elastic finds the smaller meshes' bundles here.
  if (elastic) {
    llvm::json::Array table;
    for (const ElasticVariant &v : variants)
      table.push_back(llvm::json::Object{{"dp", v.dp},
                                         {"microbatches", v.plan.microbatches},
                                         {"bundle", v.dir}});
    meta["elastic"] = std::move(table);
  }
  weft::TrainingOptions options;
  options.adamw = {beta1, beta2, adamEps, weightDecay, maxGradNorm};
  options.bucketMb = bucketMb;
  options.gemmEpilogues = gemmEpilogues;
  options.overlapCollectives = overlapCollectives;
  options.attentionScratchMb = attentionScratchMb;
  if (Expected<weft::RecomputeChoice> choice =
          weft::parseRecompute(recomputePolicy);
      !choice)
    return fail("--recompute: " + toString(choice.takeError()));
  options.recompute = recomputePolicy;
  if (Error e = setFp8Options(options))
    return fail(toString(std::move(e)));
  if (fp8Storage != "auto" && fp8Storage != "on" && fp8Storage != "off")
    return fail("--fp8-storage: '" + fp8Storage + "' is not auto, on or off");
  options.fp8Storage = fp8Storage;
  if (Expected<weft::ProbeChoice> choice = weft::parseProbes(probes); !choice)
    return fail("--probes: " + toString(choice.takeError()));
  options.probes = probes;
  // fp16 needs loss scaling (its gradients underflow without it); bf16 has
  // f32's range and does not.
  bool f16 = false;
  module->walk([&](Operation *op) {
    for (Type t : op->getResultTypes())
      f16 |= getElementTypeOrSelf(t).isF16();
  });
  options.lossScale = lossScale.getNumOccurrences() ? lossScale.getValue()
                      : f16                         ? 65536.0
                                                    : 0.0;
  if (options.lossScale < 0 || !std::isfinite(options.lossScale))
    return fail("--loss-scale must be 0 (off) or a positive finite scale");
  if (lossScaleWindow < 1)
    return fail("--loss-scale-window must be at least 1");
  options.lossScaleWindow = lossScaleWindow;
  // Named by their flags; the weft-train pipeline checks the same.
  if (Error e = weft::checkTrainingSettings(options.adamw, options.bucketMb,
                                            options.attentionScratchMb, "--"))
    return fail(toString(std::move(e)));
  options.plan = plan;
  options.sched = emit == "sched";
  if (target != "cpu" && target != "cuda")
    return fail("unknown --target '" + target + "' (supported: cpu, cuda)");
  if (target == "cuda") {
    SmallVector<StringRef> archs;
    StringRef(cudaArch).split(archs, ',', -1, /*KeepEmpty=*/false);
    for (StringRef arch : archs) {
      unsigned number = 0;
      if (!arch.consume_front("sm_") || arch.getAsInteger(10, number) ||
          number < 80)
        return fail("--cuda-arch: expected sm_80 or newer (e.g. sm_90), got '" +
                    cudaArch + "'");
      options.cudaArchs.push_back("sm_" + std::to_string(number));
    }
    if (options.cudaArchs.empty())
      return fail("--cuda-arch names no architecture");
  }
  FailureOr<std::optional<weft::Topology>> topology = loadTopology();
  if (failed(topology))
    return 1;
  if (*topology) {
    const weft::Topology *t = &**topology;
    if (Error e = t->checkMesh(options.plan.axes))
      return fail(toString(std::move(e)));
    // Tensor-parallel groups are consecutive ranks (tp is the innermost
    // mesh axis): they stay inside a node only if tp divides its devices.
    int64_t tp = options.plan.size("tp");
    if (tp > 1 && t->devicesPerNode % tp != 0)
      WithColor::warning(errs(), "weftc")
          << "tp=" << tp << " groups do not fit in the " << t->devicesPerNode
          << " devices of a node of " << t->name
          << ": tensor-parallel collectives will cross the inter-node links ("
          << formatv("{0:f0}", t->interNode.bandwidth / 1e9)
          << " GB/s instead of "
          << formatv("{0:f0}", t->intraNode.bandwidth / 1e9) << " GB/s)\n";
    if (failed(chooseGather(*module, options, *t)))
      return 1;
    // The peak weft-run's MFU is against: the device's dense peak for the
    // model's compute type (bf16's for bf16, f16 and FP8, as MFU is usually
    // quoted), per rank.
    // --fp8 was checked when the options were read.
    bool quantizes = cantFail(weft::parseFp8(fp8Recipe)).any();
    std::string type = dtype == "f32" && !quantizes ? "f32" : "bf16";
    if (auto peak = t->device.peakFlops.find(type);
        peak != t->device.peakFlops.end())
      meta["peak_flops_per_rank"] = peak->second;
  }
  if (!explainPath.empty() && !*topology)
    return fail("--explain needs --topology (the devices the plan runs on)");
  // --timeline draws the plan's pipeline schedule: the table the compiler
  // builds into the bundle (weft-pipeline-split), from the same generator;
  // --explain shows it too.
  std::string timelineText;
  if (!explainPath.empty() && plan.size("pp") > 1) {
    namespace pl = weft::pipeline;
    Expected<pl::ScheduleKind> kind = pl::parseScheduleKind(plan.schedule);
    Expected<pl::ScheduleTable> table =
        kind ? pl::buildSchedule(*kind, plan.size("pp"), plan.microbatches,
                                 plan.chunks)
             : kind.takeError();
    Expected<pl::Timeline> line =
        table ? pl::simulateSchedule(*table)
              : Expected<pl::Timeline>(table.takeError());
    if (!line)
      return fail(toString(line.takeError()));
    timelineText = pl::timelineSvg(*table, *line);
  }
  if (!timelinePath.empty()) {
    namespace pl = weft::pipeline;
    if (plan.size("pp") < 2)
      return fail("--timeline draws a pipeline schedule, but the plan has no "
                  "pp axis (e.g. --plan pp=4,microbatches=8)");
    Expected<pl::ScheduleKind> kind = pl::parseScheduleKind(plan.schedule);
    if (!kind)
      return fail(toString(kind.takeError()));
    Expected<pl::ScheduleTable> table = pl::buildSchedule(
        *kind, plan.size("pp"), plan.microbatches, plan.chunks);
    if (!table)
      return fail(toString(table.takeError()));
    Expected<pl::Timeline> line = pl::simulateSchedule(*table);
    if (!line)
      return fail(toString(line.takeError()));
    if (int rc = writeTimeline(*table, *line))
      return rc;
  }
  FailureOr<bool> wanted = reportWanted();
  if (failed(wanted))
    return 1;
  bool report = *wanted;
  // The pass manager takes the command line's --mlir-* flags (IR printing,
  // timing, crash reproducers).
  auto configure = [](PassManager &pm) -> LogicalResult {
    if (failed(applyPassManagerCLOptions(pm)))
      return failure();
    applyDefaultTimingPassManagerCLOptions(pm);
    return success();
  };
  // The memory report reads the weft programs, which lowering to sched
  // replaces; the time estimate reads the sched ones.
  // The placed weft programs the memory estimate, the fit check, the report
  // and the page read: built once, when first needed.
  OwningOpRef<ModuleOp> forReport;
  bool placedBuilt = false;
  if (report || !explainPath.empty())
    forReport = module->clone();
  // `setup` takes the command line's --mlir-* flags where this build is
  // the only one the command makes.
  auto placedStep =
      [&](llvm::function_ref<LogicalResult(PassManager &)> setup = {})
      -> FailureOr<ModuleOp> {
    if (!forReport)
      forReport = module->clone();
    if (!placedBuilt &&
        failed(weft::buildTrainingPrograms(*forReport, options, setup)))
      return failure();
    placedBuilt = true;
    return *forReport;
  };
  double tokensPerStep = double(tokens.getDimSize(0)) * plan.microbatches *
                         double(tokens.getDimSize(1));
  double peakPerRank = 0;
  if (const llvm::json::Value *peak = meta.get("peak_flops_per_rank"))
    peakPerRank = peak->getAsNumber().value_or(0);
  // The HTML page of the placed (`forReport`, built here) and lowered step.
  auto explain = [&](ModuleOp lowered) {
    if (explainPath.empty())
      return 0;
    if (failed(placedStep()))
      return 1;
    FailureOr<weft::PlacementReport> placement =
        weft::estimatePlacement(*forReport, lowersFp8Codes());
    if (failed(placement))
      return 1;
    weft::ExplainInput in;
    in.model =
        sys::path::filename(configPath.empty() ? modelPath.getValue()
                                               : configPath.getValue())
            .str() +
        formatv(", batch {0} x {1}", tokens.getDimSize(0) * plan.microbatches,
                tokens.getDimSize(1))
            .str();
    in.plan = planText;
    in.topology = &**topology;
    in.placement = std::move(*placement);
    in.lowered = lowered;
    in.tokensPerStep = tokensPerStep;
    in.peakFlopsPerRank = peakPerRank;
    in.timelineSvg = timelineText;
    in.searched = planSearched;
    in.alternatives = autoAlternatives;
    Expected<std::string> html = weft::explainHtml(in);
    if (!html)
      return fail("--explain: " + toString(html.takeError()));
    std::error_code error;
    llvm::raw_fd_ostream file(explainPath, error);
    if (error)
      return fail(explainPath + ": cannot write (" + error.message() + ")");
    file << *html;
    errs() << "wrote " << explainPath << "\n";
    // Without -o or --report nothing else said whether the plan fits.
    if (!report && outputPath == "-" &&
        failed(checkFits(*forReport, **topology)))
      return 1;
    return 0;
  };
  auto finishReport = [&](ModuleOp lowered, bool checkMemory = true) {
    if (failed(placedStep()))
      return 1;
    return printReport(*forReport, lowered, *topology, checkMemory);
  };
  if ((report || !explainPath.empty()) && outputPath == "-" && emit.empty()) {
    if (!*topology)
      return finishReport({});
    // The placed programs lowered as a bundle's are: the pipeline, and a
    // recomputation budget's search, run once.
    FailureOr<ModuleOp> placed = placedStep(configure);
    if (failed(placed))
      return 1;
    OwningOpRef<ModuleOp> lowered = placed->clone();
    if (failed(weft::lowerTrainingPrograms(*lowered, options, configure)))
      return 1;
    int rc = report ? finishReport(*lowered) : 0;
    return explain(*lowered) ? 1 : rc;
  }
  if (!emit.empty()) {
    if (failed(weft::buildTrainingPrograms(*module, options, configure)))
      return 1;
    // The emitted text goes to -o when given (a file, not a bundle).
    std::string error;
    std::unique_ptr<ToolOutputFile> out = openOutputFile(outputPath, &error);
    if (!out)
      return fail(error);
    if (emit == "kernels" || emit == "cuda") {
      FailureOr<std::string> source =
          emit == "cuda" ? weft::codegen::emitCudaKernelSource(*module)
                         : weft::codegen::emitKernelSource(*module);
      if (failed(source))
        return 1;
      out->os() << *source;
    } else {
      module->print(out->os());
      out->os() << "\n";
    }
    out->keep();
    return 0;
  }
  // A plan a device cannot hold is refused before a bundle is written.
  if (*topology) {
    FailureOr<ModuleOp> placed = placedStep();
    if (failed(placed) || failed(checkFits(*placed, **topology)))
      return 1;
  }
  if (failed(weft::compileSchedBundle(*module, outputPath, options,
                                      std::move(meta), configure)))
    return 1;
  // A step is what the train schedule runs: each program as many times as
  // it has runs (with micro-batches, @accumulate once per micro-batch).
  int64_t instructions = 0, arena = 0;
  if (auto train = module->lookupSymbol<weft::sched::ScheduleOp>("train"))
    train.walk([&](weft::sched::RunOp run) {
      auto program =
          module->lookupSymbol<weft::sched::ProgramOp>(run.getProgramAttr());
      for (Operation &op : program.getBody().front())
        instructions += isa<weft::sched::InstructionOpInterface>(op);
      arena = std::max(arena, *program.getArena());
    });
  errs() << formatv("wrote {0}: {1} instructions in a training step, arena "
                    "{2} bytes\n",
                    outputPath, instructions, arena);
  for (const ElasticVariant &v : variants) {
    SmallString<256> dir(outputPath);
    sys::path::append(dir, v.dir);
    if (int rc = compileBundle(context, v.plan.str(), batchSize,
                               std::string(dir), /*elastic=*/0))
      return rc;
  }
  int rc = report ? finishReport(*module, /*checkMemory=*/false) : 0;
  return explain(*module) ? 1 : rc;
}

/// The training settings the planner's slices compile with: the compile
/// flags' AdamW and buckets.
weft::TrainingOptions sliceOptions() {
  weft::TrainingOptions options;
  options.adamw = {beta1, beta2, adamEps, weightDecay, maxGradNorm};
  options.bucketMb = bucketMb;
  options.attentionScratchMb = attentionScratchMb;
  // A slice's FP8 GEMMs are judged on the device it is planned for, as
  // --fp8-min-dim auto judges a compiled plan's.
  options.fp8.device = topologySpec;
  return options;
}

/// What a planner run needs: the model (its config, or the graph read from
/// .mlir), the topology, and the slices' compiler (which keeps references
/// to them).
struct PlannerSetup {
  weft::ModelConfig config;
  OwningOpRef<ModuleOp> model; // A .mlir model; else the config's.
  weft::Topology topology;
  weft::planner::ModelShape shape;
  weft::TrainingOptions options;
  std::string dtype;
  int64_t seq = 0;

  weft::planner::ProfileFn profiler(MLIRContext &context,
                                    const weft::TrainingOptions &slices,
                                    bool cuda) const {
    return model ? weft::sliceProfiler(context, *model, shape, topology, slices,
                                       cuda)
                 : weft::sliceProfiler(context, config, seq, dtype, topology,
                                       slices, cuda);
  }
};

/// A .mlir model for the planner: its shape from the graph, --batch
/// defaulting to its own batch, and --seq and --dtype refused where they
/// disagree with it.
bool plannerModel(MLIRContext &context, PlannerSetup &setup) {
  SourceMgr sources;
  Diagnostics diagnostics(sources, context);
  setup.model = loadModel(context, sources, 0, 0);
  if (!setup.model)
    return false;
  auto forward = setup.model->lookupSymbol<func::FuncOp>("forward");
  if (forward && failed(weft::checkForwardOps(forward)))
    return false;
  Expected<weft::planner::ModelShape> shape = weft::modelShape(
      *setup.model, batchSize.getNumOccurrences() ? batchSize.getValue() : 0);
  if (!shape) {
    fail(modelPath + ": " + toString(shape.takeError()));
    return false;
  }
  setup.shape = std::move(*shape);
  setup.seq = setup.shape.seq;
  setup.dtype = setup.shape.narrow ? "bf16" : "f32";
  if (seqLen.getNumOccurrences() && seqLen != setup.seq) {
    fail(formatv("--seq {0} disagrees with {1}, whose sequences are {2} "
                 "tokens (the model's shape decides; drop the flag)",
                 seqLen.getValue(), modelPath, setup.seq)
             .str());
    return false;
  }
  if (dtypeName.getNumOccurrences()) {
    fail("--dtype: " + modelPath +
         " has its own types (the planner reads them); drop the flag");
    return false;
  }
  setup.shape.name = sys::path::filename(modelPath).str();
  return true;
}

/// The model (--config or a .mlir), --topology, --batch, --seq and --dtype
/// read for the planner (`what` names the command in errors).
std::unique_ptr<PlannerSetup> plannerSetup(MLIRContext &context,
                                           const Twine &what) {
  if (configPath.empty() && modelPath.empty()) {
    fail(what + " needs --config or a model.mlir (the planner compiles "
                "slices of the model)");
    return nullptr;
  }
  if (topologySpec.empty()) {
    fail(what + " needs --topology (the devices to plan for)");
    return nullptr;
  }
  Expected<weft::Topology> topology = weft::Topology::load(topologySpec);
  if (!topology) {
    fail(toString(topology.takeError()));
    return nullptr;
  }
  if (batchSize < 1) {
    fail("--batch must be positive, got " + Twine(batchSize.getValue()));
    return nullptr;
  }
  auto setup = std::make_unique<PlannerSetup>();
  setup->topology = std::move(*topology);
  setup->options = sliceOptions();
  if (!modelPath.empty())
    return plannerModel(context, *setup) ? std::move(setup) : nullptr;
  Expected<weft::ModelConfig> config = loadConfig();
  if (!config) {
    fail(toString(config.takeError()));
    return nullptr;
  }
  if (dtypeName != "f32" && dtypeName != "bf16" && dtypeName != "f16") {
    fail("--dtype must be f32, bf16 or f16, got '" + dtypeName + "'");
    return nullptr;
  }
  setup->config = std::move(*config);
  setup->seq = seqLen > 0 ? seqLen.getValue() : setup->config.maxPositions;
  if (setup->seq > setup->config.maxPositions) {
    fail(formatv("--seq {0} is more than the model's {1} positions", setup->seq,
                 setup->config.maxPositions)
             .str());
    return nullptr;
  }
  setup->dtype = dtypeName;
  setup->shape =
      weft::modelShape(setup->config, batchSize, setup->seq, dtypeName);
  setup->shape.name = sys::path::filename(configPath).str();
  return setup;
}

/// A comma list's parts.
std::vector<std::string> listOf(StringRef text) {
  SmallVector<StringRef> parts;
  text.split(parts, ',', -1, /*KeepEmpty=*/false);
  std::vector<std::string> out;
  for (StringRef part : parts)
    out.push_back(part.trim().str());
  return out;
}

/// The search's choices from --search-recompute, --search-fp8, --top and
/// --max-microbatch-size; fails naming a bad one.
FailureOr<weft::planner::SearchOptions> searchOptions() {
  weft::planner::SearchOptions options;
  options.topK = topPlans;
  options.maxMicrobatchSize = maxMicrobatchSize;
  options.recompute = listOf(searchRecompute);
  options.fp8 = listOf(searchFp8);
  if (topPlans < 1 || maxMicrobatchSize < 1) {
    fail("--top and --max-microbatch-size must be at least 1");
    return failure();
  }
  for (const std::string &r : options.recompute)
    if (r != "none" && r != "selective" && r != "full") {
      fail("--search-recompute: '" + r +
           "' is not a policy (none, selective, full)");
      return failure();
    }
  for (const std::string &f : options.fp8)
    if (f != "none")
      if (Expected<weft::Fp8Choice> choice = weft::parseFp8(f); !choice) {
        fail("--search-fp8: " + toString(choice.takeError()));
        return failure();
      }
  if (options.recompute.empty() || options.fp8.empty()) {
    fail("--search-recompute and --search-fp8 need at least one choice");
    return failure();
  }
  return options;
}

/// Whether the slices compile for CUDA: the topology's devices are GPUs
/// unless their name says cpu.
bool plansForCuda(const weft::Topology &topology) {
  return !StringRef(topology.device.name).contains_insensitive("cpu");
}

/// Plans whose slices did not build were left out of the search: says
/// which, so a compiler failure is not mistaken for a worse plan.
void noteUnbuilt(const weft::planner::SearchResult &result) {
  if (result.unbuilt.empty())
    return;
  WithColor::note(errs(), "weftc")
      << result.unbuilt.size()
      << " slice configuration(s) did not build; plans needing them were "
         "not searched:\n";
  for (const std::string &why : result.unbuilt)
    errs() << "  " << why << "\n";
}

/// `weftc plan`: the fastest plans that fit (or --evaluate: one plan's
/// prediction).
int runPlan(MLIRContext &context) {
  std::unique_ptr<PlannerSetup> setup = plannerSetup(context, "plan");
  if (!setup)
    return 1;
  bool cuda = plansForCuda(setup->topology);
  weft::planner::ProfileFn profile =
      setup->profiler(context, setup->options, cuda);
  auto started = std::chrono::steady_clock::now();
  auto seconds = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                         started)
        .count();
  };
  const weft::planner::ModelShape &shape = setup->shape;
  if (!evaluatePlan.empty()) {
    Expected<weft::Plan> plan = weft::parsePlan(evaluatePlan);
    if (!plan)
      return fail("--evaluate: " + toString(plan.takeError()));
    if (Error e = setup->topology.checkMesh(plan->axes))
      return fail("--evaluate: " + toString(std::move(e)));
    Expected<weft::planner::Candidate> candidate = weft::candidateFor(
        *plan, shape.batch, shape.layers, recomputePolicy, planFp8);
    if (!candidate)
      return fail("--evaluate: " + toString(candidate.takeError()));
    Expected<weft::planner::Estimate> estimate =
        weft::planner::evaluate(shape, setup->topology, *candidate, profile);
    if (!estimate)
      return fail("--evaluate: " + toString(estimate.takeError()));
    if (planFormat == "json") {
      outs() << formatv("{0:2}", json::Value(estimate->toJSON(shape.layers)))
             << "\n";
    } else {
      outs() << weft::planner::table({*estimate}, shape, setup->topology);
      outs() << formatv(
          "\ncompute {0:F1} ms, bubble {1:F1} ms, data-parallel "
          "{2:F1} ms, optimizer {3:F1} ms; {4:F1} TFLOP/s per "
          "device, HFU {5:F1}%\n",
          1e3 * estimate->computeSeconds, 1e3 * estimate->bubbleSeconds,
          1e3 * estimate->dpSeconds, 1e3 * estimate->optimizerSeconds,
          estimate->flopsPerDevice / 1e12, 100 * estimate->hfu);
    }
    if (!estimate->fits)
      return fail(estimate->why);
    return 0;
  }
  FailureOr<weft::planner::SearchOptions> options = searchOptions();
  if (failed(options))
    return 1;
  Expected<weft::planner::SearchResult> result =
      weft::planner::search(shape, setup->topology, *options, profile);
  if (!result)
    return fail((modelPath.empty() ? configPath : modelPath) + ": " +
                toString(result.takeError()));
  if (planFormat == "json") {
    json::Array best, others;
    for (const auto &e : result->best)
      best.push_back(e.toJSON(shape.layers));
    for (const auto &e : result->runnersUp)
      others.push_back(e.toJSON(shape.layers));
    outs() << formatv("{0:2}", json::Value(json::Object{
                                   {"plans", std::move(best)},
                                   {"runners_up", std::move(others)},
                                   {"evaluated", result->evaluated},
                                   {"pruned", result->pruned},
                                   {"slices", result->profiles},
                                   {"unbuilt", json::Array(result->unbuilt)}}))
           << "\n";
  } else {
    outs() << formatv("{0}, batch {1} x {2} ({3}) on {4}: the fastest plans "
                      "that fit\n\n",
                      shape.name, shape.batch, shape.seq, setup->dtype,
                      setup->topology.name);
    outs() << weft::planner::table(result->best, shape, setup->topology);
    if (!result->runnersUp.empty()) {
      outs() << "\nRunners-up (the best plan of each other choice):\n\n";
      outs() << weft::planner::table(result->runnersUp, shape, setup->topology);
    }
  }
  errs() << formatv("weftc: {0} plans evaluated ({1} placements pruned), {2} "
                    "slices compiled, in {3:F2} s\n",
                    result->evaluated, result->pruned, result->profiles,
                    seconds());
  noteUnbuilt(*result);
  return 0;
}

/// `--plan auto`: the planner's fastest plan for --config on --topology,
/// its recomputation and FP8 recipe set on the command line's options, and
/// the runners-up for --explain.
FailureOr<std::string>
autoPlan(MLIRContext &context,
         std::vector<weft::ExplainAlternative> &alternatives) {
  if (modelPath == "-") {
    fail("--plan auto reads the model twice (to plan, then to compile): "
         "give a file, not stdin");
    return failure();
  }
  std::unique_ptr<PlannerSetup> setup = plannerSetup(context, "--plan auto");
  if (!setup)
    return failure();
  FailureOr<weft::planner::SearchOptions> options = searchOptions();
  if (failed(options))
    return failure();
  // A .mlir model's step defaults to its own batch; the bundle is compiled
  // for the step searched.
  batchSize = setup->shape.batch;
  // A policy or recipe given on the command line is kept, not searched.
  if (recomputePolicy.getNumOccurrences()) {
    if (recomputePolicy != "none" && recomputePolicy != "selective" &&
        recomputePolicy != "full") {
      fail("--plan auto chooses recomputation per layer group; give one "
           "policy (--recompute none|selective|full) or --search-recompute, "
           "not '" +
           recomputePolicy + "'");
      return failure();
    }
    options->recompute = {recomputePolicy};
  }
  weft::TrainingOptions slices = setup->options;
  if (Error e = setFp8Options(slices)) {
    fail(toString(std::move(e)));
    return failure();
  }
  if (fp8Recipe.getNumOccurrences()) {
    if (!cantFail(weft::parseFp8(fp8Recipe)).layers.empty()) {
      fail("--plan auto chooses the FP8 recipe per pipeline rank; give one "
           "recipe (--fp8) or --search-fp8, not '" +
           fp8Recipe + "'");
      return failure();
    }
    options->fp8 = {fp8Recipe};
  }
  // The slices quantize as the bundle will (keep list, sizes, history);
  // the search sets their recipe.
  // As weftc plan: slices for the topology's devices, whatever the bundle
  // is built for.
  bool cuda = plansForCuda(setup->topology);
  if (cuda != (target == "cuda"))
    WithColor::warning(errs(), "weftc")
        << "--plan auto plans for " << setup->topology.name << "'s "
        << (cuda ? "GPUs" : "CPUs") << " but the bundle is built for --target "
        << target << "\n";
  weft::planner::ProfileFn profile = setup->profiler(context, slices, cuda);
  Expected<weft::planner::SearchResult> result =
      weft::planner::search(setup->shape, setup->topology, *options, profile);
  if (!result) {
    fail("--plan auto: " + toString(result.takeError()));
    return failure();
  }
  noteUnbuilt(*result);
  const weft::planner::Estimate &best = result->best.front();
  int64_t layers = setup->shape.layers;
  recomputePolicy = best.candidate.recompute(layers);
  fp8Recipe = best.candidate.fp8Choice(layers);
  WithColor::note(errs(), "weftc") << formatv(
      "--plan auto chose {0} with --recompute {1}{2}: predicted "
      "{3:F1} ms a step, {4:F0} tokens/s, MFU {5:F1}% on {6} "
      "(weftc plan lists the runners-up)\n",
      best.candidate.plan().empty() ? "one rank" : best.candidate.plan(),
      recomputePolicy.getValue(),
      fp8Recipe == "none" ? std::string() : ", --fp8 " + fp8Recipe,
      1e3 * best.stepSeconds, best.tokensPerSecond, 100 * best.mfu,
      setup->topology.name);
  auto add = [&](const weft::planner::Estimate &e) {
    alternatives.push_back({e.candidate.plan(), e.candidate.recompute(layers),
                            e.stepSeconds, e.peakBytes(), e.fits, e.why});
  };
  for (size_t i = 1; i < result->best.size(); ++i)
    add(result->best[i]);
  for (const auto &e : result->runnersUp)
    add(e);
  return best.candidate.plan();
}

int runCompile(MLIRContext &context) {
  if (planSpec == "auto") {
    std::vector<weft::ExplainAlternative> alternatives;
    FailureOr<std::string> chosen = autoPlan(context, alternatives);
    if (failed(chosen))
      return 1;
    autoAlternatives = std::move(alternatives);
    planSearched = true;
    return compileBundle(context, *chosen, batchSize.getValue(), outputPath,
                         elasticMin);
  }
  return compileBundle(context, planSpec,
                       batchSize.getNumOccurrences()
                           ? std::optional<int64_t>(batchSize)
                           : std::nullopt,
                       outputPath, elasticMin);
}

/// weftc export D --hf out/ [--config config.json]: the newest complete
/// checkpoint under D (or the step-<N> directory D) consolidated
/// (runtime/checkpoint/Checkpoint.h) into out/model.safetensors, loadable by
/// transformers with the model's config.json beside it.
int runExport() {
  if (checkpointPath.empty() || hfPath.empty())
    return fail("export needs a checkpoint directory and --hf DIR");
  std::string from;
  absl::StatusOr<std::vector<weft::runtime::TensorToWrite>> tensors =
      weft::runtime::consolidateCheckpoint(checkpointPath, from);
  if (!tensors.ok())
    return fail(tensors.status());
  if (std::error_code error = sys::fs::create_directories(hfPath.getValue()))
    return fail("cannot create '" + hfPath + "': " + error.message());
  SmallString<256> model(hfPath);
  sys::path::append(model, "model.safetensors");
  if (absl::Status s = weft::runtime::writeSafetensors(
          std::string(model), *tensors, {{"format", "pt"}});
      !s.ok())
    return fail(s);
  if (!exportConfig.empty()) {
    SmallString<256> config(hfPath);
    sys::path::append(config, "config.json");
    if (std::error_code error = sys::fs::copy_file(exportConfig, config))
      return fail("cannot copy '" + exportConfig + "' to '" + config +
                  "': " + error.message());
  }
  errs() << "weftc: wrote " << tensors->size() << " tensors of " << from
         << " to " << model << "\n";
  return 0;
}

/// `weftc inspect DIR`: the bundle's manifest read back as sched IR.
int runInspect(MLIRContext &context) {
  if (bundlePath.empty())
    return fail("inspect needs a bundle directory");
  SmallString<256> manifestPath(bundlePath);
  sys::path::append(manifestPath, "manifest.json");
  ErrorOr<std::unique_ptr<MemoryBuffer>> buffer =
      MemoryBuffer::getFile(manifestPath);
  if (!buffer)
    return fail("cannot read '" + manifestPath +
                "': " + buffer.getError().message());
  SourceMgr sources;
  Diagnostics diagnostics(sources, context);
  OwningOpRef<ModuleOp> module = weft::codegen::readSchedManifest(
      (*buffer)->getBuffer(), manifestPath, &context);
  if (!module)
    return 1;
  FailureOr<bool> report = reportWanted();
  if (failed(report))
    return 1;
  if (*report) {
    FailureOr<std::optional<weft::Topology>> topology = loadTopology();
    if (failed(topology))
      return 1;
    if (!*topology)
      return fail("inspect --report needs --topology FILE|PRESET");
    return printReport({}, *module, *topology);
  }
  module->print(outs());
  outs() << "\n";
  return 0;
}

int runEval(MLIRContext &context) {
  if (tokensPath.empty())
    return fail("eval needs --tokens");
  if (!tokenizer.empty() && tokenizer != "bytes")
    return fail("unknown --tokenizer '" + tokenizer + "' (supported: bytes)");
  if (tokenizer == "bytes" && tokenBytes.getNumOccurrences() > 0)
    return fail("--token-bytes is the width of a token file's ids; "
                "--tokenizer bytes reads text (one token per byte): give one "
                "or the other");
  absl::StatusOr<std::vector<uint32_t>> tokens =
      tokenizer == "bytes"
          ? weft::runtime::readByteTokens(tokensPath)
          : weft::runtime::readTokenFile(tokensPath, tokenBytes);
  if (!tokens.ok())
    return fail(tokens.status());
  if (batchSize <= 0)
    return fail("--batch must be positive");
  // Default sequence length: as long as the tokens allow (labels need one
  // extra token); a config clamps it to the model's positions.
  int64_t seq = seqLen > 0
                    ? seqLen
                    : (static_cast<int64_t>(tokens->size()) - 1) / batchSize;

  SourceMgr sources;
  Diagnostics diagnostics(sources, context);
  // A .mlir model is evaluated at its own batch unless --batch says.
  OwningOpRef<ModuleOp> module = loadModel(
      context, sources, seq,
      modelPath.empty() || batchSize.getNumOccurrences() ? batchSize.getValue()
                                                         : int64_t(0),
      /*vocabMultiple=*/1, /*first=*/true);
  if (!module)
    return 1;
  auto funcs = module->getOps<func::FuncOp>();
  if (funcs.empty())
    return fail((modelPath.empty() ? configPath : modelPath) +
                ": the module has no function to evaluate");
  func::FuncOp func = *funcs.begin();
  auto argType = [&](unsigned i) {
    return dyn_cast<RankedTensorType>(func.getArgumentTypes()[i]);
  };
  if (func.getNumArguments() != 2 || !argType(0) || argType(0) != argType(1) ||
      argType(0).getRank() != 2 || !argType(0).getElementType().isInteger() ||
      func.getNumResults() < 1)
    return fail("@" + func.getSymName() +
                " must take (tokens, labels) as two [batch, seq] integer "
                "tensors and return the loss first");
  auto lossType = dyn_cast<RankedTensorType>(func.getResultTypes()[0]);
  if (!lossType || lossType.getRank() != 0)
    return func.emitError("@")
               << func.getSymName() << " returns " << func.getResultTypes()[0]
               << " first, not a scalar loss",
           1;
  int64_t b = argType(0).getDimSize(0), s = argType(0).getDimSize(1);
  // A model read from .mlir has its sequence length (--batch rewrites its
  // batch); a --seq that says otherwise is refused rather than ignored.
  if (!modelPath.empty() && seqLen.getNumOccurrences() && seqLen != s)
    return fail(formatv("--seq {0} disagrees with {1}, whose inputs are "
                        "[{2}, {3}] (the model's shape decides; drop the "
                        "flag)",
                        seqLen.getValue(), modelPath, b, s)
                    .str());
  if (static_cast<int64_t>(tokens->size()) < b * s + 1)
    return fail(tokensPath + ": has " + Twine(tokens->size()) +
                " tokens; one batch of " + Twine(b) + " x " + Twine(s) +
                " needs " + Twine(b * s + 1));
  int64_t vocab = vocabOf(func);
  std::vector<uint32_t> window(tokens->begin(), tokens->begin() + b * s + 1);
  if (vocab > 0) {
    absl::Status range = weft::runtime::checkTokenRange(
        window, static_cast<uint32_t>(vocab), tokensPath);
    if (!range.ok())
      return fail(range);
  }
  weft::reference::Tensor ids({b, s}, {}), labels({b, s}, {});
  for (int64_t i = 0; i < b * s; ++i) {
    ids.data.push_back(window[i]);
    labels.data.push_back(window[i + 1]);
  }
  // Rows are consecutive windows of the stream: row r starts at r * s.

  weft::reference::ParamProvider provider;
  if (!weightsPath.empty()) {
    auto file = weft::runtime::SafetensorsFile::read(weightsPath);
    if (!file.ok())
      return fail(file.status());
    auto fromFile = weft::reference::safetensorsProvider(func, *file);
    if (!fromFile.ok())
      return fail(fromFile.status());
    provider = std::move(*fromFile);
  } else {
    provider = weft::reference::randomInitProvider(seed);
  }
  if (precision != "f32" && precision != "f64")
    return fail("--precision must be f32 or f64");
  auto results = weft::reference::evaluate(
      func, {ids, labels}, provider,
      precision == "f64" ? weft::reference::Precision::F64
                         : weft::reference::Precision::F32);
  if (failed(results))
    return 1;
  double loss = (*results)[0].data.at(0);
  outs() << formatv("loss {0:F6} over {1} tokens ({2} x {3})\n", loss, b * s, b,
                    s);
  if (vocab > 0)
    outs() << formatv("ln(vocab) = {0:F6}\n", std::log(double(vocab)));
  if (!logitsPath.empty()) {
    if (results->size() < 2)
      return fail("@" + func.getSymName() + " returns no logits to write");
    const weft::reference::Tensor &logits = (*results)[1];
    absl::Status st = weft::runtime::writeSafetensors(
        logitsPath,
        {{"logits", weft::runtime::DType::F32, logits.shape, logits.data}},
        {{"format", "pt"}, {"producer", "weftc eval"}});
    if (!st.ok())
      return fail(st);
  }
  return 0;
}

/// Registers MLIR's pass-manager, timing, context and printing flags
/// (--mlir-print-ir-after-all, --mlir-timing, --mlir-disable-threading, ...)
/// for `weftc compile`, the subcommand that runs a pass pipeline. MLIR
/// registers them on the top level, which a subcommand does not see.
void registerMlirOptions() {
  // --mlir-print-ir-after=<pass> and the like name registered passes.
  weft::registerAllPasses();
  registerPassManagerCLOptions();
  registerDefaultTimingManagerCLOptions();
  weft::registerContextOptionsQuietly();
  registerAsmPrinterCLOptions();
  SmallVector<cl::Option *> mlirOptions;
  for (auto &[name, option] :
       cl::getRegisteredOptions(cl::SubCommand::getTopLevel()))
    if (name.starts_with("mlir-") && !llvm::is_contained(mlirOptions, option))
      mlirOptions.push_back(option);
  for (cl::Option *option : mlirOptions) {
    option->removeArgument();
    option->addSubCommand(compileCmd);
    option->addArgument();
  }
}
} // namespace

/// `weftc explain ARGS -o page.html` is `weftc compile ARGS --explain
/// page.html`: the same model, plan (auto too) and topology flags, the
/// page instead of a bundle. Rewrites `args` so; false (with the error
/// said) when no page is named.
bool explainAsCompile(std::vector<const char *> &args,
                      std::vector<std::string> &storage) {
  if (args.size() < 2 || StringRef(args[1]) != "explain")
    return true;
  std::vector<const char *> out = {args[0], "compile"};
  bool named = false;
  for (size_t i = 2; i < args.size(); ++i) {
    StringRef arg(args[i]);
    if ((arg == "-o" || arg == "--o") && i + 1 < args.size()) {
      out.push_back("--explain");
      out.push_back(args[++i]);
      named = true;
    } else if (arg.consume_front("-o=") || arg.consume_front("--o=")) {
      storage.push_back(("--explain=" + arg).str());
      out.push_back(storage.back().c_str());
      named = true;
    } else {
      out.push_back(args[i]);
    }
  }
  if (!named) {
    fail("explain needs -o page.html (the page it writes)");
    return false;
  }
  args = std::move(out);
  return true;
}

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  registerMlirOptions();
  std::vector<const char *> args(argv, argv + argc);
  std::vector<std::string> storage;
  storage.reserve(argc);
  if (!explainAsCompile(args, storage))
    return 1;
  cl::ParseCommandLineOptions(
      int(args.size()), args.data(),
      "weftc: the Weft compiler\n\n"
      "  weftc import --config config.json --batch B --seq S -o model.mlir\n"
      "  weftc eval model.mlir|--config config.json [--weights W.safetensors]\n"
      "             --tokens FILE [--token-bytes 2|4 | --tokenizer bytes]\n"
      "             [--logits out.safetensors]\n"
      "  weftc compile model.mlir|--config config.json --batch B --seq S -o "
      "bundle/\n"
      "  weftc inspect bundle/\n"
      "  weftc export checkpoints/ --hf out/ [--config config.json]\n"
      "  weftc schedule --pp P --microbatches M --schedule 1f1b\n"
      "  weftc plan model.mlir|--config config.json --batch B --seq S "
      "--topology T\n"
      "  weftc explain model.mlir|--config config.json --plan auto|PLAN "
      "--topology T -o page.html\n\n"
      "Run 'weftc <subcommand> --help' for a subcommand's options.\n");
  // A flag given twice (--plan dp=2 --plan tp=2) would silently keep the
  // last; list options (cl::list) are meant to repeat.
  cl::SubCommand *active = importCmd     ? &importCmd
                           : evalCmd     ? &evalCmd
                           : compileCmd  ? &compileCmd
                           : topologyCmd ? &topologyCmd
                           : inspectCmd  ? &inspectCmd
                           : scheduleCmd ? &scheduleCmd
                           : exportCmd   ? &exportCmd
                           : planCmd     ? &planCmd
                                         : &cl::SubCommand::getTopLevel();
  for (auto &[name, option] : cl::getRegisteredOptions(*active))
    if (option->getNumOccurrences() > 1 &&
        option->getNumOccurrencesFlag() != cl::ZeroOrMore &&
        option->getNumOccurrencesFlag() != cl::OneOrMore &&
        !option->isPositional() && option->getMiscFlags() == 0 &&
        !name.starts_with("mlir-"))
      return fail("--" + name.str() + " is given " +
                  std::to_string(option->getNumOccurrences()) +
                  " times; give it once");
  if (seqLen < 0)
    return fail("--seq must be positive (or 0: the model's positions), got " +
                std::to_string(seqLen));
  DialectRegistry registry;
  weft::registerAllDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  if (importCmd)
    return runImport(context);
  if (evalCmd)
    return runEval(context);
  if (compileCmd)
    return runCompile(context);
  if (topologyCmd)
    return runTopology();
  if (inspectCmd)
    return runInspect(context);
  if (scheduleCmd)
    return runSchedule();
  if (planCmd)
    return runPlan(context);
  if (exportCmd)
    return runExport();
  return fail("expected a subcommand: import, eval, compile, plan, "
              "inspect, export, topology or schedule (see --help)");
}
