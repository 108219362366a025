//===- SchedBundle.cpp - load and validate a bundle v2 manifest -----------===//
//
// Decoding and validation are one pass per object, in the order the
// manifest is written: the module-level declarations, then each program
// (its buffers, instructions, the memory plan and the stream order), the
// schedules, and last the kernel files. The checks are the sched
// verifiers' (dialects/sched/IR/SchedOps.cpp) restated on plain structs;
// where a rule changes there it changes here.
//
//===----------------------------------------------------------------------===//

#include "runtime/exec/SchedBundle.h"

#include "runtime/dist/Mesh.h"

#include "runtime/support/Files.h"
#include "runtime/support/Fp8Scaling.h"

#include "runtime/support/Json.h"
#include "runtime/support/Status.h"

// The one dialect header the runtime includes: plain C++ with no MLIR, the
// statement of each scratch layout that the bundle format depends on.
#include "dialects/sched/IR/ScratchLayout.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <algorithm>
#include <cfloat>
#include <climits>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <tuple>
#include <utility>

namespace weft::runtime::sched {
namespace {
using json = nlohmann::json;
namespace scratch = ::weft::sched::scratch;

constexpr int64_t kMaxBytes = int64_t(1) << 62;
constexpr int64_t kMaxMeshRanks = int64_t(1) << 20;

//===----------------------------------------------------------------------===//
// Checked arithmetic and names
//===----------------------------------------------------------------------===//

std::optional<int64_t> checkedMul(int64_t a, int64_t b) {
  int64_t out;
  if (__builtin_mul_overflow(a, b, &out))
    return std::nullopt;
  return out;
}

std::optional<int64_t> checkedAdd(int64_t a, int64_t b) {
  int64_t out;
  if (__builtin_add_overflow(a, b, &out))
    return std::nullopt;
  return out;
}

absl::Status invalid(absl::string_view where, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(where, ": ", what));
}

std::string list(const std::vector<int64_t> &v) {
  return absl::StrCat("[", absl::StrJoin(v, ", "), "]");
}

std::string quoted(const std::vector<std::string> &v) {
  std::vector<std::string> q;
  for (const std::string &s : v)
    q.push_back(absl::StrCat("'", s, "'"));
  return absl::StrCat("[", absl::StrJoin(q, ", "), "]");
}

std::string typeText(const TensorType &t) {
  return absl::StrCat(list(t.shape), " ", dtypeText(t.dtype));
}

const char *jsonKind(const json &v) {
  switch (v.type()) {
  case json::value_t::null:
    return "null";
  case json::value_t::boolean:
    return "a boolean";
  case json::value_t::string:
    return "a string";
  case json::value_t::number_integer:
  case json::value_t::number_unsigned:
    return "an integer";
  case json::value_t::number_float:
    return "a number with a fraction or exponent";
  case json::value_t::array:
    return "an array";
  case json::value_t::object:
    return "an object";
  default:
    return "not a JSON value";
  }
}

/// An enum spelled as a string in the manifest.
template <typename E> struct Spelling {
  const char *name;
  E value;
};

constexpr Spelling<DType> kDTypes[] = {
    {"f32", DType::F32},       {"bf16", DType::BF16},
    {"f16", DType::F16},       {"f8e4m3fn", DType::F8E4M3FN},
    {"f8e5m2", DType::F8E5M2}, {"i32", DType::I32},
    {"i64", DType::I64}};
constexpr Spelling<InitKind> kInits[] = {{"zeros", InitKind::Zeros},
                                         {"ones", InitKind::Ones},
                                         {"normal", InitKind::Normal},
                                         {"uniform", InitKind::Uniform}};
constexpr Spelling<ScalarType> kScalarTypes[] = {{"i64", ScalarType::I64},
                                                 {"i32", ScalarType::I32},
                                                 {"f32", ScalarType::F32},
                                                 {"f64", ScalarType::F64}};
constexpr Spelling<int> kScaleModes[] = {{"tensor", WEFT_FP8_SCALE_TENSOR},
                                         {"rows", WEFT_FP8_SCALE_ROWS},
                                         {"vec128", WEFT_FP8_SCALE_VEC128},
                                         {"blk128", WEFT_FP8_SCALE_BLK128},
                                         {"vec32", WEFT_FP8_SCALE_VEC32}};
constexpr Spelling<Epilogue> kEpilogues[] = {{"none", Epilogue::None},
                                             {"bias", Epilogue::Bias},
                                             {"gelu", Epilogue::Gelu},
                                             {"bias_gelu", Epilogue::BiasGelu},
                                             {"dgelu", Epilogue::Dgelu}};
constexpr Spelling<Reduction> kReductions[] = {{"none", Reduction::None},
                                               {"sum", Reduction::Sum},
                                               {"max", Reduction::Max},
                                               {"mean", Reduction::Mean}};
constexpr Spelling<CollectiveKind> kCollectives[] = {
    {"all_reduce", CollectiveKind::AllReduce},
    {"all_gather", CollectiveKind::AllGather},
    {"reduce_scatter", CollectiveKind::ReduceScatter},
    {"all_to_all", CollectiveKind::AllToAll}};
constexpr Spelling<AttentionAlgorithm> kAlgorithms[] = {
    {"gemm_softmax", AttentionAlgorithm::GemmSoftmax},
    {"flash", AttentionAlgorithm::Flash}};
constexpr Spelling<Op> kOps[] = {
    {"launch", Op::Launch},
    {"gemm", Op::Gemm},
    {"attention", Op::Attention},
    {"attention_grad", Op::AttentionGrad},
    {"embedding", Op::Embedding},
    {"embedding_grad", Op::EmbeddingGrad},
    {"rope", Op::Rope},
    {"cross_entropy", Op::CrossEntropy},
    {"cross_entropy_grad", Op::CrossEntropyGrad},
    {"reduce", Op::Reduce},
    {"softmax", Op::Softmax},
    {"dropout", Op::Dropout},
    {"fp8_amax", Op::Fp8Amax},
    {"fp8_quantize", Op::Fp8Quantize},
    {"fp8_cast", Op::Fp8Cast},
    {"fp8_scale_inv", Op::Fp8ScaleInv},
    {"fp8_encode", Op::Fp8Encode},
    {"fp8_decode", Op::Fp8Decode},
    {"fp8_group_quantize", Op::Fp8GroupQuantize},
    {"fp8_group_cast", Op::Fp8GroupCast},
    {"layer_norm_grad", Op::LayerNormGrad},
    {"rms_norm_grad", Op::RmsNormGrad},
    {"one_hot", Op::OneHot},
    {"topk", Op::TopK},
    {"topk_gating", Op::TopKGating},
    {"expert_route", Op::ExpertRoute},
    {"expert_dispatch", Op::ExpertDispatch},
    {"expert_combine", Op::ExpertCombine},
    {"expert_gather", Op::ExpertGather},
    {"expert_scatter", Op::ExpertScatter},
    {"grouped_matmul", Op::GroupedMatmul},
    {"grouped_matmul_wgrad", Op::GroupedMatmulWgrad},
    {"copy", Op::Copy},
    {"fill", Op::Fill},
    {"collective", Op::Collective},
    {"ragged_all_to_all", Op::RaggedAllToAll},
    {"send", Op::Send},
    {"recv", Op::Recv},
    {"ring_shift", Op::RingShift},
    {"record", Op::Record},
    {"wait", Op::Wait}};

template <typename E, size_t N>
std::optional<E> lookup(const Spelling<E> (&table)[N], std::string_view name) {
  for (const Spelling<E> &s : table)
    if (name == s.name)
      return s.value;
  return std::nullopt;
}

template <typename E, size_t N>
const char *spell(const Spelling<E> (&table)[N], E value) {
  for (const Spelling<E> &s : table)
    if (s.value == value)
      return s.name;
  return "?";
}

template <typename E, size_t N>
std::string spellings(const Spelling<E> (&table)[N]) {
  std::vector<std::string> names;
  for (const Spelling<E> &s : table)
    names.push_back(absl::StrCat("\"", s.name, "\""));
  return absl::StrJoin(names, ", ");
}

bool isFloat(DType t) {
  return t == DType::F32 || t == DType::BF16 || t == DType::F16 ||
         t == DType::F8E4M3FN || t == DType::F8E5M2;
}
bool isInt(DType t) { return t == DType::I32 || t == DType::I64; }

/// A name a bundle directory may hold: no path, no parent.
bool isPlainFileName(const std::string &name) {
  return !name.empty() && name != "." && name.find('/') == std::string::npos &&
         name.find('\0') == std::string::npos &&
         name.find("..") == std::string::npos;
}

//===----------------------------------------------------------------------===//
// Typed reads of one JSON object
//===----------------------------------------------------------------------===//

/// One object of the manifest, read field by field: each read is typed
/// (no defaults, no coercion beyond integer-as-number), and done() refuses
/// the fields nobody read, so a misspelt field is an error too.
class Obj {
public:
  static absl::StatusOr<Obj> of(const json &v, std::string where) {
    if (!v.is_object())
      return invalid(where,
                     absl::StrCat("must be an object, not ", jsonKind(v)));
    return Obj(v, std::move(where));
  }

  const std::string &where() const { return at; }
  /// Names the object by what it is once that has been read.
  void rename(std::string where) { at = std::move(where); }
  absl::Status fail(absl::string_view what) const { return invalid(at, what); }
  bool has(const char *key) const { return v->contains(key); }

  absl::StatusOr<const json *> get(const char *key) {
    read.insert(key);
    auto it = v->find(key);
    if (it == v->end())
      return fail(absl::StrCat("field '", key, "' is missing"));
    return &*it;
  }

  absl::Status done() const {
    for (auto it = v->begin(); it != v->end(); ++it)
      if (!read.count(it.key()))
        return fail(absl::StrCat("has unknown field '", it.key(), "'"));
    return absl::OkStatus();
  }

