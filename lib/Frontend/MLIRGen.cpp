//===- MLIRGen.cpp - model DSL AST to the llm dialect ---------------------===//
//
// Part of strata, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
//
// A compile-time interpreter over the AST that emits IR as a side effect, in
// the spirit of Toy's MLIRGen but with a config: integers, floats, strings,
// lists and config objects are evaluated here; only tensors (and cache
// values) become SSA values. `def` blocks are inlined at every call, `for`
// loops are unrolled, `if` picks a branch, so the emitted func.func is a
// straight line of ops, one layer after another.
//
// Ops are created generically from their registered name (`llm.rms_norm(x,
// w, none, eps = 1.0e-5)`): positional arguments are operands (a list is a
// variadic group, `none` an absent optional; AttrSizedOperandSegments ops get
// their segment sizes from that), keyword arguments are attributes. Result
// types come from the `let` annotation or from InferTypeOpInterface. Each op
// is verified right after creation so a verifier error points at the DSL
// line that built the op.
//
//===----------------------------------------------------------------------===//

#include "lib/Frontend/MLIRGen.h"
#include "lib/Frontend/Parser.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

using namespace mlir;
using namespace mlir::strata::dsl;
using DslLoc = mlir::strata::dsl::Location;
using DslBlock = mlir::strata::dsl::Block;

namespace {

//===----------------------------------------------------------------------===//
// Compile-time values
//===----------------------------------------------------------------------===//

/// A DSL value. Lists share their storage (values are immutable).
struct DValue {
  enum Kind {
    None,
    Int,
    Float,
    Bool,
    Str,
    List,
    Tuple,
    Config,  ///< A JSON object of the config (`cfg`, `cfg.linear_attn_config`).
    TypeVal, ///< An MLIR type (`bf16`, `tensor([...], f32)`, `mlir_type(...)`).
    AttrVal, ///< An MLIR attribute (`attr("#llm.kda_mode<chunked>")`, `f64(x)`).
    Tensor,  ///< An SSA value.
    Dialect, ///< `llm`, `arith`, `tensor`: the base of an op call.
    OpName,  ///< `llm.rms_norm` before it is called.
    Func,    ///< A `def` block.
  };
  Kind kind = None;
  int64_t i = 0;
  double f = 0;
  bool b = false;
  std::string s; ///< Str, Dialect and OpName text.
  std::shared_ptr<std::vector<DValue>> elems;
  const llvm::json::Object *json = nullptr;
  bool isConfigRoot = false;
  Type type;
  Attribute attr;
  Value tensor;
  const FunctionAST *func = nullptr;
  /// Where a config-derived value came from ("cfg.layer_types"), for messages.
  std::string origin;

  static DValue makeInt(int64_t v) {
    DValue d;
    d.kind = Int;
    d.i = v;
    return d;
  }
  static DValue makeFloat(double v) {
    DValue d;
    d.kind = Float;
    d.f = v;
    return d;
  }
  static DValue makeBool(bool v) {
    DValue d;
    d.kind = Bool;
    d.b = v;
    return d;
  }
  static DValue makeStr(std::string v) {
    DValue d;
    d.kind = Str;
    d.s = std::move(v);
    return d;
  }
  static DValue makeList(std::vector<DValue> v, bool tuple = false) {
    DValue d;
    d.kind = tuple ? Tuple : List;
    d.elems = std::make_shared<std::vector<DValue>>(std::move(v));
    return d;
  }
  static DValue makeType(Type t) {
    DValue d;
    d.kind = TypeVal;
    d.type = t;
    return d;
  }
  static DValue makeAttr(Attribute a) {
    DValue d;
    d.kind = AttrVal;
    d.attr = a;
    return d;
  }
  static DValue makeTensor(Value v) {
    DValue d;
    d.kind = Tensor;
    d.tensor = v;
    return d;
  }
};

/// "an integer", "a list (cfg.layer_types)", ... for messages.
std::string describe(const DValue &v) {
  std::string what;
  switch (v.kind) {
  case DValue::None: what = "none"; break;
  case DValue::Int: what = "an integer"; break;
  case DValue::Float: what = "a float"; break;
  case DValue::Bool: what = "a bool"; break;
  case DValue::Str: what = "a string"; break;
  case DValue::List: what = "a list"; break;
  case DValue::Tuple: what = "a tuple"; break;
  case DValue::Config: what = "a config object"; break;
  case DValue::TypeVal: what = "a type"; break;
  case DValue::AttrVal: what = "an attribute"; break;
  case DValue::Tensor: {
    std::string t;
    llvm::raw_string_ostream os(t);
    os << "a value of type " << v.tensor.getType();
    what = t;
    break;
  }
  case DValue::Dialect: what = "the dialect '" + v.s + "'"; break;
  case DValue::OpName: what = "the op name '" + v.s + "'"; break;
  case DValue::Func: what = "the block '" + v.func->getName().str() + "'"; break;
  }
  if (!v.origin.empty())
    what += " (" + v.origin + ")";
  return what;
}

/// Formats a value for string interpolation; false if it cannot be.
bool formatValue(const DValue &v, std::string &out) {
  switch (v.kind) {
  case DValue::Int:
    out += std::to_string(v.i);
    return true;
  case DValue::Float:
    out += llvm::formatv("{0}", v.f).str();
    return true;
  case DValue::Bool:
    out += v.b ? "true" : "false";
    return true;
  case DValue::Str:
    out += v.s;
    return true;
  default:
    return false;
  }
}

/// The DSL spelling of a type for messages: `[?, 4096] bf16`.
std::string typeString(Type t) {
  std::string s;
  llvm::raw_string_ostream os(s);
  if (auto rt = dyn_cast<RankedTensorType>(t)) {
    os << "[";
    llvm::interleaveComma(rt.getShape(), os, [&](int64_t d) {
      if (ShapedType::isDynamic(d))
        os << "?";
      else
        os << d;
    });
    os << "] " << rt.getElementType();
  } else {
    os << t;
  }
  return s;
}

//===----------------------------------------------------------------------===//
// The generator
//===----------------------------------------------------------------------===//

enum class Flow { Normal, Returned, Error };

class MLIRGenImpl : public OpBuilder::Listener {
public:
  MLIRGenImpl(MLIRContext &context, const ModelConfig &config,
              const DslOptions &dslOptions)
      : ctx(&context), builder(&context, this), config(config),
        options{{"kv_cache_dtype", dslOptions.kvCacheDtype},
                {"indexer", dslOptions.indexer},
                {"index_cache_dtype", dslOptions.indexCacheDtype},
                {"tensor_parallel_size", dslOptions.tensorParallelSize},
                {"expert_parallel_size", dslOptions.expertParallelSize}} {}

  /// Numbers ops in creation order so a `let` can tell which ops its
  /// right-hand side created.
  void notifyOperationInserted(Operation *op,
                               OpBuilder::InsertPoint) override {
    opSequence[op] = ++opCounter;
  }

  OwningOpRef<ModuleOp> generate(const ModuleAST &moduleAST) {
    module = ModuleOp::create(builder.getUnknownLoc());
    for (const auto &f : moduleAST.getFunctions()) {
      auto [it, inserted] = functions.try_emplace(f->getName(), f.get());
      if (!inserted) {
        auto diag = mlir::emitError(loc(f->location()))
                    << "redefinition of '" << f->getName() << "'";
        diag.attachNote(loc(it->second->location())) << "previous definition";
        return nullptr;
      }
    }
    bool sawEntry = false;
    for (const auto &f : moduleAST.getFunctions()) {
      if (!f->isEntry())
        continue;
      sawEntry = true;
      if (failed(emitEntry(*f)))
        return nullptr;
    }
    if (!sawEntry) {
      mlir::emitError(builder.getUnknownLoc())
          << "the model file defines no 'entry'";
      return nullptr;
    }
    if (failed(mlir::verify(*module)))
      return nullptr;
    return std::move(module);
  }

private:
  MLIRContext *ctx;
  OpBuilder builder;
  const ModelConfig &config;
  /// `opt`: the compile options (DslOptions) as a config-like object.
  llvm::json::Object options;
  OwningOpRef<ModuleOp> module;
  llvm::StringMap<const FunctionAST *> functions;

