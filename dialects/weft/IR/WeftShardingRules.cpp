//===- WeftShardingRules.cpp - sharding rules of weft ops -----------------===//

#include "dialects/weft/IR/WeftOps.h"

#include "llvm/ADT/StringExtras.h"

#include <numeric>

using namespace mlir;
using namespace weft;

bool ShardingRule::isReduction(int64_t factor) const {
  if (llvm::is_contained(selfCombined, factor))
    return false;
  for (const auto &dims : results)
    if (llvm::is_contained(dims, factor))
      return false;
  for (const auto &dims : operands)
    if (llvm::is_contained(dims, factor))
      return true;
  return false;
}

std::string ShardingRule::str() const {
  auto letter = [](int64_t f) {
    return f == kWhole ? std::string("-")
                       : std::string(1, static_cast<char>('i' + f));
  };
  auto list = [&](ArrayRef<SmallVector<int64_t>> values) {
    std::string out = "(";
    for (auto [i, dims] : llvm::enumerate(values)) {
      out += i ? ", [" : "[";
      out += llvm::join(llvm::map_range(dims, letter), ", ");
      out += "]";
    }
    return out + ")";
  };
  std::string out = list(operands) + " -> " + list(results) + " {";
  for (auto [f, size] : llvm::enumerate(factorSizes)) {
    out += (f ? ", " : "") + letter(f) + "=" + std::to_string(size);
    if (factorGranules[f] > 1) // Split only between whole granules.
      out += "/" + std::to_string(factorGranules[f]);
  }
  out += "}";
  SmallVector<std::string> reductions;
  for (int64_t f = 0; f < static_cast<int64_t>(factorSizes.size()); ++f)
    if (isReduction(f))
      reductions.push_back(letter(f));
  if (!reductions.empty())
    out += (meanReduction  ? " mean={"
            : maxReduction ? " max={"
                           : " reduction={") +
           llvm::join(reductions, ", ") + "}";
  if (!selfCombined.empty())
    out += " combined={" +
           llvm::join(llvm::map_range(selfCombined, letter), ", ") + "}";
  return out;
}

namespace {
ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

/// Every dimension of every operand and the result is its own factor,
/// shared positionally: an elementwise op splits any way.
ShardingRule elementwise(Operation *op) {
  ShardingRule rule;
  SmallVector<int64_t> dims = rule.addFactors(shapeOf(op->getResult(0)));
  for (unsigned i = 0; i < op->getNumOperands(); ++i)
    rule.operands.push_back(dims);
  rule.results.push_back(dims);
  return rule;
}

/// Rows of the last dimension stay whole (norms, softmax-like ops); every
/// leading dimension may split. `vectors` operands are [D] weights.
ShardingRule rowwise(Value input, unsigned vectors) {
  ShardingRule rule;
  SmallVector<int64_t> dims = rule.addFactors(shapeOf(input).drop_back());
  dims.push_back(ShardingRule::kWhole);
  rule.operands.push_back(dims);
  for (unsigned i = 0; i < vectors; ++i)
    rule.operands.push_back({ShardingRule::kWhole});
  rule.results.push_back(dims);
  return rule;
}

/// Kept dims split; reduced dims are reduction factors when partial results
/// can be combined by a collective (`splitReduced`), else whole.
ShardingRule reduction(Value input, ArrayRef<int64_t> reduced,
                       bool splitReduced = true) {
  ShardingRule rule;
  SmallVector<int64_t> in, out;
  ArrayRef<int64_t> shape = shapeOf(input);
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
    bool isReduced = llvm::is_contained(reduced, d);
    int64_t f = isReduced && !splitReduced ? ShardingRule::kWhole
                                           : rule.addFactor(shape[d]);
    in.push_back(f);
    if (!isReduced)
      out.push_back(f);
  }
  rule.operands.push_back(in);
  rule.results.push_back(out);
  return rule;
}
} // namespace

#define WEFT_ELEMENTWISE_RULE(OP)                                              \
  ShardingRule OP::getShardingRule() { return elementwise(*this); }
