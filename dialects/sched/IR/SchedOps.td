//===- SchedOps.td - sched ops -----------------------------*- tablegen -*-===//
//
// Module-level declarations (mesh, parameters, constants, kernels, programs,
// schedules), buffer definitions, and the instructions a program runs. Each
// description states what the runtime must do, exactly; nothing is left for
// it to choose.
//
//===----------------------------------------------------------------------===//

#ifndef SCHED_OPS_TD
#define SCHED_OPS_TD

include "dialects/sched/IR/SchedDialect.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/IR/OpAsmInterface.td"
include "mlir/IR/RegionKindInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===----------------------------------------------------------------------===//
// Instructions
//===----------------------------------------------------------------------===//

def Sched_InstructionOpInterface : OpInterface<"InstructionOpInterface"> {
  let cppNamespace = "::weft::sched";
  let description = [{
    An op the runtime executes: it has a position in its program (its
    index among the program's instructions, which live ranges refer to), a
    stream, and reads and writes buffers as its operands' memory effects
    (MemRead / MemWrite) say.
  }];
  let methods = [
    InterfaceMethod<"The stream the instruction is queued on.",
                    "::llvm::StringRef", "getStreamName", (ins), [{}],
                    [{ return $_op.getStream(); }]>,
  ];
}

def Sched_ScratchOpInterface : OpInterface<"ScratchOpInterface"> {
  let cppNamespace = "::weft::sched";
  let description = [{
    An instruction that is several kernels on a GPU and keeps what passes
    between them in an optional `scratch` operand, its last: an f32 buffer
    of at least the bytes dialects/sched/IR/ScratchLayout.h states for its
    shapes, read and written by the instruction, undefined before and
    after it. The lowering allocates it for the cuda target (so the memory
    plan places it like any buffer) and passes none for the CPU, whose
    kernels need none and ignore one; the runtime never sizes scratch.
  }];
  let methods = [
    InterfaceMethod<"The scratch buffer, or null.", "::mlir::Value",
                    "getScratch", (ins), [{ return $_op.getScratch(); }]>,
    InterfaceMethod<"Makes `scratch` (null: none) the scratch operand.",
                    "void", "setScratch", (ins "::mlir::Value":$scratch),
                    [{ $_op.getScratchMutable().assign(scratch); }]>,
    InterfaceMethod<[{
      The bytes its scratch needs for its operands' shapes, as
      ScratchLayout.h states them (0: it takes none; nullopt: the count
      overflows int64). The verifier checks a scratch against it and the
      lowering allocates by it.
    }], "std::optional<int64_t>", "getScratchBytes">,
  ];
}

// Every instruction runs on a stream of its program; unnamed, "compute".
// The bundle writer always writes the name: the runtime has no default.
def Sched_Stream : DefaultValuedStrAttr<StrAttr, "compute">;

class Sched_Instr<string mnemonic, list<Trait> traits = []>
    : Sched_Op<mnemonic, traits # [Sched_InstructionOpInterface,
                                   HasParent<"::weft::sched::ProgramOp">]>;

def Sched_In : Arg<Sched_Buffer, "a buffer the instruction reads", [MemRead]>;
def Sched_Out : Arg<Sched_Buffer, "a buffer the instruction writes",
                    [MemWrite]>;
def Sched_InOut : Arg<Sched_Buffer, "a buffer read and written",
                      [MemRead, MemWrite]>;
def Sched_Ins : Arg<Variadic<Sched_Buffer>, "buffers read", [MemRead]>;
def Sched_Outs : Arg<Variadic<Sched_Buffer>, "buffers written", [MemWrite]>;
def Sched_OptionalIn : Arg<Optional<Sched_Buffer>, "a buffer read", [MemRead]>;
def Sched_OptionalOut : Arg<Optional<Sched_Buffer>, "a buffer written",
                            [MemWrite]>;
def Sched_OptionalInOut : Arg<Optional<Sched_Buffer>,
                              "a buffer read and written",
                              [MemRead, MemWrite]>;

//===----------------------------------------------------------------------===//
// Module-level declarations
//===----------------------------------------------------------------------===//