  /// Variable scopes of the block being evaluated, innermost last. A call
  /// starts a fresh stack (blocks see only their parameters and globals).
  std::vector<llvm::StringMap<DValue>> scopes;
  /// `scope "layer{i}"` prefixes, joined with '.'.
  std::vector<std::string> namePrefix;
  /// The variable the current expression is bound to, for NameLocs.
  std::string currentName;
  /// Value of the pending `return` of the innermost call.
  DValue returnValue;
  llvm::DenseMap<Operation *, uint64_t> opSequence;
  uint64_t opCounter = 0;

  /// Renames the op defining `v` to "<scope>.<name>" if it was created after
  /// `mark` (so a block's result takes the caller's variable name; values
  /// that existed before keep theirs).
  void nameValue(const DValue &v, llvm::StringRef name, uint64_t mark) {
    if (v.kind == DValue::Tuple || v.kind == DValue::List) {
      for (const DValue &e : *v.elems)
        nameValue(e, name, mark);
      return;
    }
    if (v.kind != DValue::Tensor)
      return;
    Operation *op = v.tensor.getDefiningOp();
    if (!op || opSequence.lookup(op) <= mark)
      return;
    mlir::Location inner = op->getLoc();
    if (auto named = dyn_cast<NameLoc>(inner))
      inner = named.getChildLoc();
    std::string full;
    for (const std::string &p : namePrefix)
      full += p + ".";
    full += name;
    op->setLoc(NameLoc::get(StringAttr::get(ctx, full), inner));
  }

  /// Call depth, bounded against runaway recursion.
  int callDepth = 0;

  /// The entry being emitted: its block and extra state inputs/outputs.
  func::FuncOp currentFunc;
  SmallVector<Value> extraResults;

  mlir::Location loc(const DslLoc &l) { return toMLIRLoc(ctx, l); }

  /// FileLineColLoc of `l` wrapped in a NameLoc of the current variable.
  mlir::Location namedLoc(const DslLoc &l) {
    mlir::Location flc = loc(l);
    if (currentName.empty())
      return flc;
    std::string name;
    for (const std::string &p : namePrefix)
      name += p + ".";
    name += currentName;
    return NameLoc::get(StringAttr::get(ctx, name), flc);
  }

  InFlightDiagnostic error(const DslLoc &l) { return mlir::emitError(loc(l)); }

  //===--------------------------------------------------------------------===//
  // Variables
  //===--------------------------------------------------------------------===//

  DValue *lookupVar(llvm::StringRef name) {
    for (auto it = scopes.rbegin(); it != scopes.rend(); ++it) {
      auto found = it->find(name);
      if (found != it->end())
        return &found->second;
    }
    return nullptr;
  }

  /// Globals: `cfg`, element types, dialect namespaces, blocks.
  FailureOr<DValue> lookupGlobal(const VarExprAST &var) {
    llvm::StringRef name = var.getName();
    if (name == "cfg") {
      DValue d;
      d.kind = DValue::Config;
      d.isConfigRoot = true;
      d.origin = "cfg";
      return d;
    }
    if (name == "opt") {
      DValue d;
      d.kind = DValue::Config;
      d.json = &options;
      d.origin = "opt";
      return d;
    }
    if (Type t = elementType(name))
      return DValue::makeType(t);
    if (name == "dyn")
      return DValue::makeInt(ShapedType::kDynamic);
    if (auto it = functions.find(name); it != functions.end() &&
                                        !it->second->isEntry()) {
      DValue d;
      d.kind = DValue::Func;
      d.func = it->second;
      return d;
    }
    if (ctx->getOrLoadDialect(name)) {
      DValue d;
      d.kind = DValue::Dialect;
      d.s = name.str();
      return d;
    }
    return error(var.location()) << "unknown name '" << name << "'";
  }

  Type elementType(llvm::StringRef name) {
    return llvm::StringSwitch<Type>(name)
        .Case("bf16", builder.getBF16Type())
        .Case("f16", builder.getF16Type())
        .Case("f32", builder.getF32Type())
        .Case("f64", builder.getF64Type())
        .Case("f8E4M3FN", builder.getType<Float8E4M3FNType>())
        .Case("f8E4M3FNUZ", builder.getType<Float8E4M3FNUZType>())
        .Case("i1", builder.getI1Type())
        .Case("i8", builder.getI8Type())
        .Case("i32", builder.getI32Type())
        .Case("i64", builder.getI64Type())
        .Default(Type());
  }

  //===--------------------------------------------------------------------===//
  // Config
  //===--------------------------------------------------------------------===//

  /// Converts a JSON value of the config into a DSL value.
  DValue fromJson(const llvm::json::Value &v, const std::string &origin) {
    DValue d;
    if (auto i = v.getAsInteger()) {
      d = DValue::makeInt(*i);
    } else if (auto f = v.getAsNumber()) {
      d = DValue::makeFloat(*f);
    } else if (auto b = v.getAsBoolean()) {
      d = DValue::makeBool(*b);
    } else if (auto s = v.getAsString()) {
      d = DValue::makeStr(s->str());
    } else if (const auto *a = v.getAsArray()) {
      std::vector<DValue> elems;
      elems.reserve(a->size());
      for (size_t k = 0; k < a->size(); ++k)
        elems.push_back(
            fromJson((*a)[k], origin + "[" + std::to_string(k) + "]"));
      d = DValue::makeList(std::move(elems));
    } else if (const auto *o = v.getAsObject()) {
      d.kind = DValue::Config;
      d.json = o;
    }
    d.origin = origin;
    return d;
  }

  /// `base.name` on a config object. With `quiet`, a missing key returns
  /// None without a diagnostic (used by `has`).
  FailureOr<DValue> configMember(const DValue &base, llvm::StringRef name,
                                 const DslLoc &l, bool quiet) {
    const llvm::json::Value *v = base.isConfigRoot ? config.lookup(name)
                                                   : base.json->get(name);
    std::string origin = base.origin + "." + name.str();
    if (!v) {
      if (quiet)
        return DValue();
      if (llvm::StringRef(origin).starts_with("opt."))
        return error(l) << "unknown compile option '" << origin
                        << "' (known: opt.kv_cache_dtype, opt.indexer, "
                           "opt.index_cache_dtype, "
                           "opt.tensor_parallel_size, "
                           "opt.expert_parallel_size)";
      return error(l) << "config key '" << origin.substr(4)
                      << "' not found in " << config.getPath();
    }
    return fromJson(*v, origin);
  }

  //===--------------------------------------------------------------------===//
  // Expressions
  //===--------------------------------------------------------------------===//

