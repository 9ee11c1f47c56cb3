//===- AST.h - abstract syntax tree of the strata model DSL -----*- C++ -*-===//
//
// Part of strata, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
//
// The AST of the model DSL (docs/DSL.md), shaped like the MLIR Toy tutorial's:
// expressions, statements and top-level items are class hierarchies with a
// kind enum for LLVM-style RTTI; every node keeps the Location it was parsed
// at; `dump` prints a module as an indented tree (strata-compile
// --compile-to=ast). The AST knows nothing about configs or MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_LIB_FRONTEND_AST_H
#define STRATA_LIB_FRONTEND_AST_H

#include "lib/Frontend/Lexer.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Casting.h"
#include "llvm/Support/raw_ostream.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mlir::strata::dsl {

//===----------------------------------------------------------------------===//
// Expressions
//===----------------------------------------------------------------------===//

class ExprAST {
public:
  enum ExprKind {
    Expr_Int,
    Expr_Float,
    Expr_Bool,
    Expr_None,
    Expr_String,
    Expr_Var,
    Expr_List,
    Expr_Tuple,
    Expr_Member,
    Expr_Index,
    Expr_Call,
    Expr_Binary,
    Expr_Unary,
  };
  ExprAST(ExprKind kind, Location loc) : kind(kind), loc_(std::move(loc)) {}
  virtual ~ExprAST() = default;
  ExprKind getKind() const { return kind; }
  const Location &location() const { return loc_; }

private:
  const ExprKind kind;
  Location loc_;
};

using ExprPtr = std::unique_ptr<ExprAST>;
using ExprList = std::vector<ExprPtr>;

class IntExprAST : public ExprAST {
public:
  IntExprAST(Location loc, int64_t value)
      : ExprAST(Expr_Int, std::move(loc)), value(value) {}
  int64_t getValue() const { return value; }
  static bool classof(const ExprAST *e) { return e->getKind() == Expr_Int; }

private:
  int64_t value;
};

class FloatExprAST : public ExprAST {
public:
  FloatExprAST(Location loc, double value)
      : ExprAST(Expr_Float, std::move(loc)), value(value) {}
  double getValue() const { return value; }
  static bool classof(const ExprAST *e) { return e->getKind() == Expr_Float; }

private:
  double value;
};

class BoolExprAST : public ExprAST {
public:
  BoolExprAST(Location loc, bool value)
      : ExprAST(Expr_Bool, std::move(loc)), value(value) {}
  bool getValue() const { return value; }
  static bool classof(const ExprAST *e) { return e->getKind() == Expr_Bool; }

private:
  bool value;
};

class NoneExprAST : public ExprAST {
public:
  explicit NoneExprAST(Location loc) : ExprAST(Expr_None, std::move(loc)) {}
  static bool classof(const ExprAST *e) { return e->getKind() == Expr_None; }
};

/// A string literal, split into literal text and interpolated expressions:
/// "layers.{i}.mlp" is ["layers.", i, ".mlp"].
class StringExprAST : public ExprAST {
public:
  struct Part {
    std::string text; ///< Used when `expr` is null.
    ExprPtr expr;
  };
  StringExprAST(Location loc, std::vector<Part> parts)
      : ExprAST(Expr_String, std::move(loc)), parts(std::move(parts)) {}
  const std::vector<Part> &getParts() const { return parts; }
  static bool classof(const ExprAST *e) { return e->getKind() == Expr_String; }

private:
  std::vector<Part> parts;
};

class VarExprAST : public ExprAST {
public:
  VarExprAST(Location loc, llvm::StringRef name)
      : ExprAST(Expr_Var, std::move(loc)), name(name) {}
  llvm::StringRef getName() const { return name; }
  static bool classof(const ExprAST *e) { return e->getKind() == Expr_Var; }

private:
  std::string name;
};

