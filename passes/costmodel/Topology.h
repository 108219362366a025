//===- Topology.h - the cluster a plan is made for --------------*- C++ -*-===//
//
// A topology describes the machines a training job runs on: how many nodes,
// devices per node, each device's memory and peak FLOP/s per dtype, and the
// bandwidth and latency of links inside a node and between nodes. The planner,
// the memory estimator and the cost model read it. It comes from a JSON file
// or a built-in preset (`cpu:N`, `dgx-a100:N`, `dgx-h100:N`, `h200:N`, where N
// is the number of nodes, or of local ranks for `cpu`).
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_PASSES_COSTMODEL_TOPOLOGY_H
#define WEFT_PASSES_COSTMODEL_TOPOLOGY_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>

namespace weft {

struct LinkSpec {
  double bandwidth = 0; // Bytes per second, one direction, per device.
  double latency = 0;   // Seconds.
};

/// The dtypes a device's peak FLOP/s are given for: those the cost model
/// runs GEMMs and attention at (bf16 also stands for f16).
inline constexpr llvm::StringRef kPeakFlopTypes[] = {"bf16", "f32", "f64",
                                                     "fp8"};

struct DeviceSpec {
  std::string name;
  int64_t memoryBytes = 0;
  double memoryBandwidth = 0; // Bytes per second.
  /// Dense peak FLOP/s by dtype (one of kPeakFlopTypes).
  std::map<std::string, double> peakFlops;
  /// The share of its roofline (the peak for attention, the memory
  /// bandwidth for the others) an instruction kind reaches (one of
  /// kEfficiencyKinds; absent: 1): a measured profile (bench/calibrate.sh)
  /// puts the device's library kernels' here.
  std::map<std::string, double> efficiency;
  /// What the device keeps besides a plan's tensors and arena: on a GPU
  /// the CUDA context and loaded kernels (about 0.5 GiB on Hopper),
  /// cuBLASLt's 32 MiB workspace and NCCL's buffers (NCCL_BUFFSIZE, 4 MiB,
  /// per channel and peer): 1 GiB unless the topology says otherwise (the
  /// cpu:N preset and weft-calibrate's profiles say 0: the host's memory).
  /// The arena and every tensor are allocated once at fixed offsets, so
  /// there is no allocator fragmentation to add.
  int64_t runtimeReserveBytes = int64_t(1) << 30;
  /// Elements per second a generated kernel gets through per
  /// transcendental function in its body (exp, tanh, log, pow, the GELU's
  /// and SiLU's and their gradients); 0: not modeled (memory-bound).
  double transcendentalsPerSecond = 0;
  /// GEMMs (and attention's matrix products) reach at most
  /// `gemmEfficiency` of the dense peak, and a GEMM of W FLOPs
  /// gemmEfficiency * W / (W + gemmHalfFlops) of it: small products pay
  /// their launch, tile quantization and tail (a saturating curve, the
  /// shape of cuBLAS's measured rate against size). 1 and 0 (absent): the
  /// peak as given, as a measured profile's GEMM-weighted peak already is.
  double gemmEfficiency = 1;
  double gemmHalfFlops = 0;

  /// The share of the dense peak a matrix product of `flops` reaches.
  double gemmShare(double flops) const {
    return gemmHalfFlops > 0 ? gemmEfficiency * flops / (flops + gemmHalfFlops)
                             : gemmEfficiency;
  }
  /// The roofline time of work moving `bytes` through memory and doing
  /// `flops` at `peak` FLOP/s (as a matrix product: gemmShare of it): the
  /// slower of the two. The cost model times each instruction by it.
  double rooflineSeconds(double bytes, double flops, double peak) const {
    return std::max(bytes / memoryBandwidth,
                    flops > 0 ? flops / (peak * gemmShare(flops)) : 0.0);
  }
};

/// The instruction kinds a device's `efficiency` may name.
inline constexpr llvm::StringRef kEfficiencyKinds[] = {
    "attention", "attention_backward", "reduce", "norm"};

/// Bounds a topology's counts (far above any cluster built) so the world
/// size and what is computed from it cannot overflow.
inline constexpr int64_t kMaxNodes = int64_t(1) << 20;
inline constexpr int64_t kMaxDevicesPerNode = 1024;

struct Topology {
  std::string name;
  int64_t nodes = 1;
  int64_t devicesPerNode = 1;
  DeviceSpec device;
  LinkSpec intraNode, interNode;

  int64_t worldSize() const { return nodes * devicesPerNode; }

  /// Reads the documented JSON form; `label` (the file) prefixes errors,
  /// which name the offending key path.
  static llvm::Expected<Topology> parse(llvm::StringRef json,
                                        llvm::StringRef label);
  /// A built-in preset: "cpu:N", "dgx-a100:N", "dgx-h100:N", "h200:N".
  static llvm::Expected<Topology> preset(llvm::StringRef spec);
  /// A preset name or a path to a JSON file.
  static llvm::Expected<Topology> load(llvm::StringRef specOrPath);

  /// Fails unless a mesh with these axis sizes fits: every size positive
  /// and their product at most the number of devices.
  llvm::Error
  checkMesh(llvm::ArrayRef<std::pair<std::string, int64_t>> axes) const;

  /// The JSON form `parse` reads (units as documented there).
  llvm::json::Value toJSON() const;
};

/// Parses a mesh spec "dp=2,tp=4" into (axis, size) pairs. Axis names are
/// dp, tp, pp and ep, each at most once; sizes are positive integers.
llvm::Expected<std::vector<std::pair<std::string, int64_t>>>
parseMeshSpec(llvm::StringRef spec);

} // namespace weft

#endif // WEFT_PASSES_COSTMODEL_TOPOLOGY_H
