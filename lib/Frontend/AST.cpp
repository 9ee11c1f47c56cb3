//===- AST.cpp - dump of the strata model DSL AST -------------------------===//
//
// Part of strata, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
//
// Prints the AST as an indented tree, one node per line with its location
// (`@file:line:col`, file name without directories so golden tests do not
// depend on the checkout path). Same spirit as Toy's ASTDumper.
//
//===----------------------------------------------------------------------===//

#include "lib/Frontend/AST.h"

#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/Path.h"

using namespace mlir::strata::dsl;

llvm::StringRef mlir::strata::dsl::getOperatorSpelling(int op) {
  switch (op) {
  case tok_dotdot: return "..";
  case tok_eq: return "==";
  case tok_ne: return "!=";
  case tok_le: return "<=";
  case tok_ge: return ">=";
  case tok_and: return "&&";
  case tok_or: return "||";
  case tok_import: return "import";
  case tok_def: return "def";
  case tok_entry: return "entry";
  case tok_let: return "let";
  case tok_for: return "for";
  case tok_in: return "in";
  case tok_if: return "if";
  case tok_else: return "else";
  case tok_return: return "return";
  case tok_scope: return "scope";
  case tok_assert: return "assert";
  case tok_true: return "true";
  case tok_false: return "false";
  case tok_none: return "none";
  default: break;
  }
  static const char *const singles = "(){}[],;:+-*/%?.=!<>";
  for (const char *c = singles; *c; ++c)
    if (op == *c)
      return llvm::StringRef(c, 1);
  return "";
}

namespace {

class ASTDumper {
public:
  explicit ASTDumper(llvm::raw_ostream &os) : os(os) {}

  void dump(const ModuleAST &module) {
    os << "Module\n";
    ++indent;
    for (const std::string &path : module.imports) {
      printIndent();
      os << "Import \"" << llvm::sys::path::filename(path) << "\"\n";
    }
    for (const auto &f : module.getFunctions())
      dump(*f);
    --indent;
  }

private:
  llvm::raw_ostream &os;
  int indent = 0;

  struct Indent {
    ASTDumper &d;
    explicit Indent(ASTDumper &d) : d(d) { ++d.indent; }
    ~Indent() { --d.indent; }
  };

  void printIndent() {
    for (int i = 0; i < indent; ++i)
      os << "  ";
  }

  void printLoc(const Location &loc) {
    os << " @" << (loc.file ? llvm::sys::path::filename(*loc.file) : "-")
       << ":" << loc.line << ":" << loc.col;
  }

  void dump(const FunctionAST &f) {
    printIndent();
    os << (f.isEntry() ? "Entry " : "Def ") << f.getName();
    printLoc(f.location());
    os << "\n";
    Indent in(*this);
    for (const ParamAST &p : f.getParams()) {
      printIndent();
      os << "Param " << p.name;
      if (p.type) {
        os << " : ";
        printType(*p.type);
      }
      printLoc(p.loc);
      os << "\n";
      if (p.defaultValue) {
        Indent in2(*this);
        printIndent();
        os << "Default\n";
        Indent in3(*this);
        dump(p.defaultValue.get());
      }
    }
    dump(f.getBody());
  }

  void printType(const TypeAST &type) {
    if (type.isNamed) {
      os << type.elementType;
      return;
    }
    if (type.isTuple) {
      os << "(";
      llvm::interleaveComma(type.elements, os,
                            [&](const auto &e) { printType(*e); });
      os << ")";
      return;
    }
    os << "[";
    llvm::interleaveComma(type.dims, os, [&](const ExprPtr &d) {
      if (d)
        printInline(d.get());
      else
        os << "?";
    });
    os << "] " << type.elementType;
  }

  /// Prints an expression on one line (used inside types).
  void printInline(const ExprAST *e) {
    llvm::TypeSwitch<const ExprAST *>(e)
        .Case([&](const IntExprAST *i) { os << i->getValue(); })
        .Case([&](const VarExprAST *v) { os << v->getName(); })
        .Case([&](const MemberExprAST *m) {
          printInline(m->getBase());
          os << "." << m->getName();
        })
        .Case([&](const BinaryExprAST *b) {
          os << "(";
          printInline(b->getLHS());
          os << " " << getOperatorSpelling(b->getOp()) << " ";
          printInline(b->getRHS());
          os << ")";
        })
        .Default([&](const ExprAST *) { os << "<expr>"; });
  }

  void dump(const Block &block) {
    for (const StmtPtr &s : block)
      dump(s.get());
  }

