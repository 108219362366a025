//===- Evaluator.cpp - the reference evaluator of weft graphs -------------===//
//
// One handler per op, each a direct transcription of the op's description.
// Loops are deliberately naive; clarity is the point.
//
//===----------------------------------------------------------------------===//

#include "compiler/reference/Evaluator.h"

#include "runtime/support/Epilogue.h"
#include "runtime/support/Float.h"
#include "runtime/support/Random.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <unistd.h>

using namespace mlir;

namespace weft::reference {

Tensor Tensor::zeros(std::vector<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return Tensor(std::move(shape), std::vector<double>(n, 0.0));
}

int64_t Tensor::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

namespace {
using runtime::DType;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

std::vector<int64_t> shapeOf(Value v) {
  auto type = cast<RankedTensorType>(v.getType());
  return std::vector<int64_t>(type.getShape().begin(), type.getShape().end());
}

/// The block of each element of `shape` under a grid of `grid` blocks:
/// its coordinates divided by the block sizes, numbered row-major over the
/// grid (weft.fp8_amax's and weft.fp8_quantize's blocks).
std::vector<int64_t> fp8BlockOf(const std::vector<int64_t> &shape,
                                const std::vector<int64_t> &grid) {
  auto rank = static_cast<int64_t>(shape.size());
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  std::vector<int64_t> blockOf(n), index(rank, 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t b = 0;
    for (int64_t d = 0; d < rank; ++d)
      b = b * grid[d] + index[d] / (shape[d] / grid[d]);
    blockOf[i] = b;
    for (int64_t d = rank - 1; d >= 0 && ++index[d] == shape[d]; --d)
      index[d] = 0;
  }
  return blockOf;
}

/// weft.fp8_amax: the largest |x| (in f32) of each of `blocks` blocks, a
/// NaN counting as infinity; element i is in block blockOf[i] (none if
/// negative).
std::vector<double>
fp8Amax(const Tensor &x, const std::vector<int64_t> &blockOf, int64_t blocks) {
  std::vector<double> amax(blocks, 0.0);
  for (size_t i = 0; i < x.data.size(); ++i) {
    if (blockOf[i] < 0)
      continue;
    double a = std::fabs(static_cast<float>(x.data[i]));
    double &m = amax[blockOf[i]];
    m = std::isnan(a) ? kInf : std::max(m, a);
  }
  return amax;
}

Tensor fp8Amax(const Tensor &x, const std::vector<int64_t> &grid) {
  Tensor amax = Tensor::zeros(grid);
  amax.data = fp8Amax(x, fp8BlockOf(x.shape, grid), amax.numElements());
  return amax;
}

/// weft.fp8_quantize by its definition, with APFloat's conversion as the
/// FP8 rounding (the runtime rounds on the bits: this is the independent
/// check): element i by the maximum amax[blockOf[i]] (0 where blockOf[i] is
/// negative). All arithmetic is f32, whatever the evaluator's precision.
Tensor fp8Quantize(const Tensor &x, const std::vector<double> &amax,
                   const std::vector<int64_t> &blockOf, Type format,
                   bool pow2) {
  const llvm::fltSemantics &sem = cast<FloatType>(format).getFloatSemantics();
  float largest = APFloat::getLargest(sem).convertToFloat();
  int maxExponent = isa<Float8E4M3FNType>(format) ? 8 : 15;
  std::vector<float> scale(amax.size());
  for (size_t b = 0; b < scale.size(); ++b) {
    auto a = static_cast<float>(amax[b]);
    if (!std::isfinite(a)) {
      scale[b] = std::numeric_limits<float>::quiet_NaN();
      continue;
    }
    a = std::max(a, 1e-12f);
    // floor(log2 a) of a normal, finite a is std::ilogb.
    scale[b] = pow2 ? std::ldexp(1.0f, std::clamp(maxExponent - std::ilogb(a),
                                                  -127, 127))
                    : largest / a;
  }
  Tensor out = x;
  for (size_t i = 0; i < x.data.size(); ++i) {
    if (blockOf[i] < 0) {
      out.data[i] = 0.0;
      continue;
    }
    float s = scale[blockOf[i]];
    float v = static_cast<float>(x.data[i]) * s;
    if (!std::isnan(v))
      v = std::clamp(v, -largest, largest);
    APFloat q(v);
    bool lost;
    q.convert(sem, APFloat::rmNearestTiesToEven, &lost);
    q.convert(APFloat::IEEEsingle(), APFloat::rmNearestTiesToEven, &lost);
    out.data[i] = q.convertToFloat() / s;
  }
  return out;
}

Tensor fp8Quantize(const Tensor &x, const Tensor &amax, Type format,
                   bool pow2) {
  return fp8Quantize(x, amax.data, fp8BlockOf(x.shape, amax.shape), format,
                     pow2);
}

std::vector<int64_t> stridesOf(const std::vector<int64_t> &shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * shape[d + 1];
  return strides;
}

int64_t product(ArrayRef<int64_t> dims) {
  return std::accumulate(dims.begin(), dims.end(), int64_t(1),
                         std::multiplies<int64_t>());
}

/// Calls fn(index, flat) for every multi-index of `shape` in row-major order.
template <typename Fn>
void forEachIndex(const std::vector<int64_t> &shape, Fn fn) {
  int64_t n = product(shape);
  std::vector<int64_t> index(shape.size(), 0);
  for (int64_t flat = 0; flat < n; ++flat) {
    fn(index, flat);
    for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
      if (++index[d] < shape[d])
        break;
      index[d] = 0;
    }
  }
}

/// A tensor viewed as rows of its dimension `dim`: [outer, n, inner].
struct Rows {
  int64_t outer, n, inner;
  Rows(const std::vector<int64_t> &shape, int64_t dim)
      : outer(product(ArrayRef<int64_t>(shape).take_front(dim))), n(shape[dim]),
        inner(product(ArrayRef<int64_t>(shape).drop_front(dim + 1))) {}
  int64_t count() const { return outer * inner; }
  /// Flat offset of element j of row r.
  int64_t at(int64_t r, int64_t j) const {
    return (r / inner) * n * inner + j * inner + r % inner;
  }
};

/// weft.expert_route on one rank: the packed row of each (token, choice)
/// pair in GShard's order (choices major), or -1 for a dropped pair, and
/// each expert's kept count; fails on an expert id outside [0, E).
LogicalResult routePairs(ExpertRouteOp op, const Tensor &indices,
                         Tensor &positions, Tensor &counts) {
  int64_t tokens = indices.shape[0], k = indices.shape[1];
  auto experts = static_cast<int64_t>(op.getNumExperts());
  int64_t capacity = op.getCapacity() ? static_cast<int64_t>(*op.getCapacity())
                                      : std::numeric_limits<int64_t>::max();
  std::vector<int64_t> rank(tokens * k, -1), kept(experts, 0);
  for (int64_t j = 0; j < k; ++j)
    for (int64_t t = 0; t < tokens; ++t) {
      auto e = static_cast<int64_t>(indices.data[t * k + j]);
      if (e < 0 || e >= experts)
        return op->emitError("expert id ")
               << e << " at index " << t * k + j << " is outside [0, "
               << experts << ")";
      if (kept[e] < capacity)
        rank[t * k + j] = kept[e]++;
    }
  std::vector<int64_t> first(experts, 0);
  for (int64_t e = 1; e < experts; ++e)
    first[e] = first[e - 1] + kept[e - 1];
  positions = Tensor::zeros({tokens, k});
  for (int64_t p = 0; p < tokens * k; ++p)
    positions.data[p] =
        rank[p] < 0
            ? -1.0
            : static_cast<double>(first[static_cast<int64_t>(indices.data[p])] +
                                  rank[p]);
  counts = Tensor::zeros({experts});
  for (int64_t e = 0; e < experts; ++e)
    counts.data[e] = static_cast<double>(kept[e]);
  return success();
}

/// Checks the positions of dispatch, combine, gather and scatter against
/// `rows` rows: each in [-1, rows), and (`unique`, for the ops that write
/// rows) no row named twice.
LogicalResult checkPositions(Operation *op, const Tensor &positions,
                             int64_t rows, bool unique) {
  std::vector<bool> used(unique ? rows : 0, false);
  for (size_t p = 0; p < positions.data.size(); ++p) {
    auto r = static_cast<int64_t>(positions.data[p]);
    if (r < -1 || r >= rows)
      return op->emitError("position ")
             << r << " at index " << p << " is outside [-1, " << rows << ")";
    if (unique && r >= 0) {
      if (used[r])
        return op->emitError("row ") << r << " is named by two positions";
      used[r] = true;
    }
  }
  return success();
}

/// The first row of each group of a grouped matmul, checked against `rows`.
FailureOr<std::vector<int64_t>> groupStarts(Operation *op, const Tensor &sizes,
                                            int64_t rows) {
  std::vector<int64_t> starts(sizes.data.size() + 1, 0);
  for (size_t g = 0; g < sizes.data.size(); ++g) {
    auto n = static_cast<int64_t>(sizes.data[g]);
    if (n < 0 || starts[g] + n > rows)
      return op->emitError("group ")
             << g << " of " << n << " rows does not fit the " << rows
             << " rows after the " << starts[g] << " before it";
    starts[g + 1] = starts[g] + n;
  }
  return starts;
}

class Interpreter {
public:
  Interpreter(Precision precision, const ParamProvider &params,
              Assignments *assignments)
      : precision(precision), params(params), assignments(assignments) {}

