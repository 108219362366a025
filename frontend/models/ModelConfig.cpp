//===- ModelConfig.cpp - parse and validate Hugging Face configs ----------===//

#include "frontend/models/ModelConfig.h"

#include "frontend/models/Families.h"
#include "runtime/support/Files.h"
#include "runtime/support/Json.h"

#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <cmath>

using namespace llvm;

namespace weft {
namespace {
/// The largest size a config field may give: 2^24 (16M) is more than any
/// published model's vocabulary, width or context.
constexpr int64_t kMaxSize = int64_t(1) << 24;
/// The most layers: no published model has more than a few hundred.
constexpr int64_t kMaxLayers = 4096;
/// The most parameters a config may describe (2^46, about 70T).
constexpr int64_t kMaxParameters = int64_t(1) << 46;
/// The largest config file read: a config.json is a few kilobytes, so this
/// only stops a wrong path (a checkpoint, /dev/zero) from being read whole.
constexpr size_t kMaxConfigBytes = size_t(16) << 20;

/// Reads fields of one config object, collecting the first error. Every
/// field is read through it, so it also knows which keys the family reads
/// (`isRead`).
class FieldReader {
public:
  FieldReader(const json::Object &obj, StringRef label)
      : obj(obj), label(label) {}

  Error error(const Twine &message) {
    return createStringError(inconvertibleErrorCode(), label + ": " + message);
  }

  /// The value of `key`, null when absent; marks the key as read.
  const json::Value *get(StringRef key) {
    read.insert(key);
    return obj.get(key);
  }
  /// A key this reader was asked for that is one edit (a letter added,
  /// dropped or changed) away from `key`; empty when there is none.
  StringRef nearestRead(StringRef key) const {
    for (const auto &field : read)
      if (key != field.getKey() &&
          key.edit_distance(field.getKey(), /*AllowReplacements=*/true,
                            /*MaxEditDistance=*/1) <= 1)
        return field.getKey();
    return {};
  }
  bool isRead(StringRef key) const { return read.contains(key); }

