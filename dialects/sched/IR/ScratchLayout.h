//===- ScratchLayout.h - what a GPU instruction's scratch holds -*- C++ -*-===//
//
// Several sched instructions are more than one kernel on a GPU: a reduction
// is a pass over chunks of the reduced elements and a finishing pass, a norm
// gradient a row pass and a two-pass column sum, cross-entropy a row pass and
// a total, MoE routing a slot table, attention through GEMMs a scores and a
// probabilities plane. Between those kernels they keep intermediates in the
// instruction's `scratch` operand, which the lowering allocates (so the memory
// plan places it) and the verifier checks. This header is the one statement
// of each layout and of the chunk geometry the passes use: the lowering sizes
// scratch with it, the sched verifiers and the runtime's bundle loader check
// it, the GPU runtime takes offsets and launch shapes from it. It is part of
// the bundle format, so it is plain C++ with no MLIR: the runtime includes
// it too.
//
// Every count is checked: a function returns nullopt when a size would not
// fit in int64 (the verifiers report it; nothing that reaches the runtime
// does).
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_DIALECTS_SCHED_IR_SCRATCHLAYOUT_H
#define WEFT_DIALECTS_SCHED_IR_SCRATCHLAYOUT_H

#include <algorithm>
#include <cstdint>
#include <optional>