  FailureOr<std::vector<Tensor>> run(func::FuncOp func,
                                     ArrayRef<Tensor> inputs);

private:
  Precision precision;
  const ParamProvider &params;
  Assignments *assignments;
  llvm::DenseMap<Value, Tensor> env;

  const Tensor &get(Value v) { return env.find(v)->second; }

  /// Rounds every element to `v`'s element type and binds it.
  void bind(Value v, Tensor t) {
    t.shape = shapeOf(v);
    DType type =
        roundingType(cast<RankedTensorType>(v.getType()).getElementType());
    if (type != DType::F64)
      for (double &x : t.data)
        x = runtime::roundTo(x, type);
    env[v] = std::move(t);
  }

  DType roundingType(Type elt) {
    if (elt.isF32())
      return precision == Precision::F32 ? DType::F32 : DType::F64;
    return storageType(elt).value_or(DType::I64);
  }

  template <typename Fn> Tensor map(Value in, Fn fn) {
    Tensor t = get(in);
    for (double &x : t.data)
      x = fn(x);
    return t;
  }
  template <typename Fn> Tensor zip(Value lhs, Value rhs, Fn fn) {
    Tensor t = get(lhs);
    const Tensor &r = get(rhs);
    for (size_t i = 0; i < t.data.size(); ++i)
      t.data[i] = fn(t.data[i], r.data[i]);
    return t;
  }

  LogicalResult eval(Operation *op);
  FailureOr<Tensor> evalConstant(ConstantOp op);
  Tensor evalMatmul(Value lhs, Value rhs, bool ta, bool tb, Value result);
  LogicalResult evalMatmulEpilogue(MatmulEpilogueOp op);
  Tensor evalReduce(Operation *op, Value input, ArrayRef<int64_t> dims,
                    double init, double (*combine)(double, double), bool mean);
  Tensor evalNorm(Value input, Value weight, Value bias, double eps, bool rms);
  Tensor evalSoftmax(const Tensor &in, int64_t dim);
  std::function<bool(int64_t, int64_t)> maskOf(bool causal,
                                               Value queryPositions,
                                               Value keyPositions, int64_t s,
                                               int64_t t);
  template <typename Op>
  FailureOr<std::function<double(int64_t, int64_t, int64_t, int64_t)>>
  attentionDropoutOf(Op op, int64_t heads, int64_t s, int64_t t);
  FailureOr<std::pair<Tensor, Tensor>> evalAttention(AttentionOp op);
  Tensor evalAttentionEntropy(AttentionEntropyOp op);
  FailureOr<std::array<Tensor, 3>> evalAttentionGrad(AttentionGradOp op);
  std::array<Tensor, 3> evalNormGrad(Value input, Value weight, Value grad,
                                     double eps, bool rms);
  FailureOr<Tensor> evalCrossEntropy(CrossEntropyOp op);
  std::pair<Tensor, Tensor> topK(const Tensor &in, int64_t k);
};

FailureOr<std::vector<Tensor>> Interpreter::run(func::FuncOp func,
                                                ArrayRef<Tensor> inputs) {
  if (func.isExternal())
    return func.emitError("@")
           << func.getSymName()
           << " is a declaration: it has no body to evaluate";
  // The evaluator holds every value in f64: one that cannot fit in this
  // machine's memory is an error at the op, before anything is allocated.
  double memory = double(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGE_SIZE);
  WalkResult fits = func.walk([&](Operation *op) {
    for (Value r : op->getResults())
      if (auto type = dyn_cast<RankedTensorType>(r.getType());
          type && type.hasStaticShape()) {
        double bytes = 8.0 * double(type.getNumElements());
        if (bytes > memory) {
          auto param = dyn_cast<ParamOp>(op);
          op->emitError(param ? "parameter '" + param.getName().str() + "': "
                              : std::string())
              << "evaluating it needs " << llvm::formatv("{0:e2}", bytes)
              << " bytes for a value of " << type
              << " (held in f64), more than this machine's "
              << llvm::formatv("{0:e2}", memory) << " bytes of memory";
          return WalkResult::interrupt();
        }
      }
    return WalkResult::advance();
  });
  if (fits.wasInterrupted())
    return failure();
  if (func.getNumArguments() != inputs.size())
    return func.emitError("function takes ")
           << func.getNumArguments() << " arguments but " << inputs.size()
           << " inputs were given";
  for (auto [i, arg] : llvm::enumerate(func.getArguments())) {
    if (shapeOf(arg) != inputs[i].shape ||
        inputs[i].numElements() != static_cast<int64_t>(inputs[i].data.size()))
      return func.emitError("input ")
             << i << " does not match argument type " << arg.getType();
    bind(arg, inputs[i]);
  }
  for (Operation &op : func.getBody().front()) {
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      std::vector<Tensor> results;
      for (Value v : ret.getOperands())
        results.push_back(get(v));
      return results;
    }
    if (failed(eval(&op)))
      return failure();
  }
  return func.emitError("function has no return");
}

