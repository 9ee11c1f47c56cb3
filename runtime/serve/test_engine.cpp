//===- test_engine.cpp - a deterministic Engine for serve tests -------------===//
//
// Part of strata. TEST ONLY; see test_engine.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/serve/test_engine.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "runtime/tokenizer/byte_level.h"

namespace strata::runtime::serve::testing {

TestEngine::TestEngine(TestEngineOptions options) : options_(options) {
  if (options_.tokens_per_step < 1)
    options_.tokens_per_step = 1;
  thread_ = std::thread([this] { loop(); });
}

TestEngine::~TestEngine() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    shutdown_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

StatusOr<RequestId> TestEngine::submit(GenerationRequest request,
                                       EngineCallback callback) {
  if (request.prompt_ids.empty())
    return invalidArgument("empty prompt");
  auto holds = [&](int32_t id) {
    return std::find(request.prompt_ids.begin(), request.prompt_ids.end(),
                     id) != request.prompt_ids.end();
  };
  if (options_.reject_token >= 0 && holds(options_.reject_token))
    return invalidArgument("prompt holds rejected token {}",
                           options_.reject_token);
  std::lock_guard<std::mutex> lock(mutex_);
  if (shutdown_)
    return unavailable("engine shut down");
  if (options_.max_waiting && waiting_.size() >= options_.max_waiting)
    return resourceExhausted("engine queue full: {} of {} waiting",
                             waiting_.size(), options_.max_waiting);
  RequestId id = next_id_++;
  stats_.prefix_cache_queried_tokens += request.prompt_ids.size();
  Active &a = waiting_[id];
  a.request = std::move(request);
  a.callback = std::move(callback);
  a.submitted = std::chrono::steady_clock::now();
  cv_.notify_all();
  return id;
}

void TestEngine::cancel(RequestId id) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto *queue : {&waiting_, &running_}) {
    auto it = queue->find(id);
    if (it != queue->end() && !it->second.cancelled) {
      it->second.cancelled = true;
      cancelled_.insert(id);
    }
  }
  cv_.notify_all();
}

EngineStats TestEngine::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  EngineStats s = stats_;
  s.queued_requests = waiting_.size();
  s.running_requests = running_.size();
  s.kv_blocks_total = 64;
  s.kv_blocks_in_use = std::min<uint64_t>(64, running_.size());
  s.step_time = step_time_.snapshot();
  return s;
}

Status TestEngine::health() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return health_;
}

size_t TestEngine::cancelledCount() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return cancelled_.size();
}

bool TestEngine::waitForCancel(RequestId id,
                               std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lock(mutex_);
  return cv_.wait_for(lock, timeout, [&] { return cancelled_.count(id) > 0; });
}

bool TestEngine::waitIdle(std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lock(mutex_);
  return cv_.wait_for(lock, timeout,
                      [&] { return waiting_.empty() && running_.empty(); });
}

RequestId TestEngine::lastId() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return next_id_ - 1;
}