  FailureOr<DValue> eval(const ExprAST *e) {
    return llvm::TypeSwitch<const ExprAST *, FailureOr<DValue>>(e)
        .Case([&](const IntExprAST *x) { return DValue::makeInt(x->getValue()); })
        .Case([&](const FloatExprAST *x) {
          return DValue::makeFloat(x->getValue());
        })
        .Case([&](const BoolExprAST *x) {
          return DValue::makeBool(x->getValue());
        })
        .Case([&](const NoneExprAST *) { return DValue(); })
        .Case([&](const StringExprAST *x) { return evalString(*x); })
        .Case([&](const VarExprAST *x) -> FailureOr<DValue> {
          if (DValue *v = lookupVar(x->getName()))
            return *v;
          return lookupGlobal(*x);
        })
        .Case([&](const ListExprAST *x) -> FailureOr<DValue> {
          std::vector<DValue> elems;
          for (const ExprPtr &el : x->getElements()) {
            auto v = eval(el.get());
            if (failed(v))
              return failure();
            elems.push_back(std::move(*v));
          }
          return DValue::makeList(std::move(elems), x->isTuple());
        })
        .Case([&](const MemberExprAST *x) { return evalMember(*x, false); })
        .Case([&](const IndexExprAST *x) { return evalIndex(*x); })
        .Case([&](const CallExprAST *x) { return evalCall(*x); })
        .Case([&](const BinaryExprAST *x) { return evalBinary(*x); })
        .Case([&](const UnaryExprAST *x) { return evalUnary(*x); });
  }

  FailureOr<DValue> evalString(const StringExprAST &s) {
    std::string out;
    for (const auto &part : s.getParts()) {
      if (!part.expr) {
        out += part.text;
        continue;
      }
      auto v = eval(part.expr.get());
      if (failed(v))
        return failure();
      if (!formatValue(*v, out))
        return error(part.expr->location())
               << "cannot interpolate " << describe(*v) << " into a string";
    }
    return DValue::makeStr(std::move(out));
  }

  FailureOr<DValue> evalMember(const MemberExprAST &m, bool quiet) {
    FailureOr<DValue> base =
        quiet && isa<MemberExprAST>(m.getBase())
            ? evalMember(*cast<MemberExprAST>(m.getBase()), true)
            : eval(m.getBase());
    if (failed(base))
      return failure();
    if (quiet && base->kind == DValue::None)
      return DValue();
    if (base->kind == DValue::Config)
      return configMember(*base, m.getName(), m.location(), quiet);
    if (base->kind == DValue::Dialect) {
      DValue d;
      d.kind = DValue::OpName;
      d.s = base->s + "." + m.getName().str();
      return d;
    }
    return error(m.location()) << "cannot take member '" << m.getName()
                               << "' of " << describe(*base);
  }

  FailureOr<DValue> evalIndex(const IndexExprAST &x) {
    auto base = eval(x.getBase());
    if (failed(base))
      return failure();
    auto index = eval(x.getIndex());
    if (failed(index))
      return failure();
    if (base->kind != DValue::List && base->kind != DValue::Tuple)
      return error(x.location()) << "cannot index " << describe(*base);
    if (index->kind != DValue::Int)
      return error(x.getIndex()->location())
             << "expected an integer index, got " << describe(*index);
    int64_t n = base->elems->size();
    if (index->i < 0 || index->i >= n)
      return error(x.getIndex()->location())
             << "index " << index->i << " out of range for "
             << (base->origin.empty() ? std::string("a list") : base->origin)
             << " of length " << n;
    return (*base->elems)[index->i];
  }

  FailureOr<DValue> evalUnary(const UnaryExprAST &u) {
    auto v = eval(u.getOperand());
    if (failed(v))
      return failure();
    if (u.getOp() == '-') {
      if (v->kind == DValue::Int)
        return DValue::makeInt(-v->i);
      if (v->kind == DValue::Float)
        return DValue::makeFloat(-v->f);
    } else if (v->kind == DValue::Bool) {
      return DValue::makeBool(!v->b);
    }
    return error(u.location()) << "cannot apply '"
                               << getOperatorSpelling(u.getOp()) << "' to "
                               << describe(*v);
  }

  static bool isNumber(const DValue &v) {
    return v.kind == DValue::Int || v.kind == DValue::Float;
  }
  static double asDouble(const DValue &v) {
    return v.kind == DValue::Int ? double(v.i) : v.f;
  }

  FailureOr<DValue> evalBinary(const BinaryExprAST &b) {
    int op = b.getOp();
    auto lhs = eval(b.getLHS());
    if (failed(lhs))
      return failure();
    // Short-circuit logic.
    if (op == tok_and || op == tok_or) {
      if (lhs->kind != DValue::Bool)
        return error(b.getLHS()->location())
               << "expected a bool operand of '" << getOperatorSpelling(op)
               << "', got " << describe(*lhs);
      if ((op == tok_and) != lhs->b)
        return DValue::makeBool(lhs->b);
      auto rhs = eval(b.getRHS());
      if (failed(rhs))
        return failure();
      if (rhs->kind != DValue::Bool)
        return error(b.getRHS()->location())
               << "expected a bool operand of '" << getOperatorSpelling(op)
               << "', got " << describe(*rhs);
      return DValue::makeBool(rhs->b);
    }
    auto rhs = eval(b.getRHS());
    if (failed(rhs))
      return failure();
    auto mismatch = [&]() -> FailureOr<DValue> {
      return error(b.location())
             << "cannot apply '" << getOperatorSpelling(op) << "' to "
             << describe(*lhs) << " and " << describe(*rhs);
    };
    // Tensors: elementwise add/sub/mul of equal types (upstream arith ops;
    // the llm dialect has no elementwise arithmetic op).
    if (lhs->kind == DValue::Tensor || rhs->kind == DValue::Tensor) {
      if (lhs->kind != DValue::Tensor || rhs->kind != DValue::Tensor ||
          (op != '+' && op != '-' && op != '*'))
        return mismatch();
      Type lt = lhs->tensor.getType(), rt = rhs->tensor.getType();
      if (lt != rt)
        return error(b.location())
               << "type mismatch in '" << getOperatorSpelling(op)
               << "': " << typeString(lt) << " vs " << typeString(rt);
      auto tt = dyn_cast<RankedTensorType>(lt);
      if (!tt || !isa<FloatType>(tt.getElementType()))
        return error(b.location())
               << "'" << getOperatorSpelling(op)
               << "' needs float tensors, got " << typeString(lt);
      mlir::Location l = namedLoc(b.location());
      Value r;
      if (op == '+')
        r = arith::AddFOp::create(builder, l, lhs->tensor, rhs->tensor);
      else if (op == '-')
        r = arith::SubFOp::create(builder, l, lhs->tensor, rhs->tensor);
      else
        r = arith::MulFOp::create(builder, l, lhs->tensor, rhs->tensor);
      return DValue::makeTensor(r);
    }
    if (op == tok_eq || op == tok_ne) {
      bool eq;
      if (isNumber(*lhs) && isNumber(*rhs))
        eq = asDouble(*lhs) == asDouble(*rhs);
      else if (lhs->kind == DValue::Str && rhs->kind == DValue::Str)
        eq = lhs->s == rhs->s;
      else if (lhs->kind == DValue::Bool && rhs->kind == DValue::Bool)
        eq = lhs->b == rhs->b;
      else if (lhs->kind == DValue::None || rhs->kind == DValue::None)
        eq = lhs->kind == rhs->kind;
      else
        return mismatch();
      return DValue::makeBool(op == tok_eq ? eq : !eq);
    }
    if (op == '+' && lhs->kind == DValue::Str && rhs->kind == DValue::Str)
      return DValue::makeStr(lhs->s + rhs->s);
    if (op == '+' && lhs->kind == DValue::List && rhs->kind == DValue::List) {
      std::vector<DValue> all(*lhs->elems);
      all.insert(all.end(), rhs->elems->begin(), rhs->elems->end());
      return DValue::makeList(std::move(all));
    }
    if (!isNumber(*lhs) || !isNumber(*rhs))
      return mismatch();
    bool ints = lhs->kind == DValue::Int && rhs->kind == DValue::Int;
    double x = asDouble(*lhs), y = asDouble(*rhs);
    switch (op) {
    case '<': return DValue::makeBool(x < y);
    case tok_le: return DValue::makeBool(x <= y);
    case '>': return DValue::makeBool(x > y);
    case tok_ge: return DValue::makeBool(x >= y);
    default: break;
    }
    if (ints) {
      int64_t p = lhs->i, q = rhs->i;
      switch (op) {
      case '+': return DValue::makeInt(p + q);
      case '-': return DValue::makeInt(p - q);
      case '*': return DValue::makeInt(p * q);
      case '/':
      case '%':
        if (q == 0)
          return error(b.location()) << "division by zero";
        // Integer division floors like Python (all model dims are positive).
        return DValue::makeInt(op == '/' ? p / q : p % q);
      default: break;
      }
    }
    switch (op) {
    case '+': return DValue::makeFloat(x + y);
    case '-': return DValue::makeFloat(x - y);
    case '*': return DValue::makeFloat(x * y);
    case '/':
      if (y == 0)
        return error(b.location()) << "division by zero";
      return DValue::makeFloat(x / y);
    default: break;
    }
    return mismatch();
  }

