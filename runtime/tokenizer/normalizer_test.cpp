//===- normalizer_test.cpp - tests of tokenizer.json normalizers -----------===//

#include "runtime/tokenizer/normalizer.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace strata::runtime::tokenizer {
namespace {

using json = nlohmann::json;

TEST(NormalizerTest, NullIsIdentity) {
  StatusOr<Normalizer> n = Normalizer::fromJson(json());
  ASSERT_TRUE(n.ok());
  EXPECT_TRUE(n->isIdentity());
  EXPECT_EQ(*n->apply("cafe\xCC\x81"), "cafe\xCC\x81");
}

TEST(NormalizerTest, NfcAndSequence) {
  for (const char *text :
       {R"({"type":"NFC"})",
        R"({"type":"Sequence","normalizers":[{"type":"NFC"},{"type":"Sequence","normalizers":[]}]})"}) {
    StatusOr<Normalizer> n = Normalizer::fromJson(json::parse(text));
    ASSERT_TRUE(n.ok()) << n.status().toString();
    EXPECT_FALSE(n->isIdentity());
    EXPECT_EQ(*n->apply("cafe\xCC\x81"), "caf\xC3\xA9");
  }
}

TEST(NormalizerTest, RejectsUnsupported) {
  StatusOr<Normalizer> n = Normalizer::fromJson(json::parse(
      R"({"type":"Sequence","normalizers":[{"type":"NFC"},{"type":"NFKC"}]})"));
  ASSERT_FALSE(n.ok());
  EXPECT_EQ(n.status().code(), StatusCode::kUnimplemented);
  EXPECT_EQ(n.status().message(), "normalizer: unsupported type NFKC");
  n = Normalizer::fromJson(json::parse(R"({"type":"Sequence"})"));
  EXPECT_EQ(n.status().message(),
            "normalizer: Sequence needs a normalizers array");
  n = Normalizer::fromJson(json::parse("[]"));
  EXPECT_EQ(n.status().message(), "normalizer: expected an object with a type");
}

} // namespace
} // namespace strata::runtime::tokenizer