LogicalResult Interpreter::eval(Operation *op) {
  auto unary = [&](Operation *o, auto fn) {
    bind(o->getResult(0), map(o->getOperand(0), fn));
    return success();
  };
  auto binary = [&](Operation *o, auto fn) {
    bind(o->getResult(0), zip(o->getOperand(0), o->getOperand(1), fn));
    return success();
  };
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](ParamOp p) -> LogicalResult {
        FailureOr<Tensor> value = params(p);
        if (failed(value))
          return failure();
        if (value->shape != shapeOf(p.getResult()))
          return p.emitError("value supplied for parameter '")
                 << p.getName() << "' has the wrong shape";
        bind(p.getResult(), std::move(*value));
        return success();
      })
      .Case([&](FusedOp f) -> LogicalResult {
        Block &body = f.getBody().front();
        // Copy before inserting: a DenseMap insert may move the entries.
        for (auto [arg, input] :
             llvm::zip(body.getArguments(), f.getInputs())) {
          Tensor value = get(input);
          env[arg] = std::move(value);
        }
        for (Operation &inner : body.without_terminator())
          if (failed(eval(&inner)))
            return failure();
        auto yield = cast<YieldOp>(body.getTerminator());
        for (auto [result, value] :
             llvm::zip(f.getResults(), yield.getValues())) {
          Tensor copy = get(value);
          env[result] = std::move(copy);
        }
        return success();
      })
      .Case([&](AssignOp a) {
        if (assignments)
          (*assignments)[a.getName().str()] = get(a.getValue());
        return success();
      })
      .Case([&](ConstantOp c) -> LogicalResult {
        FailureOr<Tensor> value = evalConstant(c);
        if (failed(value))
          return failure();
        bind(c.getResult(), std::move(*value));
        return success();
      })
      .Case([&](NegOp o) { return unary(o, [](double x) { return -x; }); })
      .Case([&](ExpOp o) {
        return unary(o, [](double x) { return std::exp(x); });
      })
      .Case([&](LogOp o) {
        return unary(o, [](double x) { return std::log(x); });
      })
      .Case([&](TanhOp o) {
        return unary(o, [](double x) { return std::tanh(x); });
      })
      .Case([&](SqrtOp o) {
        return unary(o, [](double x) { return std::sqrt(x); });
      })
      .Case([&](RsqrtOp o) {
        return unary(o, [](double x) { return 1.0 / std::sqrt(x); });
      })
      .Case(
          [&](SquareOp o) { return unary(o, [](double x) { return x * x; }); })
      .Case([&](GeluOp o) { return unary(o, runtime::gelu); })
      .Case([&](SiluOp o) { return unary(o, runtime::silu); })
      .Case([&](PowOp o) {
        double e = o.getExponent().convertToDouble();
        return unary(o, [e](double x) { return std::pow(x, e); });
      })
      .Case([&](AddOp o) {
        return binary(o, [](double a, double b) { return a + b; });
      })
      .Case([&](SubOp o) {
        return binary(o, [](double a, double b) { return a - b; });
      })
      .Case([&](MulOp o) {
        return binary(o, [](double a, double b) { return a * b; });
      })
      .Case([&](DivOp o) {
        return binary(o, [](double a, double b) { return a / b; });
      })
      .Case([&](MaxOp o) {
        return binary(o, [](double a, double b) {
          return std::isnan(a) || std::isnan(b) ? kNaN : std::max(a, b);
        });
      })
      .Case([&](GeOp o) {
        return binary(o, [](double a, double b) { return a >= b ? 1.0 : 0.0; });
      })
      .Case([&](SelectOp o) {
        Tensor t = get(o.getCondition());
        const Tensor &a = get(o.getLhs()), &b = get(o.getRhs());
        for (size_t i = 0; i < t.data.size(); ++i)
          t.data[i] = t.data[i] != 0 ? a.data[i] : b.data[i];
        bind(o.getResult(), std::move(t));
        return success();
      })
      .Case([&](GeluGradOp o) { return binary(o, runtime::geluGrad); })
      .Case([&](SiluGradOp o) { return binary(o, runtime::siluGrad); })
      .Case([&](MatmulOp o) {
        bind(o.getResult(),
             evalMatmul(o.getLhs(), o.getRhs(), o.getTransposeLhs(),
                        o.getTransposeRhs(), o.getResult()));
        return success();
      })
      .Case([&](MatmulEpilogueOp o) { return evalMatmulEpilogue(o); })
      .Case([&](ReshapeOp o) {
        bind(o.getResult(), get(o.getInput()));
        return success();
      })
      .Case([&](CastOp o) {
        bind(o.getResult(), get(o.getInput()));
        return success();
      })
      .Case([&](TransposeOp o) {
        const Tensor &in = get(o.getInput());
        std::vector<int64_t> inStrides = stridesOf(in.shape);
        ArrayRef<int64_t> perm = o.getPermutation();
        Tensor out = Tensor::zeros(shapeOf(o.getResult()));
        forEachIndex(out.shape,
                     [&](const std::vector<int64_t> &i, int64_t flat) {
                       int64_t off = 0;
                       for (size_t d = 0; d < i.size(); ++d)
                         off += i[d] * inStrides[perm[d]];
                       out.data[flat] = in.data[off];
                     });
        bind(o.getResult(), std::move(out));
        return success();
      })
      .Case([&](BroadcastOp o) {
        const Tensor &in = get(o.getInput());
        std::vector<int64_t> inStrides = stridesOf(in.shape);
        ArrayRef<int64_t> dims = o.getDims();
        Tensor out = Tensor::zeros(shapeOf(o.getResult()));
        forEachIndex(
            out.shape, [&](const std::vector<int64_t> &i, int64_t flat) {
              int64_t off = 0;
              for (size_t d = 0; d < dims.size(); ++d)
                off += (in.shape[d] == 1 ? 0 : i[dims[d]]) * inStrides[d];
              out.data[flat] = in.data[off];
            });
        bind(o.getResult(), std::move(out));
        return success();
      })
      .Case([&](SliceOp o) {
        const Tensor &in = get(o.getInput());
        std::vector<int64_t> inStrides = stridesOf(in.shape);
        ArrayRef<int64_t> starts = o.getStarts();
        Tensor out = Tensor::zeros(shapeOf(o.getResult()));
        forEachIndex(out.shape,
                     [&](const std::vector<int64_t> &i, int64_t flat) {
                       int64_t off = 0;
                       for (size_t d = 0; d < i.size(); ++d)
                         off += (starts[d] + i[d]) * inStrides[d];
                       out.data[flat] = in.data[off];
                     });
        bind(o.getResult(), std::move(out));
        return success();
      })
      .Case([&](ConcatOp o) {
        Tensor out = Tensor::zeros(shapeOf(o.getResult()));
        std::vector<int64_t> outStrides = stridesOf(out.shape);
        auto dim = static_cast<int64_t>(o.getDim());
        int64_t shift = 0;
        for (Value v : o.getInputs()) {
          const Tensor &in = get(v);
          forEachIndex(
              in.shape, [&](const std::vector<int64_t> &i, int64_t flat) {
                int64_t off = 0;
                for (size_t d = 0; d < i.size(); ++d)
                  off += (i[d] + (static_cast<int64_t>(d) == dim ? shift : 0)) *
                         outStrides[d];
                out.data[off] = in.data[flat];
              });
          shift += in.shape[dim];
        }
        bind(o.getResult(), std::move(out));
        return success();
      })
      .Case([&](ReduceSumOp o) {
        bind(o.getResult(),
             evalReduce(
                 o, o.getInput(), o.getDims(), 0.0,
                 [](double a, double b) { return a + b; }, false));
        return success();
      })
      .Case([&](ReduceMeanOp o) {
        bind(o.getResult(),
             evalReduce(
                 o, o.getInput(), o.getDims(), 0.0,
                 [](double a, double b) { return a + b; }, true));
        return success();
      })
      .Case([&](ReduceMaxOp o) {
        bind(o.getResult(), evalReduce(
                                o, o.getInput(), o.getDims(), -kInf,
                                [](double a, double b) {
                                  return std::isnan(a) || std::isnan(b)
                                             ? kNaN
                                             : std::max(a, b);
                                },
                                false));
        return success();
      })
      .Case([&](EmbeddingOp o) -> LogicalResult {
        const Tensor &table = get(o.getTable()), &ids = get(o.getIds());
        int64_t vocab = table.shape[0], dim = table.shape[1];
        Tensor out = Tensor::zeros(shapeOf(o.getResult()));
        for (size_t i = 0; i < ids.data.size(); ++i) {
          auto id = static_cast<int64_t>(ids.data[i]);
          if (id < 0 || id >= vocab)
            return o.emitError("token id ")
                   << id << " at position " << i
                   << " is outside the vocabulary [0, " << vocab << ")";
          std::copy_n(table.data.begin() + id * dim, dim,
                      out.data.begin() + i * dim);
        }
        bind(o.getResult(), std::move(out));
        return success();
      })
      .Case([&](LayerNormOp o) {
        bind(o.getResult(), evalNorm(o.getInput(), o.getWeight(), o.getBias(),
                                     o.getEpsilon().convertToDouble(), false));
        return success();
      })
      .Case([&](RMSNormOp o) {
        bind(o.getResult(), evalNorm(o.getInput(), o.getWeight(), Value(),
                                     o.getEpsilon().convertToDouble(), true));
        return success();
      })
      .Case([&](SoftmaxOp o) {
        bind(o.getResult(),
             evalSoftmax(get(o.getInput()), static_cast<int64_t>(o.getDim())));
        return success();
      })
      .Case([&](RopeOp o) {
        Tensor out = get(o.getInput());
        const std::vector<int64_t> &s = out.shape;
        int64_t half = s[3] / 2;
        double theta = o.getTheta().convertToDouble();
        double sign = o.getInverse() ? -1.0 : 1.0;
        auto offset = static_cast<int64_t>(o.getPositionOffset());
        const Tensor *positions =
            o.getPositions() ? &get(o.getPositions()) : nullptr;
        for (int64_t b = 0; b < s[0]; ++b)
          for (int64_t p = 0; p < s[1]; ++p)
            for (int64_t h = 0; h < s[2]; ++h) {
              double *x = &out.data[((b * s[1] + p) * s[2] + h) * s[3]];
              double at = positions ? positions->data[p] : p;
              for (int64_t i = 0; i < half; ++i) {
                double f =
                    sign * (at + static_cast<double>(offset)) *
                    std::pow(theta, -2.0 * i / static_cast<double>(s[3]));
                double x1 = x[i], x2 = x[i + half];
                x[i] = x1 * std::cos(f) - x2 * std::sin(f);
                x[i + half] = x2 * std::cos(f) + x1 * std::sin(f);
              }
            }
        bind(o.getResult(), std::move(out));
        return success();
      })
      .Case([&](AttentionOp o) -> LogicalResult {
        FailureOr<std::pair<Tensor, Tensor>> r = evalAttention(o);
        if (failed(r))
          return failure();
        bind(o.getResult(), std::move(r->first));
        bind(o.getLse(), std::move(r->second));
        return success();
      })
      .Case([&](AttentionEntropyOp o) -> LogicalResult {
        bind(o.getResult(), evalAttentionEntropy(o));
        return success();
      })
      .Case([&](AttentionGradOp o) -> LogicalResult {
        FailureOr<std::array<Tensor, 3>> grads = evalAttentionGrad(o);
        if (failed(grads))
          return failure();
        bind(o.getQueryGrad(), std::move((*grads)[0]));
        bind(o.getKeyGrad(), std::move((*grads)[1]));
        bind(o.getValueGrad(), std::move((*grads)[2]));
        return success();
      })
      .Case([&](EmbeddingGradOp o) {
        const Tensor &ids = get(o.getIds()), &grad = get(o.getGrad());
        Tensor out = Tensor::zeros(shapeOf(o.getResult()));
        int64_t dim = out.shape[1];
        for (size_t i = 0; i < ids.data.size(); ++i) {
          auto id = static_cast<int64_t>(ids.data[i]);
          if (id < 0 || id >= out.shape[0])
            continue; // The forward embedding already rejected such ids.
          for (int64_t d = 0; d < dim; ++d)
            out.data[id * dim + d] += grad.data[i * dim + d];
        }
        bind(o.getResult(), std::move(out));
        return success();
      })
      .Case([&](LayerNormGradOp o) {
        auto grads = evalNormGrad(o.getInput(), o.getWeight(), o.getGrad(),
                                  o.getEpsilon().convertToDouble(), false);
        bind(o.getInputGrad(), std::move(grads[0]));
        bind(o.getWeightGrad(), std::move(grads[1]));
        bind(o.getBiasGrad(), std::move(grads[2]));
        return success();
      })
      .Case([&](RMSNormGradOp o) {
        auto grads = evalNormGrad(o.getInput(), o.getWeight(), o.getGrad(),
                                  o.getEpsilon().convertToDouble(), true);
        bind(o.getInputGrad(), std::move(grads[0]));
        bind(o.getWeightGrad(), std::move(grads[1]));
        return success();
      })
      .Case([&](CrossEntropyGradOp o) {
        const Tensor &labels = get(o.getLabels());
        Tensor out = get(o.getLogits());
        int64_t vocab = out.shape.back();
        auto ignore = static_cast<int64_t>(o.getIgnoreIndex());
        int64_t count = 0;
        for (double l : labels.data)
          count += static_cast<int64_t>(l) != ignore;
        double scale = get(o.getGrad()).data[0] / std::max<int64_t>(count, 1);
        for (size_t n = 0; n < labels.data.size(); ++n) {
          double *x = &out.data[n * vocab];
          auto label = static_cast<int64_t>(labels.data[n]);
          if (label == ignore) {
            std::fill(x, x + vocab, 0.0);
            continue;
          }
          double m = *std::max_element(x, x + vocab), sum = 0.0;
          for (int64_t j = 0; j < vocab; ++j)
            sum += x[j] = std::exp(x[j] - m);
          for (int64_t j = 0; j < vocab; ++j)
            x[j] = (x[j] / sum - (j == label ? 1.0 : 0.0)) * scale;
        }
        bind(o.getResult(), std::move(out));
        return success();
      })

      .Case([&](DropoutOp o) -> LogicalResult {
        if (o.getSplit() || o.getMicrobatch())
          return o.emitOpError("is a block of a placed or micro-batched "
                               "tensor; the evaluator runs whole graphs");
        double rate = o.getRate().convertToDouble();
        auto seed = static_cast<uint64_t>(o.getSeed());
        if (o.getStep())
          seed = weft_dropout_stream(seed, get(o.getStep()).data[0]);
        Tensor t = get(o.getInput());
        // With positions, element s of dimension 1 is the sequence's
        // positions[s]: the mask's index is the natural order's.
        const Tensor *positions =
            o.getPositions() ? &get(o.getPositions()) : nullptr;
        int64_t inner = 1, seq = t.shape.size() > 1 ? t.shape[1] : 1;
        if (positions)
          for (double p : positions->data)
            if (!(p >= 0 && p < static_cast<double>(seq)))
              return o.emitOpError("position ")
                     << p << " is outside the sequence of " << seq;
        for (size_t d = 2; d < t.shape.size(); ++d)
          inner *= t.shape[d];
        auto indexOf = [&](uint64_t i) -> uint64_t {
          if (!positions)
            return i;
          uint64_t s = (i / inner) % seq, outer = i / (inner * seq);
          auto at = static_cast<uint64_t>(positions->data[s]);
          return (outer * seq + at) * inner + i % inner;
        };
        if (rate > 0.0)
          for (size_t i = 0; i < t.data.size(); ++i)
            t.data[i] = runtime::uniform24(seed, indexOf(i)) >= rate
                            ? t.data[i] / (1.0 - rate)
                            : 0.0;
        bind(o.getResult(), std::move(t));
        return success();
      })
      .Case([&](Fp8AmaxOp o) {
        bind(o.getResult(), fp8Amax(get(o.getInput()), shapeOf(o.getResult())));
        return success();
      })
      .Case([&](Fp8QuantizeOp o) {
        bind(o.getResult(), fp8Quantize(get(o.getInput()), get(o.getAmax()),
                                        o.getFormat(), o.getPow2Scales()));
        return success();
      })
      .Case([&](Fp8GroupQuantizeOp o) -> LogicalResult {
        // Each (tile of an expert's rows, its groups' in order, column) is
        // a block; rows after the groups are in none (zero).
        const Tensor &x = get(o.getInput());
        int64_t rows = x.shape[0], cols = x.shape[1];
        FailureOr<std::vector<int64_t>> starts =
            groupStarts(o, get(o.getSizes()), rows);
        if (failed(starts))
          return failure();
        auto tile = static_cast<int64_t>(o.getRows()),
             experts = static_cast<int64_t>(o.getExperts());
        std::vector<int64_t> blockOf(x.data.size(), -1);
        int64_t tiles = 0;
        for (int64_t e = 0; e < experts; ++e) {
          int64_t v = 0; // The expert's row.
          for (size_t g = e; g + 1 < starts->size(); g += experts)
            for (int64_t r = (*starts)[g]; r < (*starts)[g + 1]; ++r, ++v)
              for (int64_t c = 0; c < cols; ++c)
                blockOf[r * cols + c] =
                    (tiles + (tile ? v / tile : 0)) * cols + c;
          tiles += tile ? (v + tile - 1) / tile : 1;
        }
        std::vector<double> amax = fp8Amax(x, blockOf, tiles * cols);
        bind(o.getResult(),
             fp8Quantize(x, amax, blockOf, o.getFormat(), o.getPow2Scales()));
        return success();
      })
      .Case([&](Fp8QuantizeGradOp o) {
        bind(o.getResult(), get(o.getInput()));
        return success();
      })
      .Case([&](CrossEntropyOp o) -> LogicalResult {
        FailureOr<Tensor> loss = evalCrossEntropy(o);
        if (failed(loss))
          return failure();
        bind(o.getResult(), std::move(*loss));
        return success();
      })
      .Case([&](OneHotOp o) {
        const Tensor &in = get(o.getIndices());
        Tensor out = Tensor::zeros(shapeOf(o.getResult()));
        int64_t classes = out.shape.back();
        for (size_t i = 0; i < in.data.size(); ++i) {
          auto c = static_cast<int64_t>(in.data[i]);
          if (c >= 0 && c < classes)
            out.data[i * classes + c] = 1.0;
        }
        bind(o.getResult(), std::move(out));
        return success();
      })
      .Case([&](TopKOp o) {
        auto [values, ids] =
            topK(get(o.getInput()), static_cast<int64_t>(o.getK()));
        bind(o.getValues(), std::move(values));
        bind(o.getIndices(), std::move(ids));
        return success();
      })
      .Case([&](TopKGatingOp o) {
        Tensor probs = evalSoftmax(get(o.getLogits()), 1);
        auto [weights, ids] = topK(probs, static_cast<int64_t>(o.getK()));
        if (o.getNormalize()) {
          int64_t k = weights.shape[1];
          for (int64_t t = 0; t < weights.shape[0]; ++t) {
            double sum = 0.0;
            for (int64_t j = 0; j < k; ++j)
              sum += weights.data[t * k + j];
            for (int64_t j = 0; j < k; ++j)
              weights.data[t * k + j] /= sum;
          }
        }
        bind(o.getWeights(), std::move(weights));
        bind(o.getIndices(), std::move(ids));
        return success();
      })
      .Case([&](ExpertRouteOp o) -> LogicalResult {
        if (o->hasAttr(kTokenAxesAttr))
          return o.emitError("the reference evaluator runs one rank's "
                             "program; this route is partitioned");
        Tensor positions, counts;
        if (failed(routePairs(o, get(o.getIndices()), positions, counts)))
          return failure();
        bind(o.getPositions(), std::move(positions));
        bind(o.getCounts(), std::move(counts));
        return success();
      })
      .Case([&](ExpertDispatchOp o) -> LogicalResult {
        const Tensor &in = get(o.getInput()), &pos = get(o.getPositions());
        Tensor out = Tensor::zeros(shapeOf(o.getResult()));
        if (failed(checkPositions(o, pos, out.shape[0], /*unique=*/true)))
          return failure();
        int64_t k = pos.shape[1], dim = in.shape[1];
        for (size_t p = 0; p < pos.data.size(); ++p)
          if (auto r = static_cast<int64_t>(pos.data[p]); r >= 0)
            std::copy_n(in.data.begin() + (p / k) * dim, dim,
                        out.data.begin() + r * dim);
        bind(o.getResult(), std::move(out));
        return success();
      })
      .Case([&](ExpertCombineOp o) -> LogicalResult {
        const Tensor &eo = get(o.getExpertOutputs()), &w = get(o.getWeights()),
                     &pos = get(o.getPositions());
        if (failed(checkPositions(o, pos, eo.shape[0], /*unique=*/false)))
          return failure();
        int64_t k = pos.shape[1], dim = eo.shape[1];
        Tensor out = Tensor::zeros(shapeOf(o.getResult()));
        for (size_t p = 0; p < pos.data.size(); ++p) {
          auto r = static_cast<int64_t>(pos.data[p]);
          if (r < 0)
            continue;
          const double *src = &eo.data[r * dim];
          double *dst = &out.data[(p / k) * dim];
          for (int64_t d = 0; d < dim; ++d)
            dst[d] += w.data[p] * src[d];
        }
        bind(o.getResult(), std::move(out));
        return success();
      })
      .Case([&](ExpertGatherOp o) -> LogicalResult {
        const Tensor &eo = get(o.getExpertOutputs()),
                     &pos = get(o.getPositions());
        if (failed(checkPositions(o, pos, eo.shape[0], /*unique=*/false)))
          return failure();
        int64_t dim = eo.shape[1];
        Tensor out = Tensor::zeros(shapeOf(o.getResult()));
        for (size_t p = 0; p < pos.data.size(); ++p)
          if (auto r = static_cast<int64_t>(pos.data[p]); r >= 0)
            std::copy_n(eo.data.begin() + r * dim, dim,
                        out.data.begin() + p * dim);
        bind(o.getResult(), std::move(out));
        return success();
      })
      .Case([&](ExpertScatterOp o) -> LogicalResult {
        const Tensor &pairs = get(o.getPairs()), &pos = get(o.getPositions());
        Tensor out = Tensor::zeros(shapeOf(o.getResult()));
        if (failed(checkPositions(o, pos, out.shape[0], /*unique=*/true)))
          return failure();
        int64_t dim = pairs.shape[2];
        for (size_t p = 0; p < pos.data.size(); ++p)
          if (auto r = static_cast<int64_t>(pos.data[p]); r >= 0)
            std::copy_n(pairs.data.begin() + p * dim, dim,
                        out.data.begin() + r * dim);
        bind(o.getResult(), std::move(out));
        return success();
      })
      .Case([&](GroupedMatmulOp o) -> LogicalResult {
        const Tensor &x = get(o.getInput()), &w = get(o.getWeight()),
                     &sizes = get(o.getSizes());
        int64_t rows = x.shape[0], kDim = x.shape[1], experts = w.shape[0];
        FailureOr<std::vector<int64_t>> starts = groupStarts(o, sizes, rows);
        if (failed(starts))
          return failure();
        bool t = o.getTransposeRhs();
        int64_t m = t ? w.shape[1] : w.shape[2];
        Tensor out = Tensor::zeros(shapeOf(o.getResult()));
        for (size_t g = 0; g + 1 < starts->size(); ++g) {
          const double *we = &w.data[(g % experts) * kDim * m];
          for (int64_t r = (*starts)[g]; r < (*starts)[g + 1]; ++r)
            for (int64_t c = 0; c < m; ++c) {
              double acc = 0.0;
              for (int64_t i = 0; i < kDim; ++i)
                acc += x.data[r * kDim + i] *
                       (t ? we[c * kDim + i] : we[i * m + c]);
              out.data[r * m + c] = acc;
            }
        }
        bind(o.getResult(), std::move(out));
        return success();
      })
      .Case([&](GroupedMatmulWgradOp o) -> LogicalResult {
        const Tensor &a = get(o.getLhs()), &r = get(o.getRhs()),
                     &sizes = get(o.getSizes());
        FailureOr<std::vector<int64_t>> starts =
            groupStarts(o, sizes, a.shape[0]);
        if (failed(starts))
          return failure();
        int64_t pDim = a.shape[1], qDim = r.shape[1];
        auto experts = static_cast<int64_t>(o.getExperts());
        Tensor out = Tensor::zeros(shapeOf(o.getResult()));
        for (size_t g = 0; g + 1 < starts->size(); ++g) {
          double *dst = &out.data[(g % experts) * pDim * qDim];
          for (int64_t n = (*starts)[g]; n < (*starts)[g + 1]; ++n)
            for (int64_t i = 0; i < pDim; ++i)
              for (int64_t j = 0; j < qDim; ++j)
                dst[i * qDim + j] +=
                    a.data[n * pDim + i] * r.data[n * qDim + j];
        }
        bind(o.getResult(), std::move(out));
        return success();
      })
      .Default([](Operation *o) {
        return o->emitError("the reference evaluator does not know this op");
      });
}