void TestEngine::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  auto next = std::chrono::steady_clock::now();
  for (;;) {
    next += options_.step_delay;
    cv_.wait_until(lock, next, [&] { return shutdown_; });
    auto start = std::chrono::steady_clock::now();
    // Admit waiting requests.
    while (!waiting_.empty() && (!options_.max_running ||
                                 running_.size() < options_.max_running)) {
      Active &a = waiting_.begin()->second;
      a.queue_seconds = std::chrono::duration<double>(
                            std::chrono::steady_clock::now() - a.submitted)
                            .count();
      running_.insert(waiting_.extract(waiting_.begin()));
    }
    // One step: collect events under the lock, deliver them after.
    std::vector<std::pair<EngineCallback, EngineEvent>> out;
    auto finishAll = [&](std::map<RequestId, Active> &queue, bool all) {
      for (auto it = queue.begin(); it != queue.end();) {
        if (!all && !it->second.cancelled) {
          ++it;
          continue;
        }
        EngineEvent e;
        e.finished = true;
        e.finish_reason = FinishReason::kCancelled;
        e.prompt_tokens = int32_t(it->second.request.prompt_ids.size());
        e.completion_tokens = it->second.generated;
        out.emplace_back(std::move(it->second.callback), std::move(e));
        it = queue.erase(it);
      }
    };
    finishAll(waiting_, shutdown_);
    finishAll(running_, shutdown_);
    for (auto it = running_.begin(); it != running_.end();) {
      Active &a = it->second;
      const SamplingParams &s = a.request.sampling;
      const std::vector<int32_t> &prompt = a.request.prompt_ids;
      size_t from = 0;
      for (size_t i = 0; i + 1 < prompt.size(); ++i)
        if (std::find(options_.echo_after.begin(), options_.echo_after.end(),
                      prompt[i]) != options_.echo_after.end())
          from = i + 1;
      EngineEvent e;
      e.queue_seconds = a.queue_seconds;
      if (s.prompt_logprobs >= 0 && a.generated == 0) {
        // Synthetic: prompt token i has logprob -i/4 (mod 4) and rank
        // i mod 4 + 1; the top list is ids 0, 1, ... each 1 lower.
        for (size_t i = 1; i < prompt.size(); ++i) {
          TokenLogprob lp;
          lp.logprob = -0.25 * double(i % 4);
          lp.rank = int64_t(i % 4) + 1;
          for (int32_t j = 0; j < s.prompt_logprobs; ++j)
            lp.top.emplace_back(j, j == 0 ? 0.0 : -double(j));
          e.prompt_logprobs.push_back(std::move(lp));
        }
      }
      for (int k = 0; k < options_.tokens_per_step; ++k) {
        int32_t token = prompt[from + a.generated % (prompt.size() - from)];
        ++a.generated;
        if (std::find(s.stop_token_ids.begin(), s.stop_token_ids.end(),
                      token) != s.stop_token_ids.end()) {
          e.finished = true;
          e.finish_reason = FinishReason::kStop;
          break;
        }
        e.token_ids.push_back(token);
        if (s.logprobs >= 0) {
          // Synthetic: token i has logprob -i/8 (mod 8); the top list is
          // the token and the next ids, each 1 lower.
          TokenLogprob lp;
          int32_t k = (a.generated - 1) % 8;
          lp.logprob = k == 0 ? 0.0 : -0.125 * k;
          for (int32_t j = 0; j < s.logprobs; ++j)
            lp.top.emplace_back((token + j) % 256, lp.logprob - j);
          e.logprobs.push_back(std::move(lp));
        }
        if (a.generated >= s.max_tokens) {
          e.finished = true;
          e.finish_reason = FinishReason::kLength;
          break;
        }
      }
      if (!e.finished && options_.error_token >= 0 && a.generated >= 1 &&
          std::find(prompt.begin(), prompt.end(), options_.error_token) !=
              prompt.end()) {
        e.finished = true;
        e.finish_reason = FinishReason::kError;
        e.error = internalError("test engine failure after {} tokens",
                                a.generated);
        health_ = e.error;
      }
      if (options_.tokens_per_step > 1) {
        size_t drafts = options_.tokens_per_step - 1;
        stats_.mtp_draft_tokens += drafts;
        stats_.mtp_accepted_tokens += drafts;
        stats_.mtp_draft_tokens_by_position.resize(drafts);
        stats_.mtp_accepted_tokens_by_position.resize(drafts);
        for (size_t p = 0; p < drafts; ++p) {
          ++stats_.mtp_draft_tokens_by_position[p];
          ++stats_.mtp_accepted_tokens_by_position[p];
        }
      }
      if (e.finished) {
        e.prompt_tokens = int32_t(prompt.size());
        e.completion_tokens = a.generated;
        out.emplace_back(std::move(a.callback), std::move(e));
        it = running_.erase(it);
      } else {
        out.emplace_back(a.callback, std::move(e));
        ++it;
      }
    }
    if (!out.empty())
      step_time_.observe(std::chrono::duration<double>(
                             std::chrono::steady_clock::now() - start)
                             .count());
    bool done = shutdown_;
    lock.unlock();
    for (auto &[callback, event] : out)
      callback(std::move(event));
    lock.lock();
    cv_.notify_all();
    if (done)
      return;
  }
}

std::string testTokenizerJson() {
  using nlohmann::json;
  json vocab = json::object();
  for (int b = 0; b < 256; ++b) {
    std::string spelled;
    tokenizer::appendByteLevelChars(std::string(1, char(b)), spelled);
    vocab[spelled] = b;
  }
  json added = json::array();
  int id = kTestEndOfText;
  for (const char *special :
       {"<|endoftext|>", "[gMASK]", "<sop>", "<|system|>", "<|user|>",
        "<|assistant|>", "<|observation|>", "<think>", "</think>"})
    added.push_back({{"id", id++}, {"content", special}, {"special", true},
                     {"single_word", false}, {"lstrip", false},
                     {"rstrip", false}, {"normalized", false}});
  json j = {{"version", "1.0"},
            {"added_tokens", added},
            {"normalizer", nullptr},
            {"pre_tokenizer",
             {{"type", "ByteLevel"}, {"add_prefix_space", false},
              {"use_regex", false}}},
            {"post_processor", nullptr},
            {"decoder", {{"type", "ByteLevel"}}},
            {"model",
             {{"type", "BPE"}, {"vocab", vocab}, {"merges", json::array()}}}};
  return j.dump();
}

} // namespace strata::runtime::serve::testing
