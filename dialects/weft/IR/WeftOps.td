//===- WeftOps.td - weft graph ops -------------------------*- tablegen -*-===//
//
// Ops of the weft graph dialect. Each description states the exact semantics
// that the reference evaluator implements.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_OPS_TD
#define WEFT_OPS_TD

include "dialects/weft/IR/WeftDialect.td"
include "dialects/weft/IR/WeftAttrs.td"
include "dialects/weft/IR/WeftInterfaces.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

// Every weft value is a static tensor of positive dimensions whose byte size
// fits in 2^62 (isSizedTensor): a zero-size dimension or a shape whose
// element count overflows is refused where it is written, before a rule or
// a pass computes with it.
class Weft_TensorOf<list<Type> types>
    : RankedTensorOf<types, [HasStaticShapePred,
                             CPred<"::weft::isSizedTensor($_self)">],
                     "statically shaped tensor with positive dimensions and "
                     "at most 2^62 bytes">;
def Weft_FloatTensor : Weft_TensorOf<[F32, BF16, F16, F8E4M3FN, F8E5M2]>;
def Weft_IntTensor : Weft_TensorOf<[I32, I64]>;
def Weft_Tensor
    : Weft_TensorOf<[F32, BF16, F16, F8E4M3FN, F8E5M2, I32, I64]>;
// Every float attribute of a weft op (a scale, an epsilon, a theta, an
// exponent, a rate) is finite: an infinite or NaN one would only poison the
// values or the generated code. Constants (masks) may hold infinities.
def Weft_FiniteF64Attr : ConfinedAttr<F64Attr, [AttrConstraint<
    CPred<"::std::isfinite(::llvm::cast<::mlir::FloatAttr>($_self)"
          ".getValueAsDouble())">, "whose value is finite">]>;
def Weft_ScalarF32 : 0DTensorOf<[F32]>,
    BuildableType<"::mlir::RankedTensorType::get({}, $_builder.getF32Type())">;

//===----------------------------------------------------------------------===//
// Placement
//===----------------------------------------------------------------------===//

