//===- Driver.cpp - the library behind strata-compile ---------------------===//
//
// Part of strata, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "lib/Driver/Driver.h"
#include "dialects/llm/IR/LLMDialect.h"
#include "lib/Artifact/ModelConfig.h"
#include "lib/Driver/ArtifactEmitter.h"
#include "lib/Frontend/Config.h"
#include "lib/Frontend/MLIRGen.h"
#include "lib/Frontend/Parser.h"
#include "lib/InitAll.h"
#include "lib/Pipelines/Pipelines.h"
#include "lib/Tools/ToolCommandLine.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/AsmState.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/Support/FileUtilities.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace mlir;
using namespace mlir::strata;

llvm::StringRef mlir::strata::stringifyCompilePhase(CompilePhase phase) {
  switch (phase) {
  case CompilePhase::Ast: return "ast";
  case CompilePhase::Llm: return "llm";
  case CompilePhase::Fused: return "fused";
  case CompilePhase::Kernel: return "kernel";
  case CompilePhase::Target: return "target";
  case CompilePhase::Artifact: return "artifact";
  }
  llvm_unreachable("unknown phase");
}

namespace {
LogicalResult printModule(ModuleOp module, llvm::raw_ostream &os) {
  OpPrintingFlags flags;
  flags.printNameLocAsPrefix();
  module->print(os, flags);
  return success();
}

/// Compiles with diagnostics already routed to a handler.
LogicalResult compileWithHandler(const CompileOptions &options,
                                 MLIRContext &context,
                                 llvm::SourceMgr &sourceMgr,
                                 llvm::raw_ostream &os) {
  auto note = [&](const std::string &text) {
    if (options.progress)
      options.progress->note(text);
  };
  note("parsing the DSL");
  std::unique_ptr<dsl::ModuleAST> ast =
      dsl::parseModuleWithImports(sourceMgr, sourceMgr.getMainFileID(),
                                  &context);
  if (!ast)
    return failure();
  if (options.phase == CompilePhase::Ast) {
    dsl::dump(*ast, os);
    return success();
  }

  if (options.configPath.empty())
    return mlir::emitError(UnknownLoc::get(&context))
           << "--config=<config.json> is required for --compile-to="
           << stringifyCompilePhase(options.phase);
  dsl::DslOptions dslOptions;
  if (options.kvCacheDtype == "fp8")
    dslOptions.kvCacheDtype = "f8E4M3FN";
  else if (options.kvCacheDtype != "bf16")
    return mlir::emitError(UnknownLoc::get(&context))
           << "unknown kv cache dtype '" << options.kvCacheDtype
           << "' (expected bf16 or fp8)";
  if (!options.indexer.empty() && options.indexer != "pooled" &&
      options.indexer != "dense")
    return mlir::emitError(UnknownLoc::get(&context))
           << "unknown indexer '" << options.indexer
           << "' (expected pooled or dense)";
  dslOptions.indexer = options.indexer.empty() ? "config" : options.indexer;
  if (options.indexCacheDtype == "fp8")
    dslOptions.indexCacheDtype = "f8E4M3FN";
  else if (options.indexCacheDtype != "bf16")
    return mlir::emitError(UnknownLoc::get(&context))
           << "unknown index cache dtype '" << options.indexCacheDtype
           << "' (expected bf16 or fp8)";
  if (options.tensorParallelSize < 1 || options.expertParallelSize < 1)
    return mlir::emitError(UnknownLoc::get(&context))
           << "--tensor-parallel-size and --expert-parallel-size must be at "
              "least 1, got "
           << options.tensorParallelSize << " and "
           << options.expertParallelSize;
  dslOptions.tensorParallelSize = options.tensorParallelSize;
  dslOptions.expertParallelSize = options.expertParallelSize;
  note("building llm IR");
  auto config = dsl::ModelConfig::load(options.configPath, &context);
  if (failed(config))
    return failure();
  OwningOpRef<ModuleOp> module =
      dsl::mlirGen(context, *ast, **config, dslOptions);
  if (!module)
    return failure();
  if (options.phase == CompilePhase::Llm)
    return printModule(*module, os);

  // The phases after llm run the shared pipeline builders (Pipelines.h).
  // Targets: the kernel phase is shared; each target compiles the same
  // kernel functions (GPU: convert-kernels-to-gpu).
  SmallVector<StringRef> targets;
  StringRef(options.target).split(targets, ',', -1, /*KeepEmpty=*/false);
  if (targets.empty())
    return mlir::emitError(UnknownLoc::get(&context))
           << "--target needs at least one of cpu, sm_90, sm_90a, gfx942, "
              "gfx950";
  for (auto [i, name] : llvm::enumerate(targets)) {
    if (!llvm::is_contained({"cpu", "sm_90", "sm_90a", "gfx942", "gfx950"},
                            name))
      return mlir::emitError(UnknownLoc::get(&context))
             << "target '" << name
             << "' has no code generation (available: cpu, sm_90, sm_90a, "
                "gfx942, gfx950)";
    if (llvm::is_contained(ArrayRef(targets).take_front(i), name))
      return mlir::emitError(UnknownLoc::get(&context))
             << "target '" << name << "' is listed twice";
  }
  if (options.phase == CompilePhase::Target &&
      (targets.size() != 1 || targets[0] != "cpu"))
    return mlir::emitError(UnknownLoc::get(&context))
           << "--compile-to=target prints the cpu target only; GPU targets "
              "go to the artifact (--compile-to=artifact)";
  PipelineOptions pipelineOptions;
  pipelineOptions.target = "cpu";
  pipelineOptions.activationType = options.activationType;
  pipelineOptions.expertActivations = options.expertActivations;
  pipelineOptions.fuseHyperConnections = options.fuseHyperConnections;
  pipelineOptions.tensorParallelSize = options.tensorParallelSize;
  pipelineOptions.expertParallelSize = options.expertParallelSize;
  note(options.phase >= CompilePhase::Kernel ? "fused and kernel phases"
                                             : "fused phase");
  PassManager pm(&context);
  if (options.expertActivations != "bf16" && options.expertActivations != "fp8")
    return mlir::emitError(UnknownLoc::get(&context))
           << "unknown expert activation type '" << options.expertActivations
           << "' (expected bf16 or fp8)";
  for (const std::string &name : options.gpuGenericStrategies) {
    std::optional<llm::GpuStrategy> strategy = llm::symbolizeGpuStrategy(name);
    if (!strategy || *strategy == llm::GpuStrategy::Generic ||
        *strategy == llm::GpuStrategy::EmptyTwin)
      return mlir::emitError(UnknownLoc::get(&context))
             << "unknown GPU strategy '" << name
             << "' in --gpu-generic-strategies (expected a builder's "
                "strategy, e.g. kda_decode or tiled_matmul)";
  }
  if (failed(buildFusedPipeline(pm, pipelineOptions)))
    return mlir::emitError(UnknownLoc::get(&context))
           << "unknown activation type '" << options.activationType
           << "' (expected bf16 or f32)";
  if (options.phase >= CompilePhase::Kernel)
    buildKernelPipeline(pm, pipelineOptions);
  if (failed(pm.run(*module)))
    return failure();
  if (options.phase == CompilePhase::Fused ||
      options.phase == CompilePhase::Kernel)
    return printModule(*module, os);
  if (options.phase == CompilePhase::Target) {
    note("target phase (cpu)");
    PassManager targetPm(&context);
    (void)buildTargetPipeline(targetPm, pipelineOptions);
    if (failed(targetPm.run(*module)))
      return failure();
    return printModule(*module, os);
  }

  // artifact
  auto model = readModelConfigFile(options.configPath);
  if (!model)
    return mlir::emitError(UnknownLoc::get(&context))
           << llvm::toString(model.takeError());
  ArtifactEmitOptions emitOptions;
  emitOptions.model = std::move(*model);
  emitOptions.model.activationDtype = options.activationType == "f32"
                                          ? ::strata::artifact::DType::f32
                                          : ::strata::artifact::DType::bf16;
  emitOptions.producer =
      "strata-compile (activations " + options.activationType +
      (options.expertActivations == "fp8" ? ", expert activations fp8" : "") +
      ", kv cache " + options.kvCacheDtype + ", indexer " +
      (options.indexer.empty() ? std::string("from config") : options.indexer) +
      ", index cache " + options.indexCacheDtype + ")";
  emitOptions.targets.assign(targets.begin(), targets.end());
  emitOptions.gpuToolkit = options.gpuToolkit;
  emitOptions.rocmToolkit = options.rocmToolkit;
  emitOptions.gpuIsaDir = options.gpuIsaDir;
  emitOptions.gpuCodegen.blockThreads = options.gpuBlockThreads;
  emitOptions.gpuCodegen.matrixUnits = options.gpuMatrixUnits;
  emitOptions.gpuCodegen.strategyRemarks = options.kernelStrategyRemarks;
  emitOptions.gpuCodegen.genericStrategies = options.gpuGenericStrategies;
  emitOptions.tensorParallelSize = options.tensorParallelSize;
  emitOptions.expertParallelSize = options.expertParallelSize;
  emitOptions.onTarget = [&](StringRef name) {
    note(("artifact: target " + name).str());
  };
  FailureOr<ArtifactDesc> artifact = emitArtifact(*module, emitOptions);
  if (failed(artifact))
    return failure();
  note("artifact: writing");
  std::vector<uint8_t> bytes = serializeArtifact(*artifact);
  os.write(reinterpret_cast<const char *>(bytes.data()), bytes.size());
  return success();
}
} // namespace

