//===- utf8.cpp - UTF-8 helpers of the tokenizer ----------------------------===//

#include "runtime/tokenizer/utf8.h"

#include <cstdlib>

#include <utf8proc.h>

#include "runtime/tokenizer/regex.h"

namespace strata::runtime::tokenizer {

namespace {

/// Length of the valid UTF-8 sequence at `text[pos]`, or 0 when invalid; on 0,
/// `*out_bad` is the length of the maximal invalid subpart (at least 1).
size_t validSequenceLength(std::string_view text, size_t pos, size_t *out_bad) {
  auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  unsigned char b = byte(pos);
  if (b < 0x80)
    return 1;
  size_t need = 0;
  unsigned char lo = 0x80, hi = 0xBF;
  if (b >= 0xC2 && b <= 0xDF) {
    need = 1;
  } else if (b >= 0xE0 && b <= 0xEF) {
    need = 2;
    if (b == 0xE0)
      lo = 0xA0;
    if (b == 0xED)
      hi = 0x9F;
  } else if (b >= 0xF0 && b <= 0xF4) {
    need = 3;
    if (b == 0xF0)
      lo = 0x90;
    if (b == 0xF4)
      hi = 0x8F;
  } else {
    *out_bad = 1;
    return 0;
  }
  for (size_t k = 1; k <= need; ++k) {
    size_t i = pos + k;
    unsigned char l = k == 1 ? lo : 0x80, h = k == 1 ? hi : 0xBF;
    if (i >= text.size() || byte(i) < l || byte(i) > h) {
      *out_bad = k;
      return 0;
    }
  }
  return need + 1;
}

} // namespace

bool isValidUtf8(std::string_view text) {
  size_t pos = 0, bad = 0;
  while (pos < text.size()) {
    size_t n = validSequenceLength(text, pos, &bad);
    if (n == 0)
      return false;
    pos += n;
  }
  return true;
}

std::string toValidUtf8Lossy(std::string_view text) {
  if (isValidUtf8(text))
    return std::string(text);
  std::string out;
  out.reserve(text.size() + 8);
  size_t pos = 0, bad = 0;
  while (pos < text.size()) {
    size_t n = validSequenceLength(text, pos, &bad);
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      pos += bad;
      continue;
    }
    out.append(text.substr(pos, n));
    pos += n;
  }
  return out;
}

size_t decodeUtf8(std::string_view text, size_t pos, uint32_t *out_code_point) {
  auto byte = [&](size_t i) -> uint32_t {
    return static_cast<unsigned char>(text[i]);
  };
  uint32_t b = byte(pos);
  if (b < 0x80) {
    *out_code_point = b;
    return 1;
  }
  if (b < 0xE0) {
    *out_code_point = ((b & 0x1F) << 6) | (byte(pos + 1) & 0x3F);
    return 2;
  }
  if (b < 0xF0) {
    *out_code_point = ((b & 0x0F) << 12) | ((byte(pos + 1) & 0x3F) << 6) |
                      (byte(pos + 2) & 0x3F);
    return 3;
  }
  *out_code_point = ((b & 0x07) << 18) | ((byte(pos + 1) & 0x3F) << 12) |
                    ((byte(pos + 2) & 0x3F) << 6) | (byte(pos + 3) & 0x3F);
  return 4;
}

void appendUtf8(uint32_t cp, std::string &out) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

StatusOr<std::string> normalizeNfc(std::string_view text) {
  // Pure ASCII is always in NFC; skip the library call.
  bool ascii = true;
  for (char c : text)
    if (static_cast<unsigned char>(c) >= 0x80) {
      ascii = false;
      break;
    }
  if (ascii)
    return std::string(text);
  utf8proc_uint8_t *result = nullptr;
  utf8proc_ssize_t n = utf8proc_map(
      reinterpret_cast<const utf8proc_uint8_t *>(text.data()),
      static_cast<utf8proc_ssize_t>(text.size()), &result,
      static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
  if (n < 0)
    return invalidArgument("nfc normalization failed: {}",
                           utf8proc_errmsg(n));
  std::string out(reinterpret_cast<const char *>(result),
                  static_cast<size_t>(n));
  std::free(result);
  return out;
}

namespace {

enum class Property { kWhiteSpace, kWordChar };

/// Tests one code point against a Unicode property class of PCRE2.
bool codePointMatches(Property property, uint32_t code_point) {
  // Patterns are constants; compile once (thread-safe static init).
  static const StatusOr<Regex> whitespace = Regex::compile("\\p{White_Space}");
  static const StatusOr<Regex> word = Regex::compile(
      "[\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}\\x{200C}\\x{200D}]");
  const StatusOr<Regex> &regex =
      property == Property::kWhiteSpace ? whitespace : word;
  if (!regex.ok())
    return false;
  std::string text;
  appendUtf8(code_point, text);
  StatusOr<bool> matched = regex->matchesAt(text, 0);
  return matched.ok() && *matched;
}

} // namespace

bool isUnicodeWhitespace(uint32_t code_point) {
  if (code_point < 0x80)
    return code_point == ' ' || (code_point >= 0x09 && code_point <= 0x0D);
  return codePointMatches(Property::kWhiteSpace, code_point);
}

bool isUnicodeWordChar(uint32_t code_point) {
  if (code_point < 0x80)
    return (code_point >= '0' && code_point <= '9') ||
           (code_point >= 'a' && code_point <= 'z') ||
           (code_point >= 'A' && code_point <= 'Z') || code_point == '_';
  return codePointMatches(Property::kWordChar, code_point);
}

} // namespace strata::runtime::tokenizer
