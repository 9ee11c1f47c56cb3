//===- CpuKernelCompiler.cpp - AOT-compile CPU kernels to a .so -----------===//
//
// Part of strata. See CpuKernelCompiler.h.
//
//===----------------------------------------------------------------------===//

#include "lib/Target/CPU/CpuKernelCompiler.h"
#include "lib/Pipelines/Pipelines.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Triple.h"

using namespace mlir;
using namespace mlir::strata;

std::string mlir::strata::cpuEntrySymbol(llvm::StringRef name) {
  return ("_strata_entry_" + name).str();
}

void mlir::strata::buildCpuLoweringPipeline(OpPassManager &pm) {
  // The `target` phase for the host CPU: the same passes strata-opt
  // --strata-target runs (incl. bf16 <-> f32 as integer code).
  PipelineOptions options;
  options.target = "cpu";
  (void)buildTargetPipeline(pm, options);
}

//===----------------------------------------------------------------------===//
// Kernel ABI from func signatures
//===----------------------------------------------------------------------===//

FailureOr<fb::DType> mlir::strata::toArtifactDType(Type type) {
  if (type.isF32())
    return fb::DType::f32;
  if (type.isF16())
    return fb::DType::f16;
  if (type.isBF16())
    return fb::DType::bf16;
  if (type.isF64())
    return fb::DType::f64;
  if (isa<Float8E4M3FNType>(type))
    return fb::DType::f8e4m3fn;
  if (isa<Float8E5M2Type>(type))
    return fb::DType::f8e5m2;
  if (type.isIndex() || type.isInteger(64))
    return fb::DType::i64;
  if (type.isInteger(32))
    return fb::DType::i32;
  if (type.isInteger(8))
    return fb::DType::i8;
  if (type.isInteger(1))
    return fb::DType::boolean;
  return failure();
}

FailureOr<KernelDesc> mlir::strata::describeKernelSignature(func::FuncOp func) {
  KernelDesc kernel;
  kernel.name = func.getSymName().str();
  kernel.entrySymbol = cpuEntrySymbol(func.getSymName());
  kernel.binaryIndex = 0;
  if (func.getNumResults() != 0)
    return func.emitError("kernel '")
           << func.getSymName()
           << "' returns values; kernels write results to buffer arguments";
  for (auto [i, type] : llvm::enumerate(func.getArgumentTypes())) {
    KernelArgDesc arg;
    arg.name = "arg" + std::to_string(i);
    if (auto memref = dyn_cast<MemRefType>(type)) {
      if (!memref.getLayout().isIdentity())
        return func.emitError("kernel argument ")
               << i << " has a non-identity layout: " << type;
      FailureOr<fb::DType> dtype = toArtifactDType(memref.getElementType());
      if (failed(dtype))
        return func.emitError("kernel argument ")
               << i << " has unsupported element type "
               << memref.getElementType();
      arg.kind = fb::ArgKind::buffer;
      arg.dtype = *dtype;
      for (int64_t extent : memref.getShape())
        arg.staticShape.push_back(ShapedType::isDynamic(extent) ? -1 : extent);
    } else {
      FailureOr<fb::DType> dtype = toArtifactDType(type);
      if (failed(dtype) ||
          (*dtype != fb::DType::f32 && *dtype != fb::DType::f64 &&
           *dtype != fb::DType::i32 && *dtype != fb::DType::i64))
        return func.emitError("kernel argument ")
               << i << " has unsupported scalar type " << type
               << " (expected i32, i64, index, f32 or f64)";
      arg.kind = fb::ArgKind::scalar;
      arg.dtype = *dtype;
    }
    kernel.args.push_back(std::move(arg));
  }
  return kernel;
}

//===----------------------------------------------------------------------===//
// LLVM IR: packed entry points, optimization, object emission
//===----------------------------------------------------------------------===//

