//===- gsm8k_test.cpp - tests of the GSM8K extraction and rendering --------===//

#include "runtime/eval/gsm8k.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <set>

namespace strata::runtime::eval {
namespace {

TEST(Gsm8kStrictMatch, TakesFirstHashAnswer) {
  EXPECT_EQ(strictMatch("so 3+4=7\n#### 7"), "7");
  EXPECT_EQ(strictMatch("#### -1,234.5 and #### 9"), "-1,234.5");
  EXPECT_EQ(strictMatch("#### $5"), std::nullopt); // '$' not in the class
  EXPECT_EQ(strictMatch("####5"), std::nullopt);   // the space is required
  EXPECT_EQ(strictMatch("no answer"), std::nullopt);
  EXPECT_EQ(strictMatch("#### x #### 12"), "12"); // first that matches
}

TEST(Gsm8kFlexibleExtract, TakesLastNumber) {
  EXPECT_EQ(flexibleExtract("She makes $18 a day. #### 18"), "18");
  EXPECT_EQ(flexibleExtract("The answer is $1,000."), "$1,000.");
  EXPECT_EQ(flexibleExtract("a 5 b"), "5");  // second alternative
  EXPECT_EQ(flexibleExtract("x -7 y"), "-7");
  EXPECT_EQ(flexibleExtract("total: -12.5"), "-12.5");
  EXPECT_EQ(flexibleExtract("no digits here"), std::nullopt);
  // Two-character class runs without digits still match alternative 1.
  EXPECT_EQ(flexibleExtract("3 then .."), "..");
}

TEST(Gsm8kNormalize, AppliesRegexesToIgnoreInOrder) {
  EXPECT_EQ(normalizeForExactMatch("$1,000."), "1000");
  EXPECT_EQ(normalizeForExactMatch("work\n#### 18"), "18");
  EXPECT_EQ(normalizeForExactMatch("a #### b #### 5"), "5");
  EXPECT_EQ(normalizeForExactMatch("ABC"), "abc");
  EXPECT_EQ(normalizeForExactMatch("7.\n"), "7\n");
}

TEST(Gsm8kExactMatch, ComparesNormalisedStrings) {
  const char *gold = "Janet sells 16 - 3 - 4 = <<16-3-4=9>>9 duck eggs.\n#### 18";
  EXPECT_TRUE(exactMatch(std::string("18"), gold));
  EXPECT_TRUE(exactMatch(std::string("$18."), gold));
  EXPECT_FALSE(exactMatch(std::string("19"), gold));
  EXPECT_FALSE(exactMatch(std::nullopt, gold));
}

TEST(Gsm8kRender, MultiTurnChat) {
  Gsm8kExample a{"q1?", "a1\n#### 1"}, b{"q2?", "a2\n#### 2"},
      t{"qt?", "at\n#### 3"};
  auto msgs = renderFewShotChat({&a, &b}, t);
  ASSERT_EQ(msgs.size(), 5u);
  EXPECT_EQ(msgs[0].role, "user");
  EXPECT_EQ(msgs[0].content, "Question: q1?\nAnswer:");
  EXPECT_EQ(msgs[1].role, "assistant");
  EXPECT_EQ(msgs[1].content, "a1\n#### 1");
  EXPECT_EQ(msgs[4].content, "Question: qt?\nAnswer:");
  EXPECT_EQ(renderFewShotCompletion({&a}, t),
            "Question: q1?\nAnswer: a1\n#### 1\n\nQuestion: qt?\nAnswer:");
}

TEST(Gsm8kShots, DeterministicDistinctInRange) {
  auto s1 = chooseShots(7473, 5, 1234, 17);
  auto s2 = chooseShots(7473, 5, 1234, 17);
  EXPECT_EQ(s1, s2);
  EXPECT_EQ(std::set<size_t>(s1.begin(), s1.end()).size(), 5u);
  for (size_t i : s1)
    EXPECT_LT(i, 7473u);
  EXPECT_NE(chooseShots(7473, 5, 1234, 18), s1);
  EXPECT_NE(chooseShots(7473, 5, 99, 17), s1);
  EXPECT_EQ(chooseShots(3, 5, 1, 0).size(), 3u);
}

TEST(Gsm8kLoad, ReportsBadLines) {
  std::string path = ::testing::TempDir() + "gsm8k_bad.jsonl";
  {
    std::ofstream out(path);
    out << "{\"question\":\"q\",\"answer\":\"a #### 1\"}\n\n{\"question\":1}\n";
  }
  auto rows = loadGsm8kJsonl(path);
  ASSERT_FALSE(rows.ok());
  EXPECT_EQ(rows.status().message(),
            path + ":3: missing string field 'question'");
  std::remove(path.c_str());
  EXPECT_EQ(loadGsm8kJsonl("/nonexistent/x.jsonl").status().code(),
            StatusCode::kNotFound);
}

} // namespace
} // namespace strata::runtime::eval
