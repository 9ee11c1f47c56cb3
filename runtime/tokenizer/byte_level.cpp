//===- byte_level.cpp - GPT-2 byte-to-character mapping ---------------------===//

#include "runtime/tokenizer/byte_level.h"

#include <array>

#include "runtime/tokenizer/utf8.h"

namespace strata::runtime::tokenizer {

namespace {

struct Tables {
  std::array<uint32_t, 256> char_of_byte{};
  std::array<std::string, 256> utf8_of_byte;
  // Mapped characters are all below U+0144.
  std::array<int, 0x144> byte_of_char{};

  Tables() {
    byte_of_char.fill(-1);
    auto printable = [](int b) {
      return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) ||
             (b >= 0xAE && b <= 0xFF);
    };
    uint32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      uint32_t c = printable(b) ? static_cast<uint32_t>(b) : next++;
      char_of_byte[b] = c;
      appendUtf8(c, utf8_of_byte[b]);
      byte_of_char[c] = b;
    }
  }
};

const Tables &tables() {
  static const Tables t;
  return t;
}

} // namespace

void appendByteLevelChars(std::string_view bytes, std::string &out) {
  const Tables &t = tables();
  for (char c : bytes)
    out += t.utf8_of_byte[static_cast<unsigned char>(c)];
}

int byteForByteLevelChar(uint32_t code_point) {
  if (code_point >= tables().byte_of_char.size())
    return -1;
  return tables().byte_of_char[code_point];
}

std::string byteLevelTokenToBytes(std::string_view token) {
  std::string out;
  out.reserve(token.size());
  size_t pos = 0;
  while (pos < token.size()) {
    uint32_t cp = 0;
    pos += decodeUtf8(token, pos, &cp);
    int b = byteForByteLevelChar(cp);
    if (b < 0)
      return std::string(token);
    out += static_cast<char>(b);
  }
  return out;
}

} // namespace strata::runtime::tokenizer