/// Adds `void entry(ptr args)` calling `callee` with *args[i] as parameter i.
static void addPackedEntry(llvm::Module &module, llvm::Function &callee,
                           llvm::StringRef entryName) {
  llvm::LLVMContext &ctx = module.getContext();
  auto *ptrTy = llvm::PointerType::getUnqual(ctx);
  auto *type =
      llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), {ptrTy}, false);
  auto *entry = llvm::Function::Create(type, llvm::GlobalValue::ExternalLinkage,
                                       entryName, module);
  llvm::IRBuilder<> builder(llvm::BasicBlock::Create(ctx, "entry", entry));
  llvm::SmallVector<llvm::Value *> args;
  for (auto [i, param] : llvm::enumerate(callee.args())) {
    llvm::Value *slot = builder.CreateConstGEP1_64(ptrTy, entry->getArg(0), i);
    llvm::Value *valuePtr = builder.CreateLoad(ptrTy, slot);
    args.push_back(builder.CreateLoad(param.getType(), valuePtr));
  }
  builder.CreateCall(&callee, args);
  builder.CreateRetVoid();
}

static std::unique_ptr<llvm::TargetMachine>
createTargetMachine(const CpuCompileOptions &options, std::string &error) {
  LLVMInitializeX86TargetInfo();
  LLVMInitializeX86Target();
  LLVMInitializeX86TargetMC();
  LLVMInitializeX86AsmPrinter();
  llvm::Triple triple(options.triple);
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return nullptr;
  llvm::TargetOptions targetOptions;
  return std::unique_ptr<llvm::TargetMachine>(target->createTargetMachine(
      triple, options.cpu, /*Features=*/"", targetOptions, llvm::Reloc::PIC_,
      std::nullopt, llvm::CodeGenOptLevel::Aggressive));
}

static void optimize(llvm::Module &module, llvm::TargetMachine &tm) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder pb(&tm);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager mpm =
      pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
  mpm.run(module, mam);
}

//===----------------------------------------------------------------------===//
// Linking
//===----------------------------------------------------------------------===//

static std::string findLinker(const CpuCompileOptions &options) {
  if (!options.linkerPath.empty())
    return options.linkerPath;
  for (const char *name : {"ld.lld", "ld.lld-22"}) {
    if (auto path = llvm::sys::findProgramByName(name, {STRATA_LLVM_TOOLS_DIR}))
      return *path;
    if (auto path = llvm::sys::findProgramByName(name))
      return *path;
  }
  return "";
}

/// Links `objectPath` into `outputPath`; on failure returns the message with a
/// repro command line.
static LogicalResult linkSharedObject(const std::string &linker,
                                      llvm::StringRef objectPath,
                                      llvm::StringRef outputPath,
                                      std::string &error) {
  llvm::SmallVector<std::string> args = {
      linker,
      "-shared",
      "--no-undefined",
      "-z",
      "noexecstack",
      "--hash-style=gnu",
      "--build-id=none",
      "-soname",
      "libstrata_kernels.so",
      "-L/lib/x86_64-linux-gnu",
      "-L/usr/lib/x86_64-linux-gnu",
      objectPath.str(),
      "--as-needed",
      "-lm",
      "-lc",
      "-o",
      outputPath.str()};
  llvm::SmallString<128> errPath;
  if (llvm::sys::fs::createTemporaryFile("strata-lld", "err", errPath)) {
    error = "cannot create a temporary file";
    return failure();
  }
  llvm::FileRemover errRemover(errPath);
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, errPath.str(),
                                                errPath.str()};
  llvm::SmallVector<llvm::StringRef> argRefs(args.begin(), args.end());
  std::string execError;
  int rc = linker.empty() ? -1
                          : llvm::sys::ExecuteAndWait(linker, argRefs,
                                                      std::nullopt, redirects,
                                                      0, 0, &execError);
  if (rc == 0)
    return success();
  std::string output;
  if (auto buffer = llvm::MemoryBuffer::getFile(errPath))
    output = (*buffer)->getBuffer().trim().str();
  std::string repro;
  llvm::raw_string_ostream os(repro);
  llvm::interleave(args, os, " ");
  if (linker.empty())
    error = "ld.lld not found (looked in " STRATA_LLVM_TOOLS_DIR
            " and PATH for ld.lld, ld.lld-22)";
  else if (rc < 0)
    error = "cannot run '" + linker + "': " + execError;
  else
    error = "ld.lld failed (exit " + std::to_string(rc) + ")" +
            (output.empty() ? "" : ": " + output);
  error += "\nrepro: " + repro;
  return failure();
}

