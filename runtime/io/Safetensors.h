//===- Safetensors.h - read and write .safetensors files --------*- C++ -*-===//
//
// The safetensors format: an 8-byte little-endian header length N, N bytes of
// JSON mapping each tensor name to {dtype, shape, data_offsets: [begin, end]}
// (offsets relative to the byte after the header) plus an optional
// "__metadata__" string map, then the data. The reader validates the header
// fully (as the reference Rust implementation does: offsets must tile the
// data region exactly) and reports errors naming the file and the tensor.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_IO_SAFETENSORS_H
#define WEFT_RUNTIME_IO_SAFETENSORS_H

#include "runtime/support/Float.h"

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace weft::runtime {

struct TensorInfo {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  uint64_t begin = 0; // Offsets into the data region.
  uint64_t end = 0;

  int64_t numElements() const;
};

class SafetensorsFile {
public:
  /// Reads and validates `path`.
  static absl::StatusOr<SafetensorsFile> read(const std::string &path);
  /// Validates `bytes`; `label` names the source in diagnostics.
  static absl::StatusOr<SafetensorsFile> parse(std::string bytes,
                                               const std::string &label);

  /// Tensors in file order (by data offset).
  const std::vector<TensorInfo> &tensors() const { return tensors_; }
  const TensorInfo *find(const std::string &name) const;
  /// The tensor of model parameter `name`: `name` itself, or for a name
  /// "transformer.X" also "X" (the original GPT-2 checkpoints' layout).
  const TensorInfo *findParameter(const std::string &name) const;
  const std::map<std::string, std::string> &metadata() const {
    return metadata_;
  }
  const std::string &label() const { return label_; }

  /// The raw bytes of `tensor`.
  const uint8_t *data(const TensorInfo &tensor) const;
  /// The elements of `tensor` converted exactly to double.
  std::vector<double> toDoubles(const TensorInfo &tensor) const;
  /// The same for a model's weights, which must be finite: a NaN or an
  /// infinity is an error naming the file, the tensor and the element (it
  /// would otherwise surface steps later as a loss that is not finite).
  absl::StatusOr<std::vector<double>>
  finiteDoubles(const TensorInfo &tensor) const;
  /// The finite values of model parameter `name` (see findParameter), which
  /// must be stored as `dtype` with `shape`; errors name the file, the
  /// tensor and what differs (weft-run's and weftc eval's one check).
  absl::StatusOr<std::vector<double>>
  parameterValues(const std::string &name, DType dtype,
                  const std::vector<int64_t> &shape) const;
  /// The same for a parameter of `shape` [N, ...] stored as N tensors [...]
  /// named stackedName(pattern, j), concatenated.
  absl::StatusOr<std::vector<double>>
  stackedParameterValues(const std::string &pattern, DType dtype,
                         const std::vector<int64_t> &shape) const;

private:
  std::string label_;
  std::string bytes_;
  uint64_t dataStart_ = 0;
  std::vector<TensorInfo> tensors_;
  std::map<std::string, std::string> metadata_;
};

/// Slice j's name under a checkpoint_stack pattern: its `*` replaced by j.
std::string stackedName(const std::string &pattern, int64_t j);

/// A tensor to write: values are rounded to `dtype` on the way out.
struct TensorToWrite {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  std::vector<double> values;
};

/// Appends the f32 `values` of a whole tensor of `shape` as a Hugging Face
/// checkpoint holds it: one tensor `name`, or with a `stack` pattern one
/// tensor per slice along dimension 0, slice j named stackedName(stack, j).
void appendCheckpointTensor(std::vector<TensorToWrite> &out,
                            const std::string &name, const std::string &stack,
                            const std::vector<int64_t> &shape,
                            const float *values);

/// Writes `tensors` (names must be unique) with `metadata` to `path`.
absl::Status
writeSafetensors(const std::string &path,
                 const std::vector<TensorToWrite> &tensors,
                 const std::map<std::string, std::string> &metadata = {});

} // namespace weft::runtime

#endif // WEFT_RUNTIME_IO_SAFETENSORS_H