/// `[a, b, c]` (a list) or `(a, b)` (a tuple).
class ListExprAST : public ExprAST {
public:
  ListExprAST(Location loc, ExprList elements, bool isTuple)
      : ExprAST(isTuple ? Expr_Tuple : Expr_List, std::move(loc)),
        elements(std::move(elements)) {}
  const ExprList &getElements() const { return elements; }
  bool isTuple() const { return getKind() == Expr_Tuple; }
  static bool classof(const ExprAST *e) {
    return e->getKind() == Expr_List || e->getKind() == Expr_Tuple;
  }

private:
  ExprList elements;
};

/// `base.name`: a config key, a list's `len`, or a dialect op name.
class MemberExprAST : public ExprAST {
public:
  MemberExprAST(Location loc, ExprPtr base, llvm::StringRef name)
      : ExprAST(Expr_Member, std::move(loc)), base(std::move(base)),
        name(name) {}
  const ExprAST *getBase() const { return base.get(); }
  llvm::StringRef getName() const { return name; }
  static bool classof(const ExprAST *e) { return e->getKind() == Expr_Member; }

private:
  ExprPtr base;
  std::string name;
};

class IndexExprAST : public ExprAST {
public:
  IndexExprAST(Location loc, ExprPtr base, ExprPtr index)
      : ExprAST(Expr_Index, std::move(loc)), base(std::move(base)),
        index(std::move(index)) {}
  const ExprAST *getBase() const { return base.get(); }
  const ExprAST *getIndex() const { return index.get(); }
  static bool classof(const ExprAST *e) { return e->getKind() == Expr_Index; }

private:
  ExprPtr base, index;
};

/// One call argument, positional (empty name) or keyword.
struct ArgAST {
  Location loc;
  std::string name;
  ExprPtr value;
};

/// `callee(args)`: a block call, a builtin, or a dialect op (`llm.rms_norm`).
class CallExprAST : public ExprAST {
public:
  CallExprAST(Location loc, ExprPtr callee, std::vector<ArgAST> args)
      : ExprAST(Expr_Call, std::move(loc)), callee(std::move(callee)),
        args(std::move(args)) {}
  const ExprAST *getCallee() const { return callee.get(); }
  const std::vector<ArgAST> &getArgs() const { return args; }
  static bool classof(const ExprAST *e) { return e->getKind() == Expr_Call; }

private:
  ExprPtr callee;
  std::vector<ArgAST> args;
};

/// Binary operators; `op` is the token (a character or a tok_* value).
class BinaryExprAST : public ExprAST {
public:
  BinaryExprAST(Location loc, int op, ExprPtr lhs, ExprPtr rhs)
      : ExprAST(Expr_Binary, std::move(loc)), op(op), lhs(std::move(lhs)),
        rhs(std::move(rhs)) {}
  int getOp() const { return op; }
  const ExprAST *getLHS() const { return lhs.get(); }
  const ExprAST *getRHS() const { return rhs.get(); }
  static bool classof(const ExprAST *e) { return e->getKind() == Expr_Binary; }

private:
  int op;
  ExprPtr lhs, rhs;
};

class UnaryExprAST : public ExprAST {
public:
  UnaryExprAST(Location loc, int op, ExprPtr operand)
      : ExprAST(Expr_Unary, std::move(loc)), op(op),
        operand(std::move(operand)) {}
  int getOp() const { return op; }
  const ExprAST *getOperand() const { return operand.get(); }
  static bool classof(const ExprAST *e) { return e->getKind() == Expr_Unary; }

private:
  int op;
  ExprPtr operand;
};

/// The spelling of an operator token, for dumps and diagnostics.
llvm::StringRef getOperatorSpelling(int op);

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

/// `[d0, d1, ...] elt` (a tensor; a null dim is `?`), `(t0, t1, ...)`, or
/// the name of a variable holding a type value (`isNamed`).
struct TypeAST {
  Location loc;
  bool isTuple = false;
  bool isNamed = false;
  std::vector<ExprPtr> dims;            ///< Tensor: null entries are `?`.
  std::string elementType;              ///< Tensor: `bf16`, `f32`, ...
  Location elementLoc;                  ///< Where `elementType` was spelled.
  std::vector<std::unique_ptr<TypeAST>> elements; ///< Tuple members.
};

