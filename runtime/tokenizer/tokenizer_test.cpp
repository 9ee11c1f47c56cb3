//===- tokenizer_test.cpp - tests of the tokenizer.json tokenizer ----------===//
//
// A small GLM-shaped byte-level tokenizer built in code: ids 0..255 are the
// bytes (spelled GPT-2 style), a few merges build "hello" and " wor", and GLM
// special tokens follow. The golden comparisons against Hugging Face on real
// files are lit tests in test/runtime/tokenizer/.
//
//===----------------------------------------------------------------------===//

#include "runtime/tokenizer/tokenizer.h"

#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "runtime/tokenizer/byte_level.h"

namespace strata::runtime::tokenizer {
namespace {

using json = nlohmann::json;
using Ids = std::vector<int32_t>;

std::string spell(std::string_view bytes) {
  std::string out;
  appendByteLevelChars(bytes, out);
  return out;
}

json tinyGlmJson() {
  json vocab = json::object();
  for (int b = 0; b < 256; ++b)
    vocab[spell(std::string(1, static_cast<char>(b)))] = b;
  // Merges in "a b" form, each adding the next id from 256 on.
  std::vector<std::pair<std::string, std::string>> merges = {
      {"h", "e"}, {"l", "l"}, {"he", "ll"}, {"hell", "o"},
      {" ", "w"}, {"o", "r"}, {" w", "or"}};
  json merge_list = json::array();
  int next = 256;
  for (const auto &[a, b] : merges) {
    vocab[spell(a + b)] = next++;
    merge_list.push_back(spell(a) + " " + spell(b));
  }
  json added = json::array();
  int id = 300;
  for (const char *special : {"<|endoftext|>", "[gMASK]", "<sop>", "<|user|>",
                              "<|assistant|>", "<think>", "</think>"})
    added.push_back({{"id", id++}, {"content", special}, {"special", true},
                     {"single_word", false}, {"lstrip", false},
                     {"rstrip", false}, {"normalized", false}});
  return {
      {"version", "1.0"},
      {"added_tokens", added},
      {"normalizer", {{"type", "Sequence"}, {"normalizers", {{{"type", "NFC"}}}}}},
      {"pre_tokenizer",
       {{"type", "Sequence"},
        {"pretokenizers",
         {{{"type", "Split"},
           {"pattern",
            {{"Regex", "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|"
                       "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|"
                       "\\s+(?!\\S)|\\s+"}}},
           {"behavior", "Isolated"},
           {"invert", false}},
          {{"type", "ByteLevel"}, {"add_prefix_space", false},
           {"use_regex", false}}}}}},
      {"post_processor", nullptr},
      {"decoder", {{"type", "ByteLevel"}}},
      {"model",
       {{"type", "BPE"}, {"vocab", vocab}, {"merges", merge_list},
        {"ignore_merges", false}}},
  };
}

std::unique_ptr<Tokenizer> tinyGlm() {
  StatusOr<std::unique_ptr<Tokenizer>> t = Tokenizer::fromJson(tinyGlmJson().dump());
  EXPECT_TRUE(t.ok()) << t.status().toString();
  return t.ok() ? std::move(*t) : nullptr;
}

Ids encode(const Tokenizer &t, std::string_view text) {
  StatusOr<Ids> ids = t.encode(text);
  EXPECT_TRUE(ids.ok()) << ids.status().toString();
  return ids.ok() ? *ids : Ids{};
}

std::string decode(const Tokenizer &t, const Ids &ids, bool skip = false) {
  DecodeOptions options;
  options.skip_special_tokens = skip;
  StatusOr<std::string> text = t.decode(ids, options);
  EXPECT_TRUE(text.ok()) << text.status().toString();
  return text.ok() ? *text : std::string();
}

TEST(TokenizerTest, EncodesWithMergesAndSpecials) {
  std::unique_ptr<Tokenizer> t = tinyGlm();
  ASSERT_NE(t, nullptr);
  // "hello" -> he, ll -> hell -> hello (259); " world" -> " wor" (262) l d.
  EXPECT_EQ(encode(*t, "hello world"), (Ids{259, 262, 'l', 'd'}));
  EXPECT_EQ(encode(*t, "[gMASK]<sop><|user|>\nhello"),
            (Ids{301, 302, 303, '\n', 259}));
  // Special tokens split words: "hel" + <think> + "lo".
  EXPECT_EQ(encode(*t, "hel<think>lo"), (Ids{256, 'l', 305, 'l', 'o'}));
  EXPECT_EQ(encode(*t, ""), Ids{});
  // 12345 groups as 123 and 45; no merges, so one id per byte.
  EXPECT_EQ(encode(*t, "12345"), (Ids{'1', '2', '3', '4', '5'}));
}

TEST(TokenizerTest, NormalizesAndRepairsInput) {
  std::unique_ptr<Tokenizer> t = tinyGlm();
  ASSERT_NE(t, nullptr);
  // NFC: e + combining acute encodes like the precomposed letter.
  EXPECT_EQ(encode(*t, "cafe\xCC\x81"), encode(*t, "caf\xC3\xA9"));
  EXPECT_EQ(encode(*t, "caf\xC3\xA9"), (Ids{'c', 'a', 'f', 0xC3, 0xA9}));
  // Invalid UTF-8 becomes U+FFFD (EF BF BD) first.
  EXPECT_EQ(encode(*t, "\xFF"), (Ids{0xEF, 0xBF, 0xBD}));
  StatusOr<std::string> normalized = t->normalize("A\xCC\x8A");
  ASSERT_TRUE(normalized.ok());
  EXPECT_EQ(*normalized, "\xC3\x85");
  StatusOr<std::vector<std::string>> words = t->preTokenize("I'm  ok\n");
  ASSERT_TRUE(words.ok());
  EXPECT_EQ(*words, (std::vector<std::string>{"I", "'m", spell(" "),
                                              spell(" ok"), spell("\n")}));
}

TEST(TokenizerTest, DecodesBytesSpecialsAndBrokenUtf8) {
  std::unique_ptr<Tokenizer> t = tinyGlm();
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(decode(*t, {259, 262, 'l', 'd'}), "hello world");
  EXPECT_EQ(decode(*t, {301, 302, 259}), "[gMASK]<sop>hello");
  EXPECT_EQ(decode(*t, {301, 302, 259}, /*skip=*/true), "hello");
  // A lone lead byte decodes to U+FFFD; a whole sequence to its character.
  EXPECT_EQ(decode(*t, {0xE4}), "\xEF\xBF\xBD");
  EXPECT_EQ(decode(*t, {0xE4, 0xB8, 0x96}), "\xE4\xB8\x96");
  // Unknown ids are skipped, as Hugging Face does.
  EXPECT_EQ(decode(*t, {'a', 9999, 'b'}), "ab");
  EXPECT_EQ(decode(*t, {}), "");
}

TEST(TokenizerTest, RoundTripsText) {
  std::unique_ptr<Tokenizer> t = tinyGlm();
  ASSERT_NE(t, nullptr);
  for (std::string text :
       {"hello world", "  spaced  \r\n\r\n tabs\t", "I'M don't 1234567",
        "\xE4\xBD\xA0\xE5\xA5\xBD \xF0\x9F\x99\x82 \xF0\x9F\x91\xA8\xE2\x80\x8D"
        "\xF0\x9F\x91\xA9",
        "<|user|>\nhi<|assistant|>\n<think></think>\nhello"})
    EXPECT_EQ(decode(*t, encode(*t, text)), text) << text;
}

TEST(TokenizerTest, Lookups) {
  std::unique_ptr<Tokenizer> t = tinyGlm();
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->tokenToId("[gMASK]"), 301);
  EXPECT_EQ(t->tokenToId(spell("hello")), 259);
  EXPECT_FALSE(t->tokenToId("nope").has_value());
  EXPECT_EQ(t->idToToken(302), "<sop>");
  EXPECT_EQ(t->idToToken(262), spell(" wor"));
  EXPECT_FALSE(t->idToToken(280).has_value());
  EXPECT_TRUE(t->isSpecialId(300));
  EXPECT_FALSE(t->isSpecialId(259));
  EXPECT_EQ(t->idLimit(), 307u);
  EXPECT_EQ(t->addedTokens().size(), 7u);
  EXPECT_EQ(t->mergeCount(), 7u);
}

TEST(TokenizerTest, ConcurrentEncodesAgree) {
  std::unique_ptr<Tokenizer> t = tinyGlm();
  ASSERT_NE(t, nullptr);
  std::string text = "hello world, hello again: 12345 words\n";
  Ids expected = encode(*t, text);
  std::vector<std::thread> threads;
  std::vector<bool> same(4, false);
  for (int i = 0; i < 4; ++i)
    threads.emplace_back([&, i] {
      bool ok = true;
      for (int k = 0; k < 200; ++k) {
        StatusOr<Ids> ids = t->encode(text + std::to_string(k % 7));
        ok = ok && ids.ok() &&
             Ids(ids->begin(), ids->begin() + expected.size()) == expected;
      }
      same[i] = ok;
    });
  for (std::thread &thread : threads)
    thread.join();
  for (int i = 0; i < 4; ++i)
    EXPECT_TRUE(same[i]) << "thread " << i;
}

TEST(TokenizerTest, LoadErrors) {
  auto message = [](const std::string &text) {
    StatusOr<std::unique_ptr<Tokenizer>> t = Tokenizer::fromJson(text);
    EXPECT_FALSE(t.ok());
    return t.ok() ? std::string() : t.status().toString();
  };
  EXPECT_EQ(message("{"), "INVALID_ARGUMENT: tokenizer.json is not valid json");
  EXPECT_EQ(message("[]"),
            "INVALID_ARGUMENT: tokenizer.json: expected a top-level object");
  EXPECT_EQ(message("{}"), "INVALID_ARGUMENT: tokenizer.json: missing model");
  json spec = tinyGlmJson();
  spec["decoder"] = {{"type", "WordPiece"}};
  EXPECT_EQ(message(spec.dump()),
            "UNIMPLEMENTED: decoder: unsupported decoder \"WordPiece\", "
            "expected ByteLevel");
  spec = tinyGlmJson();
  spec["added_tokens"].push_back({{"id", 301}, {"content", "dup"}});
  EXPECT_EQ(message(spec.dump()),
            "INVALID_ARGUMENT: added tokens repeat the id 301");
  spec = tinyGlmJson();
  spec["added_tokens"].push_back({{"content", "no id"}});
  EXPECT_EQ(message(spec.dump()),
            "INVALID_ARGUMENT: added_tokens: each entry needs an integer id "
            "and a content string, got {\"content\":\"no id\"}");
  StatusOr<std::unique_ptr<Tokenizer>> missing =
      Tokenizer::fromFile("/nonexistent/tokenizer.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().toString(),
            "NOT_FOUND: cannot open tokenizer file /nonexistent/tokenizer.json");
}

} // namespace
} // namespace strata::runtime::tokenizer