  absl::StatusOr<int64_t> toI64(const json &x, const std::string &what) const {
    if (x.is_number_unsigned() &&
        x.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
      return fail(
          absl::StrCat(what, " is ", x.get<uint64_t>(), ", outside int64"));
    if (!x.is_number_integer())
      return fail(absl::StrCat(what, " must be an integer, not ", jsonKind(x)));
    return x.get<int64_t>();
  }

  absl::StatusOr<int64_t> i64(const char *key) {
    const json *x;
    WEFT_ASSIGN(x, get(key));
    return toI64(*x, field(key));
  }

  absl::StatusOr<double> number(const char *key) {
    const json *x;
    WEFT_ASSIGN(x, get(key));
    if (!x->is_number())
      return fail(
          absl::StrCat(field(key), " must be a number, not ", jsonKind(*x)));
    return x->get<double>();
  }

  absl::StatusOr<bool> flag(const char *key) {
    const json *x;
    WEFT_ASSIGN(x, get(key));
    if (!x->is_boolean())
      return fail(absl::StrCat(field(key), " must be true or false, not ",
                               jsonKind(*x)));
    return x->get<bool>();
  }

  absl::StatusOr<std::string> str(const char *key) {
    const json *x;
    WEFT_ASSIGN(x, get(key));
    if (!x->is_string())
      return fail(
          absl::StrCat(field(key), " must be a string, not ", jsonKind(*x)));
    return x->get<std::string>();
  }

  absl::StatusOr<const json *> array(const char *key) {
    const json *x;
    WEFT_ASSIGN(x, get(key));
    if (!x->is_array())
      return fail(
          absl::StrCat(field(key), " must be an array, not ", jsonKind(*x)));
    return x;
  }

  absl::StatusOr<std::vector<int64_t>> i64s(const char *key) {
    const json *x;
    WEFT_ASSIGN(x, array(key));
    std::vector<int64_t> out;
    for (size_t i = 0; i < x->size(); ++i) {
      int64_t e;
      WEFT_ASSIGN(e, toI64((*x)[i], absl::StrCat(field(key), " entry ", i)));
      out.push_back(e);
    }
    return out;
  }

  template <size_t N>
  absl::StatusOr<std::array<int64_t, N>> i64Array(const char *key) {
    std::vector<int64_t> v;
    WEFT_ASSIGN(v, i64s(key));
    if (v.size() != N)
      return fail(absl::StrCat(field(key), " must have ", N, " entries, has ",
                               v.size()));
    std::array<int64_t, N> out;
    std::copy(v.begin(), v.end(), out.begin());
    return out;
  }

  absl::StatusOr<std::vector<std::string>> strs(const char *key) {
    const json *x;
    WEFT_ASSIGN(x, array(key));
    return stringsOf(*x, field(key));
  }

  absl::StatusOr<std::vector<std::string>>
  stringsOf(const json &x, const std::string &what) const {
    if (!x.is_array())
      return fail(absl::StrCat(what, " must be an array, not ", jsonKind(x)));
    std::vector<std::string> out;
    for (size_t i = 0; i < x.size(); ++i) {
      if (!x[i].is_string())
        return fail(absl::StrCat(what, " entry ", i, " must be a string, not ",
                                 jsonKind(x[i])));
      out.push_back(x[i].get<std::string>());
    }
    return out;
  }

  template <typename E, size_t N>
  absl::StatusOr<E> choice(const char *key, const Spelling<E> (&table)[N]) {
    std::string s;
    WEFT_ASSIGN(s, str(key));
    std::optional<E> e = lookup(table, s);
    if (!e)
      return fail(absl::StrCat(field(key), " is \"", s, "\", not one of ",
                               spellings(table)));
    return *e;
  }

  /// "shape" and "dtype", with the sched buffer type's rules.
  absl::StatusOr<TensorType> type() {
    TensorType t;
    WEFT_ASSIGN(t.shape, i64s("shape"));
    WEFT_ASSIGN(t.dtype, choice("dtype", kDTypes));
    int64_t bytes = static_cast<int64_t>(dtypeSize(t.dtype));
    for (size_t i = 0; i < t.shape.size(); ++i) {
      if (t.shape[i] < 0)
        return fail(absl::StrCat("field 'shape' dimension ", i, " is ",
                                 t.shape[i], ", negative"));
      std::optional<int64_t> next = checkedMul(bytes, t.shape[i]);
      if (!next || *next > kMaxBytes)
        return fail(absl::StrCat("field 'shape' ", list(t.shape),
                                 " is larger than 2^62 bytes"));
      bytes = *next;
    }
    return t;
  }

  static std::string field(const char *key) {
    return absl::StrCat("field '", key, "'");
  }

private:
  Obj(const json &v, std::string where) : v(&v), at(std::move(where)) {}

  const json *v;
  std::string at;
  std::set<std::string> read;
};

/// Declares `Obj name` for JSON value `value`, or returns its error.
#define WEFT_OBJECT(name, value, where)                                        \
  absl::StatusOr<Obj> name##OrError = Obj::of((value), (where));               \
  if (!name##OrError.ok())                                                     \
    return name##OrError.status();                                             \
  Obj &name = *name##OrError

//===----------------------------------------------------------------------===//
// Module-level declarations
//===----------------------------------------------------------------------===//

/// The size of the group of `axes` (distinct axes of the mesh). Without a
/// mesh only an empty list is allowed, and only when `needsMesh` is false.
absl::StatusOr<int64_t> groupSize(const std::optional<Mesh> &mesh,
                                  const std::vector<std::string> &axes,
                                  const std::string &what, bool needsMesh) {
  if (!mesh && (needsMesh || !axes.empty()))
    return absl::InvalidArgumentError(
        absl::StrCat(what, " names mesh axes but the bundle has no mesh"));
  int64_t size = 1;
  std::set<std::string> seen;
  for (const std::string &axis : axes) {
    int64_t n = mesh->axisSize(axis);
    if (n == 0)
      return absl::InvalidArgumentError(
          absl::StrCat(what, " names '", axis,
                       "', which is not an axis of mesh '", mesh->name, "'"));
    if (!seen.insert(axis).second)
      return absl::InvalidArgumentError(
          absl::StrCat(what, " names mesh axis '", axis, "' twice"));
    std::optional<int64_t> next = checkedMul(size, n);
    if (!next)
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": the group of mesh axes overflows int64"));
    size = *next;
  }
  return size;
}

/// A "split" field: per dimension of a rank-`rank` tensor, axes of the mesh,
/// each at most once over all dimensions.
absl::StatusOr<Split> readSplit(Obj &o, const std::optional<Mesh> &mesh,
                                size_t rank) {
  const json *arr;
  WEFT_ASSIGN(arr, o.array("split"));
  if (arr->size() != rank)
    return o.fail(absl::StrCat("field 'split' has ", arr->size(),
                               " entries for a rank-", rank, " tensor"));
  Split split;
  std::vector<std::string> all;
  for (size_t d = 0; d < arr->size(); ++d) {
    std::string what = absl::StrCat("field 'split' entry ", d);
    std::vector<std::string> axes;
    WEFT_ASSIGN(axes, o.stringsOf((*arr)[d], what));
    absl::StatusOr<int64_t> group = groupSize(mesh, axes, what, false);
    if (!group.ok())
      return o.fail(group.status().message());
    all.insert(all.end(), axes.begin(), axes.end());
    split.push_back(std::move(axes));
  }
  std::sort(all.begin(), all.end());
  if (auto dup = std::adjacent_find(all.begin(), all.end()); dup != all.end())
    return o.fail(
        absl::StrCat("field 'split' uses mesh axis '", *dup, "' twice"));
  return split;
}

/// The most micro-batches a dropout mask's block is cut into (a schedule
/// has as many; the loader checks they agree).
constexpr int64_t kMaxMicrobatches = int64_t(1) << 20;

/// A dropout mask's block: "split" (its rank is checked against the
/// input's later), "has_microbatch" and "microbatches". Absent in bundles
/// written before them: unsplit, one batch.
absl::Status readMaskBlock(Obj &o, const std::optional<Mesh> &mesh,
                           MaskBlockAttrs &out) {
  if (o.has("split")) {
    const json *dims;
    WEFT_ASSIGN(dims, o.array("split"));
    WEFT_ASSIGN(out.split, readSplit(o, mesh, dims->size()));
  }
  if (o.has("has_microbatch"))
    WEFT_ASSIGN(out.hasMicrobatch, o.flag("has_microbatch"));
  if (o.has("microbatches"))
    WEFT_ASSIGN(out.microbatches, o.i64("microbatches"));
  if (out.hasMicrobatch != o.has("microbatches") || out.microbatches < 1 ||
      out.microbatches > kMaxMicrobatches)
    return o.fail(absl::StrCat("fields 'has_microbatch' and 'microbatches' "
                               "(1 to ",
                               kMaxMicrobatches, ") come together"));
  return absl::OkStatus();
}

absl::StatusOr<std::optional<Mesh>> readMesh(Obj &top) {
  if (!top.has("mesh")) // A one-rank bundle.
    return std::optional<Mesh>();
  const json *m;
  WEFT_ASSIGN(m, top.get("mesh"));
  WEFT_OBJECT(o, *m, "mesh");
  Mesh mesh;
  WEFT_ASSIGN(mesh.name, o.str("name"));
  WEFT_ASSIGN(mesh.axes, o.strs("axes"));
  WEFT_ASSIGN(mesh.sizes, o.i64s("sizes"));
  WEFT_RETURN_IF_ERROR(o.done());
  if (mesh.name.empty())
    return o.fail("field 'name' is empty");
  if (mesh.axes.size() != mesh.sizes.size())
    return o.fail(absl::StrCat("has ", mesh.axes.size(), " axes but ",
                               mesh.sizes.size(), " sizes"));
  std::set<std::string> seen;
  int64_t ranks = 1;
  for (size_t i = 0; i < mesh.axes.size(); ++i) {
    if (mesh.axes[i].empty())
      return o.fail(absl::StrCat("field 'axes' entry ", i, " is empty"));
    if (!seen.insert(mesh.axes[i]).second)
      return o.fail(
          absl::StrCat("field 'axes' has axis '", mesh.axes[i], "' twice"));
    if (mesh.sizes[i] < 1)
      return o.fail(absl::StrCat("field 'sizes': axis '", mesh.axes[i],
                                 "' has size ", mesh.sizes[i]));
    std::optional<int64_t> next = checkedMul(ranks, mesh.sizes[i]);
    if (!next || *next > kMaxMeshRanks)
      return o.fail(absl::StrCat("field 'sizes' ", list(mesh.sizes),
                                 " makes more than 2^20 ranks"));
    ranks = *next;
  }
  return std::optional<Mesh>(std::move(mesh));
}

absl::StatusOr<KernelFile> readKernelFile(const json &v, std::string where) {
  WEFT_OBJECT(o, v, std::move(where));
  KernelFile f;
  WEFT_ASSIGN(f.file, o.str("file"));
  WEFT_ASSIGN(f.xxh3, o.str("xxh3"));
  WEFT_RETURN_IF_ERROR(o.done());
  if (!isPlainFileName(f.file))
    return o.fail(absl::StrCat("field 'file' is \"", f.file,
                               "\"; kernel files are plain names inside the "
                               "bundle directory (no '/', no '..')"));
  if (f.xxh3.size() != 32 ||
      f.xxh3.find_first_not_of("0123456789abcdef") != std::string::npos)
    return o.fail(absl::StrCat("field 'xxh3' is \"", f.xxh3,
                               "\", not 32 lowercase hex digits"));
  return f;
}

absl::StatusOr<KernelFiles> readKernels(const json &v) {
  WEFT_OBJECT(o, v, "kernels");
  KernelFiles k;
  if (o.has("cpu")) {
    const json *cpu;
    WEFT_ASSIGN(cpu, o.get("cpu"));
    WEFT_ASSIGN(k.cpu, readKernelFile(*cpu, "kernels.cpu"));
  }
  if (o.has("cuda")) {
    const json *cuda;
    WEFT_ASSIGN(cuda, o.get("cuda"));
    WEFT_OBJECT(archs, *cuda, "kernels.cuda");
    for (auto it = cuda->begin(); it != cuda->end(); ++it) {
      if (it.key().empty())
        return archs.fail("names an empty architecture");
      WEFT_ASSIGN(k.cuda[it.key()],
                  readKernelFile(*it, absl::StrCat("kernels.cuda.", it.key())));
    }
  }
  if (o.has("source")) {
    std::string source;
    WEFT_ASSIGN(source, o.str("source"));
    if (!isPlainFileName(source))
      return o.fail(absl::StrCat("field 'source' is \"", source,
                                 "\"; kernel files are plain names inside the "
                                 "bundle directory (no '/', no '..')"));
    k.source = source;
  }
  WEFT_RETURN_IF_ERROR(o.done());
  return k;
}

absl::StatusOr<Param> readParam(const json &v, size_t i,
                                const std::optional<Mesh> &mesh) {
  WEFT_OBJECT(o, v, absl::StrCat("params[", i, "]"));
  Param p;
  WEFT_ASSIGN(p.name, o.str("name"));
  o.rename(absl::StrCat("param '", p.name, "'"));
  WEFT_ASSIGN(p.type, o.type());
  WEFT_ASSIGN(p.init, o.choice("init", kInits));
  WEFT_ASSIGN(p.state, o.flag("state"));
  bool scaled = p.init == InitKind::Normal || p.init == InitKind::Uniform;
  if (scaled != o.has("scale"))
    return o.fail(absl::StrCat("init '", spell(kInits, p.init),
                               scaled ? "' needs field 'scale'"
                                      : "' takes no field 'scale'"));
  if (scaled) {
    double scale;
    WEFT_ASSIGN(scale, o.number("scale"));
    if (!(scale > 0) || !std::isfinite(scale))
      return o.fail(absl::StrCat("field 'scale' is ", scale,
                                 "; an initializer's scale must be a "
                                 "positive finite number"));
    p.scale = scale;
  }
  if (o.has("split")) {
    WEFT_ASSIGN(p.split, readSplit(o, mesh, p.type.shape.size()));
  }
  if (o.has("pipeline_rank")) {
    int64_t r;
    WEFT_ASSIGN(r, o.i64("pipeline_rank"));
    int64_t ranks = mesh ? mesh->axisSize("pp") : 0;
    if (r < 0 || r >= ranks)
      return o.fail(absl::StrCat("field 'pipeline_rank' is ", r,
                                 ", but the mesh has ", ranks,
                                 " pp coordinates"));
    p.pipelineRank = r;
  }
  if (o.has("checkpoint_rows")) {
    int64_t r;
    WEFT_ASSIGN(r, o.i64("checkpoint_rows"));
    if (p.type.shape.empty())
      return o.fail("field 'checkpoint_rows' needs a tensor of rank 1 or more");
    int64_t global = p.type.shape[0];
    if (p.split) {
      int64_t ways;
      WEFT_ASSIGN(
          ways, groupSize(mesh, (*p.split)[0], "field 'split' entry 0", false));
      global *= ways;
    }
    if (r < 1 || r > global)
      return o.fail(absl::StrCat("field 'checkpoint_rows' is ", r,
                                 ", but the global tensor has ", global,
                                 " rows"));
    p.checkpointRows = r;
  }
  if (o.has("checkpoint_shape")) {
    if (p.checkpointRows)
      return o.fail("fields 'checkpoint_rows' and 'checkpoint_shape' exclude "
                    "each other");
    std::vector<int64_t> held;
    WEFT_ASSIGN(held, o.i64s("checkpoint_shape"));
    int64_t global = p.type.numElements(), stored = 1;
    if (p.split)
      for (const std::vector<std::string> &axes : *p.split) {
        int64_t ways;
        WEFT_ASSIGN(ways, groupSize(mesh, axes, "field 'split'", false));
        global *= ways;
      }
    for (int64_t n : held)
      if (n < 1 || __builtin_mul_overflow(stored, n, &stored))
        return o.fail("field 'checkpoint_shape' must list positive sizes");
    if (stored != global)
      return o.fail(absl::StrCat("field 'checkpoint_shape' holds ", stored,
                                 " elements, but the global tensor has ",
                                 global));
    p.checkpointShape = std::move(held);
  }
  if (o.has("checkpoint_stack")) {
    if (p.checkpointRows || p.checkpointShape)
      return o.fail("field 'checkpoint_stack' excludes 'checkpoint_rows' and "
                    "'checkpoint_shape'");
    std::string stack;
    WEFT_ASSIGN(stack, o.str("checkpoint_stack"));
    if (p.type.shape.size() < 2 || p.type.shape[0] < 1 ||
        std::count(stack.begin(), stack.end(), '*') != 1)
      return o.fail(absl::StrCat("field 'checkpoint_stack' '", stack,
                                 "' must name slices of a tensor of rank >= "
                                 "2 with one '*'"));
    p.checkpointStack = std::move(stack);
  }
  if (o.has("transient")) {
    WEFT_ASSIGN(p.transient, o.flag("transient"));
    if (p.transient && !p.state)
      return o.fail("field 'transient' is true but 'state' is false: only a "
                    "state tensor can be left to its initializer between "
                    "steps");
  }
  if (o.has("probe")) {
    std::string probe, fold;
    WEFT_ASSIGN(probe, o.str("probe"));
    WEFT_ASSIGN(fold, o.str("probe_fold"));
    if (!p.transient)
      return o.fail("field 'probe' needs a transient state tensor");
    if (probe.empty())
      return o.fail("field 'probe' is empty");
    static const std::pair<const char *, Param::ProbeFold> kFolds[] = {
        {"mean", Param::ProbeFold::Mean},
        {"rms", Param::ProbeFold::Rms},
        {"max", Param::ProbeFold::Max},
        {"max_over_mean", Param::ProbeFold::MaxOverMean},
        {"last", Param::ProbeFold::Last}};
    auto it = std::find_if(std::begin(kFolds), std::end(kFolds),
                           [&](const auto &f) { return fold == f.first; });
    if (it == std::end(kFolds))
      return o.fail(absl::StrCat("field 'probe_fold' must be mean, rms, max, "
                                 "max_over_mean or last, not '",
                                 fold, "'"));
    p.probe = std::move(probe);
    p.probeFold = it->second;
  } else if (o.has("probe_fold")) {
    return o.fail("field 'probe_fold' needs field 'probe'");
  }
  WEFT_RETURN_IF_ERROR(o.done());
  if (p.name.empty())
    return o.fail("field 'name' is empty");
  if (!isFloat(p.type.dtype))
    return o.fail(absl::StrCat("field 'dtype': a parameter must hold floats, "
                               "not ",
                               dtypeText(p.type.dtype)));
  return p;
}

absl::StatusOr<Constant> readConstant(const json &v, size_t i) {
  WEFT_OBJECT(o, v, absl::StrCat("constants[", i, "]"));
  Constant c;
  WEFT_ASSIGN(c.name, o.str("name"));
  o.rename(absl::StrCat("constant '", c.name, "'"));
  WEFT_ASSIGN(c.type, o.type());
  if (o.has("splat") == o.has("values"))
    return o.fail("needs exactly one of fields 'splat' and 'values'");
  c.splat = o.has("splat");
  std::vector<const json *> numbers;
  if (c.splat) {
    const json *x;
    WEFT_ASSIGN(x, o.get("splat"));
    numbers.push_back(x);
  } else {
    const json *values;
    WEFT_ASSIGN(values, o.array("values"));
    if (static_cast<int64_t>(values->size()) != c.type.numElements())
      return o.fail(absl::StrCat("field 'values' has ", values->size(),
                                 " numbers for shape ", list(c.type.shape)));
    for (const json &x : *values)
      numbers.push_back(&x);
  }
  const char *field = c.splat ? "field 'splat'" : "field 'values'";
  for (size_t e = 0; e < numbers.size(); ++e) {
    const json &x = *numbers[e];
    std::string what = c.splat ? field : absl::StrCat(field, " entry ", e);
    if (isInt(c.type.dtype)) {
      int64_t n;
      WEFT_ASSIGN(n, o.toI64(x, what));
      if (c.type.dtype == DType::I32 && (n < INT32_MIN || n > INT32_MAX))
        return o.fail(absl::StrCat(what, " is ", n, ", outside i32"));
      c.ints.push_back(n);
    } else {
      if (!x.is_number())
        return o.fail(
            absl::StrCat(what, " must be a number, not ", jsonKind(x)));
      c.floats.push_back(x.get<double>());
    }
  }
  WEFT_RETURN_IF_ERROR(o.done());
  if (c.name.empty())
    return o.fail("field 'name' is empty");
  return c;
}

absl::StatusOr<KernelDecl> readKernelDecl(const json &v, size_t i) {
  WEFT_OBJECT(o, v, absl::StrCat("kernel_decls[", i, "]"));
  KernelDecl k;
  WEFT_ASSIGN(k.name, o.str("name"));
  o.rename(absl::StrCat("kernel_decl '", k.name, "'"));
  for (auto [key, types] :
       {std::pair{"inputs", &k.inputs}, std::pair{"outputs", &k.outputs}}) {
    const json *arr;
    WEFT_ASSIGN(arr, o.array(key));
    for (size_t j = 0; j < arr->size(); ++j) {
      WEFT_OBJECT(t, (*arr)[j], absl::StrCat(o.where(), ", ", key, " ", j));
      TensorType type;
      WEFT_ASSIGN(type, t.type());
      WEFT_RETURN_IF_ERROR(t.done());
      types->push_back(std::move(type));
    }
  }
  std::vector<std::string> scalars;
  WEFT_ASSIGN(scalars, o.strs("scalars"));
  for (size_t j = 0; j < scalars.size(); ++j) {
    std::optional<ScalarType> t = lookup(kScalarTypes, scalars[j]);
    if (!t)
      return o.fail(absl::StrCat("field 'scalars' entry ", j, " is \"",
                                 scalars[j], "\", not one of ",
                                 spellings(kScalarTypes)));
    k.scalars.push_back(*t);
  }
  WEFT_RETURN_IF_ERROR(o.done());
  if (k.name.empty())
    return o.fail("field 'name' is empty");
  return k;
}

//===----------------------------------------------------------------------===//
// Instructions: attributes and operands
//===----------------------------------------------------------------------===//

enum Effect { kRead = 1, kWrite = 2, kReadWrite = 3 };

/// One operand position of an instruction: its ODS name and memory effect.
struct Role {
  std::string name;
  int effect;
};

absl::Status readScalars(Obj &o, std::vector<Scalar> &out) {
  const json *arr;
  WEFT_ASSIGN(arr, o.array("scalars"));
  for (size_t j = 0; j < arr->size(); ++j) {
    const json &s = (*arr)[j];
    std::string what = absl::StrCat("field 'scalars' entry ", j);
    if (!s.is_object() || s.size() != 1)
      return o.fail(absl::StrCat(what, " must be an object with one of ",
                                 spellings(kScalarTypes), " as its key"));
    std::optional<ScalarType> t = lookup(kScalarTypes, s.begin().key());
    if (!t)
      return o.fail(absl::StrCat(what, " has key \"", s.begin().key(),
                                 "\", not one of ", spellings(kScalarTypes)));
    Scalar scalar{*t};
    const json &x = s.begin().value();
    if (*t == ScalarType::I64 || *t == ScalarType::I32) {
      WEFT_ASSIGN(scalar.i, o.toI64(x, what));
      if (*t == ScalarType::I32 &&
          (scalar.i < INT32_MIN || scalar.i > INT32_MAX))
        return o.fail(absl::StrCat(what, " is ", scalar.i, ", outside i32"));
    } else {
      if (!x.is_number())
        return o.fail(
            absl::StrCat(what, " must be a number, not ", jsonKind(x)));
      scalar.f = x.get<double>();
      if (*t == ScalarType::F32 && !(std::abs(scalar.f) <= FLT_MAX))
        return o.fail(absl::StrCat(what, " is ", scalar.f, ", outside f32"));
    }
    out.push_back(scalar);
  }
  return absl::OkStatus();
}

/// Field 'format': whether it is f8e4m3fn (else f8e5m2).
absl::StatusOr<bool> readFp8Format(Obj &o) {
  std::string format;
  WEFT_ASSIGN(format, o.str("format"));
  if (format != "f8e4m3fn" && format != "f8e5m2")
    return o.fail("field 'format': '" + format + "' is not f8e4m3fn or f8e5m2");
  return format == "f8e4m3fn";
}

/// Field 'tile_rows': tiles of an expert's rows, 0 (all of them) or a
/// positive multiple of 32 (an FP8 GEMM's k-blocks).
absl::StatusOr<int64_t> readTileRows(Obj &o) {
  int64_t rows;
  WEFT_ASSIGN(rows, o.i64("tile_rows"));
  if (rows < 0 || rows % 32 != 0)
    return o.fail(absl::StrCat("field 'tile_rows' is ", rows,
                               ", not 0 (all of an expert's rows) or a "
                               "positive multiple of 32"));
  return rows;
}

/// An FP8 GEMM's optional `scale_modes` (A's and B's) into `a` and `b`.
absl::Status readScaleModes(Obj &o, int &a, int &b) {
  if (!o.has("scale_modes"))
    return absl::OkStatus();
  std::vector<std::string> modes;
  WEFT_ASSIGN(modes, o.strs("scale_modes"));
  if (modes.size() != 2)
    return o.fail(absl::StrCat("field 'scale_modes' must have 2 entries "
                               "(A's and B's), has ",
                               modes.size()));
  int *to[] = {&a, &b};
  for (int i = 0; i < 2; ++i) {
    std::optional<int> mode = lookup(kScaleModes, modes[i]);
    if (!mode)
      return o.fail(absl::StrCat("field 'scale_modes' entry ", i, " is \"",
                                 modes[i], "\", not one of ",
                                 spellings(kScaleModes)));
    *to[i] = *mode;
  }
  return absl::OkStatus();
}

absl::StatusOr<InstructionAttrs> readAttrs(Op op, Obj &o,
                                           const SchedBundle &b) {
  switch (op) {
  case Op::Launch: {
    LaunchAttrs a;
    WEFT_ASSIGN(a.kernel, o.str("kernel"));
    auto decl =
        std::find_if(b.kernelDecls.begin(), b.kernelDecls.end(),
                     [&](const KernelDecl &k) { return k.name == a.kernel; });
    if (decl == b.kernelDecls.end())
      return o.fail(absl::StrCat("field 'kernel' names '", a.kernel,
                                 "', which is not a kernel_decl"));
    a.kernelIndex = decl - b.kernelDecls.begin();
    WEFT_ASSIGN(a.grid, o.i64Array<3>("grid"));
    WEFT_ASSIGN(a.block, o.i64("block"));
    WEFT_ASSIGN(a.inputs, o.i64("inputs"));
    WEFT_ASSIGN(a.outputs, o.i64("outputs"));
    WEFT_RETURN_IF_ERROR(readScalars(o, a.scalars));
    return a;
  }
  case Op::Gemm: {
    GemmAttrs a;
    WEFT_ASSIGN(a.mnk, o.i64Array<3>("mnk"));
    WEFT_ASSIGN(a.batch, o.i64("batch"));
    WEFT_ASSIGN(a.ld, o.i64Array<3>("ld"));
    WEFT_ASSIGN(a.strides, o.i64Array<3>("strides"));
    WEFT_ASSIGN(a.epilogue, o.choice("epilogue", kEpilogues));
    WEFT_ASSIGN(a.transposeA, o.flag("transpose_a"));
    WEFT_ASSIGN(a.transposeB, o.flag("transpose_b"));
    WEFT_ASSIGN(a.accumulate, o.flag("accumulate"));
    WEFT_ASSIGN(a.hasBias, o.flag("has_bias"));
    WEFT_ASSIGN(a.hasAux, o.flag("has_aux"));
    WEFT_ASSIGN(a.hasScales, o.flag("has_scales"));
    WEFT_RETURN_IF_ERROR(readScaleModes(o, a.scaleModeA, a.scaleModeB));
    return a;
  }
  case Op::Attention:
  case Op::AttentionGrad: {
    AttentionAttrs a;
    WEFT_ASSIGN(a.scale, o.number("scale"));
    WEFT_ASSIGN(a.causal, o.flag("causal"));
    WEFT_ASSIGN(a.algorithm, o.choice("algorithm", kAlgorithms));
    // Absent in bundles written before positions existed: none.
    if (o.has("has_positions"))
      WEFT_ASSIGN(a.hasPositions, o.flag("has_positions"));
    if (op == Op::AttentionGrad && o.has("has_lse_grad"))
      WEFT_ASSIGN(a.hasLseGrad, o.flag("has_lse_grad"));
    // Absent in bundles written before the entropy: none.
    if (o.has("has_entropy")) {
      if (op == Op::AttentionGrad)
        return o.fail("field 'has_entropy' is attention's, not "
                      "attention_grad's");
      WEFT_ASSIGN(a.hasEntropy, o.flag("has_entropy"));
    }
    // Absent in bundles written before dropout: none.
    if (o.has("dropout")) {
      WEFT_ASSIGN(a.dropout, o.number("dropout"));
      WEFT_ASSIGN(a.seed, o.i64("seed"));
    }
    if (o.has("has_step"))
      WEFT_ASSIGN(a.hasStep, o.flag("has_step"));
    WEFT_RETURN_IF_ERROR(readMaskBlock(o, b.mesh, a.block));
    return a;
  }
  case Op::Embedding:
  case Op::EmbeddingGrad: {
    VocabAttrs a;
    WEFT_ASSIGN(a.vocabAxes, o.strs("vocab_axes"));
    return a;
  }
  case Op::Rope: {
    RopeAttrs a;
    WEFT_ASSIGN(a.theta, o.number("theta"));
    WEFT_ASSIGN(a.positionOffset, o.i64("position_offset"));
    WEFT_ASSIGN(a.inverse, o.flag("inverse"));
    if (o.has("has_positions"))
      WEFT_ASSIGN(a.hasPositions, o.flag("has_positions"));
    return a;
  }
  case Op::CrossEntropy:
  case Op::CrossEntropyGrad: {
    CrossEntropyAttrs a;
    WEFT_ASSIGN(a.ignoreIndex, o.i64("ignore_index"));
    WEFT_ASSIGN(a.vocabAxes, o.strs("vocab_axes"));
    return a;
  }
  case Op::Reduce: {
    ReduceAttrs a;
    WEFT_ASSIGN(a.reduction, o.choice("reduction", kReductions));
    WEFT_ASSIGN(a.dims, o.i64s("dims"));
    return a;
  }
  case Op::Softmax: {
    SoftmaxAttrs a;
    WEFT_ASSIGN(a.dim, o.i64("dim"));
    return a;
  }
  case Op::Dropout: {
    DropoutAttrs a;
    WEFT_ASSIGN(a.rate, o.number("rate"));
    WEFT_ASSIGN(a.seed, o.i64("seed"));
    // Absent in bundles written before them: no step, no positions.
    if (o.has("has_step"))
      WEFT_ASSIGN(a.hasStep, o.flag("has_step"));
    if (o.has("has_positions"))
      WEFT_ASSIGN(a.hasPositions, o.flag("has_positions"));
    WEFT_RETURN_IF_ERROR(readMaskBlock(o, b.mesh, a.block));
    return a;
  }
  case Op::Fp8Quantize: {
    Fp8QuantizeAttrs a;
    WEFT_ASSIGN(a.e4m3, readFp8Format(o));
    WEFT_ASSIGN(a.pow2, o.flag("pow2_scales"));
    return a;
  }
  case Op::Fp8GroupQuantize:
  case Op::Fp8GroupCast: {
    Fp8GroupAttrs a; // A cast's format is checked from out's type.
    if (op == Op::Fp8GroupQuantize)
      WEFT_ASSIGN(a.e4m3, readFp8Format(o));
    WEFT_ASSIGN(a.pow2, o.flag("pow2_scales"));
    WEFT_ASSIGN(a.tileRows, readTileRows(o));
    WEFT_ASSIGN(a.experts, o.i64("experts"));
    if (a.experts < 1)
      return o.fail(
          absl::StrCat("field 'experts' is ", a.experts, ", not positive"));
    return a;
  }
  case Op::Fp8Encode:
  case Op::Fp8Decode: {
    Fp8QuantizeAttrs a; // The format is the codes' type.
    WEFT_ASSIGN(a.pow2, o.flag("pow2_scales"));
    return a;
  }
  case Op::Fp8Cast:
  case Op::Fp8ScaleInv: {
    Fp8QuantizeAttrs a; // The format is checked from the codes' type.
    // Absent in bundles written before fp8_scale_inv took it: untransposed.
    if (op == Op::Fp8Cast || o.has("transpose"))
      WEFT_ASSIGN(a.transpose, o.flag("transpose"));
    // Absent in bundles written before MXFP8 casts existed: f32 scales.
    if (o.has("pow2_scales"))
      WEFT_ASSIGN(a.pow2, o.flag("pow2_scales"));
    if (o.has("scale_mode"))
      WEFT_ASSIGN(a.scaleMode, o.choice("scale_mode", kScaleModes));
    return a;
  }
  case Op::LayerNormGrad:
  case Op::RmsNormGrad: {
    NormGradAttrs a;
    WEFT_ASSIGN(a.epsilon, o.number("epsilon"));
    return a;
  }
  case Op::Fp8Amax:
  case Op::OneHot:
  case Op::ExpertDispatch:
  case Op::ExpertCombine:
  case Op::ExpertGather:
  case Op::ExpertScatter:
    return InstructionAttrs();
  case Op::GroupedMatmulWgrad: {
    GroupedWgradAttrs a;
    // Bundles from before FP8 expert weight gradients have no has_scales.
    if (o.has("has_scales"))
      WEFT_ASSIGN(a.hasScales, o.flag("has_scales"));
    if (a.hasScales)
      WEFT_ASSIGN(a.tileRows, readTileRows(o));
    else if (o.has("tile_rows"))
      return o.fail("field 'tile_rows': takes tiles only with FP8 operands "
                    "(has_scales)");
    return a;
  }
  case Op::TopK: {
    TopKAttrs a;
    WEFT_ASSIGN(a.k, o.i64("k"));
    return a;
  }
  case Op::TopKGating: {
    TopKGatingAttrs a;
    WEFT_ASSIGN(a.k, o.i64("k"));
    WEFT_ASSIGN(a.normalize, o.flag("normalize"));
    return a;
  }
  case Op::ExpertRoute: {
    ExpertRouteAttrs a;
    WEFT_ASSIGN(a.capacity, o.i64("capacity"));
    WEFT_ASSIGN(a.tokenAxes, o.strs("token_axes"));
    return a;
  }
  case Op::GroupedMatmul: {
    GroupedMatmulAttrs a;
    WEFT_ASSIGN(a.transposeRhs, o.flag("transpose_rhs"));
    // Bundles from before FP8 expert GEMMs have no has_scales.
    if (o.has("has_scales"))
      WEFT_ASSIGN(a.hasScales, o.flag("has_scales"));
    WEFT_RETURN_IF_ERROR(
        readScaleModes(o, a.scaleModeInput, a.scaleModeWeight));
    return a;
  }
  case Op::Copy: {
    CopyAttrs a;
    WEFT_ASSIGN(a.sizes, o.i64s("sizes"));
    WEFT_ASSIGN(a.src, o.i64s("src"));
    WEFT_ASSIGN(a.dst, o.i64s("dst"));
    if (o.has("by_rank")) {
      const json *r;
      WEFT_ASSIGN(r, o.get("by_rank"));
      WEFT_OBJECT(byRank, *r, absl::StrCat(o.where(), ": field 'by_rank'"));
      CopyAttrs::ByRank br;
      WEFT_ASSIGN(br.axes, byRank.strs("axes"));
      WEFT_ASSIGN(br.step, byRank.i64("step"));
      WEFT_RETURN_IF_ERROR(byRank.done());
      a.byRank = std::move(br);
    }
    return a;
  }
  case Op::Fill: {
    FillAttrs a;
    WEFT_ASSIGN(a.value, o.number("value"));
    return a;
  }
  case Op::Collective: {
    CollectiveAttrs a;
    WEFT_ASSIGN(a.kind, o.choice("kind", kCollectives));
    WEFT_ASSIGN(a.reduction, o.choice("reduction", kReductions));
    WEFT_ASSIGN(a.axes, o.strs("axes"));
    return a;
  }
  case Op::RaggedAllToAll: {
    RaggedAttrs a;
    WEFT_ASSIGN(a.axes, o.strs("axes"));
    return a;
  }
  case Op::Send:
  case Op::Recv:
  case Op::RingShift: {
    PeerAttrs a;
    WEFT_ASSIGN(a.axis, o.str("axis"));
    WEFT_ASSIGN(a.delta, o.i64("delta"));
    WEFT_ASSIGN(a.tag, o.i64("tag"));
    return a;
  }
  case Op::Record:
  case Op::Wait: {
    EventAttrs a;
    WEFT_ASSIGN(a.event, o.i64("event"));
    return a;
  }
  }
  return o.fail("unknown op");
}

/// Whether `op` may take a scratch (ScratchOpInterface in SchedOps.td).
bool mayHaveScratch(Op op) {
  switch (op) {
  case Op::Attention:
  case Op::AttentionGrad:
  case Op::Reduce:
  case Op::LayerNormGrad:
  case Op::RmsNormGrad:
  case Op::CrossEntropy:
  case Op::CrossEntropyGrad:
  case Op::ExpertRoute:
  case Op::RaggedAllToAll:
    return true;
  default:
    return false;
  }
}

/// The operands an instruction takes before its scratch, in ODS order.
std::vector<Role> fixedRolesOf(const Instruction &in) {
  auto roles = [](std::initializer_list<Role> r) {
    return std::vector<Role>(r);
  };
  switch (in.op) {
  case Op::Launch: {
    const LaunchAttrs &a = in.as<LaunchAttrs>();
    std::vector<Role> r;
    for (int64_t i = 0; i < a.inputs; ++i)
      r.push_back({absl::StrCat("input ", i), kRead});
    for (int64_t i = 0; i < a.outputs; ++i)
      r.push_back({absl::StrCat("output ", i), kWrite});
    return r;
  }
  case Op::Gemm: {
    const GemmAttrs &a = in.as<GemmAttrs>();
    std::vector<Role> r = roles({{"a", kRead}, {"b", kRead}, {"c", kWrite}});
    if (a.hasBias)
      r.push_back({"bias", kRead});
    if (a.hasAux)
      r.push_back({"aux", kReadWrite});
    if (a.hasScales) {
      r.push_back({"scale_a", kRead});
      r.push_back({"scale_b", kRead});
    }
    return r;
  }
  case Op::Attention:
  case Op::AttentionGrad: {
    const AttentionAttrs &a = in.as<AttentionAttrs>();
    std::vector<Role> r = in.op == Op::Attention ? roles({{"q", kRead},
                                                          {"k", kRead},
                                                          {"v", kRead},
                                                          {"out", kWrite},
                                                          {"lse", kWrite}})
                                                 : roles({{"q", kRead},
                                                          {"k", kRead},
                                                          {"v", kRead},
                                                          {"out", kRead},
                                                          {"lse", kRead},
                                                          {"dout", kRead},
                                                          {"dq", kWrite},
                                                          {"dk", kWrite},
                                                          {"dv", kWrite}});
    if (a.hasPositions) {
      r.push_back({"query_positions", kRead});
      r.push_back({"key_positions", kRead});
    }
    if (a.hasLseGrad)
      r.push_back({"lse_grad", kRead});
    if (a.hasEntropy)
      r.push_back({"entropy", kWrite});
    if (a.hasStep)
      r.push_back({"step", kRead});
    if (a.block.hasMicrobatch)
      r.push_back({"microbatch", kRead});
    return r;
  }
  case Op::Embedding:
    return roles({{"table", kRead}, {"ids", kRead}, {"out", kWrite}});
  case Op::EmbeddingGrad:
    return roles({{"ids", kRead}, {"dout", kRead}, {"dtable", kWrite}});
  case Op::Rope:
    if (in.as<RopeAttrs>().hasPositions)
      return roles({{"input", kRead}, {"out", kWrite}, {"positions", kRead}});
    return roles({{"input", kRead}, {"out", kWrite}});
  case Op::Dropout: {
    const auto &a = in.as<DropoutAttrs>();
    std::vector<Role> r = roles({{"input", kRead}, {"out", kWrite}});
    if (a.hasStep)
      r.push_back({"step", kRead});
    if (a.block.hasMicrobatch)
      r.push_back({"microbatch", kRead});
    if (a.hasPositions)
      r.push_back({"positions", kRead});
    return r;
  }
  case Op::Reduce:
  case Op::Softmax:
  case Op::Fp8Amax:
    return roles({{"input", kRead}, {"out", kWrite}});
  case Op::Fp8Quantize:
  case Op::Fp8Encode:
  case Op::Fp8Decode:
    return roles({{"input", kRead}, {"amax", kRead}, {"out", kWrite}});
  case Op::Fp8Cast:
    return roles({{"input", kRead},
                  {"amax", kRead},
                  {"out", kWrite},
                  {"scale_inv", kWrite}});
  case Op::Fp8ScaleInv:
    return roles({{"codes", kRead}, {"amax", kRead}, {"scale_inv", kWrite}});
  case Op::Fp8GroupQuantize:
    return roles({{"input", kRead}, {"sizes", kRead}, {"out", kWrite}});
  case Op::Fp8GroupCast:
    return roles({{"input", kRead},
                  {"sizes", kRead},
                  {"out", kWrite},
                  {"scale_inv", kWrite}});
  case Op::CrossEntropy:
    return roles({{"logits", kRead}, {"labels", kRead}, {"loss", kWrite}});
  case Op::CrossEntropyGrad:
    return roles({{"logits", kRead},
                  {"labels", kRead},
                  {"dloss", kRead},
                  {"dlogits", kWrite}});
  case Op::LayerNormGrad:
    return roles({{"input", kRead},
                  {"weight", kRead},
                  {"dout", kRead},
                  {"dinput", kWrite},
                  {"dweight", kWrite},
                  {"dbias", kWrite}});
  case Op::RmsNormGrad:
    return roles({{"input", kRead},
                  {"weight", kRead},
                  {"dout", kRead},
                  {"dinput", kWrite},
                  {"dweight", kWrite}});
  case Op::OneHot:
    return roles({{"indices", kRead}, {"out", kWrite}});
  case Op::TopK:
    return roles({{"input", kRead}, {"values", kWrite}, {"indices", kWrite}});
  case Op::TopKGating:
    return roles({{"logits", kRead}, {"weights", kWrite}, {"indices", kWrite}});
  case Op::ExpertRoute:
    return roles(
        {{"indices", kRead}, {"positions", kWrite}, {"counts", kWrite}});
  case Op::ExpertDispatch:
    return roles({{"input", kRead}, {"positions", kRead}, {"out", kWrite}});
  case Op::ExpertCombine:
    return roles({{"expert_outputs", kRead},
                  {"weights", kRead},
                  {"positions", kRead},
                  {"out", kWrite}});
  case Op::ExpertGather:
    return roles(
        {{"expert_outputs", kRead}, {"positions", kRead}, {"out", kWrite}});
  case Op::ExpertScatter:
    return roles({{"pairs", kRead}, {"positions", kRead}, {"out", kWrite}});
  case Op::GroupedMatmul: {
    std::vector<Role> r = roles({{"input", kRead},
                                 {"weight", kRead},
                                 {"sizes", kRead},
                                 {"out", kWrite}});
    if (in.as<GroupedMatmulAttrs>().hasScales) {
      r.push_back({"scale_input", kRead});
      r.push_back({"scale_weight", kRead});
    }
    return r;
  }
  case Op::GroupedMatmulWgrad: {
    std::vector<Role> r = roles(
        {{"lhs", kRead}, {"rhs", kRead}, {"sizes", kRead}, {"out", kWrite}});
    if (in.as<GroupedWgradAttrs>().hasScales) {
      r.push_back({"scale_lhs", kRead});
      r.push_back({"scale_rhs", kRead});
    }
    return r;
  }
  case Op::Copy:
    return roles({{"source", kRead}, {"dest", kWrite}});
  case Op::Fill:
    return roles({{"dest", kWrite}});
  case Op::Collective:
    return roles({{"input", kRead}, {"output", kWrite}});
  case Op::RaggedAllToAll:
    return roles({{"input", kRead},
                  {"send_sizes", kRead},
                  {"recv_sizes", kRead},
                  {"output", kWrite}});
  case Op::Send:
    return roles({{"buffer", kRead}});
  case Op::Recv:
    return roles({{"buffer", kWrite}});
  case Op::RingShift:
    return roles({{"input", kRead}, {"output", kWrite}});
  case Op::Record:
  case Op::Wait:
    return {};
  }
  return {};
}

/// The operands an instruction takes, in ODS order, with their effects
/// (MemRead / MemWrite as SchedOps.td declares them): the op's own, then
/// its scratch when it has one. A launch's come from its counts, which the
/// caller has checked against the operand list.
std::vector<Role> rolesOf(const Instruction &in) {
  std::vector<Role> r = fixedRolesOf(in);
  if (in.hasScratch)
    r.push_back({"scratch", kReadWrite});
  return r;
}

std::string instructionWhere(const Program &p, size_t i, const json *op) {
  std::string where = absl::StrCat("program '", p.name, "', instruction ", i);
  if (op && op->is_string())
    absl::StrAppend(&where, " (", op->get<std::string>(), ")");
  return where;
}

absl::StatusOr<Instruction> readInstruction(const json &v, size_t i,
                                            const Program &p,
                                            const SchedBundle &b) {
  const json *opField = v.is_object() && v.contains("op") ? &v["op"] : nullptr;
  WEFT_OBJECT(o, v, instructionWhere(p, i, opField));
  Instruction in;
  std::string op;
  WEFT_ASSIGN(op, o.str("op"));
  std::optional<Op> kind = lookup(kOps, op);
  if (!kind)
    return o.fail(absl::StrCat("field 'op': unknown op '", op, "'"));
  in.op = *kind;
  std::string stream;
  WEFT_ASSIGN(stream, o.str("stream"));
  auto s = std::find(p.streams.begin(), p.streams.end(), stream);
  if (s == p.streams.end())
    return o.fail(absl::StrCat("field 'stream' is '", stream,
                               "', which the program does not declare (",
                               quoted(p.streams), ")"));
  in.stream = s - p.streams.begin();
  WEFT_ASSIGN(in.operands, o.i64s("operands"));
  for (size_t j = 0; j < in.operands.size(); ++j)
    if (in.operands[j] < 0 ||
        in.operands[j] >= static_cast<int64_t>(p.buffers.size()))
      return o.fail(absl::StrCat("field 'operands' entry ", j, " is buffer ",
                                 in.operands[j], ", but the program has ",
                                 p.buffers.size(), " buffers"));
  WEFT_ASSIGN(in.attrs, readAttrs(in.op, o, b));
  // Elsewhere `has_scratch` is an unknown field. An expert route or a
  // ragged exchange may lack it (bundles from before they could have one).
  if (mayHaveScratch(in.op) &&
      ((in.op != Op::ExpertRoute && in.op != Op::RaggedAllToAll) ||
       o.has("has_scratch")))
    WEFT_ASSIGN(in.hasScratch, o.flag("has_scratch"));
  if (o.has("layer"))
    WEFT_ASSIGN(in.layer, o.str("layer"));
  WEFT_RETURN_IF_ERROR(o.done());
  // The operand count, before anything indexes the operands by role.
  size_t want;
  if (in.op == Op::Launch) {
    const LaunchAttrs &a = in.as<LaunchAttrs>();
    std::optional<int64_t> sum = checkedAdd(a.inputs, a.outputs);
    if (a.inputs < 0 || a.outputs < 0 || !sum ||
        *sum != static_cast<int64_t>(in.operands.size()))
      return o.fail(absl::StrCat(
          "fields 'inputs' (", a.inputs, ") and 'outputs' (", a.outputs,
          ") do not add up to the ", in.operands.size(), " operands"));
    want = in.operands.size();
  } else {
    want = rolesOf(in).size();
  }
  if (in.operands.size() != want) {
    std::vector<std::string> names;
    for (const Role &r : rolesOf(in))
      names.push_back(r.name);
    return o.fail(absl::StrCat("field 'operands' has ", in.operands.size(),
                               " buffers, but ", op, " takes ", want, " (",
                               absl::StrJoin(names, ", "), ")"));
  }
  return in;
}

//===----------------------------------------------------------------------===//
// Instructions: the op verifiers
//===----------------------------------------------------------------------===//

/// One instruction's operands and the facts about them its checks state.
class Check {
public:
  Check(const SchedBundle &b, const Program &p, size_t index,
        const Instruction &in)
      : b(b), in(in), roles(rolesOf(in)),
        where(absl::StrCat("program '", p.name, "', instruction ", index, " (",
                           opName(in.op), ")")),
        p(p) {}