def Sched_MeshOp : Sched_Op<"mesh", [Symbol, HasParent<"::mlir::ModuleOp">]> {
  let summary = "the grid of ranks collectives and send/recv address";
  let description = [{
    The device mesh of the job: axes with names and sizes, the first axis
    major (rank = row-major linear index of the coordinate). A module has
    at most one; collectives name groups by its axes and send/recv name
    peers by coordinate offsets along one axis.

    ```mlir
    sched.mesh @mesh axes ["dp", "tp"] sizes [2, 4]
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

def Sched_ParamOp : Sched_Op<"param", [Symbol,
                                       HasParent<"::mlir::ModuleOp">]> {
  let summary = "a tensor the run keeps between programs";
  let description = [{
    A parameter or optimizer state tensor (`state`) of this rank: its local
    type, how a fresh run fills it (`zeros`, `ones`; `normal` N(0, scale^2)
    and `uniform` U(-scale, scale) from the counter-based generator keyed by
    the name, as `weft.param`), and, for a sharded parameter, `split`: per
    dimension the mesh axes it is divided over (the global tensor is this
    rank's block of it; checkpoints gather by it). `pipeline_rank`: only
    the ranks whose `pp` coordinate it is hold the tensor (a pipeline
    stage's parameters and state); checkpoints take it from them.
    `checkpoint_rows`: checkpoints hold only the first rows of dimension 0
    of the global tensor, the rest is padding (a vocabulary padded so tp
    divides it): saved without it, loaded with zeros in it.
    `checkpoint_shape`: checkpoints hold the global tensor in this shape,
    the same elements in the same order (GPT-2's c_attn [d, 3d] held as
    [d, 3, d] for tp to split by heads). `checkpoint_stack`: checkpoints
    hold the global tensor [N, ...] as N tensors [...], slice j named by
    the pattern with its `*` replaced by j (Mixtral's stacked experts).
    `transient`: a state tensor no step reads as an earlier step left it
    (a gradient accumulator or micro-batch counter the step zeroes, a
    ZeRO-3 parameter gathered afresh each step): checkpoints skip it and a
    resumed run starts it from its initializer.
    `probe`: a transient state tensor holding the health metric of that
    name (weft-probes), which the runtime logs after every step and then
    zeroes; `probe_fold` says how the step's micro-batches combined into
    it: `mean` (summed: divided by the micro-batches), `rms` (the root of
    that mean), `max` (the largest element), `max_over_mean` (the largest
    element over the elements' mean) or `last` (as it is).
    Programs read
    it with `sched.get` and write its next value with `sched.assign`.

    ```mlir
    sched.param @"wte.weight" init(normal, 2.0e-02) : !sched.buffer<256x64xf32>
    sched.param @"wte.weight.exp_avg" init(zeros) state {split = [["tp"], []]} : !sched.buffer<128x64xf32>
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, Sched_InitKind:$init,
                       OptionalAttr<F64Attr>:$scale, UnitAttr:$state,
                       OptionalAttr<ArrayAttr>:$split,
                       TypeAttrOf<Sched_Buffer>:$type,
                       OptionalAttr<Sched_I64Attr>:$pipeline_rank,
                       OptionalAttr<Sched_I64Attr>:$checkpoint_rows,
                       OptionalAttr<DenseI64ArrayAttr>:$checkpoint_shape,
                       OptionalAttr<StrAttr>:$checkpoint_stack,
                       UnitAttr:$transient,
                       OptionalAttr<StrAttr>:$probe,
                       OptionalAttr<StrAttr>:$probe_fold);
  let assemblyFormat = [{
    $sym_name `init` `(` $init (`,` $scale^)? `)` (`state` $state^)?
    attr-dict `:` $type
  }];
  let hasVerifier = 1;
}

def Sched_ConstantOp : Sched_Op<"constant", [Symbol,
                                             HasParent<"::mlir::ModuleOp">]> {
  let summary = "a tensor whose bytes are in the bundle";
  let description = [{
    Read-only data every program may `sched.get`: a dense elements
    attribute whose shape and element type are the buffer's.

    ```mlir
    sched.constant @c0 dense<1.0> : tensor<4xf32>
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, ElementsAttr:$value);
  let assemblyFormat = "$sym_name $value attr-dict";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The buffer type `sched.get` of this constant yields.
    BufferType getBufferType();
  }];
}

def Sched_KernelOp : Sched_Op<"kernel", [Symbol, NoTerminator,
                                         HasParent<"::mlir::ModuleOp">]> {
  let summary = "a generated kernel and its argument types";
  let description = [{
    Declares kernel `sym_name` of the bundle's kernel library (the fused
    groups codegen wrote: one body, a CPU and a CUDA launcher): the exact
    buffer types it reads and writes and the types of its scalar
    arguments, in the order `sched.launch` passes them. Generated kernels
    are specialised to their shapes, so a launch must match exactly. A
    first scalar of type i64 is the element count of the first output,
    which the GPU launcher loops over: a launch must pass exactly that.

    The optional body holds what the kernel computes, as the lowering found
    it (the `weft.fused` group), so the kernel source is generated from the
    sched module; a bundle carries the compiled kernels instead, so a module
    read back from one has no body.

    ```mlir
    sched.kernel @fused_0 inputs [!sched.buffer<8xf32>] outputs [!sched.buffer<8xf32>] scalars [i64]
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, TypeArrayAttr:$inputs,
                       TypeArrayAttr:$outputs, TypeArrayAttr:$scalars);
  let regions = (region AnyRegion:$body);
  let assemblyFormat = [{
    $sym_name `inputs` $inputs `outputs` $outputs `scalars` $scalars
    attr-dict-with-keyword ($body^)?
  }];
  let hasVerifier = 1;
}

def Sched_ProgramOp : Sched_Op<"program", [Symbol, IsolatedFromAbove,
    SingleBlock, HasParent<"::mlir::ModuleOp">]> {
  let summary = "one ordered list of instructions and its buffers";
  let description = [{
    What a rank runs for one entry of a schedule: the entry block's
    arguments are its inputs (buffers the caller provides: tokens, labels,
    activations received by the caller), then buffer definitions and
    instructions in execution order, `sched.assign`s, and `sched.return`.

    - `arena`: the bytes of its arena; every `sched.alloc` lies inside it,
      at an offset that is a multiple of `align` (a power of two). A program
      without `arena` is not planned yet: the lowering from `weft` leaves
      its allocs without offsets and live ranges, and
      `weft-sched-plan-memory` fills them in.
    - `input_split`: per input, the mesh axes each dimension is split over
      (empty lists: replicated), so the caller can cut its block.
    - `input_chunks`: per input, 0, or the number of chunks 2N its
      dimension 1 (the sequence) is held in under context parallelism:
      chunks i and 2N - 1 - i of the natural order come i-th, so a block
      over cp of N ranks is two balanced chunks. The caller reorders so
      before it cuts.
    - `events`: how many events its `sched.record` / `sched.wait` use.
    - `streams`: the streams its instructions are queued on. Instructions
      on one stream run in program order; across streams only an event
      orders them. The program ends when every stream has drained, so
      outputs and assigns see every instruction's writes.

    The verifier checks the whole memory plan: bounds and alignment, that
    every use of a buffer lies inside its live range, that no two buffers
    whose live ranges meet share a byte, that outputs and assigned values
    live to the end, that every wait follows a record of its event on
    another stream, and that no buffer written on one stream is read or
    written on another without an event between.

    ```mlir
    sched.program @forward arena(128) align(64) events(0) streams ["compute"] {
    ^bb0(%x: !sched.buffer<8xf32>):
      %y = sched.alloc offset(0) live(0, 1) : !sched.buffer<8xf32>
      sched.launch @fused_0 grid [1, 1, 1] block 256 ins(%x : !sched.buffer<8xf32>) outs(%y : !sched.buffer<8xf32>) scalars [8]
      sched.return ["y"] %y : !sched.buffer<8xf32>
    }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       OptionalAttr<Sched_I64Attr>:$arena,
                       Sched_I64Attr:$align, Sched_I64Attr:$events,
                       StrArrayAttr:$streams,
                       OptionalAttr<ArrayAttr>:$input_split,
                       OptionalAttr<DenseI64ArrayAttr>:$input_chunks);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $sym_name (`arena` `(` $arena^ `)`)? `align` `(` $align `)` `events` `(`
    $events `)` `streams` $streams attr-dict-with-keyword $body
  }];
  let extraClassDeclaration = [{
    /// Whether its allocs have offsets and live ranges yet.
    bool isPlanned() { return getArena().has_value(); }
  }];
  let hasRegionVerifier = 1;
}

def Sched_ScheduleOp : Sched_Op<"schedule", [Symbol, NoTerminator,
    SingleBlock, HasParent<"::mlir::ModuleOp">]> {
  let summary = "which program runs for which micro-batch, in which order";
  let description = [{
    A schedule table: one `sched.sequence` per group of ranks, each a list
    of `sched.run` entries the rank executes in order. `microbatches` is
    how many micro-batches one call of the schedule consumes. A training
    step without pipelining is one entry; gradient accumulation runs the
    forward/backward program once per micro-batch and the optimizer
    program once; pipeline schedules (GPipe, 1F1B, interleaved,
    zero-bubble) have one sequence per `pp` coordinate, whose entries name
    the stage's programs, micro-batch and virtual stage (`chunk`).

    The sequences either are one sequence for every rank, or select ranks
    by their coordinate along one mesh axis, once for each coordinate.

    ```mlir
    sched.schedule @train microbatches(1) {
      sched.sequence {
        sched.run @step microbatch(0)
      }
    }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, Sched_I64Attr:$microbatches);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $sym_name `microbatches` `(` $microbatches `)` attr-dict-with-keyword
    $body
  }];
  let hasRegionVerifier = 1;
}

def Sched_SequenceOp : Sched_Op<"sequence", [NoTerminator, SingleBlock,
    HasParent<"::weft::sched::ScheduleOp">]> {
  let summary = "the entries ranks of one coordinate run, in order";
  let description = [{
    Without `where`, the sequence of every rank. `where "pp" = 1`: the
    sequence of the ranks whose coordinate along axis `pp` is 1.
  }];
  let arguments = (ins OptionalAttr<StrAttr>:$axis,
                       OptionalAttr<Sched_I64Attr>:$coordinate);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    (`where` $axis^ `=` $coordinate)? attr-dict-with-keyword $body
  }];
}

def Sched_RunOp : Sched_Op<"run", [HasParent<"::weft::sched::SequenceOp">,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "run a program for one micro-batch";
  let description = [{
    Runs `program` on micro-batch `microbatch` (0 <= microbatch <
    microbatches of the schedule) for virtual stage `chunk` (interleaved
    schedules; otherwise 0).
  }];
  let arguments = (ins FlatSymbolRefAttr:$program, Sched_I64Attr:$microbatch,
                       DefaultValuedAttr<Sched_I64Attr, "0">:$chunk);
  let assemblyFormat = [{
    $program `microbatch` `(` $microbatch `)` (`chunk` `(` $chunk^ `)`)?
    attr-dict
  }];
}

//===----------------------------------------------------------------------===//
// Buffers
//===----------------------------------------------------------------------===//

def Sched_AllocOp : Sched_Op<"alloc", [HasParent<"::weft::sched::ProgramOp">]> {
  let summary = "a buffer at a static offset of the program's arena";
  let description = [{
    The buffer occupies bytes [offset, offset + size) of the arena from
    instruction `first` to instruction `last` (indices among the program's
    instructions; `last` equal to the number of instructions means it
    lives to the end of the program, as outputs and assigned values must).
    Outside that range the bytes belong to other buffers. In a program not
    yet planned, an alloc has neither (`%a = sched.alloc : T`).

    ```mlir
    %a = sched.alloc offset(256) live(3, 7) : !sched.buffer<4x16xbf16>
    ```
  }];
  let arguments = (ins OptionalAttr<Sched_I64Attr>:$offset,
                       OptionalAttr<Sched_I64Attr>:$first,
                       OptionalAttr<Sched_I64Attr>:$last);
  let results = (outs Sched_Buffer:$result);
  let assemblyFormat = [{
    (`offset` `(` $offset^ `)` `live` `(` $first `,` $last `)`)? attr-dict `:`
    type($result)
  }];
}

