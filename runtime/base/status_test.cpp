//===- status_test.cpp - tests of Status and StatusOr ----------------------===//

#include "runtime/base/status.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace strata::runtime {
namespace {

TEST(StatusTest, DefaultIsOk) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kOk);
  EXPECT_EQ(s.message(), "");
  EXPECT_EQ(s.toString(), "OK");
}

TEST(StatusTest, FactoryFormatsMessageAndCode) {
  Status s = resourceExhausted("block table full: {} of {} pages in use", 4096,
                               4096);
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(s.message(), "block table full: 4096 of 4096 pages in use");
  EXPECT_EQ(s.toString(),
            "RESOURCE_EXHAUSTED: block table full: 4096 of 4096 pages in use");
}

TEST(StatusTest, OkCodeDropsMessage) {
  Status s(StatusCode::kOk, "ignored");
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.message(), "");
}

TEST(StatusTest, EveryCodeHasAName) {
  for (int c = 0; c <= static_cast<int>(StatusCode::kDataLoss); ++c)
    EXPECT_NE(statusCodeName(static_cast<StatusCode>(c)), "")
        << "code " << c;
  EXPECT_EQ(statusCodeName(StatusCode::kInvalidArgument), "INVALID_ARGUMENT");
  EXPECT_EQ(statusCodeName(StatusCode::kOutOfRange), "OUT_OF_RANGE");
  EXPECT_EQ(statusCodeName(static_cast<StatusCode>(99)), "UNKNOWN");
}

TEST(StatusTest, WithContextPrependsAndKeepsCode) {
  Status s = dataLoss("header truncated at byte {}", 12);
  Status c = s.withContext("model-00001-of-00002.safetensors");
  EXPECT_EQ(c.code(), StatusCode::kDataLoss);
  EXPECT_EQ(c.message(),
            "model-00001-of-00002.safetensors: header truncated at byte 12");
  EXPECT_TRUE(okStatus().withContext("x").ok());
}

TEST(StatusTest, EqualityComparesCodeAndMessage) {
  EXPECT_EQ(invalidArgument("a"), invalidArgument("a"));
  EXPECT_NE(invalidArgument("a"), invalidArgument("b"));
  EXPECT_NE(invalidArgument("a"), outOfRange("a"));
  EXPECT_EQ(Status(), okStatus());
}

StatusOr<int> parsePositive(int x) {
  if (x <= 0)
    return invalidArgument("expected a positive value, got {}", x);
  return x;
}

Status useTwo(int a, int b, int *out_sum) {
  STRATA_ASSIGN_OR_RETURN(int pa, parsePositive(a));
  STRATA_ASSIGN_OR_RETURN(int pb, parsePositive(b));
  *out_sum = pa + pb;
  return okStatus();
}

TEST(StatusOrTest, HoldsValueOrError) {
  StatusOr<int> v = parsePositive(3);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, 3);
  StatusOr<int> e = parsePositive(-1);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().message(), "expected a positive value, got -1");
}

TEST(StatusOrTest, OkStatusWithoutValueBecomesInternal) {
  StatusOr<int> v{okStatus()};
  EXPECT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), StatusCode::kInternal);
}

TEST(StatusOrTest, MoveOnlyValues) {
  StatusOr<std::unique_ptr<int>> v = std::make_unique<int>(7);
  ASSERT_TRUE(v.ok());
  std::unique_ptr<int> p = std::move(v).value();
  EXPECT_EQ(*p, 7);
}

TEST(StatusMacrosTest, AssignOrReturnPropagates) {
  int sum = 0;
  EXPECT_TRUE(useTwo(1, 2, &sum).ok());
  EXPECT_EQ(sum, 3);
  Status s = useTwo(1, -5, &sum);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(sum, 3);
}

Status failIfNegative(int x) {
  STRATA_RETURN_IF_ERROR(parsePositive(x).status());
  return okStatus();
}

TEST(StatusMacrosTest, ReturnIfErrorPropagates) {
  EXPECT_TRUE(failIfNegative(1).ok());
  EXPECT_EQ(failIfNegative(0).code(), StatusCode::kInvalidArgument);
}

} // namespace
} // namespace strata::runtime
