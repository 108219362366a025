//===- jit_train.cpp - build, JIT-compile and train a model in-process ----===//
//
// A host program's view of Weft: build a small next-token model with
// GraphBuilder, compile it with weft::Compiler, and train it on its own
// buffers. The data is a rule the model can learn: token t is followed by
// (3 t + 1) mod V.
//
//===----------------------------------------------------------------------===//

#include "compiler/Compiler.h"
#include "frontend/GraphBuilder.h"

#include <cstdio>
#include <random>
#include <vector>

int main() {
  const int64_t batch = 8, seq = 16, vocab = 32, dim = 32;
  weft::Compiler compiler;
  weft::GraphBuilder &g = compiler.newGraph();
  mlir::Type f32 = g.builder().getF32Type(), i32 = g.builder().getI32Type();
  mlir::Value tokens = g.input("tokens", {batch, seq}, i32);
  mlir::Value labels = g.input("labels", {batch, seq}, i32);
  mlir::Value table =
      g.param("embed.weight", {vocab, dim}, f32, weft::Init::normal(0.1));
  mlir::Value w1 =
      g.param("mlp.fc.weight", {dim, dim}, f32, weft::Init::normal(0.1));
  mlir::Value b1 = g.param("mlp.fc.bias", {dim}, f32, weft::Init::zeros());
  mlir::Value head =
      g.param("head.weight", {vocab, dim}, f32, weft::Init::normal(0.1));
  mlir::Value h = g.embedding(table, tokens);
  h = g.add(h, g.gelu(g.addBias(g.matmul(h, w1), b1)));
  mlir::Value logits = g.matmul(h, head, false, /*transposeRhs=*/true);
  g.setResults({g.crossEntropy(logits, labels), logits});

  weft::CompileOptions options;
  options.weightDecay = 0.0;
  auto exe = compiler.compileGraph(options);
  if (!exe.ok()) {
    std::fprintf(stderr, "compile failed: %s\n",
                 std::string(exe.status().message()).c_str());
    return 1;
  }

  std::mt19937 rng(0);
  std::uniform_int_distribution<int32_t> pick(0, vocab - 1);
  std::vector<int32_t> x(batch * seq), y(batch * seq);
  float first = 0, last = 0;
  for (int step = 1; step <= 60; ++step) {
    for (int64_t i = 0; i < batch * seq; ++i) {
      x[i] = pick(rng);
      y[i] = (3 * x[i] + 1) % vocab;
    }
    auto result = (*exe)->trainStep(x.data(), y.data(), 3e-2f);
    if (!result.ok()) {
      std::fprintf(stderr, "step failed: %s\n",
                   std::string(result.status().message()).c_str());
      return 1;
    }
    (step == 1 ? first : last) = result->loss;
    if (step % 20 == 0)
      std::printf("step %d loss %.4f grad_norm %.3f\n", step, result->loss,
                  result->gradNorm);
  }
  auto evalLoss = (*exe)->evaluate(x.data(), y.data());
  std::printf("loss %.4f -> %.4f (eval %.4f)\n", first, last,
              evalLoss.ok() ? *evalLoss : -1.f);
  if (last < 0.5f * first)
    std::printf("loss decreased\n");
  return 0;
}