  void dump(const StmtAST *stmt) {
    printIndent();
    llvm::TypeSwitch<const StmtAST *>(stmt)
        .Case([&](const LetStmtAST *let) {
          os << "Let ";
          if (let->isDestructuring())
            os << "(";
          llvm::interleaveComma(let->getNames(), os);
          if (let->isDestructuring())
            os << ")";
          if (let->getType()) {
            os << " : ";
            printType(*let->getType());
          }
          printLoc(let->location());
          os << "\n";
          Indent in(*this);
          dump(let->getValue());
        })
        .Case([&](const AssignStmtAST *a) {
          os << "Assign " << a->getName();
          printLoc(a->location());
          os << "\n";
          Indent in(*this);
          dump(a->getValue());
        })
        .Case([&](const ForStmtAST *f) {
          os << "For " << f->getVar();
          printLoc(f->location());
          os << "\n";
          Indent in(*this);
          dump(f->getLo());
          dump(f->getHi());
          printIndent();
          os << "Body\n";
          Indent in2(*this);
          dump(f->getBody());
        })
        .Case([&](const IfStmtAST *i) {
          os << "If";
          printLoc(i->location());
          os << "\n";
          Indent in(*this);
          dump(i->getCond());
          printIndent();
          os << "Then\n";
          {
            Indent in2(*this);
            dump(i->getThen());
          }
          if (!i->getElse().empty()) {
            printIndent();
            os << "Else\n";
            Indent in2(*this);
            dump(i->getElse());
          }
        })
        .Case([&](const ReturnStmtAST *r) {
          os << "Return";
          printLoc(r->location());
          os << "\n";
          if (r->getValue()) {
            Indent in(*this);
            dump(r->getValue());
          }
        })
        .Case([&](const ScopeStmtAST *s) {
          os << "Scope";
          printLoc(s->location());
          os << "\n";
          Indent in(*this);
          dump(s->getName());
          dump(s->getBody());
        })
        .Case([&](const AssertStmtAST *a) {
          os << "Assert";
          printLoc(a->location());
          os << "\n";
          Indent in(*this);
          dump(a->getCond());
          dump(a->getMessage());
        })
        .Case([&](const ExprStmtAST *e) {
          os << "ExprStmt";
          printLoc(e->location());
          os << "\n";
          Indent in(*this);
          dump(e->getExpr());
        });
  }

  void dump(const ExprAST *expr) {
    printIndent();
    llvm::TypeSwitch<const ExprAST *>(expr)
        .Case([&](const IntExprAST *i) { os << "Int " << i->getValue(); })
        .Case([&](const FloatExprAST *f) { os << "Float " << f->getValue(); })
        .Case([&](const BoolExprAST *b) {
          os << "Bool " << (b->getValue() ? "true" : "false");
        })
        .Case([&](const NoneExprAST *) { os << "None"; })
        .Case([&](const VarExprAST *v) { os << "Var " << v->getName(); })
        .Case([&](const StringExprAST *s) {
          os << "String \"";
          for (const auto &part : s->getParts()) {
            if (part.expr) {
              os << "{";
              printInline(part.expr.get());
              os << "}";
            } else {
              os.write_escaped(part.text);
            }
          }
          os << "\"";
        })
        .Case([&](const ListExprAST *l) {
          os << (l->isTuple() ? "Tuple" : "List");
        })
        .Case([&](const MemberExprAST *m) { os << "Member ." << m->getName(); })
        .Case([&](const IndexExprAST *) { os << "Index"; })
        .Case([&](const CallExprAST *) { os << "Call"; })
        .Case([&](const BinaryExprAST *b) {
          os << "Binary '" << getOperatorSpelling(b->getOp()) << "'";
        })
        .Case([&](const UnaryExprAST *u) {
          os << "Unary '" << getOperatorSpelling(u->getOp()) << "'";
        });
    printLoc(expr->location());
    os << "\n";
    Indent in(*this);
    llvm::TypeSwitch<const ExprAST *>(expr)
        .Case([&](const StringExprAST *s) {
          for (const auto &part : s->getParts())
            if (part.expr)
              dump(part.expr.get());
        })
        .Case([&](const ListExprAST *l) {
          for (const ExprPtr &e : l->getElements())
            dump(e.get());
        })
        .Case([&](const MemberExprAST *m) { dump(m->getBase()); })
        .Case([&](const IndexExprAST *i) {
          dump(i->getBase());
          dump(i->getIndex());
        })
        .Case([&](const CallExprAST *c) {
          dump(c->getCallee());
          for (const ArgAST &a : c->getArgs()) {
            if (!a.name.empty()) {
              printIndent();
              os << "Keyword " << a.name << "\n";
              Indent in2(*this);
              dump(a.value.get());
            } else {
              dump(a.value.get());
            }
          }
        })
        .Case([&](const BinaryExprAST *b) {
          dump(b->getLHS());
          dump(b->getRHS());
        })
        .Case([&](const UnaryExprAST *u) { dump(u->getOperand()); });
  }
};

} // namespace

void mlir::strata::dsl::dump(const ModuleAST &module, llvm::raw_ostream &os) {
  ASTDumper(os).dump(module);
}
