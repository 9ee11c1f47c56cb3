//===- progress.cpp - progress of long work on stderr ---------------------===//
//
// Part of strata. See progress.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/base/progress.h"

#include <cmath>
#include <cstdlib>
#include <cstring>

#include <unistd.h>

#include <fmt/format.h>

namespace strata::runtime {

namespace {

/// Redraw interval of a terminal line and spacing of log lines.
constexpr double kLineSeconds = 0.2;
constexpr double kLogSeconds = 5.0;

double secondsBetween(std::chrono::steady_clock::time_point a,
                      std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

} // namespace

std::string humanBytes(double bytes) {
  if (bytes >= 1e9)
    return fmt::format("{:.1f} GB", bytes / 1e9);
  if (bytes >= 1e6)
    return fmt::format("{:.0f} MB", bytes / 1e6);
  if (bytes >= 1e3)
    return fmt::format("{:.0f} kB", bytes / 1e3);
  return fmt::format("{:.0f} B", bytes);
}

std::string humanDuration(double seconds) {
  if (!(seconds >= 0) || !std::isfinite(seconds))
    return "?";
  auto s = static_cast<uint64_t>(std::llround(seconds));
  if (s < 100)
    return fmt::format("{} s", s);
  if (s < 3600)
    return fmt::format("{}m{:02}s", s / 60, s % 60);
  return fmt::format("{}h{:02}m", s / 3600, (s % 3600) / 60);
}

ProgressReporter::ProgressReporter(ProgressOptions options)
    : stream_(options.stream ? options.stream : stderr),
      tool_(std::move(options.tool)),
      delay_seconds_(options.delay_seconds < 0 ? 2 : options.delay_seconds),
      created_(Clock::now()) {
  const char *env = std::getenv("STRATA_PROGRESS");
  std::string_view forced = env ? env : "";
  if (options.quiet || forced == "off")
    style_ = ProgressStyle::kOff;
  else if (forced == "line" || forced == "log") {
    style_ = forced == "line" ? ProgressStyle::kLine : ProgressStyle::kLog;
    delay_seconds_ = 0;
  } else {
    style_ =
        isatty(fileno(stream_)) ? ProgressStyle::kLine : ProgressStyle::kLog;
    if (forced == "now")
      delay_seconds_ = 0;
  }
}

ProgressReporter::~ProgressReporter() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    finishLocked();
    stop_ = true;
  }
  wake_.notify_all();
  if (ticker_.joinable())
    ticker_.join();
}

double ProgressReporter::elapsedSeconds() const {
  return secondsBetween(created_, Clock::now());
}

void ProgressReporter::begin(std::string what, uint64_t total,
                             ProgressUnit unit) {
  if (style_ == ProgressStyle::kOff)
    return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    finishLocked();
    what_ = std::move(what);
    counted_ = true;
    total_ = total;
    unit_ = unit;
    done_ = 0;
    active_ = true;
    shown_ = false;
    started_ = Clock::now();
    report(started_, /*final=*/false);
  }
  startTicker();
}

void ProgressReporter::advance(uint64_t units) {
  done_.fetch_add(units, std::memory_order_relaxed);
}

void ProgressReporter::note(std::string_view text) {
  if (style_ == ProgressStyle::kOff)
    return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    finishLocked();
    what_ = std::string(text);
    counted_ = false;
    total_ = 0;
    done_ = 0;
    active_ = true;
    shown_ = false;
    started_ = Clock::now();
    report(started_, /*final=*/false);
  }
  startTicker();
}

void ProgressReporter::finish() {
  std::lock_guard<std::mutex> lock(mutex_);
  finishLocked();
}

void ProgressReporter::finishLocked() {
  if (!active_)
    return;
  // A counted task that was shown gets its summary line; a note that was
  // shown only closes its terminal line.
  if (shown_ && counted_)
    report(Clock::now(), /*final=*/true);
  if (line_open_) {
    std::fputs("\n", stream_);
    std::fflush(stream_);
    line_open_ = false;
  }
  active_ = false;
}

std::string ProgressReporter::render(Clock::time_point now, bool final) const {
  std::string prefix = tool_.empty() ? "" : tool_ + ": ";
  if (!counted_)
    return fmt::format("{}{} ({:.1f} s)", prefix, what_,
                       secondsBetween(created_, now));
  double seconds = secondsBetween(started_, now);
  double done = static_cast<double>(done_.load(std::memory_order_relaxed));
  auto amount = [&](double units) {
    return unit_ == ProgressUnit::kBytes ? humanBytes(units)
                                         : fmt::format("{:.0f}", units);
  };
  double rate = seconds > 0 ? done / seconds : 0;
  std::string rate_text = unit_ == ProgressUnit::kBytes
                              ? humanBytes(rate) + "/s"
                              : fmt::format("{:.1f}/s", rate);
  if (final)
    return fmt::format("{}{}: {} in {}, {}", prefix, what_, amount(done),
                       humanDuration(seconds), rate_text);
  if (total_ == 0)
    return fmt::format("{}{}: {}, {}", prefix, what_, amount(done), rate_text);
  double fraction = std::min(1.0, done / static_cast<double>(total_));
  std::string eta =
      rate > 0 ? humanDuration((static_cast<double>(total_) - done) / rate)
               : "?";
  return fmt::format("{}{}: {} of {} ({:.0f}%), {}, ETA {}", prefix, what_,
                     amount(done), amount(static_cast<double>(total_)),
                     100 * fraction, rate_text, eta);
}

void ProgressReporter::report(Clock::time_point now, bool final) {
  if (!active_ || style_ == ProgressStyle::kOff)
    return;
  if (!final) {
    if (secondsBetween(created_, now) < delay_seconds_)
      return;
    // Log lines: a note once, a counter every kLogSeconds.
    if (style_ == ProgressStyle::kLog && shown_ &&
        (!counted_ || secondsBetween(last_report_, now) < kLogSeconds))
      return;
  }
  std::string text = render(now, final);
  if (style_ == ProgressStyle::kLine) {
    // "\r", the text, and erase what a longer previous line left.
    std::fprintf(stream_, "\r%s\033[K", text.c_str());
    line_open_ = true;
  } else {
    std::fprintf(stream_, "%s\n", text.c_str());
  }
  std::fflush(stream_);
  shown_ = true;
  last_report_ = now;
}

void ProgressReporter::startTicker() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (ticker_.joinable() || stop_)
    return;
  ticker_ = std::thread([this] { tick(); });
}

void ProgressReporter::tick() {
  const auto interval = std::chrono::duration<double>(
      style_ == ProgressStyle::kLine ? kLineSeconds : kLineSeconds * 2);
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stop_) {
    wake_.wait_for(lock, interval);
    if (stop_)
      break;
    report(Clock::now(), /*final=*/false);
  }
}

} // namespace strata::runtime
