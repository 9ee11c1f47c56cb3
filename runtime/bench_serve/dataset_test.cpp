//===- dataset_test.cpp - tests of the serving benchmark datasets ---------===//

#include "runtime/bench_serve/dataset.h"

#include "runtime/checkpoint/test_util.h"
#include "runtime/serve/test_engine.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace strata::runtime::bench_serve {
namespace {

using ::testing::HasSubstr;
using testing::TempDir;

std::unique_ptr<tokenizer::Tokenizer> byteTokenizer() {
  auto t = tokenizer::Tokenizer::fromJson(serve::testing::testTokenizerJson());
  EXPECT_TRUE(t.ok());
  return std::move(*t);
}

// Tests random prompts: ids below the special tokens, lengths in
// [L(1 - r), L(1 + r)], the same prompts for the same seed.
TEST(BenchServeDatasetTest, RandomLengthsAndIds) {
  auto tok = byteTokenizer();
  DatasetOptions o;
  o.num_prompts = 200;
  o.random_input_len = 100;
  o.random_output_len = 10;
  o.random_range_ratio = 0.5;
  o.seed = 7;
  auto prompts = loadDataset(o, tok.get());
  ASSERT_TRUE(prompts.ok()) << prompts.status().toString();
  ASSERT_EQ(prompts->size(), 200u);
  int64_t shortest = 1000, longest = 0;
  for (const BenchPrompt &p : *prompts) {
    ASSERT_TRUE(p.ids.has_value());
    EXPECT_EQ(p.prompt_tokens, static_cast<int64_t>(p.ids->size()));
    for (int32_t id : *p.ids)
      EXPECT_LT(id, serve::testing::kTestEndOfText);
    shortest = std::min(shortest, p.prompt_tokens);
    longest = std::max(longest, p.prompt_tokens);
    EXPECT_GE(p.output_tokens, 5);
    EXPECT_LE(p.output_tokens, 15);
  }
  EXPECT_GE(shortest, 50);
  EXPECT_LE(longest, 150);
  EXPECT_LT(shortest, 60); // 200 draws spread over the range
  EXPECT_GT(longest, 140);
  auto again = loadDataset(o, tok.get());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*(*again)[3].ids, *(*prompts)[3].ids);
  o.random_range_ratio = 0;
  o.random_as_text = true;
  auto text = loadDataset(o, tok.get());
  ASSERT_TRUE(text.ok());
  EXPECT_FALSE((*text)[0].ids.has_value());
  EXPECT_EQ((*text)[0].output_tokens, 10);
}

// Tests ShareGPT: the first turn is the prompt, the reply's tokens the
// output length; too short pairs are skipped; malformed files are errors.
TEST(BenchServeDatasetTest, ShareGpt) {
  auto tok = byteTokenizer();
  TempDir dir;
  dir.write("ok.json", R"([
    {"conversations": [{"from": "human", "value": "hello there"},
                       {"from": "gpt", "value": "general kenobi"}]},
    {"conversations": [{"from": "human", "value": "hi"},
                       {"from": "gpt", "value": "too short a prompt"}]},
    {"conversations": [{"from": "human", "value": "only one turn"}]}])");
  DatasetOptions o;
  o.name = "sharegpt";
  o.path = dir.file("ok.json");
  o.num_prompts = 1;
  auto prompts = loadDataset(o, tok.get());
  ASSERT_TRUE(prompts.ok()) << prompts.status().toString();
  EXPECT_EQ((*prompts)[0].text, "hello there");
  EXPECT_EQ((*prompts)[0].prompt_tokens, 11);
  EXPECT_EQ((*prompts)[0].output_tokens, 14);
  o.sharegpt_output_len = 5;
  prompts = loadDataset(o, tok.get());
  ASSERT_TRUE(prompts.ok());
  EXPECT_EQ((*prompts)[0].output_tokens, 5);
  o.num_prompts = 2;
  o.sharegpt_output_len = 0;
  EXPECT_THAT(loadDataset(o, tok.get()).status().message(),
              HasSubstr("has 1 usable conversations (of 3), --num-prompts "
                        "asks for 2"));
  dir.write("bad.json", "[{\"conversations\": [{\"from\": \"human\"}]}]");
  o.path = dir.file("bad.json");
  EXPECT_THAT(loadDataset(o, tok.get()).status().message(),
              HasSubstr("record 0 turn 0 has no string \"value\""));
  dir.write("garbage.json", "{not json");
  o.path = dir.file("garbage.json");
  EXPECT_THAT(loadDataset(o, tok.get()).status().message(),
              HasSubstr("is not valid JSON"));
  o.path = dir.file("missing.json");
  EXPECT_EQ(loadDataset(o, tok.get()).status().code(), StatusCode::kNotFound);
}

// Tests GSM8K prompts and the option errors.
TEST(BenchServeDatasetTest, Gsm8kAndErrors) {
  TempDir dir;
  dir.write("test.jsonl", "{\"question\": \"1+1?\", \"answer\": \"#### 2\"}\n"
                          "{\"question\": \"2+2?\", \"answer\": \"#### 4\"}\n");
  DatasetOptions o;
  o.name = "gsm8k";
  o.path = dir.file("test.jsonl");
  o.num_prompts = 2;
  o.gsm8k_output_len = 32;
  auto prompts = loadDataset(o, nullptr);
  ASSERT_TRUE(prompts.ok()) << prompts.status().toString();
  EXPECT_EQ((*prompts)[1].text, "Question: 2+2?\nAnswer:");
  EXPECT_EQ((*prompts)[1].output_tokens, 32);
  EXPECT_EQ((*prompts)[1].prompt_tokens, 0); // no tokenizer
  o.num_prompts = 3;
  EXPECT_THAT(loadDataset(o, nullptr).status().message(),
              HasSubstr("has 2 questions, --num-prompts asks for 3"));
  o.name = "random";
  EXPECT_THAT(loadDataset(o, nullptr).status().message(),
              HasSubstr("the random dataset needs --tokenizer"));
  o.name = "mmlu";
  EXPECT_THAT(loadDataset(o, nullptr).status().message(),
              HasSubstr("unknown dataset 'mmlu'"));
  auto tok = byteTokenizer();
  o.name = "random";
  o.random_range_ratio = 1.0;
  EXPECT_THAT(loadDataset(o, tok.get()).status().message(),
              HasSubstr("--random-range-ratio must be in [0, 1), got 1"));
}

} // namespace
} // namespace strata::runtime::bench_serve
