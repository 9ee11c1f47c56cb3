//===- GpuKernelCompiler.cpp - llm.kernel functions to a GPU binary -------===//
//
// Part of strata, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "lib/Driver/GpuKernelCompiler.h"

#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include "lib/Conversion/KernelToGPU/KernelToGPU.h"
#include "lib/Conversion/LLMToGPU/LaunchGridAttr.h"
#include "lib/Conversion/LLMToGPU/LinearKernel.h"
#include "lib/Conversion/LLMToGPU/MatmulTiling.h"
#include "lib/Conversion/LLMToGPU/Patterns.h"
#include "lib/Conversion/LLMToKernel/KernelBuilder.h"
#include "lib/Conversion/Passes.h"
#include "lib/Target/CPU/CpuKernelCompiler.h"
#include "lib/Target/TargetInfo.h"

using namespace mlir;
using namespace mlir::strata;

/// A rank-1 buffer argument of dynamic extent named `name` appended to
/// `kernel.args` (the arguments a GPU kernel takes beyond its kernel
/// function's: counters, scratch).
static void appendBufferArg(KernelDesc &kernel, StringRef name,
                            fb::DType dtype) {
  KernelArgDesc arg;
  arg.name = name.str();
  arg.kind = fb::ArgKind::buffer;
  arg.dtype = dtype;
  arg.staticShape = {-1};
  kernel.args.push_back(std::move(arg));
}

/// `func`'s global scratch program (kGpuScratchAttrName), with the
/// trailing `scratch` argument it takes appended to `kernel.args`; empty
/// without one.
static FailureOr<std::vector<GpuScratchOp>>
scratchProgram(ModuleOp module, gpu::GPUFuncOp func, KernelDesc &kernel) {
  std::vector<GpuScratchOp> scratch;
  auto program = func->getAttrOfType<ArrayAttr>(kGpuScratchAttrName);
  if (!program)
    return scratch;
  if (func.getNumArguments() != kernel.args.size() + 1)
    return module.emitError("GPU kernel '")
           << kernel.name << "' has scratch but no scratch argument";
  for (Attribute entry : program) {
    ArrayRef<int64_t> v = cast<DenseI64ArrayAttr>(entry).asArrayRef();
    scratch.push_back({static_cast<ScratchOp>(v[0]), v.size() > 1 ? v[1] : 0,
                       v.size() > 2 ? v[2] : 0});
  }
  appendBufferArg(kernel, "scratch", fb::DType::u8);
  return scratch;
}

