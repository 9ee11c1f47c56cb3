//===- DSLParserFuzzer.cpp - libFuzzer target of the DSL parser -----------===//
//
// Part of strata, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
//
// Feeds arbitrary bytes to the lexer and parser (and the AST dump of what
// parses). Diagnostics are swallowed; the only failure is a crash or an
// AddressSanitizer report. Run by test/Frontend/fuzz-parser.test over a seed
// corpus of the real model files.
//
//===----------------------------------------------------------------------===//

#include "lib/Frontend/AST.h"
#include "lib/Frontend/Parser.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static mlir::MLIRContext *context = [] {
    auto *ctx = new mlir::MLIRContext(mlir::MLIRContext::Threading::DISABLED);
    ctx->getDiagEngine().registerHandler(
        [](mlir::Diagnostic &) { return mlir::success(); });
    return ctx;
  }();
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(
          llvm::StringRef(reinterpret_cast<const char *>(data), size),
          "fuzz.dsl"),
      llvm::SMLoc());
  std::unique_ptr<mlir::strata::dsl::ModuleAST> module =
      mlir::strata::dsl::parseBuffer(sourceMgr, sourceMgr.getMainFileID(),
                                     context);
  if (module) {
    std::string text;
    llvm::raw_string_ostream os(text);
    mlir::strata::dsl::dump(*module, os);
  }
  return 0;
}