  //===--------------------------------------------------------------------===//
  // Calls
  //===--------------------------------------------------------------------===//

  struct EvaluatedArg {
    const ArgAST *ast;
    DValue value;
  };

  FailureOr<DValue> evalCall(const CallExprAST &call) {
    // `has(cfg.a.b)` inspects the config without failing on a missing key.
    if (auto *var = dyn_cast<VarExprAST>(call.getCallee());
        var && var->getName() == "has" && !lookupVar("has")) {
      if (call.getArgs().size() != 1 ||
          !isa<MemberExprAST>(call.getArgs()[0].value.get()))
        return error(call.location())
               << "'has' expects one config member, e.g. "
                  "has(cfg.quantization_config)";
      auto v =
          evalMember(*cast<MemberExprAST>(call.getArgs()[0].value.get()), true);
      if (failed(v))
        return failure();
      return DValue::makeBool(v->kind != DValue::None);
    }
    SmallVector<EvaluatedArg> args;
    auto evalArgs = [&]() -> LogicalResult {
      for (const ArgAST &a : call.getArgs()) {
        auto v = eval(a.value.get());
        if (failed(v))
          return failure();
        args.push_back({&a, std::move(*v)});
      }
      return success();
    };
    if (auto *var = dyn_cast<VarExprAST>(call.getCallee());
        var && !lookupVar(var->getName()) && isBuiltin(var->getName())) {
      if (failed(evalArgs()))
        return failure();
      return evalBuiltin(call, var->getName(), args, Type());
    }
    auto callee = eval(call.getCallee());
    if (failed(callee) || failed(evalArgs()))
      return failure();
    if (callee->kind == DValue::Func)
      return callBlock(call, *callee->func, args);
    if (callee->kind == DValue::OpName)
      return createOp(call, callee->s, args, Type());
    return error(call.location()) << "cannot call " << describe(*callee);
  }

  //===--------------------------------------------------------------------===//
  // Builtins
  //===--------------------------------------------------------------------===//

  static bool isBuiltin(llvm::StringRef name) {
    return llvm::is_contained(
        {"weight", "expert_weights", "tensor", "mlir_type", "attr", "f64",
         "type_of",
         "i32", "input", "output", "reshape", "len", "min", "max", "ceil_div",
         "sqrt", "pow", "float", "int", "contains"},
        name);
  }

  /// Checks the argument count of a builtin and that none is a keyword.
  LogicalResult expectArgs(const CallExprAST &call, llvm::StringRef name,
                           ArrayRef<EvaluatedArg> args, size_t n) {
    for (const EvaluatedArg &a : args)
      if (!a.ast->name.empty())
        return error(a.ast->loc) << "'" << name
                                 << "' takes no keyword arguments";
    if (args.size() != n)
      return error(call.location()) << "'" << name << "' expects " << n
                                    << " argument" << (n == 1 ? "" : "s")
                                    << ", got " << args.size();
    return success();
  }

  FailureOr<DValue> expectKind(const EvaluatedArg &a, DValue::Kind kind,
                               llvm::StringRef what) {
    if (a.value.kind != kind)
      return error(a.ast->loc) << "expected " << what << ", got "
                               << describe(a.value);
    return a.value;
  }

  /// A list of non-negative integers (a static shape).
  FailureOr<SmallVector<int64_t>> expectShape(const EvaluatedArg &a) {
    if (a.value.kind != DValue::List)
      return error(a.ast->loc) << "expected a shape list, got "
                               << describe(a.value);
    SmallVector<int64_t> shape;
    for (const DValue &d : *a.value.elems) {
      if (d.kind != DValue::Int ||
          (d.i < 0 && d.i != ShapedType::kDynamic))
        return error(a.ast->loc)
               << "expected non-negative integer dimensions, got "
               << describe(d);
      shape.push_back(d.i);
    }
    return shape;
  }