//===----------------------------------------------------------------------===//
// Statements
//===----------------------------------------------------------------------===//

class StmtAST {
public:
  enum StmtKind {
    Stmt_Let,
    Stmt_Assign,
    Stmt_For,
    Stmt_If,
    Stmt_Return,
    Stmt_Scope,
    Stmt_Assert,
    Stmt_Expr,
  };
  StmtAST(StmtKind kind, Location loc) : kind(kind), loc_(std::move(loc)) {}
  virtual ~StmtAST() = default;
  StmtKind getKind() const { return kind; }
  const Location &location() const { return loc_; }

private:
  const StmtKind kind;
  Location loc_;
};

using StmtPtr = std::unique_ptr<StmtAST>;
using Block = std::vector<StmtPtr>;

/// `let x: type = expr;` or `let (a, b) = expr;`.
class LetStmtAST : public StmtAST {
public:
  LetStmtAST(Location loc, std::vector<std::string> names,
             std::vector<Location> nameLocs, std::unique_ptr<TypeAST> type,
             ExprPtr value, bool destructure)
      : StmtAST(Stmt_Let, std::move(loc)), names(std::move(names)),
        nameLocs(std::move(nameLocs)), type(std::move(type)),
        value(std::move(value)), destructure(destructure) {}
  const std::vector<std::string> &getNames() const { return names; }
  const std::vector<Location> &getNameLocs() const { return nameLocs; }
  const TypeAST *getType() const { return type.get(); }
  const ExprAST *getValue() const { return value.get(); }
  bool isDestructuring() const { return destructure; }
  static bool classof(const StmtAST *s) { return s->getKind() == Stmt_Let; }

private:
  std::vector<std::string> names;
  std::vector<Location> nameLocs;
  std::unique_ptr<TypeAST> type;
  ExprPtr value;
  bool destructure;
};

/// `x = expr;` (rebinds a variable declared by `let` or a parameter).
class AssignStmtAST : public StmtAST {
public:
  AssignStmtAST(Location loc, llvm::StringRef name, ExprPtr value)
      : StmtAST(Stmt_Assign, std::move(loc)), name(name),
        value(std::move(value)) {}
  llvm::StringRef getName() const { return name; }
  const ExprAST *getValue() const { return value.get(); }
  static bool classof(const StmtAST *s) { return s->getKind() == Stmt_Assign; }

private:
  std::string name;
  ExprPtr value;
};

/// `for i in lo .. hi { ... }` (half-open, evaluated at compile time).
class ForStmtAST : public StmtAST {
public:
  ForStmtAST(Location loc, llvm::StringRef var, ExprPtr lo, ExprPtr hi,
             Block body)
      : StmtAST(Stmt_For, std::move(loc)), var(var), lo(std::move(lo)),
        hi(std::move(hi)), body(std::move(body)) {}
  llvm::StringRef getVar() const { return var; }
  const ExprAST *getLo() const { return lo.get(); }
  const ExprAST *getHi() const { return hi.get(); }
  const Block &getBody() const { return body; }
  static bool classof(const StmtAST *s) { return s->getKind() == Stmt_For; }

private:
  std::string var;
  ExprPtr lo, hi;
  Block body;
};

/// `if cond { ... } else { ... }`; `else if` nests an IfStmtAST in `elseBody`.
class IfStmtAST : public StmtAST {
public:
  IfStmtAST(Location loc, ExprPtr cond, Block thenBody, Block elseBody)
      : StmtAST(Stmt_If, std::move(loc)), cond(std::move(cond)),
        thenBody(std::move(thenBody)), elseBody(std::move(elseBody)) {}
  const ExprAST *getCond() const { return cond.get(); }
  const Block &getThen() const { return thenBody; }
  const Block &getElse() const { return elseBody; }
  static bool classof(const StmtAST *s) { return s->getKind() == Stmt_If; }

private:
  ExprPtr cond;
  Block thenBody, elseBody;
};

