//===- Passes.td - precision rewrites -----------------------*- tablegen -*-===//

#ifndef WEFT_PASSES_PRECISION_TD
#define WEFT_PASSES_PRECISION_TD

include "mlir/Pass/PassBase.td"

def Fp8 : Pass<"weft-fp8", "::mlir::ModuleOp"> {
  let summary = "Run the forward's weight GEMMs in FP8 by a scaling recipe";
  let description = [{
    Runs on the forward (every function of the module, before partitioning
    and autodiff). Each
    `weft.matmul` that reads a parameter (directly or through a cast,
    reshape or slice of it), and each expert `weft.grouped_matmul` under a
    recipe with per-row activation scales (rowwise, blockwise, mxfp8: the
    scales go with the packed rows to their experts' ranks; each expert's
    weight is scaled on its own), becomes a GEMM of FP8 operands: each operand
    goes through `weft.fp8_amax` and `weft.fp8_quantize` and the result
    through `weft.fp8_quantize_grad`, so the backward's two GEMMs read FP8
    operands (see backward_block below) and an FP8 output gradient. Partitioning then
    splits the maxima with the tensors: a block that spans ranks (a
    per-tensor or per-row scale of a split tensor) takes its maximum by a
    max all-reduce over them, as Transformer Engine reduces amax over the
    tensor-parallel group. Each operand is cut into blocks along its
    contraction dimension, by `recipe`:

      recipe      activation, out grad   weight            format (x, w / dy)
      tensorwise  whole tensor           whole tensor      E4M3 / E5M2
      tensorwise-delayed  as tensorwise, scales from earlier steps
      rowwise     one row (1 x K)        one column (K x 1) E4M3 / E4M3
      blockwise   1 x 128 tiles          128 x 128 blocks  E4M3 / E4M3
      mxfp8       1 x 32, E8M0 scales    32 x 1, E8M0      E4M3 / E4M3

    (tensorwise is Transformer Engine's current scaling with its hybrid
    formats; tensorwise-delayed its DelayedScaling: each quantized tensor
    keeps an amax history of `history` steps in a state parameter, its
    scale comes from the history's largest maximum times 2^`margin` (the
    current one on the first step, as torchao does), and
    weft-fp8-record-amax records each step's maximum; rowwise torchao's; blockwise DeepSeek-V3's; mxfp8 the OCP MX
    format as Blackwell runs it.) A GEMM stays as it is when its
    contraction or output dimension is not a multiple of 16 (cuBLASLt's
    FP8 rule) or of the recipe's block, is below `min-dim`, reads a
    parameter of a layer `keep` names (`head`: parameters outside the
    layers, the LM head; `first`, `last`), or would not gain on `device`.

    With `device` (a topology preset or file, as weftc's --topology), each
    GEMM is judged at the shapes one rank runs it at: a copy of the module
    is placed by `plan` (weft-apply-plan, weft-sharding-propagate and
    weft-partition, as the training pipeline places it) and each GEMM's
    local operands read from it. The GEMM stays in the model's precision
    unless its three GEMMs (forward, input and weight gradients) at the
    device's fp8 peak plus the quantizations it adds (each quantized
    element read twice in the model's precision and written once as a
    byte; an input several GEMMs share counts its share; a backward
    re-quantization counts again) take less time than the three at the
    model's peak, by the cost model's roofline (Fp8Gain.h). Dropping a
    GEMM can leave a shared quantization to fewer readers, so the judgement
    repeats until nothing more drops. A device with no fp8 peak (a CPU,
    which emulates FP8) judges nothing. The function gets
    `weft.fp8_no_gain`: the weights of the GEMMs that stayed for that. A bf16 model's operands are
    quantized as stored (no f32 copy): the maxima read bf16 and the
    dequantized values are bf16, rounded (2^-9 beside FP8's 2^-4; exact
    under mxfp8, whose scales are powers of two). Tiles (blockwise,
    mxfp8) are never cut under placement: a tiled dimension splits only
    between whole tiles, else it is gathered.

    Each quantization also gets the `backward_block` its backward GEMM
    re-quantizes it by, where the forward's blocks are one element thick
    along that GEMM's contraction (autodiff's matmul rule reads it): x
    and the output gradient along the tokens for the weight gradient
    (row-wise: whole columns; blockwise and mxfp8: 128 x 1 and 32 x 1
    tiles when the sequence is a multiple of them), a row-wise or MXFP8
    weight along its output features for the input gradient. So every FP8
    GEMM of the step has scales constant along its contraction, as a GPU's
    scaled GEMM needs. Expert GEMMs' weight gradients sum over each
    expert's rows, no fixed block: the expert input's quantization and the
    output gradient's mark get `group_rows` (0 row-wise, 128 blockwise, 32
    mxfp8), and autodiff quantizes both again in tiles of that many of an
    expert's rows (`weft.fp8_group_quantize`) for the weight gradient.

    GEMMs reading one value share its quantization (not under delayed
    scaling, whose histories are per GEMM). The function gets `weft.fp8` (the recipe), `weft.fp8_gemms` (how many
    GEMMs it quantized) and `weft.fp8_bytes`: the bytes those GEMMs' FP8
    operands (x, w and the output gradient, with their scales: f32, one
    byte under mxfp8) take, and the same operands in bf16.

    ```mlir
    // recipe=blockwise: y = x @ w, x [8, 256], w [256, 128]
    %xa = weft.fp8_amax %x : tensor<8x256xf32> -> tensor<8x2xf32>
    %xq = weft.fp8_quantize %x, %xa {format = f8E4M3FN} : tensor<8x256xf32>, tensor<8x2xf32>
    %wa = weft.fp8_amax %w : tensor<256x128xf32> -> tensor<2x1xf32>
    %wq = weft.fp8_quantize %w, %wa {format = f8E4M3FN} : tensor<256x128xf32>, tensor<2x1xf32>
    %y = weft.matmul %xq, %wq : tensor<8x256xf32>, tensor<256x128xf32>
    %y1 = weft.fp8_quantize_grad %y {block = array<i64: 1, 128>, format = f8E4M3FN} : tensor<8x128xf32>
    ```
  }];
  let options = [
    Option<"recipe", "recipe", "std::string", /*default=*/"\"none\"",
           "none, tensorwise, tensorwise-delayed, rowwise, blockwise or "
           "mxfp8, or one per layer with runs (none*4,tensorwise*28; GEMMs "
           "outside the layers take the last layer's)">,
    Option<"keep", "keep", "std::string", /*default=*/"\"head\"",
           "Layers whose GEMMs stay in the model's precision: a comma list "
           "of head, first, last (or none)">,
    Option<"minDim", "min-dim", "int64_t", /*default=*/"0",
           "GEMMs with a contraction or output dimension below this stay">,
    Option<"history", "history", "int64_t", /*default=*/"16",
           "tensorwise-delayed: the steps of amax history">,
    Option<"margin", "margin", "int64_t", /*default=*/"0",
           "tensorwise-delayed: scales divided by 2^margin">,
    Option<"device", "device", "std::string", /*default=*/"\"\"",
           "A topology preset or file: GEMMs that would not gain from FP8 "
           "on its device, at one rank's shapes, stay (empty: none judged)">,
    Option<"plan", "plan", "std::string", /*default=*/"\"\"",
           "With device: the plan the forward will be placed by (as "
           "weft-apply-plan's), for each rank's shapes">
  ];
  let dependentDialects = ["::weft::WeftDialect"];
}