def Sched_GetOp : Sched_Op<"get", [HasParent<"::weft::sched::ProgramOp">,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "the storage of a parameter or constant";
  let description = [{
    Yields the buffer of `sched.param` or `sched.constant` `name`; its type
    must be theirs. Parameters change through `sched.assign`, or in place
    by a `sched.launch` that reads and writes the same parameter (each
    element read before it is written: the optimizer's update), never
    both in one program; instructions must not write constants.
  }];
  let arguments = (ins FlatSymbolRefAttr:$name);
  let results = (outs Sched_Buffer:$result);
  let assemblyFormat = "$name attr-dict `:` type($result)";
}

def Sched_ViewOp : Sched_Op<"view", [HasParent<"::weft::sched::ProgramOp">]> {
  let summary = "a buffer inside another buffer's bytes";
  let description = [{
    Reinterprets bytes [offset, offset + size) of `source` as the result
    type: a reshape (offset 0, same size), one part of a concatenation, or
    one member of a packed collective bucket. The offset is a multiple of
    the result's element size and the view lies inside the source; a view
    lives as long as the storage it is a view of.

    ```mlir
    %v = sched.view %a[64] : !sched.buffer<4x16xf32> to !sched.buffer<16xf32>
    ```
  }];
  let arguments = (ins Sched_Buffer:$source, Sched_I64Attr:$offset);
  let results = (outs Sched_Buffer:$result);
  let assemblyFormat = [{
    $source `[` $offset `]` attr-dict `:` type($source) `to` type($result)
  }];
  let hasVerifier = 1;
}

def Sched_AssignOp : Sched_Op<"assign", [
    HasParent<"::weft::sched::ProgramOp">,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "a parameter's value when the program ends";
  let description = [{
    After the last instruction, parameter `param` takes the bytes of
    `value` (of its type). Assigns come after every instruction; a value
    assigned lives to the end of the program.
  }];
  let arguments = (ins FlatSymbolRefAttr:$param, Sched_Buffer:$value);
  let assemblyFormat = "$param `=` $value attr-dict `:` type($value)";
}

def Sched_ReturnOp : Sched_Op<"return", [Terminator,
    HasParent<"::weft::sched::ProgramOp">]> {
  let summary = "the program's named outputs";
  let description = [{
    Names the buffers the caller reads when the program ends (`loss`,
    `logits`, `grad:<param>`). `split`, when present, holds per output the
    mesh axes of each dimension it is divided over (an empty list:
    replicated), so the caller can gather it.
  }];
  let arguments = (ins StrArrayAttr:$names, Variadic<Sched_Buffer>:$values,
                       OptionalAttr<ArrayAttr>:$split);
  let assemblyFormat = [{
    $names ($values^ `:` type($values))? attr-dict
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Generated kernels, GEMMs, attention
//===----------------------------------------------------------------------===//

def Sched_LaunchOp : Sched_Instr<"launch", [AttrSizedOperandSegments,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "launch a generated kernel";
  let description = [{
    Runs kernel `kernel` (a `sched.kernel`) on `inputs` and `outputs`,
    whose types must be the declaration's, with scalar arguments
    `scalars` (typed attributes of the declared types). On a GPU it is
    launched with `grid` blocks (x, y, z) of `block` threads; the CPU
    launcher ignores both.
  }];
  let arguments = (ins FlatSymbolRefAttr:$kernel, DenseI64ArrayAttr:$grid,
                       Sched_I64Attr:$block, Sched_Ins:$inputs,
                       Sched_Outs:$outputs, ArrayAttr:$scalars,
                       Sched_Stream:$stream);
  let assemblyFormat = [{
    $kernel `grid` $grid `block` $block
    (`ins` `(` $inputs^ `:` type($inputs) `)`)?
    `outs` `(` $outputs `:` type($outputs) `)` `scalars` $scalars
    (`on` $stream^)? attr-dict
  }];
  let hasVerifier = 1;
}

def Sched_GemmOp : Sched_Instr<"gemm", [AttrSizedOperandSegments]> {
  let summary = "a (batched) matrix product with an optional epilogue";
  let description = [{
    For each batch b < `batch`, with `mnk` = [m, n, k] and row-major
    matrices: C_b[m, n] = op(A_b)[m, k] · op(B_b)[k, n], where op
    transposes when `transpose_a` / `transpose_b` is set (A is then stored
    [k, m], B [n, k]). Element (i, j) of a stored matrix X_b is at
    X[b * stride + i * ld + j], with `ld` = [lda, ldb, ldc] and `strides` =
    [stride_a, stride_b, stride_c], in elements. With `accumulate`, C_b +=
    the product instead of =.

    Products accumulate in f32 (f64 for f64) and are rounded once to C's
    type, after the epilogue, which acts per element on the f32 sum s:
    `bias` adds bias[j]; `gelu` writes s to `aux` (C's layout, ld = n)
    and applies GELU (tanh form); `bias_gelu` adds bias[j], writes that sum
    to `aux` and applies GELU; `dgelu` multiplies by GELU'(aux[i, j]) (the
    backward of the other two: aux is read). FP8 operands (f8E4M3FN / f8E5M2) need `scales`: one f32
    each for A and B, which multiply the product before the epilogue, or
    with `scale_modes` (A's and B's: "tensor", "rows", "vec128",
    "blk128", "vec32"; `fp8_cast`'s) block scales of A [m, k] and B [n, k]
    (`transpose_b`, one matrix), paired as cuBLASLt takes them (rows by
    rows, vec128 by blk128 either way round, or vec128 by vec128) or as
    Weft's own MXFP8 kernel does (vec32 by vec32). Each row's, 128- or
    32-element block's partial sum along k is multiplied by its scales.

    ```mlir
    sched.gemm %x, %w -> %y bias(%b : !sched.buffer<64xf32>) mnk [8, 64, 32]
        batch 1 ld [32, 64, 64] strides [0, 0, 0] epilogue bias
        : !sched.buffer<8x32xf32>, !sched.buffer<32x64xf32> -> !sched.buffer<8x64xf32>
    ```
  }];
  let arguments = (ins Sched_In:$a, Sched_In:$b, Sched_Out:$c,
                       Sched_OptionalIn:$bias, Sched_OptionalInOut:$aux,
                       Sched_OptionalIn:$scale_a, Sched_OptionalIn:$scale_b,
                       DenseI64ArrayAttr:$mnk, Sched_I64Attr:$batch,
                       DenseI64ArrayAttr:$ld, DenseI64ArrayAttr:$strides,
                       Sched_Epilogue:$epilogue, UnitAttr:$transpose_a,
                       UnitAttr:$transpose_b, UnitAttr:$accumulate,
                       OptionalAttr<StrArrayAttr>:$scale_modes,
                       Sched_Stream:$stream);
  let assemblyFormat = [{
    $a `,` $b `->` $c (`bias` `(` $bias^ `:` type($bias) `)`)?
    (`aux` `(` $aux^ `:` type($aux) `)`)?
    (`scales` `(` $scale_a^ `,` $scale_b `:` type($scale_a) `,`
     type($scale_b) `)`)?
    `mnk` $mnk `batch` $batch `ld` $ld `strides` $strides
    `epilogue` $epilogue (`transpose_a` $transpose_a^)?
    (`transpose_b` $transpose_b^)? (`accumulate` $accumulate^)?
    (`on` $stream^)? attr-dict `:` type($a) `,` type($b) `->` type($c)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// FP8 scales against `scale_modes`.
    ::mlir::LogicalResult verifyScaleModes();
  }];
}

def Sched_AttentionOp : Sched_Instr<"attention",
    [AttrSizedOperandSegments,
     DeclareOpInterfaceMethods<Sched_ScratchOpInterface>]> {
  let summary = "attention forward by the algorithm the compiler chose";
  let description = [{
    `weft.attention`'s semantics: `q` [B, S, Hq, D], `k` [B, T, Hkv, D],
    `v` [B, T, Hkv, Dv] give `out` [B, S, Hq, Dv] and `lse` [B, Hq, S]
    (f32). `gemm_softmax` (rows of S, T, D and Dv elements 16-byte
    aligned) keeps the f32 scores [B, Hq, S, T] and then the probabilities
    in q's type, of the same shape, in `scratch`
    (scratch::attentionLayout in dialects/sched/IR/ScratchLayout.h says
    where and how many bytes); `flash` takes no scratch. With
    `positions` (i32 query positions [S] and key positions [T]) the causal
    mask is kpos[t] <= qpos[s]; a query that sees no key gets a zero row
    and lse -inf. With `dropout` (a rate) and `seed`, the probabilities
    are dropped as weft.attention's are: `step` and `microbatch` (f32
    scalars), `split` (per dimension of q: batch and heads) and
    `microbatches` as sched.dropout's. With `entropy` (f32 [B, Hq, S]),
    each row's weft.attention_entropy is written too, from the same pass
    (undropped; -inf where lse is).
  }];
  let arguments = (ins Sched_In:$q, Sched_In:$k, Sched_In:$v,
                       Sched_Out:$out, Sched_Out:$lse,
                       Sched_OptionalIn:$query_positions,
                       Sched_OptionalIn:$key_positions,
                       Sched_OptionalOut:$entropy,
                       Sched_OptionalIn:$step, Sched_OptionalIn:$microbatch,
                       Sched_OptionalInOut:$scratch, F64Attr:$scale,
                       UnitAttr:$causal, Sched_AttentionAlgorithm:$algorithm,
                       OptionalAttr<F64Attr>:$dropout,
                       OptionalAttr<Sched_I64Attr>:$seed,
                       OptionalAttr<ArrayAttr>:$split,
                       OptionalAttr<Sched_I64Attr>:$microbatches,
                       Sched_Stream:$stream);
  let assemblyFormat = [{
    $q `,` $k `,` $v `->` $out `,` $lse
    (`positions` `(` $query_positions^ `,` $key_positions `:`
     type($query_positions) `,` type($key_positions) `)`)?
    (`entropy` `(` $entropy^ `:` type($entropy) `)`)?
    (`step` `(` $step^ `:` type($step) `)`)?
    (`microbatch` `(` $microbatch^ `:` type($microbatch) `)`)?
    (`scratch` `(` $scratch^ `:` type($scratch) `)`)? `scale` $scale
    (`causal` $causal^)? `algorithm` $algorithm (`on` $stream^)? attr-dict
    `:` type($q) `,` type($k) `,` type($v) `->` type($out) `,` type($lse)
  }];
  let hasVerifier = 1;
}

def Sched_AttentionGradOp : Sched_Instr<"attention_grad",
    [AttrSizedOperandSegments,
     DeclareOpInterfaceMethods<Sched_ScratchOpInterface>]> {
  let summary = "attention backward by the algorithm the compiler chose";
  let description = [{
    `weft.attention_grad`'s semantics: from the forward's `q`, `k`, `v`,
    `out`, `lse` and the output gradient `dout`, writes `dq`, `dk`, `dv`
    (of q's, k's and v's types). `scratch` holds the forward's scores and
    probabilities again (gemm_softmax: reused for dP and dS) and an f32
    row term delta [B, Hq, S] (both algorithms; without scratch the flash
    backward computes delta itself, as the CPU does);
    scratch::attentionLayout says where and how many bytes. `positions` as
    the forward's; `lse_grad` [B, Hq, S] (f32) is the gradient of the
    forward's lse, subtracted from delta. Dropout as the forward's.
  }];
  let arguments = (ins Sched_In:$q, Sched_In:$k, Sched_In:$v, Sched_In:$out,
                       Sched_In:$lse, Sched_In:$dout, Sched_Out:$dq,
                       Sched_Out:$dk, Sched_Out:$dv,
                       Sched_OptionalIn:$query_positions,
                       Sched_OptionalIn:$key_positions,
                       Sched_OptionalIn:$lse_grad,
                       Sched_OptionalIn:$step, Sched_OptionalIn:$microbatch,
                       Sched_OptionalInOut:$scratch, F64Attr:$scale,
                       UnitAttr:$causal, Sched_AttentionAlgorithm:$algorithm,
                       OptionalAttr<F64Attr>:$dropout,
                       OptionalAttr<Sched_I64Attr>:$seed,
                       OptionalAttr<ArrayAttr>:$split,
                       OptionalAttr<Sched_I64Attr>:$microbatches,
                       Sched_Stream:$stream);
  let assemblyFormat = [{
    $q `,` $k `,` $v `,` $out `,` $lse `,` $dout `->` $dq `,` $dk `,` $dv
    (`positions` `(` $query_positions^ `,` $key_positions `:`
     type($query_positions) `,` type($key_positions) `)`)?
    (`lse_grad` `(` $lse_grad^ `:` type($lse_grad) `)`)?
    (`step` `(` $step^ `:` type($step) `)`)?
    (`microbatch` `(` $microbatch^ `:` type($microbatch) `)`)?
    (`scratch` `(` $scratch^ `:` type($scratch) `)`)? `scale` $scale
    (`causal` $causal^)? `algorithm` $algorithm (`on` $stream^)? attr-dict
    `:` type($q) `,` type($k) `,` type($v) `,` type($out) `,` type($lse) `,`
    type($dout) `->` type($dq) `,` type($dk) `,` type($dv)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Library kernels: the runtime's own implementations, operands typed
//===----------------------------------------------------------------------===//

// Operands first (reads, then after `->` writes), every attribute spelled:
// none has a default the runtime could disagree with.
class Sched_LibraryOp<string mnemonic, string semantics, dag args,
                      list<Trait> traits = []>
    : Sched_Instr<mnemonic, traits> {
  let summary = "library kernel: " # semantics;
  let description = [{
    The runtime's kernel for the `weft` op of the same name, with its exact
    semantics; buffers are destination-passed.
  }];
  let arguments = !con(args, (ins Sched_Stream:$stream));
  let assemblyFormat = "operands (`on` $stream^)? attr-dict `:` type(operands)";
  let hasVerifier = 1;
}

// A library kernel that is several kernels on a GPU: `args` and then an
// optional `scratch` (ScratchOpInterface), printed as attention's is,
// `scratch(%s : !sched.buffer<N x f32>)` after the other operands, which
// print as Sched_LibraryOp's do.
class Sched_ScratchLibraryOp<string mnemonic, string semantics, dag args,
                             list<Trait> traits = []>
    : Sched_LibraryOp<mnemonic, semantics,
                      !con(args, (ins Sched_OptionalInOut:$scratch)),
                      traits # [DeclareOpInterfaceMethods<
                                    Sched_ScratchOpInterface>]> {
  let description = [{
    The runtime's kernel for the `weft` op of the same name, with its exact
    semantics; buffers are destination-passed. On a GPU it is several
    kernels, which keep their intermediates in `scratch` (f32, at least the
    bytes dialects/sched/IR/ScratchLayout.h states for the operands'
    shapes); the lowering allocates it for the cuda target only.
  }];
  // The operands of `args` by name: each that is an Arg, not an attribute.
  defvar names = !foldl([]<string>, !range(!size(args)), acc, i,
      !if(!initialized(!getdagarg<Arg>(args, i)),
          !listconcat(acc, ["$" # !getdagname(args, i)]), acc));
  let assemblyFormat = !interleave(names, " `,` ") #
      " (`scratch` `(` $scratch^ `:` type($scratch) `)`)? (`on` $stream^)?"
      " attr-dict `:` " #
      !interleave(!foreach(n, names, "qualified(type(" # n # "))"), " `,` ");
}

def Sched_EmbeddingOp : Sched_LibraryOp<"embedding", "rows of a table by id",
    (ins Sched_In:$table, Sched_In:$ids, Sched_Out:$out,
         StrArrayAttr:$vocab_axes)> {
  let description = [{
    out[t] = table[ids[t] - offset], where `table` is this rank's block of
    the vocabulary along `vocab_axes` (empty: the whole table) and offset
    is the block's first row; an id outside the block gives a zero row, an
    id outside the whole vocabulary is a run-time error.
  }];
}
def Sched_EmbeddingGradOp : Sched_LibraryOp<"embedding_grad",
    "scatter-add of row gradients by id",
    (ins Sched_In:$ids, Sched_In:$dout, Sched_Out:$dtable,
         StrArrayAttr:$vocab_axes)>;
def Sched_RopeOp : Sched_LibraryOp<"rope", "rotary position embedding",
    (ins Sched_In:$input, Sched_Out:$out, Sched_OptionalIn:$positions,
         F64Attr:$theta, Sched_I64Attr:$position_offset, BoolAttr:$inverse)> {
  let description = [{
    `weft.rope`: rotates `input` [B, S, H, D] into `out`; row s's position
    is positions[s] (i32 [S]) when given, else s, plus `position_offset`.
  }];
}
def Sched_CrossEntropyOp : Sched_ScratchLibraryOp<"cross_entropy",
    "mean softmax cross-entropy of logits against labels",
    (ins Sched_In:$logits, Sched_In:$labels, Sched_Out:$loss,
         Sched_I64Attr:$ignore_index, StrArrayAttr:$vocab_axes)> {
  let description = [{
    `weft.cross_entropy`: logits [..., V] and labels [...]; loss = mean
    over positions whose label is not `ignore_index` of
    logsumexp(logits[p]) - logits[p, label]. With
    `vocab_axes`, `logits` is this rank's block of the vocabulary and the
    row maxima, sums and target logits are combined over the group of
    those axes by the instruction itself, on its stream. `scratch` holds
    the row statistics and the count of positions not ignored
    (scratch::crossEntropyLayout, rows = the elements of labels).
  }];
}
def Sched_CrossEntropyGradOp : Sched_ScratchLibraryOp<"cross_entropy_grad",
    "gradient of the mean cross-entropy",
    (ins Sched_In:$logits, Sched_In:$labels, Sched_In:$dloss,
         Sched_Out:$dlogits, Sched_I64Attr:$ignore_index, StrArrayAttr:$vocab_axes)> {
  let description = [{
    `weft.cross_entropy_grad`: dlogits[p, v] = (softmax(logits[p])_v -
    [v == labels[p]]) · dloss / N, N the positions whose label is not
    `ignore_index`; ignored positions get zero. With `vocab_axes` the row
    statistics are combined over their group as cross_entropy's.
    `scratch` as cross_entropy's (scratch::crossEntropyLayout).
  }];
}
def Sched_ReduceOp : Sched_ScratchLibraryOp<"reduce",
    "sum, max or mean over dimensions",
    (ins Sched_In:$input, Sched_Out:$out, Sched_Reduction:$reduction,
         DenseI64ArrayAttr:$dims)> {
  let description = [{
    out = the `reduction` of `input` over `dims` (increasing), whose
    shape is input's without them; f32 accumulation in two passes (chunk
    partials, then per output) so a whole-tensor sum fills the device.
    `scratch` holds the partials (scratch::reduceLayout of the elements of
    out and the elements each reduces).
  }];
  let assemblyFormat = [{
    $reduction $input `->` $out
    (`scratch` `(` $scratch^ `:` type($scratch) `)`)? `dims` $dims
    (`on` $stream^)? attr-dict `:` type($input) `->` type($out)
  }];
}
def Sched_SoftmaxOp : Sched_LibraryOp<"softmax", "softmax along a dimension",
    (ins Sched_In:$input, Sched_Out:$out, Sched_I64Attr:$dim)>;
def Sched_DropoutOp : Sched_LibraryOp<"dropout",
    "zero elements with probability rate, scale the rest by 1/(1-rate)",
    (ins Sched_In:$input, Sched_Out:$out, Sched_OptionalIn:$step,
         Sched_OptionalIn:$microbatch, Sched_OptionalIn:$positions,
         F64Attr:$rate, Sched_I64Attr:$seed,
         OptionalAttr<ArrayAttr>:$split,
         OptionalAttr<Sched_I64Attr>:$microbatches),
    [AttrSizedOperandSegments]> {
  let description = [{
    `weft.dropout`: the mask of the global tensor, of which `input` is this
    rank's block. `step` (an f32 scalar, a whole number) moves the seed per
    training step. `split`: per dimension, the mesh axes that cut it, major
    to minor, as a parameter's. `microbatch` (an f32 scalar k) of
    `microbatches` m: dimension 0 is further the k-th of m blocks, outside
    the split (the step's micro-batches). `positions` (i32, one per element
    of dimension 1): element s of dimension 1 is the sequence's
    positions[s] (context parallelism's order).

    ```mlir
    sched.dropout %x, %y step %s : !sched.buffer<f32> microbatch %k : !sched.buffer<f32>
        {microbatches = 2 : i64, rate = 0.1 : f64, seed = 7 : i64,
         split = [["dp"], []]} : !sched.buffer<4x8xf32>, !sched.buffer<4x8xf32>
    ```
  }];
  let assemblyFormat = [{
    $input `,` $out (`step` $step^ `:` type($step))?
    (`microbatch` $microbatch^ `:` type($microbatch))?
    (`positions` $positions^ `:` type($positions))? (`on` $stream^)?
    attr-dict `:` type($input) `,` type($out)
  }];
}
def Sched_Fp8AmaxOp : Sched_LibraryOp<"fp8_amax",
    "the largest magnitude of each block (weft.fp8_amax); the GPU reads a bf16 "
    "input as stored, the CPU f32 only",
    (ins Sched_In:$input, Sched_Out:$out)>;
def Sched_Fp8QuantizeOp : Sched_LibraryOp<"fp8_quantize",
    "FP8 quantize-dequantize by block maxima (weft.fp8_quantize); `format` "
    "is f8e4m3fn or f8e5m2",
    (ins Sched_In:$input, Sched_In:$amax, Sched_Out:$out, StrAttr:$format,
         UnitAttr:$pow2_scales)>;
def Sched_Fp8CastOp : Sched_LibraryOp<"fp8_cast",
    "FP8 codes of a tensor and its inverse scale, for an FP8 GEMM",
    (ins Sched_In:$input, Sched_In:$amax, Sched_Out:$out, Sched_Out:$scale_inv,
         UnitAttr:$transpose, OptionalAttr<StrAttr>:$scale_mode,
         UnitAttr:$pow2_scales)> {
  let description = [{
    FP8 quantization kept in FP8, where `fp8_quantize` writes the
    dequantized f32 values: with s the scale `fp8_quantize` derives from
    its block's maximum in `amax` for `out`'s format (f8E4M3FN or
    f8E5M2), each element x of `input` (f32, or on the GPU bf16 as stored)
    becomes the code of fp8(sat(x * s)), and `scale_inv` gets each
    block's 1 / s, the factors a `gemm` with FP8 operands takes as its
    scales. With `transpose`, `out` holds each matrix
    of the last two dimensions transposed ([..., C, R] for an input
    [..., R, C]): cuBLASLt's FP8 GEMMs read both operands with k
    contiguous, so the compiler casts a value once per layout its GEMMs
    need, as Transformer Engine keeps a tensor's row- and column-wise FP8
    data.

    Without `scale_mode` (or "tensor") `amax` and `scale_inv` are one f32.
    With "rows", "vec128", "blk128" or "vec32" `amax` holds the maxima of
    blocks (as `fp8_amax` cuts them) that are, in `out`'s matrix [rows, k]
    (its last dimension k), one row each, 1 x 128 tiles, 128 x 128 blocks
    or 1 x 32 blocks (MXFP8's), and `scale_inv` holds each block's 1 / s
    in the layout for that mode (runtime/support/Fp8Scaling.h: cuBLASLt's
    for the first three), what `gemm`'s `scale_modes` read; a transposed
    batch's blocks each lie inside one matrix, which transposes on its own
    (an expert weight [E, M, K] as [E, K, M]). `pow2_scales` derives s as
    `fp8_quantize`'s `pow2_scales` does (MXFP8's E8M0 powers of two).

    ```mlir
    sched.fp8_cast %x, %amax, %codes, %scale_inv transpose
        : !sched.buffer<16x64xf32>, !sched.buffer<1x1xf32>,
          !sched.buffer<64x16xf8E4M3FN>, !sched.buffer<1xf32>
    ```
  }];
}
def Sched_Fp8ScaleInvOp : Sched_LibraryOp<"fp8_scale_inv",
    "the inverse scales fp8_cast writes, for codes that are a cast's already",
    (ins Sched_In:$codes, Sched_In:$amax, Sched_Out:$scale_inv,
         UnitAttr:$transpose, OptionalAttr<StrAttr>:$scale_mode,
         UnitAttr:$pow2_scales)> {
  let description = [{
    `scale_inv` gets what an `fp8_cast` of an input of `codes`' shape into
    `codes`' format by the maxima `amax` writes into its `scale_inv`, with
    the same `transpose`, `scale_mode` and `pow2_scales`: each block's 1 /
    s, laid out for the operand the cast writes. `codes` is read for its
    shape and format only. An element's code depends on its block's scale
    alone, so such a cast's codes are, as stored or transposed, the codes
    an `fp8_encode` by these maxima made. Where FP8 storage keeps a
    weight's quantized state as those codes, a GEMM reads them (or a
    transposing copy) and takes its scales from here, with no values to
    cast.

    ```mlir
    sched.fp8_scale_inv %codes, %amax, %scale_inv
        : !sched.buffer<64x64xf8E4M3FN>, !sched.buffer<1x1xf32>,
          !sched.buffer<1xf32>
    ```
  }];
}
def Sched_Fp8EncodeOp : Sched_LibraryOp<"fp8_encode",
    "FP8 codes of fp8_quantize's blocks, to move them as bytes",
    (ins Sched_In:$input, Sched_In:$amax, Sched_Out:$out,
         UnitAttr:$pow2_scales)> {
  let description = [{
    `out` (f8E4M3FN or f8E5M2, `input`'s shape) holds, for each element x
    of `input` (f32, or on the GPU bf16 as stored), the code of fp8(sat(x * s)), s the scale
    `fp8_quantize` derives from the maximum of x's block in `amax` (blocks
    as `fp8_amax` cuts them, any grid). What an all-gather of quantized
    values moves where they are read as values, not by an FP8 GEMM (a
    weight ZeRO-3 quantizes once a step into its gathered state): one byte
    an element, which `fp8_decode` turns back into the values.

    ```mlir
    sched.fp8_encode %x, %amax, %codes
        : !sched.buffer<32x64xf32>, !sched.buffer<1x1xf32>,
          !sched.buffer<32x64xf8E4M3FN>
    ```
  }];
}
def Sched_Fp8DecodeOp : Sched_LibraryOp<"fp8_decode",
    "the values of FP8 codes by their blocks' maxima, as fp8_quantize writes them",
    (ins Sched_In:$input, Sched_In:$amax, Sched_Out:$out,
         UnitAttr:$pow2_scales)> {
  let description = [{
    `out` (f32, or on the GPU bf16 rounded to nearest even, `input`'s
    shape) holds, for each code c of `input` (f8E4M3FN or f8E5M2), its
    value divided by the scale s of its block in `amax` (as `fp8_encode`
    cuts them): fp8(sat(x * s)) / s, to the bit what `fp8_quantize`
    writes for the x that `fp8_encode` encoded with these maxima.

    ```mlir
    sched.fp8_decode %codes, %amax, %x
        : !sched.buffer<64x64xf8E4M3FN>, !sched.buffer<1x1xf32>,
          !sched.buffer<64x64xf32>
    ```
  }];
}
def Sched_Fp8GroupQuantizeOp : Sched_LibraryOp<"fp8_group_quantize",
    "FP8 quantize-dequantize in tiles of each expert's rows "
    "(weft.fp8_group_quantize); `format` is f8e4m3fn or f8e5m2",
    (ins Sched_In:$input, Sched_In:$sizes, Sched_Out:$out, StrAttr:$format,
         Sched_I64Attr:$tile_rows, Sched_I64Attr:$experts,
         UnitAttr:$pow2_scales)> {
  let description = [{
    `input` [N, C] (f32) in the groups of `sizes` [G] (i32), group g of
    expert g mod `experts`: each expert's rows (its groups', in order) in
    tiles of `tile_rows` (0: all of them), a tile's column one block,
    quantize-dequantized by its own maximum as `fp8_quantize` does; rows
    after the groups are zeroed.
  }];
}
def Sched_Fp8GroupCastOp : Sched_LibraryOp<"fp8_group_cast",
    "FP8 codes, transposed and expert-major, in tiles of each expert's rows",
    (ins Sched_In:$input, Sched_In:$sizes, Sched_Out:$out, Sched_Out:$scale_inv,
         Sched_I64Attr:$tile_rows, Sched_I64Attr:$experts,
         UnitAttr:$pow2_scales)> {
  let description = [{
    `fp8_group_quantize`'s blocks kept as FP8 codes for an expert weight
    gradient's FP8 GEMM (`grouped_matmul_wgrad` with scales): `out` [C, N]
    (f8E4M3FN or f8E5M2) holds `input` [N, C] (f32) transposed with its
    rows in expert-major order (expert 0's rows, its groups' in order, then
    expert 1's, ...), so that the GEMM reads each expert's rows
    contiguously, and `scale_inv` [T, C] each block's 1 / s, numbered as
    runtime/support/Fp8Scaling.h's weft_fp8_expert_tile numbers them (T =
    weft_fp8_group_tiles: E for whole experts, else ceil(N / tile_rows) +
    E, more than are used). Codes past the groups' rows and unused scales
    are not written.

    ```mlir
    sched.fp8_group_cast %dy, %sizes, %codes, %scale_inv
        {experts = 2 : i64, tile_rows = 32 : i64}
        : !sched.buffer<64x96xf32>, !sched.buffer<4xi32>,
          !sched.buffer<96x64xf8E4M3FN>, !sched.buffer<4x96xf32>
    ```
  }];
}
def Sched_LayerNormGradOp : Sched_ScratchLibraryOp<"layer_norm_grad",
    "LayerNorm backward: input, weight and bias gradients",
    (ins Sched_In:$input, Sched_In:$weight, Sched_In:$dout, Sched_Out:$dinput,
         Sched_Out:$dweight, Sched_Out:$dbias, F64Attr:$epsilon)> {
  let description = [{
    `weft.layer_norm_grad` over the last dimension of `input`. `scratch`
    holds the row statistics and the column partials of dweight and dbias
    (scratch::normGradLayout, rows = the elements of input over the last
    dimension, dim = the last dimension).
  }];
}
def Sched_RMSNormGradOp : Sched_ScratchLibraryOp<"rms_norm_grad",
    "RMSNorm backward: input and weight gradients",
    (ins Sched_In:$input, Sched_In:$weight, Sched_In:$dout, Sched_Out:$dinput,
         Sched_Out:$dweight, F64Attr:$epsilon)> {
  let description = [{
    `weft.rms_norm_grad` over the last dimension of `input`. `scratch` as
    layer_norm_grad's (scratch::normGradLayout).
  }];
}
def Sched_OneHotOp : Sched_LibraryOp<"one_hot", "one-hot rows of indices",
    (ins Sched_In:$indices, Sched_Out:$out)>;
def Sched_TopKOp : Sched_LibraryOp<"topk", "the k largest of each row",
    (ins Sched_In:$input, Sched_Out:$values, Sched_Out:$indices, Sched_I64Attr:$k)>;
def Sched_TopKGatingOp : Sched_LibraryOp<"topk_gating",
    "MoE router: softmax, top-k, optional renormalisation",
    (ins Sched_In:$logits, Sched_Out:$weights, Sched_Out:$indices, Sched_I64Attr:$k,
         BoolAttr:$normalize)>;

// Mixture of experts: weft's ops of the same names, over packed rows.
def Sched_ExpertRouteOp : Sched_ScratchLibraryOp<"expert_route",
    "each routing pair's packed row and each expert's kept count",
    (ins Sched_In:$indices, Sched_Out:$positions, Sched_Out:$counts,
         Sched_I64Attr:$capacity, StrArrayAttr:$token_axes)> {
  let description = [{
    `weft.expert_route` over indices [T, k] (i32): positions [T, k] and
    counts [E] (i32), E the experts. `capacity` 0 keeps every pair
    (dropless). With `token_axes`, `indices` is this rank's block of the
    tokens of the group of those axes, in group order: the instruction
    all-gathers each rank's per-choice counts [k, E] over the group, on
    its stream, and keeps the pairs the whole group's routing keeps. On a
    GPU a group of more than one rank needs `scratch` for the counts
    (scratch::expertRouteLayout).
  }];
}
def Sched_ExpertDispatchOp : Sched_LibraryOp<"expert_dispatch",
    "tokens to their routing pairs' rows",
    (ins Sched_In:$input, Sched_In:$positions, Sched_Out:$out)>;
def Sched_ExpertCombineOp : Sched_LibraryOp<"expert_combine",
    "weighted sum of each token's expert rows",
    (ins Sched_In:$expert_outputs, Sched_In:$weights, Sched_In:$positions,
         Sched_Out:$out)>;
def Sched_ExpertGatherOp : Sched_LibraryOp<"expert_gather",
    "each routing pair's row",
    (ins Sched_In:$expert_outputs, Sched_In:$positions, Sched_Out:$out)>;
def Sched_ExpertScatterOp : Sched_LibraryOp<"expert_scatter",
    "routing pairs to their rows",
    (ins Sched_In:$pairs, Sched_In:$positions, Sched_Out:$out)>;
def Sched_GroupedMatmulOp : Sched_LibraryOp<"grouped_matmul",
    "one matmul per group of consecutive rows",
    (ins Sched_In:$input, Sched_In:$weight, Sched_In:$sizes, Sched_Out:$out,
         Sched_OptionalIn:$scale_input, Sched_OptionalIn:$scale_weight,
         BoolAttr:$transpose_rhs, OptionalAttr<StrArrayAttr>:$scale_modes),
    [AttrSizedOperandSegments]> {
  let description = [{
    `weft.grouped_matmul`: out [N, M] from input [N, K] in the groups of
    `sizes` [G] (i32), group g times weight[g mod E] ([E, K, M], or with
    `transpose_rhs` [E, M, K], transposed); rows after the groups are
    zeroed. Only the groups' rows are computed.

    FP8 operands (an expert layer's FP8 GEMMs, kept as codes) need
    `transpose_rhs` (k contiguous in both, as `gemm`'s FP8 operands) and
    `scales`, with `scale_modes` (the input's and the weight's, `gemm`'s
    names and pairings) saying how: the input is the matrix [N, K], the
    weight the matrix [E * M, K] (its experts' rows stacked), each with its
    mode's scales (runtime/support/Fp8Scaling.h), K a multiple of 32 and a
    128 x 128 block inside one expert. Each 32-element block's partial sum
    along K is multiplied by its two scales (Weft's own kernel; cuBLAS has
    no grouped FP8 GEMM).

    ```mlir
    sched.grouped_matmul %x, %w, %sizes, %y
        scales(%sx, %sw : !sched.buffer<4x64xf32>, !sched.buffer<4x128xf32>)
        {scale_modes = ["vec32", "vec32"], transpose_rhs = true}
        : !sched.buffer<64x128xf8E4M3FN>, !sched.buffer<2x64x128xf8E4M3FN>,
          !sched.buffer<2xi32>, !sched.buffer<64x64xf32>
    ```
  }];
  let assemblyFormat = [{
    $input `,` $weight `,` $sizes `,` $out
    (`scales` `(` $scale_input^ `,` $scale_weight `:`
     qualified(type($scale_input)) `,` qualified(type($scale_weight)) `)`)?
    (`on` $stream^)? attr-dict `:` qualified(type($input)) `,`
    qualified(type($weight)) `,` qualified(type($sizes)) `,`
    qualified(type($out))
  }];
}
def Sched_GroupedMatmulWgradOp : Sched_LibraryOp<"grouped_matmul_wgrad",
    "per-expert sum of the groups' lhs^T rhs",
    (ins Sched_In:$lhs, Sched_In:$rhs, Sched_In:$sizes, Sched_Out:$out,
         Sched_OptionalIn:$scale_lhs, Sched_OptionalIn:$scale_rhs,
         OptionalAttr<Sched_I64Attr>:$tile_rows),
    [AttrSizedOperandSegments]> {
  let description = [{
    `weft.grouped_matmul_wgrad`: out [E, P, Q] from lhs [N, P] and rhs
    [N, Q] in the groups of `sizes` [G] (i32), expert e the sum over its
    groups g (g mod E = e) of lhs_g^T rhs_g.

    FP8 operands (`fp8_group_cast`'s) are transposed and expert-major, lhs
    [P, N] and rhs [Q, N] (each expert's rows contiguous), with `scales`
    [T, P] and [T, Q] of tiles of `tile_rows` of an expert's rows (0: all
    of them; a multiple of 32 otherwise). Each 32-row block of an expert,
    zero-padded past its last row, is multiplied on its own and its
    partial sums scaled by the two tiles' scales (Weft's own kernel).

    ```mlir
    sched.grouped_matmul_wgrad %dy, %x, %sizes, %dw
        scales(%sdy, %sx : !sched.buffer<2x96xf32>, !sched.buffer<2x64xf32>)
        {tile_rows = 0 : i64}
        : !sched.buffer<96x64xf8E4M3FN>, !sched.buffer<64x64xf8E4M3FN>,
          !sched.buffer<2xi32>, !sched.buffer<2x96x64xf32>
    ```
  }];
  let assemblyFormat = [{
    $lhs `,` $rhs `,` $sizes `,` $out
    (`scales` `(` $scale_lhs^ `,` $scale_rhs `:`
     qualified(type($scale_lhs)) `,` qualified(type($scale_rhs)) `)`)?
    (`on` $stream^)? attr-dict `:` qualified(type($lhs)) `,`
    qualified(type($rhs)) `,` qualified(type($sizes)) `,`
    qualified(type($out))
  }];
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

def Sched_CopyOp : Sched_Instr<"copy", [
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "a strided copy that may change the element type";
  let description = [{
    `src` and `dst` are [offset, stride_0, ..., stride_(r-1)] in elements
    of each buffer, r the rank of `sizes`. For every index i of `sizes`:
    dest[dst_0 + Σ i_d · dst_(d+1)] = convert(source[src_0 + Σ i_d ·
    src_(d+1)]); a conversion to a float type rounds to nearest even, to
    an integer type truncates toward zero (as `weft.cast`). With `by_rank`
    (axes of `mesh` and a step), the source offset grows by r · step, r the
    rank's position in the group of those axes: one rank's block of a
    replicated tensor (`weft.shard_slice`). A transpose, slice, broadcast (stride 0 in the source),
    one part of a concatenation, a cast and the widening copy a kernel
    computing in f32 needs are all copies. Both sides stay inside their
    buffers; a destination stride is 0 only along a dimension of size 1.

    ```mlir
    sched.copy %a -> %b sizes [4, 8] src [0, 1, 4] dst [0, 4, 1]
        : !sched.buffer<8x4xf32> -> !sched.buffer<4x8xbf16>
    ```
  }];
  let arguments = (ins Sched_In:$source, Sched_Out:$dest,
                       DenseI64ArrayAttr:$sizes,
                       DenseI64ArrayAttr:$src, DenseI64ArrayAttr:$dst,
                       OptionalAttr<FlatSymbolRefAttr>:$mesh,
                       OptionalAttr<StrArrayAttr>:$rank_axes,
                       OptionalAttr<Sched_I64Attr>:$rank_step,
                       Sched_Stream:$stream);
  let assemblyFormat = [{
    $source `->` $dest `sizes` $sizes `src` $src `dst` $dst
    (`by_rank` `(` $mesh^ $rank_axes `*` $rank_step `)`)? (`on` $stream^)?
    attr-dict `:` type($source) `->` type($dest)
  }];
  let hasVerifier = 1;
}

def Sched_FillOp : Sched_Instr<"fill"> {
  let summary = "set every element of a buffer";
  let description = [{
    Writes `value`, rounded to the buffer's element type, to every element
    (zeroing a gradient accumulator, padding a bucket).
  }];
  let arguments = (ins Sched_Out:$dest, F64Attr:$value, Sched_Stream:$stream);
  let assemblyFormat = [{
    $dest `value` $value (`on` $stream^)? attr-dict `:` type($dest)
  }];
}

//===----------------------------------------------------------------------===//
// Communication
//===----------------------------------------------------------------------===//

def Sched_CollectiveOp : Sched_Instr<"collective", [
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "a collective over the group of some mesh axes";
  let description = [{
    Over the G ranks that differ only along `axes` of `mesh`, ordered by
    their coordinate along those axes (row-major), with `in` of n elements:
    - `all_reduce`: out (n elements) = the reduction of every member's in;
      `in` and `out` may be the same buffer.
    - `all_gather`: out (G·n) = the members' ins concatenated in order.
    - `reduce_scatter`: out (n / G) = block r of the reduction, r the
      rank's position in the group.
    - `all_to_all`: in and out of n = G·c elements; block j of a member's
      in goes to member j, where it is block i (i the sender). Any element
      type (an expert route's i32 counts move as stored); blocks of
      variable length are `sched.ragged_all_to_all`.
    `reduction` is `sum`, `max` or `mean` for all_reduce and
    reduce_scatter and `none` otherwise. Element types are equal.

    ```mlir
    sched.collective all_reduce sum %g -> %g over @mesh ["dp"] on "comm"
        : !sched.buffer<1024xf32> -> !sched.buffer<1024xf32>
    ```
  }];
  let arguments = (ins Sched_CollectiveKind:$kind, Sched_Reduction:$reduction,
                       Sched_In:$input, Sched_Out:$output,
                       FlatSymbolRefAttr:$mesh, StrArrayAttr:$axes,
                       Sched_Stream:$stream);
  let assemblyFormat = [{
    $kind $reduction $input `->` $output `over` $mesh $axes (`on` $stream^)? attr-dict `:` type($input) `->`
    type($output)
  }];
  let hasVerifier = 1;
}

def Sched_RaggedAllToAllOp : Sched_Instr<"ragged_all_to_all", [
    DeclareOpInterfaceMethods<SymbolUserOpInterface>,
    DeclareOpInterfaceMethods<Sched_ScratchOpInterface>]> {
  let summary = "exchange row segments of variable length over a group";
  let description = [{
    `weft.ragged_all_to_all` over the G ranks of the group of `axes`:
    `input` [N, D] holds consecutive segments of `send_sizes` [G·a] rows
    (i32), segment i for member i / a; `output` [M, D] gets the segments of
    `recv_sizes` [G·b], segment i from member i / b, packed in that order,
    and zeros after them. Sizes that overrun either buffer fail the step;
    a member's sends must match what its peers expect. On a GPU the
    exchange is a fixed all-to-all of blocks padded to N rows, packed and
    unpacked by kernels from the sizes on the device (no host sync, so CUDA
    graphs keep it), in `scratch` (scratch::raggedLayout).

    ```mlir
    sched.ragged_all_to_all %rows, %counts, %recv -> %out over @mesh ["ep"]
        : !sched.buffer<32x64xf32>, !sched.buffer<8xi32>,
          !sched.buffer<8xi32> -> !sched.buffer<64x64xf32>
    ```
  }];
  let arguments = (ins Sched_In:$input, Sched_In:$send_sizes,
                       Sched_In:$recv_sizes, Sched_Out:$output,
                       Sched_OptionalInOut:$scratch,
                       FlatSymbolRefAttr:$mesh, StrArrayAttr:$axes,
                       Sched_Stream:$stream);
  let assemblyFormat = [{
    $input `,` $send_sizes `,` $recv_sizes `->` $output
    (`scratch` `(` $scratch^ `:` type($scratch) `)`)? `over` $mesh $axes
    (`on` $stream^)? attr-dict `:` type($input) `,` type($send_sizes) `,`
    type($recv_sizes) `->` type($output)
  }];
  let hasVerifier = 1;
}

class Sched_PointToPointOp<string mnemonic, string direction,
                           Arg buffer>
    : Sched_Instr<mnemonic, [DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let arguments = (ins buffer:$buffer, FlatSymbolRefAttr:$mesh,
                       StrAttr:$axis, Sched_I64Attr:$delta, Sched_I64Attr:$tag,
                       Sched_Stream:$stream);
  let assemblyFormat = "$buffer `" # direction # "` $mesh $axis `offset` $delta "
                       "`tag` $tag (`on` $stream^)? attr-dict `:` type($buffer)";
}

def Sched_SendOp : Sched_PointToPointOp<"send", "to", Sched_In> {
  let summary = "send a buffer to a peer";
  let description = [{
    Sends `buffer` to the rank whose coordinate along `axis` is this
    rank's plus `delta` (mod the axis size; every other coordinate equal),
    matched by that rank's `sched.recv` with the same tag and -delta.
    Pipeline stages pass activations forward (+1) and gradients back (-1);
    ring attention passes key/value blocks around the `cp` ring.

    ```mlir
    sched.send %act to @mesh "pp" offset 1 tag 0 on "comm" : !sched.buffer<4x64xbf16>
    ```
  }];
}

def Sched_RecvOp : Sched_PointToPointOp<"recv", "from", Sched_Out> {
  let summary = "receive a buffer from a peer";
  let description = [{
    Receives into `buffer` what the rank at coordinate + `delta` along
    `axis` sends with the same tag and the same type.
  }];
}

def Sched_RingShiftOp : Sched_Instr<"ring_shift", [
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "pass a buffer one step round the ring of a mesh axis";
  let description = [{
    `weft.ring_shift` as one exchange: every rank sends `input` to the rank
    at its coordinate along `axis` plus `delta` (mod the axis size) and
    receives into `output` (of `input`'s type) what the rank at minus
    `delta` sends, both at once (NCCL's grouped send and receive, so a ring
    of ranks cannot wait on itself). On a GPU the lowering issues it on the
    comm stream beside compute; on the CPU the ring shifts become separate
    `sched.send` / `sched.recv` (weft-split-ring-shifts) instead. `tag`
    tells one shift's messages from another's where the transport has
    tags.

    ```mlir
    sched.ring_shift %k -> %k1 over @mesh "cp" offset 1 tag 1048576 on "comm"
        : !sched.buffer<2x8x2x16xf32> -> !sched.buffer<2x8x2x16xf32>
    ```
  }];
  let arguments = (ins Sched_In:$input, Sched_Out:$output,
                       FlatSymbolRefAttr:$mesh, StrAttr:$axis,
                       Sched_I64Attr:$delta, Sched_I64Attr:$tag,
                       Sched_Stream:$stream);
  let assemblyFormat = [{
    $input `->` $output `over` $mesh $axis `offset` $delta `tag` $tag
    (`on` $stream^)? attr-dict `:` type($input) `->` type($output)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Streams and events
//===----------------------------------------------------------------------===//

def Sched_RecordOp : Sched_Instr<"record"> {
  let summary = "mark where a stream has got to";
  let description = [{
    Event `event` completes when every instruction queued on the stream
    before it has.
  }];
  let arguments = (ins Sched_I64Attr:$event, Sched_Stream:$stream);
  let assemblyFormat = "$event (`on` $stream^)? attr-dict";
}

def Sched_WaitOp : Sched_Instr<"wait"> {
  let summary = "hold a stream until an event completes";
  let description = [{
    Instructions queued on the stream after the wait start only once the
    latest `sched.record` of `event` before it (on another stream) has
    completed.
  }];
  let arguments = (ins Sched_I64Attr:$event, Sched_Stream:$stream);
  let assemblyFormat = "$event (`on` $stream^)? attr-dict";
}

#endif // SCHED_OPS_TD