class ReturnStmtAST : public StmtAST {
public:
  ReturnStmtAST(Location loc, ExprPtr value)
      : StmtAST(Stmt_Return, std::move(loc)), value(std::move(value)) {}
  /// Null for a bare `return;`.
  const ExprAST *getValue() const { return value.get(); }
  static bool classof(const StmtAST *s) { return s->getKind() == Stmt_Return; }

private:
  ExprPtr value;
};

/// `scope "layer{i}" { ... }`: values named inside get the prefix "layer3.".
class ScopeStmtAST : public StmtAST {
public:
  ScopeStmtAST(Location loc, ExprPtr name, Block body)
      : StmtAST(Stmt_Scope, std::move(loc)), name(std::move(name)),
        body(std::move(body)) {}
  const ExprAST *getName() const { return name.get(); }
  const Block &getBody() const { return body; }
  static bool classof(const StmtAST *s) { return s->getKind() == Stmt_Scope; }

private:
  ExprPtr name;
  Block body;
};

/// `assert cond, "message";`: a compile-time check of the config.
class AssertStmtAST : public StmtAST {
public:
  AssertStmtAST(Location loc, ExprPtr cond, ExprPtr message)
      : StmtAST(Stmt_Assert, std::move(loc)), cond(std::move(cond)),
        message(std::move(message)) {}
  const ExprAST *getCond() const { return cond.get(); }
  const ExprAST *getMessage() const { return message.get(); }
  static bool classof(const StmtAST *s) { return s->getKind() == Stmt_Assert; }

private:
  ExprPtr cond, message;
};

class ExprStmtAST : public StmtAST {
public:
  ExprStmtAST(Location loc, ExprPtr expr)
      : StmtAST(Stmt_Expr, std::move(loc)), expr(std::move(expr)) {}
  const ExprAST *getExpr() const { return expr.get(); }
  static bool classof(const StmtAST *s) { return s->getKind() == Stmt_Expr; }

private:
  ExprPtr expr;
};

//===----------------------------------------------------------------------===//
// Top level
//===----------------------------------------------------------------------===//

struct ParamAST {
  Location loc;
  std::string name;
  std::unique_ptr<TypeAST> type; ///< Optional for `def`, required for `entry`.
  ExprPtr defaultValue;          ///< Optional.
};

/// `def name(params) { ... }` (a block, inlined at each call) or
/// `entry name(params) { ... }` (becomes a func.func).
class FunctionAST {
public:
  FunctionAST(Location loc, bool isEntry, llvm::StringRef name,
              std::vector<ParamAST> params, Block body)
      : loc(std::move(loc)), entry(isEntry), name(name),
        params(std::move(params)), body(std::move(body)) {}
  const Location &location() const { return loc; }
  bool isEntry() const { return entry; }
  llvm::StringRef getName() const { return name; }
  const std::vector<ParamAST> &getParams() const { return params; }
  const Block &getBody() const { return body; }

private:
  Location loc;
  bool entry;
  std::string name;
  std::vector<ParamAST> params;
  Block body;
};

/// One parsed file after its imports were resolved: imported functions come
/// first, in import order, each file at most once.
class ModuleAST {
public:
  void addFunction(std::unique_ptr<FunctionAST> f) {
    functions.push_back(std::move(f));
  }
  const std::vector<std::unique_ptr<FunctionAST>> &getFunctions() const {
    return functions;
  }
  std::vector<std::unique_ptr<FunctionAST>> takeFunctions() {
    return std::move(functions);
  }
  /// Files this module pulled in with `import`, in order.
  std::vector<std::string> imports;

private:
  std::vector<std::unique_ptr<FunctionAST>> functions;
};

/// Prints `module` as an indented tree with locations.
void dump(const ModuleAST &module, llvm::raw_ostream &os);

} // namespace mlir::strata::dsl

#endif // STRATA_LIB_FRONTEND_AST_H