  absl::Status fail(absl::string_view what) const {
    return invalid(where, what);
  }
  std::string name(size_t i) const {
    return absl::StrCat("operand ", i, " (", roles[i].name, ")");
  }
  const TensorType &type(size_t i) const {
    return p.buffers[in.operands[i]].type;
  }
  const std::vector<int64_t> &shape(size_t i) const { return type(i).shape; }
  DType dtype(size_t i) const { return type(i).dtype; }
  int64_t elements(size_t i) const { return type(i).numElements(); }

  absl::Status hasShape(size_t i, const std::vector<int64_t> &want) const {
    if (shape(i) != want)
      return fail(absl::StrCat(name(i), " has shape ", list(shape(i)),
                               ", expected ", list(want)));
    return absl::OkStatus();
  }
  /// Operand `j` has operand `i`'s shape.
  absl::Status sameShape(size_t i, size_t j) const {
    if (shape(i) != shape(j))
      return fail(absl::StrCat(name(j), " has shape ", list(shape(j)), ", not ",
                               name(i), "'s ", list(shape(i))));
    return absl::OkStatus();
  }
  absl::Status hasRank(size_t i, size_t rank) const {
    if (shape(i).size() != rank)
      return fail(absl::StrCat(name(i), " must have rank ", rank,
                               ", has shape ", list(shape(i))));
    return absl::OkStatus();
  }
  absl::Status isInt(size_t i) const {
    if (!sched::isInt(dtype(i)))
      return fail(absl::StrCat(name(i), " must hold i32 or i64, not ",
                               dtypeText(dtype(i))));
    return absl::OkStatus();
  }
  absl::Status isFloat(size_t i) const {
    if (!sched::isFloat(dtype(i)))
      return fail(absl::StrCat(name(i), " must hold floats, not ",
                               dtypeText(dtype(i))));
    return absl::OkStatus();
  }
  /// Operand `i` holds `n` i32 positions.
  absl::Status isPositions(size_t i, int64_t n) const {
    if (dtype(i) != DType::I32)
      return fail(
          absl::StrCat(name(i), " must hold i32, not ", dtypeText(dtype(i))));
    return hasShape(i, {n});
  }
  absl::Status isF32Scalar(size_t i) const {
    if (dtype(i) != DType::F32 || elements(i) != 1)
      return fail(
          absl::StrCat(name(i), " must be one f32, not ", typeText(type(i))));
    return absl::OkStatus();
  }
  absl::StatusOr<int64_t> group(const std::vector<std::string> &axes,
                                const char *field, bool needsMesh) const {
    absl::StatusOr<int64_t> g =
        groupSize(b.mesh, axes, absl::StrCat("field '", field, "'"), needsMesh);
    if (!g.ok())
      return fail(g.status().message());
    return g;
  }
  absl::Status vocabAxes(const std::vector<std::string> &axes) const {
    return group(axes, "vocab_axes", false).status();
  }