LogicalResult mlir::strata::compile(const CompileOptions &options,
                                    llvm::raw_ostream &os) {
  DialectRegistry registry;
  registerStrataDialects(registry);
  // The later phases use upstream dialects and their interface models
  // (bufferization, LLVM translation) as strata-opt does.
  registerAllDialects(registry);
  registerAllExtensions(registry);
  // GPU targets: device code to LLVM IR and the pass names the binary
  // pipelines are parsed from (TargetInfo::buildBinaryPipeline).
  registerAllGPUToLLVMIRTranslations(registry);
  static bool passesRegistered = [] {
    registerAllPasses();
    return true;
  }();
  (void)passesRegistered;
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  context.allowUnregisteredDialects(false);
  // Verifier errors point at the DSL line; the generic op dump adds nothing.
  context.printOpOnDiagnostic(false);

  std::string errorMessage;
  auto input = openInputFile(options.inputPath, &errorMessage);
  if (!input) {
    llvm::errs() << "strata-compile: " << errorMessage << "\n";
    return failure();
  }
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(input), llvm::SMLoc());

  if (options.verifyDiagnostics) {
    SourceMgrDiagnosticVerifierHandler handler(sourceMgr, &context);
    (void)compileWithHandler(options, context, sourceMgr, os);
    return handler.verify();
  }
  SourceMgrDiagnosticHandler handler(sourceMgr, &context);
  return compileWithHandler(options, context, sourceMgr, os);
}

