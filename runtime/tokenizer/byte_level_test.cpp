//===- byte_level_test.cpp - tests of the byte-level mapping ---------------===//

#include "runtime/tokenizer/byte_level.h"

#include <gtest/gtest.h>

namespace strata::runtime::tokenizer {
namespace {

TEST(ByteLevelTest, SpellsBytesLikeGpt2) {
  std::string out;
  appendByteLevelChars(" a\n\xC3\xA9", out);
  // ' ' -> U+0120 'Ġ', '\n' -> U+010A 'Ċ', 0xC3 -> 'Ã', 0xA9 -> '©'.
  EXPECT_EQ(out, "\xC4\xA0" "a" "\xC4\x8A" "\xC3\x83\xC2\xA9");
  EXPECT_EQ(byteForByteLevelChar(0x120), ' ');
  EXPECT_EQ(byteForByteLevelChar('a'), 'a');
  EXPECT_EQ(byteForByteLevelChar(0xAD + 0), -1); // soft hyphen is remapped
  EXPECT_EQ(byteForByteLevelChar(0x4E16), -1);
}

TEST(ByteLevelTest, EveryByteRoundTrips) {
  std::string all;
  for (int b = 0; b < 256; ++b)
    all += static_cast<char>(b);
  std::string spelled;
  appendByteLevelChars(all, spelled);
  EXPECT_EQ(byteLevelTokenToBytes(spelled), all);
}

TEST(ByteLevelTest, UnmappedCharacterKeepsTokenBytes) {
  // "世界" is not byte-level spelled: its own UTF-8 bytes come back.
  EXPECT_EQ(byteLevelTokenToBytes("\xE4\xB8\x96\xE7\x95\x8C"),
            "\xE4\xB8\x96\xE7\x95\x8C");
  EXPECT_EQ(byteLevelTokenToBytes("\xC4\xA0hi"), " hi");
}

} // namespace
} // namespace strata::runtime::tokenizer