FailureOr<Tensor> Interpreter::evalConstant(ConstantOp op) {
  auto dense = dyn_cast<DenseElementsAttr>(op.getValue());
  if (!dense)
    return op.emitError("only dense constants can be evaluated");
  Tensor t = Tensor::zeros(shapeOf(op.getResult()));
  if (isa<FloatType>(dense.getElementType())) {
    size_t i = 0;
    for (const APFloat &v : dense.getValues<APFloat>()) {
      APFloat d = v;
      bool lost;
      d.convert(APFloat::IEEEdouble(), APFloat::rmNearestTiesToEven, &lost);
      t.data[i++] = d.convertToDouble();
    }
  } else {
    size_t i = 0;
    for (const APInt &v : dense.getValues<APInt>())
      t.data[i++] = static_cast<double>(v.getSExtValue());
  }
  return t;
}

Tensor Interpreter::evalMatmul(Value lhs, Value rhs, bool ta, bool tb,
                               Value result) {
  const Tensor &a = get(lhs), &b = get(rhs);
  size_t ar = a.shape.size(), br = b.shape.size();
  int64_t m = ta ? a.shape[ar - 1] : a.shape[ar - 2];
  int64_t k = ta ? a.shape[ar - 2] : a.shape[ar - 1];
  int64_t n = tb ? b.shape[br - 2] : b.shape[br - 1];
  Tensor out = Tensor::zeros(shapeOf(result));
  int64_t batches = out.numElements() / (m * n);
  int64_t aStep = ar > 2 ? m * k : 0, bStep = br > 2 ? k * n : 0;
  for (int64_t bt = 0; bt < batches; ++bt) {
    const double *pa = &a.data[bt * aStep], *pb = &b.data[bt * bStep];
    double *po = &out.data[bt * m * n];
    // Each output element sums its products in order of l from 0.0, as
    // sum_l a[i][l] * b[l][j] says. With b's rows contiguous (no transpose)
    // the sums of a row of the output advance together over l, so the
    // inner loop walks rows of b and the output instead of a column of b;
    // the sums, and their rounding, are the same.
    for (int64_t i = 0; i < m; ++i) {
      double *row = po + i * n;
      if (tb) {
        for (int64_t j = 0; j < n; ++j) {
          double sum = 0.0;
          for (int64_t l = 0; l < k; ++l)
            sum += pa[ta ? l * m + i : i * k + l] * pb[j * k + l];
          row[j] = sum;
        }
        continue;
      }
      for (int64_t l = 0; l < k; ++l) {
        double x = pa[ta ? l * m + i : i * k + l];
        const double *bRow = pb + l * n;
        for (int64_t j = 0; j < n; ++j)
          row[j] += x * bRow[j];
      }
    }
  }
  return out;
}

