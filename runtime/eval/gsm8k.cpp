//===- gsm8k.cpp - GSM8K data, prompts and answer extraction ---------------===//
//
// Part of strata. The two filters are written as small scanners rather than
// std::regex: the patterns are simple, the scanners are linear-time and the
// rules are spelled out next to the lm-eval regex they implement.
//
//===----------------------------------------------------------------------===//

#include "runtime/eval/gsm8k.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <numeric>

#include <nlohmann/json.hpp>

namespace strata::runtime::eval {

StatusOr<std::vector<Gsm8kExample>> loadGsm8kJsonl(const std::string &path) {
  std::ifstream in(path);
  if (!in)
    return notFound("cannot open gsm8k file '{}'", path);
  std::vector<Gsm8kExample> rows;
  std::string line;
  size_t lineNo = 0;
  while (std::getline(in, line)) {
    ++lineNo;
    if (line.find_first_not_of(" \t\r") == std::string::npos)
      continue;
    nlohmann::json row = nlohmann::json::parse(line, nullptr, false);
    if (row.is_discarded() || !row.is_object())
      return invalidArgument("{}:{}: not a JSON object", path, lineNo);
    auto q = row.find("question");
    auto a = row.find("answer");
    if (q == row.end() || !q->is_string())
      return invalidArgument("{}:{}: missing string field 'question'", path,
                             lineNo);
    if (a == row.end() || !a->is_string())
      return invalidArgument("{}:{}: missing string field 'answer'", path,
                             lineNo);
    rows.push_back({q->get<std::string>(), a->get<std::string>()});
  }
  if (rows.empty())
    return invalidArgument("gsm8k file '{}' holds no examples", path);
  return rows;
}

static bool isDigit(char c) { return c >= '0' && c <= '9'; }

// `#### (\-?[0-9\.\,]+)`, first match.
std::optional<std::string> strictMatch(std::string_view s) {
  for (size_t pos = s.find("#### "); pos != std::string_view::npos;
       pos = s.find("#### ", pos + 1)) {
    size_t i = pos + 5;
    size_t begin = i;
    if (i < s.size() && s[i] == '-')
      ++i;
    size_t bodyBegin = i;
    while (i < s.size() && (isDigit(s[i]) || s[i] == '.' || s[i] == ','))
      ++i;
    if (i > bodyBegin)
      return std::string(s.substr(begin, i - begin));
  }
  return std::nullopt;
}

// `(-?[$0-9.,]{2,})|(-?[0-9]+)`, all non-overlapping matches scanned left to
// right as Python's re.findall does, the last one kept. At each position the
// first alternative is tried first (greedy class run of length >= 2 after an
// optional '-'), then the second (a digit run after an optional '-').
std::optional<std::string> flexibleExtract(std::string_view s) {
  auto isClass = [](char c) {
    return isDigit(c) || c == '$' || c == '.' || c == ',';
  };
  std::optional<std::string> last;
  size_t i = 0;
  while (i < s.size()) {
    // Alternative 1.
    size_t j = i;
    if (s[j] == '-')
      ++j;
    size_t k = j;
    while (k < s.size() && isClass(s[k]))
      ++k;
    if (k - j >= 2) {
      last = std::string(s.substr(i, k - i));
      i = k;
      continue;
    }
    // Alternative 1 may also match without the optional '-' consumed, but a
    // '-' followed by < 2 class chars cannot yield a longer run when skipped:
    // the run after it is the same. Alternative 2.
    k = j;
    while (k < s.size() && isDigit(s[k]))
      ++k;
    if (k > j) {
      last = std::string(s.substr(i, k - i));
      i = k;
      continue;
    }
    ++i;
  }
  if (!last)
    return std::nullopt;
  // lm-eval strips the selected group.
  size_t b = last->find_first_not_of(" \t\r\n");
  size_t e = last->find_last_not_of(" \t\r\n");
  return last->substr(b, e - b + 1);
}

std::string normalizeForExactMatch(std::string_view text) {
  std::string s;
  s.reserve(text.size());
  // "," then "\$": delete every comma and dollar sign.
  for (char c : text)
    if (c != ',' && c != '$')
      s.push_back(c);
  // "(?s).*#### ": greedy, so everything up to the LAST "#### ".
  size_t last = s.rfind("#### ");
  if (last != std::string::npos)
    s.erase(0, last + 5);
  // "\.$": Python's `$` matches at the end and before a final newline.
  if (!s.empty() && s.back() == '.')
    s.pop_back();
  else if (s.size() >= 2 && s.back() == '\n' && s[s.size() - 2] == '.')
    s.erase(s.size() - 2, 1);
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return s;
}

bool exactMatch(const std::optional<std::string> &prediction,
                std::string_view goldAnswer) {
  if (!prediction)
    return false;
  return normalizeForExactMatch(*prediction) ==
         normalizeForExactMatch(goldAnswer);
}

std::string renderQuestion(const Gsm8kExample &example) {
  return "Question: " + example.question + "\nAnswer:";
}

std::vector<ChatMessage>
renderFewShotChat(const std::vector<const Gsm8kExample *> &shots,
                  const Gsm8kExample &test) {
  std::vector<ChatMessage> messages;
  for (const Gsm8kExample *shot : shots) {
    messages.push_back({"user", renderQuestion(*shot)});
    messages.push_back({"assistant", shot->answer});
  }
  messages.push_back({"user", renderQuestion(test)});
  return messages;
}

std::string
renderFewShotCompletion(const std::vector<const Gsm8kExample *> &shots,
                        const Gsm8kExample &test) {
  std::string out;
  for (const Gsm8kExample *shot : shots)
    out += renderQuestion(*shot) + " " + shot->answer + "\n\n";
  out += renderQuestion(test);
  return out;
}

static uint64_t splitmix64(uint64_t &state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

std::vector<size_t> chooseShots(size_t poolSize, size_t k, uint64_t seed,
                                size_t testIndex) {
  k = std::min(k, poolSize);
  // Partial Fisher-Yates over an index permutation, seeded per test item.
  std::vector<size_t> idx(poolSize);
  std::iota(idx.begin(), idx.end(), size_t{0});
  uint64_t state = seed ^ (0xD1B54A32D192ED03ull * (testIndex + 1));
  for (size_t i = 0; i < k; ++i) {
    size_t j = i + static_cast<size_t>(splitmix64(state) % (poolSize - i));
    std::swap(idx[i], idx[j]);
  }
  idx.resize(k);
  return idx;
}

const std::vector<std::string> &gsm8kStopSequences() {
  static const std::vector<std::string> stops = {"Question:", "</s>",
                                                 "<|im_end|>"};
  return stops;
}

} // namespace strata::runtime::eval
