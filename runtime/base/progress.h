//===- progress.h - progress of long work on stderr -------------*- C++ -*-===//
//
// Part of strata. One reporter for every tool's long work: compiling a model,
// writing a checkpoint, loading weights, a benchmark matrix. On a terminal it
// keeps one line up to date with '\r'; elsewhere (a pipe, a log file) it
// writes plain lines, at most one every few seconds; quiet, nothing.
//
//   strata-write-checkpoint: writing tensors: 1.2 GB of 24.0 GB (5%),
//                            350 MB/s, ETA 65 s   (one line)
//
// Nothing is shown before the tool has worked for `delay_seconds` (2 s by
// default), so quick runs print what they always printed. A ticker thread
// redraws the line (and writes due log lines), so workers only count. The
// environment variable STRATA_PROGRESS overrides the choice: "off" (nothing,
// as --quiet; the lit suite sets it), "line" or "log" (that style whatever
// the stream is, without the delay), "now" (the style the stream calls for,
// without the delay); the last three are for tests.
//
// Thread-safety: advance() may be called from any thread; the other members
// from the thread that owns the reporter.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_BASE_PROGRESS_H
#define STRATA_RUNTIME_BASE_PROGRESS_H

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

namespace strata::runtime {

/// How progress reaches the stream.
enum class ProgressStyle {
  kOff,  // nothing
  kLine, // one line rewritten with '\r' (a terminal)
  kLog,  // plain lines (a pipe or a file)
};

struct ProgressOptions {
  /// Prefix of every line, usually the tool's name. Default: none.
  std::string tool;
  /// Where to write. Default (nullptr): stderr.
  std::FILE *stream = nullptr;
  /// --quiet: nothing at all. Default false.
  bool quiet = false;
  /// Seconds of work before the first report. Default (negative): 2.
  double delay_seconds = -1;
};

/// Units of a task's counter.
enum class ProgressUnit { kBytes, kItems };

/// Reports the progress of one task at a time.
class ProgressReporter {
public:
  explicit ProgressReporter(ProgressOptions options = {});
  ~ProgressReporter();
  ProgressReporter(const ProgressReporter &) = delete;
  ProgressReporter &operator=(const ProgressReporter &) = delete;

  /// The style in use (kOff when quiet, STRATA_PROGRESS=off, or no stream).
  ProgressStyle style() const { return style_; }

  /// Starts task `what` of `total` units (0: unknown total; the line shows
  /// the count and the rate but no percentage or ETA). Ends a running task.
  void begin(std::string what, uint64_t total,
             ProgressUnit unit = ProgressUnit::kBytes);

  /// Adds `units` done to the running task.
  void advance(uint64_t units);

  /// A step of a task without a counter, e.g. a compiler phase: "phase
  /// (detail), 12.3 s" with the time since the reporter was made.
  void note(std::string_view text);

  /// Ends the running task; its last line says what was done and how fast
  /// (when anything was shown for it).
  void finish();

  /// Seconds since the reporter was made.
  double elapsedSeconds() const;

private:
  using Clock = std::chrono::steady_clock;
  /// The text of the running task now ("what: 1.2 GB of 24.0 GB ...").
  std::string render(Clock::time_point now, bool final) const;
  /// Shows the running task if it is due; `final` for its last line.
  void report(Clock::time_point now, bool final);
  void startTicker();
  void tick();
  void finishLocked();

  ProgressStyle style_ = ProgressStyle::kOff;
  std::FILE *stream_ = nullptr;
  std::string tool_;
  double delay_seconds_ = 2;
  Clock::time_point created_;

  // Guarded by mutex_ (the ticker reads them).
  std::mutex mutex_;
  std::condition_variable wake_;
  std::thread ticker_;
  bool stop_ = false;
  std::string what_;
  bool counted_ = false; // a begin() task (else a note)
  uint64_t total_ = 0;
  ProgressUnit unit_ = ProgressUnit::kBytes;
  bool active_ = false;
  bool shown_ = false;     // anything of this task written
  bool line_open_ = false; // a '\r' line without its '\n' yet
  Clock::time_point started_, last_report_;

  std::atomic<uint64_t> done_{0};
};

/// "1.5 GB", "350 MB", "12 kB", "17 B" (decimal units).
std::string humanBytes(double bytes);

/// "45 s", "3m05s", "2h10m".
std::string humanDuration(double seconds);

} // namespace strata::runtime

#endif // STRATA_RUNTIME_BASE_PROGRESS_H
