//===- Parser.cpp - parser of the strata model DSL ------------------------===//
//
// Part of strata, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
//
// Recursive descent with one token of look-ahead, one function per grammar
// rule (its `::=` rule in the comment above it). Every error is an MLIR
// diagnostic at the offending token; parsing stops at the first one. Nesting
// depth is bounded so malformed input cannot exhaust the stack (the fuzzer in
// lib/Frontend/fuzz checks this).
//
//===----------------------------------------------------------------------===//

#include "lib/Frontend/Parser.h"

#include "mlir/IR/Diagnostics.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

using namespace mlir::strata::dsl;
using mlir::failed;
using mlir::failure;
using mlir::LogicalResult;
using mlir::MLIRContext;
using mlir::success;

mlir::Location mlir::strata::dsl::toMLIRLoc(MLIRContext *ctx,
                                            const Location &loc) {
  return mlir::FileLineColLoc::get(ctx, loc.file ? *loc.file : std::string("-"),
                             loc.line, loc.col);
}

namespace {

/// Deepest nesting of expressions and blocks accepted.
constexpr int kMaxDepth = 200;

class Parser {
public:
  Parser(Lexer &lexer, MLIRContext *ctx) : lexer(lexer), ctx(ctx) {}

  /// module ::= item* EOF
  /// item   ::= import | function
  std::unique_ptr<ModuleAST> parseModule() {
    auto module = std::make_unique<ModuleAST>();
    lexer.getNextToken();
    while (lexer.getCurToken() != tok_eof) {
      if (lexer.getCurToken() == tok_import) {
        if (failed(parseImport(*module)))
          return nullptr;
        continue;
      }
      auto f = parseFunction();
      if (!f)
        return nullptr;
      module->addFunction(std::move(f));
    }
    return module;
  }

  /// Parses exactly one expression filling the whole buffer (an
  /// interpolation hole).
  ExprPtr parseStandaloneExpr(int depth) {
    this->depth = depth;
    lexer.getNextToken();
    ExprPtr e = parseExpr();
    if (!e)
      return nullptr;
    if (lexer.getCurToken() != tok_eof)
      return error("expected '}' to close the interpolation");
    return e;
  }

  /// Where each import item was written, parallel to ModuleAST::imports.
  std::vector<Location> importLocs;

private:
  Lexer &lexer;
  MLIRContext *ctx;
  int depth = 0;

  //===--------------------------------------------------------------------===//
  // Helpers
  //===--------------------------------------------------------------------===//

  /// Emits `message` at the current token (or the lexer's message if the
  /// current token is malformed) and returns null.
  std::nullptr_t error(const llvm::Twine &message) {
    Location loc = lexer.getLastLocation();
    if (lexer.getCurToken() == tok_error)
      mlir::emitError(toMLIRLoc(ctx, loc)) << lexer.getErrorMessage();
    else
      mlir::emitError(toMLIRLoc(ctx, loc)) << message;
    return nullptr;
  }

  /// Describes the current token for "expected X, got Y" messages.
  std::string describeCurrent() {
    switch (lexer.getCurToken()) {
    case tok_eof:
      return "end of file";
    case tok_ident:
      return "identifier '" + lexer.getId().str() + "'";
    case tok_int:
      return "integer literal";
    case tok_float:
      return "float literal";
    case tok_string:
      return "string literal";
    default:
      break;
    }
    llvm::StringRef spelling = getOperatorSpelling(lexer.getCurToken());
    if (!spelling.empty())
      return "'" + spelling.str() + "'";
    return "'" + lexer.getId().str() + "'";
  }

  LogicalResult expect(int tok, llvm::StringRef what) {
    if (lexer.getCurToken() != tok) {
      error("expected " + what + ", got " + describeCurrent());
      return failure();
    }
    lexer.getNextToken();
    return success();
  }

  /// RAII guard bounding recursion.
  struct DepthGuard {
    Parser &p;
    explicit DepthGuard(Parser &p) : p(p) { ++p.depth; }
    ~DepthGuard() { --p.depth; }
    bool tooDeep() const { return p.depth > kMaxDepth; }
  };