  const SchedBundle &b;
  const Instruction &in;
  const std::vector<Role> roles;
  const std::string where;

private:
  const Program &p;
};

/// Whether a matrix of `rows` x `cols` with leading dimension `ld` and
/// batch stride `stride` over `batch` batches needs at most `elements`;
/// `needed` is what it needs (nullopt: more than int64).
bool matrixFits(int64_t batch, int64_t stride, int64_t rows, int64_t cols,
                int64_t ld, int64_t elements, std::optional<int64_t> &needed) {
  std::optional<int64_t> a = checkedMul(batch - 1, stride);
  std::optional<int64_t> b = checkedMul(rows - 1, ld);
  needed = a && b ? checkedAdd(*a, *b) : std::nullopt;
  needed = needed ? checkedAdd(*needed, cols) : std::nullopt;
  return needed && *needed <= elements;
}

std::string countText(std::optional<int64_t> n) {
  return n ? absl::StrCat(*n) : std::string("more than 2^63");
}

absl::Status checkLaunch(const Check &c, const LaunchAttrs &a) {
  for (int64_t g : a.grid)
    if (g < 1 || g > (int64_t(1) << 31) - 1)
      return c.fail(absl::StrCat("field 'grid' ",
                                 list({a.grid[0], a.grid[1], a.grid[2]}),
                                 " must be three sizes in [1, 2^31)"));
  if (a.block < 1 || a.block > 1024)
    return c.fail(absl::StrCat("field 'block' of ", a.block,
                               " threads is outside [1, 1024]"));
  const KernelDecl &k = c.b.kernelDecls[a.kernelIndex];
  for (auto [what, declared, first, count] :
       {std::tuple{"inputs", &k.inputs, int64_t(0), a.inputs},
        std::tuple{"outputs", &k.outputs, a.inputs, a.outputs}}) {
    if (count != static_cast<int64_t>(declared->size()))
      return c.fail(absl::StrCat("field '", what, "': passes ", count, " ",
                                 what, " to kernel '", k.name,
                                 "', which takes ", declared->size()));
    for (int64_t i = 0; i < count; ++i)
      if (c.type(first + i) != (*declared)[i])
        return c.fail(absl::StrCat(
            c.name(first + i), " is ", typeText(c.type(first + i)),
            " but kernel '", k.name, "' takes ", typeText((*declared)[i])));
  }
  if (a.scalars.size() != k.scalars.size())
    return c.fail(absl::StrCat("field 'scalars': passes ", a.scalars.size(),
                               " scalars to kernel '", k.name,
                               "', which takes ", k.scalars.size()));
  for (size_t i = 0; i < a.scalars.size(); ++i)
    if (a.scalars[i].type != k.scalars[i])
      return c.fail(absl::StrCat("field 'scalars' entry ", i, " is ",
                                 spell(kScalarTypes, a.scalars[i].type),
                                 " but kernel '", k.name, "' takes ",
                                 spell(kScalarTypes, k.scalars[i])));
  // The generated kernels' ABI: a first i64 scalar is the element count of
  // the first output, which the GPU launcher loops over.
  if (!a.scalars.empty() && a.scalars[0].type == ScalarType::I64 &&
      a.outputs > 0 && a.scalars[0].i != c.type(a.inputs).numElements())
    return c.fail(
        absl::StrCat("field 'scalars' entry 0 (the element count) is ",
                     a.scalars[0].i, " but ", c.name(a.inputs), " holds ",
                     c.type(a.inputs).numElements(), " elements"));
  return absl::OkStatus();
}

/// A GEMM's operands 0 and 1 (`a` and `b` in messages): of one type, or
/// both FP8 with scales (`hasScales`). Whether they are FP8.
absl::StatusOr<bool> checkGemmTypes(const Check &c, bool hasScales,
                                    absl::string_view a, absl::string_view b) {
  DType at = c.dtype(0), bt = c.dtype(1);
  bool fp8 = isFp8(at);
  if (fp8 != isFp8(bt) || (!fp8 && at != bt))
    return c.fail(absl::StrCat("multiplies ", dtypeText(at), " by ",
                               dtypeText(bt), "; ", a, " and ", b,
                               " must have one type, or both be FP8"));
  if (fp8 != hasScales)
    return c.fail(fp8 ? absl::StrCat("FP8 operands need scales for ", a,
                                     " and ", b,
                                     " (field 'has_scales' is false)")
                      : "field 'has_scales': takes scales only for FP8 "
                        "operands");
  return fp8;
}

/// Block scales (operands `at` and `at + 1`) of A [rowsA, k] and B
/// [rowsB, k] in modes `ma` and `mb`: a pairing a GEMM multiplies
/// (row-wise by row-wise; DeepSeek-V3's 1 x 128 by 128 x 128 either way
/// round, or 1 x 128 by 1 x 128; MXFP8's 1 x 32 by 1 x 32), each buffer
/// holding its mode's scales.
absl::Status checkBlockScales(const Check &c, int ma, int mb, size_t at,
                              int64_t rowsA, int64_t rowsB, int64_t k) {
  if (int64_t block = weft_fp8_scale_block_k(ma, k); k % block != 0)
    return c.fail(absl::StrCat("field 'scale_modes': ", block,
                               "-element blocks need k a multiple of ", block,
                               ", not ", k));
  for (auto [i, mode, rows] :
       {std::tuple{at, ma, rowsA}, std::tuple{at + 1, mb, rowsB}}) {
    int64_t count = weft_fp8_scale_count(mode, rows, k);
    if (c.dtype(i) != DType::F32 || c.elements(i) != count)
      return c.fail(absl::StrCat(c.name(i), " must hold ", count, " f32 (\"",
                                 spell(kScaleModes, mode), "\" of ", rows,
                                 " x ", k, "), not ", typeText(c.type(i))));
  }
  return absl::OkStatus();
}

/// No GEMM multiplies an A in mode `ma` by a B in mode `mb`.
absl::Status checkScalePairing(const Check &c, int ma, int mb) {
  if (weft_fp8_scale_modes_pair(ma, mb))
    return absl::OkStatus();
  return c.fail(absl::StrCat("field 'scale_modes': no GEMM scales a \"",
                             spell(kScaleModes, ma), "\" A by a \"",
                             spell(kScaleModes, mb), "\" B"));
}

/// An FP8 GEMM's scales (operands `at` and `at + 1`): one f32 each, or
/// block scales (checkBlockScales) of one matrix A [m, k] and B [n, k].
absl::Status checkGemmScales(const Check &c, const GemmAttrs &a, size_t at) {
  int ma = a.scaleModeA, mb = a.scaleModeB;
  if (ma == WEFT_FP8_SCALE_TENSOR && mb == WEFT_FP8_SCALE_TENSOR) {
    WEFT_RETURN_IF_ERROR(c.isF32Scalar(at));
    return c.isF32Scalar(at + 1);
  }
  WEFT_RETURN_IF_ERROR(checkScalePairing(c, ma, mb));
  if (a.transposeA || !a.transposeB)
    return c.fail("field 'scale_modes': block scales read A [m, k] and B "
                  "[n, k] (transpose_b, not transpose_a)");
  if (a.batch != 1)
    return c.fail(absl::StrCat("field 'scale_modes': block scales take one "
                               "matrix, not a batch of ",
                               a.batch));
  return checkBlockScales(c, ma, mb, at, a.mnk[0], a.mnk[1], a.mnk[2]);
}

/// A grouped_matmul's operand types and, for FP8 codes, its scales: the
/// input [N, K] and the weight [E, M, K] (transpose_rhs) as the matrix
/// [E * M, K], K a multiple of 32, a 128 x 128 block inside one expert.
absl::Status checkGroupedScales(const Check &c, const GroupedMatmulAttrs &a) {
  absl::StatusOr<bool> fp8 = checkGemmTypes(c, a.hasScales, "input", "weight");
  if (!fp8.ok())
    return fp8.status();
  DType xt = c.dtype(0), wt = c.dtype(1);
  if (!*fp8)
    return a.scaleModeInput == WEFT_FP8_SCALE_TENSOR &&
                   a.scaleModeWeight == WEFT_FP8_SCALE_TENSOR
               ? absl::OkStatus()
               : c.fail("field 'scale_modes': takes modes only for FP8 "
                        "operands");
  if (xt == DType::F8E5M2 && wt == DType::F8E5M2)
    return c.fail("multiplies f8E5M2 by f8E5M2, which no FP8 GEMM does");
  const std::vector<int64_t> &w = c.shape(1);
  int64_t k = c.shape(0)[1];
  if (!a.transposeRhs)
    return c.fail("field 'transpose_rhs': FP8 operands need the weight [E, "
                  "M, K] (k contiguous)");
  if (k < 1 || k % 32 != 0)
    return c.fail(
        absl::StrCat("FP8 operands need k a positive multiple of 32, not ", k));
  if (a.scaleModeWeight == WEFT_FP8_SCALE_BLK128 && w[1] % 128 != 0)
    return c.fail(absl::StrCat("128 x 128 weight blocks need each expert's ",
                               w[1], " rows a multiple of 128"));
  WEFT_RETURN_IF_ERROR(
      checkScalePairing(c, a.scaleModeInput, a.scaleModeWeight));
  return checkBlockScales(c, a.scaleModeInput, a.scaleModeWeight, 4,
                          c.shape(0)[0], w[0] * w[1], k);
}

absl::Status checkGemm(const Check &c, const GemmAttrs &a) {
  if (std::any_of(a.mnk.begin(), a.mnk.end(),
                  [](int64_t d) { return d < 1; }) ||
      a.batch < 1)
    return c.fail(absl::StrCat("fields 'mnk' ",
                               list({a.mnk[0], a.mnk[1], a.mnk[2]}),
                               " and 'batch' ", a.batch, " must be positive"));
  if (std::any_of(a.strides.begin(), a.strides.end(),
                  [](int64_t d) { return d < 0; }))
    return c.fail(absl::StrCat("field 'strides' ",
                               list({a.strides[0], a.strides[1], a.strides[2]}),
                               " must not be negative"));
  int64_t m = a.mnk[0], n = a.mnk[1], k = a.mnk[2];
  struct Matrix {
    const char *name;
    size_t operand;
    int64_t rows, cols, ld, stride;
  };
  const Matrix matrices[] = {{"A", 0, a.transposeA ? k : m,
                              a.transposeA ? m : k, a.ld[0], a.strides[0]},
                             {"B", 1, a.transposeB ? n : k,
                              a.transposeB ? k : n, a.ld[1], a.strides[1]},
                             {"C", 2, m, n, a.ld[2], a.strides[2]}};
  for (const Matrix &x : matrices) {
    if (x.ld < x.cols)
      return c.fail(absl::StrCat("field 'ld': leading dimension ", x.ld, " of ",
                                 x.name, " is less than its ", x.cols,
                                 " columns"));
    std::optional<int64_t> needed;
    if (!matrixFits(a.batch, x.stride, x.rows, x.cols, x.ld,
                    c.elements(x.operand), needed))
      return c.fail(absl::StrCat(
          c.name(x.operand), ": ", x.name, " needs ", countText(needed),
          " elements but its buffer holds ", c.elements(x.operand)));
    WEFT_RETURN_IF_ERROR(c.isFloat(x.operand));
  }
  absl::StatusOr<bool> typed = checkGemmTypes(c, a.hasScales, "A", "B");
  if (!typed.ok())
    return typed.status();
  bool fp8 = *typed;
  size_t next = 3;
  size_t bias = a.hasBias ? next++ : 0;
  size_t aux = a.hasAux ? next++ : 0;
  if (fp8)
    WEFT_RETURN_IF_ERROR(checkGemmScales(c, a, next));
  else if (a.scaleModeA != WEFT_FP8_SCALE_TENSOR ||
           a.scaleModeB != WEFT_FP8_SCALE_TENSOR)
    return c.fail("field 'scale_modes': takes modes only for FP8 operands");
  Epilogue e = a.epilogue;
  bool wantsBias = e == Epilogue::Bias || e == Epilogue::BiasGelu;
  bool wantsAux =
      e == Epilogue::Gelu || e == Epilogue::BiasGelu || e == Epilogue::Dgelu;
  if (wantsBias != a.hasBias)
    return c.fail(absl::StrCat("field 'epilogue' '", spell(kEpilogues, e),
                               wantsBias ? "' needs" : "' takes no",
                               " bias (field 'has_bias' is ",
                               a.hasBias ? "true" : "false", ")"));
  if (wantsAux != a.hasAux)
    return c.fail(absl::StrCat("field 'epilogue' '", spell(kEpilogues, e),
                               wantsAux ? "' needs" : "' takes no",
                               " aux (field 'has_aux' is ",
                               a.hasAux ? "true" : "false", ")"));
  if (a.hasBias && c.elements(bias) != n)
    return c.fail(absl::StrCat(c.name(bias), " holds ", c.elements(bias),
                               " elements, not n = ", n));
  if (a.hasAux) {
    std::optional<int64_t> mn = checkedMul(m, n);
    std::optional<int64_t> want = mn ? checkedMul(*mn, a.batch) : std::nullopt;
    if (!want || c.elements(aux) != *want)
      return c.fail(
          absl::StrCat(c.name(aux), " holds ", c.elements(aux),
                       " elements, not batch * m * n = ", countText(want)));
  }
  if (a.hasBias)
    WEFT_RETURN_IF_ERROR(c.isFloat(bias));
  if (a.hasAux)
    WEFT_RETURN_IF_ERROR(c.isFloat(aux));
  // Batches write disjoint blocks of C.
  if (a.batch > 1) {
    std::optional<int64_t> block = checkedMul(a.mnk[0] - 1, a.ld[2]);
    block = block ? checkedAdd(*block, a.mnk[1]) : std::nullopt;
    if (!block || a.strides[2] < *block)
      return c.fail(absl::StrCat("field 'strides': batch stride ", a.strides[2],
                                 " of c makes batches overlap (each batch "
                                 "writes ",
                                 countText(block), " elements)"));
  }
  return absl::OkStatus();
}

/// The instruction's scratch, when it has one (or when `required`): f32
/// and at least `need` bytes (nullopt: the layout overflows int64), as
/// SchedOps.cpp's verifyScratch; `who` starts the message.
absl::Status checkScratch(const Check &c, std::optional<int64_t> need,
                          bool required = false, absl::string_view who = "") {
  if (!c.in.hasScratch && !required)
    return absl::OkStatus();
  size_t at = c.in.operands.size() - 1;
  if (c.in.hasScratch && c.dtype(at) != DType::F32)
    return c.fail(absl::StrCat(c.name(at), " must hold f32, not ",
                               dtypeText(c.dtype(at))));
  int64_t has = c.in.hasScratch ? c.type(at).bytes() : 0;
  if (!c.in.hasScratch || !need || has < *need)
    return c.fail(absl::StrCat(who, "needs ", countText(need),
                               " bytes of scratch, has ", has));
  return absl::OkStatus();
}

/// A library instruction's scratch against the bytes ScratchLayout.h
/// states for its operands' shapes (the verifiers' arguments).
absl::Status checkLibraryScratch(const Check &c) {
  std::optional<int64_t> need;
  switch (c.in.op) {
  case Op::Reduce: { // input, out
    int64_t outputs = c.elements(1);
    int64_t reduced = outputs ? c.elements(0) / outputs : 0;
    need = scratch::bytesOf(scratch::reduceLayout(outputs, reduced));
    break;
  }
  case Op::LayerNormGrad:
  case Op::RmsNormGrad: { // input, ...
    int64_t dim = c.shape(0).back(), rows = dim ? c.elements(0) / dim : 0;
    need = scratch::bytesOf(scratch::normGradLayout(rows, dim));
    break;
  }
  case Op::CrossEntropy:
  case Op::CrossEntropyGrad: // logits, labels, ...
    need = scratch::bytesOf(scratch::crossEntropyLayout(c.elements(1)));
    break;
  case Op::RaggedAllToAll: { // input [N, D], ...
    absl::StatusOr<int64_t> group =
        c.group(c.in.as<RaggedAttrs>().axes, "axes", true);
    if (!group.ok())
      return group.status();
    need = scratch::bytesOf(
        scratch::raggedLayout(*group, c.shape(0)[0], c.shape(0)[1]));
    break;
  }
  case Op::ExpertRoute: { // indices, positions, counts
    absl::StatusOr<int64_t> group =
        c.group(c.in.as<ExpertRouteAttrs>().tokenAxes, "token_axes", false);
    if (!group.ok())
      return group.status();
    need = scratch::bytesOf(
        scratch::expertRouteLayout(c.shape(0)[1], c.elements(2), *group));
    break;
  }
  default: // Attention checks its own; other ops have none.
    return absl::OkStatus();
  }
  std::string who = absl::StrCat(c.name(c.in.operands.size() - 1), ": ");
  return checkScratch(c, need, /*required=*/false, who);
}

/// A dropout mask's counters (operands `step` and `microbatch`, -1: none)
/// are f32 scalars and its split is per dimension of a rank-`rank` input.
absl::Status checkMask(const Check &c, int64_t step, int64_t microbatch,
                       const MaskBlockAttrs &block, size_t rank) {
  for (int64_t counter : {step, microbatch})
    if (counter >= 0) {
      WEFT_RETURN_IF_ERROR(c.hasShape(counter, {}));
      if (c.dtype(counter) != DType::F32)
        return c.fail(absl::StrCat(c.name(counter), " must hold f32, not ",
                                   dtypeText(c.dtype(counter))));
    }
  if (!block.split.empty() && block.split.size() != rank)
    return c.fail(absl::StrCat("field 'split' has ", block.split.size(),
                               " entries for a rank-", rank, " input"));
  if (block.hasMicrobatch && rank == 0)
    return c.fail("field 'microbatches' cuts dimension 0 of a scalar");
  // The mask's index (CounterRng.h) takes four dimensions: dimension 0 and
  // each later split one (whole ones merge into the one before).
  int64_t cut = 0;
  for (size_t d = 1; d < block.split.size(); ++d)
    cut += !block.split[d].empty();
  if (cut > 3)
    return c.fail(absl::StrCat("field 'split' cuts ", cut,
                               " dimensions after the first; a dropout "
                               "mask's index takes at most 3"));
  // The global dimension 0 (every micro-batch, every rank) fits int64.
  if (rank > 0) {
    int64_t group = 1;
    if (!block.split.empty())
      WEFT_ASSIGN(group, c.group(block.split[0], "split", false));
    int64_t rows = 0;
    if (__builtin_mul_overflow(c.shape(0)[0], group, &rows) ||
        __builtin_mul_overflow(rows, block.microbatches, &rows))
      return c.fail("the global tensor's dimension 0 (its rows on every "
                    "rank and micro-batch) overflows int64");
  }
  return absl::OkStatus();
}

absl::Status checkAttention(const Check &c, const AttentionAttrs &a,
                            bool grad) {
  for (size_t i : {0, 1, 2, 3}) {
    WEFT_RETURN_IF_ERROR(c.hasRank(i, 4));
    WEFT_RETURN_IF_ERROR(c.isFloat(i));
  }
  const std::vector<int64_t> &qs = c.shape(0), &ks = c.shape(1),
                             &vs = c.shape(2);
  int64_t b = qs[0], s = qs[1], hq = qs[2], d = qs[3], t = ks[1], hkv = ks[2];
  WEFT_RETURN_IF_ERROR(c.hasShape(1, {b, t, hkv, d}));
  WEFT_RETURN_IF_ERROR(c.hasShape(2, {b, t, hkv, vs[3]}));
  WEFT_RETURN_IF_ERROR(c.hasShape(3, {b, s, hq, vs[3]}));
  WEFT_RETURN_IF_ERROR(c.hasShape(4, {b, hq, s}));
  if (hkv < 1 || hq % hkv != 0)
    return c.fail(absl::StrCat("query heads ", hq,
                               " are not a multiple of key/value heads ", hkv));
  if (c.dtype(4) != DType::F32)
    return c.fail(
        absl::StrCat(c.name(4), " must hold f32, not ", dtypeText(c.dtype(4))));
  int64_t es = static_cast<int64_t>(dtypeSize(c.dtype(0)));
  bool gemms = a.algorithm == AttentionAlgorithm::GemmSoftmax;
  if (gemms && !scratch::attentionRowsAligned(s, t, d, vs[3], es))
    return c.fail("field 'algorithm' 'gemm_softmax' needs S, T, D and Dv "
                  "that make 16-byte rows");
  std::optional<int64_t> need =
      scratch::bytesOf(scratch::attentionLayout(gemms, grad, b, s, hq, t, es));
  if (need && *need == 0 && c.in.hasScratch)
    return c.fail("field 'algorithm' 'flash' takes no scratch forward "
                  "(field 'has_scratch' is true)");
  // The flash backward may compute its delta without scratch (the CPU
  // does); gemm_softmax cannot.
  WEFT_RETURN_IF_ERROR(
      checkScratch(c, need, /*required=*/gemms,
                   absl::StrCat("field 'algorithm' '",
                                gemms ? "gemm_softmax" : "flash", "' ")));
  AttentionAttrs::Optional at = a.optionalOperands(grad);
  if (a.hasPositions) {
    if (!a.causal)
      return c.fail("positions mask a causal attention; field 'causal' is "
                    "false");
    WEFT_RETURN_IF_ERROR(c.isPositions(at.queryPositions, s));
    WEFT_RETURN_IF_ERROR(c.isPositions(at.keyPositions, t));
  }
  if (a.hasLseGrad) {
    WEFT_RETURN_IF_ERROR(c.hasShape(at.lseGrad, {b, hq, s}));
    if (c.dtype(at.lseGrad) != DType::F32)
      return c.fail(absl::StrCat(c.name(at.lseGrad), " must hold f32, not ",
                                 dtypeText(c.dtype(at.lseGrad))));
  }
  if (a.hasEntropy) {
    WEFT_RETURN_IF_ERROR(c.hasShape(at.entropy, {b, hq, s}));
    if (c.dtype(at.entropy) != DType::F32)
      return c.fail(absl::StrCat(c.name(at.entropy), " must hold f32, not ",
                                 dtypeText(c.dtype(at.entropy))));
  }
  if (!(a.dropout >= 0 && a.dropout < 1))
    return c.fail(
        absl::StrCat("field 'dropout' ", a.dropout, " is outside [0, 1)"));
  if (a.dropout == 0 &&
      (a.hasStep || a.block.hasMicrobatch || !a.block.split.empty()))
    return c.fail("has a step, micro-batch or split but no dropout");
  WEFT_RETURN_IF_ERROR(checkMask(c, at.step, at.microbatch, a.block, 4));
  if (!a.block.split.empty() &&
      ((!a.block.split[1].empty() && !a.hasPositions) ||
       !a.block.split[3].empty()))
    return c.fail("field 'split' cuts q's head dimension, or its sequence "
                  "without positions; dropout's mask splits batch, heads "
                  "and (with positions) the sequence");
  if (!grad)
    return absl::OkStatus();
  for (auto [x, dx] : {std::pair{0, 6}, {1, 7}, {2, 8}})
    if (c.type(x) != c.type(dx))
      return c.fail(absl::StrCat(c.name(dx), " is ", typeText(c.type(dx)),
                                 ", not ", c.name(x), "'s ",
                                 typeText(c.type(x))));
  return c.sameShape(3, 5);
}

/// Operand `rows` has operand `ids`' shape followed by `width`.
absl::Status rowsOf(const Check &c, size_t ids, size_t rows, int64_t width) {
  std::vector<int64_t> shape = c.shape(ids);
  shape.push_back(width);
  return c.hasShape(rows, shape);
}

absl::Status logitsAndLabels(const Check &c) {
  if (c.shape(0).empty())
    return c.fail(
        absl::StrCat(c.name(0), " needs a vocabulary dimension; it is 0-d"));
  WEFT_RETURN_IF_ERROR(c.isFloat(0));
  WEFT_RETURN_IF_ERROR(c.isInt(1));
  std::vector<int64_t> rows(c.shape(0).begin(), c.shape(0).end() - 1);
  return c.hasShape(1, rows);
}

/// The block maxima (operand 1: fp8_amax's out, fp8_quantize's and
/// fp8_cast's amax) divide the input's (operand 0's) shape.
absl::Status checkFp8Grid(const Check &c) {
  const std::vector<int64_t> &shape = c.shape(0), &grid = c.shape(1);
  if (grid.size() != shape.size())
    return c.fail(absl::StrCat("the block maxima have rank ", grid.size(),
                               ", the input ", shape.size()));
  for (size_t d = 0; d < grid.size(); ++d)
    if (grid[d] < 1 || shape[d] % grid[d] != 0)
      return c.fail(absl::StrCat("the block maxima's dimension ", d, " (",
                                 grid[d], ") does not divide the input's (",
                                 shape[d], ")"));
  return absl::OkStatus();
}

/// A block-scaled fp8_cast (operands input, amax, out, scale_inv) or
/// fp8_scale_inv (codes, amax, scale_inv; the codes are the cast's input):
/// its blocks, read in out's matrix [rows, k] (the input's, or with
/// `transpose` each matrix transposed, a batch's blocks each inside one
/// matrix), are `scale_mode`'s, and scale_inv holds that mode's scales.
absl::Status checkFp8CastBlocks(const Check &c, const Fp8QuantizeAttrs &a,
                                size_t scaleIndex) {
  WEFT_RETURN_IF_ERROR(checkFp8Grid(c));
  if (c.dtype(1) != DType::F32 || c.dtype(scaleIndex) != DType::F32)
    return c.fail("amax and scale_inv must hold f32");
  const std::vector<int64_t> &shape = c.shape(0);
  long rows = 0, cols = 0;
  if (!weft_fp8_matrix_blocks(shape.data(), c.shape(1).data(),
                              static_cast<int>(shape.size()), &rows, &cols))
    return c.fail("the block maxima cut the input into blocks that are no "
                  "rectangles of its matrix (last dimension the columns)");
  int64_t k = a.transpose && shape.size() >= 2 ? shape[shape.size() - 2]
                                               : shape.back(),
          operandRows = c.elements(0) / std::max<int64_t>(k, 1);
  if (a.transpose) {
    // Each matrix of a batch transposes on its own: a block must lie in one.
    if (shape.size() < 2 || rows < 1 || shape[shape.size() - 2] % rows != 0)
      return c.fail(absl::StrCat("field 'transpose': a block-scaled "
                                 "transposing cast needs blocks inside one "
                                 "matrix; ",
                                 rows, "-row blocks cut ", list(shape)));
    std::swap(rows, cols);
  }
  int mode = a.scaleMode;
  if (!(weft_fp8_scale_modes_of(operandRows, k, rows, cols) >> mode & 1))
    return c.fail(absl::StrCat("field 'scale_mode' is \"",
                               spell(kScaleModes, mode),
                               "\", but the blocks are ", rows, " x ", cols,
                               " of ", operandRows, " x ", k));
  int64_t count = weft_fp8_scale_count(mode, operandRows, k);
  if (c.elements(scaleIndex) != count)
    return c.fail(absl::StrCat(c.name(scaleIndex), " holds ",
                               c.elements(scaleIndex), " scales; \"",
                               spell(kScaleModes, mode), "\" keeps ", count));
  return absl::OkStatus();
}

absl::Status checkNormGrad(const Check &c, double epsilon, bool bias) {
  if (!(epsilon > 0))
    return c.fail(
        absl::StrCat("field 'epsilon' is ", epsilon, "; it must be positive"));
  if (c.shape(0).empty())
    return c.fail(
        absl::StrCat("normalises the last dimension; ", c.name(0), " is 0-d"));
  WEFT_RETURN_IF_ERROR(c.hasShape(1, {c.shape(0).back()}));
  WEFT_RETURN_IF_ERROR(c.sameShape(0, 2));
  WEFT_RETURN_IF_ERROR(c.sameShape(0, 3));
  WEFT_RETURN_IF_ERROR(c.sameShape(1, 4));
  return bias ? c.sameShape(1, 5) : absl::OkStatus();
}

/// values (operand `values`) and indices of the k best of each row of
/// operand `input` [..., n].
absl::Status checkTopK(const Check &c, size_t input, size_t values,
                       size_t indices, int64_t k) {
  std::vector<int64_t> shape = c.shape(input);
  if (shape.empty() || k < 1 || k > shape.back())
    return c.fail(absl::StrCat("field 'k' = ", k, " must lie in [1, ",
                               shape.empty() ? 0 : shape.back(), "]"));
  shape.back() = k;
  WEFT_RETURN_IF_ERROR(c.isInt(indices));
  WEFT_RETURN_IF_ERROR(c.hasShape(indices, shape));
  return c.hasShape(values, shape);
}

/// Operand `i` is [tokens, k] of i32 or i64 (positions or expert ids),
/// with operand `weights` (if given) of its shape.
absl::Status checkPositions(const Check &c, size_t i, int64_t tokens,
                            std::optional<size_t> weights = std::nullopt) {
  WEFT_RETURN_IF_ERROR(c.isInt(i));
  WEFT_RETURN_IF_ERROR(c.hasRank(i, 2));
  if (c.shape(i)[0] != tokens)
    return c.fail(absl::StrCat(c.name(i), " routes ", c.shape(i)[0],
                               " tokens, not ", tokens));
  return weights ? c.sameShape(i, *weights) : absl::OkStatus();
}

/// Operand `i` is rows [N, width].
absl::Status checkRows(const Check &c, size_t i, int64_t width) {
  WEFT_RETURN_IF_ERROR(c.hasRank(i, 2));
  if (c.shape(i)[1] != width)
    return c.fail(absl::StrCat(c.name(i), " rows have ", c.shape(i)[1],
                               " elements, not ", width));
  return absl::OkStatus();
}

/// Operand `i` is the scales [T, cols] f32 of tiles of `tileRows` of
/// each of `experts` experts' rows in N (weft_fp8_group_tiles).
absl::Status checkGroupScales(const Check &c, size_t i, int64_t experts,
                              int64_t n, int64_t cols, int64_t tileRows) {
  int64_t tiles = weft_fp8_group_tiles(experts, n, tileRows);
  if (c.dtype(i) != DType::F32 ||
      c.shape(i) != std::vector<int64_t>{tiles, cols})
    return c.fail(absl::StrCat(c.name(i), " must be f32 [", tiles, ", ", cols,
                               "] (a scale per tile of an expert's rows "
                               "and column), not ",
                               dtypeText(c.dtype(i)), " ", list(c.shape(i))));
  return absl::OkStatus();
}

/// Operand `i` is group sizes [G] with `experts` dividing G.
absl::Status checkSizes(const Check &c, size_t i, int64_t experts) {
  WEFT_RETURN_IF_ERROR(c.isInt(i));
  WEFT_RETURN_IF_ERROR(c.hasRank(i, 1));
  if (experts < 1 || c.shape(i)[0] % experts != 0)
    return c.fail(absl::StrCat("the ", experts, " experts do not divide the ",
                               c.shape(i)[0], " groups of ", c.name(i)));
  return absl::OkStatus();
}

/// A strided walk over `sizes` from layout[0] + extra with strides
/// layout[1..] stays inside operand `i`.
absl::Status walkFits(const Check &c, const char *field, size_t i,
                      const std::vector<int64_t> &sizes,
                      const std::vector<int64_t> &layout, int64_t extra) {
  std::optional<int64_t> last = checkedAdd(layout[0], extra);
  for (size_t d = 0; d < sizes.size(); ++d) {
    std::optional<int64_t> step = checkedMul(sizes[d] - 1, layout[d + 1]);
    last = last && step ? checkedAdd(*last, *step) : std::nullopt;
  }
  if (!last || *last >= c.elements(i))
    return c.fail(absl::StrCat(
        "field '", field, "' ", list(layout), " over sizes ", list(sizes),
        extra ? " on the group's last rank" : "", " reaches past the ",
        c.elements(i), " elements of ", c.name(i)));
  return absl::OkStatus();
}

absl::Status checkCopy(const Check &c, const CopyAttrs &a) {
  if (std::any_of(a.sizes.begin(), a.sizes.end(),
                  [](int64_t x) { return x < 1; }))
    return c.fail(
        absl::StrCat("field 'sizes' ", list(a.sizes), " must be positive"));
  for (auto [field, operand, layout] :
       {std::tuple{"src", size_t(0), &a.src}, {"dst", size_t(1), &a.dst}}) {
    if (layout->size() != a.sizes.size() + 1)
      return c.fail(absl::StrCat("field '", field, "' must be [offset, ",
                                 a.sizes.size(), " strides], has ",
                                 layout->size(), " entries"));
    if (std::any_of(layout->begin(), layout->end(),
                    [](int64_t x) { return x < 0; }))
      return c.fail(absl::StrCat("field '", field, "' ", list(*layout),
                                 " must not be negative"));
    WEFT_RETURN_IF_ERROR(walkFits(c, field, operand, a.sizes, *layout, 0));
  }
  if (a.byRank && a.byRank->step < 0)
    return c.fail(
        absl::StrCat("field 'by_rank' step ", a.byRank->step, " is negative"));
  for (size_t d = 0; d < a.sizes.size(); ++d)
    if (a.dst[d + 1] == 0 && a.sizes[d] > 1)
      return c.fail(absl::StrCat("field 'dst': stride 0 along a dimension "
                                 "of size ",
                                 a.sizes[d],
                                 " writes one element several times"));
  if (!a.byRank)
    return absl::OkStatus();
  int64_t group;
  WEFT_ASSIGN(group, c.group(a.byRank->axes, "by_rank", true));
  std::optional<int64_t> extra = checkedMul(group - 1, a.byRank->step);
  if (!extra)
    return c.fail("field 'by_rank': offsets overflow int64");
  return walkFits(c, "src", 0, a.sizes, a.src, *extra);
}

absl::Status checkCollective(const Check &c, const CollectiveAttrs &a) {
  bool reduces = a.kind == CollectiveKind::AllReduce ||
                 a.kind == CollectiveKind::ReduceScatter;
  const char *kind = spell(kCollectives, a.kind);
  if (reduces == (a.reduction == Reduction::None))
    return c.fail(absl::StrCat("field 'reduction': ", kind,
                               reduces ? " needs a reduction (sum, max, mean)"
                                       : " takes reduction 'none'"));
  if (c.dtype(0) != c.dtype(1))
    return c.fail(absl::StrCat("changes the element type from ",
                               dtypeText(c.dtype(0)), " to ",
                               dtypeText(c.dtype(1))));
  int64_t g;
  WEFT_ASSIGN(g, c.group(a.axes, "axes", true));
  int64_t in = c.elements(0), out = c.elements(1);
  auto expect = [&](int64_t want) -> absl::Status {
    if (want == out)
      return absl::OkStatus();
    return c.fail(absl::StrCat(kind, " over a group of ", g, " from ", in,
                               " elements needs an output of ", want, ", not ",
                               out, " (", c.name(1), ")"));
  };
  switch (a.kind) {
  case CollectiveKind::AllReduce:
    return expect(in);
  case CollectiveKind::AllGather: {
    std::optional<int64_t> gathered = checkedMul(in, g);
    if (!gathered)
      return c.fail("gathers more than 2^63 elements");
    return expect(*gathered);
  }
  case CollectiveKind::ReduceScatter:
  case CollectiveKind::AllToAll:
    if (in % g != 0)
      return c.fail(absl::StrCat(c.name(0), ": ", in,
                                 " elements do not split into ", g, " blocks"));
    return expect(a.kind == CollectiveKind::AllToAll ? in : in / g);
  }
  return absl::OkStatus();
}

absl::Status checkPeer(const Check &c, const PeerAttrs &a) {
  if (!c.b.mesh)
    return c.fail("field 'axis' names a mesh axis but the bundle has no mesh");
  int64_t size = c.b.mesh->axisSize(a.axis);
  if (size == 0)
    return c.fail(absl::StrCat("field 'axis' is '", a.axis,
                               "', which is not an axis of mesh '",
                               c.b.mesh->name, "'"));
  if (a.delta % size == 0)
    return c.fail(absl::StrCat("field 'delta': peer offset ", a.delta,
                               " along '", a.axis, "' of size ", size,
                               " is the rank itself"));
  if (a.tag < 0)
    return c.fail(absl::StrCat("field 'tag' ", a.tag, " is negative"));
  return absl::OkStatus();
}

/// The checks of the instruction's op verifier (SchedOps.cpp), but for a
/// library instruction's scratch.
absl::Status checkOperands(const Check &c) {
  const Instruction &in = c.in;
  switch (in.op) {
  case Op::Launch:
    return checkLaunch(c, in.as<LaunchAttrs>());
  case Op::Gemm:
    return checkGemm(c, in.as<GemmAttrs>());
  case Op::Attention:
    return checkAttention(c, in.as<AttentionAttrs>(), false);
  case Op::AttentionGrad:
    return checkAttention(c, in.as<AttentionAttrs>(), true);
  case Op::Embedding: // table, ids, out
    WEFT_RETURN_IF_ERROR(c.hasRank(0, 2));
    WEFT_RETURN_IF_ERROR(c.isInt(1));
    WEFT_RETURN_IF_ERROR(rowsOf(c, 1, 2, c.shape(0)[1]));
    return c.vocabAxes(in.as<VocabAttrs>().vocabAxes);
  case Op::EmbeddingGrad: // ids, dout, dtable
    WEFT_RETURN_IF_ERROR(c.hasRank(2, 2));
    WEFT_RETURN_IF_ERROR(c.isInt(0));
    WEFT_RETURN_IF_ERROR(rowsOf(c, 0, 1, c.shape(2)[1]));
    return c.vocabAxes(in.as<VocabAttrs>().vocabAxes);
  case Op::Rope: {
    const RopeAttrs &a = in.as<RopeAttrs>();
    if (c.shape(0).empty() || c.shape(0).back() % 2 != 0)
      return c.fail(absl::StrCat("rotates pairs: the last dimension of ",
                                 c.name(0), " ", list(c.shape(0)),
                                 " must be even"));
    if (!(a.theta > 0))
      return c.fail(
          absl::StrCat("field 'theta' is ", a.theta, "; it must be positive"));
    if (a.hasPositions) {
      if (c.shape(0).size() < 2)
        return c.fail(absl::StrCat(c.name(0), " has no sequence dimension"));
      WEFT_RETURN_IF_ERROR(c.isPositions(2, c.shape(0)[1]));
    }
    return c.sameShape(0, 1);
  }
  case Op::CrossEntropy: // logits, labels, loss
    WEFT_RETURN_IF_ERROR(logitsAndLabels(c));
    WEFT_RETURN_IF_ERROR(c.isF32Scalar(2));
    return c.vocabAxes(in.as<CrossEntropyAttrs>().vocabAxes);
  case Op::CrossEntropyGrad: // logits, labels, dloss, dlogits
    WEFT_RETURN_IF_ERROR(logitsAndLabels(c));
    WEFT_RETURN_IF_ERROR(c.isF32Scalar(2));
    WEFT_RETURN_IF_ERROR(c.sameShape(0, 3));
    return c.vocabAxes(in.as<CrossEntropyAttrs>().vocabAxes);
  case Op::Reduce: {
    const ReduceAttrs &a = in.as<ReduceAttrs>();
    if (a.reduction == Reduction::None)
      return c.fail("field 'reduction' must be sum, max or mean");
    const std::vector<int64_t> &shape = c.shape(0);
    int64_t previous = -1;
    for (int64_t d : a.dims) {
      if (d <= previous || d >= static_cast<int64_t>(shape.size()))
        return c.fail(absl::StrCat("field 'dims' ", list(a.dims),
                                   " must increase and lie inside rank ",
                                   shape.size()));
      previous = d;
    }
    std::vector<int64_t> kept;
    for (size_t d = 0; d < shape.size(); ++d)
      if (std::find(a.dims.begin(), a.dims.end(), int64_t(d)) == a.dims.end())
        kept.push_back(shape[d]);
    return c.hasShape(1, kept);
  }
  case Op::Softmax: {
    int64_t dim = in.as<SoftmaxAttrs>().dim,
            rank = static_cast<int64_t>(c.shape(0).size());
    if (dim < 0 || dim >= rank)
      return c.fail(
          absl::StrCat("field 'dim' ", dim, " is outside rank ", rank));
    return c.sameShape(0, 1);
  }
  case Op::Dropout: {
    double rate = in.as<DropoutAttrs>().rate;
    if (!(rate >= 0 && rate < 1))
      return c.fail(absl::StrCat("field 'rate' ", rate, " is outside [0, 1)"));
    const auto &a = in.as<DropoutAttrs>();
    WEFT_RETURN_IF_ERROR(checkMask(c, a.hasStep ? 2 : -1,
                                   a.block.hasMicrobatch ? 2 + a.hasStep : -1,
                                   a.block, c.shape(0).size()));
    if (a.hasPositions) {
      if (c.shape(0).size() < 2 || c.shape(0).size() > 4)
        return c.fail("field 'has_positions': positions index dimension 1 "
                      "of an input of rank 2 to 4");
      WEFT_RETURN_IF_ERROR(
          c.isPositions(2 + a.hasStep + a.block.hasMicrobatch, c.shape(0)[1]));
    }
    return c.sameShape(0, 1);
  }
  case Op::Fp8Amax:
  case Op::Fp8Quantize:
    WEFT_RETURN_IF_ERROR(checkFp8Grid(c));
    return in.op == Op::Fp8Amax ? absl::OkStatus() : c.sameShape(0, 2);
  case Op::Fp8Encode:
  case Op::Fp8Decode: { // input, amax, out: codes one side, values the other
    bool encode = in.op == Op::Fp8Encode;
    int values = encode ? 0 : 2, codes = encode ? 2 : 0;
    if (c.dtype(values) != DType::F32 && c.dtype(values) != DType::BF16)
      return c.fail(absl::StrCat(c.name(values), " must hold f32 or bf16, not ",
                                 dtypeText(c.dtype(values))));
    if (!isFp8(c.dtype(codes)))
      return c.fail(absl::StrCat(c.name(codes),
                                 " must hold f8e4m3fn or f8e5m2, not ",
                                 dtypeText(c.dtype(codes))));
    if (c.dtype(1) != DType::F32)
      return c.fail(absl::StrCat(c.name(1), " must hold f32, not ",
                                 dtypeText(c.dtype(1))));
    WEFT_RETURN_IF_ERROR(checkFp8Grid(c));
    return c.sameShape(0, 2);
  }
  case Op::Fp8Cast: { // input, amax, out, scale_inv
    if (c.dtype(0) != DType::F32 && c.dtype(0) != DType::BF16)
      return c.fail(absl::StrCat(c.name(0), " must hold f32 or bf16, not ",
                                 dtypeText(c.dtype(0))));
    if (!isFp8(c.dtype(2)))
      return c.fail(absl::StrCat(c.name(2),
                                 " must hold f8e4m3fn or f8e5m2, "
                                 "not ",
                                 dtypeText(c.dtype(2))));
    const auto &a = in.as<Fp8QuantizeAttrs>();
    std::vector<int64_t> want = c.shape(0);
    if (a.transpose) {
      if (want.size() < 2)
        return c.fail("field 'transpose': the input has rank below 2");
      std::swap(want[want.size() - 2], want.back());
    }
    WEFT_RETURN_IF_ERROR(c.hasShape(2, want));
    if (a.scaleMode == WEFT_FP8_SCALE_TENSOR) {
      WEFT_RETURN_IF_ERROR(c.isF32Scalar(1));
      return c.isF32Scalar(3);
    }
    return checkFp8CastBlocks(c, a, 3);
  }
  case Op::Fp8ScaleInv: { // codes, amax, scale_inv
    if (!isFp8(c.dtype(0)))
      return c.fail(absl::StrCat(c.name(0),
                                 " must hold f8e4m3fn or f8e5m2, not ",
                                 dtypeText(c.dtype(0))));
    const auto &a = in.as<Fp8QuantizeAttrs>();
    if (a.transpose && c.shape(0).size() < 2)
      return c.fail("field 'transpose': the codes have rank below 2");
    if (a.scaleMode == WEFT_FP8_SCALE_TENSOR) {
      WEFT_RETURN_IF_ERROR(c.isF32Scalar(1));
      return c.isF32Scalar(2);
    }
    return checkFp8CastBlocks(c, a, 2);
  }
  case Op::LayerNormGrad:
    return checkNormGrad(c, in.as<NormGradAttrs>().epsilon, true);
  case Op::RmsNormGrad:
    return checkNormGrad(c, in.as<NormGradAttrs>().epsilon, false);
  case Op::OneHot: // indices, out
    WEFT_RETURN_IF_ERROR(c.isInt(0));
    if (c.shape(1).empty())
      return c.fail(absl::StrCat(c.name(1), " must have a class dimension"));
    return rowsOf(c, 0, 1, c.shape(1).back());
  case Op::TopK:
    return checkTopK(c, 0, 1, 2, in.as<TopKAttrs>().k);
  case Op::TopKGating:
    WEFT_RETURN_IF_ERROR(c.hasRank(0, 2));
    return checkTopK(c, 0, 1, 2, in.as<TopKGatingAttrs>().k);
  case Op::ExpertRoute: // indices, positions, counts
    WEFT_RETURN_IF_ERROR(c.hasRank(0, 2));
    WEFT_RETURN_IF_ERROR(checkPositions(c, 0, c.shape(0)[0]));
    WEFT_RETURN_IF_ERROR(checkPositions(c, 1, c.shape(0)[0]));
    WEFT_RETURN_IF_ERROR(c.sameShape(0, 1));
    WEFT_RETURN_IF_ERROR(c.isInt(2));
    WEFT_RETURN_IF_ERROR(c.hasRank(2, 1));
    if (in.as<ExpertRouteAttrs>().capacity < 0)
      return c.fail(absl::StrCat("field 'capacity' ",
                                 in.as<ExpertRouteAttrs>().capacity,
                                 " must be >= 0 (0: dropless)"));
    return c.group(in.as<ExpertRouteAttrs>().tokenAxes, "token_axes", false)
        .status();
  case Op::ExpertDispatch: // input, positions, out
    WEFT_RETURN_IF_ERROR(c.hasRank(0, 2));
    WEFT_RETURN_IF_ERROR(checkPositions(c, 1, c.shape(0)[0]));
    return checkRows(c, 2, c.shape(0)[1]);
  case Op::ExpertCombine: // expert_outputs, weights, positions, out
    WEFT_RETURN_IF_ERROR(c.hasRank(3, 2));
    WEFT_RETURN_IF_ERROR(checkRows(c, 0, c.shape(3)[1]));
    return checkPositions(c, 2, c.shape(3)[0], 1);
  case Op::ExpertGather: // expert_outputs, positions, out
    WEFT_RETURN_IF_ERROR(c.hasRank(0, 2));
    WEFT_RETURN_IF_ERROR(c.hasRank(1, 2));
    WEFT_RETURN_IF_ERROR(checkPositions(c, 1, c.shape(1)[0]));
    return c.hasShape(2, {c.shape(1)[0], c.shape(1)[1], c.shape(0)[1]});
  case Op::ExpertScatter: // pairs, positions, out
    WEFT_RETURN_IF_ERROR(c.hasRank(0, 3));
    WEFT_RETURN_IF_ERROR(checkPositions(c, 1, c.shape(0)[0]));
    WEFT_RETURN_IF_ERROR(c.hasShape(1, {c.shape(0)[0], c.shape(0)[1]}));
    return checkRows(c, 2, c.shape(0)[2]);
  case Op::GroupedMatmul: { // input, weight, sizes, out
    WEFT_RETURN_IF_ERROR(c.hasRank(0, 2));
    WEFT_RETURN_IF_ERROR(c.hasRank(1, 3));
    bool t = in.as<GroupedMatmulAttrs>().transposeRhs;
    const std::vector<int64_t> &w = c.shape(1);
    if (w[t ? 2 : 1] != c.shape(0)[1])
      return c.fail(absl::StrCat(c.name(1), " ", list(w),
                                 " does not take rows of ", c.shape(0)[1],
                                 " elements", t ? " (transposed)" : ""));
    WEFT_RETURN_IF_ERROR(checkSizes(c, 2, w[0]));
    WEFT_RETURN_IF_ERROR(c.hasShape(3, {c.shape(0)[0], w[t ? 1 : 2]}));
    return checkGroupedScales(c, in.as<GroupedMatmulAttrs>());
  }
  case Op::GroupedMatmulWgrad: { // lhs, rhs, sizes, out
    WEFT_RETURN_IF_ERROR(c.hasRank(0, 2));
    WEFT_RETURN_IF_ERROR(c.hasRank(1, 2));
    WEFT_RETURN_IF_ERROR(c.hasRank(3, 3));
    const auto &a = in.as<GroupedWgradAttrs>();
    absl::StatusOr<bool> fp8 = checkGemmTypes(c, a.hasScales, "lhs", "rhs");
    if (!fp8.ok())
      return fp8.status();
    // FP8 operands come transposed: [P, N] and [Q, N].
    int rows = *fp8 ? 1 : 0, cols = 1 - rows;
    if (c.shape(0)[rows] != c.shape(1)[rows])
      return c.fail(absl::StrCat(c.name(0), " has ", c.shape(0)[rows],
                                 " rows, ", c.name(1), " ", c.shape(1)[rows],
                                 *fp8 ? " (FP8 operands transposed)" : ""));
    WEFT_RETURN_IF_ERROR(checkSizes(c, 2, c.shape(3)[0]));
    WEFT_RETURN_IF_ERROR(
        c.hasShape(3, {c.shape(3)[0], c.shape(0)[cols], c.shape(1)[cols]}));
    if (!*fp8)
      return absl::OkStatus();
    if (c.dtype(0) == DType::F8E5M2 && c.dtype(1) == DType::F8E5M2)
      return c.fail("multiplies f8E5M2 by f8E5M2, which no FP8 GEMM does");
    if (c.dtype(3) != DType::F32 && c.dtype(3) != DType::BF16)
      return c.fail(absl::StrCat(c.name(3),
                                 " must hold f32 or bf16 for FP8 "
                                 "operands, not ",
                                 dtypeText(c.dtype(3))));
    int64_t n = c.shape(0)[1];
    int64_t experts = c.shape(3)[0];
    WEFT_RETURN_IF_ERROR(
        checkGroupScales(c, 4, experts, n, c.shape(0)[0], a.tileRows));
    return checkGroupScales(c, 5, experts, n, c.shape(1)[0], a.tileRows);
  }
  case Op::Fp8GroupQuantize: // input, sizes, out
  case Op::Fp8GroupCast: {   // input, sizes, out, scale_inv
    const auto &a = in.as<Fp8GroupAttrs>();
    WEFT_RETURN_IF_ERROR(c.hasRank(0, 2));
    WEFT_RETURN_IF_ERROR(checkSizes(c, 1, a.experts));
    const std::vector<int64_t> &x = c.shape(0);
    if (in.op == Op::Fp8GroupQuantize) {
      if (c.dtype(0) != DType::F32 || c.dtype(2) != DType::F32)
        return c.fail("fp8_group_quantize reads and writes f32");
      return c.sameShape(0, 2);
    }
    if (c.dtype(0) != DType::F32)
      return c.fail(absl::StrCat(c.name(0), " must hold f32, not ",
                                 dtypeText(c.dtype(0))));
    if (!isFp8(c.dtype(2)))
      return c.fail(absl::StrCat(c.name(2),
                                 " must hold f8e4m3fn or f8e5m2, "
                                 "not ",
                                 dtypeText(c.dtype(2))));
    WEFT_RETURN_IF_ERROR(c.hasShape(2, {x[1], x[0]}));
    return checkGroupScales(c, 3, a.experts, x[0], x[1], a.tileRows);
  }
  case Op::Copy:
    return checkCopy(c, in.as<CopyAttrs>());
  case Op::Fill:
    return absl::OkStatus();
  case Op::Collective:
    return checkCollective(c, in.as<CollectiveAttrs>());
  case Op::RaggedAllToAll: { // input, send_sizes, recv_sizes, output
    WEFT_RETURN_IF_ERROR(c.hasRank(0, 2));
    WEFT_RETURN_IF_ERROR(checkRows(c, 3, c.shape(0)[1]));
    WEFT_RETURN_IF_ERROR(c.isFloat(0));
    if (c.dtype(0) != c.dtype(3))
      return c.fail(absl::StrCat(c.name(3), " holds ", dtypeText(c.dtype(3)),
                                 ", not ", c.name(0), "'s ",
                                 dtypeText(c.dtype(0))));
    int64_t g;
    WEFT_ASSIGN(g, c.group(in.as<RaggedAttrs>().axes, "axes", true));
    for (size_t i : {size_t(1), size_t(2)}) {
      WEFT_RETURN_IF_ERROR(c.isInt(i));
      WEFT_RETURN_IF_ERROR(c.hasRank(i, 1));
      if (c.shape(i)[0] % g != 0)
        return c.fail(absl::StrCat("the group's ", g,
                                   " members do not divide the ", c.shape(i)[0],
                                   " segments of ", c.name(i)));
    }
    return absl::OkStatus();
  }
  case Op::Send:
  case Op::Recv:
    return checkPeer(c, in.as<PeerAttrs>());
  case Op::RingShift:
    if (c.type(0) != c.type(1))
      return c.fail(absl::StrCat(c.name(1), " is ", typeText(c.type(1)),
                                 ", not ", c.name(0), "'s ",
                                 typeText(c.type(0))));
    return checkPeer(c, in.as<PeerAttrs>());
  case Op::Record:
  case Op::Wait: // Checked in program order with the streams.
    return absl::OkStatus();
  }
  return absl::OkStatus();
}

/// The checks of the instruction's op verifier (SchedOps.cpp).
absl::Status checkInstruction(const Check &c) {
  WEFT_RETURN_IF_ERROR(checkOperands(c));
  return checkLibraryScratch(c);
}

//===----------------------------------------------------------------------===//
// Programs: buffers, the memory plan and the stream order
//===----------------------------------------------------------------------===//

const char *kindName(Buffer::Kind k) {
  switch (k) {
  case Buffer::Kind::Input:
    return "input";
  case Buffer::Kind::Param:
    return "param";
  case Buffer::Kind::Constant:
    return "constant";
  case Buffer::Kind::Alloc:
    return "alloc";
  case Buffer::Kind::View:
    return "view";
  }
  return "?";
}

constexpr Spelling<Buffer::Kind> kBufferKinds[] = {
    {"input", Buffer::Kind::Input},
    {"param", Buffer::Kind::Param},
    {"constant", Buffer::Kind::Constant},
    {"alloc", Buffer::Kind::Alloc},
    {"view", Buffer::Kind::View}};

/// Buffer `id` of `p`, whose earlier buffers are read; the checks that need
/// only what comes before it (sched.get's, sched.view's, the alloc bounds).
absl::StatusOr<Buffer> readBuffer(const json &v, int64_t id, const Program &p,
                                  int64_t end, const SchedBundle &b) {
  WEFT_OBJECT(o, v, absl::StrCat("program '", p.name, "', buffer ", id));
  Buffer buf;
  WEFT_ASSIGN(buf.kind, o.choice("kind", kBufferKinds));
  o.rename(absl::StrCat(o.where(), " (", kindName(buf.kind), ")"));
  WEFT_ASSIGN(buf.type, o.type());
  auto sameType = [&](const TensorType &want,
                      const std::string &what) -> absl::Status {
    if (buf.type != want)
      return o.fail(absl::StrCat("is ", typeText(buf.type), " but ", what,
                                 " is ", typeText(want)));
    return absl::OkStatus();
  };
  switch (buf.kind) {
  case Buffer::Kind::Input:
    WEFT_ASSIGN(buf.index, o.i64("index"));
    if (buf.index < 0 || buf.index >= static_cast<int64_t>(p.inputs.size()))
      return o.fail(absl::StrCat("field 'index' is ", buf.index,
                                 ", but the program has ", p.inputs.size(),
                                 " inputs"));
    WEFT_RETURN_IF_ERROR(
        sameType(p.inputs[buf.index].type, absl::StrCat("input ", buf.index)));
    break;
  case Buffer::Kind::Param:
  case Buffer::Kind::Constant: {
    bool param = buf.kind == Buffer::Kind::Param;
    WEFT_ASSIGN(buf.name, o.str("name"));
    const TensorType *want = nullptr;
    if (const Param *decl = param ? b.param(buf.name) : nullptr)
      want = &decl->type;
    if (const Constant *decl = param ? nullptr : b.constant(buf.name))
      want = &decl->type;
    if (!want)
      return o.fail(absl::StrCat("field 'name' is '", buf.name,
                                 "', which is not a ",
                                 param ? "param" : "constant"));
    WEFT_RETURN_IF_ERROR(sameType(
        *want, absl::StrCat(param ? "param '" : "constant '", buf.name, "'")));
    break;
  }
  case Buffer::Kind::Alloc: {
    WEFT_ASSIGN(buf.offset, o.i64("offset"));
    WEFT_ASSIGN(buf.first, o.i64("first"));
    WEFT_ASSIGN(buf.last, o.i64("last"));
    int64_t bytes = buf.type.bytes();
    if (buf.offset < 0 || buf.offset % p.align != 0)
      return o.fail(absl::StrCat("field 'offset' ", buf.offset,
                                 " is not a non-negative multiple of the "
                                 "program's ",
                                 p.align, "-byte alignment"));
    if (bytes > p.arena || buf.offset > p.arena - bytes)
      return o.fail(absl::StrCat("field 'offset': bytes [", buf.offset, ", ",
                                 countText(checkedAdd(buf.offset, bytes)),
                                 ") lie outside the ", p.arena, "-byte arena"));
    if (buf.first < 0 || buf.first > buf.last || buf.last > end)
      return o.fail(absl::StrCat("fields 'first' and 'last': live range [",
                                 buf.first, ", ", buf.last,
                                 "] is not inside [0, ", end, "]"));
    break;
  }
  case Buffer::Kind::View: {
    WEFT_ASSIGN(buf.of, o.i64("of"));
    WEFT_ASSIGN(buf.offset, o.i64("offset"));
    if (buf.of < 0 || buf.of >= id)
      return o.fail(absl::StrCat("field 'of' is ", buf.of,
                                 "; a view is of an earlier buffer (0 to ",
                                 id - 1, ")"));
    const TensorType &source = p.buffers[buf.of].type;
    int64_t elementBytes = static_cast<int64_t>(dtypeSize(buf.type.dtype));
    if (buf.offset < 0 || buf.offset % elementBytes != 0)
      return o.fail(absl::StrCat("field 'offset' ", buf.offset,
                                 " is not a non-negative multiple of ",
                                 elementBytes, " bytes"));
    int64_t bytes = buf.type.bytes();
    if (bytes > source.bytes() || buf.offset > source.bytes() - bytes)
      return o.fail(absl::StrCat("field 'offset': bytes [", buf.offset, ", ",
                                 countText(checkedAdd(buf.offset, bytes)),
                                 ") lie outside the ", source.bytes(),
                                 "-byte buffer ", buf.of));
    break;
  }
  }
  WEFT_RETURN_IF_ERROR(o.done());
  return buf;
}

/// Happens-before across streams, as vector clocks: clock[s][t] is how
/// many instructions of stream t stream s knows have completed (the
/// program verifier's StreamOrder).
struct StreamOrder {
  struct Access {
    int64_t stream = -1, position = -1, instruction = -1;
  };
  struct History {
    Access lastWrite;
    std::vector<Access> lastRead; // Per stream, since the last write.
  };
  struct Recorded {
    int64_t stream;
    std::vector<int64_t> clock;
  };

