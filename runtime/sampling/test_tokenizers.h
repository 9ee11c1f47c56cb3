//===- test_tokenizers.h - tokenizers for the sampling tests ---------------===//
//
// Part of strata; test-only. A tiny byte-level tokenizer built in code (ids
// 0..255 are the bytes, merges that end inside multi-byte characters, GLM
// special tokens), and the real tokenizer.json files the tests use when
// present: the GLM-shaped synthetic tokenizer trained with Hugging Face
// tokenizers (committed under test/runtime/tokenizer/Inputs), the micro
// model's tokenizer (models/glm5_next/micro, once it exists) and the Llama 3
// tokenizer that scripts/install-deps.sh caches (same split regex as GLM's).
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_SAMPLING_TEST_TOKENIZERS_H
#define STRATA_RUNTIME_SAMPLING_TEST_TOKENIZERS_H

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "runtime/sampling/test_paths.h"
#include "runtime/tokenizer/byte_level.h"
#include "runtime/tokenizer/tokenizer.h"

namespace strata::runtime::testing {

inline std::string byteLevelSpelling(std::string_view bytes) {
  std::string out;
  tokenizer::appendByteLevelChars(bytes, out);
  return out;
}

/// Special tokens of the tiny tokenizer start at this id.
constexpr int32_t kTinyFirstSpecial = 300;

/// Ids 0..255: the bytes. 256..: merges "he", "ll", "hell", "hello", " w",
/// "E6 97" (the first two bytes of 日), "9F 98" (the middle of 😀). 300..:
/// <|endoftext|>, [gMASK], <sop>, <|user|>, <|assistant|> (all special).
inline std::unique_ptr<tokenizer::Tokenizer> tinyByteTokenizer() {
  using nlohmann::json;
  json vocab = json::object();
  for (int b = 0; b < 256; ++b)
    vocab[byteLevelSpelling(std::string(1, static_cast<char>(b)))] = b;
  std::vector<std::pair<std::string, std::string>> merges = {
      {"h", "e"},       {"l", "l"},       {"he", "ll"}, {"hell", "o"},
      {" ", "w"},       {"\xE6", "\x97"}, {"\x9F", "\x98"}};
  json merge_list = json::array();
  int next = 256;
  for (const auto &[a, b] : merges) {
    vocab[byteLevelSpelling(a + b)] = next++;
    merge_list.push_back(byteLevelSpelling(a) + " " + byteLevelSpelling(b));
  }
  json added = json::array();
  int id = kTinyFirstSpecial;
  for (const char *special :
       {"<|endoftext|>", "[gMASK]", "<sop>", "<|user|>", "<|assistant|>"})
    added.push_back({{"id", id++}, {"content", special}, {"special", true},
                     {"single_word", false}, {"lstrip", false},
                     {"rstrip", false}, {"normalized", false}});
  json root = {
      {"version", "1.0"},
      {"added_tokens", added},
      {"normalizer", nullptr},
      {"pre_tokenizer",
       {{"type", "ByteLevel"}, {"add_prefix_space", false},
        {"use_regex", false}}},
      {"post_processor", nullptr},
      {"decoder", {{"type", "ByteLevel"}}},
      {"model",
       {{"type", "BPE"}, {"vocab", vocab}, {"merges", merge_list},
        {"ignore_merges", false}}},
  };
  auto t = tokenizer::Tokenizer::fromJson(root.dump());
  EXPECT_TRUE(t.ok()) << t.status().toString();
  return t.ok() ? std::move(*t) : nullptr;
}

/// The real tokenizer.json files present on this machine, as (name, path).
inline std::vector<std::pair<std::string, std::string>> realTokenizerFiles() {
  namespace fs = std::filesystem;
  std::vector<std::pair<std::string, std::string>> files;
  auto add = [&](const std::string &name, const fs::path &path) {
    std::error_code ec;
    if (fs::is_regular_file(path, ec))
      files.emplace_back(name, path.string());
  };
  fs::path root(STRATA_SOURCE_ROOT);
  add("glm_synthetic",
      root / "test/runtime/tokenizer/Inputs/glm_synthetic.tokenizer.json");
  add("glm5_next_micro", root / "models/glm5_next/micro/tokenizer.json");
  fs::path cache;
  if (const char *dir = std::getenv("STRATA_TOKENIZER_CACHE"))
    cache = dir;
  else if (const char *xdg = std::getenv("XDG_CACHE_HOME"))
    cache = fs::path(xdg) / "strata" / "tokenizers";
  else if (const char *home = std::getenv("HOME"))
    cache = fs::path(home) / ".cache" / "strata" / "tokenizers";
  if (!cache.empty())
    add("llama3", cache / "llama3-3.7.2" / "tokenizer.json");
  return files;
}

} // namespace strata::runtime::testing

#endif // STRATA_RUNTIME_SAMPLING_TEST_TOKENIZERS_H
