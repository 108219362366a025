//===- EmulatedGpu.h - the GPU runtime's device, on the CPU -----*- C++ -*-===//
//
// A GpuDevice whose memory is host memory and whose kernels are the CUDA
// sources (the bundle's kernels.cu, the runtime's ops.cu and attention.cu)
// compiled as C++ with cuda_emulation.h, so GpuBackend's plans, argument
// blobs, kernels and graph replay are tested without a GPU. Only the CUDA
// driver and cuBLASLt calls are not: HostGemm stands in for cuBLASLt.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_TEST_RUNTIME_EMULATEDGPU_H
#define WEFT_TEST_RUNTIME_EMULATEDGPU_H

#include "runtime/dist/Communicator.h"
#include "runtime/gpu/GpuDevice.h"

#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace weft::testutil {

/// The names of the `__global__` kernels defined in `source` (attention.cu's
/// macro-made kernels under both their names) and their parameter counts.
std::map<std::string, int> cudaKernelArity(const std::string &source);

class EmulatedGpu : public runtime::GpuDevice {
public:
  EmulatedGpu();
  ~EmulatedGpu() override;

  /// Compiles `source` (CUDA) as C++ for the CPU in `dir` and loads its
  /// kernels. Fails with the compiler's output.
  absl::Status load(const std::string &source, const std::string &label,
                    const std::string &dir);

  const std::string &name() const override { return name_; }
  const std::string &arch() const override { return arch_; }
  absl::StatusOr<runtime::DeviceBuffer> allocate(size_t bytes) override;
  absl::Status copyToDevice(runtime::DeviceBuffer to, const void *from,
                            size_t bytes) override;
  absl::Status copyToHost(void *to, runtime::DeviceBuffer from,
                          size_t bytes) override;
  absl::StatusOr<void *> function(const std::string &name) override;
  absl::StatusOr<void *> createStream() override;
  absl::Status launchAsync(void *function, const unsigned grid[3],
                           unsigned block, void **args, void *stream) override;
  absl::Status zeroAsync(uint64_t address, size_t bytes, void *stream) override;
  absl::Status copyAsync(uint64_t to, uint64_t from, size_t bytes,
                         void *stream) override;
  absl::Status synchronize(void *stream) override;
  /// In submission order (the default) events order nothing. With
  /// lazySideStreams(), they are what orders the streams.
  absl::StatusOr<void *> createEvent() override;
  absl::Status record(void *event, void *stream) override;
  absl::Status wait(void *stream, void *event) override;
  absl::StatusOr<void *>
  capture(void *stream, const std::function<absl::Status()> &work) override;
  absl::Status replay(void *graph, void *stream) override;

  /// How many graphs were replayed (the backend's second run on records).
  int replays() const { return replays_; }
  /// Makes every capture fail, as a driver that cannot capture some work.
  void refuseGraphs() { refuse = true; }
  /// Poses as a GPU of architecture `arch` ("sm_80"): what the backend
  /// refuses on older GPUs shows.
  void setArch(std::string arch) { arch_ = std::move(arch); }
  /// Runs each stream's work as late as the events allow instead of in
  /// submission order: the first stream created runs on, and another runs
  /// only as far as a wait on one of its records (or a synchronize of it)
  /// needs. A program whose streams lack an event then reads what a
  /// collective on the other stream has not written yet, and fails its
  /// test, where in submission order it would pass.
  void lazySideStreams() { lazy = true; }

  using Work = std::function<void()>;
  /// Runs `work` now (lazily: queues it on `stream`), or records it while
  /// capturing (what a stream does with a launch).
  absl::Status submit(void *stream, Work work);

private:
  struct Kernel;
  /// Loads a compiled kernel library and its kernels' table.
  absl::Status open(const std::string &so,
                    const std::map<std::string, int> &arity);

