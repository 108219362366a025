//===- probes_test.cpp - the health probes measure what they say ----------===//
//
// weft-probes' values, computed inside the forward (the entropy without
// ever forming the probabilities), against the same quantities computed
// here by hand from values the reference evaluator returns: each layer's
// output for the RMS and largest magnitude, each attention's queries and
// keys for an explicit causal softmax's entropy, each router's choices
// for the load per expert.
//
//===----------------------------------------------------------------------===//

#include "compiler/Registration.h"
#include "compiler/reference/Evaluator.h"
#include "passes/health/Passes.h"
#include "passes/recompute/Layers.h"
#include "test/compiler/TestUtils.h"

#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <numeric>
#include <random>

using namespace weft;
using reference::Tensor;

namespace {
/// RMS and largest magnitude of `x`.
std::pair<double, double> rmsAndMax(const Tensor &x) {
  double squares = 0, largest = 0;
  for (double v : x.data) {
    squares += v * v;
    largest = std::max(largest, std::abs(v));
  }
  return {std::sqrt(squares / double(x.data.size())), largest};
}

/// The mean over batch, heads and queries of the entropy of causal
/// softmax(scale <q, k_t>), q [B, S, H, D] and k [B, S, Hkv, D].
double meanEntropy(const Tensor &q, const Tensor &k, double scale) {
  int64_t b = q.shape[0], s = q.shape[1], h = q.shape[2], d = q.shape[3],
          hkv = k.shape[2];
  double total = 0;
  for (int64_t bi = 0; bi < b; ++bi)
    for (int64_t hi = 0; hi < h; ++hi)
      for (int64_t si = 0; si < s; ++si) {
        int64_t kh = hi / (h / hkv);
        std::vector<double> scores;
        for (int64_t t = 0; t <= si; ++t) {
          double dot = 0;
          for (int64_t j = 0; j < d; ++j)
            dot += q.data[((bi * s + si) * h + hi) * d + j] *
                   k.data[((bi * s + t) * hkv + kh) * d + j];
          scores.push_back(scale * dot);
        }
        double top = *std::max_element(scores.begin(), scores.end()), sum = 0;
        for (double &x : scores)
          sum += (x = std::exp(x - top));
        for (double x : scores)
          if (x > 0)
            total -= x / sum * std::log(x / sum);
      }
  return total / double(b * h * s);
}

/// Each expert's share of the choices `indices` [T, k] made.
std::vector<double> loads(const Tensor &indices, int64_t experts) {
  std::vector<double> share(experts, 0.0);
  for (double e : indices.data)
    share[static_cast<int64_t>(e)] += 1.0 / double(indices.data.size());
  return share;
}

/// Metric -> value (several for a vector) from `example`, measured by hand.
std::map<std::string, std::vector<double>>
byHand(mlir::ModuleOp module, const std::vector<Tensor> &inputs,
       uint64_t seed) {
  auto forward = module.lookupSymbol<mlir::func::FuncOp>("forward");
  // Each value the probes read becomes another result of the forward.
  llvm::MapVector<int64_t, mlir::Value> outputs = layerOutputs(forward);
  llvm::DenseSet<mlir::Operation *> ops = forwardOps(forward);
  llvm::DenseMap<mlir::Operation *, int64_t> layer = layersOf(forward, ops);
  llvm::SmallVector<std::pair<int64_t, AttentionOp>> attentions;
  llvm::SmallVector<std::pair<int64_t, TopKGatingOp>> gates;
  forward.walk([&](mlir::Operation *op) {
    if (!ops.contains(op) || !inLayers(layer.lookup(op)))
      return;
    if (auto a = mlir::dyn_cast<AttentionOp>(op))
      attentions.push_back({layer.lookup(op), a});
    if (auto g = mlir::dyn_cast<TopKGatingOp>(op))
      gates.push_back({layer.lookup(op), g});
  });
  auto ret = mlir::cast<mlir::func::ReturnOp>(
      forward.getBody().front().getTerminator());
  llvm::SmallVector<mlir::Value> results(ret.getOperands());
  size_t i = results.size();
  for (auto &[l, x] : outputs)
    results.push_back(x);
  for (auto &[l, a] : attentions) {
    results.push_back(a.getQuery());
    results.push_back(a.getKey());
  }
  for (auto &[l, g] : gates)
    results.push_back(g.getIndices());
  ret->setOperands(results);
  forward.setFunctionType(
      mlir::FunctionType::get(module.getContext(), forward.getArgumentTypes(),
                              mlir::ValueRange(results).getTypes()));
  auto values =
      reference::evaluate(forward, inputs, reference::randomInitProvider(seed));
  EXPECT_TRUE(mlir::succeeded(values));
  std::map<std::string, std::vector<double>> metrics;
  if (mlir::failed(values))
    return metrics;
  for (auto &[l, x] : outputs) {
    auto [rms, largest] = rmsAndMax((*values)[i++]);
    metrics[layerName(forward, l) + "/act_rms"] = {rms};
    metrics[layerName(forward, l) + "/act_max_abs"] = {largest};
  }
  for (auto &[l, a] : attentions) {
    const Tensor &q = (*values)[i++], &k = (*values)[i++];
    metrics[layerName(forward, l) + "/attn_entropy"] = {
        meanEntropy(q, k, a.getScale().convertToDouble())};
  }
  for (auto &[l, g] : gates) {
    int64_t experts =
        mlir::cast<mlir::RankedTensorType>(g.getLogits().getType())
            .getDimSize(1);
    std::vector<double> share = loads((*values)[i++], experts);
    metrics[layerName(forward, l) + "/router_load"] = share;
    metrics[layerName(forward, l) + "/router_imbalance"] = {
        double(experts) * *std::max_element(share.begin(), share.end())};
  }
  return metrics;
}

/// Metric -> value from weft-probes' parameters after one evaluation of
/// the probed forward.
std::map<std::string, std::vector<double>>
probed(mlir::ModuleOp module, const std::vector<Tensor> &inputs,
       uint64_t seed) {
  std::map<std::string, std::vector<double>> metrics;
  mlir::PassManager pm(module.getContext());
  ProbesOptions options;
  options.probes = "activations,attention,router";
  pm.addPass(createProbes(options));
  EXPECT_TRUE(mlir::succeeded(pm.run(module)));
  auto forward = module.lookupSymbol<mlir::func::FuncOp>("forward");
  reference::Assignments assigned;
  auto values =
      reference::evaluate(forward, inputs, reference::randomInitProvider(seed),
                          reference::Precision::F32, &assigned);
  EXPECT_TRUE(mlir::succeeded(values));
  forward.walk([&](ParamOp p) {
    auto metric = p->getAttrOfType<mlir::StringAttr>(kProbeAttr);
    if (!metric || !assigned.count(p.getName().str()))
      return;
    std::vector<double> v = assigned[p.getName().str()].data;
    // One micro-batch: the mean square's root, the largest load over the
    // mean one, the rest as they are.
    auto fold = p->getAttrOfType<mlir::StringAttr>(kProbeFoldAttr);
    if (fold == "rms")
      v = {std::sqrt(v.front())};
    if (fold == "max_over_mean")
      v = {*std::max_element(v.begin(), v.end()) * double(v.size()) /
           std::accumulate(v.begin(), v.end(), 0.0)};
    metrics[metric.str()] = v;
  });
  return metrics;
}

void expectProbesMatch(const std::string &example, size_t expected) {
  auto context = testutil::makeContext();
  auto module = testutil::buildExampleModel(*context, example, {2, 8});
  ASSERT_TRUE(module);
  std::mt19937 rng(11);
  int64_t vocab = 256;
  std::vector<Tensor> inputs = {testutil::randomIds({2, 8}, vocab, rng),
                                testutil::randomIds({2, 8}, vocab, rng)};
  // Parameters 20x their initial scale: attention far from uniform and
  // routing uneven, so a wrong formula cannot hide behind symmetry.
  uint64_t seed = 3;
  mlir::OwningOpRef<mlir::ModuleOp> copy = module->clone();
  auto sharpen = [](mlir::ModuleOp m) {
    m.walk([](ParamOp p) {
      if (std::optional<llvm::APFloat> s = p.getScale())
        p.setScaleAttr(mlir::FloatAttr::get(
            mlir::Float64Type::get(p.getContext()), 20 * s->convertToDouble()));
    });
  };
  sharpen(*module);
  sharpen(*copy);
  std::map<std::string, std::vector<double>> want = byHand(*copy, inputs, seed),
                                             got =
                                                 probed(*module, inputs, seed);
  EXPECT_EQ(got.size(), expected);
  ASSERT_EQ(want.size(), got.size());
  for (auto &[metric, value] : want) {
    ASSERT_TRUE(got.count(metric)) << metric;
    ASSERT_EQ(got[metric].size(), value.size()) << metric;
    for (size_t i = 0; i < value.size(); ++i)
      EXPECT_NEAR(got[metric][i], value[i], 2e-5 * (1 + std::abs(value[i])))
          << metric << "[" << i << "]";
  }
}
} // namespace

TEST(Probes, Gpt2MatchesHandComputedStatistics) {
  // Two layers: act_rms, act_max_abs and attn_entropy each.
  expectProbesMatch("gpt2-tiny", 6);
}

TEST(Probes, MixtralRouterLoadMatchesItsChoices) {
  // Two layers: the three above plus router_load and router_imbalance.
  expectProbesMatch("mixtral-tiny", 10);
}
