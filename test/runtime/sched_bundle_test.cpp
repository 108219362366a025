//===- sched_bundle_test.cpp - bundle v2 loader: valid and corrupted ------===//
//
// One small valid manifest (a dp=2 training step on two streams and an
// evaluation program of library ops) that loads with every field decoded,
// then a corpus of corruptions of it, one per check, each asserting the
// error names where (program, instruction or buffer) and which field.
//
//===----------------------------------------------------------------------===//

#include "runtime/exec/SchedBundle.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>

namespace weft::runtime::sched {
namespace {
using json = nlohmann::json;
using ::testing::HasSubstr;

constexpr const char *kKernelBytes = "not really a shared object";

// Program "step" (6 instructions): y = x @ w; z = fused_0(y) on compute,
// all-reduced over dp on comm after an event; m = 0 assigned to w.m.
// Program "eval" (4 instructions): embedding, a GEMM against the table's
// transpose, cross-entropy and softmax; probs reuses x's bytes later.
constexpr const char *kValid = R"json({
 "format": "weft-bundle", "version": 2,
 "meta": {"model": "test", "batch": 2},
 "kernels": {"cpu": {"file": "kernels.so", "xxh3": "HASH"}},
 "mesh": {"name": "mesh", "axes": ["dp"], "sizes": [2]},
 "params": [
  {"name": "w", "shape": [4, 4], "dtype": "f32", "init": "normal",
   "scale": 0.02, "state": false},
  {"name": "w.m", "shape": [4, 4], "dtype": "f32", "init": "zeros",
   "state": true, "split": [["dp"], []]},
  {"name": "emb", "shape": [8, 4], "dtype": "f32", "init": "uniform",
   "scale": 1, "state": false}],
 "constants": [
  {"name": "c0", "shape": [4], "dtype": "f32", "splat": 1.5},
  {"name": "c1", "shape": [2], "dtype": "i64", "values": [3, -4]}],
 "kernel_decls": [
  {"name": "fused_0", "inputs": [{"shape": [2, 4], "dtype": "f32"}],
   "outputs": [{"shape": [2, 4], "dtype": "f32"}], "scalars": ["i64"]}],
 "programs": [
  {"name": "step", "arena": 256, "align": 64, "events": 1,
   "streams": ["compute", "comm"],
   "inputs": [{"shape": [2, 4], "dtype": "f32", "split": [["dp"], []]}],
   "buffers": [
    {"kind": "input", "index": 0, "shape": [2, 4], "dtype": "f32"},
    {"kind": "param", "name": "w", "shape": [4, 4], "dtype": "f32"},
    {"kind": "alloc", "offset": 0, "first": 0, "last": 1, "shape": [2, 4], "dtype": "f32"},
    {"kind": "alloc", "offset": 64, "first": 1, "last": 6, "shape": [2, 4], "dtype": "f32"},
    {"kind": "alloc", "offset": 128, "first": 5, "last": 6, "shape": [4, 4], "dtype": "f32"},
    {"kind": "view", "of": 3, "offset": 16, "shape": [4], "dtype": "f32"},
    {"kind": "constant", "name": "c0", "shape": [4], "dtype": "f32"}],
   "instructions": [
    {"op": "gemm", "stream": "compute", "operands": [0, 1, 2],
     "mnk": [2, 4, 4], "batch": 1, "ld": [4, 4, 4], "strides": [0, 0, 0],
     "epilogue": "none", "transpose_a": false, "transpose_b": false,
     "accumulate": false, "has_bias": false, "has_aux": false,
     "has_scales": false},
    {"op": "launch", "stream": "compute", "operands": [2, 3],
     "kernel": "fused_0", "grid": [1, 1, 1], "block": 256, "inputs": 1,
     "outputs": 1, "scalars": [{"i64": 8}]},
    {"op": "record", "stream": "compute", "operands": [], "event": 0},
    {"op": "wait", "stream": "comm", "operands": [], "event": 0},
    {"op": "collective", "stream": "comm", "operands": [3, 3],
     "kind": "all_reduce", "reduction": "sum", "axes": ["dp"]},
    {"op": "fill", "stream": "compute", "operands": [4], "value": 0}],
   "assigns": [{"param": "w.m", "buffer": 4}],
   "outputs": [{"name": "y", "buffer": 3, "split": [["dp"], []]},
               {"name": "row", "buffer": 5}]},
  {"name": "eval", "arena": 512, "align": 16, "events": 0,
   "streams": ["compute"],
   "inputs": [{"shape": [2, 3], "dtype": "i32"},
              {"shape": [2, 3], "dtype": "i32"}],
   "buffers": [
    {"kind": "input", "index": 0, "shape": [2, 3], "dtype": "i32"},
    {"kind": "input", "index": 1, "shape": [2, 3], "dtype": "i32"},
    {"kind": "param", "name": "emb", "shape": [8, 4], "dtype": "f32"},
    {"kind": "alloc", "offset": 0, "first": 0, "last": 1, "shape": [2, 3, 4], "dtype": "f32"},
    {"kind": "alloc", "offset": 96, "first": 1, "last": 3, "shape": [6, 8], "dtype": "f32"},
    {"kind": "view", "of": 3, "offset": 0, "shape": [6, 4], "dtype": "f32"},
    {"kind": "view", "of": 4, "offset": 0, "shape": [2, 3, 8], "dtype": "f32"},
    {"kind": "alloc", "offset": 288, "first": 2, "last": 4, "shape": [], "dtype": "f32"},
    {"kind": "alloc", "offset": 304, "first": 3, "last": 4, "shape": [2, 3, 8], "dtype": "f32"},
    {"kind": "alloc", "offset": 0, "first": 3, "last": 3, "shape": [4], "dtype": "f32"}],
   "instructions": [
    {"op": "embedding", "stream": "compute", "operands": [2, 0, 3],
     "vocab_axes": []},
    {"op": "gemm", "stream": "compute", "operands": [5, 2, 4],
     "mnk": [6, 8, 4], "batch": 1, "ld": [4, 4, 8], "strides": [0, 0, 0],
     "epilogue": "none", "transpose_a": false, "transpose_b": true,
     "accumulate": false, "has_bias": false, "has_aux": false,
     "has_scales": false},
    {"op": "cross_entropy", "stream": "compute", "operands": [6, 1, 7],
     "ignore_index": -100, "vocab_axes": [], "has_scratch": false},
    {"op": "softmax", "stream": "compute", "operands": [6, 8], "dim": 2}],
   "assigns": [],
   "outputs": [{"name": "loss", "buffer": 7}, {"name": "probs", "buffer": 8}]}],
 "schedules": [
  {"name": "train", "microbatches": 2, "sequences": [
    {"axis": "dp", "coordinate": 0, "runs": [
      {"program": "step", "microbatch": 0, "chunk": 0},
      {"program": "step", "microbatch": 1, "chunk": 0}]},
    {"axis": "dp", "coordinate": 1, "runs": [
      {"program": "step", "microbatch": 0, "chunk": 0},
      {"program": "step", "microbatch": 1, "chunk": 0}]}]},
  {"name": "eval", "microbatches": 1, "sequences": [
    {"axis": null, "coordinate": null, "runs": [
      {"program": "eval", "microbatch": 0, "chunk": 0}]}]}]
})json";