int mlir::strata::compileMain(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  namespace cl = llvm::cl;
  // strata-compile's own options, listed first by --help ("Compile" sorts
  // before LLVM's "Generic Options"); LLVM's and MLIR's are hidden there.
  static cl::OptionCategory compileCategory("Compile options");
  static cl::opt<std::string> inputPath(cl::Positional, cl::desc("<model.dsl>"),
                                        cl::init("-"),
                                        cl::cat(compileCategory));
  static cl::opt<std::string> configPath(
      "config", cl::desc("Hugging Face config.json of the model"),
      cl::value_desc("file"), cl::cat(compileCategory));
  static cl::opt<CompilePhase> phase(
      "compile-to", cl::desc("Stop after this phase and print its output"),
      cl::init(CompilePhase::Llm),
      cl::values(
          clEnumValN(CompilePhase::Ast, "ast", "the parsed DSL (AST dump)"),
          clEnumValN(CompilePhase::Llm, "llm", "llm dialect IR"),
          clEnumValN(CompilePhase::Fused, "fused", "fused llm IR"),
          clEnumValN(CompilePhase::Kernel, "kernel", "kernel IR"),
          clEnumValN(CompilePhase::Target, "target", "target IR"),
          clEnumValN(CompilePhase::Artifact, "artifact",
                     "the flatbuffer artifact")),
      cl::cat(compileCategory));
  static cl::alias emitAlias("emit", cl::desc("Alias for --compile-to"),
                             cl::aliasopt(phase), cl::cat(compileCategory));
  static cl::opt<std::string> outputPath("o", cl::desc("Output file"),
                                         cl::value_desc("file"), cl::init("-"),
                                         cl::cat(compileCategory));
  static cl::opt<std::string> target(
      "target",
      cl::desc("Targets of code generation, a comma list of cpu, sm_90, "
               "sm_90a, gfx942, gfx950 (one TargetDef each in the artifact)"),
      cl::init("cpu"), cl::cat(compileCategory));
  static cl::opt<std::string> gpuToolkit(
      "gpu-toolkit",
      cl::desc("CUDA toolkit folder for sm_90* (bin/ptxas, nvvm/libdevice); "
               "default /usr/local/cuda"),
      cl::value_desc("dir"), cl::init(""), cl::cat(compileCategory));
  static cl::opt<std::string> rocmToolkit(
      "rocm-toolkit",
      cl::desc("ROCm-like toolkit folder for gfx942/gfx950 (llvm/bin/ld.lld, "
               "amdgcn/bitcode); default: rocm-toolkit beside the folder of "
               "strata-compile (the build's), else MLIR's lookup "
               "(ROCM_PATH, /opt/rocm)"),
      cl::value_desc("dir"), cl::init(""), cl::cat(compileCategory));
  static cl::opt<std::string> gpuIsaDir(
      "gpu-isa-dir",
      cl::desc("Also write each GPU target's assembly to <dir>/<chip>.ptx "
               "(sm_90*) or <dir>/<chip>.s (gfx942, gfx950), and its "
               "kernels in the GPU dialect to <dir>/<chip>.gpu.mlir"),
      cl::value_desc("dir"), cl::init(""), cl::cat(compileCategory));
  static cl::opt<bool> gpuBlockThreads(
      "gpu-block-threads",
      cl::desc("GPU targets: threads of a block share its rows (default); "
               "=false keeps one thread per block (for bisecting a device "
               "result)"),
      cl::init(true), cl::cat(compileCategory));
  static cl::opt<bool> gpuMatrixUnits(
      "gpu-matrix-units",
      cl::desc("GPU targets: linears that tile run on mma.sync / MFMA "
               "(default); =false keeps them generic kernels"),
      cl::init(true), cl::cat(compileCategory));
  static cl::opt<bool> kernelStrategyRemarks(
      "kernel-strategy-remarks",
      cl::desc("GPU targets: a remark for every kernel that could run on "
               "the matrix units but keeps the generic kernel, saying why"),
      cl::init(false), cl::cat(compileCategory));
  static cl::list<std::string> gpuGenericStrategies(
      "gpu-generic-strategies",
      cl::desc("GPU targets: kernels of these strategies (e.g. kda_decode) "
               "keep the generic kernel (for A/B timing or bisecting)"),
      cl::value_desc("name,..."), cl::CommaSeparated, cl::cat(compileCategory));
  static cl::opt<bool> fuseHyperConnections(
      "fuse-hyper-connections",
      cl::desc("Fold each sub-layer's input RMSNorm into its mhc_pre and its "
               "output projection into its mhc_post (default); =false keeps "
               "them separate kernels (same logits on the CPU)"),
      cl::init(true), cl::cat(compileCategory));
  static cl::opt<std::string> activationType(
      "activation-type",
      cl::desc("Element type of activations and caches: bf16 (as the model "
               "is written) or f32 (full precision, what the fp32 goldens "
               "are compared in)"),
      cl::init("bf16"), cl::cat(compileCategory));
  static cl::opt<std::string> expertActivations(
      "expert-activations",
      cl::desc("What the routed fp8 experts multiply: bf16 activations "
               "(default) or fp8 ones, quantised per token and 128-wide "
               "group as vLLM and SGLang do (fp8 x fp8 on the matrix "
               "units; docs/GPULowering.md \"fp8 expert activations\")"),
      cl::init("bf16"), cl::cat(compileCategory));
  static cl::opt<std::string> kvCacheDtype(
      "kv-cache-dtype",
      cl::desc("Element type of the MLA latent cache: bf16 (default) or fp8 "
               "(e4m3 values with one fp32 scale per 128 lanes, 528 instead "
               "of 1024 bytes per token and layer; docs/KVCache.md)"),
      cl::init("bf16"), cl::cat(compileCategory));
  static cl::opt<std::string> indexer(
      "indexer",
      cl::desc("Indexer of the MLA layers: pooled (the k-pool indexer, 4 "
               "tokens per index key) or dense (one index key per token, "
               "top-k over tokens, no compression gate, position table or "
               "tail ring; docs/DSL.md). Default: as the config's "
               "index_kpool_compress says"),
      cl::init(""), cl::cat(compileCategory));
  static cl::opt<std::string> indexCacheDtype(
      "index-cache-dtype",
      cl::desc("Element type of the indexer's key pages (pooled or dense): "
               "bf16 (default) or fp8 (Hadamard-rotated e4m3 rows with one "
               "power-of-two fp32 scale each, 132 instead of 256 bytes per "
               "row; docs/KVCache.md)"),
      cl::init("bf16"), cl::cat(compileCategory));
  static cl::opt<int64_t> tensorParallelSize(
      "tensor-parallel-size",
      cl::desc("Ranks that split attention heads, the dense MLP's and every "
               "expert's intermediate dimension and the vocabulary "
               "(llm-shard-model; default 1)"),
      cl::init(1),
      cl::cat(compileCategory));
  static cl::opt<int64_t> expertParallelSize(
      "expert-parallel-size",
      cl::desc("Ranks that split the routed experts (llm-shard-model; "
               "default 1); T * E ranks in all"),
      cl::init(1), cl::cat(compileCategory));
  static cl::opt<bool> quiet(
      cl::cat(compileCategory), "quiet",
      cl::desc("No progress lines on stderr (shown after 2 s: the phase, "
               "the target being compiled, the time so far)"),
      cl::init(false), cl::cat(compileCategory));
  static cl::alias quietShort("q", cl::desc("Alias for --quiet"),
                              cl::aliasopt(quiet), cl::cat(compileCategory));
  static cl::opt<bool> verifyDiagnostics(
      "verify-diagnostics",
      cl::desc("Check expected-* comments instead of printing diagnostics"),
      cl::init(false), cl::cat(compileCategory));
  registerAsmPrinterCLOptions();
  registerMLIRContextCLOptions();
  hideUnrelatedOptions({&compileCategory});
  setStrataVersionPrinter("strata-compile");
  cl::ParseCommandLineOptions(
      argc, argv,
      "strata model compiler: a model DSL file and its config.json to a "
      "phase's IR or\nto a .strata artifact (docs/Tools.md, docs/DSL.md)\n");

  std::string errorMessage;
  auto output = openOutputFile(outputPath, &errorMessage);
  if (!output) {
    llvm::errs() << "strata-compile: " << errorMessage << "\n";
    return 1;
  }
  CompileOptions options;
  options.inputPath = inputPath;
  options.configPath = configPath;
  options.phase = phase;
  options.verifyDiagnostics = verifyDiagnostics;
  options.target = target;
  options.gpuToolkit = gpuToolkit;
  options.rocmToolkit = rocmToolkit;
  options.gpuIsaDir = gpuIsaDir;
  options.gpuBlockThreads = gpuBlockThreads;
  options.gpuMatrixUnits = gpuMatrixUnits;
  options.kernelStrategyRemarks = kernelStrategyRemarks;
  options.gpuGenericStrategies.assign(gpuGenericStrategies.begin(),
                                      gpuGenericStrategies.end());
  if (options.rocmToolkit.empty()) {
    // build/bin/strata-compile -> build/rocm-toolkit (test/CMakeLists.txt).
    std::string exe = llvm::sys::fs::getMainExecutable(
        argv[0], reinterpret_cast<void *>(&mlir::strata::compileMain));
    llvm::SmallString<256> dir(llvm::sys::path::parent_path(
        llvm::sys::path::parent_path(exe)));
    llvm::sys::path::append(dir, "rocm-toolkit");
    if (llvm::sys::fs::is_directory(dir))
      options.rocmToolkit = std::string(dir);
  }
  options.activationType = activationType;
  options.fuseHyperConnections = fuseHyperConnections;
  options.expertActivations = expertActivations;
  options.kvCacheDtype = kvCacheDtype;
  options.indexer = indexer;
  options.indexCacheDtype = indexCacheDtype;
  options.tensorParallelSize = tensorParallelSize;
  options.expertParallelSize = expertParallelSize;
  // `-o model.strata` without --compile-to means the artifact.
  if (phase.getNumOccurrences() == 0 &&
      llvm::StringRef(outputPath).ends_with(".strata"))
    options.phase = CompilePhase::Artifact;
  ::strata::runtime::ProgressReporter progress(
      {"strata-compile", stderr, quiet});
  options.progress = &progress;
  if (failed(compile(options, output->os())))
    return 1;
  output->keep();
  return 0;
}
