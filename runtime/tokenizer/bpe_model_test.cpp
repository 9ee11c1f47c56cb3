//===- bpe_model_test.cpp - tests of the BPE model -------------------------===//

#include "runtime/tokenizer/bpe_model.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace strata::runtime::tokenizer {
namespace {

using json = nlohmann::json;
using Ids = std::vector<int32_t>;

json abcModel(json merges) {
  return json{{"type", "BPE"},
              {"vocab", {{"a", 0}, {"b", 1}, {"c", 2}, {"ab", 3}, {"bc", 4},
                         {"abc", 5}, {"aa", 6}}},
              {"merges", std::move(merges)}};
}

Ids encode(const BpeModel &model, const std::string &word) {
  Ids ids;
  model.encodeWord(word, ids);
  return ids;
}

TEST(BpeModelTest, MergesByRank) {
  StatusOr<std::unique_ptr<BpeModel>> model =
      BpeModel::fromJson(abcModel({"a b", "ab c"}));
  ASSERT_TRUE(model.ok()) << model.status().toString();
  EXPECT_EQ(encode(**model, "abc"), (Ids{5}));
  EXPECT_EQ((*model)->mergeCount(), 2u);
  // The lower rank wins: b+c first leaves a, bc with no merge between them.
  model = BpeModel::fromJson(abcModel({"b c", "a b", "ab c"}));
  ASSERT_TRUE(model.ok());
  EXPECT_EQ(encode(**model, "abc"), (Ids{0, 4}));
  // Cached result is the same.
  EXPECT_EQ(encode(**model, "abc"), (Ids{0, 4}));
}

TEST(BpeModelTest, ListMergesAndLeftmostTieBreak) {
  StatusOr<std::unique_ptr<BpeModel>> model =
      BpeModel::fromJson(abcModel(json::array({json::array({"a", "a"})})));
  ASSERT_TRUE(model.ok()) << model.status().toString();
  EXPECT_EQ(encode(**model, "aaa"), (Ids{6, 0}));
  EXPECT_EQ(encode(**model, "aaaa"), (Ids{6, 6}));
}

TEST(BpeModelTest, IgnoreMergesTakesWholeWord) {
  json spec = abcModel(json::array());
  EXPECT_EQ(encode(**BpeModel::fromJson(spec), "abc"), (Ids{0, 1, 2}));
  spec["ignore_merges"] = true;
  EXPECT_EQ(encode(**BpeModel::fromJson(spec), "abc"), (Ids{5}));
}

TEST(BpeModelTest, UnknownCharacters) {
  json spec = abcModel(json::array());
  // Without unk_token, characters outside the vocab are dropped.
  EXPECT_EQ(encode(**BpeModel::fromJson(spec), "azb"), (Ids{0, 1}));
  spec["vocab"]["<unk>"] = 7;
  spec["unk_token"] = "<unk>";
  EXPECT_EQ(encode(**BpeModel::fromJson(spec), "az\xC3\xA9" "b"),
            (Ids{0, 7, 7, 1}));
}

TEST(BpeModelTest, Lookups) {
  StatusOr<std::unique_ptr<BpeModel>> model = BpeModel::fromJson(abcModel(json::array()));
  ASSERT_TRUE(model.ok());
  EXPECT_EQ((*model)->tokenToId("bc"), 4);
  EXPECT_FALSE((*model)->tokenToId("zz").has_value());
  ASSERT_NE((*model)->idToToken(5), nullptr);
  EXPECT_EQ(*(*model)->idToToken(5), "abc");
  EXPECT_EQ((*model)->idToToken(99), nullptr);
  EXPECT_EQ((*model)->idToToken(-1), nullptr);
  EXPECT_EQ((*model)->idLimit(), 7u);
}

TEST(BpeModelTest, RejectsBadMergesAndOptions) {
  auto message = [](json spec) {
    StatusOr<std::unique_ptr<BpeModel>> model = BpeModel::fromJson(spec);
    EXPECT_FALSE(model.ok());
    return model.ok() ? std::string() : std::string(model.status().message());
  };
  EXPECT_EQ(message(abcModel({"a z"})),
            "model: merge 0 uses a token not in the vocab: \"a z\"");
  EXPECT_EQ(message(abcModel({"a b", "c a"})),
            "model: merge 1 makes a token not in the vocab: \"ca\"");
  EXPECT_EQ(message(abcModel({"abc"})),
            "model: merge 0 must be two tokens separated by one space");
  EXPECT_EQ(message(abcModel({42})),
            "model: merge 0 must be \"a b\" or [\"a\", \"b\"], got 42");
  json spec = abcModel(json::array());
  spec["dropout"] = 0.1;
  EXPECT_EQ(message(spec), "model: bpe dropout 0.1 is not supported");
  spec = abcModel(json::array());
  spec["byte_fallback"] = true;
  EXPECT_EQ(message(spec), "model: bpe byte_fallback is not supported");
  spec = abcModel(json::array());
  spec["continuing_subword_prefix"] = "##";
  EXPECT_EQ(message(spec),
            "model: bpe continuing_subword_prefix \"##\" is not supported");
  spec = abcModel(json::array());
  spec["unk_token"] = "<unk>";
  EXPECT_EQ(message(spec), "model: unk_token \"<unk>\" is not in the vocab");
  EXPECT_EQ(message(json{{"type", "Unigram"}}),
            "model: unsupported type \"Unigram\", expected BPE");
  EXPECT_EQ(message(json{{"type", "BPE"}, {"merges", json::array()}}),
            "model: expected a vocab object");
  EXPECT_EQ(message(json{{"type", "BPE"}, {"vocab", {{"a", -1}}}}),
            "model: vocab id of \"a\" is not a valid id: -1");
}

} // namespace
} // namespace strata::runtime::tokenizer