  //===--------------------------------------------------------------------===//
  // Top level
  //===--------------------------------------------------------------------===//

  /// import ::= 'import' STRING ';'
  LogicalResult parseImport(ModuleAST &module) {
    Location loc = lexer.getLastLocation();
    lexer.consume(tok_import);
    if (lexer.getCurToken() != tok_string) {
      error("expected a file name string after 'import', got " +
            describeCurrent());
      return failure();
    }
    module.imports.push_back(lexer.getStringValue().str());
    importLocs.push_back(loc);
    lexer.getNextToken();
    return expect(';', "';' after import");
  }

  /// function ::= ('def' | 'entry') IDENT '(' (param (',' param)*)? ')' block
  std::unique_ptr<FunctionAST> parseFunction() {
    Location loc = lexer.getLastLocation();
    bool isEntry = lexer.getCurToken() == tok_entry;
    if (lexer.getCurToken() != tok_def && !isEntry)
      return error("expected 'def', 'entry' or 'import' at top level, got " +
                   describeCurrent());
    lexer.getNextToken();
    if (lexer.getCurToken() != tok_ident)
      return error("expected a function name, got " + describeCurrent());
    std::string name = lexer.getId().str();
    lexer.getNextToken();
    if (failed(expect('(', "'(' after the function name")))
      return nullptr;
    std::vector<ParamAST> params;
    if (lexer.getCurToken() != ')') {
      while (true) {
        ParamAST param;
        if (failed(parseParam(param)))
          return nullptr;
        params.push_back(std::move(param));
        if (lexer.getCurToken() != ',')
          break;
        lexer.getNextToken();
      }
    }
    if (failed(expect(')', "')' to close the parameter list")))
      return nullptr;
    Block body;
    if (failed(parseBlock(body)))
      return nullptr;
    return std::make_unique<FunctionAST>(std::move(loc), isEntry, name,
                                         std::move(params), std::move(body));
  }

  /// param ::= IDENT (':' type)? ('=' expr)?
  LogicalResult parseParam(ParamAST &param) {
    param.loc = lexer.getLastLocation();
    if (lexer.getCurToken() != tok_ident) {
      error("expected a parameter name, got " + describeCurrent());
      return failure();
    }
    param.name = lexer.getId().str();
    lexer.getNextToken();
    if (lexer.getCurToken() == ':') {
      lexer.getNextToken();
      param.type = parseType();
      if (!param.type)
        return failure();
    }
    if (lexer.getCurToken() == '=') {
      lexer.getNextToken();
      param.defaultValue = parseExpr();
      if (!param.defaultValue)
        return failure();
    }
    return success();
  }

  /// type ::= '[' (dim (',' dim)*)? ']' IDENT
  ///        | '(' type (',' type)* ')'
  ///        | IDENT                      (a variable holding a type value)
  /// dim  ::= '?' | expr
  std::unique_ptr<TypeAST> parseType() {
    DepthGuard guard(*this);
    if (guard.tooDeep())
      return error("type nested too deeply");
    auto type = std::make_unique<TypeAST>();
    type->loc = lexer.getLastLocation();
    if (lexer.getCurToken() == '(') {
      type->isTuple = true;
      lexer.getNextToken();
      while (true) {
        auto element = parseType();
        if (!element)
          return nullptr;
        type->elements.push_back(std::move(element));
        if (lexer.getCurToken() != ',')
          break;
        lexer.getNextToken();
      }
      if (failed(expect(')', "')' to close the tuple type")))
        return nullptr;
      return type;
    }
    if (lexer.getCurToken() == tok_ident) {
      type->isNamed = true;
      type->elementType = lexer.getId().str();
      type->elementLoc = type->loc;
      lexer.getNextToken();
      return type;
    }
    if (lexer.getCurToken() != '[')
      return error("expected a type ('[dims] element' or a tuple), got " +
                   describeCurrent());
    lexer.getNextToken();
    if (lexer.getCurToken() != ']') {
      while (true) {
        if (lexer.getCurToken() == '?') {
          type->dims.push_back(nullptr);
          lexer.getNextToken();
        } else {
          ExprPtr dim = parseExpr();
          if (!dim)
            return nullptr;
          type->dims.push_back(std::move(dim));
        }
        if (lexer.getCurToken() != ',')
          break;
        lexer.getNextToken();
      }
    }
    if (failed(expect(']', "']' to close the shape")))
      return nullptr;
    type->elementLoc = lexer.getLastLocation();
    if (lexer.getCurToken() != tok_ident)
      return error("expected an element type after the shape, got " +
                   describeCurrent());
    type->elementType = lexer.getId().str();
    lexer.getNextToken();
    return type;
  }

