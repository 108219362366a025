//===- CublasLt.cpp - GEMMs through cuBLASLt ------------------------------===//
//
// cuBLASLt is column-major and Weft row-major: a row-major C = A B is the
// column-major C^T = B^T A^T, so every GEMM is handed over with A and B
// swapped, and each row-major matrix read as its column-major transpose.
//
//===----------------------------------------------------------------------===//

#include "runtime/gpu/CublasLt.h"

#include "runtime/gpu/DynamicLibrary.h"

#include "absl/strings/str_cat.h"

namespace weft::runtime {

// The few cuBLASLt types and constants Weft uses, with cublasLt.h's values,
// so building needs no CUDA headers.
using cublasStatus = int;
using Handle = void *;
constexpr int kCudaR32F = 0, kCudaR16BF = 14; // cudaDataType_t
constexpr int kComputeF32 = 68;               // CUBLAS_COMPUTE_32F
constexpr int kDescTransA = 3, kDescTransB = 4;
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
} // namespace

absl::StatusOr<std::unique_ptr<CublasLt>> CublasLt::open(uint64_t workspace,
                                                         size_t bytes) {
  std::unique_ptr<CublasLt> lt(new CublasLt);
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
  if (handle)
    lib->destroy(handle);
}

absl::Status CublasLt::prepare(const GemmShape &g) {
  if (plans.count(g.key()))
    return absl::OkStatus();
  if (g.type != DType::F32 && g.type != DType::BF16)
    return absl::UnimplementedError(absl::StrCat(
        "GPU GEMMs take f32 or bf16, not ", std::string(dtypeName(g.type))));
  CublasLtLibrary &l = *lib;
  auto plan = std::make_unique<Plan>();
  plan->lib = &l;
  int type = g.type == DType::F32 ? kCudaR32F : kCudaR16BF;
  int outType = g.outType() == DType::F32 ? kCudaR32F : kCudaR16BF;
  // cuBLASLt's A is our B and its B our A (see the file comment).
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
    s = layout(&plan->a, type, g.transB ? g.k : g.n, g.transB ? g.n : g.k,
               g.rowB(), g.strideB);
  }
  if (s.ok())
    s = layout(&plan->b, type, g.transA ? g.m : g.k, g.transA ? g.k : g.m,
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
    return absl::UnimplementedError(
        absl::StrCat("cuBLASLt has no algorithm for a ", g.m, "x", g.n, "x",
                     g.k, " GEMM (batch ", g.batch, ")"));
  plans[g.key()] = std::move(plan);
  return absl::OkStatus();
}

absl::Status CublasLt::matmul(const GemmShape &g, uint64_t a, uint64_t b,
                              uint64_t c, void *stream) {
  auto it = plans.find(g.key());
  if (it == plans.end())
    return absl::FailedPreconditionError("GEMM shape was not prepared");
  const Plan &p = *it->second;
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

} // namespace weft::runtime
