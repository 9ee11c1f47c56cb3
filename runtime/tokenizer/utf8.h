//===- utf8.h - UTF-8 helpers of the tokenizer ------------------------------===//
//
// Part of strata. Small UTF-8 routines the tokenizer needs around the Unicode
// libraries it uses (PCRE2 for regexes and character properties, utf8proc for
// NFC):
//   - lossy decoding that replaces every maximal invalid subsequence with
//     U+FFFD, exactly like Rust's String::from_utf8_lossy and the WHATWG
//     decoder (so invalid input and decoded byte soup behave like Hugging Face
//     `tokenizers`);
//   - code point iteration over valid UTF-8;
//   - NFC normalization (utf8proc);
//   - the Unicode properties that added-token matching needs (White_Space and
//     Alphabetic-or-Numeric, as Rust's char::is_whitespace / is_alphanumeric),
//     answered by PCRE2's Unicode property tables.
//
// Thread-safety: all functions are thread-safe.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_TOKENIZER_UTF8_H
#define STRATA_RUNTIME_TOKENIZER_UTF8_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "runtime/base/status.h"

namespace strata::runtime::tokenizer {

/// True when `text` is well-formed UTF-8 (no surrogates, no overlongs, at most
/// U+10FFFF).
bool isValidUtf8(std::string_view text);

/// Returns `text` with each maximal invalid subsequence replaced by U+FFFD
/// (EF BF BD). Valid input is returned unchanged.
std::string toValidUtf8Lossy(std::string_view text);

/// Decodes the code point starting at `text[pos]` of *valid* UTF-8 and
/// returns its length in bytes (1..4); `*out_code_point` receives the value.
size_t decodeUtf8(std::string_view text, size_t pos, uint32_t *out_code_point);

/// Appends the UTF-8 encoding of `code_point` to `out`.
void appendUtf8(uint32_t code_point, std::string &out);

/// Canonical composition (NFC) of valid UTF-8 `text`, via utf8proc.
StatusOr<std::string> normalizeNfc(std::string_view text);

/// Rust's char::is_whitespace: the Unicode White_Space property.
bool isUnicodeWhitespace(uint32_t code_point);

/// The UTS #18 word character (Rust regex's \w): Alphabetic, a mark (M*), a
/// decimal digit (Nd), connector punctuation (Pc, e.g. '_') or Join_Control
/// (U+200C, U+200D).
bool isUnicodeWordChar(uint32_t code_point);

} // namespace strata::runtime::tokenizer

#endif // STRATA_RUNTIME_TOKENIZER_UTF8_H
