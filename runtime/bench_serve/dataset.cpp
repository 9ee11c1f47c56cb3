//===- dataset.cpp - prompts of a serving benchmark ------------------------===//
//
// Part of strata. See dataset.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/bench_serve/dataset.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <random>
#include <sstream>

#include <nlohmann/json.hpp>

#include "runtime/eval/gsm8k.h"

namespace strata::runtime::bench_serve {

namespace {

using nlohmann::json;

// vLLM's ShareGPT filter.
constexpr int64_t kMinSequenceTokens = 4;
constexpr int64_t kMaxPromptTokens = 1024;
constexpr int64_t kMaxTotalTokens = 2048;

// A length uniform in [round(len (1 - r)), round(len (1 + r))], at least 1.
int64_t sampleLength(std::mt19937_64 &rng, int64_t len, double ratio) {
  const int64_t lo = std::max<int64_t>(
      1, static_cast<int64_t>(std::llround(double(len) * (1.0 - ratio))));
  const int64_t hi = std::max<int64_t>(
      lo, static_cast<int64_t>(std::llround(double(len) * (1.0 + ratio))));
  return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
}

StatusOr<std::vector<BenchPrompt>>
randomDataset(const DatasetOptions &o, const tokenizer::Tokenizer &tok) {
  if (o.random_input_len < 1 || o.random_output_len < 1)
    return invalidArgument("--random-input-len ({}) and --random-output-len "
                           "({}) must be positive",
                           o.random_input_len, o.random_output_len);
  if (!(o.random_range_ratio >= 0 && o.random_range_ratio < 1))
    return invalidArgument("--random-range-ratio must be in [0, 1), got {}",
                           o.random_range_ratio);
  // Ids a tokenizer would produce from text: known, not special.
  std::vector<int32_t> usable;
  for (size_t id = 0; id < tok.idLimit(); ++id)
    if (!tok.isSpecialId(int32_t(id)) && tok.idToToken(int32_t(id)))
      usable.push_back(int32_t(id));
  if (usable.empty())
    return invalidArgument("the tokenizer has no ordinary token ids");
  std::mt19937_64 rng(o.seed);
  std::uniform_int_distribution<size_t> pick(0, usable.size() - 1);
  std::vector<BenchPrompt> prompts;
  for (size_t i = 0; i < o.num_prompts; ++i) {
    BenchPrompt p;
    const int64_t in = sampleLength(rng, o.random_input_len, o.random_range_ratio);
    p.output_tokens =
        sampleLength(rng, o.random_output_len, o.random_range_ratio);
    std::vector<int32_t> ids(static_cast<size_t>(in));
    for (int32_t &id : ids)
      id = usable[pick(rng)];
    if (o.random_as_text) {
      STRATA_ASSIGN_OR_RETURN(p.text, tok.decode(ids));
      STRATA_ASSIGN_OR_RETURN(std::vector<int32_t> again, tok.encode(p.text));
      p.prompt_tokens = static_cast<int64_t>(again.size());
    } else {
      p.prompt_tokens = in;
      p.ids = std::move(ids);
    }
    prompts.push_back(std::move(p));
  }
  return prompts;
}

StatusOr<std::vector<BenchPrompt>>
shareGptDataset(const DatasetOptions &o, const tokenizer::Tokenizer &tok) {
  std::ifstream in(o.path);
  if (!in)
    return notFound("cannot open ShareGPT file '{}'", o.path);
  std::stringstream text;
  text << in.rdbuf();
  json all = json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (all.is_discarded())
    return invalidArgument("ShareGPT file '{}' is not valid JSON", o.path);
  if (!all.is_array())
    return invalidArgument("ShareGPT file '{}' must hold a JSON array of "
                           "conversations, found {}",
                           o.path, all.type_name());
  // Records with at least two turns, in a seeded order (vLLM shuffles).
  std::vector<size_t> order;
  for (size_t i = 0; i < all.size(); ++i) {
    const json &rec = all[i];
    if (!rec.is_object() || !rec.contains("conversations") ||
        !rec["conversations"].is_array())
      return invalidArgument("ShareGPT file '{}': record {} has no "
                             "\"conversations\" array",
                             o.path, i);
    const json &turns = rec["conversations"];
    for (size_t t = 0; t < turns.size(); ++t)
      if (!turns[t].is_object() || !turns[t].contains("value") ||
          !turns[t]["value"].is_string())
        return invalidArgument("ShareGPT file '{}': record {} turn {} has no "
                               "string \"value\"",
                               o.path, i, t);
    if (turns.size() >= 2)
      order.push_back(i);
  }
  std::mt19937_64 rng(o.seed);
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<BenchPrompt> prompts;
  for (size_t i : order) {
    if (prompts.size() == o.num_prompts)
      break;
    const json &turns = all[i]["conversations"];
    BenchPrompt p;
    p.text = turns[0]["value"].get<std::string>();
    STRATA_ASSIGN_OR_RETURN(std::vector<int32_t> prompt_ids,
                            tok.encode(p.text));
    STRATA_ASSIGN_OR_RETURN(
        std::vector<int32_t> reply_ids,
        tok.encode(turns[1]["value"].get<std::string>()));
    p.prompt_tokens = static_cast<int64_t>(prompt_ids.size());
    p.output_tokens = o.sharegpt_output_len
                          ? o.sharegpt_output_len
                          : static_cast<int64_t>(reply_ids.size());
    if (p.prompt_tokens < kMinSequenceTokens ||
        p.output_tokens < kMinSequenceTokens)
      continue;
    if (!o.sharegpt_output_len &&
        (p.prompt_tokens > kMaxPromptTokens ||
         p.prompt_tokens + p.output_tokens > kMaxTotalTokens))
      continue;
    prompts.push_back(std::move(p));
  }
  if (prompts.size() < o.num_prompts)
    return invalidArgument("ShareGPT file '{}' has {} usable conversations "
                           "(of {}), --num-prompts asks for {}",
                           o.path, prompts.size(), all.size(), o.num_prompts);
  return prompts;
}

StatusOr<std::vector<BenchPrompt>>
gsm8kDataset(const DatasetOptions &o, const tokenizer::Tokenizer *tok) {
  if (o.gsm8k_output_len < 1)
    return invalidArgument("--gsm8k-output-len must be positive, got {}",
                           o.gsm8k_output_len);
  STRATA_ASSIGN_OR_RETURN(std::vector<eval::Gsm8kExample> rows,
                          eval::loadGsm8kJsonl(o.path));
  if (rows.size() < o.num_prompts)
    return invalidArgument("gsm8k file '{}' has {} questions, --num-prompts "
                           "asks for {}",
                           o.path, rows.size(), o.num_prompts);
  std::vector<BenchPrompt> prompts;
  for (size_t i = 0; i < o.num_prompts; ++i) {
    BenchPrompt p;
    p.text = eval::renderQuestion(rows[i]); // "Question: ...\nAnswer:"
    p.output_tokens = o.gsm8k_output_len;
    if (tok) {
      STRATA_ASSIGN_OR_RETURN(std::vector<int32_t> ids, tok->encode(p.text));
      p.prompt_tokens = static_cast<int64_t>(ids.size());
    }
    prompts.push_back(std::move(p));
  }
  return prompts;
}

} // namespace

StatusOr<std::vector<BenchPrompt>>
loadDataset(const DatasetOptions &options,
            const tokenizer::Tokenizer *tokenizer) {
  if (options.num_prompts == 0)
    return invalidArgument("--num-prompts must be positive");
  if (options.name == "random" || options.name == "sharegpt") {
    if (!tokenizer)
      return invalidArgument("the {} dataset needs --tokenizer", options.name);
    return options.name == "random" ? randomDataset(options, *tokenizer)
                                    : shareGptDataset(options, *tokenizer);
  }
  if (options.name == "gsm8k")
    return gsm8kDataset(options, tokenizer);
  return invalidArgument("unknown dataset '{}' (expected random, sharegpt or "
                         "gsm8k)",
                         options.name);
}

} // namespace strata::runtime::bench_serve