//===----------------------------------------------------------------------===//
// Driver
//===----------------------------------------------------------------------===//

FailureOr<CpuKernelLibrary>
mlir::strata::compileCpuKernels(ModuleOp module,
                                const CpuCompileOptions &options) {
  CpuKernelLibrary library;
  for (auto func : module.getOps<func::FuncOp>()) {
    if (func.isExternal() || !func.isPublic())
      continue;
    FailureOr<KernelDesc> kernel = describeKernelSignature(func);
    if (failed(kernel))
      return failure();
    library.kernels.push_back(std::move(*kernel));
    SourceLocationDesc loc;
    if (auto fileLoc = dyn_cast<FileLineColLoc>(func.getLoc())) {
      loc.file = fileLoc.getFilename().str();
      loc.line = fileLoc.getLine();
      loc.column = fileLoc.getColumn();
    }
    loc.note = func.getSymName().str();
    library.locations.push_back(std::move(loc));
  }
  if (library.kernels.empty())
    return module.emitError("no public func.func kernels to compile");

  OwningOpRef<ModuleOp> lowered = module.clone();
  MLIRContext *context = module.getContext();
  PassManager pm(context);
  buildCpuLoweringPipeline(pm);
  if (failed(pm.run(*lowered)))
    return module.emitError("lowering kernels to the LLVM dialect failed");

  DialectRegistry registry;
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  context->appendDialectRegistry(registry);
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(*lowered, llvmContext, "strata_kernels");
  if (!llvmModule)
    return module.emitError("translation to LLVM IR failed");

  for (const KernelDesc &kernel : library.kernels) {
    llvm::Function *callee = llvmModule->getFunction(kernel.name);
    if (!callee)
      return module.emitError("lowered kernel '") << kernel.name
                                                  << "' is missing";
    addPackedEntry(*llvmModule, *callee, kernel.entrySymbol);
  }

  std::string error;
  std::unique_ptr<llvm::TargetMachine> tm = createTargetMachine(options, error);
  if (!tm)
    return module.emitError("cannot create a target machine for '")
           << options.triple << "' cpu '" << options.cpu << "': " << error;
  llvmModule->setTargetTriple(tm->getTargetTriple());
  llvmModule->setDataLayout(tm->createDataLayout());
  optimize(*llvmModule, *tm);

  llvm::SmallVector<char, 0> object;
  {
    llvm::raw_svector_ostream os(object);
    llvm::legacy::PassManager codegen;
    if (tm->addPassesToEmitFile(codegen, os, nullptr,
                                llvm::CodeGenFileType::ObjectFile))
      return module.emitError("the target machine cannot emit objects");
    codegen.run(*llvmModule);
  }

  // Link through temporary files; keep the object if the linker fails so the
  // repro command works.
  llvm::SmallString<128> objectPath, soPath;
  int objectFd;
  if (llvm::sys::fs::createTemporaryFile("strata-kernels", "o", objectFd,
                                         objectPath) ||
      llvm::sys::fs::createTemporaryFile("strata-kernels", "so", soPath))
    return module.emitError("cannot create temporary files");
  {
    llvm::raw_fd_ostream os(objectFd, /*shouldClose=*/true);
    os.write(object.data(), object.size());
  }
  llvm::FileRemover soRemover(soPath);
  std::string linker = findLinker(options);
  if (failed(linkSharedObject(linker, objectPath, soPath, error)))
    return module.emitError("linking the kernel shared object failed: ")
           << error;
  llvm::sys::fs::remove(objectPath);
  auto buffer = llvm::MemoryBuffer::getFile(soPath);
  if (!buffer)
    return module.emitError("cannot read the linked kernel shared object");
  library.sharedObject.assign((*buffer)->getBufferStart(),
                              (*buffer)->getBufferEnd());
  return library;
}