  //===--------------------------------------------------------------------===//
  // Statements
  //===--------------------------------------------------------------------===//

  /// block ::= '{' stmt* '}'
  LogicalResult parseBlock(Block &body) {
    DepthGuard guard(*this);
    if (guard.tooDeep()) {
      error("blocks nested too deeply");
      return failure();
    }
    if (failed(expect('{', "'{' to open a block")))
      return failure();
    while (lexer.getCurToken() != '}') {
      if (lexer.getCurToken() == tok_eof) {
        error("expected '}' to close the block, got end of file");
        return failure();
      }
      StmtPtr stmt = parseStmt();
      if (!stmt)
        return failure();
      body.push_back(std::move(stmt));
    }
    lexer.consume(Token('}'));
    return success();
  }

  /// stmt ::= let | for | if | return | scope | assert | assign | expr ';'
  StmtPtr parseStmt() {
    switch (lexer.getCurToken()) {
    case tok_let:
      return parseLet();
    case tok_for:
      return parseFor();
    case tok_if:
      return parseIf();
    case tok_return:
      return parseReturn();
    case tok_scope:
      return parseScope();
    case tok_assert:
      return parseAssert();
    default:
      break;
    }
    Location loc = lexer.getLastLocation();
    ExprPtr expr = parseExpr();
    if (!expr)
      return nullptr;
    // assign ::= IDENT '=' expr ';'
    if (lexer.getCurToken() == '=') {
      auto *var = llvm::dyn_cast<VarExprAST>(expr.get());
      if (!var)
        return error("the left side of '=' must be a variable name");
      lexer.getNextToken();
      ExprPtr value = parseExpr();
      if (!value || failed(expect(';', "';' after the assignment")))
        return nullptr;
      return std::make_unique<AssignStmtAST>(std::move(loc), var->getName(),
                                             std::move(value));
    }
    if (failed(expect(';', "';' after the expression")))
      return nullptr;
    return std::make_unique<ExprStmtAST>(std::move(loc), std::move(expr));
  }

  /// let ::= 'let' (IDENT | '(' IDENT (',' IDENT)* ')') (':' type)? '=' expr ';'
  StmtPtr parseLet() {
    Location loc = lexer.getLastLocation();
    lexer.consume(tok_let);
    std::vector<std::string> names;
    std::vector<Location> nameLocs;
    bool destructure = lexer.getCurToken() == '(';
    if (destructure)
      lexer.getNextToken();
    while (true) {
      if (lexer.getCurToken() != tok_ident)
        return error("expected a variable name, got " + describeCurrent());
      names.push_back(lexer.getId().str());
      nameLocs.push_back(lexer.getLastLocation());
      lexer.getNextToken();
      if (!destructure || lexer.getCurToken() != ',')
        break;
      lexer.getNextToken();
    }
    if (destructure && failed(expect(')', "')' after the variable names")))
      return nullptr;
    std::unique_ptr<TypeAST> type;
    if (lexer.getCurToken() == ':') {
      lexer.getNextToken();
      type = parseType();
      if (!type)
        return nullptr;
    }
    if (failed(expect('=', "'=' in let")))
      return nullptr;
    ExprPtr value = parseExpr();
    if (!value || failed(expect(';', "';' after let")))
      return nullptr;
    return std::make_unique<LetStmtAST>(std::move(loc), std::move(names),
                                        std::move(nameLocs), std::move(type),
                                        std::move(value), destructure);
  }

