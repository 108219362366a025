//===- BundleData.h - what both executors derive from a bundle --*- C++ -*-===//
//
// Shared by the CPU executor (SchedExecutor) and the GPU backend: a loaded
// bundle v2's mesh as the runtime's MeshSpec, every group of ranks it
// communicates over (so each rank opens the same communicators in the same
// order), its constants' bytes as their types store them, and its GEMM
// epilogues as the GEMM engines name them.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_EXEC_BUNDLEDATA_H
#define WEFT_RUNTIME_EXEC_BUNDLEDATA_H

#include "runtime/dist/Mesh.h"
#include "runtime/exec/SchedBundle.h"
#include "runtime/support/Epilogue.h"

#include <cstdint>
#include <string>
#include <vector>

namespace weft::runtime {

/// The bundle's mesh (empty: one rank).
MeshSpec meshSpecOf(const sched::SchedBundle &bundle);

/// Which of the bundle's programs rank `rank` runs, by index: those its own
/// sequence of a schedule names, and those no schedule names (an
/// evaluation forward, a bundle's only step). A pipeline stage's programs,
/// which only other pp coordinates' sequences name, are not its: the
/// runtimes bind, and hold memory for, its own only.
std::vector<bool> programsOfRank(const sched::SchedBundle &bundle,
                                 int64_t rank);

/// Whether rank `rank` holds parameter `p`: a pipeline stage's tensor is
/// only on the ranks of its pp coordinate (the others never read it).
bool rankHolds(const MeshSpec &mesh, int64_t rank, const sched::Param &p);

/// Every group of mesh axes the bundle communicates over (collectives,
/// vocabulary-parallel instructions, the splits of parameters and outputs
/// that gathering them uses), in bundle order.
std::vector<std::vector<std::string>>
communicationGroups(const sched::SchedBundle &bundle);

/// Constant `c`'s elements (its one value repeated when splat) as its
/// dtype stores them.
std::vector<uint8_t> constantBytes(const sched::Constant &c);

/// One element of `value` as `dtype` stores it (a fill's pattern): an
/// integer type truncates it, a float type rounds it to nearest even.
std::vector<uint8_t> elementBytes(double value, DType dtype);

/// A GEMM instruction's epilogue as the GEMM engines name it.
GemmEpilogue epilogueOf(sched::Epilogue e);

} // namespace weft::runtime

#endif // WEFT_RUNTIME_EXEC_BUNDLEDATA_H
