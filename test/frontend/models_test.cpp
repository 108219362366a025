//===- models_test.cpp - GPT-2, Llama and Mixtral from configs ------------===//

#include "compiler/reference/Weights.h"
#include "frontend/models/ModelConfig.h"
#include "test/compiler/TestUtils.h"

#include <chrono>
#include <cmath>

using namespace weft;
using reference::Tensor;

namespace {
ModelConfig loadConfig(const std::string &name) {
  auto config = ModelConfig::load(std::string(WEFT_SOURCE_DIR) +
                                  "/examples/configs/" + name + ".json");
  EXPECT_TRUE(static_cast<bool>(config)) << llvm::toString(config.takeError());
  return config ? *config : ModelConfig();
}

mlir::OwningOpRef<mlir::ModuleOp> build(mlir::MLIRContext &context,
                                        const ModelConfig &config,
                                        ModelBuildOptions options) {
  auto module = buildModel(context, config, options);
  EXPECT_TRUE(static_cast<bool>(module)) << llvm::toString(module.takeError());
  return module ? std::move(*module) : nullptr;
}
} // namespace

TEST(Models, FullSizeParameterCountsMatchPublishedSizes) {
  struct Expected {
    const char *name;
    int64_t params;
  };
  // GPT-2 small (tied head), Llama-3-8B, Mixtral-8x7B.
  for (Expected e :
       {Expected{"gpt2-124m", 124439808}, Expected{"llama3-8b", 8030261248},
        Expected{"mixtral-8x7b", 46702792704}}) {
    SCOPED_TRACE(e.name);
    ModelConfig config = loadConfig(e.name);
    EXPECT_EQ(config.analyticParameterCount(), e.params);
    auto context = testutil::makeContext();
    auto start = std::chrono::steady_clock::now();
    auto module = build(*context, config, {1, 1024, "bf16"});
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    ASSERT_TRUE(module);
    EXPECT_EQ(reference::countParameters(testutil::firstFunc(*module)),
              e.params);
    EXPECT_LT(seconds, 1.0) << "import took " << seconds << " s";
  }
}

TEST(Models, TinyGraphCountsMatchTheClosedForm) {
  for (const char *name : {"gpt2-tiny", "llama-tiny", "mixtral-tiny"}) {
    SCOPED_TRACE(name);
    ModelConfig config = loadConfig(name);
    auto context = testutil::makeContext();
    auto module = build(*context, config, {1, 4, "f32"});
    ASSERT_TRUE(module);
    EXPECT_EQ(reference::countParameters(testutil::firstFunc(*module)),
              config.analyticParameterCount());
  }
  // Worked by hand for gpt2-tiny (V=256, P=128, D=64, L=2, F=256):
  // wte 16384 + wpe 8192 + 2 * (256 + 12480 + 4160 + 16640 + 16448) + ln_f 128.
  EXPECT_EQ(loadConfig("gpt2-tiny").analyticParameterCount(), 124672);
}

TEST(Models, RandomlyInitialisedModelsPredictUniformly) {
  // With N(0, 0.02) weights the logits are nearly flat, so the mean loss on
  // random tokens is close to ln(vocab).
  for (const char *name : {"gpt2-tiny", "llama-tiny", "mixtral-tiny"}) {
    for (const char *dtype : {"f32", "bf16"}) {
      SCOPED_TRACE(std::string(name) + " " + dtype);
      auto context = testutil::makeContext();
      auto module = build(*context, loadConfig(name), {2, 32, dtype});
      ASSERT_TRUE(module);
      std::mt19937 rng(11);
      auto r = testutil::run(*module,
                             {testutil::randomIds({2, 32}, 256, rng),
                              testutil::randomIds({2, 32}, 256, rng)},
                             reference::Precision::F32, /*seed=*/3);
      ASSERT_EQ(r.size(), 2u);
      EXPECT_NEAR(r[0].data[0], std::log(256.0), 0.05);
      EXPECT_EQ(r[1].shape, (std::vector<int64_t>{2, 32, 256}));
    }
  }
}

TEST(Models, CheckpointsMapOntoParametersOneToOne) {
  auto context = testutil::makeContext();
  auto module = build(*context, loadConfig("gpt2-tiny"), {1, 8, "f32"});
  ASSERT_TRUE(module);
  mlir::func::FuncOp func = testutil::firstFunc(*module);
  // Save the seed-5 initialisation under the original GPT-2 checkpoint names
  // (no "transformer." prefix), load it back and evaluate.
  std::vector<runtime::TensorToWrite> tensors;
  func.walk([&](ParamOp p) {
    Tensor t = reference::initialParamValue(p, 5);
    // Checkpoints hold c_attn as GPT-2 stores it, [d, 3d].
    if (auto held = p->getAttrOfType<mlir::DenseI64ArrayAttr>(
            weft::kCheckpointShapeAttr))
      t.shape.assign(held.asArrayRef().begin(), held.asArrayRef().end());
    std::string name = p.getName().str();
    if (llvm::StringRef(name).starts_with("transformer."))
      name = name.substr(12);
    tensors.push_back({name, runtime::DType::F32, t.shape, t.data});
  });
  std::string path = testutil::uniqueTempPath("gpt2-tiny.safetensors");
  ASSERT_TRUE(runtime::writeSafetensors(path, tensors).ok());
  auto file = runtime::SafetensorsFile::read(path);
  ASSERT_TRUE(file.ok()) << file.status();

  std::mt19937 rng(2);
  std::vector<Tensor> inputs = {testutil::randomIds({1, 8}, 256, rng),
                                testutil::randomIds({1, 8}, 256, rng)};
  auto provider = reference::safetensorsProvider(func, *file);
  ASSERT_TRUE(provider.ok()) << provider.status();
  auto fromFile = reference::evaluate(func, inputs, *provider);
  ASSERT_TRUE(mlir::succeeded(fromFile));
  auto fromSeed = testutil::run(*module, inputs, reference::Precision::F32, 5);
  EXPECT_EQ((*fromFile)[0].data, fromSeed[0].data);
  EXPECT_EQ((*fromFile)[1].data, fromSeed[1].data);
}

