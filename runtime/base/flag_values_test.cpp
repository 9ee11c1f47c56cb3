//===- flag_values_test.cpp - tests of the shared flag parsers ------------===//

#include "runtime/base/flag_values.h"

#include <gtest/gtest.h>

namespace strata::runtime {
namespace {

TEST(FlagValuesTest, ParsesWholeIntegersOnly) {
  EXPECT_EQ(*parseIntFlag("--n", "42"), 42);
  EXPECT_EQ(*parseIntFlag("--n", "-3"), -3);
  for (const char *bad : {"", "x", "4x", " 4", "4 "}) {
    StatusOr<int64_t> r = parseIntFlag("--n", bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().message(),
              std::string("--n: '") + bad + "' is not an integer");
  }
}

TEST(FlagValuesTest, ParsesOnOrOff) {
  EXPECT_TRUE(*parseOnOffFlag("--g", "on"));
  EXPECT_FALSE(*parseOnOffFlag("--g", "off"));
  for (const char *bad : {"", "On", "yes", "on "}) {
    StatusOr<bool> r = parseOnOffFlag("--g", bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().message(),
              std::string("--g must be on or off, not '") + bad + "'");
  }
}

TEST(FlagValuesTest, ParsesTokenIds) {
  EXPECT_EQ(*parseTokenIdsFlag("--ids", "1,2,3"),
            (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(parseTokenIdsFlag("--ids", "1,x").status().message(),
            "--ids: 'x' is not an integer");
  EXPECT_EQ(parseTokenIdsFlag("--ids", "1,-2").status().message(),
            "--ids: -2 is not a token id");
  EXPECT_EQ(parseTokenIdsFlag("--ids", "2147483648").status().message(),
            "--ids: 2147483648 is not a token id");
  EXPECT_FALSE(parseTokenIdsFlag("--ids", "1,").ok());
  // Spaces are an error unless trimmed (ids read from files).
  EXPECT_FALSE(parseTokenIdsFlag("--ids", "1, 2").ok());
  EXPECT_EQ(*parseTokenIdsFlag("--ids", " 1, 2 \r", /*trim_spaces=*/true),
            (std::vector<int32_t>{1, 2}));
}

} // namespace
} // namespace strata::runtime
