//===- CpuKernelCompiler.h - AOT-compile CPU kernels to a .so ---*- C++ -*-===//
//
// Part of strata. Compiles the public functions of an MLIR module (func.func
// over memrefs and scalars, bodies in linalg/scf/arith/math/memref) into one
// x86-64 ELF shared object for the artifact:
//   1. derive each kernel's argument ABI from its func signature;
//   2. lower to the LLVM dialect with upstream passes (buildCpuLoweringPipeline);
//   3. translate to LLVM IR and add one packed entry point per kernel,
//      `void _strata_entry_<name>(void **args)` (docs/Artifact.md "Kernel ABI");
//   4. optimize (O3) and emit an object with an in-process TargetMachine for a
//      documented CPU baseline (default x86-64-v2, so artifacts run on any CI
//      machine of the last decade);
//   5. link with ld.lld into a shared object with --no-undefined against
//      libm/libc (DT_NEEDED libm.so.6, libc.so.6), so every imported symbol
//      (expf, malloc, ...) resolves when the runtime dlopens it.
// If the linker fails, the error carries a command line that reproduces it
// and the object file is kept.
//
// The module is cloned; the caller's module is left alone.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_LIB_TARGET_CPU_CPUKERNELCOMPILER_H
#define STRATA_LIB_TARGET_CPU_CPUKERNELCOMPILER_H

#include <string>
#include <vector>

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/LLVM.h"

#include "lib/Artifact/ArtifactWriter.h"

namespace mlir::strata {

/// Options of compileCpuKernels.
struct CpuCompileOptions {
  /// LLVM CPU name of the baseline (also stored as the target's chip).
  std::string cpu = "x86-64-v2";
  /// Target triple.
  std::string triple = "x86_64-unknown-linux-gnu";
  /// ld.lld to run; empty means LLVM's tools directory, then PATH
  /// (ld.lld, ld.lld-22).
  std::string linkerPath;
};

/// The compiled kernels: one shared object plus one KernelDesc per kernel
/// (binaryIndex 0), in module order.
struct CpuKernelLibrary {
  std::vector<uint8_t> sharedObject;
  std::vector<KernelDesc> kernels;
  /// Where each kernel's func was defined (for debug info), same order.
  std::vector<SourceLocationDesc> locations;
};

/// Adds the lowering from func/linalg/scf/arith/math/memref to the LLVM
/// dialect to `pm` (anchored on builtin.module): buildTargetPipeline for cpu.
void buildCpuLoweringPipeline(OpPassManager &pm);

/// Compiles every public func.func with a body in `module`; emits errors on
/// `module` and fails on unsupported signatures or tool failures.
FailureOr<CpuKernelLibrary> compileCpuKernels(ModuleOp module,
                                              const CpuCompileOptions &options);

/// The artifact element type of an MLIR element type (index -> i64), or
/// failure for types the artifact cannot describe.
FailureOr<fb::DType> toArtifactDType(Type type);

/// The packed entry symbol of kernel `name`.
std::string cpuEntrySymbol(llvm::StringRef name);

/// The KernelDesc of kernel function `func` (name, CPU entry symbol, one
/// argument per memref or scalar parameter); emits an error on `func` for
/// results, non-identity layouts and unsupported element types. Shared with
/// the GPU kernel compiler (same signatures, other entry points).
FailureOr<KernelDesc> describeKernelSignature(func::FuncOp func);

} // namespace mlir::strata

#endif // STRATA_LIB_TARGET_CPU_CPUKERNELCOMPILER_H
