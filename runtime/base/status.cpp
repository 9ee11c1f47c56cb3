//===- status.cpp - Status and StatusOr for the strata runtime -------------===//
//
// Part of strata.
//
//===----------------------------------------------------------------------===//

#include "runtime/base/status.h"

namespace strata::runtime {

std::string_view statusCodeName(StatusCode code) {
  switch (code) {
  case StatusCode::kOk: return "OK";
  case StatusCode::kCancelled: return "CANCELLED";
  case StatusCode::kUnknown: return "UNKNOWN";
  case StatusCode::kInvalidArgument: return "INVALID_ARGUMENT";
  case StatusCode::kDeadlineExceeded: return "DEADLINE_EXCEEDED";
  case StatusCode::kNotFound: return "NOT_FOUND";
  case StatusCode::kAlreadyExists: return "ALREADY_EXISTS";
  case StatusCode::kPermissionDenied: return "PERMISSION_DENIED";
  case StatusCode::kResourceExhausted: return "RESOURCE_EXHAUSTED";
  case StatusCode::kFailedPrecondition: return "FAILED_PRECONDITION";
  case StatusCode::kAborted: return "ABORTED";
  case StatusCode::kOutOfRange: return "OUT_OF_RANGE";
  case StatusCode::kUnimplemented: return "UNIMPLEMENTED";
  case StatusCode::kInternal: return "INTERNAL";
  case StatusCode::kUnavailable: return "UNAVAILABLE";
  case StatusCode::kDataLoss: return "DATA_LOSS";
  }
  return "UNKNOWN";
}

Status::Status(StatusCode code, std::string message) {
  if (code == StatusCode::kOk)
    return; // OK carries no message.
  state_ = std::make_shared<const State>(State{code, std::move(message)});
}

std::string Status::toString() const {
  if (ok())
    return "OK";
  return fmt::format("{}: {}", statusCodeName(code()), message());
}

Status Status::withContext(std::string_view context) const {
  if (ok())
    return *this;
  return Status(code(), fmt::format("{}: {}", context, message()));
}

} // namespace strata::runtime