FailureOr<GpuKernelLibrary> mlir::strata::compileGpuKernels(ModuleOp module,
                                                            StringRef chip,
                                                            StringRef toolkit,
                                                            StringRef isaDir,
                                                            GpuCodegenOptions codegen) {
  GpuKernelLibrary library;
  library.chip = chip.str();
  if (chip == "sm_90")
    library.kind = fb::TargetKind::sm_90;
  else if (chip == "sm_90a")
    library.kind = fb::TargetKind::sm_90a;
  else if (chip == "gfx942")
    library.kind = fb::TargetKind::gfx942;
  else if (chip == "gfx950")
    library.kind = fb::TargetKind::gfx950;
  else
    return module.emitError("no GPU target kind for chip '") << chip << "'";
  std::unique_ptr<TargetInfo> target = createGpuTargetInfo(module, chip);
  if (!target)
    return failure();
  bool nvidia = chip.starts_with("sm_");

  for (auto func : module.getOps<func::FuncOp>()) {
    if (func.isExternal() || !func->hasAttr(kKernelAttrName))
      continue;
    FailureOr<KernelDesc> kernel = describeKernelSignature(func);
    if (failed(kernel))
      return failure();
    kernel->entrySymbol = kernel->name;
    kernel->launch.emplace();
    library.kernels.push_back(std::move(*kernel));
  }
  if (library.kernels.empty())
    return module.emitError("no llm.kernel functions to compile");

  OwningOpRef<ModuleOp> lowered = module.clone();
  // fp32 mode's f64 sums as f32 sums first: f64 runs at a fraction of the
  // f32 rate on GPUs (narrow-kernel-sums).
  {
    PassManager narrow(module.getContext());
    narrow.addPass(createNarrowKernelSumsPass());
    if (failed(narrow.run(*lowered)))
      return module.emitError("narrowing the kernels' f64 sums failed");
  }
  // The strategy of every kernel function (select-kernel-strategy), then
  // the matrix-unit and SIMT kernels of the same name and arguments built by
  // their strategy's builder, their `_rows` twins that have no work left
  // built empty (build-strategy-kernels); the generic ones stay for
  // convert-kernels-to-gpu.
  if (codegen.matrixUnits) {
    PassManager strategies(module.getContext());
    SelectKernelStrategyPassOptions select;
    select.chip = chip.str();
    select.remarks = codegen.strategyRemarks;
    select.genericStrategies.assign(codegen.genericStrategies.begin(),
                                    codegen.genericStrategies.end());
    strategies.addPass(createSelectKernelStrategyPass(select));
    BuildStrategyKernelsPassOptions build;
    build.chip = chip.str();
    strategies.addPass(createBuildStrategyKernelsPass(build));
    if (failed(strategies.run(*lowered)))
      return module.emitError(
          "building the kernels by their strategies failed");
  }
  // `_rows` twins built empty launch no block: the runtime skips their
  // dispatches (a step pays no launch for them).
  llvm::StringSet<> emptyTwins;
  for (auto func : lowered->getOps<func::FuncOp>())
    if (auto strategy =
            func->getAttrOfType<llm::GpuStrategyAttr>(kGpuStrategyAttrName);
        strategy && strategy.getValue() == llm::GpuStrategy::EmptyTwin)
      emptyTwins.insert(func.getSymName());

  PassManager pm(module.getContext());
  ConvertKernelsToGPUPassOptions gpuOptions;
  // Without a chip the pass keeps one thread per block.
  if (codegen.blockThreads)
    gpuOptions.chip = chip.str();
  pm.addPass(createConvertKernelsToGPUPass(gpuOptions));
  if (failed(pm.run(*lowered)))
    return module.emitError("moving the kernels to the GPU failed");

  // The grids, read before the binary pipeline replaces the gpu.module.
  auto gpuModule = lowered->lookupSymbol<gpu::GPUModuleOp>("strata_kernels");
  for (KernelDesc &kernel : library.kernels) {
    auto func = gpuModule ? gpuModule.lookupSymbol<gpu::GPUFuncOp>(kernel.name)
                          : nullptr;
    DenseI32ArrayAttr block = func ? func.getKnownBlockSizeAttr() : nullptr;
    if (!block || block.size() != 3)
      return module.emitError("GPU kernel '")
             << kernel.name << "' has no block size";
    for (int d = 0; d < 3; ++d)
      kernel.launch->block[d] = static_cast<uint32_t>(block[d]);
    kernel.launch->gridDependencyControl = target->controlsGridDependencies();
    if (auto bytes =
            func->getAttrOfType<IntegerAttr>(kDynamicSharedMemoryAttrName))
      kernel.launch->sharedMemoryBytes = bytes.getInt();
    library.smallStepSharedMemory.emplace_back();
    if (auto small = func->getAttrOfType<DenseI64ArrayAttr>(
            kSmallStepSharedMemoryAttrName))
      library.smallStepSharedMemory.back().assign(small.asArrayRef().begin(),
                                                  small.asArrayRef().end());
    std::array<GpuGridDim, 3> dims;
    if (auto built = func->getAttrOfType<ArrayAttr>(kMatrixGridAttrName)) {
      // Each builder chose its kernel's grid (LinearKernel.h).
      FailureOr<GpuGrid> grid = decodeGrid(built);
      if (failed(grid))
        return module.emitError("GPU kernel '")
               << kernel.name << "' has a malformed " << kMatrixGridAttrName;
      if (auto mma = func->getAttrOfType<StringAttr>("strata.mma"))
        kernel.launch->matrixInstruction = mma.getValue().str();
      library.grids.push_back(*grid);
      // K split over the grid: the arrival counters' and the scratch's
      // arguments after the kernel function's own.
      library.counters.push_back(0);
      if (auto counters =
              func->getAttrOfType<IntegerAttr>(kGpuCountersAttrName)) {
        if (func.getNumArguments() != kernel.args.size() + 2)
          return module.emitError("GPU kernel '")
                 << kernel.name << "' has counters but no counters argument";
        library.counters.back() = counters.getInt();
        appendBufferArg(kernel, "counters", fb::DType::i32);
      }
      FailureOr<std::vector<GpuScratchOp>> scratch =
          scratchProgram(module, func, kernel);
      if (failed(scratch))
        return failure();
      library.scratch.push_back(std::move(*scratch));
      continue;
    }
    auto grid =
        func ? func->getAttrOfType<ArrayAttr>(kGpuGridAttrName) : nullptr;
    if (!grid || grid.size() != 3)
      return module.emitError("GPU kernel '") << kernel.name << "' has no grid";
    for (int d = 0; d < 3; ++d) {
      auto entry = cast<DenseI64ArrayAttr>(grid[d]).asArrayRef();
      if (entry[0] < 0)
        dims[d].blocks = entry[1];
      else
        dims[d] = {entry[0], entry[1], 1};
      if (entry.size() > 2)
        dims[d].cap = entry[2];
      if (entry.size() > 5) {
        dims[d].floorArgument = entry[3];
        dims[d].floorDim = entry[4];
        dims[d].floor = entry[5];
      }
    }
    if (emptyTwins.contains(kernel.name))
      dims[0] = GpuGridDim{/*argument=*/-1, /*dim=*/0, /*blocks=*/0};
    library.grids.push_back(dims);
    library.counters.push_back(0);
    FailureOr<std::vector<GpuScratchOp>> scratch =
        scratchProgram(module, func, kernel);
    if (failed(scratch))
      return failure();
    library.scratch.push_back(std::move(*scratch));
  }

  // The kernels in the order of the kernel functions (the matrix-unit
  // kernels were created first).
  if (gpuModule)
    for (const KernelDesc &kernel : library.kernels)
      if (Operation *func = gpuModule.lookupSymbol(kernel.name))
        func->moveBefore(gpuModule.getBody(), gpuModule.getBody()->end());

  // Subviews and affine index math inside the kernels, then the chip's
  // device pipeline down to the binary (`format` bin) or assembly (isa).
  auto compileTo = [&](ModuleOp kernels,
                       StringRef format) -> FailureOr<std::string> {
    PassManager binaryPm(module.getContext());
    OpPassManager &device = binaryPm.nest<gpu::GPUModuleOp>();
    device.addPass(memref::createExpandStridedMetadataPass());
    device.addPass(createLowerAffinePass());
    BinaryOptions options;
    options.format = format.str();
    options.toolkit = toolkit.str();
    if (options.toolkit.empty() && nvidia)
      options.toolkit = "/usr/local/cuda";
    if (failed(target->buildBinaryPipeline(binaryPm, options)))
      return module.emitError("no binary pipeline for chip '") << chip << "'";
    if (failed(binaryPm.run(kernels)))
      return module.emitError("compiling the kernels for ")
             << chip << " failed";
    auto binary = kernels.lookupSymbol<gpu::BinaryOp>("strata_kernels");
    if (!binary || binary.getObjects().size() != 1)
      return module.emitError("the ") << chip << " pipeline made no binary";
    auto object = cast<gpu::ObjectAttr>(binary.getObjects()[0]);
    return object.getObject().getValue().str();
  };
  if (!isaDir.empty()) {
    auto write = [&](StringRef name,
                     llvm::function_ref<void(raw_ostream &)> body)
        -> LogicalResult {
      SmallString<256> path(isaDir);
      llvm::sys::path::append(path, name);
      std::error_code error;
      llvm::raw_fd_ostream os(path, error);
      if (error)
        return module.emitError("cannot write '")
               << path << "': " << error.message();
      body(os);
      return success();
    };
    // The kernels in the GPU dialect, generic form (what the IR
    // interpreter of test/Tools/Inputs/gpu_ir_interpreter.py runs).
    if (failed(write(chip.str() + ".gpu.mlir", [&](raw_ostream &os) {
          if (gpuModule)
            gpuModule->print(os, OpPrintingFlags().printGenericOpForm());
        })))
      return failure();
    OwningOpRef<ModuleOp> copy = lowered->clone();
    FailureOr<std::string> isa = compileTo(*copy, "isa");
    if (failed(isa))
      return failure();
    if (failed(write(chip.str() + (nvidia ? ".ptx" : ".s"),
                     [&](raw_ostream &os) { os << *isa; })))
      return failure();
  }
  FailureOr<std::string> bytes = compileTo(*lowered, "bin");
  if (failed(bytes))
    return failure();
  library.binary.format =
      nvidia ? fb::BinaryFormat::cubin : fb::BinaryFormat::hsaco;
  library.binary.data.assign(bytes->begin(), bytes->end());
  return library;
}
