//===- dataset.h - prompts of a serving benchmark --------------------------===//
//
// Part of strata. The datasets of `vllm bench serve`:
//
//   random    prompts of random token ids (ids the tokenizer would not treat
//             as special), lengths uniform in [L(1 - r), L(1 + r)] for
//             input length L and range ratio r (vLLM's semantics), output
//             lengths likewise; sent as token ids to /v1/completions (exact
//             lengths) or decoded to text for chat
//   sharegpt  a ShareGPT-format JSON file (an array of {"conversations":
//             [{"from": "human", "value"}, {"from": "gpt", "value"}, ...]}):
//             the first human turn is the prompt and the token count of the
//             reply the output length (or --sharegpt-output-len); pairs with
//             a prompt or reply under 4 tokens, a prompt over 1024 or a sum
//             over 2048 are skipped (vLLM's filter); conversations are
//             shuffled with the seed
//   gsm8k     the GSM8K test prompts (JSONL with "question"), rendered as
//             "Question: ...\nAnswer:" with a fixed output length
//
// Loading errors (missing file, bad JSON, a record without the fields, too
// few usable prompts) are INVALID_ARGUMENT / NOT_FOUND naming the file and
// the record.
//
// Thread-safety: pure functions (the tokenizer is only read).
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_BENCH_SERVE_DATASET_H
#define STRATA_RUNTIME_BENCH_SERVE_DATASET_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runtime/base/status.h"
#include "runtime/tokenizer/tokenizer.h"

namespace strata::runtime::bench_serve {

/// One request of the benchmark.
struct BenchPrompt {
  /// Text prompt (sharegpt, gsm8k; random when sent as chat).
  std::string text;
  /// Token-id prompt (random on /v1/completions).
  std::optional<std::vector<int32_t>> ids;
  /// Prompt tokens by the client's count (0 when unknown: no tokenizer).
  int64_t prompt_tokens = 0;
  /// max_tokens of the request.
  int64_t output_tokens = 0;
};

/// What to load. Zero-initialized fields take the defaults in comments.
struct DatasetOptions {
  /// "random", "sharegpt" or "gsm8k".
  std::string name = "random";
  /// sharegpt / gsm8k file.
  std::string path;
  /// Prompts to produce. Required (> 0).
  size_t num_prompts = 0;
  /// random: input and output lengths and the range ratio in [0, 1).
  int64_t random_input_len = 1024, random_output_len = 128;
  double random_range_ratio = 0;
  /// sharegpt: output length instead of the reply's (0: the reply's).
  int64_t sharegpt_output_len = 0;
  /// gsm8k: output length (max_tokens).
  int64_t gsm8k_output_len = 256;
  /// Shuffling and random ids.
  uint64_t seed = 0;
  /// random: decode the ids to text (chat endpoints take no ids).
  bool random_as_text = false;
};

/// Loads `options.num_prompts` prompts. The tokenizer is required for random
/// and sharegpt and optional for gsm8k (prompt_tokens stays 0 without it).
StatusOr<std::vector<BenchPrompt>>
loadDataset(const DatasetOptions &options,
            const tokenizer::Tokenizer *tokenizer);

} // namespace strata::runtime::bench_serve

#endif // STRATA_RUNTIME_BENCH_SERVE_DATASET_H
