//===- Parser.h - parser of the strata model DSL ----------------*- C++ -*-===//
//
// Part of strata, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
//
// Recursive-descent parser of the model DSL (grammar in docs/DSL.md and above
// each parse function in Parser.cpp). Errors are MLIR diagnostics at the DSL
// file:line:col (emitted into the given MLIRContext, so a
// SourceMgrDiagnosticHandler prints them with the source line); the parser
// stops at the first error and returns null. It never prints by itself.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_LIB_FRONTEND_PARSER_H
#define STRATA_LIB_FRONTEND_PARSER_H

#include "lib/Frontend/AST.h"

#include "mlir/IR/Location.h"
#include "mlir/IR/MLIRContext.h"

#include "llvm/Support/SourceMgr.h"

#include <memory>

namespace mlir::strata::dsl {

/// Converts a DSL location to an MLIR FileLineColLoc.
mlir::Location toMLIRLoc(MLIRContext *ctx, const Location &loc);

/// Parses buffer `bufferId` of `sourceMgr` without following its imports
/// (import items are recorded in ModuleAST::imports). Used by the fuzzer.
std::unique_ptr<ModuleAST> parseBuffer(llvm::SourceMgr &sourceMgr,
                                       unsigned bufferId, MLIRContext *ctx);

/// Parses buffer `bufferId` and, recursively, every file it imports (paths
/// relative to the importing file; each file once). Imported functions
/// precede the importer's in the result. Missing files are diagnostics at the
/// `import` item.
std::unique_ptr<ModuleAST> parseModuleWithImports(llvm::SourceMgr &sourceMgr,
                                                  unsigned bufferId,
                                                  MLIRContext *ctx);

} // namespace mlir::strata::dsl

#endif // STRATA_LIB_FRONTEND_PARSER_H