  /// for ::= 'for' IDENT 'in' expr '..' expr block
  StmtPtr parseFor() {
    Location loc = lexer.getLastLocation();
    lexer.consume(tok_for);
    if (lexer.getCurToken() != tok_ident)
      return error("expected a loop variable, got " + describeCurrent());
    std::string var = lexer.getId().str();
    lexer.getNextToken();
    if (failed(expect(tok_in, "'in' after the loop variable")))
      return nullptr;
    ExprPtr lo = parseExpr();
    if (!lo || failed(expect(tok_dotdot, "'..' in the loop range")))
      return nullptr;
    ExprPtr hi = parseExpr();
    if (!hi)
      return nullptr;
    Block body;
    if (failed(parseBlock(body)))
      return nullptr;
    return std::make_unique<ForStmtAST>(std::move(loc), var, std::move(lo),
                                        std::move(hi), std::move(body));
  }

  /// if ::= 'if' expr block ('else' (if | block))?
  StmtPtr parseIf() {
    DepthGuard guard(*this);
    if (guard.tooDeep())
      return error("'else if' chain nested too deeply");
    Location loc = lexer.getLastLocation();
    lexer.consume(tok_if);
    ExprPtr cond = parseExpr();
    if (!cond)
      return nullptr;
    Block thenBody, elseBody;
    if (failed(parseBlock(thenBody)))
      return nullptr;
    if (lexer.getCurToken() == tok_else) {
      lexer.getNextToken();
      if (lexer.getCurToken() == tok_if) {
        StmtPtr nested = parseIf();
        if (!nested)
          return nullptr;
        elseBody.push_back(std::move(nested));
      } else if (failed(parseBlock(elseBody))) {
        return nullptr;
      }
    }
    return std::make_unique<IfStmtAST>(std::move(loc), std::move(cond),
                                       std::move(thenBody),
                                       std::move(elseBody));
  }

  /// return ::= 'return' expr? ';'
  StmtPtr parseReturn() {
    Location loc = lexer.getLastLocation();
    lexer.consume(tok_return);
    ExprPtr value;
    if (lexer.getCurToken() != ';') {
      value = parseExpr();
      if (!value)
        return nullptr;
    }
    if (failed(expect(';', "';' after return")))
      return nullptr;
    return std::make_unique<ReturnStmtAST>(std::move(loc), std::move(value));
  }

  /// scope ::= 'scope' expr block
  StmtPtr parseScope() {
    Location loc = lexer.getLastLocation();
    lexer.consume(tok_scope);
    ExprPtr name = parseExpr();
    if (!name)
      return nullptr;
    Block body;
    if (failed(parseBlock(body)))
      return nullptr;
    return std::make_unique<ScopeStmtAST>(std::move(loc), std::move(name),
                                          std::move(body));
  }

  /// assert ::= 'assert' expr ',' expr ';'
  StmtPtr parseAssert() {
    Location loc = lexer.getLastLocation();
    lexer.consume(tok_assert);
    ExprPtr cond = parseExpr();
    if (!cond || failed(expect(',', "',' between the condition and message")))
      return nullptr;
    ExprPtr message = parseExpr();
    if (!message || failed(expect(';', "';' after assert")))
      return nullptr;
    return std::make_unique<AssertStmtAST>(std::move(loc), std::move(cond),
                                           std::move(message));
  }

  //===--------------------------------------------------------------------===//
  // Expressions
  //===--------------------------------------------------------------------===//

  /// expr ::= or
  ExprPtr parseExpr() {
    DepthGuard guard(*this);
    if (guard.tooDeep())
      return error("expression nested too deeply");
    return parseBinary(0);
  }