  StreamOrder(size_t streams, size_t storages)
      : clock(streams, std::vector<int64_t>(streams, 0)), position(streams, 0),
        history(storages) {}

  bool ordered(int64_t stream, const Access &before) const {
    return before.instruction < 0 || before.stream == stream ||
           clock[stream][before.stream] > before.position;
  }

  std::vector<std::vector<int64_t>> clock;
  std::vector<int64_t> position;
  std::map<int64_t, Recorded> events; // The latest record of each event.
  std::vector<History> history;       // By storage.
};

/// The memory plan and the stream order of a decoded program: uses inside
/// live ranges, no two live allocs sharing a byte, no writes to constants,
/// no param both written in place and assigned, events, hazards across
/// streams, outputs and assigns live to the end. Sets p.writesParams.
absl::Status checkPlan(Program &p, const SchedBundle &b) {
  // Params instructions write in place (the optimizer's update).
  std::set<std::string> written;
  const int64_t end = p.instructions.size();
  const size_t n = p.buffers.size();
  std::string where = absl::StrCat("program '", p.name, "'");
  // The storage each buffer's bytes are: its alloc, input, param or
  // constant, through views; one key per storage.
  std::vector<int64_t> root(n), key(n), rootOffset(n, 0);
  std::map<int64_t, int64_t> inputKey;
  std::map<std::string, int64_t> symbolKey;
  for (size_t id = 0; id < n; ++id) {
    const Buffer &buf = p.buffers[id];
    root[id] = buf.kind == Buffer::Kind::View ? root[buf.of] : id;
    // Views are inside their source (checked above): no overflow.
    rootOffset[id] =
        buf.kind == Buffer::Kind::View ? rootOffset[buf.of] + buf.offset : 0;
    const Buffer &r = p.buffers[root[id]];
    if (r.kind == Buffer::Kind::Input)
      key[id] = inputKey.emplace(r.index, root[id]).first->second;
    else if (r.kind == Buffer::Kind::Param || r.kind == Buffer::Kind::Constant)
      key[id] = symbolKey.emplace(r.name, root[id]).first->second;
    else
      key[id] = root[id];
  }

  // No two allocs alive at once share a byte: sweep by offset. Allocs that
  // share bytes at different times are one storage for the stream order:
  // the later must not start before the earlier's last access.
  std::vector<int64_t> allocs;
  for (size_t id = 0; id < n; ++id)
    if (p.buffers[id].kind == Buffer::Kind::Alloc)
      allocs.push_back(id);
  std::sort(allocs.begin(), allocs.end(), [&](int64_t x, int64_t y) {
    const Buffer &a = p.buffers[x], &c = p.buffers[y];
    return std::make_tuple(a.offset, a.first, x) <
           std::make_tuple(c.offset, c.first, y);
  });
  std::vector<std::vector<int64_t>> aliases(n);
  for (size_t i = 0; i < allocs.size(); ++i) {
    const Buffer &a = p.buffers[allocs[i]];
    int64_t aBytes = a.type.bytes(), aEnd = a.offset + aBytes; // In the arena.
    for (size_t j = i + 1;
         j < allocs.size() && p.buffers[allocs[j]].offset < aEnd; ++j) {
      const Buffer &c = p.buffers[allocs[j]];
      int64_t cBytes = c.type.bytes();
      if (aBytes == 0 || cBytes == 0)
        continue;
      if (a.first <= c.last && c.first <= a.last)
        return invalid(absl::StrCat(where, ", buffer ", allocs[j], " (alloc)"),
                       absl::StrCat("shares bytes with buffer ", allocs[i],
                                    " while both are live: [", c.offset, ", ",
                                    c.offset + cBytes, ") live [", c.first,
                                    ", ", c.last, "] against [", a.offset, ", ",
                                    aEnd, ") live [", a.first, ", ", a.last,
                                    "]"));
      aliases[allocs[i]].push_back(allocs[j]);
      aliases[allocs[j]].push_back(allocs[i]);
    }
  }

  StreamOrder order(p.streams.size(), n);
  for (int64_t i = 0; i < end; ++i) {
    const Instruction &in = p.instructions[i];
    Check c(b, p, i, in);
    int64_t s = in.stream;
    if (in.op == Op::Record || in.op == Op::Wait) {
      int64_t event = in.as<EventAttrs>().event;
      if (event < 0 || event >= p.events)
        return c.fail(absl::StrCat("field 'event' ", event,
                                   " is outside the program's ", p.events,
                                   " events"));
      if (in.op == Op::Record) {
        std::vector<int64_t> clock = order.clock[s];
        clock[s] = order.position[s];
        order.events[event] = {s, std::move(clock)};
      } else {
        auto recorded = order.events.find(event);
        if (recorded == order.events.end())
          return c.fail(absl::StrCat("field 'event': waits for event ", event,
                                     " before any record of it"));
        if (recorded->second.stream == s)
          return c.fail(absl::StrCat(
              "waits on stream '", p.streams[s], "' for event ", event,
              ", which that stream recorded: order within a stream needs "
              "no event"));
        for (size_t t = 0; t < p.streams.size(); ++t)
          order.clock[s][t] =
              std::max(order.clock[s][t], recorded->second.clock[t]);
      }
    }

    // An instruction's writes overlap none of its other operands (kernels
    // and libraries assume distinct buffers); only a collective may reduce
    // in place, its input being its output, and a generated elementwise
    // kernel write a buffer it reads (each element read before it is
    // written). (SchedOps.cpp's rule.)
    for (size_t w = 0; w < in.operands.size(); ++w) {
      if (!(c.roles[w].effect & kWrite))
        continue;
      int64_t wid = in.operands[w];
      int64_t wBegin = rootOffset[wid],
              wEnd = wBegin + p.buffers[wid].type.bytes();
      for (size_t j = 0; j < in.operands.size(); ++j) {
        int64_t id = in.operands[j];
        if (j == w || (in.op == Op::Collective && id == wid) ||
            (in.op == Op::Launch && id == wid &&
             j < static_cast<size_t>(in.as<LaunchAttrs>().inputs)))
          continue;
        int64_t begin = rootOffset[id],
                end = begin + p.buffers[id].type.bytes();
        if (key[id] == key[wid] && begin < wEnd && wBegin < end &&
            wEnd > wBegin && end > begin)
          return c.fail(absl::StrCat(
              c.name(w), " is written over the bytes of ", c.name(j),
              ": an instruction's outputs must not "
              "overlap its other operands"));
      }
    }
    StreamOrder::Access here{s, order.position[s], i};
    for (size_t j = 0; j < in.operands.size(); ++j) {
      int64_t id = in.operands[j];
      const Buffer &storage = p.buffers[root[id]];
      std::string which =
          root[id] == id
              ? absl::StrCat("buffer ", id)
              : absl::StrCat("buffer ", id, ", a view of buffer ", root[id]);
      if (storage.kind == Buffer::Kind::Alloc &&
          (i < storage.first || i > storage.last))
        return c.fail(absl::StrCat(c.name(j), " is ", which,
                                   ", which is live only in [", storage.first,
                                   ", ", storage.last, "]"));
      for (int effect : {kRead, kWrite}) {
        if (!(c.roles[j].effect & effect))
          continue;
        bool write = effect == kWrite;
        if (write && storage.kind == Buffer::Kind::Constant)
          return c.fail(
              absl::StrCat(c.name(j), " writes constant '", storage.name, "'"));
        if (write && storage.kind == Buffer::Kind::Param) {
          // A kernel's update in place, or the narrowing copy after it; a
          // state gathered whole into its storage (as FP8 codes, or
          // decoded).
          bool gather =
              in.op == Op::Collective &&
              in.as<CollectiveAttrs>().kind == CollectiveKind::AllGather;
          if (in.op != Op::Launch && in.op != Op::Copy &&
              in.op != Op::Fp8Decode && !gather)
            return c.fail(absl::StrCat(
                c.name(j), " writes param '", storage.name,
                "'; params change by an assign, or in place by a kernel "
                "launch (or the copy narrowing its result), an all_gather "
                "or an fp8_decode"));
          written.insert(storage.name);
        }
        std::vector<int64_t> keys = {key[id]};
        keys.insert(keys.end(), aliases[key[id]].begin(),
                    aliases[key[id]].end());
        for (int64_t k : keys) {
          const StreamOrder::History &h = order.history[k];
          const StreamOrder::Access *other = nullptr;
          if (!order.ordered(s, h.lastWrite))
            other = &h.lastWrite;
          for (size_t r = 0; write && !other && r < h.lastRead.size(); ++r)
            if (!order.ordered(s, h.lastRead[r]))
              other = &h.lastRead[r];
          if (other)
            return c.fail(absl::StrCat(
                c.name(j), " ", write ? "writes " : "reads ", which,
                " on stream '", p.streams[s], "', whose bytes instruction ",
                other->instruction, " (",
                opName(p.instructions[other->instruction].op), ") ",
                write ? "accesses" : "writes", " on stream '",
                p.streams[other->stream], "' with no event between"));
        }
        StreamOrder::History &h = order.history[key[id]];
        if (write) {
          h.lastWrite = here;
          h.lastRead.clear();
        } else {
          h.lastRead.resize(p.streams.size());
          h.lastRead[s] = here;
        }
      }
    }
    ++order.position[s];
  }

  // What the caller reads after the program must live to its end.
  auto livesToEnd = [&](int64_t id, const std::string &what) -> absl::Status {
    const Buffer &storage = p.buffers[root[id]];
    if (storage.kind == Buffer::Kind::Alloc && storage.last != end)
      return invalid(what,
                     absl::StrCat("field 'buffer': buffer ", id,
                                  " is read after the last instruction, but "
                                  "its live range ends at ",
                                  storage.last, " (the program has ", end,
                                  " instructions)"));
    return absl::OkStatus();
  };
  for (size_t j = 0; j < p.assigns.size(); ++j) {
    std::string what =
        absl::StrCat(where, ", assign ", j, " ('", p.assigns[j].param, "')");
    if (written.count(p.assigns[j].param))
      return invalid(what, "an instruction writes this param in place: a "
                           "param changes by one or the other");
    WEFT_RETURN_IF_ERROR(livesToEnd(p.assigns[j].buffer, what));
  }
  p.writesParams = !written.empty() || !p.assigns.empty();
  for (size_t j = 0; j < p.outputs.size(); ++j)
    WEFT_RETURN_IF_ERROR(livesToEnd(
        p.outputs[j].buffer,
        absl::StrCat(where, ", output ", j, " ('", p.outputs[j].name, "')")));
  return absl::OkStatus();
}

absl::Status readAssigns(Obj &o, Program &p, const SchedBundle &b) {
  const json *arr;
  WEFT_ASSIGN(arr, o.array("assigns"));
  std::set<std::string> assigned;
  for (size_t j = 0; j < arr->size(); ++j) {
    WEFT_OBJECT(a, (*arr)[j], absl::StrCat(o.where(), ", assign ", j));
    Assign assign;
    WEFT_ASSIGN(assign.param, a.str("param"));
    WEFT_ASSIGN(assign.buffer, a.i64("buffer"));
    WEFT_RETURN_IF_ERROR(a.done());
    const Param *param = b.param(assign.param);
    if (!param)
      return a.fail(absl::StrCat("field 'param' is '", assign.param,
                                 "', which is not a param"));
    if (!assigned.insert(assign.param).second)
      return a.fail(
          absl::StrCat("assigns param '", assign.param, "' a second time"));
    if (assign.buffer < 0 ||
        assign.buffer >= static_cast<int64_t>(p.buffers.size()))
      return a.fail(absl::StrCat("field 'buffer' is ", assign.buffer,
                                 ", but the program has ", p.buffers.size(),
                                 " buffers"));
    const TensorType &t = p.buffers[assign.buffer].type;
    if (t != param->type)
      return a.fail(absl::StrCat("field 'buffer': assigns ", typeText(t),
                                 " to param '", assign.param, "' of type ",
                                 typeText(param->type)));
    p.assigns.push_back(std::move(assign));
  }
  return absl::OkStatus();
}

absl::Status readOutputs(Obj &o, Program &p, const SchedBundle &b) {
  const json *arr;
  WEFT_ASSIGN(arr, o.array("outputs"));
  std::set<std::string> names;
  for (size_t j = 0; j < arr->size(); ++j) {
    WEFT_OBJECT(out, (*arr)[j], absl::StrCat(o.where(), ", output ", j));
    Output output;
    WEFT_ASSIGN(output.name, out.str("name"));
    out.rename(absl::StrCat(out.where(), " ('", output.name, "')"));
    WEFT_ASSIGN(output.buffer, out.i64("buffer"));
    if (output.buffer < 0 ||
        output.buffer >= static_cast<int64_t>(p.buffers.size()))
      return out.fail(absl::StrCat("field 'buffer' is ", output.buffer,
                                   ", but the program has ", p.buffers.size(),
                                   " buffers"));
    if (out.has("split")) {
      WEFT_ASSIGN(
          output.split,
          readSplit(out, b.mesh, p.buffers[output.buffer].type.shape.size()));
    }
    WEFT_RETURN_IF_ERROR(out.done());
    if (!names.insert(output.name).second)
      return out.fail(
          absl::StrCat("field 'name': output '", output.name, "' twice"));
    p.outputs.push_back(std::move(output));
  }
  return absl::OkStatus();
}

absl::StatusOr<Program> readProgram(const json &v, size_t index,
                                    const SchedBundle &b) {
  WEFT_OBJECT(o, v, absl::StrCat("programs[", index, "]"));
  Program p;
  WEFT_ASSIGN(p.name, o.str("name"));
  o.rename(absl::StrCat("program '", p.name, "'"));
  if (p.name.empty())
    return o.fail("field 'name' is empty");
  WEFT_ASSIGN(p.arena, o.i64("arena"));
  WEFT_ASSIGN(p.align, o.i64("align"));
  WEFT_ASSIGN(p.events, o.i64("events"));
  WEFT_ASSIGN(p.streams, o.strs("streams"));
  if (p.align < 1 || (p.align & (p.align - 1)) != 0)
    return o.fail(
        absl::StrCat("field 'align' ", p.align, " is not a power of two"));
  if (p.arena < 0)
    return o.fail(absl::StrCat("field 'arena' ", p.arena, " is negative"));
  if (p.events < 0)
    return o.fail(absl::StrCat("field 'events' ", p.events, " is negative"));

  if (p.streams.empty())
    return o.fail("field 'streams' is empty: a program needs a stream");
  for (size_t s = 0; s < p.streams.size(); ++s)
    if (std::find(p.streams.begin(), p.streams.begin() + s, p.streams[s]) !=
        p.streams.begin() + s)
      return o.fail(absl::StrCat("field 'streams' names stream '", p.streams[s],
                                 "' twice"));

  const json *inputs;
  WEFT_ASSIGN(inputs, o.array("inputs"));
  for (size_t j = 0; j < inputs->size(); ++j) {
    WEFT_OBJECT(in, (*inputs)[j], absl::StrCat(o.where(), ", input ", j));
    ProgramInput input;
    WEFT_ASSIGN(input.type, in.type());
    if (in.has("split")) {
      WEFT_ASSIGN(input.split, readSplit(in, b.mesh, input.type.shape.size()));
    }
    if (in.has("sequence_chunks")) {
      WEFT_ASSIGN(input.sequenceChunks, in.i64("sequence_chunks"));
      // Chunks pair up, and the global sequence (this block times the
      // split along it) must divide into them.
      const std::vector<int64_t> &shape = input.type.shape;
      int64_t blocks = 1;
      if (input.split && input.split->size() > 1)
        for (const std::string &axis : (*input.split)[1])
          blocks *= b.mesh ? b.mesh->axisSize(axis) : 1;
      if (shape.size() != 2 || input.sequenceChunks != 2 * blocks ||
          shape[1] % 2 != 0)
        return in.fail(absl::StrCat(
            "field 'sequence_chunks' is ", input.sequenceChunks,
            "; it must be 2 x the ", blocks,
            " blocks its split cuts the sequence of a [batch, seq] input "
            "into (two chunks a block)"));
    }
    WEFT_RETURN_IF_ERROR(in.done());
    p.inputs.push_back(std::move(input));
  }

  const json *buffers, *instructions;
  WEFT_ASSIGN(instructions, o.array("instructions"));
  WEFT_ASSIGN(buffers, o.array("buffers"));
  const int64_t end = instructions->size();
  // Each record defines at most one event: more events than instructions
  // cannot be used, and the runtime makes one of each.
  if (p.events > end)
    return o.fail(absl::StrCat("field 'events' ", p.events,
                               " is more than the program's ", end,
                               " instructions could record"));
  for (size_t id = 0; id < buffers->size(); ++id) {
    Buffer buf;
    WEFT_ASSIGN(buf, readBuffer((*buffers)[id], id, p, end, b));
    p.buffers.push_back(std::move(buf));
  }
  for (size_t i = 0; i < instructions->size(); ++i) {
    Instruction in;
    WEFT_ASSIGN(in, readInstruction((*instructions)[i], i, p, b));
    p.instructions.push_back(std::move(in));
    WEFT_RETURN_IF_ERROR(
        checkInstruction(Check(b, p, i, p.instructions.back())));
  }
  WEFT_RETURN_IF_ERROR(readAssigns(o, p, b));
  WEFT_RETURN_IF_ERROR(readOutputs(o, p, b));
  WEFT_RETURN_IF_ERROR(o.done());
  WEFT_RETURN_IF_ERROR(checkPlan(p, b));
  return p;
}

//===----------------------------------------------------------------------===//
// Schedules
//===----------------------------------------------------------------------===//

absl::StatusOr<Schedule> readSchedule(const json &v, size_t index,
                                      const SchedBundle &b) {
  WEFT_OBJECT(o, v, absl::StrCat("schedules[", index, "]"));
  Schedule sched;
  WEFT_ASSIGN(sched.name, o.str("name"));
  o.rename(absl::StrCat("schedule '", sched.name, "'"));
  if (sched.name.empty())
    return o.fail("field 'name' is empty");
  WEFT_ASSIGN(sched.microbatches, o.i64("microbatches"));
  if (sched.microbatches < 1)
    return o.fail(absl::StrCat("field 'microbatches' is ", sched.microbatches,
                               "; a schedule needs at least one"));
  const json *seqs;
  WEFT_ASSIGN(seqs, o.array("sequences"));
  WEFT_RETURN_IF_ERROR(o.done());
  if (seqs->empty())
    return o.fail("field 'sequences' is empty");
  std::set<int64_t> coordinates;
  for (size_t q = 0; q < seqs->size(); ++q) {
    WEFT_OBJECT(so, (*seqs)[q], absl::StrCat(o.where(), ", sequence ", q));
    Sequence seq;
    const json *axis, *coordinate;
    WEFT_ASSIGN(axis, so.get("axis"));
    WEFT_ASSIGN(coordinate, so.get("coordinate"));
    if (axis->is_null() != coordinate->is_null())
      return so.fail("fields 'axis' and 'coordinate' must both be null (every "
                     "rank) or both be set");
    if (!axis->is_null()) {
      WEFT_ASSIGN(seq.axis, so.str("axis"));
      WEFT_ASSIGN(seq.coordinate, so.i64("coordinate"));
    }
    const json *runs;
    WEFT_ASSIGN(runs, so.array("runs"));
    WEFT_RETURN_IF_ERROR(so.done());
    // One sequence for every rank, or one per coordinate of one axis.
    const std::optional<std::string> &firstAxis =
        q == 0 ? seq.axis : sched.sequences.front().axis;
    if (!firstAxis && q > 0)
      return so.fail("follows a sequence for every rank; select ranks with "
                     "'axis' and 'coordinate'");
    if (firstAxis) {
      int64_t size = b.mesh ? b.mesh->axisSize(*firstAxis) : 0;
      if (size == 0)
        return so.fail(absl::StrCat("field 'axis' selects ranks along '",
                                    *firstAxis,
                                    "', which is not an axis of the mesh"));
      if (!seq.axis || *seq.axis != *firstAxis)
        return so.fail(absl::StrCat("must select ranks along '", *firstAxis,
                                    "' as the first sequence does"));
      if (*seq.coordinate < 0 || *seq.coordinate >= size)
        return so.fail(absl::StrCat("field 'coordinate' ", *seq.coordinate,
                                    " is outside axis '", *firstAxis,
                                    "' of size ", size));
      if (!coordinates.insert(*seq.coordinate).second)
        return so.fail(absl::StrCat("field 'coordinate' selects ",
                                    *seq.coordinate, " of '", *firstAxis,
                                    "' a second time"));
    }
    for (size_t r = 0; r < runs->size(); ++r) {
      WEFT_OBJECT(ro, (*runs)[r], absl::StrCat(so.where(), ", run ", r));
      Run run;
      WEFT_ASSIGN(run.program, ro.str("program"));
      WEFT_ASSIGN(run.microbatch, ro.i64("microbatch"));
      WEFT_ASSIGN(run.chunk, ro.i64("chunk"));
      WEFT_RETURN_IF_ERROR(ro.done());
      const Program *program = b.program(run.program);
      if (!program)
        return ro.fail(absl::StrCat("field 'program' is '", run.program,
                                    "', which is not a program"));
      run.programIndex = program - b.programs.data();
      if (run.microbatch < 0 || run.microbatch >= sched.microbatches)
        return ro.fail(absl::StrCat("field 'microbatch' ", run.microbatch,
                                    " is outside [0, ", sched.microbatches,
                                    ")"));
      if (run.chunk < 0)
        return ro.fail(
            absl::StrCat("field 'chunk' ", run.chunk, " is negative"));
      seq.runs.push_back(std::move(run));
    }
    sched.sequences.push_back(std::move(seq));
  }
  if (const std::optional<std::string> &axis = sched.sequences.front().axis) {
    int64_t size = b.mesh->axisSize(*axis);
    if (static_cast<int64_t>(coordinates.size()) != size)
      return o.fail(absl::StrCat("has sequences for ", coordinates.size(),
                                 " of the ", size, " coordinates of '", *axis,
                                 "'"));
  }
  return sched;
}

//===----------------------------------------------------------------------===//
// Kernel files
//===----------------------------------------------------------------------===//

std::string filePath(const std::string &dir, const std::string &name) {
  return dir.empty() ? name : absl::StrCat(dir, "/", name);
}

std::string hexOf(XXH128_hash_t h) {
  XXH128_canonical_t canonical;
  XXH128_canonicalFromHash(&canonical, h);
  static const char *hex = "0123456789abcdef";
  std::string out;
  for (unsigned char byte : canonical.digest) {
    out.push_back(hex[byte >> 4]);
    out.push_back(hex[byte & 15]);
  }
  return out;
}

/// Whether `path` is a regular file (after links: the hash decides).
bool isFile(const std::string &path) {
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec);
}

