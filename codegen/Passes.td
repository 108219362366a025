//===- Passes.td - codegen: weft -> sched -------------------*- tablegen -*-===//

#ifndef WEFT_CODEGEN_PASSES_TD
#define WEFT_CODEGEN_PASSES_TD

include "mlir/Pass/PassBase.td"

def LowerToSched : Pass<"weft-lower-to-sched", "::mlir::ModuleOp"> {
  let summary = "Lower planned weft programs to sched programs";
  let description = [{
    Turns every function of a module whose elementwise ops are fused
    (weft-fusion-group, single-ops) into a `sched.program` of the same
    name, unplanned (no arena offsets yet: weft-sched-plan-memory places
    its buffers), and declares what the programs share: the mesh
    (`sched.mesh`), the parameters and optimizer state (`sched.param`,
    with their shard split), the constants (`sched.constant`) and the
    generated kernels (`sched.kernel`, named by the kernel generator's
    `weft.kernel`). Programs `step` and `forward` get schedule tables
    `@train` and `@eval`.

    Every decision about how an op runs is made here, once, per target:
    which library instruction or GEMM, the GEMM's layout (one GEMM of B·M
    rows for a batch by one weight), the attention algorithm (scores in
    scratch when they fit `attention-scratch-mb`, else FlashAttention; the
    CPU always runs row by row), f32 copies of narrow values for kernels
    that compute in f32 (on the CPU every kernel; on the GPU all but the
    generated kernels, reductions, bf16 cross-entropy and all-bf16 norm
    gradients), the packing of collective buckets and of collectives along
    an inner dimension, and generated kernels' launch grids. An op with no
    lowering is an error naming it.

    With `fp8-storage` (`auto`: on for cuda), a `weft.fp8_quantize`
    whose every reader is a GEMM (through reshapes, at most one gather)
    whose other operand is one too, with m, n and k multiples of 16 and
    blocks some scale mode reads (per tensor, per row, 1 x 128 by
    128 x 128, MXFP8's 1 x 32), becomes `sched.fp8_cast` (FP8 codes and
    1 / s, transposed where cuBLASLt's k-contiguous layout needs it) and
    its GEMMs `sched.gemm` or `sched.grouped_matmul` with FP8 operands and
    scales; the f32 values are not written. Through a gather (a shard
    quantized by weft-fp8-gather) the codes are gathered, and block scales
    with them: each shard is cast in the layout its GEMM reads and its
    scales gather into the operand's where its blocks tile it. An expert
    weight gradient's
    group quantizations become `sched.fp8_group_cast` and its
    `sched.grouped_matmul_wgrad` reads their codes. A quantization only
    all-gathers read, whose gathered values are read as values
    (weft-gather-per-step's quantized state), is encoded
    (`sched.fp8_encode`), its codes gathered, and decoded on arrival
    (`sched.fp8_decode`) by its maxima where every rank has the same, else
    by each shard's gathered.
  }];
  let options = [
    Option<"target", "target", "std::string", /*default=*/"\"cpu\"",
           "What the bundle runs on: cpu or cuda">,
    Option<"attentionScratchMb", "attention-scratch-mb", "int64_t",
           /*default=*/"4096",
           "GPU attention materialises scores up to this many MiB">,
    Option<"fp8Storage", "fp8-storage", "std::string", /*default=*/"\"auto\"",
           "FP8 GEMM operands as FP8 codes and scales: auto (on for cuda), "
           "on or off">
  ];
  let dependentDialects = ["::weft::sched::SchedDialect"];
}

def PrefetchGathers : Pass<"weft-sched-prefetch-gathers",
                            "::weft::sched::ProgramOp"> {
  let summary = "Issue parameter all-gathers ahead of their readers";
  let description = [{
    Partitioning gathers a ZeRO-3 or tensor-parallel parameter just before
    its first reader; on the GPU's comm stream (weft-sched-assign-streams,
    which runs next) compute would then wait for each gather in turn. This
    pass moves each parameter gather (an all-gather of a parameter's
    buffer, or of a buffer a few instructions made from parameters alone:
    the master weight's shard narrowed to the compute type, or an FP8
    weight's shard cast to codes and scales by its maxima, max
    all-reduced), with those instructions and the buffers they name, to
    just before the first reader
    of an earlier gather, so it moves while compute runs, as FSDP
    prefetches the next layer's parameters. The earlier gather is the
    earliest whose later gathers, up to this one, hold at most the largest
    gather's bytes: about one weight's worth waits gathered ahead of its
    reader, which the memory plan then keeps live. Gathers keep their
    order, and none moves above an instruction that writes a parameter it
    reads (the optimizer's update before ZeRO's gather of the new values).
  }];
  let dependentDialects = ["::weft::sched::SchedDialect"];
}

def DeferReductionReaders : Pass<"weft-sched-defer-reduction-readers",
                                  "::weft::sched::ProgramOp"> {
  let summary = "Read each reduction one reader later, under compute";
  let description = [{
    With micro-batches, ZeRO-2 and 3 reduce-scatter each micro-batch's
    gradients as the backward makes them, and the kernel adding each shard
    into its accumulator follows right after; on the GPU's comm stream
    (weft-sched-assign-streams, which runs next, makes compute wait just
    before a collective's first reader) compute would wait for every
    reduction in turn. This pass moves the first reader of each
    reduce-scatter or all-reduce, where that reader only updates parameters
    in place (the accumulators), to just before the next such reader, so
    each reduction runs under the next layer's backward (DDP's buckets'
    overlap). A reader does not move past an instruction that touches what
    it writes or writes what it reads.
  }];
  let dependentDialects = ["::weft::sched::SchedDialect"];
}

def AssignStreams : Pass<"weft-sched-assign-streams",
                          "::weft::sched::ProgramOp"> {
  let summary = "Put collectives on a communication stream, ordered by events";
  let description = [{
    GPU programs overlap communication with computation: this pass moves
    every `sched.collective` and `sched.ring_shift` (ring attention's block
    exchange) of an unplanned program to the stream `comm`
    (declared on the program) and orders it with events. Before each
    collective, a `sched.record` on `compute` and a `sched.wait` on `comm`
    let it start once what it reads is written. After it, a `sched.record`
    on `comm` is waited for on `compute` just before the first later
    instruction that touches a buffer the collective touches (reads what it
    wrote, or overwrites what it reads), so the compute stream runs ahead
    until it needs the result (the gradient all-reduce of one bucket under
    the backward of the next). A vocabulary-parallel cross-entropy, which
    combines its statistics over its group on the compute stream, first
    waits for everything given to `comm` so far: two collectives in flight
    on two streams can deadlock NCCL. The program verifier's stream check proves
    the result race-free; weft-sched-plan-memory keeps a buffer a
    collective uses alive until its wait.
  }];
  let dependentDialects = ["::weft::sched::SchedDialect"];
}

#endif // WEFT_CODEGEN_PASSES_TD
