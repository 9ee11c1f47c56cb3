//===- BuildTestArtifact.cpp - build the end-to-end test artifact ---------===//
//
// Part of strata. strata-artifact-build-test: a test-only compiler driver (not
// strata-compile) that compiles the kernels of an MLIR file for the CPU with
// lib/Target/CPU and packages them with lib/Artifact into an artifact whose
// plans compute out = silu(x @ w) * 0.5:
//   prefill: x [num_tokens, 8], decode: x [num_requests, 8]; w is weight 0
//   [8, 16] f32 of the manifest. The input file must define
//   @matmul(memref<?x8xf32>, memref<8x16xf32>, memref<?x16xf32>) and
//   @silu_scale(memref<?x?xf32>, memref<?x?xf32>, f32).
// The model, cache layout and the rest of the manifest follow the tiny bf16
// test config, so strata-dump has every section to print.
//
//===----------------------------------------------------------------------===//

#include "lib/Artifact/ArtifactWriter.h"
#include "lib/Artifact/ModelConfig.h"
#include "lib/Target/CPU/CpuKernelCompiler.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/WithColor.h"

using namespace mlir;
using namespace mlir::strata;

static llvm::cl::opt<std::string> inputFile(llvm::cl::Positional,
                                            llvm::cl::desc("<kernels.mlir>"),
                                            llvm::cl::Required);
static llvm::cl::opt<std::string> outputFile("o", llvm::cl::desc("output"),
                                             llvm::cl::Required);
static llvm::cl::opt<unsigned>
    formatVersion("format-version", llvm::cl::desc("format version to write"),
                  llvm::cl::init(kArtifactFormatVersion));
static llvm::cl::opt<std::string> cpu("cpu", llvm::cl::desc("CPU baseline"),
                                      llvm::cl::init("x86-64-v2"));
static llvm::cl::opt<std::string> linker("linker",
                                         llvm::cl::desc("ld.lld to use"));
static llvm::cl::opt<std::string> modelConfig(
    "model-config",
    llvm::cl::desc("config.json for the model section and cache layout "
                   "(default: a built-in copy of the tiny bf16 config)"));
static llvm::cl::opt<uint32_t> tensorParallelSize(
    "tensor-parallel-size",
    llvm::cl::desc("write a parallel layout of T x E ranks: test.fp8_w "
                   "split on dimension 0 over tp (and 1 over ep), each "
                   "part inside its one 128-block"),
    llvm::cl::init(1));
static llvm::cl::opt<uint32_t>
    expertParallelSize("expert-parallel-size",
                       llvm::cl::desc("E of the parallel layout"),
                       llvm::cl::init(1));
static llvm::cl::opt<uint32_t>
    numSpeculative("num-speculative",
                   llvm::cl::desc("MTP tokens sizing the tail ring"),
                   llvm::cl::init(3));

static ModelDesc tinyModel() {
  ModelDesc m;
  m.name = "artifact-test";
  m.vocabSize = 512;
  m.hiddenSize = 256;
  m.numHiddenLayers = 5;
  m.numNextnPredictLayers = 1;
  m.layerKinds = {fb::LayerKind::kda, fb::LayerKind::kda, fb::LayerKind::kda,
                  fb::LayerKind::mla, fb::LayerKind::kda};
  m.mlpKinds = {fb::MlpKind::dense, fb::MlpKind::moe, fb::MlpKind::moe,
                fb::MlpKind::moe, fb::MlpKind::moe};
  m.numAttentionHeads = 2;
  m.kvLoraRank = 512;
  m.qLoraRank = 256;
  m.qkNopeHeadDim = 256;
  m.qkRopeHeadDim = 0;
  m.vHeadDim = 256;
  m.indexNHeads = 2;
  m.indexHeadDim = 128;
  m.indexTopk = 64;
  m.indexKpool = 4;
  m.hcMult = 4;
  m.nRoutedExperts = 16;
  m.nSharedExperts = 1;
  m.numExpertsPerTok = 4;
  m.kdaNumHeads = 2;
  m.kdaHeadDim = 128;
  m.shortConvKernelSize = 4;
  m.rmsNormEps = 1e-5f;
  m.maxPositionEmbeddings = 4096;
  m.eosTokenId = 1;
  m.padTokenId = 0;
  return m;
}

