//===- WeftEmitter.h - terse construction of weft ops ------------*- C++
//-*-===//
//
// Helpers shared by the composite expansions and the gradient rules, which
// both write small dataflow graphs of primitive ops.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_DIALECTS_WEFT_IR_WEFTEMITTER_H
#define WEFT_DIALECTS_WEFT_IR_WEFTEMITTER_H

#include "dialects/weft/IR/WeftOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/APFloat.h"

#include <numeric>

namespace weft::detail {
/// Small helpers that keep the expansions readable.
struct Emitter {
  mlir::OpBuilder &b;
  mlir::Location loc;

  mlir::RankedTensorType typeOf(mlir::Value v) {
    return mlir::cast<mlir::RankedTensorType>(v.getType());
  }

  /// A splat constant of `like`'s type (or shape with element type `elt`).
  mlir::Value splat(mlir::RankedTensorType type, double value) {
    mlir::Attribute elt;
    if (mlir::isa<mlir::FloatType>(type.getElementType())) {
      auto ft = mlir::cast<mlir::FloatType>(type.getElementType());
      llvm::APFloat f(value);
      bool lost;
      f.convert(ft.getFloatSemantics(), llvm::APFloat::rmNearestTiesToEven,
                &lost);
      elt = mlir::FloatAttr::get(ft, f);
    } else {
      elt = mlir::IntegerAttr::get(type.getElementType(),
                                   static_cast<int64_t>(value));
    }
    return ConstantOp::create(b, loc, mlir::DenseElementsAttr::get(type, elt));
  }
  mlir::Value splatLike(mlir::Value like, double value) {
    return splat(typeOf(like), value);
  }

  /// Broadcasts `v`, which is `like` with dimension `dim` reduced away, back
  /// to `like`'s shape.
  mlir::Value expandAlong(mlir::Value v, mlir::Value like, int64_t dim) {
    llvm::SmallVector<int64_t> dims;
    for (int64_t d = 0; d < typeOf(like).getRank(); ++d)
      if (d != dim)
        dims.push_back(d);
    return BroadcastOp::create(b, loc, typeOf(like), v, dims);
  }
  /// Broadcasts a [D] vector along the last dimension of `like`.
  mlir::Value expandLast(mlir::Value vec, mlir::Value like) {
    return BroadcastOp::create(
        b, loc, typeOf(like), vec,
        llvm::ArrayRef<int64_t>{typeOf(like).getRank() - 1});
  }

  mlir::Value broadcast(mlir::Value v, mlir::RankedTensorType to,
                        llvm::ArrayRef<int64_t> dims) {
    return BroadcastOp::create(b, loc, to, v, dims);
  }
  /// `v` as f32 (a cast unless it is f32 already).
  mlir::Value f32(mlir::Value v) {
    mlir::RankedTensorType type = typeOf(v);
    if (type.getElementType().isF32())
      return v;
    return CastOp::create(b, loc, type.clone(b.getF32Type()), v);
  }
  mlir::Value reshape(mlir::Value v, mlir::Type to) {
    return v.getType() == to ? v : ReshapeOp::create(b, loc, to, v).getResult();
  }

  mlir::Value add(mlir::Value x, mlir::Value y) {
    return AddOp::create(b, loc, x, y);
  }
  mlir::Value neg(mlir::Value x) { return NegOp::create(b, loc, x); }
  mlir::Value sub(mlir::Value x, mlir::Value y) {
    return SubOp::create(b, loc, x, y);
  }
  mlir::Value mul(mlir::Value x, mlir::Value y) {
    return MulOp::create(b, loc, x, y);
  }
  mlir::Value div(mlir::Value x, mlir::Value y) {
    return DivOp::create(b, loc, x, y);
  }
  mlir::Value reduceSum(mlir::Value x, llvm::ArrayRef<int64_t> dims) {
    return ReduceSumOp::create(b, loc, x, dims);
  }
  mlir::Value reduceMax(mlir::Value x, llvm::ArrayRef<int64_t> dims) {
    return ReduceMaxOp::create(b, loc, x, dims);
  }
  mlir::Value reduceMean(mlir::Value x, llvm::ArrayRef<int64_t> dims) {
    return ReduceMeanOp::create(b, loc, x, dims);
  }
  llvm::SmallVector<int64_t> allDims(mlir::Value x) {
    llvm::SmallVector<int64_t> dims(typeOf(x).getRank());
    std::iota(dims.begin(), dims.end(), 0);
    return dims;
  }

  /// x / sqrt(mean-square-like statistic + eps) along the last dim, shared by
  /// both norms: returns x * rsqrt(stat + eps) with stat broadcast back.
  mlir::Value normalize(mlir::Value x, mlir::Value stat, double eps) {
    int64_t last = typeOf(x).getRank() - 1;
    mlir::Value s = expandAlong(stat, x, last);
    mlir::Value inv = RsqrtOp::create(b, loc, add(s, splatLike(x, eps)));
    return mul(x, inv);
  }

  mlir::Value softmax(mlir::Value x, int64_t dim) {
    mlir::Value m = expandAlong(reduceMax(x, {dim}), x, dim);
    mlir::Value e = ExpOp::create(b, loc, sub(x, m));
    return div(e, expandAlong(reduceSum(e, {dim}), x, dim));
  }
};

} // namespace weft::detail

#endif // WEFT_DIALECTS_WEFT_IR_WEFTEMITTER_H