/// The file's hash, streamed; nullopt when it cannot be read.
std::optional<std::string> hashFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!isFile(path) || !in)
    return std::nullopt;
  XXH3_state_t *state = XXH3_createState();
  XXH3_128bits_reset(state);
  std::vector<char> chunk(1 << 16);
  while (in) {
    in.read(chunk.data(), chunk.size());
    XXH3_128bits_update(state, chunk.data(), in.gcount());
  }
  bool failed = in.bad();
  XXH128_hash_t h = XXH3_128bits_digest(state);
  XXH3_freeState(state);
  if (failed)
    return std::nullopt;
  return hexOf(h);
}

absl::Status checkKernelFile(const std::string &dir, const KernelFile &f,
                             const std::string &where) {
  std::string path = filePath(dir, f.file);
  std::optional<std::string> hash = hashFile(path);
  if (!hash)
    return invalid(where, absl::StrCat("field 'file': '", f.file,
                                       "' is not a readable file of the "
                                       "bundle directory"));
  if (*hash != f.xxh3)
    return invalid(where,
                   absl::StrCat("field 'xxh3': '", f.file, "' hashes to ",
                                *hash, ", not ", f.xxh3,
                                "; it is not this bundle's kernel file"));
  return absl::OkStatus();
}

/// `meta` says what the model is; the trainer reads batch, seq and vocab
/// from it (a bundle built for a host program may have none of them).
/// Those present must be integers in [1, 2^31), a dtype one Weft has, and
/// batch and seq the global shape of program step's tokens (its first
/// input, a block of them per rank as its split says).
absl::Status checkMeta(const SchedBundle &b) {
  auto field = [&](const char *key) -> absl::StatusOr<std::optional<int64_t>> {
    auto it = b.meta.find(key);
    if (it == b.meta.end())
      return std::optional<int64_t>();
    if (!it->is_number_integer())
      return invalid("meta",
                     absl::StrCat("field '", key, "' must be an integer, not ",
                                  jsonKind(*it)));
    int64_t v = it->get<int64_t>();
    if (v <= 0 || v > std::numeric_limits<int32_t>::max())
      return invalid("meta", absl::StrCat("field '", key, "' is ", v,
                                          "; it must be in [1, 2^31)"));
    return std::optional<int64_t>(v);
  };
  std::optional<int64_t> batch, seq;
  WEFT_ASSIGN(batch, field("batch"));
  WEFT_ASSIGN(seq, field("seq"));
  WEFT_RETURN_IF_ERROR(field("vocab").status());
  auto dtype = b.meta.find("dtype");
  if (dtype != b.meta.end() &&
      (!dtype->is_string() ||
       (*dtype != "f32" && *dtype != "bf16" && *dtype != "f16")))
    return invalid("meta", "field 'dtype' must be \"f32\", \"bf16\" or "
                           "\"f16\"");
  // The step's tokens, once per micro-batch.
  const Program *first = b.tokensProgram();
  if (!batch || !seq || !first)
    return absl::OkStatus();
  const ProgramInput &tokens = first->inputs.front();
  const Schedule *train = b.schedule("train");
  MeshSpec mesh;
  if (b.mesh)
    mesh = MeshSpec{b.mesh->axes, b.mesh->sizes};
  std::vector<int64_t> global =
      tokens.split ? mesh.globalShape(tokens.type.shape, *tokens.split)
                   : tokens.type.shape;
  global[0] *= train->microbatches;
  if (global != std::vector<int64_t>{*batch, *seq})
    return invalid("meta", absl::StrCat("batch ", *batch, " and seq ", *seq,
                                        " disagree with program '", first->name,
                                        "''s tokens input, ", list(global),
                                        " in all over ", train->microbatches,
                                        " micro-batch(es)"));
  return absl::OkStatus();
}