  /// A positive integer of at most `limit` (sizes past it cannot be meant
  /// and would overflow what is computed from them); `fallback` (if >0)
  /// when absent or null.
  Expected<int64_t> positive(StringRef key, int64_t fallback = 0,
                             int64_t limit = kMaxSize) {
    const json::Value *v = get(key);
    if (!v || v->getAsNull()) {
      if (fallback > 0)
        return fallback;
      return error("missing required field '" + key + "'");
    }
    std::optional<int64_t> i = v->getAsInteger();
    if (!i || *i <= 0)
      return error("field '" + key + "' must be a positive integer");
    if (*i > limit)
      return error(formatv("field '{0}' is {1}, above the limit of {2}", key,
                           *i, limit));
    return *i;
  }
  /// A positive finite number (1e400 reads as infinity), or with
  /// `allowZero` a non-negative one; `fallback` when absent or null.
  Expected<double> number(StringRef key, double fallback,
                          bool allowZero = false) {
    const json::Value *v = get(key);
    if (!v || v->getAsNull())
      return fallback;
    std::optional<double> d = v->getAsNumber();
    if (!d || !std::isfinite(*d) || !(allowZero ? *d >= 0 : *d > 0))
      return error("field '" + key + "' must be a " +
                   (allowZero ? "non-negative" : "positive") +
                   " finite number");
    return *d;
  }
  /// A probability in [0, 1) (a dropout rate), 0 when absent or null.
  Expected<double> rate(StringRef key) {
    Expected<double> d = number(key, 0.0, /*allowZero=*/true);
    if (d && *d >= 1)
      return error("field '" + key + "' must be below 1, not " +
                   std::to_string(*d));
    return d;
  }
  /// A string, or nullopt when absent or null; `what` says what it may be.
  Expected<std::optional<StringRef>> string(StringRef key, StringRef what) {
    const json::Value *v = get(key);
    if (!v || v->getAsNull())
      return std::nullopt;
    std::optional<StringRef> s = v->getAsString();
    if (!s)
      return error("field '" + key + "' must be a string (" + what + ")");
    return s;
  }
  Expected<bool> boolean(StringRef key, bool fallback) {
    const json::Value *v = get(key);
    if (!v || v->getAsNull())
      return fallback;
    std::optional<bool> b = v->getAsBoolean();
    if (!b)
      return error("field '" + key + "' must be true or false");
    return *b;
  }

private:
  const json::Object &obj;
  StringRef label;
  StringSet<> read;
};

#define WEFT_READ(dst, expr)                                                   \
  do {                                                                         \
    auto value = (expr);                                                       \
    if (!value)                                                                \
      return value.takeError();                                                \
    dst = *value;                                                              \
  } while (false)
} // namespace

Expected<ModelConfig> ModelConfig::parse(StringRef text, StringRef label) {
  if (absl::Status s = runtime::checkUntrustedJson({text.data(), text.size()});
      !s.ok())
    return createStringError(inconvertibleErrorCode(),
                             label + ": " + std::string(s.message()));
  Expected<json::Value> parsed = json::parse(text);
  if (!parsed)
    return createStringError(
        inconvertibleErrorCode(),
        label + ": invalid JSON: " + toString(parsed.takeError()));
  const json::Object *obj = parsed->getAsObject();
  if (!obj)
    return createStringError(inconvertibleErrorCode(),
                             label + ": config must be a JSON object");
  FieldReader r(*obj, label);
  ModelConfig c;
  std::optional<StringRef> type;
  WEFT_READ(type, r.string("model_type", "gpt2, llama, mixtral"));
  if (!type)
    return r.error("missing required field 'model_type'");
  if (*type == "gpt2") {
    c.family = ModelFamily::Gpt2;
    WEFT_READ(c.vocabSize, r.positive("vocab_size"));
    WEFT_READ(c.maxPositions, r.positive("n_positions"));
    WEFT_READ(c.hiddenSize, r.positive("n_embd"));
    WEFT_READ(c.numLayers, r.positive("n_layer", 0, kMaxLayers));
    WEFT_READ(c.numHeads, r.positive("n_head"));
    WEFT_READ(c.intermediateSize, r.positive("n_inner", 4 * c.hiddenSize));
    WEFT_READ(c.normEps, r.number("layer_norm_epsilon", 1e-5));
    WEFT_READ(c.initStd, r.number("initializer_range", 0.02));
    WEFT_READ(c.tieWordEmbeddings, r.boolean("tie_word_embeddings", true));
    WEFT_READ(c.embdDropout, r.rate("embd_pdrop"));
    WEFT_READ(c.residDropout, r.rate("resid_pdrop"));
    WEFT_READ(c.attnDropout, r.rate("attn_pdrop"));
    c.numKvHeads = c.numHeads;
    std::optional<StringRef> act;
    WEFT_READ(act,
              r.string("activation_function", "gelu_new, gelu_pytorch_tanh"));
    if (act && *act != "gelu_new" && *act != "gelu_pytorch_tanh")
      return r.error("activation_function '" + *act +
                     "' is not supported (gelu_new, gelu_pytorch_tanh)");
    if (!c.tieWordEmbeddings)
      return r.error("gpt2 with tie_word_embeddings = false is not supported");
  } else if (*type == "llama" || *type == "mixtral") {
    c.family = *type == "llama" ? ModelFamily::Llama : ModelFamily::Mixtral;
    WEFT_READ(c.vocabSize, r.positive("vocab_size"));
    WEFT_READ(c.hiddenSize, r.positive("hidden_size"));
    WEFT_READ(c.intermediateSize, r.positive("intermediate_size"));
    WEFT_READ(c.numLayers, r.positive("num_hidden_layers", 0, kMaxLayers));
    WEFT_READ(c.numHeads, r.positive("num_attention_heads"));
    WEFT_READ(c.numKvHeads, r.positive("num_key_value_heads", c.numHeads));
    WEFT_READ(c.maxPositions, r.positive("max_position_embeddings", 2048));
    WEFT_READ(c.normEps, r.number("rms_norm_eps", 1e-6));
    WEFT_READ(c.ropeTheta, r.number("rope_theta", 10000.0));
    WEFT_READ(c.initStd, r.number("initializer_range", 0.02));
    WEFT_READ(c.tieWordEmbeddings, r.boolean("tie_word_embeddings", false));
    WEFT_READ(c.attnDropout, r.rate("attention_dropout"));
    if (const json::Value *scaling = r.get("rope_scaling");
        scaling && !scaling->getAsNull())
      return r.error("rope_scaling is not supported yet; it must be null");
    for (StringRef key : {"attention_bias", "mlp_bias"}) {
      bool bias = false;
      WEFT_READ(bias, r.boolean(key, false));
      if (bias)
        return r.error("field '" + key + "' = true is not supported");
    }
    std::optional<StringRef> act;
    WEFT_READ(act, r.string("hidden_act", "silu"));
    if (act && *act != "silu")
      return r.error("hidden_act '" + *act + "' is not supported (silu)");
    if (c.family == ModelFamily::Mixtral) {
      WEFT_READ(c.numExperts, r.positive("num_local_experts"));
      WEFT_READ(c.expertsPerToken, r.positive("num_experts_per_tok"));
      if (c.expertsPerToken > c.numExperts)
        return r.error(formatv("num_experts_per_tok ({0}) exceeds "
                               "num_local_experts ({1})",
                               c.expertsPerToken, c.numExperts));
      WEFT_READ(c.capacityFactor, r.number("capacity_factor", 0.0));
      bool routerLogits = false;
      WEFT_READ(routerLogits, r.boolean("output_router_logits", false));
      double aux = 0.0;
      WEFT_READ(aux, r.number("router_aux_loss_coef", 0.001, true));
      c.routerAuxLossCoef = routerLogits ? aux : 0.0;
      WEFT_READ(c.routerZLossCoef, r.number("router_z_loss_coef", 0.0, true));
    }
  } else {
    return r.error("unknown model_type '" + *type +
                   "' (supported: gpt2, llama, mixtral)");
  }
  if (c.hiddenSize % c.numHeads != 0)
    return r.error(formatv("hidden size {0} is not divisible by the {1} "
                           "attention heads",
                           c.hiddenSize, c.numHeads));
  if (c.numHeads % c.numKvHeads != 0)
    return r.error(formatv("{0} key/value heads do not divide the {1} "
                           "attention heads",
                           c.numKvHeads, c.numHeads));
  c.headDim = c.hiddenSize / c.numHeads;
  if (c.family != ModelFamily::Gpt2) {
    WEFT_READ(c.headDim, r.positive("head_dim", c.headDim));
    if (c.headDim % 2 != 0)
      return r.error(formatv("head_dim {0} must be even for rotary "
                             "embeddings",
                             c.headDim));
  }
  // Every field is at most 2^24, so the count fits in double exactly
  // enough to compare; the builder's int64 arithmetic then cannot overflow.
  double parameters = c.analyticParameterCountApprox();
  if (parameters > double(kMaxParameters))
    return r.error(formatv("the model would have {0:e} parameters, above the "
                           "limit of {1:e}",
                           parameters, double(kMaxParameters)));
  // Unknown keys are Hugging Face's own (token ids, dtypes...); one an edit
  // away from a field read is more likely a misspelling of it.
  for (const auto &[key, value] : *obj)
    if (!r.isRead(key))
      if (StringRef field = r.nearestRead(key); !field.empty())
        c.warnings.push_back(
            formatv("{0}: key '{1}' is not a field Weft reads and is ignored; "
                    "did you mean '{2}'?",
                    label, StringRef(key), field)
                .str());
  return c;
}

Expected<ModelConfig> ModelConfig::load(StringRef path) {
  absl::StatusOr<std::string> text =
      runtime::readFileAtMost(path.str(), kMaxConfigBytes);
  if (!text.ok())
    return createStringError(inconvertibleErrorCode(),
                             std::string(text.status().message()));
  return parse(*text, path);
}

int64_t ModelConfig::analyticParameterCount() const {
  return static_cast<int64_t>(analyticParameterCountApprox());
}

double ModelConfig::analyticParameterCountApprox() const {
  double d = hiddenSize, v = vocabSize, f = intermediateSize;
  if (family == ModelFamily::Gpt2) {
    // Per layer: two LayerNorms, c_attn, attn c_proj, c_fc, mlp c_proj.
    double layer = 2 * 2 * d + (d * 3 * d + 3 * d) + (d * d + d) + (d * f + f) +
                   (f * d + d);
    return v * d + maxPositions * d + numLayers * layer + 2 * d;
  }
  double qo = 2 * d * numHeads * headDim, kv = 2 * d * numKvHeads * headDim;
  double mlp = 3 * d * f;
  if (family == ModelFamily::Mixtral)
    mlp = numExperts * mlp + numExperts * d; // experts + router
  double layer = 2 * d + qo + kv + mlp;
  return v * d + numLayers * layer + d + (tieWordEmbeddings ? 0 : v * d);
}

Expected<mlir::OwningOpRef<mlir::ModuleOp>>
buildModel(mlir::MLIRContext &context, const ModelConfig &config,
           const ModelBuildOptions &options) {
  auto fail = [](const Twine &message) -> Error {
    return createStringError(inconvertibleErrorCode(), message);
  };
  if (options.batch <= 0 || options.seq <= 0)
    return fail(
        formatv("batch ({0}) and sequence length ({1}) must be positive",
                options.batch, options.seq));
  if (options.seq > config.maxPositions)
    return fail(formatv("sequence length {0} exceeds the model's {1} positions",
                        options.seq, config.maxPositions));
  // The widest per-token activation (logits, an MLP's or the experts'
  // hidden units) times the tokens must stay a tensor the dialect accepts
  // (at most 2^62 bytes; 2^58 elements leaves room for f64 and the
  // attention planes).
  double tokens = double(options.batch) * double(options.seq);
  double widest = std::max({double(config.vocabSize),
                            double(config.intermediateSize) *
                                std::max<int64_t>(1, config.expertsPerToken),
                            double(config.hiddenSize) * 3,
                            double(config.numHeads) * double(options.seq)});
  if (tokens * widest > std::ldexp(1.0, 58))
    return fail(formatv("batch {0} x sequence {1} is too large for this "
                        "model: its widest activation would hold {2:e} "
                        "elements (at most 2^58)",
                        options.batch, options.seq, tokens * widest));
  if (options.dtype != "f32" && options.dtype != "bf16" &&
      options.dtype != "f16")
    return fail("dtype '" + options.dtype + "' is not one of f32, bf16, f16");
  GraphBuilder g(context);
  mlir::Type dtype = options.dtype == "f32"    ? g.builder().getF32Type()
                     : options.dtype == "bf16" ? g.builder().getBF16Type()
                                               : g.builder().getF16Type();
  ModelOutputs out = config.family == ModelFamily::Gpt2
                         ? buildGpt2(g, config, options, dtype)
                         : buildLlama(g, config, options, dtype);
  mlir::OwningOpRef<mlir::ModuleOp> module = g.finish({out.loss, out.logits});
  if (!module)
    return fail("the generated graph does not verify (a bug in Weft)");
  auto forward = *module->getOps<mlir::func::FuncOp>().begin();
  forward.setResultAttr(0, "weft.output", g.builder().getStringAttr("loss"));
  forward.setResultAttr(1, "weft.output", g.builder().getStringAttr("logits"));
  return module;
}

} // namespace weft
