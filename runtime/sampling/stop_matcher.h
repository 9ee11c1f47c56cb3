//===- stop_matcher.h - stop strings, stop tokens and max_tokens -----------===//
//
// Part of strata. Decides when a generation ends and which of its text is
// released to the client, with OpenAI / vLLM semantics:
//   - stop strings are matched over the streamed text, including a match
//     split across tokens; the output ends just before the match (the stop
//     string is not included). Text that could still be the start of a stop
//     string is held back until it is resolved, so a client never sees text
//     that a later stop removes. When several stop strings complete in the
//     same step the earliest-starting one wins.
//   - a stop token id (eos) ends the generation; its own text is not output.
//   - max_tokens ends the generation after that many tokens (the stop token
//     counted), finish_reason "length"; a stop on the same token wins.
// The input text is whatever the incremental detokenizer released, so it is
// always complete UTF-8 and matches never split a character (stop strings are
// valid UTF-8, see validateSamplingParams). text_stream.h combines the two.
//
// Ownership: owns copies of the stop strings and ids. Thread-safety: one
// matcher per request, one thread at a time.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_SAMPLING_STOP_MATCHER_H
#define STRATA_RUNTIME_SAMPLING_STOP_MATCHER_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/base/status.h"
#include "runtime/sampling/sampling_params.h"

namespace strata::runtime {

/// Why a generation ended (OpenAI finish_reason).
enum class FinishReason {
  kNone,   // still running
  kStop,   // a stop string or stop token
  kLength, // max_tokens (or the context window, reported by the caller)
};

/// "stop", "length", or "" for kNone.
std::string_view finishReasonName(FinishReason reason);

/// What one step released.
struct StopOutput {
  /// Text to send to the client now (possibly empty).
  std::string text;
  /// kNone while the generation goes on.
  FinishReason finish_reason = FinishReason::kNone;
  /// The stop token that ended it, or -1.
  int32_t stop_token = -1;
  /// Index into SamplingParams::stop of the stop string that ended it, or -1.
  int32_t stop_string_index = -1;
};

class StopMatcher {
public:
  /// Validates `params` (validateSamplingParams) and copies what it needs.
  static StatusOr<StopMatcher> create(const SamplingParams &params);

  /// True when `token` is one of the stop token ids.
  bool isStopToken(int32_t token) const;
  /// True when pushing `token` next will end the generation whatever its text
  /// (a stop token, or the max_tokens-th token). Lets the caller flush the
  /// detokenizer into that last delta.
  bool endsGeneration(int32_t token) const;

  /// Accounts for one generated token and `delta`, the text it added (pass
  /// "" for a stop token; its text is never output). Returns the released text
  /// and, once finished, the reason. FAILED_PRECONDITION after the generation
  /// has finished.
  StatusOr<StopOutput> push(int32_t token, std::string_view delta);

  /// Ends a generation that stopped for a reason the matcher does not see (the
  /// context window is full: kLength; the client went away): `tail` (e.g.
  /// the detokenizer's final text) is matched like a delta, then all held text
  /// is released. The result's finish_reason is kStop when a stop string
  /// matched in the tail, else `reason`. FAILED_PRECONDITION when already
  /// finished.
  StatusOr<StopOutput> finish(std::string_view tail, FinishReason reason);

  bool finished() const { return finish_reason_ != FinishReason::kNone; }
  FinishReason finishReason() const { return finish_reason_; }
  /// Tokens pushed so far.
  size_t tokenCount() const { return token_count_; }
  /// Bytes currently held back as a possible stop-string prefix.
  size_t heldBytes() const { return held_.size(); }

private:
  StopMatcher() = default;
  /// Appends `delta` to the held text, then either cuts at the earliest stop
  /// string match (returns true) or moves everything that cannot start a stop
  /// string into `out.text`.
  bool matchText(std::string_view delta, StopOutput &out);
  void finishWith(FinishReason reason, StopOutput &out);

  std::vector<std::string> stop_;
  std::vector<int32_t> stop_token_ids_;
  int64_t max_tokens_ = 0;
  std::string held_;
  size_t token_count_ = 0;
  FinishReason finish_reason_ = FinishReason::kNone;
};

} // namespace strata::runtime

#endif // STRATA_RUNTIME_SAMPLING_STOP_MATCHER_H
