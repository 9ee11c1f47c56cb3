//===- pre_tokenizer.h - tokenizer.json pre-tokenizers ----------------------===//
//
// Part of strata. The "pre_tokenizer" of a tokenizer.json, as a list of steps
// that each turn a list of pieces into a finer list:
//   - Split: a Regex (PCRE2, used verbatim) or String pattern, with behavior
//     Isolated, Removed, MergedWithPrevious, MergedWithNext or Contiguous and
//     `invert`, exactly as Hugging Face's Split;
//   - ByteLevel: optional `add_prefix_space` (a space is prepended to every
//     piece that does not start with one), optional `use_regex` (GPT-2's
//     pattern, Isolated), then every byte of the piece is spelled with its
//     byte-level character;
//   - Sequence of the above.
// null means no pre-tokenization. Other types are rejected with UNIMPLEMENTED.
//
// Thread-safety: apply is const and thread-safe.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_TOKENIZER_PRE_TOKENIZER_H
#define STRATA_RUNTIME_TOKENIZER_PRE_TOKENIZER_H

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "runtime/base/status.h"
#include "runtime/tokenizer/regex.h"

namespace strata::runtime::tokenizer {

/// GPT-2's pattern, used by ByteLevel with use_regex.
inline constexpr const char *kGpt2Pattern =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|"
    "\\s+(?!\\S)|\\s+";

class PreTokenizer {
public:
  /// Builds the pre-tokenizer from the "pre_tokenizer" value (null allowed).
  static StatusOr<PreTokenizer> fromJson(const nlohmann::json &pre_tokenizer);

  /// Splits each piece of valid UTF-8 `pieces` in place.
  Status apply(std::vector<std::string> &pieces) const;

  /// True when some step spells bytes with byte-level characters.
  bool isByteLevel() const;

  enum class Behavior {
    kIsolated,
    kRemoved,
    kMergedWithPrevious,
    kMergedWithNext,
    kContiguous,
  };
  struct Step {
    enum class Kind { kSplit, kByteLevel } kind = Kind::kSplit;
    // kSplit
    std::vector<Regex> regex; // exactly one for kSplit, empty otherwise
    Behavior behavior = Behavior::kIsolated;
    bool invert = false;
    // kByteLevel
    bool add_prefix_space = false;
    bool use_regex = false;
  };
  const std::vector<Step> &steps() const { return steps_; }

  /// Splits `text` by the matches of `regex` with `behavior` (Hugging Face's
  /// NormalizedString::split), appending the non-empty pieces to `out`.
  static Status split(const std::string &text, const Regex &regex,
                      Behavior behavior, bool invert,
                      std::vector<std::string> &out);

private:
  std::vector<Step> steps_;
  std::vector<Regex> gpt2_; // compiled once when some step uses it
};

} // namespace strata::runtime::tokenizer

#endif // STRATA_RUNTIME_TOKENIZER_PRE_TOKENIZER_H
