//===- engine.cpp - the model engine behind strata-serve --------------------===//
//
// Part of strata. The interface's small helpers: finish reason names and the
// step-time histogram.
//
//===----------------------------------------------------------------------===//

#include "runtime/serve/engine.h"

#include <algorithm>

namespace strata::runtime::serve {

std::string_view finishReasonName(FinishReason reason) {
  switch (reason) {
  case FinishReason::kStop:
    return "stop";
  case FinishReason::kLength:
    return "length";
  case FinishReason::kCancelled:
    return "cancelled";
  case FinishReason::kError:
    return "error";
  case FinishReason::kToolCalls:
    return "tool_calls";
  }
  return "error";
}

Histogram::Histogram()
    : Histogram({0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,
                 2.5, 5, 10}) {}

std::vector<double> iterationTokenBuckets() {
  return {1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384};
}

Histogram::Histogram(std::vector<double> upper_bounds) {
  std::sort(upper_bounds.begin(), upper_bounds.end());
  data_.bucket_counts.assign(upper_bounds.size(), 0);
  data_.upper_bounds = std::move(upper_bounds);
}

void Histogram::observe(double seconds) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = std::lower_bound(data_.upper_bounds.begin(),
                             data_.upper_bounds.end(), seconds);
  if (it != data_.upper_bounds.end())
    ++data_.bucket_counts[it - data_.upper_bounds.begin()];
  ++data_.count;
  data_.sum += seconds;
}

HistogramSnapshot Histogram::snapshot() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return data_;
}

} // namespace strata::runtime::serve
