//===- Explain.h - a plan as one self-contained HTML page -------*- C++ -*-===//
//
// What `weftc compile --explain plan.html` writes: the placed, lowered step
// on a topology as pictures a person can read at a glance, with no script
// and nothing fetched: the mesh laid on nodes and devices, each rank's
// memory by kind against the device's, the predicted step time by kind of
// instruction, the bytes each kind of link carries, and with a pipeline
// its schedule's timeline, and after a search the runners-up with why each
// lost. Every number is the cost model's and the memory
// estimate's (CostModel.h, Report.h).
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_PASSES_COSTMODEL_EXPLAIN_H
#define WEFT_PASSES_COSTMODEL_EXPLAIN_H

#include "passes/costmodel/Report.h"
#include "passes/costmodel/Topology.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace weft {

/// A plan the planner (passes/planner) weighed against the one shown.
struct ExplainAlternative {
  std::string plan, recompute;
  double stepSeconds = 0, peakBytes = 0;
  bool fits = true;
  std::string why; // Why it lost: slower by how much, or does not fit.
};

struct ExplainInput {
  std::string model; // What was compiled ("llama-tiny.json, batch 8 x 16").
  std::string plan;  // The plan as given ("dp=2,tp=2"; empty: one rank).
  const Topology *topology = nullptr;
  PlacementReport placement; // Of the placed weft programs.
  /// The lowered sched module: its programs, mesh and `train` schedule.
  mlir::ModuleOp lowered;
  double tokensPerStep = 0;
  double peakFlopsPerRank = 0; // 0: no MFU.
  std::string timelineSvg;     // A pipeline's schedule, or empty.
  /// With --plan auto: the runners-up; `searched` false: the plan was
  /// given.
  bool searched = false;
  std::vector<ExplainAlternative> alternatives;
};

/// The page, or an error when a program cannot be estimated on the
/// topology.
llvm::Expected<std::string> explainHtml(const ExplainInput &in);

} // namespace weft

#endif // WEFT_PASSES_COSTMODEL_EXPLAIN_H