namespace weft::sched::scratch {

/// Regions of one scratch buffer start this many bytes apart at least
/// (cuBLASLt and vector loads want aligned operands).
inline constexpr int64_t kRegionAlign = 256;
/// The GPU library kernels' block size (ops.cu).
inline constexpr int64_t kThreads = 256;

inline std::optional<int64_t> mul(std::optional<int64_t> a, int64_t b) {
  int64_t r;
  if (!a || __builtin_mul_overflow(*a, b, &r))
    return std::nullopt;
  return r;
}
inline std::optional<int64_t> add(std::optional<int64_t> a,
                                  std::optional<int64_t> b) {
  int64_t r;
  if (!a || !b || __builtin_add_overflow(*a, *b, &r))
    return std::nullopt;
  return r;
}
inline std::optional<int64_t> alignUp(std::optional<int64_t> bytes) {
  std::optional<int64_t> up = add(bytes, kRegionAlign - 1);
  if (!up)
    return std::nullopt;
  return *up / kRegionAlign * kRegionAlign;
}

/// The bytes of a layout (nullopt: it overflowed), for the checks that
/// need only its size.
template <typename Layout>
std::optional<int64_t> bytesOf(const std::optional<Layout> &layout) {
  if (!layout)
    return std::nullopt;
  return layout->bytes;
}

/// How many chunks a two-pass reduction splits `length` reduced elements
/// into, with `columns` blocks across the outputs and `depth` threads on
/// each output: about 2048 blocks in all, enough to fill a GPU, but at
/// least 16 elements a thread, and at most a grid's 65535 rows.
inline int64_t partialChunks(int64_t columns, int64_t length, int64_t depth) {
  constexpr int64_t kPartialBlocks = 2048;
  int64_t wide = (kPartialBlocks + columns - 1) / std::max<int64_t>(columns, 1);
  int64_t deep = length / (16 * depth) + (length % (16 * depth) != 0);
  return std::clamp<int64_t>(std::min(wide, deep), 1, 65535);
}

/// sched.reduce of `outputs` results over `reduced` elements each: blocks
/// of `width` outputs (grid x: `columns`) by `chunks` chunks of `chunk`
/// reduced elements (grid y), each writing f64 partials [chunks, outputs]
/// at offset 0; the finishing pass combines them per output.
struct ReduceLayout {
  int64_t width = 1, columns = 1, chunks = 1, chunk = 0;
  int64_t bytes = 0;
};
inline std::optional<ReduceLayout> reduceLayout(int64_t outputs,
                                                int64_t reduced) {
  ReduceLayout l;
  l.width = outputs >= 32 ? 32 : 1;
  l.columns = std::max<int64_t>((outputs + l.width - 1) / l.width, 1);
  l.chunks = partialChunks(l.columns, reduced, kThreads / l.width);
  l.chunk = reduced / l.chunks + (reduced % l.chunks != 0);
  std::optional<int64_t> bytes =
      mul(mul(std::max<int64_t>(outputs, 1), l.chunks), 8);
  if (!bytes)
    return std::nullopt;
  l.bytes = *bytes;
  return l;
}

/// sched.layer_norm_grad / rms_norm_grad over `rows` rows of `dim`: f64 row
/// statistics [rows, 2] at offset 0, then f64 column partials [chunks, dim,
/// 2] (weight and bias gradients) at `partialsOffset`, from blocks of 32
/// columns (grid x: `columns`) by `chunks` chunks of `chunk` rows (grid y).
struct NormGradLayout {
  int64_t columns = 1, chunks = 1, chunk = 0;
  int64_t partialsOffset = 0, bytes = 0;
};
inline std::optional<NormGradLayout> normGradLayout(int64_t rows, int64_t dim) {
  NormGradLayout l;
  l.columns = std::max<int64_t>((dim + 31) / 32, 1);
  l.chunks = partialChunks(l.columns, rows, kThreads / 32);
  l.chunk = rows / l.chunks + (rows % l.chunks != 0);
  std::optional<int64_t> offset = alignUp(mul(rows, 16));
  std::optional<int64_t> bytes = add(offset, mul(mul(dim, l.chunks), 16));
  if (!bytes)
    return std::nullopt;
  l.partialsOffset = *offset;
  l.bytes = *bytes;
  return l;
}

/// sched.cross_entropy(_grad) over `rows` positions: f32 row statistics
/// [3, rows] (row maxima, sums of exponentials, target logits) at offset 0,
/// then the f64 count of positions not ignored (the mean's divisor, which
/// the gradient reads) at `totalOffset`.
struct CrossEntropyLayout {
  int64_t totalOffset = 0, bytes = 0;
};
inline std::optional<CrossEntropyLayout> crossEntropyLayout(int64_t rows) {
  CrossEntropyLayout l;
  std::optional<int64_t> offset = alignUp(mul(rows, 12));
  std::optional<int64_t> bytes = add(offset, 8);
  if (!bytes)
    return std::nullopt;
  l.totalOffset = *offset;
  l.bytes = *bytes;
  return l;
}

/// sched.expert_route over [T, k] indices and `experts` experts whose tokens
/// are split over a group of `group` ranks (token_axes): this rank's pairs
/// per (choice, expert) as f32 [k, E] at offset 0, every member's [G, k, E]
/// at `allOffset` (the all-gather's output), and i32 [E] counters at
/// `seenOffset`. A route over one rank needs none (0 bytes).
struct ExpertRouteLayout {
  int64_t allOffset = 0, seenOffset = 0, bytes = 0;
};
inline std::optional<ExpertRouteLayout>
expertRouteLayout(int64_t k, int64_t experts, int64_t group) {
  ExpertRouteLayout l;
  if (group <= 1)
    return l;
  std::optional<int64_t> cells = mul(k, experts);
  std::optional<int64_t> allOffset = alignUp(mul(cells, 4));
  std::optional<int64_t> seenOffset =
      alignUp(add(allOffset, mul(mul(cells, group), 4)));
  std::optional<int64_t> bytes = add(seenOffset, mul(experts, 4));
  if (!bytes)
    return std::nullopt;
  l.allOffset = *allOffset;
  l.seenOffset = *seenOffset;
  l.bytes = *bytes;
  return l;
}

/// sched.ragged_all_to_all of `rows` [N, D] over a group of `group`: the
/// blocks sent, each member's padded to N rows, f32 [G, N, D] at offset 0,
/// the blocks received, as many, at `recvOffset`, and at `offsetsOffset`
/// each member's first row, sent and received, i64 [2, G + 1]. A group of
/// one sends to itself: only the offsets.
struct RaggedLayout {
  int64_t recvOffset = 0, offsetsOffset = 0, bytes = 0;
};
inline std::optional<RaggedLayout> raggedLayout(int64_t group, int64_t rows,
                                                int64_t dim) {
  RaggedLayout l;
  if (group <= 1) {
    l.bytes = 32;
    return l;
  }
  std::optional<int64_t> block = mul(mul(mul(rows, dim), group), 4);
  std::optional<int64_t> recvOffset = alignUp(block);
  std::optional<int64_t> offsetsOffset = alignUp(add(recvOffset, block));
  std::optional<int64_t> bytes = add(offsetsOffset, mul(group + 1, 16));
  if (!bytes)
    return std::nullopt;
  l.recvOffset = *recvOffset;
  l.offsetsOffset = *offsetsOffset;
  l.bytes = *bytes;
  return l;
}

/// Attention over q [B, S, Hq, D] and k [B, T, Hkv, D] with elements of
/// `elementBytes`. gemm_softmax keeps f32 scores [B, Hq, S, T] at offset 0
/// and the probabilities in q's type, of the same shape, at `probsOffset`
/// (the backward reuses them for dP and dS); every backward adds the f32 row
/// term delta [B, Hq, S] at `deltaOffset`; the flash forward needs none, the
/// flash backward only delta (at 0).
struct AttentionLayout {
  int64_t probsOffset = 0, deltaOffset = 0, bytes = 0;
};
inline std::optional<AttentionLayout>
attentionLayout(bool gemmSoftmax, bool grad, int64_t b, int64_t s, int64_t hq,
                int64_t t, int64_t elementBytes) {
  AttentionLayout l;
  std::optional<int64_t> rows = mul(mul(b, hq), s);
  std::optional<int64_t> delta = mul(rows, 4);
  std::optional<int64_t> planes = gemmSoftmax ? mul(rows, t) : 0;
  std::optional<int64_t> probs = mul(planes, 4);
  std::optional<int64_t> end = add(probs, mul(planes, elementBytes));
  if (!end || !delta)
    return std::nullopt;
  l.probsOffset = *probs;
  l.deltaOffset = *end;
  std::optional<int64_t> bytes = grad ? add(end, delta) : end;
  if (!bytes)
    return std::nullopt;
  l.bytes = *bytes;
  return l;
}
/// Whether gemm_softmax can run q, k, v: cuBLASLt wants every row of S, T,
/// D and Dv elements 16-byte aligned.
inline bool attentionRowsAligned(int64_t s, int64_t t, int64_t d, int64_t dv,
                                 int64_t elementBytes) {
  int64_t align = 16 / elementBytes;
  return s % align == 0 && t % align == 0 && d % align == 0 && dv % align == 0;
}

} // namespace weft::sched::scratch

#endif // WEFT_DIALECTS_SCHED_IR_SCRATCHLAYOUT_H
