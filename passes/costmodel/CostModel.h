//===- CostModel.h - what a sched program costs on a topology ---*- C++ -*-===//
//
// The one cost model of the compiler: what each `sched` instruction moves
// through device memory, computes and sends over links, and how long a
// program takes on a topology's devices when its streams overlap as their
// events allow. `weftc compile --report` and `weftc inspect --report` print
// it; the memory and communication report (Report.h) counts collective
// traffic with the same collectiveSendBytes; the planner (later) ranks plans
// by it.
//
// The model is a roofline per instruction, deliberately simple and stated
// so it can be checked:
//   - device memory: every buffer operand is read whole once for each read
//     effect and written whole once for each write effect (a scratch, read
//     and written, counts twice: its planes are written and read back), save
//     where an instruction touches part of a buffer: a GEMM its matrices
//     (from mnk and batch; aux once, C twice when it accumulates), a copy its
//     `sizes` elements on each side, an embedding the rows it gathers;
//   - FLOPs: GEMMs 2·m·n·k·batch; attention 4·B·Hq·S·T·D forward (QKᵀ and PV)
//     and 10·B·Hq·S·T·D backward (both algorithms recompute QKᵀ, then dV, dP,
//     dQ, dK); causal masks are not discounted. Other kernels count no
//     FLOPs: they are memory-bound;
//   - time of an instruction: max(bytes / memory bandwidth, FLOPs / the
//     device's dense peak for the GEMM's input type), summed over its passes
//     and divided by the device's efficiency for its kind (attention,
//     reductions, norms) when a profile gives one; for a generated kernel
//     at least its transcendentals over the device's rate for them when
//     given;
//     where it is several kernels that each move their data (attention by
//     gemm_softmax: each GEMM and the softmax reads and writes its planes;
//     the other multi-kernel instructions' extra passes are small and not
//     split), or for a collective a
//     ring over its group: all_reduce sends 2(n-1)/n of its bytes in 2(n-1)
//     steps, all_gather (n-1)/n of its result, reduce_scatter and all_to_all
//     (n-1)/n of their operand, in n-1 steps, each step paying the link's
//     latency, over the inter-node link when the group spans nodes (ranks are
//     the mesh's row-major indices, devices_per_node to a node) and else the
//     intra-node one (the link is the bottleneck: the collective's memory
//     traffic runs under it); a send or receive is its bytes over the peer's
//     link;
//   - a program's time: instructions on one stream run back to back, a wait
//     starts no earlier than its event's latest record, and the program ends
//     when its last stream drains.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_PASSES_COSTMODEL_COSTMODEL_H
#define WEFT_PASSES_COSTMODEL_COSTMODEL_H

#include "dialects/sched/IR/SchedOps.h"
#include "passes/costmodel/Topology.h"

#include "llvm/Support/JSON.h"

#include <map>
#include <string>
#include <vector>

namespace weft {

/// Bytes one member of a ring of `groupSize` sends for a collective whose
/// operand has `inputBytes` and result `outputBytes`.
double collectiveSendBytes(sched::CollectiveKind kind, double inputBytes,
                           double outputBytes, int64_t groupSize);

/// The ring steps (each paying the link's latency) of a collective over
/// `groupSize` ranks: 2(n-1) for an all-reduce, n-1 for the others.
int64_t collectiveSteps(sched::CollectiveKind kind, int64_t groupSize);

/// A collective's time on `link` when the link is the bottleneck: what one
/// member sends (collectiveSendBytes) over its bandwidth plus a latency per
/// ring step; 0 for a group of one. estimateProgram and the planner both
/// time collectives with it.
double collectiveSeconds(sched::CollectiveKind kind, double inputBytes,
                         double outputBytes, int64_t groupSize,
                         const LinkSpec &link);

/// What one instruction costs, independent of the device.
struct InstructionCost {
  /// A row of the report: "GEMM bf16", "attention", "generated kernels",
  /// the library kernel's name, "copy", "all_reduce over dp", ...
  std::string category;
  double bytes = 0; // Device memory read and written.
  double flops = 0; // Matrix FLOPs (GEMMs, attention).
  /// Where the instruction is several kernels timed one after another: each
  /// one's bytes and FLOPs (they sum to the totals); empty: one pass.
  struct Pass {
    double bytes = 0, flops = 0;
  };
  std::vector<Pass> passes;
  /// The peak the FLOPs run at: "f32", "bf16" or "fp8".
  std::string flopType = "bf16";
  /// Which of the device's efficiencies (one of kEfficiencyKinds; empty:
  /// none) divides the instruction's roofline time.
  std::string efficiencyKind;
  /// A generated kernel's transcendental functions times the elements it
  /// writes (its fused body's exp, log, tanh, GELU, SiLU, their gradients
  /// and pow; 0 when the module has no body, as one read from a bundle).
  double transcendentals = 0;
  /// Collectives and send/recv: bytes this rank sends and the latencies it
  /// pays (send/recv here; a collective's depend on its group's size, so
  /// estimateProgram fills them from the mesh).
  double linkBytes = 0;
  int64_t linkSteps = 0;
  bool communicates = false;
  std::vector<std::string> axes; // The mesh axes of the group or peer.
};

/// The device-independent cost of `instruction`.
InstructionCost instructionCost(sched::InstructionOpInterface instruction);

/// A program's predicted time on one device of a topology.
struct ProgramEstimate {
  struct Row {
    std::string category;
    int64_t count = 0;
    double bytes = 0, flops = 0, linkBytes = 0;
    double seconds = 0; // The instructions' time, summed (not overlapped).
    /// Communication: "intra-node" or "inter-node", the link it took.
    std::string link;
  };
  std::string program;
  std::string topology;
  int64_t instructions = 0;
  /// The critical path over the streams: the predicted time of the program.
  double seconds = 0;
  /// Each stream's busy time (its instructions, not its waits).
  std::map<std::string, double> streamBusy;
  std::vector<Row> rows; // Largest time first.

  /// {"program", "topology", "seconds", "stream_busy_seconds": {...},
  ///  "rows": [{"category", "count", "bytes", "flops", "link_bytes",
  ///  "seconds"}...]}
  llvm::json::Object toJSON() const;
  /// A markdown table with a line of totals above it.
  std::string table() const;
};

/// The matrix FLOPs (GEMMs and attention, counted as instructionCost does)
/// of one call of `schedule` by every rank of the job: each sequence's runs
/// times the ranks that run it. What a training step computes, recomputed
/// layers included; weftc writes it into the bundle for the runtime's MFU.
double scheduleFlops(sched::ScheduleOp schedule);

/// The peak (one of kPeakFlopTypes) a GEMM or attention with inputs of
/// `type` runs at: bf16 and f16 share the tensor-core rate.
std::string flopTypeOf(mlir::Type type);

/// Predicts `program` on `topology`; fails (naming the program) when the
/// module's mesh needs more devices than the topology has, or the device
/// lacks a figure an instruction needs (no peak for its type, no memory
/// bandwidth).
mlir::FailureOr<ProgramEstimate> estimateProgram(sched::ProgramOp program,
                                                 const Topology &topology);

} // namespace weft

#endif // WEFT_PASSES_COSTMODEL_COSTMODEL_H