TEST(Models, InvalidBuildOptions) {
  auto context = testutil::makeContext();
  ModelConfig config = loadConfig("llama-tiny");
  auto tooLong = buildModel(*context, config, {1, 129, "f32"});
  ASSERT_FALSE(static_cast<bool>(tooLong));
  EXPECT_EQ(llvm::toString(tooLong.takeError()),
            "sequence length 129 exceeds the model's 128 positions");
  auto zero = buildModel(*context, config, {0, 8, "f32"});
  ASSERT_FALSE(static_cast<bool>(zero));
  EXPECT_EQ(llvm::toString(zero.takeError()),
            "batch (0) and sequence length (8) must be positive");
}

TEST(Models, ConfigDiagnostics) {
  auto error = [](llvm::StringRef json) {
    auto config = ModelConfig::parse(json, "c.json");
    EXPECT_FALSE(static_cast<bool>(config));
    return config ? std::string() : llvm::toString(config.takeError());
  };
  EXPECT_EQ(error(R"({"vocab_size": 3})"),
            "c.json: missing required field 'model_type'");
  EXPECT_EQ(error("[]"), "c.json: config must be a JSON object");
  EXPECT_EQ(error(R"({"model_type": "llama", "vocab_size": 8, "hidden_size": 8,
                      "intermediate_size": 8, "num_hidden_layers": 1,
                      "num_attention_heads": 2, "rope_scaling": {"type": "llama3"}})"),
            "c.json: rope_scaling is not supported yet; it must be null");
  EXPECT_EQ(error(R"({"model_type": "llama", "vocab_size": 8, "hidden_size": 8,
                      "intermediate_size": 8, "num_hidden_layers": 1,
                      "num_attention_heads": 2, "head_dim": 3})"),
            "c.json: head_dim 3 must be even for rotary embeddings");
  EXPECT_EQ(
      error(
          R"({"model_type": "gpt2", "vocab_size": 8, "n_positions": 8, "n_embd": 8,
                      "n_layer": 1, "n_head": 2, "activation_function": "relu"})"),
      "c.json: activation_function 'relu' is not supported (gelu_new, "
      "gelu_pytorch_tanh)");
  EXPECT_EQ(error(R"({"model_type": "llama", "vocab_size": 8, "hidden_size": 8,
                      "intermediate_size": 8, "num_hidden_layers": 1,
                      "num_attention_heads": 2, "tie_word_embeddings": 1})"),
            "c.json: field 'tie_word_embeddings' must be true or false");
  EXPECT_EQ(error(R"({"model_type": 2})"),
            "c.json: field 'model_type' must be a string (gpt2, llama, "
            "mixtral)");
  EXPECT_EQ(
      error(
          R"({"model_type": "gpt2", "vocab_size": 8, "n_positions": 8, "n_embd": 8,
                      "n_layer": 1, "n_head": 2, "activation_function": 1})"),
      "c.json: field 'activation_function' must be a string (gelu_new, "
      "gelu_pytorch_tanh)");
  EXPECT_EQ(error(R"({"model_type": "llama", "vocab_size": 8, "hidden_size": 8,
                      "intermediate_size": 8, "num_hidden_layers": 1,
                      "num_attention_heads": 2, "hidden_act": ["silu"]})"),
            "c.json: field 'hidden_act' must be a string (silu)");
}

TEST(Models, ConfigWarnsOfKeysOneEditFromAField) {
  // Unknown keys are accepted (Hugging Face's own), but one a letter away
  // from a field the family reads is named with the field.
  auto config = ModelConfig::parse(
      R"({"model_type": "gpt2", "vocab_size": 8, "n_positions": 8, "n_embd": 8,
          "n_layer": 1, "n_head": 2, "n_iner": 12, "bos_token_id": 0})",
      "c.json");
  ASSERT_TRUE(static_cast<bool>(config)) << llvm::toString(config.takeError());
  EXPECT_EQ(config->intermediateSize, 4 * 8); // n_iner is ignored.
  ASSERT_EQ(config->warnings.size(), 1u);
  EXPECT_EQ(config->warnings[0],
            "c.json: key 'n_iner' is not a field Weft reads and is ignored; "
            "did you mean 'n_inner'?");
  for (const char *name : {"gpt2-124m", "gpt2-tiny", "llama3-8b", "llama-tiny",
                           "mixtral-8x7b", "mixtral-tiny"})
    EXPECT_TRUE(loadConfig(name).warnings.empty()) << name;
}
