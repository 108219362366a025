//===- ParamBlocks.h - parameters as blocks on the ranks --------*- C++ -*-===//
//
// Shared by the executors. Initialising: what `weft.param`'s init(...)
// means at run time, each element a pure function of (seed, name, its
// index in the global tensor), so a shard holds exactly the values one rank
// would and the reference evaluator draws the same numbers. Gathering: the
// whole tensor back from every rank's block.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_EXEC_PARAMBLOCKS_H
#define WEFT_RUNTIME_EXEC_PARAMBLOCKS_H

#include "runtime/dist/Mesh.h"
#include "runtime/support/Float.h"

#include "absl/status/statusor.h"

#include <cstdint>
#include <string>
#include <vector>

namespace weft::runtime {

enum class ParamInit { Zeros, Ones, Normal, Uniform };

/// One tensor to fill (from its initializer or a checkpoint): this rank's
/// block `local` of `global`, starting at `start`, into `data` (f32,
/// local's elements).
struct ParamFill {
  std::string name;
  ParamInit init = ParamInit::Zeros;
  double scale = 0; // Normal and uniform.
  std::vector<int64_t> local, global, start;
  float *data = nullptr;
  /// Checkpoints hold only this many rows of global's dimension 0 (-1:
  /// all); the rest is padding, read as zeros.
  int64_t checkpointRows = -1;
  /// Or the shape checkpoints hold global in (same elements, same order;
  /// empty: global's).
  std::vector<int64_t> checkpointShape;
  /// Or the pattern of the names of global's slices along dimension 0
  /// (empty: one tensor).
  std::string checkpointStack;
};

/// Fills every tensor under `seed`, on up to 16 threads (parameters fill
/// independently, so a billion take seconds, not minutes).
void fillParams(uint64_t seed, const std::vector<ParamFill> &fills);

class Communicator;
class SafetensorsFile;

/// Reads this rank's block of checkpoint tensor `name` into `fill.data`
/// (f32). The file holds whole tensors: its tensor must be `dtype` of
/// fill.global's shape (with fill.checkpointRows rows, if set: the padding
/// rows after them read as zeros). NotFound when the file lacks the tensor.
absl::Status readBlock(const SafetensorsFile &file, const ParamFill &fill,
                       DType dtype);

/// Assembles the whole tensor of which `local` (of `shape`) is this rank's
/// block under `sharding`, from every rank's block (a collective over the
/// sharding's axes; `local` itself when it is whole or there is no `comm`).
absl::StatusOr<std::vector<float>>
gatherBlocks(Communicator *comm, const MeshSpec &mesh,
             const std::vector<float> &local, const std::vector<int64_t> &shape,
             const Sharding &sharding);

} // namespace weft::runtime

#endif // WEFT_RUNTIME_EXEC_PARAMBLOCKS_H