  FailureOr<DValue> evalBuiltin(const CallExprAST &call, llvm::StringRef name,
                                SmallVectorImpl<EvaluatedArg> &args,
                                Type resultHint) {
    const DslLoc &l = call.location();
    // weight(name, type): a checkpoint tensor, `llm.weight`.
    if (name == "weight") {
      if (failed(expectArgs(call, name, args, 2)))
        return failure();
      auto n = expectKind(args[0], DValue::Str, "a checkpoint tensor name");
      auto t = expectKind(args[1], DValue::TypeVal, "a weight type");
      if (failed(n) || failed(t))
        return failure();
      return createNamed(call, "llm.weight", {},
                         {builder.getNamedAttr("name",
                                               builder.getStringAttr(n->s))},
                         t->type);
    }
    // expert_weights(pattern, num_experts, type): `llm.expert_weights`.
    if (name == "expert_weights") {
      if (failed(expectArgs(call, name, args, 3)))
        return failure();
      auto n = expectKind(args[0], DValue::Str, "a name pattern with {e}");
      auto e = expectKind(args[1], DValue::Int, "an expert count");
      auto t = expectKind(args[2], DValue::TypeVal, "a weight type");
      if (failed(n) || failed(e) || failed(t))
        return failure();
      return createNamed(
          call, "llm.expert_weights", {},
          {builder.getNamedAttr("pattern", builder.getStringAttr(n->s)),
           builder.getNamedAttr("num_experts",
                                builder.getI64IntegerAttr(e->i))},
          t->type);
    }
    // tensor([dims], elt): a ranked tensor type (`dyn` for `?`).
    if (name == "tensor") {
      if (failed(expectArgs(call, name, args, 2)))
        return failure();
      auto shape = expectShape(args[0]);
      auto elt = expectKind(args[1], DValue::TypeVal, "an element type");
      if (failed(shape) || failed(elt))
        return failure();
      return DValue::makeType(RankedTensorType::get(*shape, elt->type));
    }
    // mlir_type("!llm.kda_state<...>") / attr("#llm.kda_mode<chunked>").
    if (name == "mlir_type" || name == "attr") {
      if (failed(expectArgs(call, name, args, 1)))
        return failure();
      auto text = expectKind(args[0], DValue::Str, "a string");
      if (failed(text))
        return failure();
      // Parse errors point at the DSL call, not into the string.
      Type t;
      Attribute at;
      {
        ScopedDiagnosticHandler quiet(ctx,
                                      [](Diagnostic &) { return success(); });
        if (name == "mlir_type")
          t = mlir::parseType(text->s, ctx);
        else
          at = mlir::parseAttribute(text->s, ctx);
      }
      if (name == "mlir_type") {
        if (!t)
          return error(l) << "invalid MLIR type '" << text->s << "'";
        return DValue::makeType(t);
      }
      if (!at)
        return error(l) << "invalid MLIR attribute '" << text->s << "'";
      return DValue::makeAttr(at);
    }
    // f64(x) / i32(x): typed scalar attributes (defaults are f32 and i64).
    if (name == "f64" || name == "i32") {
      if (failed(expectArgs(call, name, args, 1)))
        return failure();
      if (!isNumber(args[0].value))
        return error(args[0].ast->loc) << "expected a number, got "
                                       << describe(args[0].value);
      if (name == "f64")
        return DValue::makeAttr(builder.getF64FloatAttr(asDouble(args[0].value)));
      return DValue::makeAttr(builder.getI32IntegerAttr(
          static_cast<int32_t>(asDouble(args[0].value))));
    }
    // type_of(x): the type of a value, for annotations (`let y: t = ...`).
    if (name == "type_of") {
      if (failed(expectArgs(call, name, args, 1)))
        return failure();
      auto v = expectKind(args[0], DValue::Tensor, "a value");
      if (failed(v))
        return failure();
      return DValue::makeType(v->tensor.getType());
    }
    // input(name, type): a further entry argument (a cache or state).
    if (name == "input") {
      if (failed(expectArgs(call, name, args, 2)))
        return failure();
      auto n = expectKind(args[0], DValue::Str, "an argument name");
      auto t = expectKind(args[1], DValue::TypeVal, "an argument type");
      if (failed(n) || failed(t))
        return failure();
      if (!currentFunc)
        return error(l) << "'input' is only valid inside an entry";
      mlir::Block &body = currentFunc.getBody().front();
      std::string full;
      for (const std::string &p : namePrefix)
        full += p + ".";
      full += n->s;
      Value arg = body.addArgument(
          t->type, NameLoc::get(builder.getStringAttr(full), loc(l)));
      return DValue::makeTensor(arg);
    }
    // output(value): a further entry result (the updated cache or state).
    if (name == "output") {
      if (failed(expectArgs(call, name, args, 1)))
        return failure();
      auto v = expectKind(args[0], DValue::Tensor, "a value");
      if (failed(v))
        return failure();
      extraResults.push_back(v->tensor);
      return DValue();
    }
    // reshape(x, [dims]): regroups trailing static dimensions (leading `dyn`
    // kept) with tensor.expand_shape / tensor.collapse_shape.
    if (name == "reshape") {
      if (failed(expectArgs(call, name, args, 2)))
        return failure();
      auto x = expectKind(args[0], DValue::Tensor, "a tensor");
      auto shape = expectShape(args[1]);
      if (failed(x) || failed(shape))
        return failure();
      return emitReshape(call, x->tensor, *shape);
    }
    if (name == "len") {
      if (failed(expectArgs(call, name, args, 1)))
        return failure();
      if (args[0].value.kind == DValue::Str)
        return DValue::makeInt(args[0].value.s.size());
      if (args[0].value.kind != DValue::List &&
          args[0].value.kind != DValue::Tuple)
        return error(args[0].ast->loc) << "expected a list, got "
                                       << describe(args[0].value);
      return DValue::makeInt(args[0].value.elems->size());
    }
    if (name == "contains") {
      if (failed(expectArgs(call, name, args, 2)))
        return failure();
      auto list = expectKind(args[0], DValue::List, "a list");
      if (failed(list))
        return failure();
      const DValue &x = args[1].value;
      for (const DValue &e : *list->elems) {
        if (isNumber(e) && isNumber(x) && asDouble(e) == asDouble(x))
          return DValue::makeBool(true);
        if (e.kind == DValue::Str && x.kind == DValue::Str && e.s == x.s)
          return DValue::makeBool(true);
      }
      return DValue::makeBool(false);
    }
    // Numeric helpers.
    size_t arity = llvm::StringSwitch<size_t>(name)
                       .Cases({"sqrt", "float", "int"}, 1)
                       .Default(2);
    if (failed(expectArgs(call, name, args, arity)))
      return failure();
    for (const EvaluatedArg &a : args)
      if (!isNumber(a.value))
        return error(a.ast->loc) << "'" << name << "' expects numbers, got "
                                 << describe(a.value);
    const DValue &a0 = args[0].value;
    if (name == "sqrt") {
      if (asDouble(a0) < 0)
        return error(l) << "sqrt of a negative number";
      return DValue::makeFloat(std::sqrt(asDouble(a0)));
    }
    if (name == "float")
      return DValue::makeFloat(asDouble(a0));
    if (name == "int")
      return DValue::makeInt(static_cast<int64_t>(asDouble(a0)));
    const DValue &a1 = args[1].value;
    bool ints = a0.kind == DValue::Int && a1.kind == DValue::Int;
    if (name == "pow")
      return DValue::makeFloat(std::pow(asDouble(a0), asDouble(a1)));
    if (name == "ceil_div") {
      if (!ints || a1.i <= 0)
        return error(l) << "'ceil_div' expects integers and a positive divisor";
      return DValue::makeInt((a0.i + a1.i - 1) / a1.i);
    }
    bool pickFirst = name == "min" ? asDouble(a0) <= asDouble(a1)
                                   : asDouble(a0) >= asDouble(a1);
    return pickFirst ? a0 : a1;
  }

  /// Creates op `name` with explicit attributes and one result type.
  FailureOr<DValue> createNamed(const CallExprAST &call, llvm::StringRef name,
                                ValueRange operands,
                                ArrayRef<NamedAttribute> attrs, Type result) {
    std::optional<RegisteredOperationName> opName =
        RegisteredOperationName::lookup(name, ctx);
    if (!opName)
      return error(call.location()) << "the llm dialect has no '" << name
                                    << "' op";
    // A weight built while evaluating `let y = f(x, weight(...))` is named
    // "<scope>.y_weight", so the name "y" stays with the value it binds.
    mlir::Location l = loc(call.location());
    if (!currentName.empty()) {
      std::string full;
      for (const std::string &p : namePrefix)
        full += p + ".";
      full += currentName + "_weight";
      l = NameLoc::get(StringAttr::get(ctx, full), l);
    }
    OperationState state(l, *opName);
    state.addOperands(operands);
    state.addTypes(result);
    Operation *op = builder.create(state);
    for (const NamedAttribute &a : attrs)
      op->setAttr(a.getName(), a.getValue());
    if (failed(mlir::verify(op, /*verifyRecursively=*/false)))
      return failure();
    return DValue::makeTensor(op->getResult(0));
  }

  FailureOr<DValue> emitReshape(const CallExprAST &call, Value x,
                                ArrayRef<int64_t> to) {
    auto src = dyn_cast<RankedTensorType>(x.getType());
    if (!src)
      return error(call.location()) << "reshape expects a ranked tensor";
    ArrayRef<int64_t> from = src.getShape();
    auto mismatch = [&]() -> FailureOr<DValue> {
      return error(call.location())
             << "cannot reshape " << typeString(src) << " to "
             << typeString(RankedTensorType::get(to, src.getElementType()))
             << ": only regrouping of static trailing dimensions is supported";
    };
    // Group the longer shape's dims onto the shorter shape's dims.
    bool expand = to.size() >= from.size();
    ArrayRef<int64_t> small = expand ? from : to, large = expand ? to : from;
    SmallVector<ReassociationIndices> groups;
    size_t k = 0;
    for (size_t s = 0; s < small.size(); ++s) {
      ReassociationIndices group;
      if (ShapedType::isDynamic(small[s])) {
        if (k >= large.size() || !ShapedType::isDynamic(large[k]))
          return mismatch();
        group.push_back(k++);
      } else {
        int64_t p = 1;
        while (k < large.size() && !ShapedType::isDynamic(large[k]) &&
               (p < small[s] || group.empty())) {
          p *= large[k];
          group.push_back(k++);
        }
        if (p != small[s])
          return mismatch();
      }
      groups.push_back(group);
    }
    // Trailing unit dims join the last group.
    while (k < large.size() && large[k] == 1 && !groups.empty())
      groups.back().push_back(k++);
    if (k != large.size())
      return mismatch();
    auto resultType = RankedTensorType::get(to, src.getElementType());
    mlir::Location l = namedLoc(call.location());
    if (expand)
      return DValue::makeTensor(
          tensor::ExpandShapeOp::create(builder, l, resultType, x, groups));
    return DValue::makeTensor(
        tensor::CollapseShapeOp::create(builder, l, resultType, x, groups));
  }