WEFT_ELEMENTWISE_RULE(NegOp)
WEFT_ELEMENTWISE_RULE(ExpOp)
WEFT_ELEMENTWISE_RULE(LogOp)
WEFT_ELEMENTWISE_RULE(TanhOp)
WEFT_ELEMENTWISE_RULE(SqrtOp)
WEFT_ELEMENTWISE_RULE(RsqrtOp)
WEFT_ELEMENTWISE_RULE(SquareOp)
WEFT_ELEMENTWISE_RULE(GeluOp)
WEFT_ELEMENTWISE_RULE(SiluOp)
WEFT_ELEMENTWISE_RULE(AddOp)
WEFT_ELEMENTWISE_RULE(SubOp)
WEFT_ELEMENTWISE_RULE(MulOp)
WEFT_ELEMENTWISE_RULE(DivOp)
WEFT_ELEMENTWISE_RULE(MaxOp)
WEFT_ELEMENTWISE_RULE(GeOp)
WEFT_ELEMENTWISE_RULE(SelectOp)
WEFT_ELEMENTWISE_RULE(GeluGradOp)
WEFT_ELEMENTWISE_RULE(SiluGradOp)
#undef WEFT_ELEMENTWISE_RULE

ShardingRule ReduceSumOp::getShardingRule() {
  return reduction(getInput(), getDims());
}
ShardingRule ReduceMaxOp::getShardingRule() {
  // Collectives combine by sum or mean only, so reduced dims stay whole.
  return reduction(getInput(), getDims(), /*splitReduced=*/false);
}
ShardingRule ReduceMeanOp::getShardingRule() {
  ShardingRule rule = reduction(getInput(), getDims());
  rule.meanReduction = true;
  return rule;
}

/// FP8 blocks of `shape` laid out as `grid`: per dimension, the factor of
/// the tensor and of its block maxima. One element per block (grid ==
/// size) and blocks of several (tiles) split both alike, a tile never cut
/// across ranks (the factor's granule); one block (grid == 1) splits the
/// tensor only, its maximum combined over the split. `backward` (a
/// backward re-quantization's block sizes, or none) keeps its tiles whole
/// too.
static std::pair<SmallVector<int64_t>, SmallVector<int64_t>>
fp8Factors(ShardingRule &rule, ArrayRef<int64_t> shape, ArrayRef<int64_t> grid,
           std::optional<ArrayRef<int64_t>> backward = std::nullopt) {
  SmallVector<int64_t> tensor, maxima;
  for (auto [d, size, blocks] : llvm::enumerate(shape, grid)) {
    int64_t granule =
        std::lcm(blocks > 1 ? size / blocks : 1,
                 backward && (*backward)[d] < size ? (*backward)[d] : 1);
    int64_t f = size > 1 ? rule.addFactor(size, granule) : ShardingRule::kWhole;
    tensor.push_back(f);
    maxima.push_back(blocks > 1 ? f : ShardingRule::kWhole);
  }
  return {tensor, maxima};
}

ShardingRule Fp8AmaxOp::getShardingRule() {
  ShardingRule rule;
  auto [in, out] = fp8Factors(rule, shapeOf(getInput()), getType().getShape());
  rule.operands.push_back(in);
  rule.results.push_back(out);
  rule.maxReduction = true;
  return rule;
}

ShardingRule Fp8QuantizeOp::getShardingRule() {
  ShardingRule rule;
  auto [x, amax] = fp8Factors(rule, shapeOf(getInput()), shapeOf(getAmax()),
                              getBackwardBlock());
  rule.operands = {x, amax};
  rule.results.push_back(x);
  return rule;
}

ShardingRule Fp8QuantizeGradOp::getShardingRule() {
  // Its gradient's blocks: partitioning records the axes of a split
  // dimension one block spans (kAmaxAxesAttr). A delayed-scaling history
  // (one value per block, each a maximum over ranks) stays whole.
  ShardingRule rule;
  SmallVector<int64_t> grid = fp8Grid(shapeOf(getInput()), getBlock());
  SmallVector<int64_t> dims =
      fp8Factors(rule, shapeOf(getInput()), grid, getBackwardBlock()).first;
  rule.operands.push_back(dims);
  if (getHistory())
    rule.operands.emplace_back(dims.size(), ShardingRule::kWhole);
  rule.results.push_back(dims);
  return rule;
}