  /// Precedence of a binary operator token, or -1.
  static int precedence(int tok) {
    switch (tok) {
    case tok_or:
      return 1;
    case tok_and:
      return 2;
    case tok_eq: case tok_ne: case '<': case tok_le: case '>': case tok_ge:
      return 3;
    case '+': case '-':
      return 4;
    case '*': case '/': case '%':
      return 5;
    default:
      return -1;
    }
  }

  /// or  ::= and ('||' and)*
  /// and ::= cmp ('&&' cmp)*
  /// cmp ::= add (('==' | '!=' | '<' | '<=' | '>' | '>=') add)?
  /// add ::= mul (('+' | '-') mul)*
  /// mul ::= unary (('*' | '/' | '%') unary)*
  /// (precedence climbing over the table in `precedence`)
  ExprPtr parseBinary(int minPrec) {
    ExprPtr lhs = parseUnary();
    if (!lhs)
      return nullptr;
    while (true) {
      int op = lexer.getCurToken();
      int prec = precedence(op);
      if (prec < 0 || prec < minPrec)
        return lhs;
      Location loc = lexer.getLastLocation();
      lexer.getNextToken();
      DepthGuard guard(*this);
      if (guard.tooDeep())
        return error("expression nested too deeply");
      ExprPtr rhs = parseBinary(prec + 1);
      if (!rhs)
        return nullptr;
      // Comparisons do not chain: `a < b < c` is rejected.
      if (prec == 3 && precedence(lexer.getCurToken()) == 3)
        return error("comparisons cannot be chained; use '&&'");
      lhs = std::make_unique<BinaryExprAST>(std::move(loc), op, std::move(lhs),
                                            std::move(rhs));
    }
  }

  /// unary ::= ('-' | '!') unary | postfix
  ExprPtr parseUnary() {
    int op = lexer.getCurToken();
    if (op != '-' && op != '!')
      return parsePostfix();
    DepthGuard guard(*this);
    if (guard.tooDeep())
      return error("expression nested too deeply");
    Location loc = lexer.getLastLocation();
    lexer.getNextToken();
    ExprPtr operand = parseUnary();
    if (!operand)
      return nullptr;
    return std::make_unique<UnaryExprAST>(std::move(loc), op,
                                          std::move(operand));
  }

  /// postfix ::= primary ('.' IDENT | '[' expr ']' | '(' args? ')')*
  /// args    ::= arg (',' arg)*
  /// arg     ::= (IDENT '=')? expr
  ExprPtr parsePostfix() {
    ExprPtr expr = parsePrimary();
    if (!expr)
      return nullptr;
    while (true) {
      Location loc = lexer.getLastLocation();
      if (lexer.getCurToken() == '.') {
        lexer.getNextToken();
        if (lexer.getCurToken() != tok_ident)
          return error("expected a name after '.', got " + describeCurrent());
        expr = std::make_unique<MemberExprAST>(std::move(loc), std::move(expr),
                                               lexer.getId());
        lexer.getNextToken();
      } else if (lexer.getCurToken() == '[') {
        lexer.getNextToken();
        ExprPtr index = parseExpr();
        if (!index || failed(expect(']', "']' after the index")))
          return nullptr;
        expr = std::make_unique<IndexExprAST>(std::move(loc), std::move(expr),
                                              std::move(index));
      } else if (lexer.getCurToken() == '(') {
        lexer.getNextToken();
        std::vector<ArgAST> args;
        if (failed(parseArgs(args)))
          return nullptr;
        expr = std::make_unique<CallExprAST>(std::move(loc), std::move(expr),
                                             std::move(args));
      } else {
        return expr;
      }
    }
  }

