//===- byte_level.h - GPT-2 byte-to-character mapping -----------------------===//
//
// Part of strata. Byte-level BPE vocabularies spell every byte 0..255 as one
// printable Unicode character (GPT-2's bytes_to_unicode): the printable
// Latin-1 bytes '!'..'~', '¡'..'¬', '®'..'ÿ' stand for themselves and the other
// 68 bytes map, in order, to U+0100, U+0101, ... (so ' ' is 'Ġ' U+0120 and
// '\n' is 'Ċ' U+010A). This is an algorithm, not a Unicode table.
//
// Thread-safety: the tables are immutable after first use.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_TOKENIZER_BYTE_LEVEL_H
#define STRATA_RUNTIME_TOKENIZER_BYTE_LEVEL_H

#include <cstdint>
#include <string>
#include <string_view>

namespace strata::runtime::tokenizer {

/// Appends the byte-level spelling of every byte of `bytes` to `out`.
void appendByteLevelChars(std::string_view bytes, std::string &out);

/// The byte a byte-level character stands for, or -1 when `code_point` is not
/// one of the 256 mapped characters.
int byteForByteLevelChar(uint32_t code_point);

/// Decodes a byte-level token (valid UTF-8) to the bytes it spells. When some
/// character is not a byte-level character, returns the token's own bytes
/// (Hugging Face's ByteLevel decoder does the same).
std::string byteLevelTokenToBytes(std::string_view token);

} // namespace strata::runtime::tokenizer

#endif // STRATA_RUNTIME_TOKENIZER_BYTE_LEVEL_H