  /// Inlines `f` with `args` bound to its parameters.
  FailureOr<DValue> callBlock(const CallExprAST &call, const FunctionAST &f,
                              SmallVectorImpl<EvaluatedArg> &args) {
    if (callDepth > 64)
      return error(call.location()) << "blocks call each other too deeply";
    const auto &params = f.getParams();
    std::vector<std::optional<DValue>> bound(params.size());
    size_t positional = 0;
    for (EvaluatedArg &a : args) {
      if (a.ast->name.empty()) {
        if (positional >= params.size())
          return error(a.ast->loc) << "too many arguments to '" << f.getName()
                                   << "': expected " << params.size();
        bound[positional++] = a.value;
        continue;
      }
      auto it = llvm::find_if(
          params, [&](const ParamAST &p) { return p.name == a.ast->name; });
      if (it == params.end())
        return error(a.ast->loc) << "'" << f.getName()
                                 << "' has no parameter '" << a.ast->name
                                 << "'";
      size_t idx = it - params.begin();
      if (bound[idx])
        return error(a.ast->loc) << "parameter '" << a.ast->name
                                 << "' of '" << f.getName()
                                 << "' given twice";
      bound[idx] = a.value;
    }
    // A block sees its parameters and the globals only.
    std::vector<llvm::StringMap<DValue>> savedScopes;
    std::swap(savedScopes, scopes);
    scopes.emplace_back();
    std::string savedName = currentName;
    llvm::scope_exit restore([&] {
      std::swap(savedScopes, scopes);
      currentName = savedName;
      --callDepth;
    });
    ++callDepth;
    for (size_t k = 0; k < params.size(); ++k) {
      const ParamAST &p = params[k];
      if (!bound[k]) {
        if (!p.defaultValue)
          return error(call.location())
                 << "missing argument '" << p.name << "' in call to '"
                 << f.getName() << "'";
        auto v = eval(p.defaultValue.get());
        if (failed(v))
          return failure();
        bound[k] = *v;
      }
      if (p.type && failed(checkType(*bound[k], *p.type, p.loc,
                                     "argument '" + p.name + "' of '" +
                                         f.getName().str() + "'")))
        return failure();
      scopes.back()[p.name] = *bound[k];
    }
    returnValue = DValue();
    Flow flow = emitBlock(f.getBody(), savedName);
    if (flow == Flow::Error)
      return failure();
    DValue result = returnValue;
    returnValue = DValue();
    return result;
  }

  /// Checks `v` against a declared type (`?` matches any size).
  LogicalResult checkType(const DValue &v, const TypeAST &t, const DslLoc &l,
                          const std::string &what) {
    auto expected = resolveType(t);
    if (failed(expected))
      return failure();
    if (t.isTuple) {
      if (v.kind != DValue::Tuple || v.elems->size() != t.elements.size())
        return error(l) << "type mismatch for " << what << ": expected a "
                        << t.elements.size() << "-tuple, got " << describe(v);
      return success();
    }
    if (v.kind != DValue::Tensor)
      return error(l) << "type mismatch for " << what << ": expected "
                      << typeString(*expected) << ", got " << describe(v);
    Type actual = v.tensor.getType();
    auto et = dyn_cast<RankedTensorType>(*expected);
    auto at = dyn_cast<RankedTensorType>(actual);
    bool ok = et && at ? et.getElementType() == at.getElementType() &&
                             et.getRank() == at.getRank()
                       : *expected == actual;
    if (ok && et && at)
      for (auto [e, a] : llvm::zip(et.getShape(), at.getShape()))
        if (!ShapedType::isDynamic(e) && e != a)
          ok = false;
    if (!ok)
      return error(l) << "type mismatch for " << what << ": expected "
                      << typeString(*expected) << ", got "
                      << typeString(actual);
    return success();
  }

  /// Converts a type annotation; tuple annotations are not a single type
  /// (callers use resolveTypes).
  FailureOr<Type> resolveType(const TypeAST &t) {
    if (t.isTuple)
      return Type(builder.getNoneType());
    // `elt` is a builtin element type or a variable holding a type value
    // (a whole type when the annotation is just a name).
    Type elt = elementType(t.elementType);
    if (!elt) {
      DValue *v = lookupVar(t.elementType);
      if (!v || v->kind != DValue::TypeVal)
        return error(t.elementLoc)
               << "unknown " << (t.isNamed ? "type" : "element type") << " '"
               << t.elementType << "'";
      elt = v->type;
    }
    if (t.isNamed)
      return elt;
    SmallVector<int64_t> shape;
    for (const ExprPtr &d : t.dims) {
      if (!d) {
        shape.push_back(ShapedType::kDynamic);
        continue;
      }
      auto v = eval(d.get());
      if (failed(v))
        return failure();
      if (v->kind != DValue::Int || v->i < 0)
        return error(d->location())
               << "expected a non-negative integer dimension, got "
               << describe(*v);
      shape.push_back(v->i);
    }
    return Type(RankedTensorType::get(shape, elt));
  }

  FailureOr<SmallVector<Type>> resolveTypes(const TypeAST &t) {
    SmallVector<Type> types;
    if (!t.isTuple) {
      auto one = resolveType(t);
      if (failed(one))
        return failure();
      types.push_back(*one);
      return types;
    }
    for (const auto &e : t.elements) {
      auto one = resolveType(*e);
      if (failed(one))
        return failure();
      types.push_back(*one);
    }
    return types;
  }

  /// Converts a keyword argument to an attribute.
  FailureOr<Attribute> toAttribute(const DValue &v, const DslLoc &l) {
    switch (v.kind) {
    case DValue::Int:
      return Attribute(builder.getI64IntegerAttr(v.i));
    case DValue::Float:
      return Attribute(builder.getF32FloatAttr(v.f));
    case DValue::Bool:
      return Attribute(builder.getBoolAttr(v.b));
    case DValue::Str:
      return Attribute(builder.getStringAttr(v.s));
    case DValue::TypeVal:
      return Attribute(TypeAttr::get(v.type));
    case DValue::AttrVal:
      return v.attr;
    case DValue::List: {
      if (llvm::all_of(*v.elems,
                       [](const DValue &e) { return e.kind == DValue::Int; })) {
        SmallVector<int64_t> ints;
        for (const DValue &e : *v.elems)
          ints.push_back(e.i);
        return Attribute(builder.getDenseI64ArrayAttr(ints));
      }
      SmallVector<Attribute> attrs;
      for (const DValue &e : *v.elems) {
        auto a = toAttribute(e, l);
        if (failed(a))
          return failure();
        attrs.push_back(*a);
      }
      return Attribute(builder.getArrayAttr(attrs));
    }
    default:
      return error(l) << "cannot use " << describe(v) << " as an attribute";
    }
  }

