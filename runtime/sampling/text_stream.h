//===- text_stream.h - generated tokens to client text ---------------------===//
//
// Part of strata. The per-request pipeline from generated token ids to the
// text a client receives: IncrementalDetokenizer (complete UTF-8 only) feeding
// StopMatcher (stop strings, stop tokens, max_tokens). A stop token is not
// detokenized; on the token that ends the generation the detokenizer's held
// bytes are flushed (as U+FFFD) into the last delta, so nothing is lost.
//
// Ownership: borrows the Tokenizer (must outlive the stream). Thread-safety:
// one stream per request, one thread at a time.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_SAMPLING_TEXT_STREAM_H
#define STRATA_RUNTIME_SAMPLING_TEXT_STREAM_H

#include "runtime/sampling/incremental_detokenizer.h"
#include "runtime/sampling/stop_matcher.h"

namespace strata::runtime {

class TextStream {
public:
  /// Validates `params`; `tokenizer` must outlive the stream.
  static StatusOr<TextStream> create(const tokenizer::Tokenizer &tokenizer,
                                     const SamplingParams &params,
                                     tokenizer::DecodeOptions options = {});

  /// One generated token: the text to send and, once finished, the reason.
  /// FAILED_PRECONDITION after the stream finished.
  StatusOr<StopOutput> push(int32_t token);

  /// Ends the stream for an outside reason (context window full: kLength),
  /// flushing held text. FAILED_PRECONDITION when already finished.
  StatusOr<StopOutput> finish(FinishReason reason);

  bool finished() const { return matcher_.finished(); }
  const StopMatcher &matcher() const { return matcher_; }

private:
  TextStream(IncrementalDetokenizer detokenizer, StopMatcher matcher)
      : detokenizer_(std::move(detokenizer)), matcher_(std::move(matcher)) {}

  IncrementalDetokenizer detokenizer_;
  StopMatcher matcher_;
};

} // namespace strata::runtime

#endif // STRATA_RUNTIME_SAMPLING_TEXT_STREAM_H
