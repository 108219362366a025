//===- BundleFormat.h - the compiler/runtime contract -----------*- C++ -*-===//
//
// A bundle is a directory holding `manifest.json`. Its layout (version 1):
//
//   {"format": "weft-bundle", "version": 1,
//    "meta": {...free-form: model config, batch, seq, vocab, optimizer...},
//    "params": [{"name", "shape", "dtype", "init", "scale", "state"}],
//    "constants": [{"shape", "dtype", "splat": x} | {"shape", "dtype",
//    "values": [...]}], "programs": {"<name>": {
//        "arena_bytes": N,
//        "values": [{"shape", "dtype", "kind": "input", "index": i}
//                 | {..., "kind": "param", "name": p}
//                 | {..., "kind": "constant", "index": c}
//                 | {..., "kind": "arena", "offset": o}],
//        "inputs": [value ids], "outputs": [{"name", "value"}],
//          (output names: a weft.output name, or "grad:<param>")
//        "steps": [{"op": "weft.add", "operands": [ids], "results": [ids],
//                   "attrs": {...}}],
//          (attrs: the op's own, enums by name; plus "kernel" on weft.fused,
//           "rows" on a fused group holding a norm, "vocab_axes" on
//           vocabulary-parallel steps; weft.matmul_epilogue's operands are
//           lhs, rhs, then the bias or the dgelu preactivation as its
//           "epilogue" says)
//        "assigns": [{"param": p, "value": id}]}}}
//
// Programs run their steps in order; every arena value has a static offset
// from the memory plan. Assigns take effect after the last step.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_EXEC_BUNDLEFORMAT_H
#define WEFT_RUNTIME_EXEC_BUNDLEFORMAT_H

namespace weft::runtime {
inline constexpr const char *kBundleFormat = "weft-bundle";
inline constexpr int kBundleVersion = 1;
inline constexpr const char *kManifestFile = "manifest.json";
} // namespace weft::runtime

#endif // WEFT_RUNTIME_EXEC_BUNDLEFORMAT_H