/// Any split: the mask is the global tensor's (partitioning records the
/// split on the op, `split`). The step and micro-batch counters are whole.
ShardingRule DropoutOp::getShardingRule() {
  ShardingRule rule;
  SmallVector<int64_t> dims = rule.addFactors(shapeOf(getInput()));
  rule.operands.push_back(dims);
  for (Value counter : {getStep(), getMicrobatch()})
    if (counter)
      rule.operands.emplace_back();
  if (getPositions()) // One per element of dimension 1, split as it is.
    rule.operands.push_back({dims[1]});
  rule.results.push_back(dims);
  return rule;
}

ShardingRule LayerNormOp::getShardingRule() { return rowwise(getInput(), 2); }
ShardingRule RMSNormOp::getShardingRule() { return rowwise(getInput(), 1); }

/// Routing is per token: the tokens split, the experts stay whole.
ShardingRule TopKGatingOp::getShardingRule() {
  ShardingRule rule = rowwise(getLogits(), 0);
  rule.results.push_back(rule.results.front());
  return rule;
}

/// Every index is its own row; the classes stay whole.
ShardingRule OneHotOp::getShardingRule() {
  ShardingRule rule;
  SmallVector<int64_t> dims = rule.addFactors(shapeOf(getIndices()));
  rule.operands.push_back(dims);
  dims.push_back(ShardingRule::kWhole);
  rule.results.push_back(dims);
  return rule;
}

ShardingRule MatmulOp::getShardingRule() {
  // Batch dims, then m, n and the contracted k (a reduction: splitting it,
  // as Megatron's row-parallel layers do, leaves partial sums).
  ShardingRule rule;
  ArrayRef<int64_t> out = shapeOf(getResult());
  int64_t batch = static_cast<int64_t>(out.size()) - 2;
  SmallVector<int64_t> batchFactors = rule.addFactors(out.take_front(batch));
  int64_t m = rule.addFactor(out[batch]), n = rule.addFactor(out[batch + 1]);
  ArrayRef<int64_t> ls = shapeOf(getLhs());
  int64_t k = rule.addFactor(getTransposeLhs() ? ls[ls.size() - 2] : ls.back());
  auto operand = [&](Value v, int64_t rowFactor, int64_t colFactor) {
    SmallVector<int64_t> dims;
    if (shapeOf(v).size() > 2)
      dims.append(batchFactors);
    dims.push_back(rowFactor);
    dims.push_back(colFactor);
    return dims;
  };
  rule.operands.push_back(getTransposeLhs() ? operand(getLhs(), k, m)
                                            : operand(getLhs(), m, k));
  rule.operands.push_back(getTransposeRhs() ? operand(getRhs(), n, k)
                                            : operand(getRhs(), k, n));
  SmallVector<int64_t> result(batchFactors);
  result.push_back(m);
  result.push_back(n);
  rule.results.push_back(result);
  return rule;
}

ShardingRule TransposeOp::getShardingRule() {
  ShardingRule rule;
  SmallVector<int64_t> in = rule.addFactors(shapeOf(getInput()));
  SmallVector<int64_t> out;
  for (int64_t p : getPermutation())
    out.push_back(in[p]);
  rule.operands.push_back(in);
  rule.results.push_back(out);
  return rule;
}

ShardingRule EmbeddingOp::getShardingRule() {
  // Token dims split freely; the feature dim splits with the table's columns.
  // Splitting the vocabulary (Megatron's vocabulary-parallel embedding)
  // makes it a reduction: each rank looks up the ids in its rows, zeros
  // elsewhere (`weft.vocab_axes`), and the partial rows are summed.
  ShardingRule rule;
  SmallVector<int64_t> ids = rule.addFactors(shapeOf(getIds()));
  int64_t d = rule.addFactor(shapeOf(getTable())[1]);
  int64_t v = rule.addFactor(shapeOf(getTable())[0]);
  rule.vocabFactor = v;
  rule.operands.push_back({v, d});
  rule.operands.push_back(ids);
  SmallVector<int64_t> out(ids);
  out.push_back(d);
  rule.results.push_back(out);
  return rule;
}