def Fp8Gather : Pass<"weft-fp8-gather", "::mlir::func::FuncOp"> {
  let summary = "Gather FP8 values after quantizing, not before";
  let description = [{
    Runs after partitioning. A `weft.all_gather` read only by
    `weft.fp8_amax` and `weft.fp8_quantize` (a ZeRO-3 weight gathered for
    its quantization, a tensor-parallel weight or sequence-parallel
    activation gathered whole for a per-tensor scale) is moved after the
    quantization when no block straddles two shards. Each maximum is
    taken on the shard: a block that spans the gathered dimension (a
    per-tensor scale; a row-wise weight contracted along it) has the
    shards' maxima max all-reduced over the gather's axes, and a block
    inside a shard (a row-wise weight's rows, 128 x 128 blocks of a
    128-row-aligned shard, MXFP8's 1 x 32 blocks) has the shard's own,
    gathered along the dimension for any other reader. Each quantization
    reads the shard by those maxima (its `backward_block` made the
    shard's: a block spanning the gathered dimension spans the shard, its
    axes recorded as `weft.backward_amax_axes` for the backward's
    re-quantization), and the quantized values are gathered. Every
    element is quantized by its own block's scale either way, so the
    gathered values are the same to the bit; what moves is the quantized
    tensor, which FP8 storage (weft-lower-to-sched's fp8-storage) then
    moves as FP8 codes with their scales, a quarter of f32's bytes, as
    torchao's float8 all-gather does for FSDP2. An expert layer's
    quantization (`group_rows`) stays: its weight gradient re-quantizes
    the input. With `params=false` a gather of a parameter (ZeRO-3's)
    stays, for weft-gather-per-step to gather once a step for every
    micro-batch; that pass quantizes in its @gather what it can, and this
    pass with `func=gather` then moves those gathers (a pipeline's stage
    attribute goes with each maximum's all-reduce).

    ```mlir
    %w = weft.all_gather %shard over @mesh ["dp"] dim 0 : tensor<32x64xf32> -> tensor<64x64xf32>
    %a = weft.fp8_amax %w : tensor<64x64xf32> -> tensor<1x1xf32>
    %q = weft.fp8_quantize %w, %a {format = f8E4M3FN} : tensor<64x64xf32>, tensor<1x1xf32>
    // becomes
    %a0 = weft.fp8_amax %shard : tensor<32x64xf32> -> tensor<1x1xf32>
    %a = weft.all_reduce max %a0 over @mesh ["dp"] : tensor<1x1xf32>
    %q0 = weft.fp8_quantize %shard, %a {format = f8E4M3FN} : tensor<32x64xf32>, tensor<1x1xf32>
    %q = weft.all_gather %q0 over @mesh ["dp"] dim 0 : tensor<32x64xf32> -> tensor<64x64xf32>
    ```
  }];
  let options = [
    Option<"params", "params", "bool", /*default=*/"true",
           "Also move the gathers of parameters (ZeRO-3's)">,
    Option<"func", "func", "std::string", /*default=*/"\"\"",
           "Only in the function of this name (every function when empty)">
  ];
  let dependentDialects = ["::weft::WeftDialect"];
}

def Fp8RecordAmax : Pass<"weft-fp8-record-amax", "::mlir::ModuleOp"> {
  let summary = "Record each step's FP8 block maxima into their amax histories";
  let description = [{
    Delayed scaling's update, on the program that updates parameters (the
    optimizer step, `func`): each `weft.fp8_amax` that names an amax
    history (`weft.amax_history`, set by weft-fp8 and by the gradient of
    `weft.fp8_quantize_grad`) has its value, after the max all-reduce that
    partitioning put after it if any, pushed onto the front of that state
    parameter's history, the oldest step dropping off:
    `weft.assign "h", concat(amax, h[0 : H-1])`. Other functions (the
    forward, kept gradients) read the histories and change nothing.

    Under gradient accumulation the maxima are taken in `accumulate`, once
    per micro-batch: each is folded by max into a state parameter
    `<history>.step_max` there, which `func` pushes onto the history and
    sets back to 0, so a history gets one maximum a step, the whole
    batch's, as without micro-batches. A weight's maximum that
    weft-gather-per-step moved into @gather (taken once a step) is folded
    there the same way.

    ```mlir
    %a = weft.fp8_amax %x {weft.amax_history = "w.fp8.input_amax_history"} ...
    // ... at the end of @step:
    weft.assign "w.fp8.input_amax_history", %rolled : tensor<16xf32>
    ```
  }];
  let options = [
    Option<"func", "func", "std::string", /*default=*/"\"step\"",
           "The function whose step records">,
    Option<"accumulate", "accumulate", "std::string",
           /*default=*/"\"accumulate\"",
           "The function run once per micro-batch, if the module has one">
  ];
  let dependentDialects = ["::weft::WeftDialect"];
}

#endif // WEFT_PASSES_PRECISION_TD