LogicalResult Interpreter::evalMatmulEpilogue(MatmulEpilogueOp op) {
  Tensor acc = evalMatmul(op.getLhs(), op.getRhs(), false, op.getTransposeRhs(),
                          op.getResult());
  // The accumulator and the epilogue's intermediates are f32 values; only
  // the results take the element type (bind rounds them).
  DType f32 = roundingType(Float32Type::get(op.getContext()));
  auto asF32 = [&](double x) {
    return f32 == DType::F64 ? x : runtime::roundTo(x, f32);
  };
  runtime::GemmEpilogue kind =
      runtime::gemmEpilogueNamed(stringifyEpilogue(op.getEpilogue()).str());
  const Tensor *bias = op.getBias() ? &get(op.getBias()) : nullptr;
  const Tensor *pre =
      op.getPreactivation() ? &get(op.getPreactivation()) : nullptr;
  int64_t n = acc.shape.back();
  Tensor aux = acc;
  for (size_t i = 0; i < acc.data.size(); ++i)
    acc.data[i] = runtime::epilogueElement(
        kind, asF32(acc.data[i]), bias ? bias->data[i % n] : 0.0,
        pre ? pre->data[i] : 0.0, &aux.data[i], asF32);
  if (op.getAux())
    bind(op.getAux(), std::move(aux));
  bind(op.getResult(), std::move(acc));
  return success();
}

