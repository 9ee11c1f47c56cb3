//===- incremental_detokenizer.h - token ids to streamed text deltas -------===//
//
// Part of strata. Turns a stream of generated token ids into text deltas for
// streaming responses. Byte-level BPE tokens are byte strings, and one
// character (CJK, emoji) often spans several tokens, so the detokenizer keeps
// the bytes not yet released and releases only complete UTF-8:
//   - the bytes of a character that is still incomplete at the end (a valid
//     prefix of a well-formed sequence) are held until more tokens arrive;
//   - a byte sequence that can no longer become valid is released as U+FFFD,
//     one per maximal invalid subsequence (as Tokenizer::decode, Rust's
//     String::from_utf8_lossy and the WHATWG decoder do);
//   - finish() releases what is still held as U+FFFD.
// The concatenation of all deltas and finish() equals
// Tokenizer::decode(all ids, options) exactly, and every delta is valid UTF-8.
// Work per token is proportional to its bytes (no re-decoding of a window).
//
// Ownership: borrows the Tokenizer, which must outlive the detokenizer.
// Thread-safety: one detokenizer per request, one thread at a time (the
// Tokenizer itself may be shared).
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_SAMPLING_INCREMENTAL_DETOKENIZER_H
#define STRATA_RUNTIME_SAMPLING_INCREMENTAL_DETOKENIZER_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "runtime/tokenizer/tokenizer.h"

namespace strata::runtime {

/// Decodes the longest prefix of `bytes` whose decoding is final: valid
/// characters are copied, each maximal invalid subsequence becomes U+FFFD, and
/// decoding stops before a trailing valid-but-incomplete sequence. Appends the
/// text to `out` and returns the number of bytes consumed.
size_t decodeCompleteUtf8(std::string_view bytes, std::string &out);

class IncrementalDetokenizer {
public:
  explicit IncrementalDetokenizer(const tokenizer::Tokenizer &tokenizer,
                                  tokenizer::DecodeOptions options = {})
      : tokenizer_(&tokenizer), options_(options) {}

  /// Appends `token` and returns the text that became complete (possibly
  /// empty). Ids decode() would skip (unknown ids, special tokens under
  /// skip_special_tokens) add nothing.
  std::string push(int32_t token);

  /// Ends the stream: returns the held bytes, each maximal invalid
  /// subsequence as U+FFFD (empty when nothing is held). Pushing afterwards
  /// continues the same text.
  std::string finish();

  /// Bytes held back as an incomplete character (at most 3).
  size_t heldBytes() const { return held_.size(); }

private:
  const tokenizer::Tokenizer *tokenizer_;
  tokenizer::DecodeOptions options_;
  std::string held_;
  bool first_ = true;
};

} // namespace strata::runtime

#endif // STRATA_RUNTIME_SAMPLING_INCREMENTAL_DETOKENIZER_H
