//===- CostModel.cpp - what a sched program costs on a topology -----------===//

#include "passes/costmodel/CostModel.h"

#include "dialects/weft/IR/WeftOps.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>

using namespace mlir;

namespace weft {
namespace {

double bytesOf(Value v) {
  return static_cast<double>(cast<sched::BufferType>(v.getType()).getBytes());
}

double elementBytesOf(Value v) {
  return static_cast<double>(
      cast<sched::BufferType>(v.getType()).getElementBytes());
}

/// Every buffer operand whole, once per read and once per write effect.
double effectBytes(Operation *op) {
  auto effects = dyn_cast<MemoryEffectOpInterface>(op);
  if (!effects)
    return 0;
  SmallVector<MemoryEffects::EffectInstance> list;
  effects.getEffects(list);
  double bytes = 0;
  for (const MemoryEffects::EffectInstance &e : list)
    if (Value v = e.getValue();
        v && isa<sched::BufferType>(v.getType()) &&
        isa<MemoryEffects::Read, MemoryEffects::Write>(e.getEffect()))
      bytes += bytesOf(v);
  return bytes;
}

std::string joined(ArrayRef<std::string> axes) {
  std::string out;
  for (const std::string &a : axes)
    out += (out.empty() ? "" : ",") + a;
  return out;
}

std::vector<std::string> axesOf(ArrayAttr axes) {
  std::vector<std::string> out;
  for (StringRef a : axes.getAsValueRange<StringAttr>())
    out.push_back(a.str());
  return out;
}

/// The number of ranks in a group of `axes` of the module's mesh, and
/// whether any such group holds ranks of two nodes.
struct GroupShape {
  int64_t size = 1;
  bool spansNodes = false;
};
GroupShape groupShape(sched::MeshOp mesh, ArrayRef<std::string> axes,
                      int64_t devicesPerNode) {
  GroupShape g;
  if (!mesh)
    return g;
  ArrayRef<int64_t> sizes = mesh.getSizes();
  auto names = mesh.getAxes().getAsValueRange<StringAttr>();
  std::vector<bool> inGroup;
  int64_t world = 1;
  for (auto [name, size] : llvm::zip(names, sizes)) {
    inGroup.push_back(llvm::is_contained(axes, name.str()));
    world *= size;
    g.size *= inGroup.back() ? size : 1;
  }
  // A rank's group leader has its coordinates along the group's axes zeroed;
  // the group spans nodes if some rank sits on another node than its leader.
  for (int64_t rank = 0; rank < world && !g.spansNodes; ++rank) {
    int64_t leader = 0, stride = 1, rest = rank;
    for (size_t d = sizes.size(); d-- > 0;) {
      int64_t coordinate = rest % sizes[d];
      rest /= sizes[d];
      if (!inGroup[d])
        leader += coordinate * stride;
      stride *= sizes[d];
    }
    g.spansNodes = leader / devicesPerNode != rank / devicesPerNode;
  }
  return g;
}

sched::MeshOp meshOf(Operation *op);
} // namespace

std::string flopTypeOf(Type type) {
  if (type.isF32())
    return "f32";
  if (type.isF64())
    return "f64";
  if (isa<Float8E4M3FNType, Float8E5M2Type>(type))
    return "fp8";
  return "bf16"; // bf16 and f16 share the tensor-core rate.
}

double scheduleFlops(sched::ScheduleOp schedule) {
  auto module = schedule->getParentOfType<ModuleOp>();
  sched::MeshOp mesh = meshOf(schedule);
  int64_t world = 1;
  if (mesh)
    for (int64_t s : mesh.getSizes())
      world *= s;
  llvm::StringMap<double> programFlops;
  double total = 0;
  for (auto sequence : schedule.getBody().getOps<sched::SequenceOp>()) {
    // Ranks of one coordinate along the axis: the world over its size.
    int64_t ranks = world;
    if (std::optional<llvm::StringRef> axis = sequence.getAxis(); axis && mesh)
      for (auto [name, size] : llvm::zip(
               mesh.getAxes().getAsValueRange<StringAttr>(), mesh.getSizes()))
        if (name == *axis)
          ranks = world / size;
    for (auto run : sequence.getBody().getOps<sched::RunOp>()) {
      llvm::StringRef name = run.getProgram();
      auto cached = programFlops.find(name);
      if (cached == programFlops.end()) {
        double flops = 0;
        if (auto program = module.lookupSymbol<sched::ProgramOp>(name))
          program.walk([&](sched::InstructionOpInterface instruction) {
            flops += instructionCost(instruction).flops;
          });
        cached = programFlops.insert({name, flops}).first;
      }
      total += ranks * cached->second;
    }
  }
  return total;
}

namespace {
sched::MeshOp meshOf(Operation *op) {
  auto module = op->getParentOfType<ModuleOp>();
  if (!module)
    return {};
  auto meshes = module.getOps<sched::MeshOp>();
  return meshes.empty() ? sched::MeshOp() : *meshes.begin();
}

/// A launch's transcendental functions (exp, log, tanh, GELU, SiLU, their
/// gradients, pow) per element of its first output, times those elements,
/// from its kernel's body (the weft.fused group); 0 without a body.
double transcendentalsOf(sched::LaunchOp launch) {
  auto kernel = SymbolTable::lookupNearestSymbolFrom<sched::KernelOp>(
      launch, launch.getKernelAttr());
  if (!kernel || kernel.getBody().empty() || launch.getOutputs().empty())
    return 0;
  double perElement = 0;
  kernel.getBody().walk([&](Operation *op) {
    perElement += isa<ExpOp, LogOp, TanhOp, GeluOp, SiluOp, GeluGradOp,
                      SiluGradOp, PowOp>(op);
  });
  double elements = 1;
  for (int64_t d :
       cast<sched::BufferType>(launch.getOutputs()[0].getType()).getShape())
    elements *= d;
  return perElement * elements;
}

/// Attention's FLOPs and, through GEMMs, its passes: each GEMM and the
/// softmax moves its planes of scratch (`ScratchLayout.h`'s scores in f32,
/// probabilities in q's type) through memory; the backward's are the
/// runtime's order: scores again, probabilities from the saved lse, dV, dP
/// (into the scores plane), dS (into the probabilities plane, with delta),
/// dQ, dK.
template <typename AttentionLike>
void attentionCost(AttentionLike a, InstructionCost &c) {
  bool forward = std::is_same_v<AttentionLike, sched::AttentionOp>;
  auto buffer = [](Value v) { return cast<sched::BufferType>(v.getType()); };
  ArrayRef<int64_t> q = buffer(a.getQ()).getShape(),
                    k = buffer(a.getK()).getShape(),
                    v = buffer(a.getV()).getShape();
  double rowsByKeys = double(q[0]) * q[2] * q[1] * k[1]; // B·Hq·S·T
  double qk = 2 * rowsByKeys * q[3], pv = 2 * rowsByKeys * v[3];
  c.flops = forward ? qk + pv : 3 * qk + 2 * pv;
  c.flopType = flopTypeOf(buffer(a.getQ()).getElementType());
  c.category = forward ? "attention" : "attention backward";
  c.efficiencyKind = forward ? "attention" : "attention_backward";
  if (a.getAlgorithm() != sched::AttentionAlgorithm::gemm_softmax)
    return;
  double scores = rowsByKeys * 4, probs = rowsByKeys * elementBytesOf(a.getQ());
  double bq = bytesOf(a.getQ()), bk = bytesOf(a.getK()), bv = bytesOf(a.getV()),
         out = bytesOf(a.getOut()), lse = bytesOf(a.getLse());
  using Pass = InstructionCost::Pass;
  c.passes = {{bq + bk + scores, qk}, {scores + probs + lse, 0}};
  if (forward) {
    c.passes.push_back({probs + bv + out, pv});
  } else {
    auto g = cast<sched::AttentionGradOp>(a.getOperation());
    double dout = bytesOf(g.getDout()), delta = double(q[0]) * q[2] * q[1] * 4;
    c.passes.push_back({probs + dout + bytesOf(g.getDv()), pv});
    c.passes.push_back({dout + bv + scores, pv});
    c.passes.push_back({out + dout + delta, 0});
    c.passes.push_back({scores + 2 * probs + delta, 0});
    c.passes.push_back({probs + bk + bytesOf(g.getDq()), qk});
    c.passes.push_back({probs + bq + bytesOf(g.getDk()), qk});
  }
  c.bytes = 0;
  for (const Pass &p : c.passes)
    c.bytes += p.bytes;
}
} // namespace

double collectiveSendBytes(sched::CollectiveKind kind, double inputBytes,
                           double outputBytes, int64_t groupSize) {
  if (groupSize <= 1)
    return 0;
  double ring = double(groupSize - 1) / double(groupSize);
  switch (kind) {
  case sched::CollectiveKind::all_reduce:
    return 2 * ring * inputBytes;
  case sched::CollectiveKind::all_gather:
    return ring * outputBytes;
  case sched::CollectiveKind::reduce_scatter:
  case sched::CollectiveKind::all_to_all:
    return ring * inputBytes;
  }
  return 0;
}

int64_t collectiveSteps(sched::CollectiveKind kind, int64_t groupSize) {
  if (groupSize <= 1)
    return 0;
  return kind == sched::CollectiveKind::all_reduce ? 2 * (groupSize - 1)
                                                   : groupSize - 1;
}

double collectiveSeconds(sched::CollectiveKind kind, double inputBytes,
                         double outputBytes, int64_t groupSize,
                         const LinkSpec &link) {
  if (groupSize <= 1)
    return 0;
  return collectiveSendBytes(kind, inputBytes, outputBytes, groupSize) /
             link.bandwidth +
         double(collectiveSteps(kind, groupSize)) * link.latency;
}

InstructionCost instructionCost(sched::InstructionOpInterface instruction) {
  Operation *op = instruction;
  InstructionCost c;
  c.category = op->getName().stripDialect().str();
  c.bytes = effectBytes(op);
  if (c.category == "reduce")
    c.efficiencyKind = "reduce";
  if (StringRef(c.category).contains("norm"))
    c.efficiencyKind = "norm";
  llvm::TypeSwitch<Operation *>(op)
      .Case([&](sched::GemmOp g) {
        ArrayRef<int64_t> mnk = g.getMnk();
        double m = mnk[0], n = mnk[1], k = mnk[2], batch = g.getBatch();
        double in = elementBytesOf(g.getA()), out = elementBytesOf(g.getC());
        c.bytes = batch * (in * (m * k + k * n) +
                           out * m * n * (g.getAccumulate() ? 2 : 1));
        if (Value bias = g.getBias())
          c.bytes += bytesOf(bias);
        if (Value aux = g.getAux())
          c.bytes += batch * m * n * elementBytesOf(aux);
        c.flops = 2 * m * n * k * batch;
        c.flopType = flopTypeOf(
            cast<sched::BufferType>(g.getA().getType()).getElementType());
        c.category = "GEMM " + c.flopType;
      })
      .Case<sched::AttentionOp, sched::AttentionGradOp>(
          [&](auto a) { attentionCost(a, c); })
      .Case([&](sched::CopyOp copy) {
        double elements = 1;
        for (int64_t s : copy.getSizes())
          elements *= s;
        c.bytes = elements * (elementBytesOf(copy.getSource()) +
                              elementBytesOf(copy.getDest()));
      })
      .Case([&](sched::EmbeddingOp e) {
        // The ids, and one table row read per row written.
        c.bytes = bytesOf(e.getIds()) + 2 * bytesOf(e.getOut());
      })
      .Case([&](sched::CollectiveOp coll) {
        c.communicates = true;
        c.axes = axesOf(coll.getAxes());
        c.category = (sched::stringifyCollectiveKind(coll.getKind()) +
                      " over " + joined(c.axes))
                         .str();
      })
      // Grouped GEMMs and the expert exchange move as many rows as routing
      // sends at run time: costed at their buffers' rows, the most they can.
      .Case([&](sched::GroupedMatmulOp g) {
        ArrayRef<int64_t>
            x = cast<sched::BufferType>(g.getInput().getType()).getShape(),
            out = cast<sched::BufferType>(g.getOut().getType()).getShape();
        c.flops = 2.0 * x[0] * x[1] * out[1];
        c.flopType = flopTypeOf(
            cast<sched::BufferType>(g.getInput().getType()).getElementType());
      })
      .Case([&](sched::GroupedMatmulWgradOp g) {
        ArrayRef<int64_t> out =
            cast<sched::BufferType>(g.getOut().getType()).getShape();
        double rows =
            cast<sched::BufferType>(g.getLhs().getType()).getShape()[0];
        c.flops = 2.0 * rows * out[1] * out[2];
        c.flopType = flopTypeOf(
            cast<sched::BufferType>(g.getLhs().getType()).getElementType());
      })
      .Case([&](sched::RaggedAllToAllOp r) {
        c.communicates = true;
        c.axes = axesOf(r.getAxes());
        c.category = "ragged_all_to_all over " + joined(c.axes);
      })
      .Case<sched::SendOp, sched::RecvOp>([&](auto p) {
        c.communicates = true;
        c.axes = {p.getAxis().str()};
        c.linkBytes = bytesOf(p.getBuffer());
        c.linkSteps = 1;
        c.category =
            (op->getName().stripDialect() + " over " + p.getAxis()).str();
      })
      .Case([&](sched::RingShiftOp r) {
        // One block out and one in at once: the link carries each way.
        c.communicates = true;
        c.axes = {r.getAxis().str()};
        c.linkBytes = bytesOf(r.getInput());
        c.linkSteps = 1;
        c.category = ("ring_shift over " + r.getAxis()).str();
      })
      .Case<sched::RecordOp, sched::WaitOp>([&](Operation *) {
        c.bytes = 0;
        c.category = "events";
      })
      .Case([&](sched::LaunchOp launch) {
        c.category = "generated kernels";
        c.transcendentals = transcendentalsOf(launch);
      });
  return c;
}

FailureOr<ProgramEstimate> estimateProgram(sched::ProgramOp program,
                                           const Topology &topology) {
  auto error = [&](const Twine &what) {
    return program.emitError()
               << "cannot estimate program '" << program.getSymName()
               << "' on topology '" << topology.name << "': " << what,
           failure();
  };
  const DeviceSpec &device = topology.device;
  if (!(device.memoryBandwidth > 0))
    return error("its device has no memory bandwidth");
  sched::MeshOp mesh = meshOf(program);
  if (mesh) {
    int64_t world = 1;
    for (int64_t s : mesh.getSizes())
      world *= s;
    if (world > topology.worldSize())
      return error(llvm::Twine("the mesh has ") + llvm::Twine(world) +
                   " ranks but the topology " +
                   llvm::Twine(topology.worldSize()) + " devices");
  }
  ProgramEstimate estimate;
  estimate.program = program.getSymName().str();
  estimate.topology = topology.name;
  std::map<std::string, ProgramEstimate::Row> rows;
  std::map<std::string, double> clock; // Each stream's time so far.
  std::map<int64_t, double> recorded;  // Each event's latest record.
  for (Operation &op : program.getBody().front()) {
    auto instruction = dyn_cast<sched::InstructionOpInterface>(op);
    if (!instruction)
      continue;
    ++estimate.instructions;
    std::string stream = instruction.getStreamName().str();
    double &now = clock[stream];
    if (auto record = dyn_cast<sched::RecordOp>(op)) {
      recorded[record.getEvent()] = now;
      continue;
    }
    if (auto wait = dyn_cast<sched::WaitOp>(op)) {
      now = std::max(now, recorded[wait.getEvent()]);
      continue;
    }
    InstructionCost c = instructionCost(instruction);
    double peak = 0;
    if (c.flops > 0) {
      auto found = device.peakFlops.find(c.flopType);
      if (found == device.peakFlops.end())
        return error("its device has no peak for " + c.flopType + " (" +
                     c.category + ")");
      peak = found->second;
    }
    auto roofline = [&](double bytes, double flops) {
      return device.rooflineSeconds(bytes, flops, peak);
    };
    double seconds = 0;
    if (c.passes.empty())
      seconds = roofline(c.bytes, c.flops);
    for (const InstructionCost::Pass &p : c.passes)
      seconds += roofline(p.bytes, p.flops);
    if (auto e = device.efficiency.find(c.efficiencyKind);
        e != device.efficiency.end())
      seconds /= e->second;
    if (device.transcendentalsPerSecond > 0)
      seconds = std::max(seconds,
                         c.transcendentals / device.transcendentalsPerSecond);
    if (c.communicates) {
      GroupShape group = groupShape(mesh, c.axes, topology.devicesPerNode);
      if (auto r = dyn_cast<sched::RaggedAllToAllOp>(op)) {
        c.linkBytes = collectiveSendBytes(sched::CollectiveKind::all_to_all,
                                          bytesOf(r.getInput()),
                                          bytesOf(r.getOutput()), group.size);
        c.linkSteps = group.size <= 1 ? 0 : group.size - 1;
      }
      if (auto coll = dyn_cast<sched::CollectiveOp>(op)) {
        c.linkBytes =
            collectiveSendBytes(coll.getKind(), bytesOf(coll.getInput()),
                                bytesOf(coll.getOutput()), group.size);
        c.linkSteps = collectiveSteps(coll.getKind(), group.size);
      }
      const LinkSpec &link =
          group.spansNodes ? topology.interNode : topology.intraNode;
      // The link is the bottleneck: the kernels' own memory traffic runs
      // under it. A group of one is a local copy at most.
      if (group.size > 1)
        seconds = c.linkBytes / link.bandwidth + c.linkSteps * link.latency;
      rows[c.category].link = group.spansNodes ? "inter-node" : "intra-node";
    }
    now += seconds;
    estimate.streamBusy[stream] += seconds;
    ProgramEstimate::Row &row = rows[c.category];
    row.category = c.category;
    ++row.count;
    row.bytes += c.bytes;
    row.flops += c.flops;
    row.linkBytes += c.linkBytes;
    row.seconds += seconds;
  }
  for (const auto &[stream, t] : clock)
    estimate.seconds = std::max(estimate.seconds, t);
  for (auto &[name, row] : rows)
    estimate.rows.push_back(row);
  llvm::sort(estimate.rows, [](const auto &a, const auto &b) {
    return a.seconds != b.seconds ? a.seconds > b.seconds
                                  : a.category < b.category;
  });
  return estimate;
}

llvm::json::Object ProgramEstimate::toJSON() const {
  llvm::json::Object busy;
  for (const auto &[stream, t] : streamBusy)
    busy[stream] = t;
  llvm::json::Array list;
  for (const Row &r : rows)
    list.push_back(llvm::json::Object{{"category", r.category},
                                      {"count", r.count},
                                      {"bytes", r.bytes},
                                      {"flops", r.flops},
                                      {"link_bytes", r.linkBytes},
                                      {"seconds", r.seconds}});
  return llvm::json::Object{{"program", program},
                            {"topology", topology},
                            {"instructions", instructions},
                            {"seconds", seconds},
                            {"stream_busy_seconds", std::move(busy)},
                            {"rows", std::move(list)}};
}

std::string ProgramEstimate::table() const {
  std::string out;
  llvm::raw_string_ostream os(out);
  os << llvm::format("program %s on %s: %lld instructions, predicted %.4g ms",
                     program.c_str(), topology.c_str(),
                     static_cast<long long>(instructions), seconds * 1e3);
  for (const auto &[stream, t] : streamBusy)
    os << llvm::format("; %s busy %.4g ms", stream.c_str(), t * 1e3);
  os << "\n(a roofline of the schedule, not a measurement: "
        "passes/costmodel/CostModel.h)\n\n";
  os << "| instructions | count | GB moved | TFLOP | GB sent | ms | share |\n"
        "|---|---|---|---|---|---|---|\n";
  double busy = 0;
  for (const Row &r : rows)
    busy += r.seconds;
  for (const Row &r : rows)
    os << llvm::format("| %s | %lld | %.4g | %.4g | %.4g | %.4g | %.1f%% |\n",
                       r.category.c_str(), static_cast<long long>(r.count),
                       r.bytes / 1e9, r.flops / 1e12, r.linkBytes / 1e9,
                       r.seconds * 1e3,
                       busy > 0 ? 100 * r.seconds / busy : 0.0);
  return out;
}

} // namespace weft
