//===- Fused.cpp - fused groups as launches of generated kernels ---------===//
//
// A weft.fused group is a kernel the generator wrote (named by its
// `weft.kernel`); lowering declares it once (`sched.kernel`, with the exact
// buffer types it is passed) and launches it with one scalar, the element
// count of its first result. The GPU grid: one block of 256 threads per row
// for a group holding a norm, else grid-stride blocks of four elements a
// thread, at most 16 blocks per SM of an H100/H200 (132 SMs).
//
//===----------------------------------------------------------------------===//

#include "codegen/KernelExpr.h"
#include "codegen/lowering/Lowering.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"

using namespace mlir;

namespace weft::codegen {
namespace {

constexpr int64_t kThreads = 256;
constexpr int64_t kMaxBlocks = 132 * 16;

SmallVector<int64_t, 3> gridOf(FusedOp op, int64_t n, bool cuda) {
  if (!cuda)
    return {1, 1, 1};
  if (isRowGroup(op)) {
    ArrayRef<int64_t> out =
        cast<ShapedType>(op.getResult(0).getType()).getShape();
    int64_t width = out.empty() ? 1 : std::max<int64_t>(1, out.back());
    return {std::max<int64_t>(1, n / width), 1, 1};
  }
  int64_t threads = (n + 3) / 4;
  return {
      std::clamp<int64_t>((threads + kThreads - 1) / kThreads, 1, kMaxBlocks),
      1, 1};
}

LogicalResult lowerFused(FusedOp op, ProgramLowering &l) {
  auto name = op->getAttrOfType<StringAttr>("weft.kernel");
  if (!name)
    return op.emitOpError("has no kernel name: the kernel generator names "
                          "groups (weft.kernel) before lowering to sched");
  if (op.getNumResults() == 0)
    return op.emitOpError("computes nothing");
  SmallVector<Value> inputs, outputs;
  for (Value v : op.getInputs())
    inputs.push_back(l.read(op, v));
  for (Value r : op.getResults())
    outputs.push_back(l.write(op, r));
  OpBuilder &b = l.builder();
  auto types = [&](ArrayRef<Value> values) {
    SmallVector<Attribute> list;
    for (Value v : values)
      list.push_back(TypeAttr::get(v.getType()));
    return b.getArrayAttr(list);
  };
  // Identical groups share one kernel: declare it with the first's types.
  auto program = op->getParentOfType<func::FuncOp>();
  auto module = program->getParentOfType<ModuleOp>();
  auto kernel = module.lookupSymbol<sched::KernelOp>(name);
  if (!kernel) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(program);
    kernel = sched::KernelOp::create(b, op.getLoc(), name, types(inputs),
                                     types(outputs),
                                     b.getTypeArrayAttr({b.getI64Type()}));
    // The group itself, on block arguments for its inputs: the kernel
    // source is generated from it.
    Block *body = new Block();
    kernel.getBody().push_back(body);
    IRMapping map;
    for (Value v : op.getInputs())
      map.map(v, body->addArgument(v.getType(), op.getLoc()));
    b.setInsertionPointToEnd(body);
    b.clone(*op, map);
  }
  int64_t n = cast<ShapedType>(op.getResult(0).getType()).getNumElements();
  sched::LaunchOp::create(
      b, op.getLoc(), FlatSymbolRefAttr::get(name),
      b.getDenseI64ArrayAttr(gridOf(op, n, l.target().cuda)),
      b.getI64IntegerAttr(l.target().cuda ? kThreads : 1), inputs, outputs,
      b.getArrayAttr({b.getI64IntegerAttr(n)}), b.getStringAttr("compute"));
  return success();
}

} // namespace

void populateFusedLowerings(LoweringTable &table) {
  addLowering(table, lowerFused);
}

} // namespace weft::codegen
