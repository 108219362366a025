//===- SchedDialect.td - what one rank executes -------------*- tablegen -*-===//
//
// The `sched` dialect is the schedule IR: buffers at static arena offsets and
// the instructions one rank runs on them, in order, on named streams. Codegen
// lowers `weft` graphs to it; the bundle is its serialization; the runtimes
// execute it and decide nothing. docs/sched-dialect.md says why it is shaped
// so.
//
//===----------------------------------------------------------------------===//

#ifndef SCHED_DIALECT_TD
#define SCHED_DIALECT_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def Sched_Dialect : Dialect {
  let name = "sched";
  let cppNamespace = "::weft::sched";
  let useDefaultTypePrinterParser = 1;
  let summary = "Programs of instructions on buffers, as one rank runs them";
  let description = [{
    A `sched` module is everything a rank needs to run a training job: the
    mesh, the parameters and constants it keeps between steps, the
    generated kernels it may launch, its programs (each an ordered list of
    instructions on buffers at fixed arena offsets, on named streams) and
    the schedule tables that say which program runs for which micro-batch
    in which order. Every choice (which kernel, which GEMM layout, where a
    buffer lives, which stream, which event) is already made; the verifiers
    check that the choices are consistent, and the runtime reads the same
    facts from the bundle and checks them again.
  }];
}

class Sched_Op<string mnemonic, list<Trait> traits = []>
    : Op<Sched_Dialect, mnemonic, traits>;

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

def Sched_BufferType : TypeDef<Sched_Dialect, "Buffer"> {
  let mnemonic = "buffer";
  let summary = "a dense row-major view of bytes";
  let description = [{
    `!sched.buffer<4x128xbf16>`: a run of memory holding a row-major tensor
    of the given static shape and element type (f32, bf16, f16, f8E4M3FN,
    f8E5M2, i32, i64). Where the bytes are is said by the op that defines
    the value (`sched.alloc`, `sched.get`, `sched.view` or a program
    argument), not by the type. The byte size must fit in 2^62.
  }];
  let parameters = (ins ArrayRefParameter<"int64_t">:$shape,
                        "::mlir::Type":$elementType);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Elements and bytes; the verifier guarantees neither overflows.
    int64_t getNumElements() const;
    int64_t getElementBytes() const;
    int64_t getBytes() const { return getNumElements() * getElementBytes(); }
  }];
}

def Sched_Buffer : Type<CPred<"::llvm::isa<::weft::sched::BufferType>($_self)">,
                        "sched buffer", "::weft::sched::BufferType">;

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

// An i64 read back as int64_t. MLIR's I64Attr returns uint64_t, which turns
// a negative offset or index into a huge one and every `< 0` check into a
// no-op; sched's verifiers must see the value as written.
def Sched_I64Attr : SignlessIntegerAttrBase<I64, "64-bit integer attribute"> {
  let returnType = "int64_t";
  let convertFromStorage = "$_self.getValue().getSExtValue()";
}

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def Sched_InitKind : I32EnumAttr<"InitKind", "how a parameter is initialised", [
    I32EnumAttrCase<"zeros", 0>, I32EnumAttrCase<"ones", 1>,
    I32EnumAttrCase<"normal", 2>, I32EnumAttrCase<"uniform", 3>]> {
  let cppNamespace = "::weft::sched";
}

def Sched_Epilogue : I32EnumAttr<"Epilogue", "what a GEMM does to its product", [
    I32EnumAttrCase<"none", 0>, I32EnumAttrCase<"bias", 1>,
    I32EnumAttrCase<"gelu", 2>, I32EnumAttrCase<"bias_gelu", 3>,
    I32EnumAttrCase<"dgelu", 4>]> {
  let cppNamespace = "::weft::sched";
}

def Sched_CollectiveKind : I32EnumAttr<"CollectiveKind", "a collective", [
    I32EnumAttrCase<"all_reduce", 0>, I32EnumAttrCase<"all_gather", 1>,
    I32EnumAttrCase<"reduce_scatter", 2>, I32EnumAttrCase<"all_to_all", 3>]> {
  let cppNamespace = "::weft::sched";
}

def Sched_Reduction : I32EnumAttr<"Reduction", "how values combine", [
    I32EnumAttrCase<"none", 0>, I32EnumAttrCase<"sum", 1>,
    I32EnumAttrCase<"max", 2>, I32EnumAttrCase<"mean", 3>]> {
  let cppNamespace = "::weft::sched";
}

def Sched_AttentionAlgorithm
    : I32EnumAttr<"AttentionAlgorithm", "how attention is computed", [
    // Scores and probabilities materialised in scratch, GEMMs around a
    // softmax kernel (small problems; the CPU).
    I32EnumAttrCase<"gemm_softmax", 0>,
    // One pass over key blocks with an online softmax (FlashAttention).
    I32EnumAttrCase<"flash", 1>]> {
  let cppNamespace = "::weft::sched";
}

#endif // SCHED_DIALECT_TD