/// The most ranks checkTransfers simulates, and the most communication
/// events over all of them (its cost); larger steps are not checked (no
/// plan Weft compiles comes near: pp=8 x dp=64 with 64 micro-batches is
/// ~10^5 events).
constexpr int64_t kMaxCheckedRanks = 4096;
constexpr int64_t kMaxCheckedEvents = int64_t(1) << 24;

/// The group an instruction communicates over, or null: a collective's, an
/// expert exchange's, a partitioned route's and a vocabulary-parallel
/// cross-entropy's (which combine over their groups themselves).
const std::vector<std::string> *groupOf(const Instruction &ins) {
  if (const auto *c = std::get_if<CollectiveAttrs>(&ins.attrs))
    return &c->axes;
  if (const auto *r = std::get_if<RaggedAttrs>(&ins.attrs))
    return &r->axes;
  if (const auto *r = std::get_if<ExpertRouteAttrs>(&ins.attrs))
    return r->tokenAxes.empty() ? nullptr : &r->tokenAxes;
  if (const auto *ce = std::get_if<CrossEntropyAttrs>(&ins.attrs))
    return ce->vocabAxes.empty() ? nullptr : &ce->vocabAxes;
  return nullptr;
}

/// Proves the train schedule's point-to-point transfers and collectives
/// meet: every rank's sequence (its coordinate's) is walked as the runtime
/// walks it; sends post at once, a receive waits for the matching send
/// (same peers and tag, in order) and a collective for every member of its
/// group. If some rank can never go on, a send is never received, or a
/// receive's size differs from its send's, the error names the ranks, their
/// schedule entries and micro-batches. The compiler proves the same of the
/// table it builds; this checks the bundle as written.
absl::Status checkTransfers(const SchedBundle &b) {
  const Schedule *train = b.schedule("train");
  if (!train || !b.mesh)
    return absl::OkStatus();
  MeshSpec mesh{b.mesh->axes, b.mesh->sizes};
  int64_t world = mesh.size();
  if (world > kMaxCheckedRanks)
    return absl::OkStatus();
  struct Event {
    enum Kind { Send, Recv, Collective } kind;
    int64_t peer = 0, tag = 0, bytes = 0;
    const std::vector<std::string> *axes = nullptr; // Collective.
    std::string group;                              // Collective.
    size_t run = 0;
  };
  // Communication instructions per program, to bound the work first.
  std::vector<int64_t> talks(b.programs.size(), 0);
  for (size_t p = 0; p < b.programs.size(); ++p)
    for (const Instruction &ins : b.programs[p].instructions)
      talks[p] += ins.op == Op::Send || ins.op == Op::Recv ||
                  ins.op == Op::RingShift || groupOf(ins) != nullptr;
  int64_t total = 0;
  for (const Sequence &q : train->sequences)
    for (const Run &run : q.runs)
      total += talks[run.programIndex];
  if (total * world / static_cast<int64_t>(train->sequences.size()) >
      kMaxCheckedEvents)
    return absl::OkStatus();
  std::vector<std::vector<Event>> events(world);
  std::vector<const Sequence *> sequenceOf(world);
  for (int64_t r = 0; r < world; ++r) {
    const Sequence *mine = &b.sequenceFor(*train, r);
    sequenceOf[r] = mine;
    for (size_t i = 0; i < mine->runs.size(); ++i) {
      const Program &p = b.programs[mine->runs[i].programIndex];
      for (const Instruction &ins : p.instructions) {
        if (ins.op == Op::Send || ins.op == Op::Recv) {
          const auto &a = std::get<PeerAttrs>(ins.attrs);
          events[r].push_back({ins.op == Op::Send ? Event::Send : Event::Recv,
                               mesh.neighbour(r, a.axis, a.delta), a.tag,
                               p.buffers[ins.operands[0]].type.bytes(), nullptr,
                               "", i});
        } else if (ins.op == Op::RingShift) {
          // A send to the next rank and a receive from the previous one.
          const auto &a = std::get<PeerAttrs>(ins.attrs);
          int64_t bytes = p.buffers[ins.operands[0]].type.bytes();
          events[r].push_back({Event::Send, mesh.neighbour(r, a.axis, a.delta),
                               a.tag, bytes, nullptr, "", i});
          events[r].push_back({Event::Recv, mesh.neighbour(r, a.axis, -a.delta),
                               a.tag, bytes, nullptr, "", i});
        } else if (const std::vector<std::string> *axes = groupOf(ins)) {
          // A group is its axes and its first member.
          events[r].push_back(
              {Event::Collective, 0, 0, 0, axes,
               absl::StrCat(absl::StrJoin(*axes, ","), "@",
                            mesh.groupMembers(r, *axes).front()),
               i});
        }
      }
    }
  }
  auto where = [&](int64_t r, size_t event) {
    if (event >= events[r].size())
      return absl::StrCat("rank ", r, " at the end of its sequence");
    const Run &run = sequenceOf[r]->runs[events[r][event].run];
    return absl::StrCat("rank ", r, " at schedule entry ", events[r][event].run,
                        " (", run.program, ", micro-batch ", run.microbatch,
                        ")");
  };
  using Key = std::tuple<int64_t, int64_t, int64_t>; // From, to, tag.
  std::map<Key, std::vector<size_t>> posted;         // Send events, in order.
  std::map<Key, size_t> received;
  std::map<std::string, int64_t> arrived; // Members waiting, by group.
  std::vector<size_t> at(world, 0);
  std::vector<bool> waiting(world, false);
  for (bool moved = true; moved;) {
    moved = false;
    for (int64_t r = 0; r < world; ++r) {
      while (at[r] < events[r].size()) {
        const Event &e = events[r][at[r]];
        if (e.kind == Event::Send) {
          posted[{r, e.peer, e.tag}].push_back(at[r]);
        } else if (e.kind == Event::Recv) {
          Key key{e.peer, r, e.tag};
          const std::vector<size_t> &q = posted[key];
          size_t &next = received[key];
          if (next == q.size())
            break;
          size_t sent = q[next++];
          if (events[e.peer][sent].bytes != e.bytes)
            return invalid("schedules",
                           absl::StrCat("schedule 'train': ", where(r, at[r]),
                                        " receives ", e.bytes,
                                        " bytes with tag ", e.tag, " from ",
                                        where(e.peer, sent), ", which sends ",
                                        events[e.peer][sent].bytes));
        } else {
          if (!waiting[r]) {
            waiting[r] = true;
            ++arrived[e.group];
          }
          std::vector<int64_t> members = mesh.groupMembers(r, *e.axes);
          if (arrived[e.group] < static_cast<int64_t>(members.size()))
            break;
          // Every member stands at this collective: all go on.
          arrived[e.group] = 0;
          for (int64_t o : members)
            if (o != r) {
              waiting[o] = false;
              ++at[o];
            }
          waiting[r] = false;
        }
        ++at[r];
        moved = true;
      }
    }
  }
  // Every rank that cannot go on, each where it waits (the cycle's ranks
  // among them).
  std::vector<std::string> stuck;
  for (int64_t r = 0; r < world; ++r) {
    if (at[r] == events[r].size())
      continue;
    const Event &e = events[r][at[r]];
    stuck.push_back(where(r, at[r]) +
                    (e.kind == Event::Recv
                         ? absl::StrCat(" waits to receive tag ", e.tag,
                                        " from rank ", e.peer)
                         : " waits in a collective over [" +
                               absl::StrJoin(*e.axes, ",") + "]"));
  }
  if (!stuck.empty())
    return invalid(
        "schedules",
        absl::StrCat("schedule 'train' deadlocks: ", absl::StrJoin(stuck, "; "),
                     "; no send or collective can free them"));
  for (const auto &[key, q] : posted)
    if (received[key] < q.size()) {
      auto [from, to, tag] = key;
      return invalid(
          "schedules",
          absl::StrCat("schedule 'train': ", where(from, q[received[key]]),
                       " sends tag ", tag, " to rank ", to,
                       ", which never receives it"));
    }
  return absl::OkStatus();
}

