//===- regex.h - PCRE2 regexes for pre-tokenization -------------------------===//
//
// Part of strata. A compiled PCRE2 pattern in UTF + UCP mode, so the Split
// pre-tokenizer patterns of Hugging Face `tokenizer.json` files (written for
// Oniguruma: \p{L}, \p{N}, (?i:...), \s+(?!\S)) are used verbatim. In UCP mode
// PCRE2's \s is Unicode White_Space (including U+0085), like Oniguruma's.
//
// Ownership: a Regex owns its compiled code; it is movable, not copyable.
// Thread-safety: findAll may be called concurrently (match data is per call).
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_TOKENIZER_REGEX_H
#define STRATA_RUNTIME_TOKENIZER_REGEX_H

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/base/status.h"

namespace strata::runtime::tokenizer {

/// A byte range [begin, end) of a string.
struct Span {
  size_t begin = 0;
  size_t end = 0;
};

class Regex {
public:
  /// Compiles `pattern` (UTF-8) with PCRE2_UTF | PCRE2_UCP (JIT when
  /// available). Returns INVALID_ARGUMENT with PCRE2's message and offset on a
  /// syntax error.
  static StatusOr<Regex> compile(std::string_view pattern);

  /// Compiles a pattern matching `literal` exactly (the `String` pattern of a
  /// Split pre-tokenizer).
  static StatusOr<Regex> compileLiteral(std::string_view literal);

  /// All non-overlapping matches in valid UTF-8 `text`, left to right. An
  /// empty match advances the search by one code point (Oniguruma's
  /// find_iter behaviour) and is reported as an empty span.
  StatusOr<std::vector<Span>> findAll(std::string_view text) const;

  /// True when the pattern matches at exactly `pos` of valid UTF-8 `text`.
  StatusOr<bool> matchesAt(std::string_view text, size_t pos) const;

  const std::string &pattern() const { return pattern_; }

private:
  struct Code;
  Regex(std::string pattern, std::shared_ptr<const Code> code)
      : pattern_(std::move(pattern)), code_(std::move(code)) {}

  std::string pattern_;
  std::shared_ptr<const Code> code_;
};

} // namespace strata::runtime::tokenizer

#endif // STRATA_RUNTIME_TOKENIZER_REGEX_H