Tensor Interpreter::evalReduce(Operation *op, Value input,
                               ArrayRef<int64_t> dims, double init,
                               double (*combine)(double, double), bool mean) {
  const Tensor &in = get(input);
  Tensor out = Tensor::zeros(shapeOf(op->getResult(0)));
  std::fill(out.data.begin(), out.data.end(), init);
  std::vector<int64_t> outStrides = stridesOf(out.shape);
  int64_t count = 1;
  for (int64_t d : dims)
    count *= in.shape[d];
  forEachIndex(in.shape, [&](const std::vector<int64_t> &i, int64_t flat) {
    int64_t off = 0, od = 0;
    for (size_t d = 0; d < i.size(); ++d)
      if (!llvm::is_contained(dims, static_cast<int64_t>(d)))
        off += i[d] * outStrides[od++];
    out.data[off] = combine(out.data[off], in.data[flat]);
  });
  if (mean)
    for (double &x : out.data)
      x /= static_cast<double>(count);
  return out;
}

Tensor Interpreter::evalNorm(Value input, Value weight, Value bias, double eps,
                             bool rms) {
  Tensor out = get(input);
  const Tensor &w = get(weight);
  int64_t dim = out.shape.back();
  for (int64_t r = 0; r < out.numElements() / dim; ++r) {
    double *x = &out.data[r * dim];
    double mean = 0.0;
    if (!rms) {
      for (int64_t j = 0; j < dim; ++j)
        mean += x[j];
      mean /= static_cast<double>(dim);
    }
    double var = 0.0;
    for (int64_t j = 0; j < dim; ++j)
      var += (x[j] - mean) * (x[j] - mean);
    double inv = 1.0 / std::sqrt(var / static_cast<double>(dim) + eps);
    for (int64_t j = 0; j < dim; ++j)
      x[j] = (x[j] - mean) * inv * w.data[j] + (bias ? get(bias).data[j] : 0.0);
  }
  return out;
}

Tensor Interpreter::evalSoftmax(const Tensor &in, int64_t dim) {
  Tensor out = in;
  Rows rows(in.shape, dim);
  for (int64_t r = 0; r < rows.count(); ++r) {
    double m = -kInf, sum = 0.0;
    for (int64_t j = 0; j < rows.n; ++j)
      m = std::max(m, in.data[rows.at(r, j)]);
    for (int64_t j = 0; j < rows.n; ++j)
      sum += out.data[rows.at(r, j)] = std::exp(in.data[rows.at(r, j)] - m);
    for (int64_t j = 0; j < rows.n; ++j)
      out.data[rows.at(r, j)] /= sum;
  }
  return out;
}