absl::Status checkKernelFiles(const SchedBundle &b) {
  const KernelFiles &k = b.kernels;
  if (!b.kernelDecls.empty() && !k.cpu && k.cuda.empty() && !k.source)
    return invalid("kernels", absl::StrCat("names no kernel file, but "
                                           "kernel_decls declare ",
                                           b.kernelDecls.size(), " kernels"));
  if (k.cpu)
    WEFT_RETURN_IF_ERROR(checkKernelFile(b.dir, *k.cpu, "kernels.cpu"));
  for (const auto &[arch, file] : k.cuda)
    WEFT_RETURN_IF_ERROR(
        checkKernelFile(b.dir, file, absl::StrCat("kernels.cuda.", arch)));
  if (k.source) {
    if (!isFile(filePath(b.dir, *k.source)))
      return invalid("kernels", absl::StrCat("field 'source': '", *k.source,
                                             "' is not a readable file of "
                                             "the bundle directory"));
  }
  return absl::OkStatus();
}

/// Reads the declarations of one top-level array with `read`, refusing two
/// of one name (and a name `taken` already holds).
template <typename T, typename F>
absl::Status readAll(Obj &top, const char *key, std::vector<T> &out,
                     std::set<std::string> &taken, F read) {
  const json *arr;
  WEFT_ASSIGN(arr, top.array(key));
  for (size_t i = 0; i < arr->size(); ++i) {
    T item;
    WEFT_ASSIGN(item, read((*arr)[i], i));
    if (!taken.insert(item.name).second)
      return invalid(
          absl::StrCat(key, "[", i, "]"),
          absl::StrCat("field 'name': '", item.name, "' is declared twice"));
    out.push_back(std::move(item));
  }
  return absl::OkStatus();
}

} // namespace

//===----------------------------------------------------------------------===//
// Public API
//===----------------------------------------------------------------------===//

int64_t TensorType::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d; // Loaded types fit in 2^62 bytes.
  return n;
}

int64_t TensorType::bytes() const {
  return numElements() * static_cast<int64_t>(dtypeSize(dtype));
}

const char *dtypeText(DType type) { return spell(kDTypes, type); }

const char *opName(Op op) { return spell(kOps, op); }

int64_t Mesh::axisSize(std::string_view axis) const {
  for (size_t i = 0; i < axes.size(); ++i)
    if (axes[i] == axis)
      return sizes[i];
  return 0;
}

const Program *SchedBundle::program(std::string_view name) const {
  for (const Program &p : programs)
    if (p.name == name)
      return &p;
  return nullptr;
}

const Param *SchedBundle::param(std::string_view name) const {
  for (const Param &p : params)
    if (p.name == name)
      return &p;
  return nullptr;
}

const Constant *SchedBundle::constant(std::string_view name) const {
  for (const Constant &c : constants)
    if (c.name == name)
      return &c;
  return nullptr;
}

const Schedule *SchedBundle::schedule(std::string_view name) const {
  for (const Schedule &s : schedules)
    if (s.name == name)
      return &s;
  return nullptr;
}

const Sequence &SchedBundle::sequenceFor(const Schedule &schedule,
                                         int64_t rank) const {
  const Sequence &first = schedule.sequences.front();
  if (!first.axis || !mesh)
    return first;
  MeshSpec spec{mesh->axes, mesh->sizes};
  int64_t coordinate = spec.coords(rank)[spec.axisIndex(*first.axis)];
  for (const Sequence &s : schedule.sequences)
    if (s.coordinate == coordinate)
      return s;
  return first; // Unreachable for a loaded bundle.
}

const Program *SchedBundle::tokensProgram() const {
  const Schedule *train = schedule("train");
  if (!train)
    return nullptr;
  for (const Sequence &sequence : train->sequences)
    for (const Run &run : sequence.runs) {
      const Program &p = programs[run.programIndex];
      if (!p.inputs.empty() && p.inputs[0].type.dtype == DType::I32 &&
          p.inputs[0].type.shape.size() == 2)
        return &p;
    }
  return nullptr;
}

std::string xxh3Hex(std::string_view bytes) {
  return hexOf(XXH3_128bits(bytes.data(), bytes.size()));
}

absl::StatusOr<SchedBundle>
parseSchedManifest(std::string_view text,
                   const std::string &dirForKernelFiles) {
  absl::StatusOr<json> doc = parseUntrustedJson(text);
  if (!doc.ok())
    return invalid("manifest", doc.status().message());
  WEFT_OBJECT(top, *doc, "manifest");
  std::string format;
  WEFT_ASSIGN(format, top.str("format"));
  if (format != kBundleFormat)
    return top.fail(absl::StrCat("field 'format' is \"", format, "\", not \"",
                                 kBundleFormat, "\""));
  int64_t version;
  WEFT_ASSIGN(version, top.i64("version"));
  if (version == 1)
    return top.fail("bundle version 1 is no longer supported: recompile it "
                    "with weftc");
  if (version != kSchedBundleVersion)
    return top.fail(absl::StrCat("bundle version ", version,
                                 " is not supported: this runtime reads "
                                 "version ",
                                 kSchedBundleVersion));
  SchedBundle b;
  b.dir = dirForKernelFiles;
  b.manifestXxh3 = xxh3Hex(text);
  const json *meta, *kernels;
  WEFT_ASSIGN(meta, top.get("meta"));
  if (!meta->is_object())
    return top.fail(
        absl::StrCat("field 'meta' must be an object, not ", jsonKind(*meta)));
  b.meta = *meta;
  WEFT_ASSIGN(kernels, top.get("kernels"));
  WEFT_ASSIGN(b.kernels, readKernels(*kernels));
  WEFT_ASSIGN(b.mesh, readMesh(top));

  std::set<std::string> symbols, kernelNames, programNames, scheduleNames;
  WEFT_RETURN_IF_ERROR(
      readAll(top, "params", b.params, symbols, [&](const json &v, size_t i) {
        return readParam(v, i, b.mesh);
      }));
  WEFT_RETURN_IF_ERROR(
      readAll(top, "constants", b.constants, symbols, readConstant));
  WEFT_RETURN_IF_ERROR(
      readAll(top, "kernel_decls", b.kernelDecls, kernelNames, readKernelDecl));
  WEFT_RETURN_IF_ERROR(
      readAll(top, "programs", b.programs, programNames,
              [&](const json &v, size_t i) { return readProgram(v, i, b); }));
  WEFT_RETURN_IF_ERROR(
      readAll(top, "schedules", b.schedules, scheduleNames,
              [&](const json &v, size_t i) { return readSchedule(v, i, b); }));
  WEFT_RETURN_IF_ERROR(top.done());
  WEFT_RETURN_IF_ERROR(checkMeta(b));
  WEFT_RETURN_IF_ERROR(checkTransfers(b));
  // Last: everything the manifest says is consistent, so a fuzzer's inputs
  // reach every check above without a bundle directory.
  WEFT_RETURN_IF_ERROR(checkKernelFiles(b));
  return b;
}

std::pair<int64_t, int64_t> fp8CastBlocks(const std::vector<int64_t> &input,
                                          const std::vector<int64_t> &amax) {
  int64_t elements = 1, scales = 1;
  for (int64_t d : input)
    elements *= d;
  for (int64_t d : amax)
    scales *= d;
  int64_t cols = input.empty() ? 1 : input.back();
  // One scale (a per-tensor cast's amax may have any shape): one block.
  if (scales == 1 || amax.size() != input.size())
    return {elements / std::max<int64_t>(cols, 1), cols};
  long rows = 1, width = 1;
  weft_fp8_matrix_blocks(input.data(), amax.data(),
                         static_cast<int>(input.size()), &rows, &width);
  return {rows, width};
}

Fp8CastGeometry fp8CastGeometry(const std::vector<int64_t> &input,
                                const std::vector<int64_t> &amax) {
  Fp8CastGeometry g;
  g.cols = input.empty() ? 1 : input.back();
  g.rows = input.size() < 2 ? 1 : input[input.size() - 2];
  int64_t elements = 1;
  for (int64_t d : input)
    elements *= d;
  g.batch = elements / std::max<int64_t>(g.rows * g.cols, 1);
  std::tie(g.blockRows, g.blockCols) = fp8CastBlocks(input, amax);
  return g;
}

absl::StatusOr<SchedBundle> loadSchedBundle(const std::string &dir) {
  std::string file = absl::StrCat(dir, "/", kManifestFile);
  absl::StatusOr<std::string> text = readWholeFile(file);
  if (absl::IsNotFound(text.status()))
    return absl::NotFoundError(absl::StrCat(file, ": cannot open (is '", dir,
                                            "' a bundle directory?)"));
  if (!text.ok())
    return text.status();
  absl::StatusOr<SchedBundle> bundle = parseSchedManifest(*text, dir);
  if (!bundle.ok())
    return absl::Status(bundle.status().code(),
                        absl::StrCat(file, ": ", bundle.status().message()));
  return bundle;
}

} // namespace weft::runtime::sched