ShardingRule AttentionOp::getShardingRule() {
  // Batch and heads split; head dims stay whole. Query head h reads kv head
  // h / (Hq / Hkv), so splitting both head dims into the same number of
  // contiguous blocks keeps every group on one device: the kv heads share
  // the query heads' factor (each dim must divide the split).
  // The sequences split only with positions (a mask by index would change
  // with the block): queries s and keys t are factors, and splitting them
  // is no rule a factor can state (every query needs every key), so the
  // partitioner runs such an attention as a ring (context parallelism).
  ShardingRule rule;
  ArrayRef<int64_t> q = shapeOf(getQuery());
  int64_t whole = ShardingRule::kWhole;
  int64_t b = rule.addFactor(q[0]), h = rule.addFactor(q[2]);
  int64_t s = whole, t = whole;
  if (getQueryPositions()) {
    s = rule.addFactor(q[1]);
    t = rule.addFactor(shapeOf(getKey())[1]);
  }
  rule.operands.push_back({b, s, h, whole});
  rule.operands.push_back({b, t, h, whole});
  rule.operands.push_back({b, t, h, whole});
  if (getQueryPositions()) {
    rule.operands.push_back({s});
    rule.operands.push_back({t});
  }
  // Dropout's counters are whole; its mask follows the split (`split`).
  for (Value counter : {getStep(), getMicrobatch()})
    if (counter)
      rule.operands.emplace_back();
  rule.results.push_back({b, s, h, whole});
  rule.results.push_back({b, h, s}); // lse [B, Hq, S]
  return rule;
}

ShardingRule AttentionEntropyOp::getShardingRule() {
  // As attention's: batch and heads split (kv heads with the query heads'
  // factor). Each row needs every key, so the keys stay whole; with
  // positions the queries (and their lse and positions) may split, each
  // rank computing its own rows against all keys (context parallelism
  // gathers the keys, not the queries).
  ShardingRule rule;
  ArrayRef<int64_t> q = shapeOf(getQuery());
  int64_t whole = ShardingRule::kWhole;
  int64_t b = rule.addFactor(q[0]), h = rule.addFactor(q[2]);
  int64_t s = getQueryPositions() ? rule.addFactor(q[1]) : whole;
  rule.operands.push_back({b, s, h, whole});
  rule.operands.push_back({b, whole, h, whole});
  rule.operands.push_back({b, h, s}); // lse [B, Hq, S]
  if (getQueryPositions()) {
    rule.operands.push_back({s});
    rule.operands.push_back({whole});
  }
  rule.results.push_back({b, h, s});
  return rule;
}

/// A factor for every dimension of `shape` except `whole`.
static SmallVector<int64_t> allButOne(ShardingRule &rule,
                                      ArrayRef<int64_t> shape, uint64_t whole) {
  SmallVector<int64_t> dims;
  for (auto [d, size] : llvm::enumerate(shape))
    dims.push_back(d == whole ? ShardingRule::kWhole : rule.addFactor(size));
  return dims;
}

ShardingRule PowOp::getShardingRule() { return elementwise(*this); }
ShardingRule CastOp::getShardingRule() { return elementwise(*this); }

ShardingRule SoftmaxOp::getShardingRule() {
  // The softmax dimension stays whole; every other dimension splits.
  ShardingRule rule;
  SmallVector<int64_t> dims = allButOne(rule, shapeOf(getInput()), getDim());
  rule.operands.push_back(dims);
  rule.results.push_back(dims);
  return rule;
}

ShardingRule RopeOp::getShardingRule() {
  // Batch and heads split; the rotated pairs stay whole. The sequence splits
  // only with its positions beside it (as data, split alike): by index, a
  // block would rotate from position 0.
  ShardingRule rule;
  ArrayRef<int64_t> shape = shapeOf(getInput());
  int64_t b = rule.addFactor(shape[0]), h = rule.addFactor(shape[2]);
  int64_t s = getPositions() ? rule.addFactor(shape[1]) : ShardingRule::kWhole;
  SmallVector<int64_t> dims = {b, s, h, ShardingRule::kWhole};
  rule.operands.push_back(dims);
  if (getPositions())
    rule.operands.push_back({s});
  rule.results.push_back(dims);
  return rule;
}

