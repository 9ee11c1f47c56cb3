//===- gsm8k.h - GSM8K data, prompts and answer extraction -----------------===//
//
// Part of strata. The GSM8K protocol of lm-evaluation-harness (task `gsm8k`,
// version 3) as strata-eval applies it: chat few-shot rendered as multi-turn
// messages, the strict-match and flexible-extract filters, and exact-match
// scoring with lm-eval's `regexes_to_ignore`. See docs/Eval.md.
//
// All functions are pure (no shared state) and thread-safe.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_EVAL_GSM8K_H
#define STRATA_RUNTIME_EVAL_GSM8K_H

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/base/status.h"

namespace strata::runtime::eval {

/// One GSM8K row: the question and the worked answer ending in "#### N".
struct Gsm8kExample {
  std::string question;
  std::string answer;
};

/// Reads a GSM8K-format JSONL file (one {"question","answer"} object per
/// line; blank lines skipped). Errors name the file and the 1-based line.
StatusOr<std::vector<Gsm8kExample>> loadGsm8kJsonl(const std::string &path);

/// strict-match: the first match of `#### (-?[0-9.,]+)`, its group; nullopt
/// when there is none (lm-eval scores that as "[invalid]").
std::optional<std::string> strictMatch(std::string_view generation);

/// flexible-extract: the last match of `(-?[$0-9.,]{2,})|(-?[0-9]+)`, the
/// alternative that matched, whitespace-stripped; nullopt when none.
std::optional<std::string> flexibleExtract(std::string_view generation);

/// lm-eval exact_match normalisation with regexes_to_ignore
/// [",", "\$", "(?s).*#### ", "\.$"] applied in order, then lower-casing.
std::string normalizeForExactMatch(std::string_view text);

/// True when the extracted prediction equals the gold answer after both are
/// normalised. A missing prediction never matches.
bool exactMatch(const std::optional<std::string> &prediction,
                std::string_view goldAnswer);

/// A chat message of the OpenAI API.
struct ChatMessage {
  std::string role; // "system", "user" or "assistant"
  std::string content;
};

/// The user turn of one example: "Question: {question}\nAnswer:".
std::string renderQuestion(const Gsm8kExample &example);

/// Chat few-shot as multi-turn: each shot is a user turn (renderQuestion)
/// followed by an assistant turn (the shot's full gold answer); the test
/// question is the final user turn.
std::vector<ChatMessage> renderFewShotChat(
    const std::vector<const Gsm8kExample *> &shots, const Gsm8kExample &test);

/// Raw-completion rendering of the same few-shot prompt: shots as
/// "Question: q\nAnswer: a\n\n", then "Question: q\nAnswer:".
std::string renderFewShotCompletion(
    const std::vector<const Gsm8kExample *> &shots, const Gsm8kExample &test);

/// Deterministic choice of `k` distinct shot indices out of `poolSize` for
/// test item `testIndex` under `seed` (a splitmix64 stream; recorded with
/// every run so a run can be reproduced). Returns fewer when poolSize < k.
std::vector<size_t> chooseShots(size_t poolSize, size_t k, uint64_t seed,
                                size_t testIndex);

/// The generation stop sequences of the protocol.
const std::vector<std::string> &gsm8kStopSequences();

} // namespace strata::runtime::eval

#endif // STRATA_RUNTIME_EVAL_GSM8K_H