  std::string name_ = "emulated GPU", arch_ = "sm_90";
  std::vector<void *> libraries, allocations;
  std::map<std::string, std::unique_ptr<Kernel>> kernels;
  /// A stream's queue, and an event: how many records were queued on it and
  /// how many have run (a wait for the n-th is satisfied once n have).
  struct Event {
    int64_t queued = 0, done = 0;
  };
  struct Item {
    enum class Kind { Work, Record, Wait } kind = Kind::Work;
    Work work;
    Event *event = nullptr;
    int64_t generation = 0;
  };
  struct Stream {
    std::deque<Item> queue;
  };
  /// Queues (or, in submission order, runs) one item on `stream`.
  void enqueue(Stream *stream, Item item);
  /// Runs `stream`'s items until it is empty, running other streams only
  /// as far as its waits need.
  void drain(Stream *stream);
  /// Runs `stream` until its record of `event`'s `generation` has run.
  void runUntil(Stream *stream, Event *event, int64_t generation);
  /// Runs `stream`'s front item if it can; false if it waits on an event
  /// still to be recorded (by then running the stream that records it).
  bool step(Stream *stream);

  std::vector<std::unique_ptr<Stream>> streams;
  std::vector<std::unique_ptr<Event>> events;
  /// A captured graph: each item with its stream, in call order.
  using Graph = std::vector<std::pair<Stream *, Item>>;
  std::vector<std::unique_ptr<Graph>> graphs;
  Graph *recording = nullptr;
  int replays_ = 0;
  bool refuse = false, lazy = false;
};

/// weft.matmul in double, reading and writing f32 or bf16: what cuBLASLt
/// computes, to the accumulation order, and its epilogues as cuBLASLt's
/// documentation states them (gelu as weft.gelu: whether cuBLASLt's GELU is
/// the same function only a real GPU can tell, bench/gpu/run.sh's parity).
/// Its work goes on `gpu`'s stream, so graphs record it like the kernels.
class HostGemm : public runtime::GemmEngine {
public:
  explicit HostGemm(EmulatedGpu &gpu) : gpu(gpu) {}
  absl::Status prepare(const runtime::GemmShape &shape) override;
  absl::Status matmul(const runtime::GemmShape &shape,
                      const runtime::GemmOperands &operands,
                      void *stream) override;
  /// The problems one after another, as matmul; counts the calls.
  absl::Status groupedMatmul(const std::vector<runtime::GemmProblem> &problems,
                             runtime::DeviceBuffer scratch,
                             void *stream) override;
  int groupedCalls() const { return groupedCalls_; }

private:
  EmulatedGpu &gpu;
  int groupedCalls_ = 0;
};

/// The collectives of a placed bundle for an emulated device: the CPU
/// Communicator's (Gloo) on its host memory, queued like its launches.
class HostCollectives : public runtime::GpuCollectives {
public:
  HostCollectives(EmulatedGpu &gpu, runtime::Communicator &comm)
      : gpu(gpu), comm(comm) {}
  absl::Status allReduce(const std::vector<std::string> &axes, uint64_t data,
                         size_t count, bool max, void *stream) override;
  absl::Status allGather(const std::vector<std::string> &axes, uint64_t in,
                         uint64_t out, size_t count, void *stream) override;
  absl::Status allToAll(const std::vector<std::string> &axes, uint64_t in,
                        uint64_t out, size_t count, void *stream) override;
  absl::Status reduceScatter(const std::vector<std::string> &axes, uint64_t in,
                             uint64_t out, size_t count, void *stream) override;
  absl::Status ringShift(const std::string &axis, int64_t delta, int64_t tag,
                         uint64_t in, uint64_t out, size_t bytes,
                         void *stream) override;

private:
  /// Queues `call`; a failure when it runs ends the test program, as a
  /// failed NCCL call ends the job.
  absl::Status submit(void *stream, std::function<absl::Status()> call);
  EmulatedGpu &gpu;
  runtime::Communicator &comm;
};

} // namespace weft::testutil

#endif // WEFT_TEST_RUNTIME_EMULATEDGPU_H
