//===- plan_fuzzer.cpp - libFuzzer target for --plan strings --------------===//
//
// Any plan text must be refused with an error naming the part, or give a
// plan within the rank limit that reads back from its own spelling
// (Plan::str) as the same plan.
//
//===----------------------------------------------------------------------===//

#include "passes/sharding/Passes.h"

#include "dialects/common/MeshAxes.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::Expected<weft::Plan> plan = weft::parsePlan(
      llvm::StringRef(reinterpret_cast<const char *>(data), size));
  if (!plan) {
    llvm::consumeError(plan.takeError());
    return 0;
  }
  if (plan->worldSize() < 1 || plan->worldSize() > weft::kMaxMeshRanks)
    std::abort();
  std::string spelled = plan->str();
  if (spelled.empty()) // One rank: str() has nothing to say.
    return 0;
  llvm::Expected<weft::Plan> again = weft::parsePlan(spelled);
  if (!again || again->axes != plan->axes || again->zero != plan->zero ||
      again->sequenceParallel != plan->sequenceParallel)
    std::abort();
  return 0;
}
