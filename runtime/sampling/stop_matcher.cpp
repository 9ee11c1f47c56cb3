//===- stop_matcher.cpp - stop strings, stop tokens and max_tokens ---------===//
//
// Part of strata.
//
//===----------------------------------------------------------------------===//

#include "runtime/sampling/stop_matcher.h"

#include <algorithm>

namespace strata::runtime {

std::string_view finishReasonName(FinishReason reason) {
  switch (reason) {
  case FinishReason::kNone:
    return "";
  case FinishReason::kStop:
    return "stop";
  case FinishReason::kLength:
    return "length";
  }
  return "";
}

StatusOr<StopMatcher> StopMatcher::create(const SamplingParams &params) {
  STRATA_RETURN_IF_ERROR(validateSamplingParams(params));
  StopMatcher m;
  m.stop_ = params.stop;
  m.stop_token_ids_ = params.stop_token_ids;
  m.max_tokens_ = params.max_tokens;
  return m;
}

bool StopMatcher::isStopToken(int32_t token) const {
  return std::find(stop_token_ids_.begin(), stop_token_ids_.end(), token) !=
         stop_token_ids_.end();
}

bool StopMatcher::endsGeneration(int32_t token) const {
  return isStopToken(token) ||
         (max_tokens_ > 0 &&
          static_cast<int64_t>(token_count_) + 1 >= max_tokens_);
}

bool StopMatcher::matchText(std::string_view delta, StopOutput &out) {
  held_ += delta;
  // held_ had no complete match before, so any match overlaps the delta.
  size_t best = std::string::npos;
  for (size_t i = 0; i < stop_.size(); ++i) {
    size_t pos = held_.find(stop_[i]);
    if (pos < best) {
      best = pos;
      out.stop_string_index = static_cast<int32_t>(i);
    }
  }
  if (best != std::string::npos) {
    out.text.append(held_, 0, best);
    held_.clear();
    return true;
  }
  // Hold the longest suffix that is a proper prefix of some stop string.
  size_t hold = 0;
  for (const std::string &s : stop_) {
    size_t n = std::min(s.size() - 1, held_.size());
    for (size_t len = n; len > hold; --len) {
      if (held_.compare(held_.size() - len, len, s, 0, len) == 0) {
        hold = len;
        break;
      }
    }
  }
  out.text.append(held_, 0, held_.size() - hold);
  held_.erase(0, held_.size() - hold);
  return false;
}

void StopMatcher::finishWith(FinishReason reason, StopOutput &out) {
  out.text += held_;
  held_.clear();
  finish_reason_ = reason;
  out.finish_reason = reason;
}

StatusOr<StopOutput> StopMatcher::push(int32_t token, std::string_view delta) {
  if (finished())
    return failedPrecondition("token {} pushed after the generation finished "
                              "({})",
                              token, finishReasonName(finish_reason_));
  ++token_count_;
  StopOutput out;
  bool stop_token = isStopToken(token);
  if (matchText(delta, out)) {
    finish_reason_ = out.finish_reason = FinishReason::kStop;
    return out;
  }
  if (stop_token) {
    out.stop_token = token;
    finishWith(FinishReason::kStop, out);
  } else if (max_tokens_ > 0 &&
             static_cast<int64_t>(token_count_) >= max_tokens_) {
    finishWith(FinishReason::kLength, out);
  }
  return out;
}

StatusOr<StopOutput> StopMatcher::finish(std::string_view tail,
                                         FinishReason reason) {
  if (finished())
    return failedPrecondition("generation already finished ({})",
                              finishReasonName(finish_reason_));
  if (reason == FinishReason::kNone)
    return invalidArgument("finish needs a finish reason");
  StopOutput out;
  if (matchText(tail, out)) {
    finish_reason_ = out.finish_reason = FinishReason::kStop;
    return out;
  }
  finishWith(reason, out);
  return out;
}

} // namespace strata::runtime
