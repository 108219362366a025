//===- Passes.td - precision rewrites -----------------------*- tablegen -*-===//

#ifndef WEFT_PASSES_PRECISION_TD
#define WEFT_PASSES_PRECISION_TD

include "mlir/Pass/PassBase.td"

def Fp8 : Pass<"weft-fp8", "::mlir::func::FuncOp"> {
  let summary = "Run the forward's weight GEMMs in FP8 by a scaling recipe";
  let description = [{
    Runs on the forward (before partitioning and autodiff). Each
    `weft.matmul` that reads a parameter (directly or through a cast,
    reshape or slice of it) becomes a GEMM of FP8 operands: each operand
    goes through `weft.fp8_amax` and `weft.fp8_quantize` and the result
    through `weft.fp8_quantize_grad`, so the backward's two GEMMs read the
    same quantized operands and an FP8 output gradient. Partitioning then
    splits the maxima with the tensors: a block that spans ranks (a
    per-tensor or per-row scale of a split tensor) takes its maximum by a
    max all-reduce over them, as Transformer Engine reduces amax over the
    tensor-parallel group. Each operand is cut into blocks along its
    contraction dimension, by `recipe`:

      recipe      activation, out grad   weight            format (x, w / dy)
      tensorwise  whole tensor           whole tensor      E4M3 / E5M2
      rowwise     one row (1 x K)        one column (K x 1) E4M3 / E4M3
      blockwise   1 x 128 tiles          128 x 128 blocks  E4M3 / E4M3
      mxfp8       1 x 32, E8M0 scales    32 x 1, E8M0      E4M3 / E4M3

    (tensorwise is Transformer Engine's current scaling with its hybrid
    formats; rowwise torchao's; blockwise DeepSeek-V3's; mxfp8 the OCP MX
    format as Blackwell runs it.) A GEMM stays as it is when its
    contraction or output dimension is not a multiple of 16 (cuBLASLt's
    FP8 rule) or of the recipe's block, is below `min-dim`, or reads a
    parameter of a layer `keep` names: `head` (parameters outside the
    layers: the LM head), `first`, `last`. Operands that are not f32 are
    cast to f32 around their quantization; a bf16 model's dequantized
    values are then rounded to bf16 again (2^-9 beside FP8's 2^-4; exact
    under mxfp8, whose scales are powers of two). Blocks between one
    element and a whole dimension (blockwise, mxfp8) keep that dimension
    whole under placement: a tp split of it is gathered.

    The function gets `weft.fp8` (the recipe), `weft.fp8_gemms` (how many
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
           "none, tensorwise, rowwise, blockwise or mxfp8">,
    Option<"keep", "keep", "std::string", /*default=*/"\"head\"",
           "Layers whose GEMMs stay in the model's precision: a comma list "
           "of head, first, last (or none)">,
    Option<"minDim", "min-dim", "int64_t", /*default=*/"0",
           "GEMMs with a contraction or output dimension below this stay">
  ];
  let dependentDialects = ["::weft::WeftDialect"];
}

#endif // WEFT_PASSES_PRECISION_TD