/// out = silu(x @ w) * 0.5 for `rows` rows of x.
static PlanDesc makePlan(fb::StepKind step, fb::SizeSymbol rowsSymbol,
                         uint32_t matmul, uint32_t silu) {
  SizeExpression rows = SizeExpression::symbol(rowsSymbol);
  auto c = SizeExpression::constant;
  PlanDesc plan;
  plan.step = step;
  plan.buffers = {{"x", fb::BufferKind::input, rows * 8 * 4},
                  {"hidden", fb::BufferKind::activation, rows * 16 * 4},
                  {"out", fb::BufferKind::output, rows * 16 * 4}};
  plan.dispatches.push_back(
      {matmul,
       {BindingDesc::buffer(0, {rows, c(8)}),
        BindingDesc::weight(0, {c(8), c(16)}),
        BindingDesc::buffer(1, {rows, c(16)})},
       "proj"});
  plan.dispatches.push_back({silu,
                             {BindingDesc::buffer(1, {rows, c(16)}),
                              BindingDesc::buffer(2, {rows, c(16)}),
                              BindingDesc::floatScalar(0.5)},
                             "act"});
  return plan;
}

static LogicalResult run(MLIRContext &context) {
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler handler(sourceMgr, &context);
  OwningOpRef<ModuleOp> module =
      parseSourceFile<ModuleOp>(inputFile, sourceMgr, &context);
  if (!module)
    return failure();
  CpuCompileOptions options;
  options.cpu = cpu;
  options.linkerPath = linker;
  FailureOr<CpuKernelLibrary> library = compileCpuKernels(*module, options);
  if (failed(library))
    return failure();

  TargetDesc target;
  target.kind = fb::TargetKind::cpu;
  target.chip = options.cpu;
  target.binaries.push_back({fb::BinaryFormat::elf_so, library->sharedObject});
  target.kernels = library->kernels;
  std::optional<uint32_t> matmul, silu;
  for (auto [i, kernel] : llvm::enumerate(target.kernels)) {
    if (kernel.name == "matmul")
      matmul = i;
    if (kernel.name == "silu_scale")
      silu = i;
  }
  if (!matmul || !silu)
    return module->emitError("expected kernels @matmul and @silu_scale");
  target.plans.push_back(makePlan(fb::StepKind::prefill,
                                  fb::SizeSymbol::num_tokens, *matmul, *silu));
  target.plans.push_back(makePlan(fb::StepKind::decode,
                                  fb::SizeSymbol::num_requests, *matmul, *silu));

  ArtifactDesc artifact;
  artifact.formatVersion = formatVersion;
  artifact.producer = "strata-artifact-build-test";
  artifact.model = tinyModel();
  if (!modelConfig.empty()) {
    llvm::Expected<ModelDesc> model = readModelConfigFile(modelConfig);
    if (!model) {
      llvm::WithColor::error() << llvm::toString(model.takeError()) << "\n";
      return failure();
    }
    artifact.model = std::move(*model);
  }
  artifact.targets.push_back(std::move(target));
  artifact.cacheLayout = computeCacheLayout(
      artifact.model, {/*pageSizeTokens=*/64, /*alignment=*/256,
                       numSpeculative});
  artifact.weights.push_back({"test.w", fb::DType::f32, {8, 16},
                              fb::WeightTransform::none, fb::DType::f32, "",
                              fb::DType::invalid, {}, {}, {}});
  artifact.weights.push_back(
      {"test.fp8_w", fb::DType::f8e4m3fn, {16, 16},
       fb::WeightTransform::fp8_dequant, fb::DType::bf16,
       "test.fp8_w_scale_inv", fb::DType::f32, {1, 1}, {}, {}});
  if (tensorParallelSize * expertParallelSize > 1) {
    WeightDesc &w = artifact.weights[1];
    w.scaleBlock = {128, 128};
    if (tensorParallelSize > 1) {
      w.shape[0] /= tensorParallelSize;
      w.shards.push_back({0, tensorParallelSize, fb::RankGroup::tp});
    }
    if (expertParallelSize > 1) {
      w.shape[1] /= expertParallelSize;
      w.shards.push_back({1, expertParallelSize, fb::RankGroup::ep});
    }
    artifact.parallel = computeParallelLayout(
        artifact.weights, tensorParallelSize, expertParallelSize);
  }
  for (auto [i, loc] : llvm::enumerate(library->locations))
    artifact.debugKernels.push_back({fb::TargetKind::cpu,
                                     static_cast<uint32_t>(i),
                                     {loc}});
  if (llvm::Error error = writeArtifactFile(artifact, outputFile)) {
    llvm::WithColor::error() << llvm::toString(std::move(error)) << "\n";
    return failure();
  }
  return success();
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  llvm::cl::ParseCommandLineOptions(argc, argv,
                                    "strata artifact end-to-end test builder\n");
  DialectRegistry registry;
  registry.insert<arith::ArithDialect, func::FuncDialect,
                  linalg::LinalgDialect, math::MathDialect,
                  memref::MemRefDialect>();
  MLIRContext context(registry);
  return failed(run(context)) ? 1 : 0;
}
