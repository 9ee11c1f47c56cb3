//===- size_expr.cpp - size expressions of the artifact -------------------===//
//
// Part of strata. See size_expr.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/loader/size_expr.h"

#include <vector>

namespace strata::runtime {

using artifact::SizeOpcode;
using artifact::SizeSymbol;

Status validateSizeExpr(const artifact::SizeExpr *expr,
                        std::string_view where) {
  if (!expr || !expr->ops() || expr->ops()->size() == 0)
    return invalidArgument("{}: size expression is empty", where);
  size_t depth = 0;
  size_t index = 0;
  for (const artifact::SizeOp *op : *expr->ops()) {
    switch (op->opcode()) {
    case static_cast<uint8_t>(SizeOpcode::constant):
      if (op->operand() < 0)
        return invalidArgument("{}: op {}: negative constant {}", where, index,
                               op->operand());
      ++depth;
      break;
    case static_cast<uint8_t>(SizeOpcode::symbol):
      if (op->operand() < 0 ||
          op->operand() > static_cast<int64_t>(SizeSymbol::MAX))
        return invalidArgument("{}: op {}: unknown size symbol {}", where,
                               index, op->operand());
      ++depth;
      break;
    case static_cast<uint8_t>(SizeOpcode::add):
    case static_cast<uint8_t>(SizeOpcode::mul):
    case static_cast<uint8_t>(SizeOpcode::ceil_div):
    case static_cast<uint8_t>(SizeOpcode::align_up):
    case static_cast<uint8_t>(SizeOpcode::max):
    case static_cast<uint8_t>(SizeOpcode::min):
    case static_cast<uint8_t>(SizeOpcode::less):
      if (op->operand() != 0)
        return invalidArgument("{}: op {}: operand {} on a binary op", where,
                               index, op->operand());
      if (depth < 2)
        return invalidArgument("{}: op {}: stack underflow", where, index);
      --depth;
      break;
    default:
      return invalidArgument("{}: op {}: unknown opcode {}", where, index,
                             op->opcode());
    }
    ++index;
  }
  if (depth != 1)
    return invalidArgument("{}: size expression leaves {} values, expected 1",
                           where, depth);
  return okStatus();
}

StatusOr<uint64_t> evaluateSizeExpr(const artifact::SizeExpr *expr,
                                    const RuntimeSizes &sizes) {
  std::vector<uint64_t> stack;
  stack.reserve(expr->ops()->size());
  for (const artifact::SizeOp *op : *expr->ops()) {
    auto opcode = static_cast<SizeOpcode>(op->opcode());
    if (opcode == SizeOpcode::constant) {
      stack.push_back(static_cast<uint64_t>(op->operand()));
      continue;
    }
    if (opcode == SizeOpcode::symbol) {
      stack.push_back(sizes[static_cast<SizeSymbol>(op->operand())]);
      continue;
    }
    uint64_t b = stack.back();
    stack.pop_back();
    uint64_t a = stack.back();
    uint64_t result = 0;
    switch (opcode) {
    case SizeOpcode::add:
      if (__builtin_add_overflow(a, b, &result))
        return outOfRange("size expression overflows: {} + {}", a, b);
      break;
    case SizeOpcode::mul:
      if (__builtin_mul_overflow(a, b, &result))
        return outOfRange("size expression overflows: {} * {}", a, b);
      break;
    case SizeOpcode::ceil_div:
      if (b == 0)
        return invalidArgument("size expression divides {} by zero", a);
      result = a / b + (a % b != 0);
      break;
    case SizeOpcode::align_up:
      if (b == 0)
        return invalidArgument("size expression aligns {} to zero", a);
      result = a / b + (a % b != 0);
      if (__builtin_mul_overflow(result, b, &result))
        return outOfRange("size expression overflows aligning {} to {}", a, b);
      break;
    case SizeOpcode::max:
      result = a > b ? a : b;
      break;
    case SizeOpcode::min:
      result = a < b ? a : b;
      break;
    case SizeOpcode::less:
      result = a < b ? 1 : 0;
      break;
    default:
      return internalError("unvalidated size expression");
    }
    stack.back() = result;
  }
  return stack.back();
}

std::string formatSizeExpr(const artifact::SizeExpr *expr) {
  std::vector<std::string> stack;
  for (const artifact::SizeOp *op : *expr->ops()) {
    auto opcode = static_cast<SizeOpcode>(op->opcode());
    if (opcode == SizeOpcode::constant) {
      stack.push_back(std::to_string(op->operand()));
      continue;
    }
    if (opcode == SizeOpcode::symbol) {
      stack.push_back(artifact::EnumNameSizeSymbol(
          static_cast<SizeSymbol>(op->operand())));
      continue;
    }
    std::string b = std::move(stack.back());
    stack.pop_back();
    std::string a = std::move(stack.back());
    switch (opcode) {
    case SizeOpcode::add:
      stack.back() = "(" + a + " + " + b + ")";
      break;
    case SizeOpcode::mul:
      stack.back() = "(" + a + " * " + b + ")";
      break;
    case SizeOpcode::ceil_div:
      stack.back() = "ceil_div(" + a + ", " + b + ")";
      break;
    case SizeOpcode::align_up:
      stack.back() = "align_up(" + a + ", " + b + ")";
      break;
    case SizeOpcode::min:
      stack.back() = "min(" + a + ", " + b + ")";
      break;
    case SizeOpcode::less:
      stack.back() = "(" + a + " < " + b + ")";
      break;
    default:
      stack.back() = "max(" + a + ", " + b + ")";
      break;
    }
  }
  return stack.back();
}

} // namespace strata::runtime
