//===- Compiler.cpp - compile and train models from a host program --------===//

#include "compiler/Compiler.h"

#include "compiler/Pipeline.h"
#include "compiler/Registration.h"
#include "frontend/GraphBuilder.h"
#include "frontend/models/ModelConfig.h"
#include "runtime/exec/SchedExecutor.h"
#include "runtime/train/TrainSchedule.h"

#include "absl/strings/str_cat.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace weft {

struct Compiler::Impl {
  MLIRContext context;
  std::unique_ptr<GraphBuilder> graph;
  std::string diagnostics; // Collected while compiling, returned in errors.

  Impl() {
    DialectRegistry registry;
    registerAllDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
  }

  absl::StatusOr<std::unique_ptr<Executable>>
  compile(ModuleOp module, const CompileOptions &options);
};

Compiler::Compiler() : impl(std::make_unique<Impl>()) {}
Compiler::~Compiler() = default;
Executable::~Executable() = default;

GraphBuilder &Compiler::newGraph() {
  impl->graph = std::make_unique<GraphBuilder>(impl->context);
  return *impl->graph;
}

absl::StatusOr<std::unique_ptr<Executable>>
Compiler::Impl::compile(ModuleOp module, const CompileOptions &options) {
  diagnostics.clear();
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &d) {
    llvm::raw_string_ostream os(diagnostics);
    os << d.getLocation() << ": " << d.str() << "\n";
    return success();
  });
  auto fail = [&](const std::string &what) {
    return absl::InvalidArgumentError(
        what + (diagnostics.empty() ? "" : ":\n") + diagnostics);
  };
  // Graphs from a GraphBuilder may not name their results yet.
  if (auto forward = module.lookupSymbol<func::FuncOp>("forward"))
    for (auto [i, name] :
         llvm::enumerate(std::vector<const char *>{"loss", "logits"}))
      if (i < forward.getNumResults() &&
          !forward.getResultAttr(i, "weft.output"))
        forward.setResultAttr(i, "weft.output",
                              StringAttr::get(&context, name));
  TrainingOptions training;
  training.adamw = {options.beta1, options.beta2, options.eps,
                    options.weightDecay, options.maxGradNorm};
  auto forward = module.lookupSymbol<func::FuncOp>("forward");
  if (!forward || forward.getNumArguments() == 0)
    return fail("the module has no @forward taking tokens");
  auto tokens = dyn_cast<RankedTensorType>(forward.getArgumentTypes().front());
  if (!tokens || tokens.getRank() != 2)
    return fail("@forward's first argument must be [batch, seq] tokens");
  int64_t batch = tokens.getDimSize(0), seq = tokens.getDimSize(1);
  // The bundle (sched program, kernels) goes to a fresh directory, from
  // which the executor loads it as weft-run would.
  llvm::SmallString<256> dir;
  if (std::error_code ec =
          llvm::sys::fs::createUniqueDirectory("weft-jit", dir))
    return fail("cannot create a directory for the bundle: " + ec.message());
  if (failed(compileSchedBundle(
          module, dir, training,
          llvm::json::Object{{"batch", batch}, {"seq", seq}})))
    return fail("compilation failed");
  absl::StatusOr<runtime::sched::SchedBundle> bundle =
      runtime::sched::loadSchedBundle(std::string(dir));
  if (!bundle.ok())
    return bundle.status();
  auto executor = runtime::SchedExecutor::create(std::move(*bundle), {});
  if (!executor.ok())
    return executor.status();
  absl::StatusOr<runtime::TrainSteps> steps =
      runtime::trainSteps((*executor)->bundle());
  if (!steps.ok())
    return steps.status();
  std::unique_ptr<Executable> exe(new Executable());
  exe->trainSteps = std::make_unique<runtime::TrainSteps>(std::move(*steps));
  exe->executor = std::move(*executor);
  exe->executor->initialize(options.seed);
  exe->batch_ = batch;
  exe->seq_ = seq;
  return exe;
}

absl::StatusOr<std::unique_ptr<Executable>>
Compiler::compileGraph(const CompileOptions &options) {
  if (!impl->graph)
    return absl::FailedPreconditionError("compileGraph: call newGraph() first");
  OwningOpRef<ModuleOp> module = impl->graph->finish();
  impl->graph.reset();
  if (!module)
    return absl::InvalidArgumentError("the graph does not verify");
  return impl->compile(*module, options);
}

absl::StatusOr<std::unique_ptr<Executable>>
Compiler::compileConfig(const std::string &path,
                        const CompileOptions &options) {
  llvm::Expected<ModelConfig> config = ModelConfig::load(path);
  if (!config)
    return absl::InvalidArgumentError(llvm::toString(config.takeError()));
  ModelBuildOptions build{options.batch,
                          options.seq > 0 ? options.seq : config->maxPositions,
                          options.dtype, /*masterWeights=*/true};
  auto module = buildModel(impl->context, *config, build);
  if (!module)
    return absl::InvalidArgumentError(path + ": " +
                                      llvm::toString(module.takeError()));
  return impl->compile(**module, options);
}

absl::StatusOr<std::unique_ptr<Executable>>
Compiler::compileMlir(const std::string &text, const CompileOptions &options) {
  impl->diagnostics.clear();
  OwningOpRef<ModuleOp> module;
  {
    ScopedDiagnosticHandler handler(&impl->context, [&](Diagnostic &d) {
      llvm::raw_string_ostream os(impl->diagnostics);
      os << d.getLocation() << ": " << d.str() << "\n";
      return success();
    });
    module = parseSourceString<ModuleOp>(text, &impl->context);
  }
  if (!module)
    return absl::InvalidArgumentError("cannot parse the module:\n" +
                                      impl->diagnostics);
  return impl->compile(*module, options);
}

absl::StatusOr<StepResult>
Executable::trainStep(const int32_t *tokens, const int32_t *labels, float lr) {
  float stepNumber = static_cast<float>(steps + 1);
  absl::Status s = runtime::runTrainSteps(*executor, *trainSteps, tokens,
                                          labels, lr, stepNumber);
  if (!s.ok())
    return s;
  ++steps;
  return StepResult{*executor->scalarOutput(trainSteps->reporter, "loss"),
                    *executor->scalarOutput(trainSteps->reporter, "grad_norm")};
}

absl::StatusOr<float> Executable::evaluate(const int32_t *tokens,
                                           const int32_t *labels,
                                           std::vector<float> *logits) {
  absl::Status s =
      executor->run("forward", {{{batch_, seq_}, runtime::DType::I32, tokens},
                                {{batch_, seq_}, runtime::DType::I32, labels}});
  if (!s.ok())
    return s;
  if (logits) {
    auto values = executor->output("forward", "logits");
    if (!values.ok())
      return values.status();
    *logits = std::move(*values);
  }
  return executor->scalarOutput("forward", "loss");
}

absl::StatusOr<std::vector<float>>
Executable::parameter(const std::string &name) const {
  return executor->param(name);
}

absl::Status Executable::setParameter(const std::string &name,
                                      const std::vector<float> &values) {
  return executor->setParam(name, values);
}

std::vector<std::string> Executable::parameterNames() const {
  std::vector<std::string> names;
  for (const runtime::sched::Param &p : executor->bundle().params)
    if (!p.state)
      names.push_back(p.name);
  return names;
}

} // namespace weft
