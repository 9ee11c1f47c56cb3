//===- regex.cpp - PCRE2 regexes for pre-tokenization -----------------------===//

#include "runtime/tokenizer/regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

namespace strata::runtime::tokenizer {

struct Regex::Code {
  pcre2_code *code = nullptr;
  ~Code() { pcre2_code_free(code); }
};

namespace {

std::string pcre2ErrorMessage(int error_code) {
  PCRE2_UCHAR buffer[256];
  int n = pcre2_get_error_message(error_code, buffer, sizeof(buffer));
  if (n < 0)
    return fmt::format("pcre2 error {}", error_code);
  return std::string(reinterpret_cast<const char *>(buffer), n);
}

struct MatchData {
  explicit MatchData(const pcre2_code *code)
      : data(pcre2_match_data_create_from_pattern(code, nullptr)) {}
  ~MatchData() { pcre2_match_data_free(data); }
  pcre2_match_data *data;
};

} // namespace

StatusOr<Regex> Regex::compile(std::string_view pattern) {
  int error_code = 0;
  PCRE2_SIZE error_offset = 0;
  pcre2_code *code = pcre2_compile(
      reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
      PCRE2_UTF | PCRE2_UCP, &error_code, &error_offset, nullptr);
  if (!code)
    return invalidArgument("invalid regex at offset {}: {}", error_offset,
                           pcre2ErrorMessage(error_code));
  // JIT is an optimization only; without it pcre2_match interprets.
  (void)pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
  auto owned = std::make_shared<Code>();
  owned->code = code;
  return Regex(std::string(pattern), std::move(owned));
}

StatusOr<Regex> Regex::compileLiteral(std::string_view literal) {
  // \Q...\E quotes everything except a literal "\E", which is spliced in.
  std::string pattern = "\\Q";
  for (size_t i = 0; i < literal.size(); ++i) {
    if (literal.compare(i, 2, "\\E") == 0) {
      pattern += "\\E\\\\E\\Q";
      ++i;
      continue;
    }
    pattern += literal[i];
  }
  pattern += "\\E";
  return compile(pattern);
}

StatusOr<std::vector<Span>> Regex::findAll(std::string_view text) const {
  std::vector<Span> spans;
  MatchData match(code_->code);
  if (!match.data)
    return resourceExhausted("cannot allocate pcre2 match data");
  size_t pos = 0;
  while (pos <= text.size()) {
    int rc = pcre2_match(code_->code, reinterpret_cast<PCRE2_SPTR>(text.data()),
                         text.size(), pos, PCRE2_NO_UTF_CHECK, match.data,
                         nullptr);
    if (rc == PCRE2_ERROR_NOMATCH)
      break;
    if (rc < 0)
      return internalError("regex match failed at byte {}: {}", pos,
                           pcre2ErrorMessage(rc));
    PCRE2_SIZE *ovector = pcre2_get_ovector_pointer(match.data);
    size_t begin = ovector[0], end = ovector[1];
    spans.push_back({begin, end});
    if (end > begin) {
      pos = end;
      continue;
    }
    // Empty match: step over one code point.
    if (end >= text.size())
      break;
    pos = end + 1;
    while (pos < text.size() &&
           (static_cast<unsigned char>(text[pos]) & 0xC0) == 0x80)
      ++pos;
  }
  return spans;
}

StatusOr<bool> Regex::matchesAt(std::string_view text, size_t pos) const {
  MatchData match(code_->code);
  if (!match.data)
    return resourceExhausted("cannot allocate pcre2 match data");
  int rc = pcre2_match(code_->code, reinterpret_cast<PCRE2_SPTR>(text.data()),
                       text.size(), pos, PCRE2_NO_UTF_CHECK | PCRE2_ANCHORED,
                       match.data, nullptr);
  if (rc == PCRE2_ERROR_NOMATCH)
    return false;
  if (rc < 0)
    return internalError("regex match failed at byte {}: {}", pos,
                         pcre2ErrorMessage(rc));
  return true;
}

} // namespace strata::runtime::tokenizer
