//===- size_expr_test.cpp - tests of size expressions ---------------------===//

#include "runtime/loader/size_expr.h"

#include <gtest/gtest.h>

namespace strata::runtime {
namespace {

using artifact::SizeOp;
using artifact::SizeOpcode;
using artifact::SizeSymbol;

/// Owns a SizeExpr built from `ops`.
class Expr {
public:
  explicit Expr(std::vector<SizeOp> ops) {
    builder_.Finish(artifact::CreateSizeExprDirect(builder_, &ops));
  }
  const artifact::SizeExpr *get() const {
    return flatbuffers::GetRoot<artifact::SizeExpr>(
        builder_.GetBufferPointer());
  }

private:
  flatbuffers::FlatBufferBuilder builder_;
};

SizeOp c(int64_t v) { return SizeOp(uint8_t(SizeOpcode::constant), v); }
SizeOp s(SizeSymbol v) {
  return SizeOp(uint8_t(SizeOpcode::symbol), int64_t(v));
}
SizeOp op(SizeOpcode code) { return SizeOp(uint8_t(code), 0); }

// Tests evaluation and formatting of every opcode.
TEST(SizeExpr, EvaluatesAndFormats) {
  RuntimeSizes sizes;
  sizes[SizeSymbol::num_tokens] = 10;
  sizes[SizeSymbol::max_selected] = 3;
  // align_up(ceil_div(num_tokens, 4) * 4096 + max(max_selected, 7), 256)
  Expr e({s(SizeSymbol::num_tokens), c(4), op(SizeOpcode::ceil_div), c(4096),
          op(SizeOpcode::mul), s(SizeSymbol::max_selected), c(7),
          op(SizeOpcode::max), op(SizeOpcode::add), c(256),
          op(SizeOpcode::align_up)});
  ASSERT_TRUE(validateSizeExpr(e.get(), "e").ok());
  EXPECT_EQ(*evaluateSizeExpr(e.get(), sizes), 12544u); // 12295 rounded up
  EXPECT_EQ(formatSizeExpr(e.get()),
            "align_up(((ceil_div(num_tokens, 4) * 4096) + max(max_selected, "
            "7)), 256)");
  // min(num_tokens, 63), min(max_selected, 7)
  Expr lo({s(SizeSymbol::num_tokens), c(63), op(SizeOpcode::min)});
  Expr hi({s(SizeSymbol::max_selected), c(7), op(SizeOpcode::min)});
  ASSERT_TRUE(validateSizeExpr(lo.get(), "lo").ok());
  EXPECT_EQ(*evaluateSizeExpr(lo.get(), sizes), 10u);
  EXPECT_EQ(*evaluateSizeExpr(hi.get(), sizes), 3u);
  sizes[SizeSymbol::num_tokens] = 2048;
  EXPECT_EQ(*evaluateSizeExpr(lo.get(), sizes), 63u);
  EXPECT_EQ(formatSizeExpr(lo.get()), "min(num_tokens, 63)");
  // min(num_tokens, 63) * (num_tokens < 64): 0 from 64 tokens on.
  Expr capped({s(SizeSymbol::num_tokens), c(63), op(SizeOpcode::min),
               s(SizeSymbol::num_tokens), c(64), op(SizeOpcode::less),
               op(SizeOpcode::mul)});
  ASSERT_TRUE(validateSizeExpr(capped.get(), "capped").ok());
  EXPECT_EQ(*evaluateSizeExpr(capped.get(), sizes), 0u); // 2048 tokens
  sizes[SizeSymbol::num_tokens] = 63;
  EXPECT_EQ(*evaluateSizeExpr(capped.get(), sizes), 63u);
  sizes[SizeSymbol::num_tokens] = 5;
  EXPECT_EQ(*evaluateSizeExpr(capped.get(), sizes), 5u);
  EXPECT_EQ(formatSizeExpr(capped.get()),
            "(min(num_tokens, 63) * (num_tokens < 64))");
}

// Tests that overflow and division by zero are errors, not wraparound.
TEST(SizeExpr, OverflowAndDivisionByZero) {
  RuntimeSizes sizes;
  sizes[SizeSymbol::num_tokens] = uint64_t(1) << 40;
  Expr mul({s(SizeSymbol::num_tokens), c(int64_t(1) << 30),
            op(SizeOpcode::mul)});
  auto r = evaluateSizeExpr(mul.get(), sizes);
  EXPECT_EQ(r.status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(r.status().message(),
            "size expression overflows: 1099511627776 * 1073741824");
  Expr div({c(5), s(SizeSymbol::num_requests), op(SizeOpcode::ceil_div)});
  EXPECT_EQ(evaluateSizeExpr(div.get(), sizes).status().message(),
            "size expression divides 5 by zero");
}

// Tests that an empty expression is malformed.
TEST(SizeExpr, EmptyIsMalformed) {
  Expr e({});
  EXPECT_EQ(validateSizeExpr(e.get(), "x").message(),
            "x: size expression is empty");
  EXPECT_EQ(validateSizeExpr(nullptr, "y").message(),
            "y: size expression is empty");
  Expr operand({c(1), SizeOp(uint8_t(SizeOpcode::add), 3)});
  EXPECT_EQ(validateSizeExpr(operand.get(), "z").message(),
            "z: op 1: operand 3 on a binary op");
}

} // namespace
} // namespace strata::runtime
