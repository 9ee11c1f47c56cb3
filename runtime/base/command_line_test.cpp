//===- command_line_test.cpp - tests of the shared command line -----------===//

#include "runtime/base/command_line.h"

#include <sstream>

#include <gtest/gtest.h>

namespace strata::runtime {
namespace {

TEST(CommandLineTest, EditDistanceCountsSingleEdits) {
  EXPECT_EQ(editDistance("", ""), 0u);
  EXPECT_EQ(editDistance("--target", "--target"), 0u);
  EXPECT_EQ(editDistance("--tagret", "--target"), 2u);
  EXPECT_EQ(editDistance("--max-token", "--max-tokens"), 1u);
  EXPECT_EQ(editDistance("abc", ""), 3u);
}

TEST(CommandLineTest, SuggestsOnlyPlausibleTypos) {
  std::vector<std::string> flags = {"--artifact", "--max-tokens", "--target"};
  EXPECT_EQ(closestName("--max-token", flags), "--max-tokens");
  EXPECT_EQ(closestName("--tagret", flags), "--target");
  EXPECT_EQ(closestName("--frobnicate", flags), "");
  EXPECT_EQ(closestName("--x", {}), "");
}

struct Parsed {
  std::optional<int> code;
  std::string out, err;
};

Parsed parse(CommandLine &cl, std::vector<std::string> args) {
  std::ostringstream out, err;
  Parsed p;
  p.code = cl.parse(args, out, err);
  p.out = out.str();
  p.err = err.str();
  return p;
}

TEST(CommandLineTest, HelpPrintsUsageFirst) {
  for (const char *flag : {"--help", "-h"}) {
    CommandLine cl("strata-x", "usage: strata-x --n N\n", "Does x.");
    std::string n;
    cl.app().add_option("--n", n, "a number");
    Parsed p = parse(cl, {flag});
    EXPECT_EQ(p.code, 0);
    EXPECT_EQ(p.out.rfind("usage: strata-x --n N\n\nDoes x.\n", 0), 0u)
        << p.out;
    EXPECT_NE(p.out.find("--n"), std::string::npos);
    EXPECT_NE(p.out.find("--version"), std::string::npos);
  }
}

TEST(CommandLineTest, VersionNamesTheTool) {
  CommandLine cl("strata-x", "usage: strata-x\n", "");
  Parsed p = parse(cl, {"--version"});
  EXPECT_EQ(p.code, 0);
  EXPECT_EQ(p.out.rfind("strata-x (strata) ", 0), 0u) << p.out;
  EXPECT_NE(p.out.find("git commit "), std::string::npos);
}

TEST(CommandLineTest, UnknownFlagSuggestsTheClosest) {
  CommandLine cl("strata-x", "usage: strata-x\n", "");
  std::string n;
  cl.app().add_option("--max-tokens", n, "");
  Parsed p = parse(cl, {"--max-token", "3"});
  EXPECT_EQ(p.code, 2);
  EXPECT_EQ(p.err, "strata-x: unknown flag '--max-token' (did you mean "
                   "'--max-tokens'?)\nusage: strata-x\nrun 'strata-x --help' "
                   "for every flag\n");
  p = parse(cl, {"--frobnicate"});
  EXPECT_EQ(p.err.substr(0, p.err.find('\n')),
            "strata-x: unknown flag '--frobnicate'");
}

TEST(CommandLineTest, RepeatedFlagsKeepEveryValueInOrder) {
  CommandLine cl("strata-x", "usage: strata-x\n", "");
  std::vector<std::string> ids, files;
  std::string last;
  cl.addRepeated("--ids", ids, "");
  cl.addRepeated("--ids-file", files, "");
  cl.app().add_option("--last", last, "");
  Parsed p = parse(cl, {"--ids", "1,2", "--ids-file", "f", "--last", "a",
                        "--ids", "3", "--last", "b"});
  ASSERT_EQ(p.code, std::nullopt) << p.err;
  EXPECT_EQ(ids, (std::vector<std::string>{"1,2", "3"}));
  EXPECT_EQ(last, "b");
  auto ordered = cl.valuesInOrder({"--ids", "--ids-file"});
  ASSERT_EQ(ordered.size(), 3u);
  EXPECT_EQ(ordered[0].second, "1,2");
  EXPECT_EQ(ordered[1],
            std::make_pair(std::string("--ids-file"), std::string("f")));
  EXPECT_EQ(ordered[2].second, "3");
}

} // namespace
} // namespace strata::runtime
