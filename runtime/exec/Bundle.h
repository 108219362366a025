//===- Bundle.h - load and validate a bundle manifest -----------*- C++ -*-===//

#ifndef WEFT_RUNTIME_EXEC_BUNDLE_H
#define WEFT_RUNTIME_EXEC_BUNDLE_H

#include "runtime/dist/Mesh.h"
#include "runtime/support/Float.h"

#include "absl/status/statusor.h"
#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace weft::runtime {

struct ValueSpec {
  enum class Kind { Input, Param, Constant, Arena };
  Kind kind = Kind::Arena;
  std::vector<int64_t> shape;
  DType dtype = DType::F32;
  int64_t index = 0;  // Input or constant index.
  int64_t offset = 0; // Arena byte offset.
  std::string param;  // Param name.
  Sharding sharding;  // Inputs: how the global tensor splits over the mesh.

  int64_t numElements() const;
  int64_t bytes() const { return numElements() * dtypeSize(dtype); }
};

struct StepSpec {
  std::string op;
  std::vector<int64_t> operands, results;
  nlohmann::json attrs;
};

struct ProgramSpec {
  int64_t arenaBytes = 0;
  std::vector<ValueSpec> values;
  std::vector<int64_t> inputs;
  std::vector<std::pair<std::string, int64_t>> outputs;
  /// Outputs that are one rank's block of a split tensor (placed bundles).
  std::map<std::string, Sharding> outputShardings;
  std::vector<StepSpec> steps;
  std::vector<std::pair<std::string, int64_t>> assigns;

  /// The value id of output `name`, if any.
  std::optional<int64_t> output(const std::string &name) const;
};

struct ParamSpec {
  std::string name;
  std::vector<int64_t> shape;
  DType dtype = DType::F32;
  std::string init;
  double scale = 0;
  bool state = false;
  /// Split over the mesh: `shape` is this rank's block of the global tensor.
  Sharding sharding;
};

struct ConstantSpec {
  std::vector<int64_t> shape;
  DType dtype = DType::F32;
  std::vector<double> values; // One value for a splat.
  bool splat = false;

  /// The constant as a program reads it: every element encoded in `dtype`
  /// (what both runtimes hold in memory).
  std::vector<uint8_t> encoded() const;
};

struct Bundle {
  std::string path;
  nlohmann::json meta;
  /// The ranks the programs are placed on (empty: one rank).
  MeshSpec mesh;
  std::vector<ParamSpec> params;
  std::vector<ConstantSpec> constants;
  std::map<std::string, ProgramSpec> programs;

  /// Reads `dir/manifest.json` and checks it completely: format and
  /// version, every field's type, value ids and offsets in range, shapes
  /// that fit the arena. Errors name the file and the JSON path.
  static absl::StatusOr<Bundle> load(const std::string &dir);
  /// The same checks on manifest text; `label` names it in errors.
  static absl::StatusOr<Bundle> parse(const std::string &text,
                                      const std::string &label,
                                      const std::string &dir = "");
  const ParamSpec *param(const std::string &name) const;
  /// An integer field of `meta`, or 0 when absent or not an integer.
  int64_t metaInt(const std::string &key) const;
  /// The groups of mesh axes a run talks over, the same list in the same
  /// order on every rank: each collective step's, then those that split
  /// parameters (gathered for --save) and outputs (gathered for sampling).
  std::vector<std::vector<std::string>> communicationGroups() const;
};

} // namespace weft::runtime

#endif // WEFT_RUNTIME_EXEC_BUNDLE_H