  LogicalResult parseArgs(std::vector<ArgAST> &args) {
    bool sawKeyword = false;
    while (lexer.getCurToken() != ')') {
      ArgAST arg;
      arg.loc = lexer.getLastLocation();
      ExprPtr value = parseExpr();
      if (!value)
        return failure();
      if (lexer.getCurToken() == '=') {
        auto *var = llvm::dyn_cast<VarExprAST>(value.get());
        if (!var) {
          error("a keyword argument name must be an identifier");
          return failure();
        }
        arg.name = var->getName().str();
        lexer.getNextToken();
        value = parseExpr();
        if (!value)
          return failure();
        sawKeyword = true;
      } else if (sawKeyword) {
        mlir::emitError(toMLIRLoc(ctx, arg.loc))
            << "positional argument after a keyword argument";
        return failure();
      }
      arg.value = std::move(value);
      args.push_back(std::move(arg));
      if (lexer.getCurToken() != ',')
        break;
      lexer.getNextToken();
    }
    return expect(')', "')' to close the argument list");
  }

  /// primary ::= INT | FLOAT | STRING | 'true' | 'false' | 'none' | IDENT
  ///           | '(' expr ')' | '(' expr ',' (expr (',' expr)*)? ')'
  ///           | '[' (expr (',' expr)*)? ']'
  ExprPtr parsePrimary() {
    Location loc = lexer.getLastLocation();
    switch (static_cast<int>(lexer.getCurToken())) {
    case tok_int: {
      auto e = std::make_unique<IntExprAST>(loc, lexer.getIntValue());
      lexer.getNextToken();
      return e;
    }
    case tok_float: {
      auto e = std::make_unique<FloatExprAST>(loc, lexer.getFloatValue());
      lexer.getNextToken();
      return e;
    }
    case tok_true:
    case tok_false: {
      auto e = std::make_unique<BoolExprAST>(loc,
                                             lexer.getCurToken() == tok_true);
      lexer.getNextToken();
      return e;
    }
    case tok_none:
      lexer.getNextToken();
      return std::make_unique<NoneExprAST>(loc);
    case tok_ident: {
      auto e = std::make_unique<VarExprAST>(loc, lexer.getId());
      lexer.getNextToken();
      return e;
    }
    case tok_string:
      return parseString();
    case '(':
    case '[': {
      bool isTuple = lexer.getCurToken() == '(';
      char close = isTuple ? ')' : ']';
      lexer.getNextToken();
      ExprList elements;
      bool sawComma = false;
      while (lexer.getCurToken() != close) {
        ExprPtr e = parseExpr();
        if (!e)
          return nullptr;
        elements.push_back(std::move(e));
        if (lexer.getCurToken() != ',')
          break;
        sawComma = true;
        lexer.getNextToken();
      }
      if (failed(expect(close, isTuple ? "')'" : "']'")))
        return nullptr;
      // `(e)` is grouping; `(e,)`, `(a, b)` and `()` are tuples.
      if (isTuple && elements.size() == 1 && !sawComma)
        return std::move(elements.front());
      return std::make_unique<ListExprAST>(std::move(loc), std::move(elements),
                                           isTuple);
    }
    default:
      return error("expected an expression, got " + describeCurrent());
    }
  }

  /// string ::= '"' (text | '{' expr '}')* '"'
  ExprPtr parseString() {
    Location loc = lexer.getLastLocation();
    std::string value = lexer.getStringValue().str();
    std::vector<std::pair<int, int>> positions = lexer.getStringPositions();
    std::vector<StringExprAST::Part> parts;
    std::string text;
    for (size_t i = 0; i < value.size(); ++i) {
      char c = value[i];
      if (c == kEscapedOpenBrace) {
        text += '{';
        continue;
      }
      if (c == kEscapedCloseBrace) {
        text += '}';
        continue;
      }
      if (c == '}') {
        Location at{loc.file, positions[i].first, positions[i].second};
        mlir::emitError(toMLIRLoc(ctx, at))
            << "unmatched '}' in string literal; write '\\}' for a brace";
        return nullptr;
      }
      if (c != '{') {
        text += c;
        continue;
      }
      size_t close = value.find('}', i + 1);
      if (close == std::string::npos) {
        Location at{loc.file, positions[i].first, positions[i].second};
        mlir::emitError(toMLIRLoc(ctx, at))
            << "unterminated '{' in string literal; write '\\{' for a brace";
        return nullptr;
      }
      if (!text.empty())
        parts.push_back({std::move(text), nullptr});
      text.clear();
      std::string hole = value.substr(i + 1, close - i - 1);
      int line = i + 1 < positions.size() ? positions[i + 1].first
                                          : positions[i].first;
      int col = i + 1 < positions.size() ? positions[i + 1].second
                                         : positions[i].second + 1;
      Lexer holeLexer(hole, loc.file, line, col);
      Parser holeParser(holeLexer, ctx);
      ExprPtr e = holeParser.parseStandaloneExpr(depth + 1);
      if (!e)
        return nullptr;
      parts.push_back({"", std::move(e)});
      i = close;
    }
    if (!text.empty() || parts.empty())
      parts.push_back({std::move(text), nullptr});
    lexer.getNextToken();
    return std::make_unique<StringExprAST>(std::move(loc), std::move(parts));
  }
};

} // namespace

