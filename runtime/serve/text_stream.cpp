//===- text_stream.cpp - generated ids to text deltas, with stop strings ----===//
//
// Part of strata.
//
//===----------------------------------------------------------------------===//

#include "runtime/serve/text_stream.h"

#include <algorithm>

namespace strata::runtime::serve {

namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD"; // U+FFFD

bool endsWith(const std::string &s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

} // namespace

TextStream::TextStream(const tokenizer::Tokenizer &tokenizer,
                       std::vector<std::string> stop_strings,
                       bool skip_special_tokens, bool include_stop_str)
    : tokenizer_(tokenizer), stop_(std::move(stop_strings)),
      skip_special_tokens_(skip_special_tokens),
      include_stop_str_(include_stop_str) {}

StatusOr<std::string> TextStream::push(const std::vector<int32_t> &ids) {
  std::string out;
  tokenizer::DecodeOptions options;
  options.skip_special_tokens = skip_special_tokens_;
  for (int32_t id : ids) {
    if (stopped_)
      break;
    ids_.push_back(id);
    ++consumed_;
    std::vector<int32_t> window(ids_.begin() + prefix_offset_, ids_.end());
    std::vector<int32_t> before(ids_.begin() + prefix_offset_,
                                ids_.begin() + read_offset_);
    STRATA_ASSIGN_OR_RETURN(std::string prefix_text,
                            tokenizer_.decode(before, options));
    STRATA_ASSIGN_OR_RETURN(std::string new_text,
                            tokenizer_.decode(window, options));
    if (new_text.size() <= prefix_text.size() ||
        endsWith(new_text, kReplacement))
      continue; // nothing new yet, or an incomplete UTF-8 sequence
    std::string delta = new_text.substr(prefix_text.size());
    prefix_offset_ = read_offset_;
    read_offset_ = ids_.size();
    out += release(delta, /*final=*/false);
  }
  return out;
}

StatusOr<std::string> TextStream::finish() {
  if (stopped_)
    return std::string();
  std::string tail;
  if (read_offset_ < ids_.size()) {
    tokenizer::DecodeOptions options;
    options.skip_special_tokens = skip_special_tokens_;
    std::vector<int32_t> window(ids_.begin() + prefix_offset_, ids_.end());
    std::vector<int32_t> before(ids_.begin() + prefix_offset_,
                                ids_.begin() + read_offset_);
    STRATA_ASSIGN_OR_RETURN(std::string prefix_text,
                            tokenizer_.decode(before, options));
    STRATA_ASSIGN_OR_RETURN(std::string new_text,
                            tokenizer_.decode(window, options));
    if (new_text.size() > prefix_text.size())
      tail = new_text.substr(prefix_text.size());
    prefix_offset_ = read_offset_ = ids_.size();
  }
  return release(tail, /*final=*/true);
}

std::string TextStream::release(const std::string &text, bool final) {
  pending_ += text;
  size_t first = std::string::npos, first_size = 0;
  for (const std::string &s : stop_) {
    size_t at = pending_.find(s);
    if (at < first || (at == first && s.size() > first_size)) {
      first = at;
      first_size = s.size();
    }
  }
  if (first != std::string::npos) {
    std::string out =
        pending_.substr(0, include_stop_str_ ? first + first_size : first);
    pending_.clear();
    stopped_ = true;
    return out;
  }
  size_t hold = 0;
  if (!final) {
    // Longest suffix of pending_ that is a proper prefix of a stop string.
    for (const std::string &s : stop_)
      for (size_t k = std::min(s.size() - 1, pending_.size()); k > hold; --k)
        if (pending_.compare(pending_.size() - k, k, s, 0, k) == 0) {
          hold = k;
          break;
        }
  }
  std::string out = pending_.substr(0, pending_.size() - hold);
  pending_.erase(0, pending_.size() - hold);
  return out;
}

} // namespace strata::runtime::serve
