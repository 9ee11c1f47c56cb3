//===- progress_test.cpp - tests of the progress reporter -----------------===//

#include "runtime/base/progress.h"

#include <cstdlib>

#include <gtest/gtest.h>

namespace strata::runtime {
namespace {

/// Everything written to `file` so far.
std::string contents(std::FILE *file) {
  std::fflush(file);
  std::rewind(file);
  std::string text;
  char buffer[256];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, file)) > 0)
    text.append(buffer, n);
  return text;
}

TEST(ProgressTest, FormatsBytesAndDurations) {
  EXPECT_EQ(humanBytes(17), "17 B");
  EXPECT_EQ(humanBytes(12e3), "12 kB");
  EXPECT_EQ(humanBytes(350e6), "350 MB");
  EXPECT_EQ(humanBytes(1.54e9), "1.5 GB");
  EXPECT_EQ(humanDuration(45), "45 s");
  EXPECT_EQ(humanDuration(185), "3m05s");
  EXPECT_EQ(humanDuration(7800), "2h10m");
}

TEST(ProgressTest, LogStyleWritesPlainLines) {
  unsetenv("STRATA_PROGRESS");
  std::FILE *file = std::tmpfile();
  {
    ProgressReporter progress({"tool", file, false, /*delay_seconds=*/0});
    EXPECT_EQ(progress.style(), ProgressStyle::kLog); // a file, not a tty
    progress.begin("writing", 2000);
    progress.advance(1000);
    progress.advance(1000);
    progress.finish();
    progress.note("phase two");
  }
  std::string text = contents(file);
  EXPECT_EQ(text.find('\r'), std::string::npos) << text;
  EXPECT_NE(text.find("tool: writing: 0 B of 2 kB (0%)"), std::string::npos)
      << text;
  EXPECT_NE(text.find("tool: writing: 2 kB in "), std::string::npos) << text;
  EXPECT_NE(text.find("tool: phase two ("), std::string::npos) << text;
  std::fclose(file);
}

TEST(ProgressTest, LineStyleRewritesOneLine) {
  setenv("STRATA_PROGRESS", "line", 1);
  std::FILE *file = std::tmpfile();
  {
    ProgressReporter progress({"tool", file, false, -1});
    EXPECT_EQ(progress.style(), ProgressStyle::kLine);
    progress.begin("loading", 10);
    progress.advance(10);
  }
  std::string text = contents(file);
  EXPECT_EQ(text.rfind("\rtool: loading: 0 B of 10 B (0%)", 0), 0u) << text;
  EXPECT_NE(text.find("\rtool: loading: 10 B in "), std::string::npos) << text;
  EXPECT_EQ(text.back(), '\n');
  unsetenv("STRATA_PROGRESS");
  std::fclose(file);
}

TEST(ProgressTest, QuietAndEarlyWorkWriteNothing) {
  unsetenv("STRATA_PROGRESS");
  std::FILE *file = std::tmpfile();
  {
    ProgressReporter quiet({"tool", file, /*quiet=*/true, 0});
    EXPECT_EQ(quiet.style(), ProgressStyle::kOff);
    quiet.begin("writing", 10);
    quiet.advance(10);
    quiet.note("phase");
    // Work that ends before the delay shows nothing either.
    ProgressReporter early({"tool", file, false, /*delay_seconds=*/60});
    early.begin("writing", 10);
    early.advance(10);
    early.finish();
  }
  EXPECT_EQ(contents(file), "");
  setenv("STRATA_PROGRESS", "off", 1);
  ProgressReporter off({"tool", file, false, 0});
  EXPECT_EQ(off.style(), ProgressStyle::kOff);
  unsetenv("STRATA_PROGRESS");
  std::fclose(file);
}

} // namespace
} // namespace strata::runtime
