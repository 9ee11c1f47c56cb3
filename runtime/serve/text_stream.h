//===- text_stream.h - generated ids to text deltas, with stop strings ------===//
//
// Part of strata. Turns the token ids an engine streams into the text deltas
// a client sees:
//  * incremental detokenization: a delta is emitted only once the decoded
//    text no longer ends in an incomplete UTF-8 sequence (U+FFFD), decoding
//    a small window of recent ids (the prefix/read-offset scheme of vLLM and
//    TGI) so the cost per token stays constant;
//  * stop strings: text that could still be the start of a stop string is
//    held back; when a stop string appears, the text before it is emitted and
//    the stream reports `stopped` (the stop string itself is not sent, as
//    OpenAI does, unless include_stop_str, vLLM's
//    include_stop_str_in_output).
// Special tokens are skipped in the text unless skip_special_tokens is off
// (vLLM's skip_special_tokens).
//
// Ownership: holds a reference to the tokenizer, which must outlive it.
// Thread-safety: one TextStream per request, used from one thread at a time.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_SERVE_TEXT_STREAM_H
#define STRATA_RUNTIME_SERVE_TEXT_STREAM_H

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/base/status.h"
#include "runtime/tokenizer/tokenizer.h"

namespace strata::runtime::serve {

class TextStream {
public:
  TextStream(const tokenizer::Tokenizer &tokenizer,
             std::vector<std::string> stop_strings,
             bool skip_special_tokens = true, bool include_stop_str = false);

  /// Appends generated ids; returns the text that became final. After a stop
  /// string matched, further ids are ignored and "" is returned.
  StatusOr<std::string> push(const std::vector<int32_t> &ids);
  /// End of generation: returns everything still held back (an incomplete
  /// UTF-8 tail decodes to U+FFFD; a partial stop-string match is released).
  StatusOr<std::string> finish();

  /// True once a stop string matched.
  bool stopped() const { return stopped_; }
  /// Ids pushed up to and including the one that completed the stop string
  /// (all pushed ids while not stopped).
  int32_t consumedTokens() const { return consumed_; }

private:
  /// Feeds decoded text through the stop-string matcher.
  std::string release(const std::string &text, bool final);

  const tokenizer::Tokenizer &tokenizer_;
  std::vector<std::string> stop_;
  bool skip_special_tokens_ = true;
  bool include_stop_str_ = false;
  std::vector<int32_t> ids_;
  size_t prefix_offset_ = 0; // decoding window start
  size_t read_offset_ = 0;   // ids before this are already text
  std::string pending_;      // decoded text held back for stop matching
  bool stopped_ = false;
  int32_t consumed_ = 0;
};

} // namespace strata::runtime::serve

#endif // STRATA_RUNTIME_SERVE_TEXT_STREAM_H
