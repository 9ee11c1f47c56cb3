//===- pre_tokenizer.cpp - tokenizer.json pre-tokenizers --------------------===//

#include "runtime/tokenizer/pre_tokenizer.h"

#include <algorithm>
#include <utility>

#include <nlohmann/json.hpp>

#include "runtime/tokenizer/byte_level.h"

namespace strata::runtime::tokenizer {

using json = nlohmann::json;

namespace {

bool boolField(const json &node, const char *key, bool fallback) {
  auto it = node.find(key);
  return it != node.end() && it->is_boolean() ? it->get<bool>() : fallback;
}

StatusOr<PreTokenizer::Step> parseSplit(const json &node) {
  PreTokenizer::Step step;
  step.kind = PreTokenizer::Step::Kind::kSplit;
  auto pattern = node.find("pattern");
  if (pattern == node.end() || !pattern->is_object())
    return invalidArgument("pre_tokenizer: Split needs a pattern object");
  if (pattern->contains("Regex") && (*pattern)["Regex"].is_string()) {
    STRATA_ASSIGN_OR_RETURN(Regex regex,
                            Regex::compile((*pattern)["Regex"].get<std::string>()));
    step.regex.push_back(std::move(regex));
  } else if (pattern->contains("String") && (*pattern)["String"].is_string()) {
    STRATA_ASSIGN_OR_RETURN(
        Regex regex,
        Regex::compileLiteral((*pattern)["String"].get<std::string>()));
    step.regex.push_back(std::move(regex));
  } else {
    return invalidArgument(
        "pre_tokenizer: Split pattern must hold a Regex or String, got {}",
        pattern->dump());
  }
  auto behavior = node.find("behavior");
  std::string name = behavior != node.end() && behavior->is_string()
                         ? behavior->get<std::string>()
                         : "";
  if (name == "Isolated")
    step.behavior = PreTokenizer::Behavior::kIsolated;
  else if (name == "Removed")
    step.behavior = PreTokenizer::Behavior::kRemoved;
  else if (name == "MergedWithPrevious")
    step.behavior = PreTokenizer::Behavior::kMergedWithPrevious;
  else if (name == "MergedWithNext")
    step.behavior = PreTokenizer::Behavior::kMergedWithNext;
  else if (name == "Contiguous")
    step.behavior = PreTokenizer::Behavior::kContiguous;
  else
    return invalidArgument("pre_tokenizer: unknown Split behavior \"{}\"", name);
  step.invert = boolField(node, "invert", false);
  return step;
}

Status addSteps(const json &node, std::vector<PreTokenizer::Step> &steps,
                int depth) {
  if (depth > 16)
    return invalidArgument("pre_tokenizer: sequences nested too deeply");
  if (!node.is_object() || !node.contains("type") || !node["type"].is_string())
    return invalidArgument("pre_tokenizer: expected an object with a type");
  const std::string &type = node["type"].get_ref<const std::string &>();
  if (type == "Sequence") {
    auto list = node.find("pretokenizers");
    if (list == node.end() || !list->is_array())
      return invalidArgument(
          "pre_tokenizer: Sequence needs a pretokenizers array");
    for (const json &child : *list)
      STRATA_RETURN_IF_ERROR(addSteps(child, steps, depth + 1));
    return okStatus();
  }
  if (type == "Split") {
    STRATA_ASSIGN_OR_RETURN(PreTokenizer::Step step, parseSplit(node));
    steps.push_back(std::move(step));
    return okStatus();
  }
  if (type == "ByteLevel") {
    PreTokenizer::Step step;
    step.kind = PreTokenizer::Step::Kind::kByteLevel;
    step.add_prefix_space = boolField(node, "add_prefix_space", true);
    step.use_regex = boolField(node, "use_regex", true);
    steps.push_back(std::move(step));
    return okStatus();
  }
  return unimplemented("pre_tokenizer: unsupported type {}", type);
}

} // namespace

StatusOr<PreTokenizer> PreTokenizer::fromJson(const json &pre_tokenizer) {
  PreTokenizer result;
  if (pre_tokenizer.is_null())
    return result;
  STRATA_RETURN_IF_ERROR(addSteps(pre_tokenizer, result.steps_, 0));
  for (const Step &step : result.steps_) {
    if (step.kind == Step::Kind::kByteLevel && step.use_regex) {
      STRATA_ASSIGN_OR_RETURN(Regex gpt2, Regex::compile(kGpt2Pattern));
      result.gpt2_.push_back(std::move(gpt2));
      break;
    }
  }
  return result;
}

bool PreTokenizer::isByteLevel() const {
  for (const Step &step : steps_)
    if (step.kind == Step::Kind::kByteLevel)
      return true;
  return false;
}

Status PreTokenizer::split(const std::string &text, const Regex &regex,
                           Behavior behavior, bool invert,
                           std::vector<std::string> &out) {
  struct Segment {
    size_t begin, end;
    bool is_match;
  };
  // Hugging Face's Pattern::find_matches: matches and the gaps between them.
  std::vector<Segment> segments;
  if (text.empty()) {
    segments.push_back({0, 0, false});
  } else {
    STRATA_ASSIGN_OR_RETURN(std::vector<Span> matches, regex.findAll(text));
    size_t prev = 0;
    for (const Span &m : matches) {
      if (prev != m.begin)
        segments.push_back({prev, m.begin, false});
      segments.push_back({m.begin, m.end, true});
      prev = m.end;
    }
    if (prev != text.size())
      segments.push_back({prev, text.size(), false});
  }
  if (invert)
    for (Segment &s : segments)
      s.is_match = !s.is_match;

  // Each kept piece: [begin, end) and whether it is removed.
  std::vector<Segment> pieces;
  switch (behavior) {
  case Behavior::kIsolated:
    for (const Segment &s : segments)
      pieces.push_back({s.begin, s.end, false});
    break;
  case Behavior::kRemoved:
    for (const Segment &s : segments)
      pieces.push_back({s.begin, s.end, s.is_match});
    break;
  case Behavior::kContiguous: {
    bool previous_match = false;
    for (const Segment &s : segments) {
      if (!pieces.empty() && s.is_match == previous_match)
        pieces.back().end = s.end;
      else
        pieces.push_back({s.begin, s.end, false});
      previous_match = s.is_match;
    }
    break;
  }
  case Behavior::kMergedWithPrevious: {
    bool previous_match = false;
    for (const Segment &s : segments) {
      if (s.is_match && !previous_match && !pieces.empty())
        pieces.back().end = s.end;
      else
        pieces.push_back({s.begin, s.end, false});
      previous_match = s.is_match;
    }
    break;
  }
  case Behavior::kMergedWithNext: {
    bool previous_match = false;
    for (size_t i = segments.size(); i-- > 0;) {
      const Segment &s = segments[i];
      if (s.is_match && !previous_match && !pieces.empty())
        pieces.back().begin = s.begin;
      else
        pieces.push_back({s.begin, s.end, false});
      previous_match = s.is_match;
    }
    std::reverse(pieces.begin(), pieces.end());
    break;
  }
  }
  for (const Segment &p : pieces)
    if (!p.is_match && p.end > p.begin)
      out.push_back(text.substr(p.begin, p.end - p.begin));
  return okStatus();
}

Status PreTokenizer::apply(std::vector<std::string> &pieces) const {
  std::vector<std::string> next;
  for (const Step &step : steps_) {
    next.clear();
    next.reserve(pieces.size() * 2);
    for (std::string &piece : pieces) {
      if (step.kind == Step::Kind::kSplit) {
        STRATA_RETURN_IF_ERROR(split(piece, step.regex.front(), step.behavior,
                                     step.invert, next));
        continue;
      }
      // ByteLevel.
      if (step.add_prefix_space && (piece.empty() || piece[0] != ' '))
        piece.insert(piece.begin(), ' ');
      size_t first = next.size();
      if (step.use_regex)
        STRATA_RETURN_IF_ERROR(split(piece, gpt2_.front(), Behavior::kIsolated,
                                     /*invert=*/false, next));
      else
        next.push_back(std::move(piece));
      for (size_t i = first; i < next.size(); ++i) {
        std::string mapped;
        mapped.reserve(next[i].size() * 2);
        appendByteLevelChars(next[i], mapped);
        next[i] = std::move(mapped);
      }
    }
    pieces.swap(next);
  }
  return okStatus();
}

} // namespace strata::runtime::tokenizer