ShardingRule CrossEntropyOp::getShardingRule() {
  // Token dims are reductions into the scalar mean. The vocabulary may
  // split (Megatron's vocabulary-parallel cross-entropy): the op then
  // all-reduces the row max, the sum of exponentials and the target logit
  // itself (`weft.vocab_axes`), so its result is whole.
  ShardingRule rule;
  SmallVector<int64_t> tokens = rule.addFactors(shapeOf(getLabels()));
  SmallVector<int64_t> logits(tokens);
  int64_t vocab = rule.addFactor(shapeOf(getLogits()).back());
  logits.push_back(vocab);
  rule.selfCombined.push_back(vocab);
  rule.vocabFactor = vocab;
  rule.operands.push_back(logits);
  rule.operands.push_back(tokens);
  rule.results.push_back({});
  rule.meanReduction = true;
  return rule;
}

ShardingRule BroadcastOp::getShardingRule() {
  // Result dims are factors; an input dim follows its result dim unless it
  // is a size-1 dimension being repeated.
  ShardingRule rule;
  ArrayRef<int64_t> in = shapeOf(getInput()), out = shapeOf(getResult());
  SmallVector<int64_t> result = rule.addFactors(out);
  SmallVector<int64_t> input;
  for (auto [d, target] : llvm::enumerate(getDims()))
    input.push_back(in[d] == out[target] ? result[target]
                                         : ShardingRule::kWhole);
  rule.operands.push_back(input);
  rule.results.push_back(result);
  return rule;
}

ShardingRule SliceOp::getShardingRule() {
  // Dimensions taken whole split; sliced ones stay whole.
  ShardingRule rule;
  ArrayRef<int64_t> in = shapeOf(getInput());
  SmallVector<int64_t> dims;
  for (auto [d, size] : llvm::enumerate(in))
    dims.push_back(getStarts()[d] == 0 && getLimits()[d] == size
                       ? rule.addFactor(size)
                       : ShardingRule::kWhole);
  rule.operands.push_back(dims);
  rule.results.push_back(dims);
  return rule;
}

ShardingRule ConcatOp::getShardingRule() {
  ShardingRule rule;
  SmallVector<int64_t> dims = allButOne(rule, shapeOf(getResult()), getDim());
  for (unsigned i = 0; i < getInputs().size(); ++i)
    rule.operands.push_back(dims);
  rule.results.push_back(dims);
  return rule;
}

ShardingRule ReshapeOp::getShardingRule() {
  // Both shapes are cut into the smallest runs of dimensions with equal
  // products ([B, S, H*D] -> [B, S, H, D] gives (B)(S)(H*D | H, D)). In each
  // run the major dimensions of larger than one share a factor: k
  // contiguous blocks of one are k contiguous blocks of the other whenever k
  // divides both. The rest of the run stays whole.
  ShardingRule rule;
  ArrayRef<int64_t> in = shapeOf(getInput()), out = shapeOf(getResult());
  SmallVector<int64_t> input(in.size(), ShardingRule::kWhole),
      output(out.size(), ShardingRule::kWhole);
  size_t i = 0, o = 0;
  while (i < in.size() && o < out.size()) {
    size_t i0 = i, o0 = o;
    int64_t pin = in[i++], pout = out[o++];
    while (pin != pout) {
      if (pin < pout && i < in.size())
        pin *= in[i++];
      else if (o < out.size())
        pout *= out[o++];
      else
        break;
    }
    auto major = [](ArrayRef<int64_t> dims, size_t from, size_t to) {
      for (size_t d = from; d < to; ++d)
        if (dims[d] > 1)
          return static_cast<int64_t>(d);
      return static_cast<int64_t>(-1);
    };
    int64_t mi = major(in, i0, i), mo = major(out, o0, o);
    if (mi >= 0 && mo >= 0)
      input[mi] = output[mo] = rule.addFactor(std::gcd(in[mi], out[mo]));
  }
  rule.operands.push_back(input);
  rule.results.push_back(output);
  return rule;
}