  /// Creates the registered op `name` from positional operands and keyword
  /// attributes. `resultHint` (a type or tuple type from a `let`) gives the
  /// result types; otherwise they are inferred.
  FailureOr<DValue> createOp(const CallExprAST &call, llvm::StringRef name,
                             SmallVectorImpl<EvaluatedArg> &args,
                             Type resultHint) {
    std::optional<RegisteredOperationName> opName =
        RegisteredOperationName::lookup(name, ctx);
    if (!opName)
      return error(call.getCallee()->location())
             << "unknown op '" << name << "'";
    mlir::Location l = namedLoc(call.location());
    SmallVector<Value> operands;
    SmallVector<int32_t> segments;
    SmallVector<NamedAttribute> attrs;
    for (EvaluatedArg &a : args) {
      if (!a.ast->name.empty()) {
        auto attr = toAttribute(a.value, a.ast->loc);
        if (failed(attr))
          return failure();
        attrs.push_back(builder.getNamedAttr(a.ast->name, *attr));
        continue;
      }
      switch (a.value.kind) {
      case DValue::Tensor:
        operands.push_back(a.value.tensor);
        segments.push_back(1);
        break;
      case DValue::None:
        segments.push_back(0);
        break;
      case DValue::List:
      case DValue::Tuple: {
        int32_t n = 0;
        for (const DValue &e : *a.value.elems) {
          if (e.kind != DValue::Tensor)
            return error(a.ast->loc)
                   << "operand list of '" << name << "' holds " << describe(e);
          operands.push_back(e.tensor);
          ++n;
        }
        segments.push_back(n);
        break;
      }
      default:
        return error(a.ast->loc)
               << "operand of '" << name << "' must be a value, got "
               << describe(a.value) << "; pass attributes as name = value";
      }
    }
    if (opName->hasTrait<OpTrait::AttrSizedOperandSegments>())
      attrs.push_back(builder.getNamedAttr(
          "operandSegmentSizes", builder.getDenseI32ArrayAttr(segments)));

    // Sets the attributes; an inherent attribute whose storage rejects the
    // default kind (i64 for integers, f32 for floats) is retried as the
    // other numeric kinds (JSON cannot tell -5.0 from -5).
    Attribute rejected;
    StringAttr rejectedName;
    auto setAttrs = [&](Operation *op) {
      for (const NamedAttribute &a : attrs) {
        op->setAttr(a.getName(), a.getValue());
        if (!op->getPropertiesStorageSize() ||
            !op->getInherentAttr(a.getName()).has_value() ||
            op->getAttr(a.getName()) == a.getValue())
          continue;
        SmallVector<Attribute> alternatives;
        if (auto i = dyn_cast<IntegerAttr>(a.getValue())) {
          double v = static_cast<double>(i.getInt());
          alternatives = {builder.getF32FloatAttr(v), builder.getF64FloatAttr(v),
                          builder.getI32IntegerAttr(i.getInt())};
        } else if (auto f = dyn_cast<FloatAttr>(a.getValue())) {
          alternatives = {builder.getF64FloatAttr(f.getValueAsDouble())};
        }
        bool ok = false;
        for (Attribute alt : alternatives) {
          op->setAttr(a.getName(), alt);
          if (op->getAttr(a.getName()) == alt) {
            ok = true;
            break;
          }
        }
        if (!ok && !rejected) {
          rejected = a.getValue();
          rejectedName = a.getName();
        }
      }
    };
    auto build = [&](TypeRange resultTypes) {
      OperationState state(l, *opName);
      state.addOperands(operands);
      state.addTypes(resultTypes);
      Operation *op = builder.create(state);
      setAttrs(op);
      return op;
    };

    SmallVector<Type> resultTypes;
    if (resultHint) {
      if (auto tuple = dyn_cast<TupleType>(resultHint))
        llvm::append_range(resultTypes, tuple.getTypes());
      else
        resultTypes.push_back(resultHint);
    } else if (opName->hasInterface<InferTypeOpInterface>()) {
      Operation *probe = build({});
      auto iface = cast<InferTypeOpInterface>(probe);
      LogicalResult inferred = iface.inferReturnTypes(
          ctx, l, probe->getOperands(), probe->getRawDictionaryAttrs(),
          probe->getPropertiesStorage(), probe->getRegions(), resultTypes);
      probe->erase();
      if (failed(inferred))
        return error(call.location())
               << "cannot infer the result type of '" << name << "'";
    } else {
      return error(call.location())
             << "cannot infer the result type of '" << name
             << "'; bind it with a typed let, e.g. let y: [?, 4096] bf16 = ...";
    }
    Operation *op = build(resultTypes);
    if (rejected) {
      auto arg = llvm::find_if(args, [&](const EvaluatedArg &a) {
        return a.ast->name == rejectedName.getValue();
      });
      op->erase();
      if (arg == args.end())
        return error(call.location())
               << "'" << name << "' does not accept " << segments.size()
               << " operand groups (operands and none placeholders)";
      return error(arg->ast->loc)
             << "attribute '" << rejectedName.getValue() << "' of '" << name
             << "' does not accept " << rejected;
    }
    if (failed(mlir::verify(op, /*verifyRecursively=*/false)))
      return failure();
    if (op->getNumResults() == 1)
      return DValue::makeTensor(op->getResult(0));
    std::vector<DValue> results;
    for (Value r : op->getResults())
      results.push_back(DValue::makeTensor(r));
    return DValue::makeList(std::move(results), /*tuple=*/true);
  }

  //===--------------------------------------------------------------------===//
  // Statements
  //===--------------------------------------------------------------------===//

  /// Emits `block` in a new variable scope. `outerName` is restored as the
  /// current name while evaluating a `return`, so the ops that compute a
  /// block's result are named after the caller's variable.
  Flow emitBlock(const DslBlock &block, const std::string &outerName) {
    scopes.emplace_back();
    llvm::scope_exit pop([&] { scopes.pop_back(); });
    for (const StmtPtr &s : block) {
      Flow flow = emitStmt(s.get(), outerName);
      if (flow != Flow::Normal)
        return flow;
    }
    return Flow::Normal;
  }

  Flow emitStmt(const StmtAST *stmt, const std::string &outerName) {
    return llvm::TypeSwitch<const StmtAST *, Flow>(stmt)
        .Case([&](const LetStmtAST *s) { return emitLet(*s); })
        .Case([&](const AssignStmtAST *s) { return emitAssign(*s); })
        .Case([&](const ForStmtAST *s) { return emitFor(*s, outerName); })
        .Case([&](const IfStmtAST *s) { return emitIf(*s, outerName); })
        .Case([&](const ReturnStmtAST *s) { return emitReturn(*s, outerName); })
        .Case([&](const ScopeStmtAST *s) { return emitScope(*s, outerName); })
        .Case([&](const AssertStmtAST *s) { return emitAssert(*s); })
        .Case([&](const ExprStmtAST *s) {
          currentName.clear();
          return failed(eval(s->getExpr())) ? Flow::Error : Flow::Normal;
        });
  }

  /// Evaluates the right side of a let/assign, using the annotation as the
  /// result type of a direct op call.
  FailureOr<DValue> evalBound(const ExprAST *value, const TypeAST *type) {
    if (type)
      if (auto *call = dyn_cast<CallExprAST>(value);
          call && isa<MemberExprAST>(call->getCallee())) {
        auto callee = eval(call->getCallee());
        if (failed(callee))
          return failure();
        if (callee->kind == DValue::OpName) {
          auto types = resolveTypes(*type);
          if (failed(types))
            return failure();
          Type hint = type->isTuple ? Type(TupleType::get(ctx, *types))
                                    : (*types)[0];
          SmallVector<EvaluatedArg> args;
          for (const ArgAST &a : call->getArgs()) {
            auto v = eval(a.value.get());
            if (failed(v))
              return failure();
            args.push_back({&a, std::move(*v)});
          }
          return createOp(*call, callee->s, args, hint);
        }
      }
    auto v = eval(value);
    if (failed(v))
      return failure();
    if (type && failed(checkType(*v, *type, type->loc, "the let")))
      return failure();
    return v;
  }

