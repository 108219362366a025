//===- SchedBundle.h - load and validate a bundle v2 manifest ---*- C++ -*-===//
//
// The runtime's reading of bundle v2 (docs/bundle-format.md): a serialized
// `sched` module as plain structs. A bundle is untrusted input, so the
// loader checks all of it before anything runs: every id, type, offset
// (overflow-safe), live range and stream order, each instruction's shapes
// and attributes as the sched verifiers (dialects/sched/IR/SchedOps.cpp)
// check them, the schedules, and that the kernel files are the bundle's
// own. A loaded SchedBundle needs no further checks to execute; an error
// names the program, the instruction (or buffer) and the field.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_EXEC_SCHEDBUNDLE_H
#define WEFT_RUNTIME_EXEC_SCHEDBUNDLE_H

#include "runtime/support/Float.h"

#include "absl/status/statusor.h"
#include <nlohmann/json.hpp>

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace weft::runtime::sched {

/// A bundle is a directory holding kManifestFile, whose "format" is
/// kBundleFormat and "version" kSchedBundleVersion (docs/bundle-format.md).
inline constexpr const char *kBundleFormat = "weft-bundle";
inline constexpr const char *kManifestFile = "manifest.json";
inline constexpr int kSchedBundleVersion = 2;

/// A buffer's type: a dense row-major tensor of `shape` (at most 2^62
/// bytes, so byte sizes never overflow) of f32, bf16, f16, f8e4m3fn,
/// f8e5m2, i32 or i64.
struct TensorType {
  std::vector<int64_t> shape;
  DType dtype = DType::F32;

  int64_t numElements() const;
  int64_t bytes() const;
  bool operator==(const TensorType &o) const {
    return shape == o.shape && dtype == o.dtype;
  }
  bool operator!=(const TensorType &o) const { return !(*this == o); }
};

/// The bundle's name of a dtype ("f32", "f8e4m3fn", ...).
const char *dtypeText(DType type);

/// Per dimension, the mesh axes it is split over (empty: whole).
using Split = std::vector<std::vector<std::string>>;

struct Mesh {
  std::string name;
  std::vector<std::string> axes;
  std::vector<int64_t> sizes;

  /// The size of axis `name`, or 0 if there is none.
  int64_t axisSize(std::string_view name) const;
};

enum class InitKind { Zeros, Ones, Normal, Uniform };

struct Param {
  std::string name;
  TensorType type;
  InitKind init = InitKind::Zeros;
  std::optional<double> scale; // Exactly for normal and uniform.
  bool state = false;
  std::optional<Split> split;
  /// Held only by the ranks of this pp coordinate (a pipeline stage's).
  std::optional<int64_t> pipelineRank;
  /// Checkpoints hold only this many rows of dimension 0 of the global
  /// tensor (the rest is padding: dropped on save, zeros on load).
  std::optional<int64_t> checkpointRows;
  /// Checkpoints hold the global tensor in this shape (same elements, same
  /// order).
  std::optional<std::vector<int64_t>> checkpointShape;
  /// Checkpoints hold the global tensor [N, ...] as N tensors, slice j
  /// named by this pattern with `*` replaced by j (stackedName).
  std::optional<std::string> checkpointStack;
  /// A state tensor no step reads as an earlier step left it (an
  /// accumulator the step zeroes, a gather refilled before use):
  /// checkpoints skip it.
  bool transient = false;
  /// A health probe (transient state): the metric it holds after a step,
  /// logged and then zeroed, and how the step's micro-batches folded into
  /// it.
  std::optional<std::string> probe;
  enum class ProbeFold {
    Mean,
    Rms,
    Max,
    MaxOverMean,
    Last
  } probeFold = ProbeFold::Last;
};

struct Constant {
  std::string name;
  TensorType type;
  bool splat = false; // One value for every element.
  /// The values: `floats` for a float dtype, `ints` for i32 and i64.
  std::vector<double> floats;
  std::vector<int64_t> ints;
};

enum class ScalarType { I64, I32, F32, F64 };

struct KernelDecl {
  std::string name;
  std::vector<TensorType> inputs, outputs;
  std::vector<ScalarType> scalars;
};

/// A file of the bundle directory (a plain name) and its XXH3-128 hash.
struct KernelFile {
  std::string file;
  std::string xxh3;
};

struct KernelFiles {
  std::optional<KernelFile> cpu;
  std::map<std::string, KernelFile> cuda; // By architecture ("sm_90").
  std::optional<std::string> source;
};

struct ProgramInput {
  TensorType type;
  std::optional<Split> split;
  /// 0, or the 2N chunks its sequence (dimension 1) is held in under
  /// context parallelism: chunks i and 2N - 1 - i come i-th.
  int64_t sequenceChunks = 0;
};

struct Buffer {
  enum class Kind { Input, Param, Constant, Alloc, View };
  Kind kind = Kind::Alloc;
  TensorType type;
  int64_t index = 0;           // Input: the program input.
  std::string name;            // Param, Constant: the declaration.
  int64_t offset = 0;          // Alloc: arena bytes; View: bytes into `of`.
  int64_t first = 0, last = 0; // Alloc: live range (instruction indices).
  int64_t of = 0;              // View: the buffer it is inside.
};

enum class Op {
  Launch,
  Gemm,
  Attention,
  AttentionGrad,
  Embedding,
  EmbeddingGrad,
  Rope,
  CrossEntropy,
  CrossEntropyGrad,
  Reduce,
  Softmax,
  Dropout,
  Fp8Amax,
  Fp8Quantize,
  Fp8Cast,
  Fp8ScaleInv,
  Fp8Encode,
  Fp8Decode,
  Fp8GroupQuantize,
  Fp8GroupCast,
  LayerNormGrad,
  RmsNormGrad,
  OneHot,
  TopK,
  TopKGating,
  ExpertRoute,
  ExpertDispatch,
  ExpertCombine,
  ExpertGather,
  ExpertScatter,
  GroupedMatmul,
  GroupedMatmulWgrad,
  Copy,
  Fill,
  Collective,
  RaggedAllToAll,
  Send,
  Recv,
  RingShift,
  Record,
  Wait,
};

/// The op's mnemonic in the manifest ("gemm", "cross_entropy_grad").
const char *opName(Op op);

enum class Epilogue { None, Bias, Gelu, BiasGelu, Dgelu };
enum class Reduction { None, Sum, Max, Mean };
enum class CollectiveKind { AllReduce, AllGather, ReduceScatter, AllToAll };
enum class AttentionAlgorithm { GemmSoftmax, Flash };

struct Scalar {
  ScalarType type = ScalarType::I64;
  int64_t i = 0; // i64, i32
  double f = 0;  // f32, f64
};

/// Operands: inputs, then outputs.
struct LaunchAttrs {
  std::string kernel;
  int64_t kernelIndex = 0; // Into SchedBundle::kernelDecls.
  std::array<int64_t, 3> grid{};
  int64_t block = 0;
  int64_t inputs = 0, outputs = 0;
  std::vector<Scalar> scalars;
};
/// Operands: a, b, c, [bias], [aux], [scale_a, scale_b].
struct GemmAttrs {
  std::array<int64_t, 3> mnk{}, ld{}, strides{};
  int64_t batch = 0;
  Epilogue epilogue = Epilogue::None;
  bool transposeA = false, transposeB = false, accumulate = false;
  bool hasBias = false, hasAux = false, hasScales = false;
  /// How scale_a and scale_b scale A [m, k] and B [n, k]
  /// (WEFT_FP8_SCALE_*: one f32, per row, 1 x 128 or 128 x 128 blocks).
  int scaleModeA = 0, scaleModeB = 0;
};
/// A dropout mask's place in the global tensor it is drawn for: its input
/// cut per dimension over `split`'s axes (empty: unsplit), and dimension 0
/// into `microbatches`, the micro-batch read from operand `microbatch`.
struct MaskBlockAttrs {
  Split split;
  bool hasMicrobatch = false;
  int64_t microbatches = 1;
};
/// attention: q, k, v, out, lse, [query_positions, key_positions],
/// [entropy], [step], [microbatch], [scratch]; attention_grad: q, k, v, out,
/// lse, dout, dq, dk, dv, [query_positions, key_positions], [lse_grad], [step],
/// [microbatch], [scratch].
struct AttentionAttrs {
  double scale = 0;
  bool causal = false;
  AttentionAlgorithm algorithm = AttentionAlgorithm::Flash;
  bool hasPositions = false, hasLseGrad = false;
  /// Attention only: each row's entropy (f32 [B, Hq, S]) is written too.
  bool hasEntropy = false;
  /// Dropout of the probabilities (rate 0: none), as sched.dropout's of
  /// the [B, Hq, S, T] tensor of them; the block's split is the query's.
  double dropout = 0;
  int64_t seed = 0;
  bool hasStep = false;
  MaskBlockAttrs block;

  /// Where the optional operands sit (-1: absent), after the fixed ones of
  /// attention (`grad` false) or attention_grad.
  struct Optional {
    int64_t queryPositions = -1, keyPositions = -1, lseGrad = -1, entropy = -1,
            step = -1, microbatch = -1;
  };
  Optional optionalOperands(bool grad) const {
    Optional o;
    int64_t next = grad ? 9 : 5;
    if (hasPositions) {
      o.queryPositions = next++;
      o.keyPositions = next++;
    }
    if (hasLseGrad)
      o.lseGrad = next++;
    if (hasEntropy)
      o.entropy = next++;
    if (hasStep)
      o.step = next++;
    if (block.hasMicrobatch)
      o.microbatch = next++;
    return o;
  }
};
/// embedding, embedding_grad.
struct VocabAttrs {
  std::vector<std::string> vocabAxes;
};
/// rope: input, out, [positions].
struct RopeAttrs {
  double theta = 0;
  int64_t positionOffset = 0;
  bool inverse = false;
  bool hasPositions = false;
};
/// cross_entropy, cross_entropy_grad.
struct CrossEntropyAttrs {
  int64_t ignoreIndex = 0;
  std::vector<std::string> vocabAxes;
};
struct ReduceAttrs {
  Reduction reduction = Reduction::Sum;
  std::vector<int64_t> dims;
};
struct SoftmaxAttrs {
  int64_t dim = 0;
};
/// Operands: input, out, [step].
struct DropoutAttrs {
  double rate = 0;
  int64_t seed = 0;
  bool hasStep = false;
  MaskBlockAttrs block;
  /// Operand `positions` (after the counters): dimension 1's elements are
  /// the sequence's positions[s].
  bool hasPositions = false;
};
/// fp8_quantize (its blocks are the input's shape over the amax's),
/// fp8_cast (one block; the format is its out's), fp8_scale_inv (as
/// fp8_cast's; the format is the codes'), fp8_encode and
/// fp8_decode (blocks as fp8_quantize's; the format is the codes').
struct Fp8QuantizeAttrs {
  bool e4m3 = true; // Else f8e5m2.
  bool pow2 = false;
  /// fp8_cast: out holds the last two dims swapped; fp8_scale_inv: the
  /// scales are for the codes so transposed.
  bool transpose = false;
  /// fp8_cast: where scale_inv keeps its blocks' scales (WEFT_FP8_SCALE_*
  /// of runtime/support/Fp8Scaling.h); fp8CastBlocks says the blocks.
  int scaleMode = 0;
};

/// An fp8_cast's blocks as a matrix of its input (the last dimension the
/// columns, the others rows), from the input's and amax's shapes; the
/// loader checked they are such blocks.
std::pair<int64_t, int64_t> fp8CastBlocks(const std::vector<int64_t> &input,
                                          const std::vector<int64_t> &amax);
/// An fp8_cast's input (or fp8_scale_inv's codes) as the kernels read it:
/// [batch, rows, cols] (the last two dimensions a matrix), cut into the
/// blocks fp8CastBlocks gives of the matrix [batch * rows, cols].
struct Fp8CastGeometry {
  int64_t batch = 1, rows = 1, cols = 1, blockRows = 1, blockCols = 1;
};
Fp8CastGeometry fp8CastGeometry(const std::vector<int64_t> &input,
                                const std::vector<int64_t> &amax);
/// layer_norm_grad, rms_norm_grad.
struct NormGradAttrs {
  double epsilon = 0;
};
struct TopKAttrs {
  int64_t k = 0;
};
struct TopKGatingAttrs {
  int64_t k = 0;
  bool normalize = false;
};
struct ExpertRouteAttrs {
  int64_t capacity = 0; // 0: dropless.
  std::vector<std::string> tokenAxes;
};
/// fp8_group_quantize (format given) and fp8_group_cast (the format is
/// out's): tiles of tileRows of each expert's rows (0: all of them).
struct Fp8GroupAttrs {
  bool e4m3 = true;
  bool pow2 = false;
  int64_t tileRows = 0;
  int64_t experts = 1;
};
/// grouped_matmul_wgrad: lhs, rhs, sizes, out, [scale_lhs, scale_rhs]; FP8
/// operands transposed and expert-major ([P, N], [Q, N]) with scales per
/// tile of tileRows of an expert's rows and column.
struct GroupedWgradAttrs {
  bool hasScales = false;
  int64_t tileRows = 0;
};
/// grouped_matmul: input, weight, sizes, out, [scale_input, scale_weight].
struct GroupedMatmulAttrs {
  bool transposeRhs = false;
  /// FP8 codes with scales of the input [N, K] and the weight [E * M, K]
  /// (WEFT_FP8_SCALE_*, as GemmAttrs's).
  bool hasScales = false;
  int scaleModeInput = 0, scaleModeWeight = 0;
};
struct CopyAttrs {
  std::vector<int64_t> sizes, src, dst;
  struct ByRank {
    std::vector<std::string> axes;
    int64_t step = 0;
  };
  std::optional<ByRank> byRank;
};
struct FillAttrs {
  double value = 0;
};
/// Operands: input, output, [counts].
struct CollectiveAttrs {
  CollectiveKind kind = CollectiveKind::AllReduce;
  Reduction reduction = Reduction::None;
  std::vector<std::string> axes;
};
/// Operands: input, send_sizes, recv_sizes, output.
struct RaggedAttrs {
  std::vector<std::string> axes;
};
/// send, recv.
struct PeerAttrs {
  std::string axis;
  int64_t delta = 0, tag = 0;
};
/// record, wait.
struct EventAttrs {
  int64_t event = 0;
};

/// monostate: fp8_amax, one_hot, expert_dispatch, expert_combine,
/// expert_gather, expert_scatter.
using InstructionAttrs = std::variant<
    std::monostate, LaunchAttrs, GemmAttrs, AttentionAttrs, VocabAttrs,
    RopeAttrs, CrossEntropyAttrs, ReduceAttrs, SoftmaxAttrs, DropoutAttrs,
    Fp8QuantizeAttrs, NormGradAttrs, TopKAttrs, TopKGatingAttrs,
    ExpertRouteAttrs, GroupedMatmulAttrs, Fp8GroupAttrs, GroupedWgradAttrs,
    CopyAttrs, FillAttrs, CollectiveAttrs, RaggedAttrs, PeerAttrs, EventAttrs>;

struct Instruction {
  Op op = Op::Fill;
  int64_t stream = 0;            // Into Program::streams.
  std::vector<int64_t> operands; // Buffer ids, in the op's ODS order.
  InstructionAttrs attrs;
  /// The manifest's `has_scratch`, which exactly the ops that may take a
  /// GPU scratch carry (attention, attention_grad, reduce, layer_norm_grad,
  /// rms_norm_grad, cross_entropy, cross_entropy_grad): the last operand is
  /// then that scratch, read and written, f32 and of at least the bytes
  /// dialects/sched/IR/ScratchLayout.h states. False for every other op. The
  /// CPU ignores a scratch.
  bool hasScratch = false;
  /// The manifest's optional `layer`: the model layer the instruction
  /// computes ("transformer.h.0.mlp"), for messages; "" when not known.
  std::string layer;

  template <typename T> const T &as() const { return std::get<T>(attrs); }
};

struct Assign {
  std::string param;
  int64_t buffer = 0;
};

struct Output {
  std::string name;
  int64_t buffer = 0;
  std::optional<Split> split;
};

struct Program {
  std::string name;
  int64_t arena = 0, align = 1, events = 0;
  std::vector<std::string> streams;
  std::vector<ProgramInput> inputs;
  std::vector<Buffer> buffers;
  std::vector<Instruction> instructions;
  std::vector<Assign> assigns;
  std::vector<Output> outputs;
  /// Whether running it changes a param: by an assign, or by an
  /// instruction that writes one in place (the optimizer's update).
  bool writesParams = false;
};

struct Run {
  std::string program;
  int64_t programIndex = 0; // Into SchedBundle::programs.
  int64_t microbatch = 0, chunk = 0;
};

struct Sequence {
  std::optional<std::string> axis; // Absent: every rank.
  std::optional<int64_t> coordinate;
  std::vector<Run> runs;
};

struct Schedule {
  std::string name;
  int64_t microbatches = 1;
  std::vector<Sequence> sequences;
};

struct SchedBundle {
  std::string dir;
  /// The XXH3-128 of the manifest's text: it lists every kernel file's hash,
  /// so it names the whole bundle (ranks compare it at rendezvous).
  std::string manifestXxh3;
  nlohmann::json meta; // For reports; nothing executes from it.
  KernelFiles kernels;
  std::optional<Mesh> mesh; // Absent: one rank.
  std::vector<Param> params;
  std::vector<Constant> constants;
  std::vector<KernelDecl> kernelDecls;
  std::vector<Program> programs;
  std::vector<Schedule> schedules;

  const Program *program(std::string_view name) const;
  const Param *param(std::string_view name) const;
  const Constant *constant(std::string_view name) const;
  const Schedule *schedule(std::string_view name) const;
  /// The train schedule's first program (over every sequence) taking the
  /// step's tokens ([rows, seq] I32) first: its first input's split lays
  /// the step's batch out on the ranks. Null if none does.
  const Program *tokensProgram() const;
  /// The sequence of `schedule` that rank `rank` runs (the loader checked
  /// there is one for every rank: one for all, or one per coordinate).
  const Sequence &sequenceFor(const Schedule &schedule, int64_t rank) const;
};

/// Reads `dir/manifest.json` and validates it whole, kernel files and their
/// hashes included. Errors start with the manifest's path.
absl::StatusOr<SchedBundle> loadSchedBundle(const std::string &dir);

/// The same checks on manifest text; kernel files are looked for (and
/// hashed) in `dirForKernelFiles`.
absl::StatusOr<SchedBundle>
parseSchedManifest(std::string_view json, const std::string &dirForKernelFiles);

/// The XXH3-128 hash of `bytes` as the manifest's `xxh3` field spells it:
/// 32 lowercase hex digits, high 64 bits first (as `xxhsum -H2` prints).
std::string xxh3Hex(std::string_view bytes);

} // namespace weft::runtime::sched

#endif // WEFT_RUNTIME_EXEC_SCHEDBUNDLE_H