/// Whether key j is hidden from query i: by index (key t visible to query
/// s iff t <= s + T - S) or, with positions, iff kpos[t] > qpos[s].
using MaskOf = std::function<bool(int64_t, int64_t)>;
MaskOf Interpreter::maskOf(bool causal, Value queryPositions,
                           Value keyPositions, int64_t s, int64_t t) {
  if (!causal)
    return [](int64_t, int64_t) { return false; };
  if (!queryPositions)
    return [s, t](int64_t i, int64_t j) { return j > i + (t - s); };
  const Tensor *qp = &get(queryPositions), *kp = &get(keyPositions);
  return [qp, kp](int64_t i, int64_t j) { return kp->data[j] > qp->data[i]; };
}

/// Attention dropout's factor for probability (b, h, s, t): 1 without
/// dropout, else 0 or 1 / (1 - rate) from the shared counter-based mask.
template <typename Op>
FailureOr<std::function<double(int64_t, int64_t, int64_t, int64_t)>>
Interpreter::attentionDropoutOf(Op op, int64_t heads, int64_t s, int64_t t) {
  using Factor = std::function<double(int64_t, int64_t, int64_t, int64_t)>;
  if (!op.getDropout())
    return Factor([](int64_t, int64_t, int64_t, int64_t) { return 1.0; });
  if (op.getSplit() || op.getMicrobatch())
    return op.emitOpError("is a block of a placed or micro-batched tensor; "
                          "the evaluator runs whole graphs"),
           failure();
  float step =
      op.getStep() ? static_cast<float>(get(op.getStep()).data[0]) : 0.0f;
  weft_attn_dropout d = weft_attn_dropout_at(
      op.getDropout()->convertToDouble(), *op.getSeed(),
      op.getStep() ? &step : nullptr, nullptr, 1, 0, 0, 0, heads, s);
  // With positions, query i and key j are the sequence's qpos[i], kpos[j].
  std::vector<int> qpos, kpos;
  if (op.getQueryPositions())
    for (auto [v, out] : {std::pair{op.getQueryPositions(), &qpos},
                          std::pair{op.getKeyPositions(), &kpos}})
      for (double p : get(v).data) {
        if (!(p >= 0 && p < static_cast<double>(s)))
          return op.emitOpError("position ")
                     << p << " is outside the sequence of " << s,
                 failure();
        out->push_back(static_cast<int>(p));
      }
  return Factor([=](int64_t b, int64_t h, int64_t i, int64_t j) {
    return static_cast<double>(weft_attn_dropout_factor(
        &d, b, h, i, s, j, t, qpos.empty() ? nullptr : qpos.data(),
        kpos.empty() ? nullptr : kpos.data()));
  });
}

FailureOr<std::pair<Tensor, Tensor>>
Interpreter::evalAttention(AttentionOp op) {
  const Tensor &q = get(op.getQuery()), &k = get(op.getKey()),
               &v = get(op.getValue());
  int64_t batch = q.shape[0], s = q.shape[1], hq = q.shape[2], d = q.shape[3];
  int64_t t = k.shape[1], hkv = k.shape[2], dv = v.shape[3];
  int64_t group = hq / hkv;
  double scale = op.getScale().convertToDouble();
  MaskOf masked = maskOf(op.getCausal(), op.getQueryPositions(),
                         op.getKeyPositions(), s, t);
  auto keep = attentionDropoutOf(op, hq, s, t);
  if (failed(keep))
    return failure();
  Tensor out = Tensor::zeros(shapeOf(op.getResult()));
  Tensor lse = Tensor::zeros(shapeOf(op.getLse()));
  std::vector<double> p(t);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < hq; ++h) {
      int64_t kvh = h / group;
      for (int64_t i = 0; i < s; ++i) {
        const double *qi = &q.data[((b * s + i) * hq + h) * d];
        double m = -kInf;
        for (int64_t j = 0; j < t; ++j) {
          if (masked(i, j)) {
            p[j] = -kInf;
            continue;
          }
          const double *kj = &k.data[((b * t + j) * hkv + kvh) * d];
          double dot = 0.0;
          for (int64_t c = 0; c < d; ++c)
            dot += qi[c] * kj[c];
          p[j] = scale * dot;
          m = std::max(m, p[j]);
        }
        if (m == -kInf) { // No visible key: a zero row.
          lse.data[(b * hq + h) * s + i] = -kInf;
          continue;
        }
        double sum = 0.0;
        for (int64_t j = 0; j < t; ++j)
          sum += p[j] = std::exp(p[j] - m);
        lse.data[(b * hq + h) * s + i] = m + std::log(sum);
        double *o = &out.data[((b * s + i) * hq + h) * dv];
        for (int64_t j = 0; j < t; ++j) {
          const double *vj = &v.data[((b * t + j) * hkv + kvh) * dv];
          double weight = p[j] / sum * (*keep)(b, h, i, j);
          for (int64_t c = 0; c < dv; ++c)
            o[c] += weight * vj[c];
        }
      }
    }
  return std::pair<Tensor, Tensor>{std::move(out), std::move(lse)};
}

Tensor Interpreter::evalAttentionEntropy(AttentionEntropyOp op) {
  const Tensor &q = get(op.getQuery()), &k = get(op.getKey()),
               &lse = get(op.getLse());
  int64_t batch = q.shape[0], s = q.shape[1], hq = q.shape[2], d = q.shape[3];
  int64_t t = k.shape[1], hkv = k.shape[2], group = hq / hkv;
  double scale = op.getScale().convertToDouble();
  MaskOf masked = maskOf(op.getCausal(), op.getQueryPositions(),
                         op.getKeyPositions(), s, t);
  Tensor out = Tensor::zeros(shapeOf(op.getResult()));
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < hq; ++h)
      for (int64_t i = 0; i < s; ++i) {
        int64_t row = (b * hq + h) * s + i;
        double l = lse.data[row];
        if (l == -kInf) { // No visible key.
          out.data[row] = -kInf;
          continue;
        }
        const double *qi = &q.data[((b * s + i) * hq + h) * d];
        // -sum_t p_t log p_t with log p_t = x_t - lse.
        double entropy = 0.0;
        for (int64_t j = 0; j < t; ++j) {
          if (masked(i, j))
            continue;
          const double *kj = &k.data[((b * t + j) * hkv + h / group) * d];
          double dot = 0.0;
          for (int64_t c = 0; c < d; ++c)
            dot += qi[c] * kj[c];
          double logp = scale * dot - l;
          entropy -= std::exp(logp) * logp;
        }
        out.data[row] = entropy;
      }
  return out;
}