def Weft_MeshOp : Weft_Op<"mesh", [Symbol]> {
  let summary = "a named grid of devices";
  let description = [{
    Declares the device mesh `sym_name`: axes with names (dp, tp, pp, ep)
    and sizes, the first axis major. `#weft.sharding` attributes refer to a
    mesh by name; sharding passes map mesh positions to ranks and ranks to
    the topology's nodes and devices.

    ```mlir
    weft.mesh @mesh axes ["dp", "tp"] sizes [2, 4]
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, StrArrayAttr:$axes,
                       DenseI64ArrayAttr:$sizes);
  let assemblyFormat = "$sym_name `axes` $axes `sizes` $sizes attr-dict";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The size of axis `name`, or 0 if the mesh has no such axis.
    int64_t axisSize(::llvm::StringRef name);
  }];
}

//===----------------------------------------------------------------------===//
// Collectives: what SPMD partitioning (weft-partition) inserts
//===----------------------------------------------------------------------===//

// A collective runs once on every rank of the program. `axes` name axes of
// `mesh`; the ranks that share their positions on every other axis form one
// group, and the collective combines within each group. The group size is
// the product of the named axes' sizes.
class Weft_CollectiveOp<string mnemonic, list<Trait> traits = []>
    : Weft_Op<mnemonic, !listconcat(traits, [
        DeclareOpInterfaceMethods<SymbolUserOpInterface>,
        DeclareOpInterfaceMethods<Weft_GradientOpInterface>])> {
  code extraCollectiveDeclaration = [{
    /// The number of ranks in each group (the product of the axes' sizes),
    /// or 0 when the mesh or an axis is missing.
    int64_t groupSize();
  }];
  let extraClassDeclaration = extraCollectiveDeclaration;
}

def Weft_AllReduceOp : Weft_CollectiveOp<"all_reduce", [Pure, InferTypeOpAdaptor]> {
  let summary = "combine values across a group; every rank gets the result";
  let description = [{
    Every result i is the elementwise sum (or mean, or maximum) of operand
    i over the ranks of the group. Several operands make one bucket: the
    runtime packs them into one buffer and issues one collective (bucketed
    gradient all-reduce in data parallelism).

    Gradient: the group reads the result identically, so the gradient of each
    rank's operand is the result's gradient (scaled by 1/group for `mean`):
    Megatron's reduce-from-tensor-parallel-region. A `max` (of FP8 block
    maxima, which set scales) has none.

    ```mlir
    %s = weft.all_reduce sum %partial over @mesh ["tp"] : tensor<8x64xf32>
    ```
  }];
  let arguments = (ins Weft_ReduceKind:$reduction,
                       Variadic<Weft_FloatTensor>:$inputs,
                       FlatSymbolRefAttr:$mesh, StrArrayAttr:$axes);
  let results = (outs Variadic<Weft_FloatTensor>:$results);
  let assemblyFormat = [{
    $reduction $inputs `over` $mesh $axes attr-dict `:` type($inputs)
  }];
  let hasVerifier = 1;
}

def Weft_CopyToGroupOp : Weft_CollectiveOp<"copy_to_group", [Pure, SameOperandsAndResultType]> {
  let summary = "identity whose gradient is summed over a group";
  let description = [{
    Yields `input` unchanged. It marks where a value that is the same on every
    rank of the group (a replicated parameter, an activation before a
    column-parallel matmul) enters computation that differs per rank, so each
    rank's gradient is one contribution: the gradient is the all-reduce sum
    of the result's gradient over the group (Megatron's
    copy-to-tensor-parallel-region; JAX's pvary). Data-parallel gradient
    all-reduce is this op's gradient on each parameter.

    ```mlir
    %w1 = weft.copy_to_group %w over @mesh ["dp"] : tensor<64x64xf32>
    ```
  }];
  let arguments = (ins Weft_FloatTensor:$input, FlatSymbolRefAttr:$mesh,
                       StrArrayAttr:$axes);
  let results = (outs Weft_FloatTensor:$result);
  let assemblyFormat = "$input `over` $mesh $axes attr-dict `:` type($input)";
}

def Weft_AllGatherOp : Weft_CollectiveOp<"all_gather", [Pure]> {
  let summary = "concatenate the group's shards along a dimension";
  let description = [{
    The result is the operands of the group's ranks concatenated along `dim`
    in group order, so that dimension grows by the group size; every rank
    gets the whole. Gradient: each rank's use of the gathered tensor is one
    contribution, so the operand's gradient is the reduce-scatter (sum) of
    the result's gradient along `dim` (ZeRO-3 parameter gathering; Megatron's
    sequence-parallel gather).

    ```mlir
    %full = weft.all_gather %shard over @mesh ["dp"] dim 0
        : tensor<16x64xf32> -> tensor<64x64xf32>
    ```
  }];
  let arguments = (ins Weft_FloatTensor:$input, FlatSymbolRefAttr:$mesh,
                       StrArrayAttr:$axes, I64Attr:$dim);
  let results = (outs Weft_FloatTensor:$result);
  let assemblyFormat = [{
    $input `over` $mesh $axes `dim` $dim attr-dict `:` type($input) `->`
    type($result)
  }];
  let hasVerifier = 1;
}

def Weft_ReduceScatterOp : Weft_CollectiveOp<"reduce_scatter", [Pure]> {
  let summary = "sum across a group, each rank keeping its shard";
  let description = [{
    The operands of the group's ranks are summed elementwise; rank r of the
    group keeps block r of the sum along `dim` (that dimension shrinks by the
    group size). Gradient: all-gather of the result's gradient along `dim`.

    ```mlir
    %g = weft.reduce_scatter %grad over @mesh ["dp"] dim 0
        : tensor<64x64xf32> -> tensor<16x64xf32>
    ```
  }];
  let arguments = (ins Weft_FloatTensor:$input, FlatSymbolRefAttr:$mesh,
                       StrArrayAttr:$axes, I64Attr:$dim);
  let results = (outs Weft_FloatTensor:$result);
  let assemblyFormat = [{
    $input `over` $mesh $axes `dim` $dim attr-dict `:` type($input) `->`
    type($result)
  }];
  let hasVerifier = 1;
}

def Weft_AllToAllOp : Weft_CollectiveOp<"all_to_all", [Pure]> {
  let summary = "exchange blocks: split one dimension, concatenate another";
  let description = [{
    Rank r splits its operand into group-size blocks along `split_dim` and
    sends block j to rank j; it concatenates the blocks it receives along
    `concat_dim` in group order. `split_dim` shrinks and `concat_dim` grows by
    the group size (equal dims: the shape is unchanged). Gradient: the
    all-to-all with the two dimensions swapped (expert dispatch and combine;
    Ulysses-style sequence parallelism).

    ```mlir
    %y = weft.all_to_all %x over @mesh ["ep"] split 0 concat 1
        : tensor<8x16x64xf32> -> tensor<2x64x64xf32>
    ```
  }];
  let arguments = (ins Weft_Tensor:$input, FlatSymbolRefAttr:$mesh,
                       StrArrayAttr:$axes, I64Attr:$split_dim,
                       I64Attr:$concat_dim);
  let results = (outs Weft_Tensor:$result);
  let assemblyFormat = [{
    $input `over` $mesh $axes `split` $split_dim `concat` $concat_dim attr-dict
    `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Weft_RaggedAllToAllOp : Weft_CollectiveOp<"ragged_all_to_all", [Pure]> {
  let summary = "exchange row segments of variable length (MoE dispatch)";
  let description = [{
    Over the G ranks of the group of `axes`: `input` is [N, D] rows in
    consecutive segments of `send_sizes` [G·a] rows each (i32), segment i
    going to member i / a; `recv_sizes` [G·b] are the segments this rank
    receives, segment i from member i / b, which the result [rows, D] holds
    in that order, packed, with zeros after them. What a member sends must
    be what its peer expects (the expert-parallel dispatch exchanges its
    counts first, with a `weft.all_to_all`). Gradient: the same exchange
    of the result's gradient with the two sizes swapped, into N rows.

    ```mlir
    %r = weft.ragged_all_to_all %rows, %counts, %recv over @mesh ["ep"]
        rows = 64 : tensor<32x64xf32>, tensor<8xi32>, tensor<8xi32>
        -> tensor<64x64xf32>
    ```
  }];
  let arguments = (ins Weft_FloatTensor:$input, Weft_IntTensor:$send_sizes,
                       Weft_IntTensor:$recv_sizes, FlatSymbolRefAttr:$mesh,
                       StrArrayAttr:$axes, I64Attr:$rows);
  let results = (outs Weft_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $send_sizes `,` $recv_sizes `over` $mesh $axes `rows` `=`
    $rows attr-dict `:` type($input) `,` type($send_sizes) `,`
    type($recv_sizes) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Weft_RingShiftOp : Weft_CollectiveOp<"ring_shift",
    [Pure, SameOperandsAndResultType]> {
  let summary = "pass a value one step round the ring of a mesh axis";
  let description = [{
    Every rank sends `input` to the rank whose coordinate along `axis` is
    its own plus `offset` (mod the axis size; every other coordinate
    equal) and returns what the rank at its coordinate minus `offset`
    sent: a collective permute. Ring attention under context parallelism
    (weft-partition) passes key/value blocks and their positions one step
    per block. Gradient: the opposite shift of the result's gradient
    (dK/dV travel back round the ring). `weft-split-ring-shifts` turns
    each into a `weft.send` where the input is ready and a `weft.recv`
    just before the first use, so the transfer overlaps the work between.

    ```mlir
    %k1 = weft.ring_shift %k0 over @mesh "cp" offset 1 : tensor<2x8x2x16xf32>
    ```
  }];
  let arguments = (ins Weft_Tensor:$input, FlatSymbolRefAttr:$mesh,
                       StrAttr:$axis, I64Attr:$offset);
  let results = (outs Weft_Tensor:$result);
  let assemblyFormat = [{
    $input `over` $mesh $axis `offset` $offset attr-dict `:` type($input)
  }];
}

class Weft_PointToPointOp<string mnemonic, list<Trait> traits = []>
    : Weft_Op<mnemonic, !listconcat(traits, [
        DeclareOpInterfaceMethods<SymbolUserOpInterface>])>;

def Weft_SendOp : Weft_PointToPointOp<"send"> {
  let summary = "send a value to the rank a few coordinates along one axis";
  let description = [{
    Sends `input` to the rank whose coordinate along `axis` is this rank's
    plus `offset` (mod the axis size; every other coordinate equal), which
    receives it with a `weft.recv` of the same tag, type and -`offset`.
    Pipeline stages pass activations forward and their gradients back
    (weft-pipeline-split); sends are posted without waiting. Not
    differentiable: the split inserts them after autodiff.

    ```mlir
    weft.send %h to @mesh "pp" offset 1 tag 0 : tensor<4x8x64xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, FlatSymbolRefAttr:$mesh,
                       StrAttr:$axis, I64Attr:$offset, I64Attr:$tag);
  let assemblyFormat = [{
    $input `to` $mesh $axis `offset` $offset `tag` $tag attr-dict `:`
    type($input)
  }];
}

def Weft_RecvOp : Weft_PointToPointOp<"recv"> {
  let summary = "receive a value from the rank a few coordinates along one axis";
  let description = [{
    Receives what the rank at this rank's coordinate plus `offset` along
    `axis` sends with the same tag; waits until it arrives.

    ```mlir
    %h = weft.recv from @mesh "pp" offset -1 tag 0 : tensor<4x8x64xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$mesh, StrAttr:$axis,
                       I64Attr:$offset, I64Attr:$tag);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    `from` $mesh $axis `offset` $offset `tag` $tag attr-dict `:`
    type($result)
  }];
}

def Weft_ShardSliceOp : Weft_Op<"shard_slice", [Pure,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>,
    DeclareOpInterfaceMethods<Weft_GradientOpInterface>]> {
  let summary = "this rank's block of a value the group holds whole";
  let description = [{
    Rank r of the group keeps block r of `input` along `dim` (that dimension
    shrinks by the group size); no data moves. The input is the same on
    every rank of the group. ZeRO-1 and ZeRO-2 use it to take each rank's
    share of a replicated parameter and gradient for the optimizer update;
    partitioning uses it to split a replicated value (positions, token ids
    under sequence parallelism). Gradient: the all-gather of the blocks'
    gradients, so the replicated input gets its whole gradient everywhere.

    ```mlir
    %p = weft.shard_slice %w over @mesh ["dp"] dim 0
        : tensor<64x64xf32> -> tensor<16x64xf32>
    ```
  }];
  let arguments = (ins Weft_Tensor:$input, FlatSymbolRefAttr:$mesh,
                       StrArrayAttr:$axes, I64Attr:$dim);
  let results = (outs Weft_Tensor:$result);
  let assemblyFormat = [{
    $input `over` $mesh $axes `dim` $dim attr-dict `:` type($input) `->`
    type($result)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    int64_t groupSize();
  }];
}

//===----------------------------------------------------------------------===//
// Parameters and constants
//===----------------------------------------------------------------------===//

def Weft_ParamOp : Weft_Op<"param"> {
  let summary = "a trainable parameter";
  let description = [{
    Declares the trainable tensor `name` and yields its current value. Names
    are unique within a function and are exactly the names a Hugging Face
    state dict uses, so a safetensors checkpoint maps onto params one to one.

    `init` says how a fresh run fills the tensor; `scale` is its argument:
    `zeros` and `ones` take none; `normal` draws N(0, scale^2); `uniform`
    draws U(-scale, scale). Draws come from the counter-based generator of
    `runtime/support/Random.h`: element i (row-major) of a parameter named N
    under run seed s uses the stream `s ^ fnv1a64(N)`, so a value does not
    depend on the order in which parameters are created.

    The op has no operands; autodiff treats every `weft.param` result as a
    leaf to differentiate, except those marked `state`: optimizer state (Adam
    moments), which the run keeps and checkpoints with the parameters but
    never differentiates or counts as a model parameter.

    A parameter's value for the next step is written by `weft.assign`.

    ```mlir
    %w = weft.param "transformer.wte.weight" init(normal, 2.0e-02) : tensor<256x64xf32>
    %m = weft.param "transformer.wte.weight.exp_avg" init(zeros) state : tensor<256x64xf32>
    ```
  }];
  let arguments = (ins StrAttr:$name, Weft_InitKind:$init,
                       OptionalAttr<Weft_FiniteF64Attr>:$scale, UnitAttr:$state);
  let results = (outs Weft_FloatTensor:$result);
  let assemblyFormat = [{
    $name `init` `(` $init (`,` $scale^)? `)` (`state` $state^)? attr-dict `:`
    type($result)
  }];
  let hasVerifier = 1;
}

def Weft_AssignOp : Weft_Op<"assign", [MemoryEffects<[MemWrite]>]> {
  let summary = "set a parameter's value for the next step";
  let description = [{
    Makes `value` the value the `weft.param` named `name` (declared in the same
    function, with the same type) yields in the next step. Reads of the
    parameter in this step see the old value wherever the assign is placed:
    a step function reads all parameters, then writes them. The optimizer
    pass creates one assign per parameter and per state tensor.

    ```mlir
    weft.assign "transformer.wte.weight", %new : tensor<256x64xf32>
    ```
  }];
  let arguments = (ins StrAttr:$name, Weft_FloatTensor:$value);
  let assemblyFormat = "$name `,` $value attr-dict `:` type($value)";
  let hasVerifier = 1;
}

def Weft_ConstantOp : Weft_Op<"constant",
    [ConstantLike, Pure, AllTypesMatch<["value", "result"]>]> {
  let summary = "a constant tensor";
  let description = [{
    Yields the dense elements attribute `value`. Decompositions use splat
    constants for scalars such as epsilons and scales. Float elements may be
    infinite (masks use -inf) but not NaN, which no model means.

    ```mlir
    %c = weft.constant dense<1.0e-05> : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs Weft_Tensor:$result);
  let assemblyFormat = "$value attr-dict";
  let hasFolder = 1;
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise ops
//===----------------------------------------------------------------------===//

class Weft_UnaryOp<string mnemonic, string semantics, list<Trait> traits = []>
    : Weft_Op<mnemonic, !listconcat(traits,
          [Pure, Elementwise, SameOperandsAndResultType,
           DeclareOpInterfaceMethods<Weft_GradientOpInterface>, DeclareOpInterfaceMethods<Weft_ShardingRuleOpInterface>])> {
  let summary = "elementwise " # mnemonic;
  let description = [{
    Applies, to every element x of `input`, y = }] # semantics # [{, computed
    in at least fp32 and rounded to the element type. The result has the
    input's type.

    ```mlir
    %y = weft.}] # mnemonic # [{ %x : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Weft_FloatTensor:$input);
  let results = (outs Weft_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
}

def Weft_NegOp : Weft_UnaryOp<"neg", "-x">;
def Weft_ExpOp : Weft_UnaryOp<"exp", "e^x (inf on overflow)">;
def Weft_LogOp : Weft_UnaryOp<"log",
    "ln(x) (-inf at 0, NaN below 0)">;
def Weft_TanhOp : Weft_UnaryOp<"tanh", "tanh(x)">;
def Weft_SqrtOp : Weft_UnaryOp<"sqrt", "sqrt(x) (NaN below 0)">;
def Weft_RsqrtOp : Weft_UnaryOp<"rsqrt", "1 / sqrt(x) (inf at 0)">;
def Weft_SquareOp : Weft_UnaryOp<"square", "x * x">;
def Weft_GeluOp : Weft_UnaryOp<"gelu",
    "0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), the tanh form GPT-2 "
    "calls gelu_new", [DeclareOpInterfaceMethods<Weft_DecomposableOpInterface>]>;
def Weft_SiluOp : Weft_UnaryOp<"silu", "x / (1 + e^-x)",
    [DeclareOpInterfaceMethods<Weft_DecomposableOpInterface>]>;

def Weft_PowOp : Weft_Op<"pow", [Pure, Elementwise, SameOperandsAndResultType,
                                  DeclareOpInterfaceMethods<Weft_GradientOpInterface>, DeclareOpInterfaceMethods<Weft_ShardingRuleOpInterface>]> {
  let summary = "elementwise power by a constant exponent";
  let description = [{
    y = x ^ exponent for every element, with C's `pow` semantics (a negative
    base with a non-integer exponent gives NaN).

    ```mlir
    %y = weft.pow %x {exponent = 3.0 : f64} : tensor<4xf32>
    ```
  }];
  let arguments = (ins Weft_FloatTensor:$input, Weft_FiniteF64Attr:$exponent);
  let results = (outs Weft_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
}

class Weft_BinaryOp<string mnemonic, string semantics, list<Trait> traits = [
        DeclareOpInterfaceMethods<Weft_GradientOpInterface>]>
    : Weft_Op<mnemonic, !listconcat(traits,
          [Pure, Elementwise, SameOperandsAndResultType, DeclareOpInterfaceMethods<Weft_ShardingRuleOpInterface>])> {
  let summary = "elementwise " # mnemonic;
  let description = [{
    z = }] # semantics # [{ for each pair of elements at the same index.
    Operands and result have one type: there is no implicit broadcasting;
    use `weft.broadcast` to expand an operand first.

    ```mlir
    %z = weft.}] # mnemonic # [{ %x, %y : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Weft_FloatTensor:$lhs, Weft_FloatTensor:$rhs);
  let results = (outs Weft_FloatTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($result)";
}

def Weft_AddOp : Weft_BinaryOp<"add", "x + y">;
def Weft_SubOp : Weft_BinaryOp<"sub", "x - y">;
def Weft_MulOp : Weft_BinaryOp<"mul", "x * y">;
def Weft_DivOp : Weft_BinaryOp<"div", "x / y (IEEE: x/0 is +-inf or NaN)">;
def Weft_MaxOp : Weft_BinaryOp<"max",
    "max(x, y) (NaN if either is NaN); its gradient goes to x where x >= y, "
    "else to y">;
def Weft_GeOp : Weft_BinaryOp<"ge",
    "1 if x >= y else 0 (0 if either is NaN), in the operands' type: the mask "
    "max and reduce_max gradients use; its own gradient is zero", []>;
def Weft_SelectOp : Weft_Op<"select", [Pure, Elementwise,
    SameOperandsAndResultType,
    DeclareOpInterfaceMethods<Weft_ShardingRuleOpInterface>]> {
  let summary = "elementwise choice";
  let description = [{
    z = a if c != 0 else b, for each index: `c` is a mask of 0 and 1 (from
    `weft.ge`). Unlike c * a + (1 - c) * b, a NaN or infinity in the side
    not chosen does not reach z: what dynamic loss scaling needs to keep a
    parameter when its update overflowed. No gradient: it appears only in
    the optimizer step.

    ```mlir
    %z = weft.select %c, %a, %b : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Weft_FloatTensor:$condition, Weft_FloatTensor:$lhs,
                       Weft_FloatTensor:$rhs);
  let results = (outs Weft_FloatTensor:$result);
  let assemblyFormat =
      "$condition `,` $lhs `,` $rhs attr-dict `:` type($result)";
}
def Weft_GeluGradOp : Weft_BinaryOp<"gelu_grad",
    "y * gelu'(x) with the tanh-form gelu (x is lhs, the incoming gradient y "
    "is rhs); appears only after autodiff", []>;
def Weft_SiluGradOp : Weft_BinaryOp<"silu_grad",
    "y * s (1 + x (1 - s)) with s = 1 / (1 + e^-x), silu's derivative (x is "
    "lhs, the incoming gradient y is rhs); appears only after autodiff", []>;

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

def Weft_MatmulOp : Weft_Op<"matmul", [Pure, InferTypeOpAdaptor, DeclareOpInterfaceMethods<Weft_GradientOpInterface>, DeclareOpInterfaceMethods<Weft_ShardingRuleOpInterface>]> {
  let summary = "batched matrix product";
  let description = [{
    `lhs` has shape [B..., M, K] (or [B..., K, M] with `transpose_lhs`),
    `rhs` has shape [B..., K, N] (or [B..., N, K] with `transpose_rhs`). The
    result is [B..., M, N] with r[b, m, n] = sum_k lhs[b, m, k] rhs[b, k, n],
    accumulated in fp32 or wider and rounded once. The batch dims B... of the
    two operands are equal, or one operand has none and is shared by every
    batch (a weight). Both operands have the same element type, which the
    result keeps.

    ```mlir
    %y = weft.matmul %x, %w transpose_rhs : tensor<2x8x64xf32>, tensor<256x64xf32>
    ```
  }];
  let arguments = (ins Weft_FloatTensor:$lhs, Weft_FloatTensor:$rhs,
                       UnitAttr:$transpose_lhs, UnitAttr:$transpose_rhs);
  let results = (outs Weft_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs (`transpose_lhs` $transpose_lhs^)?
    (`transpose_rhs` $transpose_rhs^)? attr-dict `:` type($lhs) `,` type($rhs)
  }];
}

def Weft_MatmulEpilogueOp : Weft_Op<"matmul_epilogue",
    [Pure, AttrSizedOperandSegments]> {
  let summary = "a linear layer's GEMM with its bias, GELU or GELU gradient";
  let description = [{
    A `weft.matmul` of `lhs` [B..., M, K] by a weight `rhs` [K, N] ([N, K]
    with `transpose_rhs`) whose product `acc` [B..., M, N] goes through an
    epilogue before it is stored, as cuBLASLt's epilogues do on the GPU.
    Created by `weft-gemm-epilogue` (GPU bundles) after autodiff; the
    rewritten ops' meaning is kept:

    - `bias`: result = acc + bias, `bias` [N] added to every row.
    - `gelu`: aux = acc; result = gelu(acc).
    - `bias_gelu`: aux = acc + bias; result = gelu(aux).
    - `dgelu`: result = gelu_grad(preactivation, acc), i.e. acc * gelu'(x)
      with x the `preactivation` operand (the `aux` its forward saved).

    gelu is the tanh form of `weft.gelu`. `acc` and the epilogue's
    intermediates are f32 values (rounded as f32 results are); only the
    results are rounded to the element type, once. So for f32 the op equals
    the ops it replaced; for bf16 it skips their intermediate roundings, as
    cuBLASLt does.

    ```mlir
    %y, %h = weft.matmul_epilogue bias_gelu %x, %w bias %b
        : (tensor<2x8x64xf32>, tensor<64x256xf32>, tensor<256xf32>)
          -> (tensor<2x8x256xf32>, tensor<2x8x256xf32>)
    ```
  }];
  let arguments = (ins Weft_FloatTensor:$lhs, Weft_FloatTensor:$rhs,
                       Optional<Weft_FloatTensor>:$bias,
                       Optional<Weft_FloatTensor>:$preactivation,
                       Weft_Epilogue:$epilogue, UnitAttr:$transpose_rhs);
  let results = (outs Weft_FloatTensor:$result,
                      Optional<Weft_FloatTensor>:$aux);
  let assemblyFormat = [{
    $epilogue $lhs `,` $rhs (`transpose_rhs` $transpose_rhs^)?
    (`bias` $bias^)? (`preactivation` $preactivation^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Shape ops
//===----------------------------------------------------------------------===//

def Weft_ReshapeOp : Weft_Op<"reshape", [Pure, DeclareOpInterfaceMethods<Weft_GradientOpInterface>, DeclareOpInterfaceMethods<Weft_ShardingRuleOpInterface>]> {
  let summary = "reinterpret a tensor's shape";
  let description = [{
    Yields the elements of `input` in row-major order under the result's
    shape, which has the same number of elements and element type.

    ```mlir
    %y = weft.reshape %x : tensor<2x8x64xf32> -> tensor<2x8x4x16xf32>
    ```
  }];
  let arguments = (ins Weft_Tensor:$input);
  let results = (outs Weft_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Weft_TransposeOp : Weft_Op<"transpose", [Pure, InferTypeOpAdaptor, DeclareOpInterfaceMethods<Weft_GradientOpInterface>, DeclareOpInterfaceMethods<Weft_ShardingRuleOpInterface>]> {
  let summary = "permute dimensions";
  let description = [{
    result[i] = input[j] where j[permutation[d]] = i[d] for every d, so
    result dimension d is input dimension `permutation[d]`. `permutation`
    is a permutation of 0..rank-1.

    ```mlir
    %y = weft.transpose %x [0, 2, 1, 3] : tensor<2x8x4x16xf32>
    ```
  }];
  let arguments = (ins Weft_Tensor:$input, DenseI64ArrayAttr:$permutation);
  let results = (outs Weft_Tensor:$result);
  let assemblyFormat = "$input $permutation attr-dict `:` type($input)";
}

def Weft_BroadcastOp : Weft_Op<"broadcast", [Pure, DeclareOpInterfaceMethods<Weft_GradientOpInterface>, DeclareOpInterfaceMethods<Weft_ShardingRuleOpInterface>]> {
  let summary = "expand a tensor to a larger shape";
  let description = [{
    Dimension d of `input` becomes dimension `dims[d]` of the result
    (`dims` strictly increasing); every other result dimension is new and
    repeats the input. An input dimension of size 1 may map to a larger
    result dimension and is repeated; otherwise the sizes agree.
    result[i] = input[k] with k_d = (input dim d is 1 ? 0 : i[dims[d]]).

    ```mlir
    %y = weft.broadcast %b dims [2] : tensor<64xf32> -> tensor<2x8x64xf32>
    ```
  }];
  let arguments = (ins Weft_Tensor:$input, DenseI64ArrayAttr:$dims);
  let results = (outs Weft_Tensor:$result);
  let assemblyFormat = [{
    $input `dims` $dims attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Weft_SliceOp : Weft_Op<"slice", [Pure, InferTypeOpAdaptor, DeclareOpInterfaceMethods<Weft_GradientOpInterface>, DeclareOpInterfaceMethods<Weft_ShardingRuleOpInterface>]> {
  let summary = "a contiguous box of a tensor";
  let description = [{
    result[i] = input[starts + i] for 0 <= i < limits - starts, per dimension.
    Requires 0 <= starts[d] <= limits[d] <= size[d].

    ```mlir
    %y = weft.slice %wpe [0, 0] to [8, 64] : tensor<32x64xf32>
    ```
  }];
  let arguments = (ins Weft_Tensor:$input, DenseI64ArrayAttr:$starts,
                       DenseI64ArrayAttr:$limits);
  let results = (outs Weft_Tensor:$result);
  let assemblyFormat = [{
    $input $starts `to` $limits attr-dict `:` type($input)
  }];
}

def Weft_ConcatOp : Weft_Op<"concat", [Pure, InferTypeOpAdaptor, DeclareOpInterfaceMethods<Weft_GradientOpInterface>, DeclareOpInterfaceMethods<Weft_ShardingRuleOpInterface>]> {
  let summary = "join tensors along one dimension";
  let description = [{
    Joins the `inputs`, in order, along dimension `dim`. All inputs have the
    same rank, element type and sizes in every other dimension.

    ```mlir
    %y = weft.concat %a, %b dim 0 : tensor<1x8xf32>, tensor<3x8xf32>
    ```
  }];
  let arguments = (ins Variadic<Weft_Tensor>:$inputs, I64Attr:$dim);
  let results = (outs Weft_Tensor:$result);
  let assemblyFormat = "$inputs `dim` $dim attr-dict `:` type($inputs)";
}

def Weft_CastOp : Weft_Op<"cast", [Pure, Elementwise, SameOperandsAndResultShape,
                                    DeclareOpInterfaceMethods<Weft_GradientOpInterface>, DeclareOpInterfaceMethods<Weft_ShardingRuleOpInterface>]> {
  let summary = "convert the element type";
  let description = [{
    Converts every element to the result element type: float to float rounds
    to nearest, ties to even (f8E4M3FN has no infinity: values beyond its
    range become NaN; f8E5M2 overflows to infinity); int to float rounds;
    float to int truncates toward zero.

    ```mlir
    %y = weft.cast %x : tensor<4xf32> to tensor<4xbf16>
    ```
  }];
  let arguments = (ins Weft_Tensor:$input);
  let results = (outs Weft_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `to` type($result)";
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

class Weft_ReduceOp<string mnemonic, string semantics>
    : Weft_Op<mnemonic, [Pure, InferTypeOpAdaptor, DeclareOpInterfaceMethods<Weft_GradientOpInterface>, DeclareOpInterfaceMethods<Weft_ShardingRuleOpInterface>]> {
  let summary = "reduce dimensions by " # semantics;
  let description = [{
    Reduces the listed dimensions (`dims`, strictly increasing, at least one)
    by }] # semantics # [{, accumulating in fp32 or wider; the result drops
    them and keeps the element type. Reducing every dimension gives a 0-d
    tensor.

    ```mlir
    %y = weft.}] # mnemonic # [{ %x dims [1] : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Weft_FloatTensor:$input, DenseI64ArrayAttr:$dims);
  let results = (outs Weft_FloatTensor:$result);
  let assemblyFormat = "$input `dims` $dims attr-dict `:` type($input)";
}

def Weft_ReduceSumOp : Weft_ReduceOp<"reduce_sum", "summation">;
def Weft_ReduceMaxOp : Weft_ReduceOp<"reduce_max", "maximum">;
def Weft_ReduceMeanOp : Weft_ReduceOp<"reduce_mean",
    "the arithmetic mean">;

//===----------------------------------------------------------------------===//
// Neural-network ops
//===----------------------------------------------------------------------===//

def Weft_EmbeddingOp : Weft_Op<"embedding", [Pure, InferTypeOpAdaptor, DeclareOpInterfaceMethods<Weft_GradientOpInterface>, DeclareOpInterfaceMethods<Weft_ShardingRuleOpInterface>]> {
  let summary = "token embedding lookup";
  let description = [{
    `table` is [V, D]; `ids` has any shape S of integers. The result is
    [S..., D] with result[s, :] = table[ids[s], :]. An id outside [0, V) is
    an error at run time (the evaluator reports it; no clamping).

    ```mlir
    %h = weft.embedding %wte, %ids : tensor<256x64xf32>, tensor<2x8xi32>
    ```
  }];
  let arguments = (ins Weft_FloatTensor:$table, Weft_IntTensor:$ids);
  let results = (outs Weft_FloatTensor:$result);
  let assemblyFormat = [{
    $table `,` $ids attr-dict `:` type($table) `,` type($ids)
  }];
}

def Weft_LayerNormOp : Weft_Op<"layer_norm",
    [Pure, AllTypesMatch<["input", "result"]>, DeclareOpInterfaceMethods<Weft_GradientOpInterface>,
     DeclareOpInterfaceMethods<Weft_DecomposableOpInterface>, DeclareOpInterfaceMethods<Weft_ShardingRuleOpInterface>]> {
  let summary = "layer normalisation over the last dimension";
  let description = [{
    For every row x of the last dimension (size D):
    y = (x - mean(x)) / sqrt(var(x) + epsilon) * weight + bias, with the
    biased variance var(x) = mean((x - mean(x))^2). `weight` and `bias`
    are [D]. Computed in fp32 or wider, rounded once.

    ```mlir
    %y = weft.layer_norm %x, %g, %b {epsilon = 1.0e-05 : f64}
        : tensor<2x8x64xf32>, tensor<64xf32>, tensor<64xf32>
    ```
  }];
  let arguments = (ins Weft_FloatTensor:$input, Weft_FloatTensor:$weight,
                       Weft_FloatTensor:$bias,
                       DefaultValuedAttr<Weft_FiniteF64Attr, "1.0e-5">:$epsilon);
  let results = (outs Weft_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight `,` $bias attr-dict `:` type($input) `,` type($weight)
    `,` type($bias)
  }];
  let hasVerifier = 1;
}

def Weft_RMSNormOp : Weft_Op<"rms_norm",
    [Pure, AllTypesMatch<["input", "result"]>, DeclareOpInterfaceMethods<Weft_GradientOpInterface>,
     DeclareOpInterfaceMethods<Weft_DecomposableOpInterface>, DeclareOpInterfaceMethods<Weft_ShardingRuleOpInterface>]> {
  let summary = "root-mean-square normalisation over the last dimension";
  let description = [{
    For every row x of the last dimension (size D):
    y = x / sqrt(mean(x^2) + epsilon) * weight, with `weight` [D], as Llama's
    RMSNorm. Computed in fp32 or wider, rounded once.

    ```mlir
    %y = weft.rms_norm %x, %g {epsilon = 1.0e-05 : f64}
        : tensor<2x8x64xf32>, tensor<64xf32>
    ```
  }];
  let arguments = (ins Weft_FloatTensor:$input, Weft_FloatTensor:$weight,
                       DefaultValuedAttr<Weft_FiniteF64Attr, "1.0e-6">:$epsilon);
  let results = (outs Weft_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight attr-dict `:` type($input) `,` type($weight)
  }];
  let hasVerifier = 1;
}

def Weft_SoftmaxOp : Weft_Op<"softmax",
    [Pure, SameOperandsAndResultType, DeclareOpInterfaceMethods<Weft_GradientOpInterface>,
     DeclareOpInterfaceMethods<Weft_DecomposableOpInterface>, DeclareOpInterfaceMethods<Weft_ShardingRuleOpInterface>]> {
  let summary = "softmax along one dimension";
  let description = [{
    y_i = e^(x_i - m) / sum_j e^(x_j - m) along dimension `dim`, where m is the
    maximum along it (so large inputs do not overflow). A slice whose
    elements are all -inf gives NaN, as in PyTorch.

    ```mlir
    %p = weft.softmax %s dim 3 : tensor<2x4x8x8xf32>
    ```
  }];
  let arguments = (ins Weft_FloatTensor:$input, I64Attr:$dim);
  let results = (outs Weft_FloatTensor:$result);
  let assemblyFormat = "$input `dim` $dim attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Weft_RopeOp : Weft_Op<"rope", [Pure, AllTypesMatch<["input", "result"]>, DeclareOpInterfaceMethods<Weft_GradientOpInterface>, DeclareOpInterfaceMethods<Weft_ShardingRuleOpInterface>]> {
  let summary = "rotary position embedding (Hugging Face rotate_half layout)";
  let description = [{
    `input` is [B, S, H, Dh] with Dh even. For position s (the index along
    dimension 1, plus `position_offset`) and i in [0, Dh/2):
    f_i = s * theta^(-2i/Dh), and with x1 = x[..., i], x2 = x[..., i + Dh/2]:
      y[..., i]        = x1 cos f_i - x2 sin f_i
      y[..., i + Dh/2] = x2 cos f_i + x1 sin f_i
    This is Llama's `apply_rotary_pos_emb` with `rotate_half`, so Hugging
    Face q/k projection weights are used unpermuted. With `inverse` the
    rotation is by -f_i, which is rope's gradient (rotations are orthogonal).

    With `positions` [S] (i32) the position of row s is positions[s] (plus
    `position_offset`) instead of its index: context parallelism computes
    on a load-balanced reordering of the sequence, whose positions the
    plan states as data (see weft-apply-plan).

    ```mlir
    %q = weft.rope %x {theta = 10000.0 : f64} : tensor<2x8x4x16xf32>
    %r = weft.rope %x positions %pos : tensor<2x8x4x16xf32>, tensor<8xi32>
    ```
  }];
  let arguments = (ins Weft_FloatTensor:$input,
                       Optional<Weft_TensorOf<[I32]>>:$positions,
                       DefaultValuedAttr<Weft_FiniteF64Attr, "10000.0">:$theta,
                       DefaultValuedAttr<I64Attr, "0">:$position_offset,
                       UnitAttr:$inverse);
  let results = (outs Weft_FloatTensor:$result);
  let assemblyFormat = [{
    $input (`positions` $positions^)? (`inverse` $inverse^)? attr-dict `:`
    type($result) (`,` type($positions)^)?
  }];
  let hasVerifier = 1;
}

def Weft_AttentionOp : Weft_Op<"attention",
    [Pure, InferTypeOpAdaptor, AttrSizedOperandSegments, DeclareOpInterfaceMethods<Weft_GradientOpInterface>, DeclareOpInterfaceMethods<Weft_ShardingRuleOpInterface>,
     DeclareOpInterfaceMethods<Weft_DecomposableOpInterface>]> {
  let summary = "multi-head scaled dot-product attention (GQA, causal)";
  let description = [{
    `query` is [B, S, Hq, D], `key` is [B, T, Hkv, D], `value` is
    [B, T, Hkv, Dv], Hq a multiple of Hkv; the result is [B, S, Hq, Dv].
    Query head h reads key/value head h / (Hq / Hkv) (grouped-query attention;
    Hkv = Hq is multi-head, Hkv = 1 multi-query). For each b, h, s:
      p = softmax_t(scale * <query[b,s,h], key[b,t,h']>)
      result[b,s,h] = sum_t p_t value[b,t,h']
    With `causal`, key t is visible to query s only if t <= s + (T - S)
    (queries are the last S positions of the sequence). Scores and the
    softmax are computed in fp32 or wider; the result is rounded once.
    The usual scale is 1/sqrt(D).

    The second result `lse` [B, Hq, S] (f32) is each row's log-sum-exp,
    log sum_t e^(scale <q, k_t>) over the visible keys, which a fused kernel
    gets for free (FlashAttention keeps it) and the backward reuses to
    recompute the probabilities without a second softmax pass.

    With `positions` (query positions [S] and key positions [T], i32, only
    with `causal`), key t is visible to query s iff kpos[t] <= qpos[s]:
    the mask of a sequence held in another order, or of one block of it
    (ring attention under context parallelism passes key blocks and their
    positions round the ring and merges the blocks' results by their
    log-sum-exp). A query that sees no key gets a zero row and lse -inf.

    With `dropout` (a rate in [0, 1)), the probabilities are dropped before
    they weigh the values, with the mask weft.dropout would draw on the
    [B, Hq, S, T] tensor of them with seed `seed`, `step` and `microbatch`
    (counter-based, row-major over the global tensor; each kept
    probability is scaled by 1 / (1 - rate) rounded to f32, where
    weft.dropout divides in double): FlashAttention's
    dropout, the mask regenerated in the backward, never stored. `lse` is
    the undropped one. `split` (set by partitioning, per dimension of
    `query`: batch, heads and, with positions, the sequence, not the head
    dimension) and `microbatches` place this op's block in the global
    tensor as weft.dropout's do. With positions, query s and key t are the
    sequence's qpos[s] and kpos[t]: a ring block under context
    parallelism draws its part of the whole sequence's mask.

    ```mlir
    %o, %lse = weft.attention %q, %k, %v scale = 0.25 causal
        : tensor<2x8x4x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32>
    %o3, %lse3 = weft.attention %q, %k, %v scale = 0.25 causal dropout = 0.1
        step %s : tensor<f32> {seed = 7 : i64}
        : tensor<2x8x4x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32>
    %o2, %lse2 = weft.attention %q, %k, %v positions(%qp, %kp) scale = 0.25
        causal : tensor<2x8x4x16xf32>, tensor<2x8x2x16xf32>,
        tensor<2x8x2x16xf32>, tensor<8xi32>, tensor<8xi32>
    ```
  }];
  let arguments = (ins Weft_FloatTensor:$query, Weft_FloatTensor:$key,
                       Weft_FloatTensor:$value,
                       Optional<Weft_TensorOf<[I32]>>:$query_positions,
                       Optional<Weft_TensorOf<[I32]>>:$key_positions,
                       Optional<Weft_ScalarF32>:$step,
                       Optional<Weft_ScalarF32>:$microbatch,
                       Weft_FiniteF64Attr:$scale, UnitAttr:$causal,
                       OptionalAttr<F64Attr>:$dropout,
                       OptionalAttr<I64Attr>:$seed,
                       OptionalAttr<ArrayAttr>:$split,
                       OptionalAttr<I64Attr>:$microbatches);
  let results = (outs Weft_FloatTensor:$result,
                      StaticShapeTensorOf<[F32]>:$lse);
  let assemblyFormat = [{
    $query `,` $key `,` $value (`positions` `(` $query_positions^ `,`
    $key_positions `)`)? `scale` `=` $scale (`causal` $causal^)?
    (`dropout` `=` $dropout^)? (`step` $step^ `:` type($step))?
    (`microbatch` $microbatch^ `:` type($microbatch))? attr-dict
    `:` type($query) `,` type($key) `,` type($value)
    (`,` type($query_positions)^ `,` type($key_positions))?
  }];
  let hasVerifier = 1;
}

def Weft_AttentionEntropyOp : Weft_Op<"attention_entropy",
    [Pure, InferTypeOpAdaptor, AttrSizedOperandSegments,
     DeclareOpInterfaceMethods<Weft_GradientOpInterface>,
     DeclareOpInterfaceMethods<Weft_ShardingRuleOpInterface>,
     DeclareOpInterfaceMethods<Weft_DecomposableOpInterface>]> {
  let summary = "the entropy of each attention row's probabilities";
  let description = [{
    `query` [B, S, Hq, D] and `key` [B, T, Hkv, D] as weft.attention's, and
    `lse` [B, Hq, S] (f32), the log-sum-exp weft.attention gives for them
    with the same `scale`, `causal` and `positions`. The result [B, Hq, S]
    (f32) is each row's entropy in nats, over its visible keys:
      p_t = e^(scale <q_s, k_t> - lse_s)
      result[b,h,s] = -sum_t p_t log p_t = lse_s - sum_t p_t scale <q_s, k_t>
    computed in f32 or wider whatever the operands' type; a query that sees
    no key (lse -inf) gets -inf. These are the probabilities before any
    dropout. It has no gradient: the health probes read it
    (passes/health), off the loss's path.

    A backend computes it in the pass of the weft.attention whose `lse` it
    reads (a running sum of p_t (x_t - m) beside FlashAttention's running
    sum of p_t), at the cost of a multiply-add per score; the lowering
    fuses the two when they read the same query, key and positions with the
    same scale and mask. Otherwise it is one more attention forward.

    ```mlir
    %h = weft.attention_entropy %q, %k, %lse scale = 0.25 causal
        : tensor<2x8x4x16xf32>, tensor<2x8x2x16xf32>, tensor<2x4x8xf32>
    ```
  }];
  let arguments = (ins Weft_FloatTensor:$query, Weft_FloatTensor:$key,
                       StaticShapeTensorOf<[F32]>:$lse,
                       Optional<Weft_TensorOf<[I32]>>:$query_positions,
                       Optional<Weft_TensorOf<[I32]>>:$key_positions,
                       Weft_FiniteF64Attr:$scale, UnitAttr:$causal);
  let results = (outs StaticShapeTensorOf<[F32]>:$result);
  let assemblyFormat = [{
    $query `,` $key `,` $lse (`positions` `(` $query_positions^ `,`
    $key_positions `)`)? `scale` `=` $scale (`causal` $causal^)? attr-dict
    `:` type($query) `,` type($key) `,` type($lse)
    (`,` type($query_positions)^ `,` type($key_positions))?
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The weft.attention whose pass can compute this entropy: the one
    /// whose lse this reads, with the same query, key, positions, scale
    /// and mask; null if there is none.
    AttentionOp getFusableAttention();
  }];
}

def Weft_DropoutOp : Weft_Op<"dropout", [Pure, AttrSizedOperandSegments,
    AllTypesMatch<["input", "result"]>,
    DeclareOpInterfaceMethods<Weft_GradientOpInterface>,
    DeclareOpInterfaceMethods<Weft_ShardingRuleOpInterface>]> {
  let summary = "seeded inverted dropout";
  let description = [{
    Zeroes each element with probability `rate` and scales the survivors by
    1 / (1 - rate); 0 <= rate < 1, and rate 0 is the identity. The mask is a
    pure function of `seed` and the element's row-major index i in the
    global tensor: the element is kept iff u(seed, i) >= rate, where u is
    the 24-bit uniform of `runtime/support/Random.h`:
      z = seed + (i + 1) * 0x9E3779B97F4A7C15 (mod 2^64), finalised with
      splitmix64; u = (z >> 40) * 2^-24.
    With `step` (the training step, a whole number as f32: the state
    parameter `dropout_step`), the seed is seed + step * 0xD1B54A32D192ED03
    (mod 2^64), so each step draws a fresh mask (CounterRng.h's
    weft_dropout_stream). So recomputation in the backward and every
    backend draw the same mask.

    The global tensor: with `split` (set by partitioning: per dimension,
    the axes of @mesh that cut it, major to minor), `input` is this rank's
    block of it. With `microbatch` k (a whole number as f32: the state
    parameter `dropout_microbatch`) of `microbatches` m (set by
    weft-accumulate-gradients), dimension 0 is the batch's and this is
    micro-batch k of the step's m: the k-th of m blocks of dimension 0,
    outside the ranks' split. With `positions` (i32, one per element of
    dimension 1: context parallelism's load-balanced order of the
    sequence), element s of dimension 1 is the sequence's positions[s]. So
    N ranks, or m micro-batches, draw the mask one rank with the whole
    batch would.

    ```mlir
    %y = weft.dropout %x step %s : tensor<f32> {rate = 0.1 : f64, seed = 7 : i64}
        : tensor<2x8xf32>
    %z = weft.dropout %x step %s : tensor<f32> microbatch %k : tensor<f32>
        {microbatches = 4 : i64, rate = 0.1 : f64, seed = 7 : i64,
         split = [["dp"], []]} : tensor<2x8xf32>
    ```
  }];
  let arguments = (ins Weft_FloatTensor:$input, Optional<Weft_ScalarF32>:$step,
                       Optional<Weft_ScalarF32>:$microbatch,
                       Optional<Weft_TensorOf<[I32]>>:$positions,
                       Weft_FiniteF64Attr:$rate, I64Attr:$seed,
                       OptionalAttr<ArrayAttr>:$split,
                       OptionalAttr<I64Attr>:$microbatches);
  let results = (outs Weft_FloatTensor:$result);
  let assemblyFormat = [{
    $input (`step` $step^ `:` type($step))?
    (`microbatch` $microbatch^ `:` type($microbatch))?
    (`positions` $positions^ `:` type($positions))? attr-dict `:`
    type($result)
  }];
  let hasVerifier = 1;
}

def Weft_Fp8AmaxOp : Weft_Op<"fp8_amax", [Pure,
    DeclareOpInterfaceMethods<Weft_GradientOpInterface>,
    DeclareOpInterfaceMethods<Weft_ShardingRuleOpInterface>]> {
  let summary = "the largest magnitude of each block of a tensor";
  let description = [{
    `input` is cut into blocks, one per element of the result: along
    dimension d, blocks of input[d] / result[d] elements (which must
    divide). result[b] = max |x| over block b; a NaN in a block makes its
    maximum +infinity (which a max all-reduce keeps, where it may drop a
    NaN), so the block quantizes to NaN. `input` may be bf16 or f16 (a
    narrow model's activation, read as stored: widening to f32 is exact);
    the maxima are f32. The scale an FP8 quantization derives from it is
    `weft.fp8_quantize`'s. A dimension kept whole by the result (size 1)
    may be split across ranks: the partial maxima combine by a max
    all-reduce. It has no gradient (a scale is not differentiated).

    ```mlir
    %amax = weft.fp8_amax %x : tensor<8x256xf32> -> tensor<8x2xf32>
    ```
  }];
  let arguments = (ins TensorOf<[F32, BF16, F16]>:$input);
  let results = (outs TensorOf<[F32]>:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Weft_Fp8QuantizeOp : Weft_Op<"fp8_quantize", [Pure,
    AllTypesMatch<["input", "result"]>,
    DeclareOpInterfaceMethods<Weft_GradientOpInterface>,
    DeclareOpInterfaceMethods<Weft_ShardingRuleOpInterface>]> {
  let summary = "FP8 quantize-dequantize with one scale per block";
  let description = [{
    The values an FP8 GEMM would read, in `input`'s type (f32, or a narrow
    model's bf16 or f16, so no widening copy is made). `input` is cut into
    blocks as `weft.fp8_amax` cuts it for `amax`'s shape (the whole tensor
    is one per-tensor scale, [M, 1] one scale per row of [M, K], [M, K/128]
    activation tiles, [K/128, N/128] weight blocks, [M, K/32] MXFP8
    blocks), and every element x of block b, with a = amax[b], becomes
      q = fp8(min(max(x * s, -F), F)),  result = q / s,
    where F is `format`'s largest finite value (448 for f8E4M3FN, 57344 for
    f8E5M2), fp8() rounds to nearest, ties to even (subnormals included),
    and all arithmetic is f32 (x widened exactly); a bf16 or f16 result is
    q / s rounded to nearest even, as a GEMM in that type reads it. The scale s is F / max(a, 1e-12) or, with
    `pow2_scales` (MXFP8's E8M0 scales), 2^(E - floor(log2 max(a, 1e-12)))
    with E = 8 (f8E4M3FN) or 15 (f8E5M2), its exponent clamped to
    [-127, 127]. A NaN or infinite a makes the block NaN. The gradient
    passes to `input` unchanged (straight-through), so the backward GEMMs
    read these same quantized values (unless `backward_block` says
    otherwise); `amax` gets none.

    With `backward_block` (one size per dimension, each dividing it), a
    backward GEMM that contracts the result along dimensions its blocks
    are one element thick on (a row-wise activation in the weight
    gradient, which sums over the tokens; a row-wise weight in the input
    gradient, which sums over its output features) reads `input` quantized
    again with blocks of `backward_block` instead, so that every FP8 GEMM
    has its scales constant along its contraction, as a GPU's scaled GEMM
    needs (DeepSeek-V3's 128 x 1 weight-gradient tiles; torchao's
    column-wise copies). Partitioning records, as
    `weft.backward_amax_axes` and `weft.amax_mesh`, the axes that split a
    dimension one such block spans; the re-quantization's maxima are
    max-reduced over them.

    With `group_rows` (an expert layer's rows [N, C]), the expert weight
    gradient, which sums each expert's rows, reads `input` quantized again
    by `weft.fp8_group_quantize` in tiles of that many of an expert's rows
    (0: all of them).

    ```mlir
    %amax = weft.fp8_amax %x : tensor<8x256xf32> -> tensor<8x2xf32>
    %q = weft.fp8_quantize %x, %amax {format = f8E4M3FN}
        : tensor<8x256xf32>, tensor<8x2xf32>
    ```
  }];
  let arguments = (ins TensorOf<[F32, BF16, F16]>:$input,
                       TensorOf<[F32]>:$amax, TypeAttr:$format,
                       UnitAttr:$pow2_scales,
                       OptionalAttr<DenseI64ArrayAttr>:$backward_block,
                       OptionalAttr<I64Attr>:$group_rows);
  let results = (outs TensorOf<[F32, BF16, F16]>:$result);
  let assemblyFormat = [{
    $input `,` $amax attr-dict `:` type($input) `,` type($amax)
  }];
  let hasVerifier = 1;
}

def Weft_Fp8QuantizeGradOp : Weft_Op<"fp8_quantize_grad", [Pure,
    AllTypesMatch<["input", "result"]>,
    DeclareOpInterfaceMethods<Weft_GradientOpInterface>,
    DeclareOpInterfaceMethods<Weft_ShardingRuleOpInterface>]> {
  let summary = "identity whose gradient is FP8 quantize-dequantized";
  let description = [{
    Yields `input` unchanged; its gradient is the result's gradient
    through `weft.fp8_amax` (blocks of `block`, one size per dimension,
    each dividing it) and `weft.fp8_quantize` with these attributes, in
    the gradient's type (f32, bf16 or f16, as `input`'s). Placed
    on an FP8 GEMM's output, it makes the backward GEMMs read an FP8 output
    gradient (f8E5M2 in Transformer Engine's hybrid format) without
    changing the forward. Partitioning records, as `weft.amax_axes` and
    `weft.amax_mesh`, the axes that split a dimension its blocks span; the
    gradient then max-reduces its block maxima over them.

    With `history` (delayed scaling: the largest maximum of earlier steps,
    one per block; 0 before the first), the gradient is quantized by it
    instead, the current maximum standing in while it is 0; the current
    maximum's `weft.fp8_amax` carries this op's `weft.amax_history` (the
    history parameter's name) for weft-fp8-record-amax.

    `backward_block` passes on to the gradient's `weft.fp8_quantize` (its
    re-quantization for the weight gradient's GEMM, which contracts it
    along the tokens), localised by partitioning as `block` is, and so
    does `group_rows` (an expert layer's).

    ```mlir
    %y1 = weft.fp8_quantize_grad %y {format = f8E5M2, block = array<i64: 8, 256>}
        : tensor<8x256xf32>
    ```
  }];
  let arguments = (ins TensorOf<[F32, BF16, F16]>:$input,
                       Optional<TensorOf<[F32]>>:$history, TypeAttr:$format,
                       DenseI64ArrayAttr:$block, UnitAttr:$pow2_scales,
                       OptionalAttr<DenseI64ArrayAttr>:$backward_block,
                       OptionalAttr<I64Attr>:$group_rows);
  let results = (outs TensorOf<[F32, BF16, F16]>:$result);
  let assemblyFormat = [{
    $input (`history` $history^ `:` type($history))? attr-dict `:`
    type($result)
  }];
  let hasVerifier = 1;
}

def Weft_Fp8GroupQuantizeOp : Weft_Op<"fp8_group_quantize", [Pure,
    AllTypesMatch<["input", "result"]>]> {
  let summary = "FP8 quantize-dequantize in tiles of each group's rows";
  let description = [{
    What an expert layer's weight gradient reads of `input` [N, C] as an
    FP8 GEMM that sums each expert's rows: the rows are consecutive groups
    of `sizes` [G] (i32) rows, group g of expert g mod `experts`, as
    `weft.grouped_matmul`'s. An expert's rows (its groups', in order) are
    cut into tiles of `rows` rows from its first (0: all its rows; a
    multiple of 32 otherwise, the GEMM's blocks), and each tile's column
    is a block, quantized as `weft.fp8_quantize` quantizes a block whose
    maximum is its largest magnitude (`format`, `pow2_scales` as there).
    Its scales then change only between blocks of 32 of an expert's rows,
    so the GEMM scales each block's partial sums (torchao's per-expert
    column-wise scaling for `rows` 0, DeepSeek-V3's 128 x 1 tiles for 128,
    MXFP8's 32-blocks for 32). Tiles follow experts, not groups: an
    expert-parallel receive buffer (a group per source rank and expert)
    is quantized as one rank quantizes the same rows. Rows after the
    groups are zero. Sizes summing past N, or a negative size, are an
    error at run time. The weight gradient of `weft.grouped_matmul` makes
    it (from the operands' `group_rows`); it has no gradient.

    ```mlir
    %q = weft.fp8_group_quantize %dy, %counts
        {experts = 2 : i64, format = f8E4M3FN, rows = 128 : i64}
        : tensor<256x64xf32>, tensor<4xi32>
    ```
  }];
  let arguments = (ins TensorOf<[F32, BF16, F16]>:$input, Weft_IntTensor:$sizes,
                       TypeAttr:$format, I64Attr:$rows, I64Attr:$experts,
                       UnitAttr:$pow2_scales);
  let results = (outs TensorOf<[F32, BF16, F16]>:$result);
  let assemblyFormat = [{
    $input `,` $sizes attr-dict `:` type($input) `,` type($sizes)
  }];
  let hasVerifier = 1;
}

def Weft_CrossEntropyOp : Weft_Op<"cross_entropy",
    [Pure, DeclareOpInterfaceMethods<Weft_GradientOpInterface>, DeclareOpInterfaceMethods<Weft_ShardingRuleOpInterface>,
     DeclareOpInterfaceMethods<Weft_DecomposableOpInterface>]> {
  let summary = "mean token cross-entropy with an ignore index";
  let description = [{
    `logits` is [N..., V]; `labels` is [N...] of integers. For every position
    n whose label is not `ignore_index`:
      loss_n = logsumexp(logits[n, :]) - logits[n, labels[n]].
    The result is the 0-d f32 mean of loss_n over those positions (0 when
    every label is ignored). A label outside [0, V) other than
    `ignore_index` is an error at run time.

    ```mlir
    %l = weft.cross_entropy %logits, %labels {ignore_index = -100 : i64}
        : tensor<2x8x256xf32>, tensor<2x8xi32>
    ```
  }];
  let arguments = (ins Weft_FloatTensor:$logits, Weft_IntTensor:$labels,
                       DefaultValuedAttr<I64Attr, "-100">:$ignore_index);
  let results = (outs Weft_ScalarF32:$result);
  let assemblyFormat = [{
    $logits `,` $labels attr-dict `:` type($logits) `,` type($labels)
  }];
  let hasVerifier = 1;
}

def Weft_OneHotOp : Weft_Op<"one_hot", [Pure,
    DeclareOpInterfaceMethods<Weft_ShardingRuleOpInterface>]> {
  let summary = "one-hot encode integers";
  let description = [{
    `indices` is [N...]; the result is [N..., C] with result[n, c] = 1 if
    indices[n] == c else 0. An index outside [0, C) gives an all-zero row
    (which is how cross-entropy's decomposition drops ignored labels).

    ```mlir
    %o = weft.one_hot %labels : tensor<2x8xi32> -> tensor<2x8x256xf32>
    ```
  }];
  let arguments = (ins Weft_IntTensor:$indices);
  let results = (outs Weft_FloatTensor:$result);
  let assemblyFormat = "$indices attr-dict `:` type($indices) `->` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Mixture of experts
//===----------------------------------------------------------------------===//

def Weft_TopKOp : Weft_Op<"topk", [Pure, InferTypeOpAdaptor, DeclareOpInterfaceMethods<Weft_GradientOpInterface>]> {
  let summary = "k largest values along the last dimension";
  let description = [{
    For each row of the last dimension returns its k largest values in
    descending order and their i32 positions; among equal values the lower
    position comes first. 1 <= k <= size of the last dimension.

    ```mlir
    %v, %i = weft.topk %x k = 2 : tensor<16x8xf32>
    ```
  }];
  let arguments = (ins Weft_FloatTensor:$input, I64Attr:$k);
  let results = (outs Weft_FloatTensor:$values, Weft_IntTensor:$indices);
  let assemblyFormat = "$input `k` `=` $k attr-dict `:` type($input)";
}

def Weft_TopKGatingOp : Weft_Op<"topk_gating",
    [Pure, InferTypeOpAdaptor, DeclareOpInterfaceMethods<Weft_GradientOpInterface>,
     DeclareOpInterfaceMethods<Weft_ShardingRuleOpInterface>,
     DeclareOpInterfaceMethods<Weft_DecomposableOpInterface>]> {
  let summary = "top-k expert routing (Mixtral / GShard)";
  let description = [{
    `logits` is [T, E] router scores. p = softmax over the E experts; the
    result is the top-k of p per token (`weights` [T, k], descending, ties to
    the lower expert) and their expert ids (`indices` [T, k], i32). With
    `normalize` the k weights are divided by their sum, as Mixtral does.

    ```mlir
    %w, %e = weft.topk_gating %r k = 2 normalize : tensor<16x8xf32>
    ```
  }];
  let arguments = (ins Weft_FloatTensor:$logits, I64Attr:$k,
                       UnitAttr:$normalize);
  let results = (outs Weft_FloatTensor:$weights, Weft_IntTensor:$indices);
  let assemblyFormat = [{
    $logits `k` `=` $k (`normalize` $normalize^)? attr-dict `:` type($logits)
  }];
}

def Weft_ExpertRouteOp : Weft_Op<"expert_route",
    [Pure, InferTypeOpAdaptor]> {
  let summary = "assign routing pairs to rows of a packed expert buffer";
  let description = [{
    `indices` is [T, k], each token's experts (from `weft.topk_gating`). The
    pairs are visited in GShard's order, every token's first choice before
    any second choice: j = 0..k-1, then t = 0..T-1. Pair (t, j) is kept
    while its expert e = indices[t, j] has kept fewer than `capacity` pairs
    (no `capacity`: every pair is kept, MegaBlocks' dropless routing). The
    results describe a packed buffer holding each expert's kept pairs as
    contiguous rows, experts in order:
    - `counts` [E] (i32): the pairs each expert kept;
    - `positions` [T, k] (i32): the row of pair (t, j), the sum of the
      counts of the experts before e plus the pair's rank among e's kept
      pairs, or -1 for a dropped pair.
    An expert id outside [0, E) is an error at run time.

    Partitioned with the tokens split over mesh axes (`weft.token_axes`,
    set by weft-partition), `indices` is this rank's block of the group's
    tokens, in group order: the kept decisions are those of the whole
    group's routing (the op exchanges its per-choice counts over the
    group), and `counts` and `positions` describe this rank's own buffer.
    So a capacity drops exactly the pairs one rank would drop.

    ```mlir
    %pos, %counts = weft.expert_route %e experts = 8 capacity = 6
        : tensor<16x2xi32>
    ```
  }];
  let arguments = (ins Weft_IntTensor:$indices, I64Attr:$num_experts,
                       OptionalAttr<I64Attr>:$capacity);
  let results = (outs Weft_IntTensor:$positions, Weft_IntTensor:$counts);
  let assemblyFormat = [{
    $indices `experts` `=` $num_experts (`capacity` `=` $capacity^)? attr-dict
    `:` type($indices)
  }];
}

def Weft_ExpertDispatchOp : Weft_Op<"expert_dispatch",
    [Pure, InferTypeOpAdaptor, DeclareOpInterfaceMethods<Weft_GradientOpInterface>]> {
  let summary = "copy tokens to their routing pairs' rows";
  let description = [{
    `input` is [T, D] tokens, `positions` [T, k] the rows
    `weft.expert_route` gave their pairs. The result is [N, D] with N =
    `rows`: row positions[t, j] holds token t; rows no pair names, and the
    pairs of dropped (-1) positions, are zero. A position outside [-1, N)
    is an error at run time, and so is two pairs on one row (checked by the
    CPU runtime and the evaluator; the GPU's kernel assumes positions from
    `weft.expert_route`, which never repeat a row).

    ```mlir
    %d = weft.expert_dispatch %x, %pos rows = 32
        : tensor<16x64xf32>, tensor<16x2xi32>
    ```
  }];
  let arguments = (ins Weft_FloatTensor:$input, Weft_IntTensor:$positions,
                       I64Attr:$rows);
  let results = (outs Weft_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $positions `rows` `=` $rows attr-dict `:` type($input) `,`
    type($positions)
  }];
}

def Weft_ExpertCombineOp : Weft_Op<"expert_combine",
    [Pure, InferTypeOpAdaptor, DeclareOpInterfaceMethods<Weft_GradientOpInterface>]> {
  let summary = "weighted sum of each token's expert rows";
  let description = [{
    `expert_outputs` is [N, D] rows, `weights` and `positions` [T, k]. The
    result is [T, D]:
      result[t] = sum over j with positions[t, j] >= 0 of
                  weights[t, j] * expert_outputs[positions[t, j]]
    so a dropped pair contributes zero.

    ```mlir
    %y = weft.expert_combine %eo, %w, %pos
        : tensor<32x64xf32>, tensor<16x2xf32>, tensor<16x2xi32>
    ```
  }];
  let arguments = (ins Weft_FloatTensor:$expert_outputs,
                       Weft_FloatTensor:$weights, Weft_IntTensor:$positions);
  let results = (outs Weft_FloatTensor:$result);
  let assemblyFormat = [{
    $expert_outputs `,` $weights `,` $positions attr-dict `:`
    type($expert_outputs) `,` type($weights) `,` type($positions)
  }];
}

def Weft_ExpertGatherOp : Weft_Op<"expert_gather",
    [Pure, InferTypeOpAdaptor, DeclareOpInterfaceMethods<Weft_GradientOpInterface>]> {
  let summary = "read each routing pair's row";
  let description = [{
    `expert_outputs` is [N, D], `positions` [T, k]. The result is [T, k, D]:
    pair (t, j) reads row positions[t, j]; a dropped pair reads zeros. The
    adjoint of `weft.expert_scatter`; it appears in MoE gradients.

    ```mlir
    %g = weft.expert_gather %eo, %pos : tensor<32x64xf32>, tensor<16x2xi32>
    ```
  }];
  let arguments = (ins Weft_FloatTensor:$expert_outputs,
                       Weft_IntTensor:$positions);
  let results = (outs Weft_FloatTensor:$result);
  let assemblyFormat = [{
    $expert_outputs `,` $positions attr-dict `:` type($expert_outputs) `,`
    type($positions)
  }];
}

def Weft_ExpertScatterOp : Weft_Op<"expert_scatter",
    [Pure, InferTypeOpAdaptor, DeclareOpInterfaceMethods<Weft_GradientOpInterface>]> {
  let summary = "write each routing pair to its row";
  let description = [{
    `pairs` is [T, k, D], `positions` [T, k]. The result is [N, D] with N =
    `rows`: row positions[t, j] holds pair (t, j); other rows are zero and
    dropped pairs are lost. Dispatch is the scatter of each token repeated
    k times; scatter is the adjoint of `weft.expert_gather`.

    ```mlir
    %s = weft.expert_scatter %p, %pos rows = 32
        : tensor<16x2x64xf32>, tensor<16x2xi32>
    ```
  }];
  let arguments = (ins Weft_FloatTensor:$pairs, Weft_IntTensor:$positions,
                       I64Attr:$rows);
  let results = (outs Weft_FloatTensor:$result);
  let assemblyFormat = [{
    $pairs `,` $positions `rows` `=` $rows attr-dict `:` type($pairs) `,`
    type($positions)
  }];
}

def Weft_GroupedMatmulOp : Weft_Op<"grouped_matmul",
    [Pure, InferTypeOpAdaptor, DeclareOpInterfaceMethods<Weft_GradientOpInterface>]> {
  let summary = "one matmul per group of consecutive rows (grouped GEMM)";
  let description = [{
    `input` is [N, K] rows in G consecutive groups of `sizes` [G] (i32)
    rows each; `weight` is [E, K, M] (with `transpose_rhs`, [E, M, K]) and
    E divides G. Group g is multiplied by weight[g mod E], so the groups of
    an expert-parallel receive buffer (source rank major, local expert
    minor) need no reordering. The result is [N, M]; rows after the last
    group are zero, and only the groups' rows are computed, never a padded
    capacity (MegaBlocks' dropless grouped GEMM). Sizes summing past N, or
    a negative size, are an error at run time.

    ```mlir
    %h = weft.grouped_matmul %x, %w1, %counts transpose_rhs
        : tensor<32x64xf32>, tensor<4x96x64xf32>, tensor<4xi32>
    ```
  }];
  let arguments = (ins Weft_FloatTensor:$input, Weft_FloatTensor:$weight,
                       Weft_IntTensor:$sizes, UnitAttr:$transpose_rhs);
  let results = (outs Weft_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight `,` $sizes (`transpose_rhs` $transpose_rhs^)? attr-dict
    `:` type($input) `,` type($weight) `,` type($sizes)
  }];
}

def Weft_GroupedMatmulWgradOp : Weft_Op<"grouped_matmul_wgrad",
    [Pure, InferTypeOpAdaptor]> {
  let summary = "per-expert sum of the groups' lhs^T rhs (grouped GEMM weight gradient)";
  let description = [{
    `lhs` [N, P] and `rhs` [N, Q] hold the same G groups of `sizes` rows.
    The result is [E, P, Q] with E = `experts`:
      result[e] = sum over groups g with g mod E = e of lhs_g^T rhs_g
    (zero for an expert whose groups are empty). The weight gradient of
    `weft.grouped_matmul`.

    ```mlir
    %dw = weft.grouped_matmul_wgrad %dy, %x, %counts experts = 4
        : tensor<32x96xf32>, tensor<32x64xf32>, tensor<4xi32>
    ```
  }];
  let arguments = (ins Weft_FloatTensor:$lhs, Weft_FloatTensor:$rhs,
                       Weft_IntTensor:$sizes, I64Attr:$experts);
  let results = (outs Weft_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs `,` $sizes `experts` `=` $experts attr-dict `:` type($lhs)
    `,` type($rhs) `,` type($sizes)
  }];
}

//===----------------------------------------------------------------------===//
// Gradient ops: appear only after autodiff
//===----------------------------------------------------------------------===//

def Weft_EmbeddingGradOp : Weft_Op<"embedding_grad", [Pure]> {
  let summary = "scatter-add of output gradients into the embedding table";
  let description = [{
    `ids` has shape S, `grad` is [S..., D]; the result is the table gradient
    [V, D]: result[v] = sum of grad[s] over every s with ids[s] == v. The
    vocabulary size V comes from the result type. Created by autodiff for
    `weft.embedding`.

    ```mlir
    %dw = weft.embedding_grad %ids, %dy : tensor<2x8xi32>, tensor<2x8x64xf32> -> tensor<256x64xf32>
    ```
  }];
  let arguments = (ins Weft_IntTensor:$ids, Weft_FloatTensor:$grad);
  let results = (outs Weft_FloatTensor:$result);
  let assemblyFormat = [{
    $ids `,` $grad attr-dict `:` type($ids) `,` type($grad) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Weft_LayerNormGradOp : Weft_Op<"layer_norm_grad",
    [Pure, InferTypeOpAdaptor, AllTypesMatch<["input", "grad"]>]> {
  let summary = "gradient of weft.layer_norm";
  let description = [{
    With xh = (x - mean) / sqrt(var + epsilon) per row of the last dimension
    (size D) and g = `grad` * `weight`:
      input_grad  = (g - mean(g) - xh mean(g xh)) / sqrt(var + epsilon)
      weight_grad = sum over rows of grad * xh
      bias_grad   = sum over rows of grad
    computed in fp32 or wider. Created by autodiff for `weft.layer_norm`.

    ```mlir
    %dx, %dw, %db = weft.layer_norm_grad %x, %w, %dy {epsilon = 1.0e-05 : f64}
        : tensor<2x8x64xf32>, tensor<64xf32>
    ```
  }];
  let arguments = (ins Weft_FloatTensor:$input, Weft_FloatTensor:$weight,
                       Weft_FloatTensor:$grad,
                       DefaultValuedAttr<Weft_FiniteF64Attr, "1.0e-5">:$epsilon);
  let results = (outs Weft_FloatTensor:$input_grad,
                      Weft_FloatTensor:$weight_grad,
                      Weft_FloatTensor:$bias_grad);
  let assemblyFormat = [{
    $input `,` $weight `,` $grad attr-dict `:` type($input) `,` type($weight)
  }];
}

def Weft_RMSNormGradOp : Weft_Op<"rms_norm_grad",
    [Pure, InferTypeOpAdaptor, AllTypesMatch<["input", "grad"]>]> {
  let summary = "gradient of weft.rms_norm";
  let description = [{
    With r = 1 / sqrt(mean(x^2) + epsilon) per row (size D), xh = x r and
    g = `grad` * `weight`:
      input_grad  = r (g - xh mean(g xh))
      weight_grad = sum over rows of grad * xh
    computed in fp32 or wider. Created by autodiff for `weft.rms_norm`.

    ```mlir
    %dx, %dw = weft.rms_norm_grad %x, %w, %dy {epsilon = 1.0e-05 : f64}
        : tensor<2x8x64xf32>, tensor<64xf32>
    ```
  }];
  let arguments = (ins Weft_FloatTensor:$input, Weft_FloatTensor:$weight,
                       Weft_FloatTensor:$grad,
                       DefaultValuedAttr<Weft_FiniteF64Attr, "1.0e-6">:$epsilon);
  let results = (outs Weft_FloatTensor:$input_grad,
                      Weft_FloatTensor:$weight_grad);
  let assemblyFormat = [{
    $input `,` $weight `,` $grad attr-dict `:` type($input) `,` type($weight)
  }];
}

def Weft_AttentionGradOp : Weft_Op<"attention_grad",
    [Pure, InferTypeOpAdaptor, AttrSizedOperandSegments,
     AllTypesMatch<["result", "grad"]>]> {
  let summary = "gradient of weft.attention from its saved log-sum-exp";
  let description = [{
    Operands are the forward's `query`, `key`, `value`, `result`, `lse` and
    the result's gradient `grad`; attributes are the forward's. As in
    FlashAttention's backward, probabilities are recomputed as
    p_st = e^(scale <q_s, k_t> - lse_s) (zero for masked keys), then with
    D_s = <grad_s, result_s>:
      value_grad[t]  = sum_s p_st grad_s
      dp_st          = <grad_s, value_t>,  ds_st = p_st (dp_st - D_s)
      query_grad[s]  = scale sum_t ds_st key_t
      key_grad[t]    = scale sum_s ds_st query_s
    where grouped-query heads sum their key/value gradients into the shared
    head. Created by autodiff for `weft.attention`, with the forward's
    `positions` when it has them.

    `lse_grad` [B, Hq, S], when the forward's log-sum-exp is itself used
    (ring attention merges blocks by it), adds its gradient:
    d lse_s / d score_st = p_st, so ds_st = p_st (dp_st - D_s + lse_grad_s).

    With the forward's `dropout` (and its seed, step, micro-batch and
    split), m_st the mask's factor (0 or 1 / (1 - rate)):
    value_grad[t] = sum_s p_st m_st grad_s and ds_st = p_st (dp_st m_st -
    D_s), D_s still <grad_s, result_s>.

    ```mlir
    %dq, %dk, %dv = weft.attention_grad %q, %k, %v, %o, %lse, %do scale = 0.25 causal
        : tensor<2x8x4x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32>,
          tensor<2x8x4x16xf32>, tensor<2x4x8xf32>
    ```
  }];
  let arguments = (ins Weft_FloatTensor:$query, Weft_FloatTensor:$key,
                       Weft_FloatTensor:$value, Weft_FloatTensor:$result,
                       StaticShapeTensorOf<[F32]>:$lse, Weft_FloatTensor:$grad,
                       Optional<Weft_TensorOf<[I32]>>:$query_positions,
                       Optional<Weft_TensorOf<[I32]>>:$key_positions,
                       Optional<StaticShapeTensorOf<[F32]>>:$lse_grad,
                       Optional<Weft_ScalarF32>:$step,
                       Optional<Weft_ScalarF32>:$microbatch,
                       Weft_FiniteF64Attr:$scale, UnitAttr:$causal,
                       OptionalAttr<F64Attr>:$dropout,
                       OptionalAttr<I64Attr>:$seed,
                       OptionalAttr<ArrayAttr>:$split,
                       OptionalAttr<I64Attr>:$microbatches);
  let results = (outs Weft_FloatTensor:$query_grad, Weft_FloatTensor:$key_grad,
                      Weft_FloatTensor:$value_grad);
  let assemblyFormat = [{
    $query `,` $key `,` $value `,` $result `,` $lse `,` $grad
    (`positions` `(` $query_positions^ `,` $key_positions `)`)?
    (`lse_grad` `(` $lse_grad^ `:` type($lse_grad) `)`)? `scale` `=` $scale
    (`causal` $causal^)? (`dropout` `=` $dropout^)?
    (`step` $step^ `:` type($step))?
    (`microbatch` $microbatch^ `:` type($microbatch))?
    attr-dict `:` type($query) `,` type($key) `,`
    type($value) `,` type($result) `,` type($lse)
    (`,` type($query_positions)^ `,` type($key_positions))?
  }];
  let hasVerifier = 1;
}

def Weft_CrossEntropyGradOp : Weft_Op<"cross_entropy_grad",
    [Pure, InferTypeOpAdaptor]> {
  let summary = "gradient of weft.cross_entropy with respect to the logits";
  let description = [{
    For each position n whose label is not `ignore_index`:
      result[n, v] = (softmax(logits[n])_v - [v == labels[n]]) * grad / N
    where N is the number of such positions and `grad` is the 0-d gradient of
    the loss; ignored positions get zero. The fused softmax + cross-entropy
    backward. Created by autodiff for `weft.cross_entropy`.

    ```mlir
    %dl = weft.cross_entropy_grad %logits, %labels, %g {ignore_index = -100 : i64}
        : tensor<2x8x256xf32>, tensor<2x8xi32>
    ```
  }];
  let arguments = (ins Weft_FloatTensor:$logits, Weft_IntTensor:$labels,
                       Weft_ScalarF32:$grad,
                       DefaultValuedAttr<I64Attr, "-100">:$ignore_index);
  let results = (outs Weft_FloatTensor:$result);
  let assemblyFormat = [{
    $logits `,` $labels `,` $grad attr-dict `:` type($logits) `,` type($labels)
  }];
}

//===----------------------------------------------------------------------===//
// Fusion
//===----------------------------------------------------------------------===//

def Weft_FusedOp : Weft_Op<"fused",
    [IsolatedFromAbove, SingleBlock, RecursiveMemoryEffects]> {
  let summary = "a group of elementwise ops that runs as one kernel";
  let description = [{
    Created by `weft-fusion-group`. The body's block arguments are the
    `inputs`; its ops are elementwise weft ops over tensors of one shape,
    splat constants, broadcasts of 0-d inputs (one value every element
    reads), and norms over the last dimension (`weft.layer_norm`,
    `weft.rms_norm`, whose [D] weights are inputs); `weft.yield` names the
    values the group makes visible outside, which are the results. Semantics are those of the body
    run once: each op still rounds its result to its element type, so fusing
    never changes a value. Codegen turns the body into one loop whose
    iteration computes every op for one element, or, when the group holds a
    norm, for one row of the last dimension (residual + norm in one pass).

    ```mlir
    %r = weft.fused (%x, %b) : (tensor<8x64xf32>, tensor<8x64xf32>) -> tensor<8x64xf32> {
    ^bb0(%a: tensor<8x64xf32>, %c: tensor<8x64xf32>):
      %s = weft.add %a, %c : tensor<8x64xf32>
      %g = weft.gelu %s : tensor<8x64xf32>
      weft.yield %g : tensor<8x64xf32>
    }
    ```
  }];
  let arguments = (ins Variadic<Weft_Tensor>:$inputs);
  let results = (outs Variadic<Weft_Tensor>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    `(` $inputs `)` attr-dict `:` functional-type($inputs, $results) $body
  }];
  let hasVerifier = 1;
}

def Weft_YieldOp : Weft_Op<"yield",
    [Pure, Terminator, HasParent<"FusedOp">, ReturnLike]> {
  let summary = "the values a fused group returns";
  let arguments = (ins Variadic<Weft_Tensor>:$values);
  let assemblyFormat = "($values^ `:` type($values))? attr-dict";
}

#endif // WEFT_OPS_TD

