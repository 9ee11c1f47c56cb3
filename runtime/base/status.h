//===- status.h - Status and StatusOr for the strata runtime ---------------===//
//
// Part of strata. Every fallible runtime call returns a Status or a
// StatusOr<T>. A Status is a code plus a lower-case message with the values
// involved ("block table full: 4096 of 4096 pages in use"). The runtime never
// throws across its API and never aborts on user input.
//
// Ownership: Status and StatusOr are plain values; copying is cheap for OK
// (no allocation) and copies the message otherwise. Thread-safety: none
// needed (no shared state).
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_BASE_STATUS_H
#define STRATA_RUNTIME_BASE_STATUS_H

#include <cassert>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include <fmt/format.h>

namespace strata::runtime {

/// Error codes, a subset of the canonical (absl/IREE) codes.
enum class StatusCode : int {
  kOk = 0,
  kCancelled = 1,
  kUnknown = 2,
  kInvalidArgument = 3,
  kDeadlineExceeded = 4,
  kNotFound = 5,
  kAlreadyExists = 6,
  kPermissionDenied = 7,
  kResourceExhausted = 8,
  kFailedPrecondition = 9,
  kAborted = 10,
  kOutOfRange = 11,
  kUnimplemented = 12,
  kInternal = 13,
  kUnavailable = 14,
  kDataLoss = 15,
};

/// Upper-case canonical name of `code`, e.g. "INVALID_ARGUMENT".
std::string_view statusCodeName(StatusCode code);

/// A code and a message. The default-constructed Status is OK.
class [[nodiscard]] Status {
public:
  Status() = default;
  Status(StatusCode code, std::string message);

  bool ok() const { return state_ == nullptr; }
  StatusCode code() const { return state_ ? state_->code : StatusCode::kOk; }
  /// The message; empty for OK.
  std::string_view message() const {
    return state_ ? std::string_view(state_->message) : std::string_view();
  }
  /// "OK" or "<CODE>: <message>".
  std::string toString() const;

  /// Returns a copy with `context` prepended: "<context>: <message>". OK stays
  /// OK. Used to add the file or tensor name as an error travels up.
  Status withContext(std::string_view context) const;

  friend bool operator==(const Status &a, const Status &b) {
    return a.code() == b.code() && a.message() == b.message();
  }
  friend bool operator!=(const Status &a, const Status &b) { return !(a == b); }

private:
  struct State {
    StatusCode code;
    std::string message;
  };
  std::shared_ptr<const State> state_;
};

inline Status okStatus() { return Status(); }

/// Constructors for each code, taking a fmt format string.
#define STRATA_DEFINE_STATUS_FACTORY(Name, Code)                               \
  template <typename... Args>                                                  \
  Status Name(fmt::format_string<Args...> format, Args &&...args) {            \
    return Status(StatusCode::Code,                                            \
                  fmt::format(format, std::forward<Args>(args)...));           \
  }
STRATA_DEFINE_STATUS_FACTORY(invalidArgument, kInvalidArgument)
STRATA_DEFINE_STATUS_FACTORY(notFound, kNotFound)
STRATA_DEFINE_STATUS_FACTORY(alreadyExists, kAlreadyExists)
STRATA_DEFINE_STATUS_FACTORY(resourceExhausted, kResourceExhausted)
STRATA_DEFINE_STATUS_FACTORY(failedPrecondition, kFailedPrecondition)
STRATA_DEFINE_STATUS_FACTORY(outOfRange, kOutOfRange)
STRATA_DEFINE_STATUS_FACTORY(unimplemented, kUnimplemented)
STRATA_DEFINE_STATUS_FACTORY(internalError, kInternal)
STRATA_DEFINE_STATUS_FACTORY(unavailable, kUnavailable)
STRATA_DEFINE_STATUS_FACTORY(dataLoss, kDataLoss)
STRATA_DEFINE_STATUS_FACTORY(cancelled, kCancelled)
STRATA_DEFINE_STATUS_FACTORY(aborted, kAborted)
#undef STRATA_DEFINE_STATUS_FACTORY

/// Either a value of type T or a non-OK Status.
template <typename T> class [[nodiscard]] StatusOr {
public:
  /// Holds an error. `status` must not be OK (an OK status without a value is
  /// turned into an INTERNAL error rather than asserting).
  StatusOr(Status status) : status_(std::move(status)) {
    if (status_.ok())
      status_ = internalError("StatusOr constructed from an OK status");
  }
  StatusOr(T value) : value_(std::move(value)) {}

  bool ok() const { return status_.ok(); }
  const Status &status() const { return status_; }

  T &value() & {
    assert(ok() && "value() of an error StatusOr");
    return *value_;
  }
  const T &value() const & {
    assert(ok() && "value() of an error StatusOr");
    return *value_;
  }
  T &&value() && {
    assert(ok() && "value() of an error StatusOr");
    return std::move(*value_);
  }
  T *operator->() { return &value(); }
  const T *operator->() const { return &value(); }
  T &operator*() & { return value(); }
  const T &operator*() const & { return value(); }

private:
  Status status_;
  std::optional<T> value_;
};

} // namespace strata::runtime

/// Returns from the enclosing function if `expr` (a Status) is not OK.
#define STRATA_RETURN_IF_ERROR(expr)                                           \
  do {                                                                         \
    ::strata::runtime::Status _strata_status = (expr);                         \
    if (!_strata_status.ok())                                                  \
      return _strata_status;                                                   \
  } while (false)

#define STRATA_CONCAT_INNER(a, b) a##b
#define STRATA_CONCAT(a, b) STRATA_CONCAT_INNER(a, b)

/// `STRATA_ASSIGN_OR_RETURN(auto x, f())`: assigns the value of the StatusOr
/// `f()` to `x`, or returns its status from the enclosing function.
#define STRATA_ASSIGN_OR_RETURN(lhs, expr)                                     \
  STRATA_ASSIGN_OR_RETURN_IMPL(STRATA_CONCAT(_strata_statusor_, __LINE__),     \
                               lhs, expr)
#define STRATA_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr)                           \
  auto tmp = (expr);                                                           \
  if (!tmp.ok())                                                               \
    return tmp.status();                                                       \
  lhs = std::move(tmp).value()

#endif // STRATA_RUNTIME_BASE_STATUS_H