/// A bundle directory holding the kernel library the manifest hashes.
class BundleDir {
public:
  BundleDir() {
    std::string tmpl = ::testing::TempDir() + "/weft-sched-bundle-XXXXXX";
    dir = mkdtemp(tmpl.data());
    std::ofstream(dir + "/kernels.so") << kKernelBytes;
  }
  ~BundleDir() { std::filesystem::remove_all(dir); }

  json valid() const {
    std::string text = kValid;
    text.replace(text.find("HASH"), 4, xxh3Hex(kKernelBytes));
    return json::parse(text);
  }
  absl::StatusOr<SchedBundle> load(const json &manifest) const {
    std::ofstream(dir + "/manifest.json") << manifest.dump(1);
    return loadSchedBundle(dir);
  }

  std::string dir;
};

json &program(json &m, const char *name) {
  for (json &p : m["programs"])
    if (p["name"] == name)
      return p;
  throw std::runtime_error("no program");
}
json &buffer(json &m, const char *prog, int id) {
  return program(m, prog)["buffers"][id];
}
json &instr(json &m, const char *prog, int i) {
  return program(m, prog)["instructions"][i];
}

TEST(SchedBundle, XxhIsXxh128AsXxhsumPrintsIt) {
  // `xxhsum -H2` of an empty file and of "hello".
  EXPECT_EQ(xxh3Hex(""), "99aa06d3014798d86001c324468d497f");
  EXPECT_EQ(xxh3Hex("hello"), "b5e9c1ad071b3e7fc779cfaa5e523818");
}

