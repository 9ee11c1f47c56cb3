//===- tokenizer.h - Hugging Face tokenizer.json tokenizer ------------------===//
//
// Part of strata. The public API of the runtime tokenizer: loads a Hugging
// Face `tokenizer.json` and encodes and decodes text with the same ids and
// strings as Hugging Face `tokenizers` (checked against its goldens, see
// docs/Tokenizer.md). Supported pipeline:
//   added/special tokens (matched first) -> normalizer (null, NFC, Sequence)
//   -> pre_tokenizer (Split, ByteLevel, Sequence) -> BPE model;
//   decoder: ByteLevel or null.
// Anything else in the file is rejected at load time with UNIMPLEMENTED, so a
// loaded tokenizer never silently diverges. The post_processor is not applied:
// encode() equals Hugging Face's encode(text, add_special_tokens=False); chat
// prompts spell their special tokens in text (see glm_chat.h).
//
// Ownership: a Tokenizer owns all its tables; create it once and share it.
// Thread-safety: encode, decode and the lookups are const and may be called
// from many threads at once.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_TOKENIZER_TOKENIZER_H
#define STRATA_RUNTIME_TOKENIZER_TOKENIZER_H

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/base/status.h"
#include "runtime/tokenizer/added_vocabulary.h"

namespace strata::runtime::tokenizer {

class BpeModel;
class Normalizer;
class PreTokenizer;

/// Options of Tokenizer::decode; zero-initialized means Hugging Face's
/// defaults.
struct DecodeOptions {
  /// Drop tokens whose added-token entry is "special" (default false).
  bool skip_special_tokens = false;
};

class Tokenizer {
public:
  /// Reads and parses a tokenizer.json file. NOT_FOUND when it cannot be
  /// opened; errors in the file carry its path as context.
  static StatusOr<std::unique_ptr<Tokenizer>> fromFile(const std::string &path);
  /// Parses tokenizer.json text.
  static StatusOr<std::unique_ptr<Tokenizer>> fromJson(std::string_view json_text);

  ~Tokenizer();
  Tokenizer(const Tokenizer &) = delete;
  Tokenizer &operator=(const Tokenizer &) = delete;

  /// Encodes `text`. Invalid UTF-8 is first replaced like
  /// String::from_utf8_lossy (each maximal invalid subsequence becomes
  /// U+FFFD), which is what a Hugging Face caller holding those bytes would
  /// pass.
  StatusOr<std::vector<int32_t>> encode(std::string_view text) const;

  /// Decodes `ids` to UTF-8. Ids that are neither added tokens nor in the
  /// model vocab are skipped, as Hugging Face does; byte sequences that are
  /// not valid UTF-8 become U+FFFD per maximal invalid subsequence.
  StatusOr<std::string> decode(const std::vector<int32_t> &ids,
                               const DecodeOptions &options = {}) const;

  /// Appends to `out` the bytes token `id` contributes to decode()'s output,
  /// before invalid UTF-8 is repaired: the byte-level decoding of its token
  /// string (an added token's decoded content), or, without a decoder, the
  /// token string preceded by a space unless `first`. Returns false and
  /// appends nothing when decode() would skip the id (unknown id, or a
  /// special token under skip_special_tokens). decode(ids) equals the lossy
  /// UTF-8 repair of these bytes concatenated, `first` being true until one
  /// call returned true; the incremental detokenizer
  /// (runtime/sampling/incremental_detokenizer.h) is built on this.
  bool appendTokenBytes(int32_t id, const DecodeOptions &options, bool first,
                        std::string &out) const;

  /// The id of a token string (added tokens first, then the model vocab).
  std::optional<int32_t> tokenToId(std::string_view token) const;
  /// The token string of `id`, or nullopt when unknown.
  std::optional<std::string> idToToken(int32_t id) const;
  /// True when `id` is an added token marked special.
  bool isSpecialId(int32_t id) const;
  /// One more than the largest id of the model vocab and the added tokens.
  size_t idLimit() const;
  const std::vector<AddedToken> &addedTokens() const {
    return added_.tokens();
  }
  /// Number of merges of the BPE model.
  size_t mergeCount() const;

  /// Applies the normalizer alone (for tests and tools).
  StatusOr<std::string> normalize(std::string_view text) const;
  /// Applies the pre-tokenizer alone to one piece of text (no added-token
  /// matching, no normalization): the words BPE would see.
  StatusOr<std::vector<std::string>> preTokenize(std::string_view text) const;

private:
  Tokenizer();
  Status encodePlain(std::string_view text, std::vector<int32_t> &out_ids) const;

  std::unique_ptr<Normalizer> normalizer_;
  std::unique_ptr<PreTokenizer> pre_tokenizer_;
  std::unique_ptr<BpeModel> model_;
  AddedVocabulary added_;
  bool byte_level_decoder_ = false;
};

} // namespace strata::runtime::tokenizer

#endif // STRATA_RUNTIME_TOKENIZER_TOKENIZER_H
