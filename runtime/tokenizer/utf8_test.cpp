//===- utf8_test.cpp - tests of the tokenizer's UTF-8 helpers --------------===//

#include "runtime/tokenizer/utf8.h"

#include <gtest/gtest.h>

namespace strata::runtime::tokenizer {
namespace {

TEST(Utf8Test, ValidatesWellFormedText) {
  EXPECT_TRUE(isValidUtf8(""));
  EXPECT_TRUE(isValidUtf8("plain ascii"));
  EXPECT_TRUE(isValidUtf8("h\xC3\xA9llo \xE4\xB8\x96 \xF0\x9F\x99\x82"));
  EXPECT_FALSE(isValidUtf8("\xFF"));
  EXPECT_FALSE(isValidUtf8("\xC0\xAF"));         // overlong '/'
  EXPECT_FALSE(isValidUtf8("\xED\xA0\x80"));     // surrogate U+D800
  EXPECT_FALSE(isValidUtf8("\xF4\x90\x80\x80")); // above U+10FFFF
  EXPECT_FALSE(isValidUtf8("\xE2\x82"));         // truncated
}

TEST(Utf8Test, LossyReplacesMaximalInvalidSubparts) {
  const std::string fffd = "\xEF\xBF\xBD";
  EXPECT_EQ(toValidUtf8Lossy("ok"), "ok");
  EXPECT_EQ(toValidUtf8Lossy("a\xFF" "b"), "a" + fffd + "b");
  // A truncated 3-byte sequence is one maximal subpart: one U+FFFD.
  EXPECT_EQ(toValidUtf8Lossy("a\xE2\x82" "b"), "a" + fffd + "b");
  // A surrogate's lead byte E0..EF accepts only 80..9F after ED: three parts.
  EXPECT_EQ(toValidUtf8Lossy("\xED\xA0\x80"), fffd + fffd + fffd);
  EXPECT_EQ(toValidUtf8Lossy("\xF0\x9F\x99"), fffd);
  EXPECT_EQ(toValidUtf8Lossy("\xF0\x9F\x99" "a"), fffd + "a");
  EXPECT_EQ(toValidUtf8Lossy("\xC0\xAF"), fffd + fffd);
}

TEST(Utf8Test, DecodesAndEncodesCodePoints) {
  std::string text = "a\xC3\xA9\xE4\xB8\x96\xF0\x9F\x99\x82";
  uint32_t cp = 0;
  EXPECT_EQ(decodeUtf8(text, 0, &cp), 1u);
  EXPECT_EQ(cp, 'a');
  EXPECT_EQ(decodeUtf8(text, 1, &cp), 2u);
  EXPECT_EQ(cp, 0xE9u);
  EXPECT_EQ(decodeUtf8(text, 3, &cp), 3u);
  EXPECT_EQ(cp, 0x4E16u);
  EXPECT_EQ(decodeUtf8(text, 6, &cp), 4u);
  EXPECT_EQ(cp, 0x1F642u);
  std::string out;
  for (uint32_t c : {0x61u, 0xE9u, 0x4E16u, 0x1F642u})
    appendUtf8(c, out);
  EXPECT_EQ(out, text);
}

TEST(Utf8Test, NfcComposes) {
  StatusOr<std::string> nfc = normalizeNfc("cafe\xCC\x81");
  ASSERT_TRUE(nfc.ok());
  EXPECT_EQ(*nfc, "caf\xC3\xA9");
  // The Ohm sign U+2126 is canonically equivalent to Omega U+03A9.
  EXPECT_EQ(*normalizeNfc("\xE2\x84\xA6"), "\xCE\xA9");
  // Hangul jamo compose to a syllable.
  EXPECT_EQ(*normalizeNfc("\xE1\x84\x80\xE1\x85\xA1"), "\xEA\xB0\x80");
  EXPECT_EQ(*normalizeNfc("ascii stays"), "ascii stays");
}

TEST(Utf8Test, UnicodeProperties) {
  for (uint32_t ws : {0x20u, 0x09u, 0x0Au, 0x0Du, 0x85u, 0xA0u, 0x2028u, 0x3000u})
    EXPECT_TRUE(isUnicodeWhitespace(ws)) << ws;
  for (uint32_t not_ws : {0x41u, 0x1Cu, 0x200Bu, 0xFEFFu})
    EXPECT_FALSE(isUnicodeWhitespace(not_ws)) << not_ws;
  // \w of UTS #18: letters, marks, decimal digits, connector punctuation,
  // Join_Control; not other numbers such as superscripts or fractions.
  for (uint32_t w : {0x61u, 0x5Fu, 0x30u, 0xE9u, 0x4E16u, 0x0301u, 0x0663u,
                     0x200Du, 0x203Fu})
    EXPECT_TRUE(isUnicodeWordChar(w)) << w;
  for (uint32_t not_w : {0x20u, 0x21u, 0xB2u, 0xBDu, 0x1F642u})
    EXPECT_FALSE(isUnicodeWordChar(not_w)) << not_w;
}

} // namespace
} // namespace strata::runtime::tokenizer
