//===- LayerRuns.h - a choice per layer, spelled as runs ---------*- C++
//-*-===//
//
// `--recompute` and `--fp8` take one choice for every layer or one per
// layer, in the layers' order, with runs collapsed: "full*2,selective*30"
// is two layers of full recomputation, then thirty of selective. The
// planner writes its per-layer-group choices so, and the passes read them.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_PASSES_LAYERRUNS_H
#define WEFT_PASSES_LAYERRUNS_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace weft {

/// The most layers a per-layer choice lists.
inline constexpr int64_t kMaxLayerRuns = 4096;

/// The per-layer names of runs text ("a*2,b,c*3"), each a name `known`
/// accepts; an error says what is wrong, calling a name a `what` ("policy",
/// "recipe").
inline llvm::Expected<std::vector<std::string>>
parseLayerRuns(llvm::StringRef text,
               llvm::function_ref<bool(llvm::StringRef)> known,
               llvm::StringRef what) {
  std::vector<std::string> layers;
  llvm::SmallVector<llvm::StringRef> items;
  text.split(items, ',');
  for (llvm::StringRef item : items) {
    auto [name, count] = item.split('*');
    if (!known(name))
      return llvm::createStringError("unknown " + what.str() + " '" +
                                     name.str() + "'");
    int64_t n = 1;
    if (!count.empty() &&
        (count.getAsInteger(10, n) || n < 1 || n > kMaxLayerRuns))
      return llvm::createStringError("'" + count.str() +
                                     "' is not a layer count from 1 to " +
                                     std::to_string(kMaxLayerRuns));
    layers.insert(layers.end(), n, name.str());
    if (static_cast<int64_t>(layers.size()) > kMaxLayerRuns)
      return llvm::createStringError("more than " +
                                     std::to_string(kMaxLayerRuns) + " layers");
  }
  return layers;
}

/// `layers` as runs text: "full*2,none*6" (a run of one has no count).
inline std::string printLayerRuns(llvm::ArrayRef<std::string> layers) {
  std::string out;
  for (size_t i = 0; i < layers.size();) {
    size_t j = i;
    while (j < layers.size() && layers[j] == layers[i])
      ++j;
    if (!out.empty())
      out += ",";
    out += layers[i];
    if (j - i > 1)
      out += "*" + std::to_string(j - i);
    i = j;
  }
  return out;
}

} // namespace weft

#endif // WEFT_PASSES_LAYERRUNS_H