  Flow emitLet(const LetStmtAST &s) {
    const auto &names = s.getNames();
    currentName = names.size() == 1 ? names[0] : llvm::join(names, "_");
    uint64_t mark = opCounter;
    auto v = evalBound(s.getValue(), s.getType());
    if (succeeded(v) && !s.isDestructuring())
      nameValue(*v, currentName, mark);
    currentName.clear();
    if (failed(v))
      return Flow::Error;
    if (!s.isDestructuring()) {
      scopes.back()[names[0]] = *v;
      return Flow::Normal;
    }
    if ((v->kind != DValue::Tuple && v->kind != DValue::List) ||
        v->elems->size() != names.size()) {
      error(s.location()) << "cannot destructure " << describe(*v) << " into "
                          << names.size() << " names";
      return Flow::Error;
    }
    for (auto [n, e] : llvm::zip(names, *v->elems)) {
      // One op may define several of the names; it keeps the joined name.
      if (e.kind == DValue::Tensor && e.tensor.getDefiningOp() &&
          e.tensor.getDefiningOp()->getNumResults() == 1)
        nameValue(e, n, mark);
      scopes.back()[n] = e;
    }
    return Flow::Normal;
  }

  Flow emitAssign(const AssignStmtAST &s) {
    DValue *target = lookupVar(s.getName());
    if (!target) {
      error(s.location()) << "assignment to undeclared variable '"
                          << s.getName() << "'; declare it with let";
      return Flow::Error;
    }
    currentName = s.getName().str();
    uint64_t mark = opCounter;
    auto v = eval(s.getValue());
    if (succeeded(v))
      nameValue(*v, currentName, mark);
    currentName.clear();
    if (failed(v))
      return Flow::Error;
    *lookupVar(s.getName()) = *v;
    return Flow::Normal;
  }

  FailureOr<int64_t> evalInt(const ExprAST *e, llvm::StringRef what) {
    auto v = eval(e);
    if (failed(v))
      return failure();
    if (v->kind != DValue::Int)
      return error(e->location())
             << "expected an integer " << what << ", got " << describe(*v);
    return v->i;
  }

  Flow emitFor(const ForStmtAST &s, const std::string &outerName) {
    auto lo = evalInt(s.getLo(), "loop bound");
    if (failed(lo))
      return Flow::Error;
    auto hi = evalInt(s.getHi(), "loop bound");
    if (failed(hi))
      return Flow::Error;
    if (*hi - *lo > (1 << 20)) {
      error(s.location()) << "loop of " << (*hi - *lo)
                          << " iterations is too long";
      return Flow::Error;
    }
    for (int64_t i = *lo; i < *hi; ++i) {
      scopes.emplace_back();
      scopes.back()[s.getVar()] = DValue::makeInt(i);
      Flow flow = emitBlock(s.getBody(), outerName);
      scopes.pop_back();
      if (flow != Flow::Normal)
        return flow;
    }
    return Flow::Normal;
  }

  Flow emitIf(const IfStmtAST &s, const std::string &outerName) {
    auto c = eval(s.getCond());
    if (failed(c))
      return Flow::Error;
    if (c->kind != DValue::Bool) {
      error(s.getCond()->location())
          << "expected a bool condition, got " << describe(*c);
      return Flow::Error;
    }
    return emitBlock(c->b ? s.getThen() : s.getElse(), outerName);
  }

  Flow emitReturn(const ReturnStmtAST &s, const std::string &outerName) {
    returnValue = DValue();
    if (!s.getValue())
      return Flow::Returned;
    currentName = outerName;
    // The caller's name applies without this block's scope prefixes.
    std::vector<std::string> savedPrefix = namePrefix;
    auto v = eval(s.getValue());
    namePrefix = savedPrefix;
    currentName.clear();
    if (failed(v))
      return Flow::Error;
    returnValue = *v;
    return Flow::Returned;
  }

  Flow emitScope(const ScopeStmtAST &s, const std::string &outerName) {
    auto name = eval(s.getName());
    if (failed(name))
      return Flow::Error;
    if (name->kind != DValue::Str || name->s.empty()) {
      error(s.getName()->location())
          << "expected a non-empty string scope name, got " << describe(*name);
      return Flow::Error;
    }
    namePrefix.push_back(name->s);
    Flow flow = emitBlock(s.getBody(), outerName);
    namePrefix.pop_back();
    return flow;
  }

  Flow emitAssert(const AssertStmtAST &s) {
    auto c = eval(s.getCond());
    if (failed(c))
      return Flow::Error;
    if (c->kind != DValue::Bool) {
      error(s.getCond()->location())
          << "expected a bool condition, got " << describe(*c);
      return Flow::Error;
    }
    if (c->b)
      return Flow::Normal;
    auto m = eval(s.getMessage());
    if (failed(m))
      return Flow::Error;
    std::string text;
    if (!formatValue(*m, text))
      text = describe(*m);
    error(s.location()) << "assertion failed: " << text;
    return Flow::Error;
  }

  //===--------------------------------------------------------------------===//
  // Entries
  //===--------------------------------------------------------------------===//

  LogicalResult emitEntry(const FunctionAST &f) {
    scopes.clear();
    scopes.emplace_back();
    namePrefix.clear();
    extraResults.clear();
    SmallVector<Type> argTypes;
    for (const ParamAST &p : f.getParams()) {
      if (!p.type)
        return error(p.loc) << "entry parameter '" << p.name
                            << "' needs a type";
      auto t = resolveType(*p.type);
      if (failed(t))
        return failure();
      if (p.type->isTuple)
        return error(p.type->loc) << "entry parameters cannot be tuples";
      argTypes.push_back(*t);
    }
    builder.setInsertionPointToEnd(module->getBody());
    currentFunc = func::FuncOp::create(builder, loc(f.location()), f.getName(),
                                       builder.getFunctionType(argTypes, {}));
    mlir::Block *body = currentFunc.addEntryBlock();
    for (auto [p, arg] : llvm::zip(f.getParams(), body->getArguments())) {
      arg.setLoc(NameLoc::get(builder.getStringAttr(p.name), loc(p.loc)));
      scopes.back()[p.name] = DValue::makeTensor(arg);
    }
    builder.setInsertionPointToStart(body);
    returnValue = DValue();
    Flow flow = emitBlock(f.getBody(), "");
    if (flow == Flow::Error)
      return failure();
    SmallVector<Value> results;
    if (flow == Flow::Returned) {
      const DValue &r = returnValue;
      auto add = [&](const DValue &v) -> LogicalResult {
        if (v.kind != DValue::Tensor)
          return error(f.location()) << "entry '" << f.getName()
                                     << "' must return values, got "
                                     << describe(v);
        results.push_back(v.tensor);
        return success();
      };
      if (r.kind == DValue::Tuple) {
        for (const DValue &e : *r.elems)
          if (failed(add(e)))
            return failure();
      } else if (r.kind != DValue::None && failed(add(r))) {
        return failure();
      }
    }
    llvm::append_range(results, extraResults);
    func::ReturnOp::create(builder, loc(f.location()), results);
    currentFunc.setFunctionType(builder.getFunctionType(
        body->getArgumentTypes(), TypeRange(ValueRange(results))));
    return success();
  }

};

} // namespace

OwningOpRef<ModuleOp> mlir::strata::dsl::mlirGen(MLIRContext &context,
                                                 const ModuleAST &module,
                                                 const ModelConfig &config,
                                                 const DslOptions &options) {
  return MLIRGenImpl(context, config, options).generate(module);
}