TEST(SchedBundle, ValidManifestLoadsWithEveryFieldDecoded) {
  BundleDir d;
  absl::StatusOr<SchedBundle> b = d.load(d.valid());
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->dir, d.dir);
  EXPECT_EQ(b->meta["batch"], 2);
  ASSERT_TRUE(b->kernels.cpu);
  EXPECT_EQ(b->kernels.cpu->file, "kernels.so");
  EXPECT_EQ(b->kernels.cpu->xxh3, xxh3Hex(kKernelBytes));
  ASSERT_TRUE(b->mesh);
  EXPECT_EQ(b->mesh->name, "mesh");
  EXPECT_EQ(b->mesh->axisSize("dp"), 2);
  EXPECT_EQ(b->mesh->axisSize("tp"), 0);

  ASSERT_EQ(b->params.size(), 3u);
  EXPECT_EQ(b->params[0].init, InitKind::Normal);
  EXPECT_EQ(b->params[0].scale, 0.02);
  EXPECT_FALSE(b->params[0].split);
  EXPECT_TRUE(b->params[1].state);
  EXPECT_FALSE(b->params[1].scale);
  EXPECT_EQ(*b->params[1].split, (Split{{"dp"}, {}}));
  EXPECT_EQ(b->params[2].type.shape, (std::vector<int64_t>{8, 4}));
  ASSERT_EQ(b->constants.size(), 2u);
  EXPECT_TRUE(b->constants[0].splat);
  EXPECT_EQ(b->constants[0].floats, std::vector<double>{1.5});
  EXPECT_EQ(b->constants[1].ints, (std::vector<int64_t>{3, -4}));
  EXPECT_EQ(b->constants[1].type.dtype, DType::I64);
  ASSERT_EQ(b->kernelDecls.size(), 1u);
  EXPECT_EQ(b->kernelDecls[0].scalars,
            std::vector<ScalarType>{ScalarType::I64});

  const Program *step = b->program("step");
  ASSERT_TRUE(step);
  EXPECT_EQ(step->arena, 256);
  EXPECT_EQ(step->align, 64);
  EXPECT_EQ(step->events, 1);
  EXPECT_EQ(step->streams, (std::vector<std::string>{"compute", "comm"}));
  EXPECT_EQ(*step->inputs[0].split, (Split{{"dp"}, {}}));
  ASSERT_EQ(step->buffers.size(), 7u);
  EXPECT_EQ(step->buffers[0].kind, Buffer::Kind::Input);
  EXPECT_EQ(step->buffers[1].name, "w");
  EXPECT_EQ(step->buffers[3].kind, Buffer::Kind::Alloc);
  EXPECT_EQ(step->buffers[3].offset, 64);
  EXPECT_EQ(step->buffers[3].last, 6);
  EXPECT_EQ(step->buffers[5].kind, Buffer::Kind::View);
  EXPECT_EQ(step->buffers[5].of, 3);
  EXPECT_EQ(step->buffers[5].offset, 16);
  EXPECT_EQ(step->buffers[6].kind, Buffer::Kind::Constant);
  ASSERT_EQ(step->instructions.size(), 6u);
  const Instruction &gemm = step->instructions[0];
  EXPECT_EQ(gemm.op, Op::Gemm);
  EXPECT_EQ(gemm.operands, (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(gemm.as<GemmAttrs>().mnk, (std::array<int64_t, 3>{2, 4, 4}));
  EXPECT_EQ(gemm.as<GemmAttrs>().epilogue, Epilogue::None);
  const LaunchAttrs &launch = step->instructions[1].as<LaunchAttrs>();
  EXPECT_EQ(launch.kernelIndex, 0);
  EXPECT_EQ(launch.block, 256);
  ASSERT_EQ(launch.scalars.size(), 1u);
  EXPECT_EQ(launch.scalars[0].i, 8);
  EXPECT_EQ(step->instructions[3].op, Op::Wait);
  EXPECT_EQ(step->instructions[3].stream, 1);
  const CollectiveAttrs &ar = step->instructions[4].as<CollectiveAttrs>();
  EXPECT_EQ(ar.kind, CollectiveKind::AllReduce);
  EXPECT_EQ(ar.reduction, Reduction::Sum);
  EXPECT_EQ(ar.axes, std::vector<std::string>{"dp"});
  EXPECT_EQ(step->assigns[0].param, "w.m");
  EXPECT_EQ(step->outputs[1].name, "row");
  EXPECT_FALSE(step->outputs[1].split);

  const Program *eval = b->program("eval");
  ASSERT_TRUE(eval);
  EXPECT_EQ(eval->instructions[2].as<CrossEntropyAttrs>().ignoreIndex, -100);
  EXPECT_FALSE(eval->instructions[2].hasScratch);
  EXPECT_TRUE(eval->instructions[1].as<GemmAttrs>().transposeB);
  EXPECT_EQ(eval->instructions[3].as<SoftmaxAttrs>().dim, 2);

  const Schedule *train = b->schedule("train");
  ASSERT_TRUE(train);
  EXPECT_EQ(train->microbatches, 2);
  ASSERT_EQ(train->sequences.size(), 2u);
  EXPECT_EQ(train->sequences[1].axis, "dp");
  EXPECT_EQ(train->sequences[1].coordinate, 1);
  EXPECT_EQ(train->sequences[1].runs[1].microbatch, 1);
  EXPECT_EQ(b->schedule("eval")->sequences[0].axis, std::nullopt);
  EXPECT_EQ(b->schedule("eval")->sequences[0].runs[0].programIndex, 1);
}

// A GPU scratch is the last operand, read and written; 6 positions of
// cross-entropy take 264 bytes (dialects/sched/IR/ScratchLayout.h).
TEST(SchedBundle, LibraryScratchIsTheLastOperand) {
  BundleDir d;
  json m = d.valid();
  program(m, "eval")["arena"] = 1024;
  program(m, "eval")["buffers"].push_back({{"kind", "alloc"},
                                           {"offset", 512},
                                           {"first", 2},
                                           {"last", 2},
                                           {"shape", {66}},
                                           {"dtype", "f32"}});
  instr(m, "eval", 2)["operands"] = {6, 1, 7, 10};
  instr(m, "eval", 2)["has_scratch"] = true;
  absl::StatusOr<SchedBundle> b = d.load(m);
  ASSERT_TRUE(b.ok()) << b.status();
  const Instruction &ce = b->program("eval")->instructions[2];
  EXPECT_TRUE(ce.hasScratch);
  EXPECT_EQ(ce.operands.back(), 10);
}

TEST(SchedBundle, MissingManifestNamesThePath) {
  absl::StatusOr<SchedBundle> b = loadSchedBundle("/nonexistent/bundle");
  EXPECT_EQ(b.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(b.status().message(),
              HasSubstr("/nonexistent/bundle/manifest.json"));
}

/// One corruption of the valid manifest and what its error must say.
struct Corruption {
  const char *name;
  std::function<void(json &)> edit;
  std::vector<std::string> expect;
  /// When set, the manifest text instead of a JSON edit.
  std::function<std::string(const std::string &)> text = nullptr;
};

void PrintTo(const Corruption &c, std::ostream *os) { *os << c.name; }

class Corrupted : public ::testing::TestWithParam<Corruption> {};

TEST_P(Corrupted, IsRefusedNamingWhereAndWhichField) {
  const Corruption &c = GetParam();
  BundleDir d;
  json m = d.valid();
  absl::StatusOr<SchedBundle> b;
  if (c.text) {
    b = parseSchedManifest(c.text(m.dump()), d.dir);
  } else {
    c.edit(m);
    b = d.load(m);
  }
  ASSERT_FALSE(b.ok()) << c.name << " loaded";
  EXPECT_EQ(b.status().code(), absl::StatusCode::kInvalidArgument);
  if (std::getenv("WEFT_SHOW_ERRORS")) // To read the whole corpus's errors.
    std::cerr << c.name << ": " << b.status().message() << "\n";
  for (const std::string &part : c.expect)
    EXPECT_THAT(b.status().message(), HasSubstr(part));
}

constexpr int64_t kNear2To63 = INT64_MAX - 63; // A multiple of 64.

/// Gives eval's cross-entropy buffer 9 (16 bytes) as its scratch.
void scratchForCrossEntropy(json &m) {
  instr(m, "eval", 2)["operands"] = {6, 1, 7, 9};
  instr(m, "eval", 2)["has_scratch"] = true;
  buffer(m, "eval", 9)["first"] = 2;
}

const Corruption kCorruptions[] = {
    // JSON and the top level.
    {"DuplicateKey", nullptr, {"manifest", "key \"version\" twice"},
     [](const std::string &t) {
       return "{\"version\": 2," + t.substr(1);
     }},
    {"DeepNesting", nullptr, {"manifest", "deeper than 64"},
     [](const std::string &t) {
       return t.substr(0, t.size() - 1) + ", \"x\": " + std::string(100, '[') +
              std::string(100, ']') + "}";
     }},
    {"NotJson", nullptr, {"manifest", "not valid JSON"},
     [](const std::string &t) { return t.substr(0, t.size() / 2); }},
    {"Version1",
     [](json &m) { m["version"] = 1; },
     {"bundle version 1 is no longer supported: recompile it with weftc"}},
    {"Version3",
     [](json &m) { m["version"] = 3; },
     {"bundle version 3 is not supported"}},
    {"WrongFormat",
     [](json &m) { m["format"] = "onnx"; },
     {"field 'format' is \"onnx\""}},
    {"UnknownTopLevelField",
     [](json &m) { m["programz"] = json::array(); },
     {"manifest", "unknown field 'programz'"}},
    {"MissingMeta",
     [](json &m) { m.erase("meta"); },
     {"manifest", "field 'meta' is missing"}},
    // An instruction's output overlapping one of its inputs.
    // (A launch may write the buffer it reads: an update in place.)
    {"GemmWritesItsInput",
     [](json &m) {
       m["programs"][0]["instructions"][0]["operands"] = {2, 1, 2};
     },
     {"program 'step', instruction 0 (gemm)", "must not overlap"}},
    // A batched GEMM whose batches write the same C.
    {"GemmBatchesOverlap",
     [](json &m) {
       auto &g = m["programs"][0]["instructions"][0];
       g["batch"] = 2;
       g["mnk"] = {1, 4, 4};
       g["strides"] = {4, 0, 0};
     },
     {"program 'step', instruction 0 (gemm)", "batches overlap"}},
    // Kernel files.
    {"KernelPathWithSlash",
     [](json &m) { m["kernels"]["cpu"]["file"] = "../other/kernels.so"; },
     {"kernels.cpu", "field 'file'", "no '/'"}},
    {"KernelFileMissing",
     [](json &m) { m["kernels"]["cpu"]["file"] = "other.so"; },
     {"kernels.cpu", "field 'file'", "'other.so' is not a readable file"}},
    {"KernelHashOfAnotherFile",
     [](json &m) { m["kernels"]["cpu"]["xxh3"] = xxh3Hex("another"); },
     {"kernels.cpu", "field 'xxh3'", "not this bundle's kernel file"}},
    {"KernelHashNotHex",
     [](json &m) { m["kernels"]["cpu"]["xxh3"] = "XYZ"; },
     {"kernels.cpu", "field 'xxh3'", "32 lowercase hex digits"}},
    // Mesh, params, constants, kernel declarations.
    {"MeshAxisSizeZero",
     [](json &m) { m["mesh"]["sizes"] = {0}; },
     {"mesh", "field 'sizes'", "axis 'dp' has size 0"}},
    {"MeshTooManyRanks",
     [](json &m) {
       m["mesh"]["axes"] = {"dp", "tp"};
       m["mesh"]["sizes"] = {2, 1 << 20};
     },
     {"mesh", "field 'sizes'", "more than 2^20 ranks"}},
    {"ParamNormalWithoutScale",
     [](json &m) { m["params"][0].erase("scale"); },
     {"param 'w'", "init 'normal' needs field 'scale'"}},
    {"ParamWrongEnum",
     [](json &m) { m["params"][1]["init"] = "zero"; },
     {"param 'w.m'", "field 'init' is \"zero\""}},
    {"ParamSplitUnknownAxis",
     [](json &m) { m["params"][1]["split"] = {{"tp"}, json::array()}; },
     {"param 'w.m'", "field 'split' entry 0", "'tp'"}},
    {"ParamIntegerDtype",
     [](json &m) { m["params"][2]["dtype"] = "i32"; },
     {"param 'emb'", "field 'dtype'", "must hold floats"}},
    {"ProbeNotTransient",
     [](json &m) {
       m["params"][1]["probe"] = "l.0/act_rms";
       m["params"][1]["probe_fold"] = "rms";
     },
     {"param 'w.m'", "field 'probe' needs a transient state tensor"}},
    {"ProbeUnknownFold",
     [](json &m) {
       m["params"][1]["transient"] = true;
       m["params"][1]["probe"] = "l.0/act_rms";
       m["params"][1]["probe_fold"] = "median";
     },
     {"param 'w.m'", "'probe_fold' must be mean, rms, max, max_over_mean or "
                     "last, not "
                     "'median'"}},
    {"ProbeFoldAlone",
     [](json &m) {
       m["params"][1]["transient"] = true;
       m["params"][1]["probe_fold"] = "max";
     },
     {"param 'w.m'", "field 'probe_fold' needs field 'probe'"}},
    {"ConstantNameOfAParam",
     [](json &m) { m["constants"][0]["name"] = "w"; },
     {"constants[0]", "field 'name'", "'w' is declared twice"}},
    {"ConstantValuesCount",
     [](json &m) { m["constants"][1]["values"] = {1, 2, 3}; },
     {"constant 'c1'", "field 'values' has 3 numbers for shape [2]"}},
    {"ConstantFractionInIntegers",
     [](json &m) { m["constants"][1]["values"] = {1, 2.5}; },
     {"constant 'c1'", "field 'values' entry 1 must be an integer"}},
    {"NegativeDimension",
     [](json &m) { m["params"][0]["shape"] = {-1, 4}; },
     {"param 'w'", "field 'shape' dimension 0 is -1"}},
    {"ShapeOver2To62Bytes",
     [](json &m) { m["params"][0]["shape"] = {int64_t(1) << 40, 1 << 22}; },
     {"param 'w'", "larger than 2^62 bytes"}},
    {"UnknownDtype",
     [](json &m) { m["kernel_decls"][0]["inputs"][0]["dtype"] = "f64"; },
     {"kernel_decl 'fused_0', inputs 0", "field 'dtype' is \"f64\""}},
    // Program headers.
    {"AlignNotPowerOfTwo",
     [](json &m) { program(m, "step")["align"] = 48; },
     {"program 'step'", "field 'align' 48 is not a power of two"}},
    {"StreamTwice",
     [](json &m) { program(m, "step")["streams"] = {"compute", "compute"}; },
     {"program 'step'", "names stream 'compute' twice"}},
    {"ArenaMistyped",
     [](json &m) { program(m, "step")["arena"] = "256"; },
     {"program 'step'", "field 'arena' must be an integer, not a string"}},
    {"ProgramNameTwice",
     [](json &m) { program(m, "eval")["name"] = "step"; },
     {"programs[1]", "'step' is declared twice"}},
    // Buffers.
    {"InputIndexEdited",
     [](json &m) { buffer(m, "step", 0)["index"] = 3; },
     {"program 'step', buffer 0 (input)", "field 'index' is 3"}},
    {"InputShapeEdited",
     [](json &m) { buffer(m, "step", 0)["shape"] = {2, 5}; },
     {"program 'step', buffer 0 (input)", "is [2, 5] f32 but input 0 is [2, 4] f32"}},
    {"ParamBufferDtypeEdited",
     [](json &m) { buffer(m, "step", 1)["dtype"] = "bf16"; },
     {"program 'step', buffer 1 (param)", "but param 'w' is [4, 4] f32"}},
    {"UnknownParam",
     [](json &m) { buffer(m, "step", 1)["name"] = "v"; },
     {"program 'step', buffer 1 (param)", "field 'name' is 'v'"}},
    {"WrongBufferKind",
     [](json &m) { buffer(m, "step", 2)["kind"] = "arena"; },
     {"program 'step', buffer 2", "field 'kind' is \"arena\""}},
    {"MisspeltField",
     [](json &m) { buffer(m, "step", 2)["ofset"] = 0; },
     {"program 'step', buffer 2 (alloc)", "unknown field 'ofset'"}},
    {"AllocMissingField",
     [](json &m) { buffer(m, "step", 2).erase("last"); },
     {"program 'step', buffer 2 (alloc)", "field 'last' is missing"}},
    {"OffsetMovedByAByte",
     [](json &m) { buffer(m, "step", 3)["offset"] = 65; },
     {"program 'step', buffer 3 (alloc)", "field 'offset' 65",
      "64-byte alignment"}},
    {"OffsetNear2To63",
     [](json &m) { buffer(m, "step", 3)["offset"] = kNear2To63; },
     {"program 'step', buffer 3 (alloc)", "field 'offset'",
      "outside the 256-byte arena"}},
    {"OffsetPast2To63",
     [](json &m) { buffer(m, "step", 3)["offset"] = uint64_t(1) << 63; },
     {"program 'step', buffer 3 (alloc)", "field 'offset'", "outside int64"}},
    {"NegativeOffset",
     [](json &m) { buffer(m, "step", 3)["offset"] = -64; },
     {"program 'step', buffer 3 (alloc)", "field 'offset' -64"}},
    {"AllocPastArena",
     [](json &m) { buffer(m, "step", 4)["offset"] = 256; },
     {"program 'step', buffer 4 (alloc)", "bytes [256, 320) lie outside"}},
    {"LiveRangePastEnd",
     [](json &m) { buffer(m, "step", 3)["last"] = 7; },
     {"program 'step', buffer 3 (alloc)", "live range [1, 7] is not inside [0, 6]"}},
    {"ViewOfLaterBuffer",
     [](json &m) { buffer(m, "eval", 5)["of"] = 6; },
     {"program 'eval', buffer 5 (view)", "field 'of' is 6"}},
    {"ViewOutsideItsSource",
     [](json &m) { buffer(m, "eval", 6)["offset"] = 4; },
     {"program 'eval', buffer 6 (view)", "field 'offset'", "outside the 192-byte buffer 4"}},
    {"ViewOffsetNear2To63",
     [](json &m) { buffer(m, "eval", 6)["offset"] = INT64_MAX - 3; },
     {"program 'eval', buffer 6 (view)", "field 'offset'", "outside"}},
    {"ViewOffsetMisaligned",
     [](json &m) { buffer(m, "step", 5)["offset"] = 18; },
     {"program 'step', buffer 5 (view)", "field 'offset' 18", "multiple of 4 bytes"}},
    // The memory plan.
    {"OverlappingLiveBuffers",
     [](json &m) { buffer(m, "eval", 9)["first"] = 1; },
     {"program 'eval', buffer 9 (alloc)", "shares bytes with buffer 3 while both are live"}},
    {"OverlappingLiveBuffersNeighbours",
     [](json &m) { buffer(m, "eval", 8)["offset"] = 272; },
     {"program 'eval', buffer", "shares bytes with buffer", "while both are live"}},
    {"UseOutsideLiveRange",
     [](json &m) { buffer(m, "step", 2)["last"] = 0; },
     {"program 'step', instruction 1 (launch)", "operand 0 (input 0) is buffer 2",
      "live only in [0, 0]"}},
    {"UseThroughViewOutsideLiveRange",
     [](json &m) { buffer(m, "eval", 4)["last"] = 2; },
     {"program 'eval', instruction 3 (softmax)",
      "operand 0 (input) is buffer 6, a view of buffer 4,", "live only in [1, 2]"}},
    {"OutputNotLiveToTheEnd",
     [](json &m) { buffer(m, "step", 3)["last"] = 5; },
     {"program 'step', output 0 ('y')", "field 'buffer'", "live range ends at 5"}},
    {"AssignNotLiveToTheEnd",
     [](json &m) { buffer(m, "step", 4)["last"] = 5; },
     {"program 'step', assign 0 ('w.m')", "live range ends at 5"}},
    {"WritesAParam",
     [](json &m) { instr(m, "step", 5)["operands"] = {1}; },
     {"program 'step', instruction 5 (fill)", "operand 0 (dest) writes param 'w'"}},
    {"WritesAConstant",
     [](json &m) { instr(m, "step", 5)["operands"] = {6}; },
     {"program 'step', instruction 5 (fill)", "operand 0 (dest) writes constant 'c0'"}},
    // Instructions: structure.
    {"UnknownOp",
     [](json &m) { instr(m, "step", 0)["op"] = "matmul"; },
     {"program 'step', instruction 0 (matmul)", "field 'op': unknown op 'matmul'"}},
    {"MissingOperand",
     [](json &m) { instr(m, "step", 0)["operands"] = {0, 1}; },
     {"program 'step', instruction 0 (gemm)", "field 'operands' has 2 buffers",
      "gemm takes 3 (a, b, c)"}},
    {"OperandOutOfRange",
     [](json &m) { instr(m, "step", 0)["operands"] = {0, 1, 40}; },
     {"program 'step', instruction 0 (gemm)", "field 'operands' entry 2 is buffer 40"}},
    {"MissingAttribute",
     [](json &m) { instr(m, "step", 0).erase("batch"); },
     {"program 'step', instruction 0 (gemm)", "field 'batch' is missing"}},
    {"WrongEnumString",
     [](json &m) { instr(m, "step", 0)["epilogue"] = "relu"; },
     {"program 'step', instruction 0 (gemm)", "field 'epilogue' is \"relu\""}},
    {"BoolAsInteger",
     [](json &m) { instr(m, "step", 0)["transpose_a"] = 0; },
     {"program 'step', instruction 0 (gemm)", "field 'transpose_a' must be true or false"}},
    {"StreamUndeclared",
     [](json &m) { instr(m, "step", 5)["stream"] = "side"; },
     {"program 'step', instruction 5 (fill)", "field 'stream' is 'side'"}},
    {"MissingStream",
     [](json &m) { instr(m, "step", 5).erase("stream"); },
     {"program 'step', instruction 5 (fill)", "field 'stream' is missing"}},
    // Instructions: the op verifiers.
    {"GemmSizesPastBuffer",
     [](json &m) { instr(m, "step", 0)["mnk"] = {2, 4, 5}; },
     {"program 'step', instruction 0 (gemm)", "field 'ld'", "of A is less than its 5"}},
    {"GemmBufferTooSmall",
     [](json &m) { instr(m, "step", 0)["mnk"] = {3, 4, 4}; },
     {"program 'step', instruction 0 (gemm)", "operand 0 (a): A needs 12 elements but its buffer holds 8"}},
    {"GemmStrideOverflow",
     [](json &m) {
       instr(m, "step", 0)["batch"] = 2;
       instr(m, "step", 0)["strides"] = {INT64_MAX, 0, 0};
     },
     {"program 'step', instruction 0 (gemm)", "A needs more than 2^63 elements"}},
    {"GemmEpilogueWithoutBias",
     [](json &m) { instr(m, "step", 0)["epilogue"] = "bias"; },
     {"program 'step', instruction 0 (gemm)", "field 'epilogue' 'bias' needs bias"}},
    {"GemmMixedTypes",
     [](json &m) {
       m["params"][0]["dtype"] = "bf16";
       buffer(m, "step", 1)["dtype"] = "bf16";
     },
     {"program 'step', instruction 0 (gemm)", "multiplies f32 by bf16"}},
    {"LaunchTypeNotTheDeclaration",
     [](json &m) { m["kernel_decls"][0]["inputs"][0]["shape"] = {2, 5}; },
     {"program 'step', instruction 1 (launch)",
      "operand 0 (input 0) is [2, 4] f32 but kernel 'fused_0' takes [2, 5] f32"}},
    {"LaunchScalarType",
     [](json &m) { instr(m, "step", 1)["scalars"] = {{{"i32", 8}}}; },
     {"program 'step', instruction 1 (launch)", "field 'scalars' entry 0 is i32",
      "takes i64"}},
    {"LaunchCounts",
     [](json &m) {
       instr(m, "step", 1)["inputs"] = 2;
       instr(m, "step", 1)["outputs"] = 0;
     },
     {"program 'step', instruction 1 (launch)", "field 'inputs': passes 2 inputs"}},
    {"LaunchCountsDoNotAddUp",
     [](json &m) { instr(m, "step", 1)["inputs"] = INT64_MAX; },
     {"program 'step', instruction 1 (launch)", "do not add up to the 2 operands"}},
    {"LaunchUnknownKernel",
     [](json &m) { instr(m, "step", 1)["kernel"] = "fused_9"; },
     {"program 'step', instruction 1 (launch)", "field 'kernel' names 'fused_9'"}},
    {"LaunchGrid",
     [](json &m) { instr(m, "step", 1)["grid"] = {1, 0, 1}; },
     {"program 'step', instruction 1 (launch)", "field 'grid' [1, 0, 1]"}},
    {"LaunchBlock",
     [](json &m) { instr(m, "step", 1)["block"] = 2048; },
     {"program 'step', instruction 1 (launch)", "field 'block' of 2048 threads"}},
    {"CollectiveWithoutReduction",
     [](json &m) { instr(m, "step", 4)["reduction"] = "none"; },
     {"program 'step', instruction 4 (collective)",
      "field 'reduction': all_reduce needs a reduction"}},
    {"CollectiveGroupSize",
     [](json &m) {
       instr(m, "step", 4)["kind"] = "all_gather";
       instr(m, "step", 4)["reduction"] = "none";
     },
     {"program 'step', instruction 4 (collective)",
      "all_gather over a group of 2 from 8 elements needs an output of 16, not 8"}},
    {"CollectiveUnknownAxis",
     [](json &m) { instr(m, "step", 4)["axes"] = {"tp"}; },
     {"program 'step', instruction 4 (collective)", "field 'axes' names 'tp'"}},
    {"CollectiveAxisTwice",
     [](json &m) { instr(m, "step", 4)["axes"] = {"dp", "dp"}; },
     {"program 'step', instruction 4 (collective)", "field 'axes' names mesh axis 'dp' twice"}},
    {"EmbeddingOutputShape",
     [](json &m) {
       buffer(m, "eval", 3)["shape"] = {2, 3, 5};
       buffer(m, "eval", 9)["offset"] = 128; // Still clear of the bigger x.
     },
     {"program 'eval', instruction 0 (embedding)",
      "operand 2 (out) has shape [2, 3, 5], expected [2, 3, 4]"}},
    {"EmbeddingVocabAxisUnknown",
     [](json &m) { instr(m, "eval", 0)["vocab_axes"] = {"tp"}; },
     {"program 'eval', instruction 0 (embedding)", "field 'vocab_axes' names 'tp'"}},
    {"CrossEntropyLossDtype",
     [](json &m) { buffer(m, "eval", 7)["dtype"] = "bf16"; },
     {"program 'eval', instruction 2 (cross_entropy)", "operand 2 (loss) must be one f32"}},
    {"CrossEntropyFloatLabels",
     [](json &m) {
       program(m, "eval")["inputs"][1]["dtype"] = "f32";
       buffer(m, "eval", 1)["dtype"] = "f32";
     },
     {"program 'eval', instruction 2 (cross_entropy)",
      "operand 1 (labels) must hold i32 or i64, not f32"}},
    // GPU scratch: has_scratch on exactly the ops that may have one, the
    // scratch f32 and as large as ScratchLayout.h says.
    {"ScratchTooSmall", scratchForCrossEntropy,
     {"program 'eval', instruction 2 (cross_entropy)",
      "operand 3 (scratch): needs 264 bytes of scratch, has 16"}},
    {"ScratchNotF32",
     [](json &m) {
       scratchForCrossEntropy(m);
       buffer(m, "eval", 9)["dtype"] = "i32";
     },
     {"program 'eval', instruction 2 (cross_entropy)",
      "operand 3 (scratch) must hold f32, not i32"}},
    {"ScratchFlagMissing",
     [](json &m) { instr(m, "eval", 2).erase("has_scratch"); },
     {"program 'eval', instruction 2 (cross_entropy)",
      "field 'has_scratch' is missing"}},
    {"ScratchFlagWithoutTheOperand",
     [](json &m) { instr(m, "eval", 2)["has_scratch"] = true; },
     {"program 'eval', instruction 2 (cross_entropy)",
      "field 'operands' has 3 buffers, but cross_entropy takes 4 (logits, "
      "labels, loss, scratch)"}},
    {"ScratchFlagOnAnOpWithout",
     [](json &m) { instr(m, "eval", 3)["has_scratch"] = false; },
     {"program 'eval', instruction 3 (softmax)",
      "unknown field 'has_scratch'"}},
    {"Fp8DecodeOfFloats",
     [](json &m) {
       instr(m, "eval", 3) = {{"op", "fp8_decode"},
                              {"stream", "compute"},
                              {"operands", {6, 7, 8}},
                              {"pow2_scales", false}};
     },
     {"program 'eval', instruction 3 (fp8_decode)",
      "operand 0 (input) must hold f8e4m3fn or f8e5m2, not f32"}},
    {"Fp8ScaleInvOfFloats",
     [](json &m) {
       instr(m, "eval", 3) = {{"op", "fp8_scale_inv"},
                              {"stream", "compute"},
                              {"operands", {6, 7, 8}},
                              {"transpose", false},
                              {"pow2_scales", false}};
     },
     {"program 'eval', instruction 3 (fp8_scale_inv)",
      "operand 0 (codes) must hold f8e4m3fn or f8e5m2, not f32"}},
    {"SoftmaxDimOutsideRank",
     [](json &m) { instr(m, "eval", 3)["dim"] = 3; },
     {"program 'eval', instruction 3 (softmax)", "field 'dim' 3 is outside rank 3"}},
    // Streams and events.
    {"EventOutOfRange",
     [](json &m) { instr(m, "step", 2)["event"] = 1; },
     {"program 'step', instruction 2 (record)", "field 'event' 1 is outside the program's 1 events"}},
    {"WaitBeforeRecord",
     [](json &m) {
       std::swap(instr(m, "step", 2)["op"], instr(m, "step", 3)["op"]);
     },
     {"program 'step', instruction 2 (wait)", "waits for event 0 before any record"}},
    {"WaitOnTheRecordingStream",
     [](json &m) { instr(m, "step", 3)["stream"] = "compute"; },
     {"program 'step', instruction 3 (wait)", "which that stream recorded"}},
    {"HazardAcrossStreams",
     [](json &m) { instr(m, "step", 1)["stream"] = "comm"; },
     {"program 'step', instruction 1 (launch)",
      "operand 0 (input 0) reads buffer 2 on stream 'comm'",
      "instruction 0 (gemm) writes on stream 'compute' with no event between"}},
    {"HazardWithoutTheWait",
     [](json &m) {
       instr(m, "step", 3) = {{"op", "record"}, {"stream", "comm"},
                              {"operands", json::array()}, {"event", 0}};
     },
     {"program 'step', instruction 4 (collective)", "reads buffer 3 on stream 'comm'",
      "instruction 1 (launch) writes on stream 'compute'"}},
    // Assigns and outputs.
    {"AssignTypeMismatch",
     [](json &m) { program(m, "step")["assigns"][0]["buffer"] = 3; },
     {"program 'step', assign 0", "assigns [2, 4] f32 to param 'w.m' of type [4, 4] f32"}},
    {"AssignUnknownParam",
     [](json &m) { program(m, "step")["assigns"][0]["param"] = "w.v"; },
     {"program 'step', assign 0", "field 'param' is 'w.v'"}},
    {"OutputNameTwice",
     [](json &m) { program(m, "step")["outputs"][1]["name"] = "y"; },
     {"program 'step', output 1 ('y')", "output 'y' twice"}},
    {"OutputSplitRank",
     [](json &m) { program(m, "step")["outputs"][1]["split"] = {{"dp"}, {}}; },
     {"program 'step', output 1 ('row')", "field 'split' has 2 entries for a rank-1"}},
    // Schedules.
    {"ScheduleUnknownProgram",
     [](json &m) { m["schedules"][1]["sequences"][0]["runs"][0]["program"] = "fwd"; },
     {"schedule 'eval', sequence 0, run 0", "field 'program' is 'fwd'"}},
    {"ScheduleMicrobatchOutOfRange",
     [](json &m) { m["schedules"][0]["sequences"][1]["runs"][1]["microbatch"] = 2; },
     {"schedule 'train', sequence 1, run 1", "field 'microbatch' 2 is outside [0, 2)"}},
    {"ScheduleCoordinateTwice",
     [](json &m) { m["schedules"][0]["sequences"][1]["coordinate"] = 0; },
     {"schedule 'train', sequence 1", "field 'coordinate' selects 0 of 'dp' a second time"}},
    {"ScheduleCoordinateMissing",
     [](json &m) { m["schedules"][0]["sequences"].erase(1); },
     {"schedule 'train'", "has sequences for 1 of the 2 coordinates of 'dp'"}},
    {"ScheduleAxisWithoutCoordinate",
     [](json &m) { m["schedules"][0]["sequences"][0]["coordinate"] = nullptr; },
     {"schedule 'train', sequence 0", "fields 'axis' and 'coordinate'"}},
    {"ScheduleUnknownAxis",
     [](json &m) {
       m["schedules"][0]["sequences"][0]["axis"] = "pp";
     },
     {"schedule 'train', sequence 0", "field 'axis' selects ranks along 'pp'"}},
};

INSTANTIATE_TEST_SUITE_P(SchedBundle, Corrupted,
                         ::testing::ValuesIn(kCorruptions),
                         [](const ::testing::TestParamInfo<Corruption> &info) {
                           return std::string(info.param.name);
                         });

} // namespace
} // namespace weft::runtime::sched