std::unique_ptr<ModuleAST>
mlir::strata::dsl::parseBuffer(llvm::SourceMgr &sourceMgr, unsigned bufferId,
                               MLIRContext *ctx) {
  const llvm::MemoryBuffer *buffer = sourceMgr.getMemoryBuffer(bufferId);
  auto file = std::make_shared<std::string>(buffer->getBufferIdentifier());
  Lexer lexer(buffer->getBuffer(), file);
  Parser parser(lexer, ctx);
  return parser.parseModule();
}

namespace {
/// Parses `bufferId` and its imports depth-first, appending functions to
/// `out` (imports first). `seen` holds canonical paths already parsed.
LogicalResult parseRecursive(llvm::SourceMgr &sourceMgr, unsigned bufferId,
                             MLIRContext *ctx, llvm::StringSet<> &seen,
                             ModuleAST &out, int depth) {
  const llvm::MemoryBuffer *buffer = sourceMgr.getMemoryBuffer(bufferId);
  auto file = std::make_shared<std::string>(buffer->getBufferIdentifier());
  Lexer lexer(buffer->getBuffer(), file);
  Parser parser(lexer, ctx);
  std::unique_ptr<ModuleAST> module = parser.parseModule();
  if (!module)
    return failure();
  llvm::StringRef dir = llvm::sys::path::parent_path(*file);
  for (auto [path, loc] : llvm::zip(module->imports, parser.importLocs)) {
    llvm::SmallString<256> full(dir);
    llvm::sys::path::append(full, path);
    llvm::sys::path::remove_dots(full, /*remove_dot_dot=*/true);
    if (!seen.insert(full).second)
      continue;
    if (depth > 64)
      return mlir::emitError(toMLIRLoc(ctx, loc)) << "imports nested too deeply";
    auto imported = llvm::MemoryBuffer::getFile(full);
    if (!imported)
      return mlir::emitError(toMLIRLoc(ctx, loc))
             << "cannot open imported file '" << full
             << "': " << imported.getError().message();
    unsigned id =
        sourceMgr.AddNewSourceBuffer(std::move(*imported), llvm::SMLoc());
    if (failed(parseRecursive(sourceMgr, id, ctx, seen, out, depth + 1)))
      return failure();
    out.imports.push_back(full.str().str());
  }
  // Move this file's functions after its imports'.
  for (auto &f : module->takeFunctions())
    out.addFunction(std::move(f));
  return success();
}
} // namespace

std::unique_ptr<ModuleAST>
mlir::strata::dsl::parseModuleWithImports(llvm::SourceMgr &sourceMgr,
                                          unsigned bufferId, MLIRContext *ctx) {
  auto out = std::make_unique<ModuleAST>();
  llvm::StringSet<> seen;
  llvm::SmallString<256> self(
      sourceMgr.getMemoryBuffer(bufferId)->getBufferIdentifier());
  llvm::sys::path::remove_dots(self, /*remove_dot_dot=*/true);
  seen.insert(self);
  if (failed(parseRecursive(sourceMgr, bufferId, ctx, seen, *out, 0)))
    return nullptr;
  return out;
}
