//===- incremental_detokenizer.cpp - token ids to streamed text deltas -----===//
//
// Part of strata. The UTF-8 rules are the Unicode Standard's Table 3-7
// (well-formed byte sequences) with the "maximal subpart" replacement practice
// of §3.9, which is what the lossy decoder of runtime/tokenizer/utf8.h does.
//
//===----------------------------------------------------------------------===//

#include "runtime/sampling/incremental_detokenizer.h"

#include "runtime/tokenizer/utf8.h"

namespace strata::runtime {

static constexpr std::string_view kReplacement = "\xEF\xBF\xBD"; // U+FFFD

size_t decodeCompleteUtf8(std::string_view bytes, std::string &out) {
  const size_t n = bytes.size();
  size_t i = 0;
  while (i < n) {
    auto b = static_cast<unsigned char>(bytes[i]);
    if (b < 0x80) {
      out += static_cast<char>(b);
      ++i;
      continue;
    }
    // Continuation bytes needed and the allowed range of the first one.
    int need;
    unsigned char lo = 0x80, hi = 0xBF;
    if (b >= 0xC2 && b <= 0xDF) {
      need = 1;
    } else if (b == 0xE0) {
      need = 2, lo = 0xA0; // no overlongs
    } else if ((b >= 0xE1 && b <= 0xEC) || b == 0xEE || b == 0xEF) {
      need = 2;
    } else if (b == 0xED) {
      need = 2, hi = 0x9F; // no surrogates
    } else if (b == 0xF0) {
      need = 3, lo = 0x90; // no overlongs
    } else if (b >= 0xF1 && b <= 0xF3) {
      need = 3;
    } else if (b == 0xF4) {
      need = 3, hi = 0x8F; // at most U+10FFFF
    } else {
      out += kReplacement; // C0, C1, F5..FF, or a stray continuation byte
      ++i;
      continue;
    }
    size_t j = i + 1;
    int have = 0;
    while (have < need) {
      if (j >= n)
        return i; // a valid prefix so far: wait for more bytes
      auto c = static_cast<unsigned char>(bytes[j]);
      if (c < lo || c > hi)
        break;
      lo = 0x80, hi = 0xBF;
      ++j, ++have;
    }
    if (have == need)
      out.append(bytes.data() + i, j - i);
    else
      out += kReplacement; // bytes[i, j) is a maximal invalid subsequence
    i = j;
  }
  return n;
}

std::string IncrementalDetokenizer::push(int32_t token) {
  if (tokenizer_->appendTokenBytes(token, options_, first_, held_))
    first_ = false;
  std::string text;
  size_t used = decodeCompleteUtf8(held_, text);
  held_.erase(0, used);
  return text;
}

std::string IncrementalDetokenizer::finish() {
  std::string text = tokenizer::toValidUtf8Lossy(held_);
  held_.clear();
  return text;
}

} // namespace strata::runtime