FailureOr<std::array<Tensor, 3>>
Interpreter::evalAttentionGrad(AttentionGradOp op) {
  const Tensor &q = get(op.getQuery()), &k = get(op.getKey()),
               &v = get(op.getValue()), &o = get(op.getResult()),
               &lse = get(op.getLse()), &dout = get(op.getGrad());
  int64_t batch = q.shape[0], s = q.shape[1], hq = q.shape[2], d = q.shape[3];
  int64_t t = k.shape[1], hkv = k.shape[2], dv = v.shape[3];
  int64_t group = hq / hkv;
  double scale = op.getScale().convertToDouble();
  MaskOf masked = maskOf(op.getCausal(), op.getQueryPositions(),
                         op.getKeyPositions(), s, t);
  const Tensor *lseGrad = op.getLseGrad() ? &get(op.getLseGrad()) : nullptr;
  auto keep = attentionDropoutOf(op, hq, s, t);
  if (failed(keep))
    return failure();
  std::array<Tensor, 3> grads = {Tensor::zeros(q.shape), Tensor::zeros(k.shape),
                                 Tensor::zeros(v.shape)};
  Tensor &dq = grads[0], &dk = grads[1], &dvt = grads[2];
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < hq; ++h) {
      int64_t kvh = h / group;
      for (int64_t i = 0; i < s; ++i) {
        int64_t row = (b * s + i) * hq + h;
        const double *qi = &q.data[row * d], *doi = &dout.data[row * dv],
                     *oi = &o.data[row * dv];
        double rowDot = 0.0; // D_s = <dout_s, out_s> - lse_grad_s
        for (int64_t c = 0; c < dv; ++c)
          rowDot += doi[c] * oi[c];
        if (lseGrad)
          rowDot -= lseGrad->data[(b * hq + h) * s + i];
        for (int64_t j = 0; j < t; ++j) {
          if (masked(i, j))
            continue;
          int64_t kvRow = (b * t + j) * hkv + kvh;
          const double *kj = &k.data[kvRow * d], *vj = &v.data[kvRow * dv];
          double score = 0.0;
          for (int64_t c = 0; c < d; ++c)
            score += qi[c] * kj[c];
          double p = std::exp(scale * score - lse.data[(b * hq + h) * s + i]);
          double m = (*keep)(b, h, i, j), dp = 0.0;
          for (int64_t c = 0; c < dv; ++c) {
            dvt.data[kvRow * dv + c] += p * m * doi[c];
            dp += doi[c] * vj[c];
          }
          double ds = p * (dp * m - rowDot) * scale;
          for (int64_t c = 0; c < d; ++c) {
            dq.data[row * d + c] += ds * kj[c];
            dk.data[kvRow * d + c] += ds * qi[c];
          }
        }
      }
    }
  return grads;
}

std::array<Tensor, 3> Interpreter::evalNormGrad(Value input, Value weight,
                                                Value grad, double eps,
                                                bool rms) {
  const Tensor &x = get(input), &w = get(weight), &dy = get(grad);
  int64_t dim = x.shape.back(), rows = x.numElements() / dim;
  std::array<Tensor, 3> grads = {Tensor::zeros(x.shape), Tensor::zeros(w.shape),
                                 Tensor::zeros(w.shape)};
  std::vector<double> xhat(dim), g(dim);
  for (int64_t r = 0; r < rows; ++r) {
    const double *xr = &x.data[r * dim], *dyr = &dy.data[r * dim];
    double mean = 0.0, var = 0.0;
    if (!rms) {
      for (int64_t j = 0; j < dim; ++j)
        mean += xr[j];
      mean /= static_cast<double>(dim);
    }
    for (int64_t j = 0; j < dim; ++j)
      var += (xr[j] - mean) * (xr[j] - mean);
    double inv = 1.0 / std::sqrt(var / static_cast<double>(dim) + eps);
    double meanG = 0.0, meanGX = 0.0;
    for (int64_t j = 0; j < dim; ++j) {
      xhat[j] = (xr[j] - mean) * inv;
      g[j] = dyr[j] * w.data[j];
      meanG += g[j];
      meanGX += g[j] * xhat[j];
      grads[1].data[j] += dyr[j] * xhat[j];
      grads[2].data[j] += dyr[j];
    }
    meanG /= static_cast<double>(dim);
    meanGX /= static_cast<double>(dim);
    for (int64_t j = 0; j < dim; ++j)
      grads[0].data[r * dim + j] =
          (g[j] - (rms ? 0.0 : meanG) - xhat[j] * meanGX) * inv;
  }
  return grads;
}

FailureOr<Tensor> Interpreter::evalCrossEntropy(CrossEntropyOp op) {
  const Tensor &logits = get(op.getLogits()), &labels = get(op.getLabels());
  int64_t vocab = logits.shape.back();
  auto ignore = static_cast<int64_t>(op.getIgnoreIndex());
  double total = 0.0;
  int64_t count = 0;
  for (size_t n = 0; n < labels.data.size(); ++n) {
    auto label = static_cast<int64_t>(labels.data[n]);
    if (label == ignore)
      continue;
    if (label < 0 || label >= vocab)
      return op.emitError("label ")
             << label << " at position " << n
             << " is outside the vocabulary [0, " << vocab << ")";
    const double *x = &logits.data[n * vocab];
    double m = *std::max_element(x, x + vocab), sum = 0.0;
    for (int64_t j = 0; j < vocab; ++j)
      sum += std::exp(x[j] - m);
    total += std::log(sum) + m - x[label];
    ++count;
  }
  return Tensor({}, {count ? total / static_cast<double>(count) : 0.0});
}

std::pair<Tensor, Tensor> Interpreter::topK(const Tensor &in, int64_t k) {
  int64_t n = in.shape.back(), rows = in.numElements() / n;
  std::vector<int64_t> shape = in.shape;
  shape.back() = k;
  Tensor values = Tensor::zeros(shape), ids = Tensor::zeros(shape);
  std::vector<int64_t> order(n);
  for (int64_t r = 0; r < rows; ++r) {
    const double *x = &in.data[r * n];
    std::iota(order.begin(), order.end(), 0);
    // Stable, so equal values keep the lower position first.
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t a, int64_t b) { return x[a] > x[b]; });
    for (int64_t j = 0; j < k; ++j) {
      values.data[r * k + j] = x[order[j]];
      ids.data[r * k + j] = static_cast<double>(order[j]);
    }
  }
  return {std::move(values), std::move(ids)};
}
} // namespace

Tensor initialParamValue(ParamOp param, uint64_t seed) {
  Tensor t = Tensor::zeros(shapeOf(param.getResult()));
  uint64_t stream = seed ^ runtime::fnv1a64(param.getName().str());
  double scale = param.getScale() ? param.getScale()->convertToDouble() : 0.0;
  for (size_t i = 0; i < t.data.size(); ++i) {
    switch (param.getInit()) {
    case InitKind::Zeros:
      t.data[i] = 0.0;
      break;
    case InitKind::Ones:
      t.data[i] = 1.0;
      break;
    case InitKind::Normal:
      t.data[i] = scale * runtime::normal(stream, i);
      break;
    case InitKind::Uniform:
      t.data[i] = scale * (2.0 * runtime::uniform24(stream, i) - 1.0);
      break;
    }
  }
  return t;
}

ParamProvider randomInitProvider(uint64_t seed) {
  return [seed](ParamOp param) -> FailureOr<Tensor> {
    return initialParamValue(param, seed);
  };
}

FailureOr<std::vector<Tensor>> evaluate(func::FuncOp func,
                                        ArrayRef<Tensor> inputs,
                                        const ParamProvider &params,
                                        Precision precision,
                                        Assignments *assignments) {
  Interpreter interpreter(precision, params, assignments);
  return interpreter.run(func, inputs);
}

std::optional<runtime::DType> storageType(Type elt) {
  using runtime::DType;
  if (elt.isF32())
    return DType::F32;
  if (elt.isBF16())
    return DType::BF16;
  if (elt.isF16())
    return DType::F16;
  if (isa<Float8E4M3FNType>(elt))
    return DType::F8E4M3FN;
  if (isa<Float8E5M2Type>(elt))
    return DType::F8E5M2;
  if (elt.isInteger(32))
    return DType::I32;
  if (elt.isInteger(64))
    return DType::I64;
  return std::nullopt;
}

int64_t countParameters(func::FuncOp func) {
  int64_t total = 0;
  func.walk([&](ParamOp p) {
    if (!p.getState())
      total += cast<RankedTensorType>(p.getResult().getType()).getNumElements();
  });
  return total;
}

} // namespace weft::reference
