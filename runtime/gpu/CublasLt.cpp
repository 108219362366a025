//===- CublasLt.cpp - GEMMs through cuBLASLt and cuBLAS -------------------===//
//
// cuBLAS is column-major and Weft row-major: a row-major C = A B is the
// column-major C^T = B^T A^T, so every GEMM is handed over with A and B
// swapped, and each row-major matrix read as its column-major transpose.
// Fixed shapes go through cuBLASLt (descriptors made once); grouped GEMMs,
// whose sizes change every step, through cuBLAS's cublasGemmGroupedBatchedEx.
//
//===----------------------------------------------------------------------===//

#include "runtime/gpu/CublasLt.h"

#include "runtime/gpu/DynamicLibrary.h"

#include "absl/strings/str_cat.h"

#include <limits>
#include <map>
#include <vector>

namespace weft::runtime {

// The few cuBLASLt types and constants Weft uses, with cublasLt.h's values,
// so building needs no CUDA headers.
using cublasStatus = int;
using Handle = void *;
constexpr int kCudaR32F = 0, kCudaR16BF = 14, // cudaDataType_t
    kCudaR8FE4M3 = 28, kCudaR8FE5M2 = 29;
constexpr int kComputeF32 = 68; // CUBLAS_COMPUTE_32F
constexpr int kDescTransA = 3, kDescTransB = 4, kDescEpilogue = 7,
              kDescBiasPointer = 8, kDescAuxPointer = 11, kDescAuxLd = 12,
              kDescAuxBatchStride = 13, kDescAScalePointer = 17,
              kDescBScalePointer = 18, kDescAScaleMode = 31,
              kDescBScaleMode = 32;
/// cublasLtMatmulMatrixScale_t of each WEFT_FP8_SCALE_* (Fp8Scaling.h):
/// SCALAR_32F, OUTER_VEC_32F, VEC128_32F, BLK128x128_32F.
constexpr int32_t kScaleModes[] = {0, 3, 4, 5};
// cublasLtEpilogue_t: BIAS, GELU_AUX, GELU_AUX_BIAS, DGELU.
constexpr int32_t kEpilogueBias = 4, kEpilogueGeluAux = 32 | 128,
                  kEpilogueGeluAuxBias = kEpilogueGeluAux | 4,
                  kEpilogueDGelu = 64 | 128;
constexpr int kLayoutBatchCount = 5, kLayoutBatchStride = 6;
constexpr int kPrefMaxWorkspace = 1;
constexpr int kPrefAlignA = 5, kPrefAlignB = 6, kPrefAlignC = 7,
              kPrefAlignD = 8;
struct HeuristicResult { // cublasLtMatmulHeuristicResult_t
  uint64_t algo[8];
  size_t workspaceSize;
  cublasStatus state;
  float wavesCount;
  int reserved[4];
};

struct CublasLtLibrary {
  DynamicLibrary library;
  cublasStatus (*create)(Handle *);
  cublasStatus (*destroy)(Handle);
  cublasStatus (*descCreate)(Handle *, int, int);
  cublasStatus (*descDestroy)(Handle);
  cublasStatus (*descSet)(Handle, int, const void *, size_t);
  cublasStatus (*layoutCreate)(Handle *, int, uint64_t, uint64_t, int64_t);
  cublasStatus (*layoutDestroy)(Handle);
  cublasStatus (*layoutSet)(Handle, int, const void *, size_t);
  cublasStatus (*prefCreate)(Handle *);
  cublasStatus (*prefDestroy)(Handle);
  cublasStatus (*prefSet)(Handle, int, const void *, size_t);
  cublasStatus (*heuristic)(Handle, Handle, Handle, Handle, Handle, Handle,
                            Handle, int, HeuristicResult *, int *);
  cublasStatus (*matmul)(Handle, Handle, const void *, const void *, Handle,
                         const void *, Handle, const void *, const void *,
                         Handle, void *, Handle, const void *, void *, size_t,
                         void *);
  const char *(*statusName)(cublasStatus);
};

struct CublasLibrary {
  DynamicLibrary library;
  cublasStatus (*create)(Handle *);
  cublasStatus (*destroy)(Handle);
  cublasStatus (*setStream)(Handle, void *);
  cublasStatus (*grouped)(Handle, const int *transa, const int *transb,
                          const int *m, const int *n, const int *k,
                          const void *alpha, const void *const a[], int aType,
                          const int *lda, const void *const b[], int bType,
                          const int *ldb, const void *beta, void *const c[],
                          int cType, const int *ldc, int groupCount,
                          const int *groupSize, int computeType);
  const char *(*statusName)(cublasStatus);
};

struct CublasLt::Plan {
  CublasLtLibrary *lib = nullptr;
  Handle desc = nullptr, a = nullptr, b = nullptr, c = nullptr;
  HeuristicResult algo{};
  ~Plan() {
    for (Handle layout : {a, b, c})
      if (layout)
        lib->layoutDestroy(layout);
    if (desc)
      lib->descDestroy(desc);
  }
};

namespace {
absl::Status check(const CublasLtLibrary &lib, cublasStatus status,
                   const char *what) {
  if (status == 0)
    return absl::OkStatus();
  return absl::InternalError(
      absl::StrCat("cuBLASLt ", what,
                   " failed: ", lib.statusName ? lib.statusName(status) : "",
                   " (", status, ")"));
}

/// Sets `g`'s epilogue on `desc`. The heuristic reads the bias and aux
/// pointers only for their alignment, so until the first call they hold
/// stand-in addresses with the real ones' alignment.
absl::Status setEpilogue(const CublasLtLibrary &l, Handle desc,
                         const GemmShape &g) {
  if (g.epilogue == GemmEpilogue::None)
    return absl::OkStatus();
  // cublasLtEpilogue_t of each GemmEpilogue, in its order.
  constexpr int32_t kinds[] = {0, kEpilogueBias, kEpilogueGeluAux,
                               kEpilogueGeluAuxBias, kEpilogueDGelu};
  int32_t kind = kinds[static_cast<int>(g.epilogue)];
  absl::Status s =
      check(l, l.descSet(desc, kDescEpilogue, &kind, sizeof(kind)), "epilogue");
  if (s.ok() && g.hasBias()) {
    const void *standIn = reinterpret_cast<const void *>(g.alignBias);
    s = check(l, l.descSet(desc, kDescBiasPointer, &standIn, sizeof(standIn)),
              "bias pointer");
  }
  if (s.ok() && g.hasAux()) {
    // Row-major C's rows are its column-major columns: the aux matrix, laid
    // out as C, has C's row stride as its leading dimension.
    int64_t ld = g.rowC(), stride = g.strideC;
    const void *standIn = reinterpret_cast<const void *>(g.alignAux);
    s = check(l, l.descSet(desc, kDescAuxPointer, &standIn, sizeof(standIn)),
              "aux pointer");
    if (s.ok())
      s = check(l, l.descSet(desc, kDescAuxLd, &ld, sizeof(ld)), "aux ld");
    if (s.ok())
      s = check(l,
                l.descSet(desc, kDescAuxBatchStride, &stride, sizeof(stride)),
                "aux batch stride");
  }
  return s;
}
} // namespace

absl::StatusOr<std::unique_ptr<CublasLt>>
CublasLt::open(GpuDevice &device, uint64_t workspace, size_t bytes) {
  std::unique_ptr<CublasLt> lt(new CublasLt);
  lt->device = &device;
  lt->lib = std::make_unique<CublasLtLibrary>();
  CublasLtLibrary &l = *lt->lib;
  if (!l.library.open(
          {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"}))
    return absl::UnavailableError(
        "cuBLASLt is not installed (libcublasLt.so.13); the GPU runtime runs "
        "its GEMMs through it: install the CUDA toolkit's cuBLAS or add its "
        "lib64 to LD_LIBRARY_PATH");
  DynamicLibrary &d = l.library;
  d.bind(l.create, "cublasLtCreate");
  d.bind(l.destroy, "cublasLtDestroy");
  d.bind(l.descCreate, "cublasLtMatmulDescCreate");
  d.bind(l.descDestroy, "cublasLtMatmulDescDestroy");
  d.bind(l.descSet, "cublasLtMatmulDescSetAttribute");
  d.bind(l.layoutCreate, "cublasLtMatrixLayoutCreate");
  d.bind(l.layoutDestroy, "cublasLtMatrixLayoutDestroy");
  d.bind(l.layoutSet, "cublasLtMatrixLayoutSetAttribute");
  d.bind(l.prefCreate, "cublasLtMatmulPreferenceCreate");
  d.bind(l.prefDestroy, "cublasLtMatmulPreferenceDestroy");
  d.bind(l.prefSet, "cublasLtMatmulPreferenceSetAttribute");
  d.bind(l.heuristic, "cublasLtMatmulAlgoGetHeuristic");
  d.bind(l.matmul, "cublasLtMatmul");
  d.bind(l.statusName, "cublasLtGetStatusName");
  if (!d.allBound())
    return absl::UnavailableError(
        "libcublasLt lacks an entry point Weft needs");
  if (absl::Status s = check(l, l.create(&lt->handle), "create"); !s.ok())
    return s;
  lt->workspace = workspace;
  lt->workspaceBytes = bytes;
  return lt;
}

CublasLt::~CublasLt() {
  plans.clear();
  if (blasHandle)
    blas->destroy(blasHandle);
  if (handle)
    lib->destroy(handle);
}

absl::Status CublasLt::prepare(const GemmShape &g) {
  if (plans.count(g.key()))
    return absl::OkStatus();
  if (g.type != DType::F32 && g.type != DType::BF16)
    return absl::UnimplementedError(absl::StrCat(
        "GPU GEMMs take f32 or bf16, not ", std::string(dtypeName(g.type))));
  if (g.fp8() && (g.transA || !g.transB))
    return absl::UnimplementedError(
        "cuBLASLt's FP8 GEMMs read A [m, k] and B [n, k] only (TN)");
  // MXFP8's 1 x 32 blocks run in Weft's own kernel (GpuProgram); cuBLASLt's
  // VEC32_UE8M0 (Blackwell) reads E8M0 bytes in a swizzled layout.
  if (g.fp8() && (g.scaleModeA == WEFT_FP8_SCALE_VEC32 ||
                  g.scaleModeB == WEFT_FP8_SCALE_VEC32))
    return absl::UnimplementedError(
        "cuBLASLt here takes no 1 x 32 block scales (MXFP8)");
  CublasLtLibrary &l = *lib;
  auto plan = std::make_unique<Plan>();
  plan->lib = &l;
  auto fp8Type = [](DType t) {
    return t == DType::F8E4M3FN ? kCudaR8FE4M3 : kCudaR8FE5M2;
  };
  int type = g.type == DType::F32 ? kCudaR32F : kCudaR16BF;
  int typeOfA = g.fp8() ? fp8Type(g.fp8B) : type,
      typeOfB = g.fp8() ? fp8Type(g.fp8A) : type;
  int outType = g.outType() == DType::F32 ? kCudaR32F : kCudaR16BF;
  // cuBLASLt's A is our B and its B our A (see the file comment), types
  // included.
  int32_t opA = g.transB ? 1 : 0, opB = g.transA ? 1 : 0;
  // A stored row-major matrix of `height` rows `width` wide, `ld` apart, is
  // column-major `width` x `height` with leading dimension `ld`.
  auto layout = [&](Handle *out, int dataType, int64_t width, int64_t height,
                    int64_t ld, int64_t stride) -> absl::Status {
    if (absl::Status s = check(
            l, l.layoutCreate(out, dataType, width, height, ld), "layout");
        !s.ok())
      return s;
    int32_t count = static_cast<int32_t>(g.batch);
    l.layoutSet(*out, kLayoutBatchCount, &count, sizeof(count));
    l.layoutSet(*out, kLayoutBatchStride, &stride, sizeof(stride));
    return absl::OkStatus();
  };
  absl::Status s =
      check(l, l.descCreate(&plan->desc, kComputeF32, kCudaR32F), "desc");
  if (s.ok()) {
    l.descSet(plan->desc, kDescTransA, &opA, sizeof(opA));
    l.descSet(plan->desc, kDescTransB, &opB, sizeof(opB));
    // Block scales (cuBLASLt 12.9+ on Hopper), swapped with the operands:
    // our A's per-row scales are its B's outer vector of N. Per-tensor
    // scales keep the default mode.
    if (g.fp8() && (g.scaleModeA != 0 || g.scaleModeB != 0)) {
      int32_t modeA = kScaleModes[g.scaleModeB],
              modeB = kScaleModes[g.scaleModeA];
      // A cuBLASLt without them (before 12.8) would read one scale each:
      // refused, not wrong.
      for (auto [attribute, mode] : {std::pair{kDescAScaleMode, &modeA},
                                     std::pair{kDescBScaleMode, &modeB}})
        if (s.ok())
          s = check(l, l.descSet(plan->desc, attribute, mode, sizeof(*mode)),
                    "FP8 block scale mode (cuBLASLt 12.9+)");
    }
    if (s.ok())
      s = setEpilogue(l, plan->desc, g);
  }
  if (s.ok())
    s = layout(&plan->a, typeOfA, g.transB ? g.k : g.n, g.transB ? g.n : g.k,
               g.rowB(), g.strideB);
  if (s.ok())
    s = layout(&plan->b, typeOfB, g.transA ? g.m : g.k, g.transA ? g.k : g.m,
               g.rowA(), g.strideA);
  if (s.ok())
    s = layout(&plan->c, outType, g.n, g.m, g.rowC(), g.strideC);
  if (!s.ok())
    return s;
  Handle pref = nullptr;
  if (s = check(l, l.prefCreate(&pref), "preference"); !s.ok())
    return s;
  uint64_t most = workspaceBytes;
  l.prefSet(pref, kPrefMaxWorkspace, &most, sizeof(most));
  // Our A is its B (the file comment); C and D are one matrix.
  uint32_t align[4] = {
      static_cast<uint32_t>(g.alignB), static_cast<uint32_t>(g.alignA),
      static_cast<uint32_t>(g.alignC), static_cast<uint32_t>(g.alignC)};
  for (auto [attribute, bytes] :
       {std::pair{kPrefAlignA, &align[0]}, std::pair{kPrefAlignB, &align[1]},
        std::pair{kPrefAlignC, &align[2]}, std::pair{kPrefAlignD, &align[3]}})
    l.prefSet(pref, attribute, bytes, sizeof(uint32_t));
  int found = 0;
  s = check(l,
            l.heuristic(handle, plan->desc, plan->a, plan->b, plan->c, plan->c,
                        pref, 1, &plan->algo, &found),
            "heuristic");
  l.prefDestroy(pref);
  if (!s.ok())
    return s;
  if (found == 0)
    return absl::UnimplementedError(absl::StrCat(
        "cuBLASLt has no algorithm for a ", g.m, "x", g.n, "x", g.k,
        " GEMM (batch ", g.batch, ", epilogue ", gemmEpilogueName(g.epilogue),
        "; weftc compile --gemm-epilogues=false avoids them)"));
  plans[g.key()] = std::move(plan);
  return absl::OkStatus();
}

absl::Status CublasLt::matmul(const GemmShape &g, const GemmOperands &ops,
                              void *stream) {
  auto it = plans.find(g.key());
  if (it == plans.end())
    return absl::FailedPreconditionError("GEMM shape was not prepared");
  const Plan &p = *it->second;
  // The descriptor is read when the call is queued (and captured into a
  // graph with these values), so one shared by GEMMs of a shape may change.
  // The scales swap with the operands, as A and B do.
  for (auto [wanted, attribute, address] :
       {std::tuple{g.hasBias(), kDescBiasPointer, ops.bias},
        std::tuple{g.hasAux(), kDescAuxPointer, ops.aux},
        std::tuple{g.fp8(), kDescAScalePointer, ops.scaleB},
        std::tuple{g.fp8(), kDescBScalePointer, ops.scaleA}}) {
    if (!wanted)
      continue;
    const void *pointer = reinterpret_cast<const void *>(address);
    if (absl::Status s = check(
            *lib, lib->descSet(p.desc, attribute, &pointer, sizeof(pointer)),
            "epilogue pointer");
        !s.ok())
      return s;
  }
  uint64_t a = ops.a, b = ops.b, c = ops.c;
  float alpha = g.alpha, beta = g.beta;
  return check(*lib,
               lib->matmul(handle, p.desc, &alpha, reinterpret_cast<void *>(b),
                           p.a, reinterpret_cast<void *>(a), p.b, &beta,
                           reinterpret_cast<void *>(c), p.c,
                           reinterpret_cast<void *>(c), p.c, p.algo.algo,
                           reinterpret_cast<void *>(workspace), workspaceBytes,
                           stream),
               "matmul");
}

absl::Status CublasLt::openBlas() {
  // Only programs with grouped GEMMs (experts) need cuBLAS itself.
  if (blasHandle)
    return absl::OkStatus();
  blas = std::make_unique<CublasLibrary>();
  CublasLibrary &c = *blas;
  if (!c.library.open({"libcublas.so.13", "libcublas.so.12", "libcublas.so"}))
    return absl::UnavailableError(
        "cuBLAS is not installed (libcublas.so.13); the GPU runtime runs its "
        "grouped GEMMs through it: install the CUDA toolkit's cuBLAS or add "
        "its lib64 to LD_LIBRARY_PATH");
  c.library.bind(c.create, "cublasCreate_v2");
  c.library.bind(c.destroy, "cublasDestroy_v2");
  c.library.bind(c.setStream, "cublasSetStream_v2");
  c.library.bind(c.grouped, "cublasGemmGroupedBatchedEx");
  c.library.bind(c.statusName, "cublasGetStatusName");
  if (!c.library.allBound())
    return absl::UnavailableError(
        "libcublas lacks cublasGemmGroupedBatchedEx (cuBLAS 12.5 or later)");
  return blasCheck(c.create(&blasHandle), "create");
}

absl::Status CublasLt::blasCheck(int status, const char *what) const {
  if (status == 0)
    return absl::OkStatus();
  return absl::InternalError(absl::StrCat("cuBLAS ", what,
                                          " failed: ", blas->statusName(status),
                                          " (", status, ")"));
}

absl::Status CublasLt::groupedMatmul(const std::vector<GemmProblem> &problems,
                                     DeviceBuffer scratch, void *stream) {
  if (absl::Status s = openBlas(); !s.ok())
    return s;
  // Problems writing one C run in separate calls, in order (a wgrad's
  // groups of one expert accumulate): problem i goes in the call after the
  // last one holding its C.
  std::map<uint64_t, size_t> lastCall;
  std::vector<std::vector<size_t>> calls;
  for (size_t i = 0; i < problems.size(); ++i) {
    auto [it, fresh] = lastCall.try_emplace(problems[i].operands.c, 0);
    if (!fresh)
      ++it->second;
    if (it->second == calls.size())
      calls.emplace_back();
    calls[it->second].push_back(i);
  }
  // cuBLAS's A is our B and its B our A (the file comment); one problem
  // per cuBLAS group. The matrices' addresses go to the device in scratch:
  // every call's A, then B, then C.
  size_t n = problems.size();
  if (scratch.bytes < groupedScratchBytes(n))
    return absl::InternalError("grouped GEMM scratch too small");
  std::vector<uint64_t> pointers(3 * n);
  std::vector<int> transa, transb, m, nn, k, lda, ldb, ldc, ones(n, 1);
  std::vector<float> alpha, beta;
  for (const std::vector<size_t> &call : calls)
    for (size_t i : call) {
      const GemmShape &g = problems[i].shape;
      const GemmOperands &o = problems[i].operands;
      if (g.type != DType::F32 || g.batch != 1 ||
          g.epilogue != GemmEpilogue::None)
        return absl::UnimplementedError(
            "grouped GEMMs take f32 without an epilogue");
      for (int64_t v : {g.m, g.n, g.k, g.rowA(), g.rowB(), g.rowC()})
        if (v > std::numeric_limits<int>::max())
          return absl::UnimplementedError(absl::StrCat(
              "a grouped GEMM dimension of ", v, " is past cuBLAS's int"));
      size_t at = transa.size();
      pointers[at] = o.b;
      pointers[n + at] = o.a;
      pointers[2 * n + at] = o.c;
      transa.push_back(g.transB ? 1 : 0);
      transb.push_back(g.transA ? 1 : 0);
      m.push_back(static_cast<int>(g.n));
      nn.push_back(static_cast<int>(g.m));
      k.push_back(static_cast<int>(g.k));
      lda.push_back(static_cast<int>(g.rowB()));
      ldb.push_back(static_cast<int>(g.rowA()));
      ldc.push_back(static_cast<int>(g.rowC()));
      alpha.push_back(g.alpha);
      beta.push_back(g.beta);
    }
  // The backend gives each grouped GEMM launch its own scratch and runs
  // programs with them launch by launch, so nothing queued still reads it.
  // The copy is synchronous on the legacy default stream, which the
  // device's streams (blocking, CudaDevice) wait for: the GEMM below reads
  // the arrays after it.
  if (absl::Status s = device->copyToDevice(scratch, pointers.data(),
                                            pointers.size() * sizeof(uint64_t));
      !s.ok())
    return s;
  if (absl::Status s =
          blasCheck(blas->setStream(blasHandle, stream), "set stream");
      !s.ok())
    return s;
  auto *array = reinterpret_cast<void **>(scratch.address);
  size_t first = 0;
  for (const std::vector<size_t> &call : calls) {
    int count = static_cast<int>(call.size());
    cublasStatus status =
        blas->grouped(blasHandle, &transa[first], &transb[first], &m[first],
                      &nn[first], &k[first], &alpha[first], array + first,
                      kCudaR32F, &lda[first], array + n + first, kCudaR32F,
                      &ldb[first], &beta[first], array + 2 * n + first,
                      kCudaR32F, &ldc[first], count, ones.data(), kComputeF32);
    if (absl::Status s = blasCheck(status, "grouped GEMM"); !s.ok())
      return s;
    first += call.size();
  }
  return absl::OkStatus();
}

} // namespace weft::runtime
