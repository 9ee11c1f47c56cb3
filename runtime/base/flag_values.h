//===- flag_values.h - values of command-line flags -------------*- C++ -*-===//
//
// Part of strata. The value parsers the runtime tools (strata-run,
// strata-batch, strata-bench) share, so that they accept and reject the
// same spellings with the same messages. Errors are INVALID_ARGUMENT naming
// the flag: "--chunk: 'x' is not an integer".
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_BASE_FLAG_VALUES_H
#define STRATA_RUNTIME_BASE_FLAG_VALUES_H

#include <cstdint>
#include <string_view>
#include <vector>

#include "runtime/base/status.h"

namespace strata::runtime {

/// The whole of `text` as a decimal int64 (no sign other than '-', no
/// surrounding spaces).
StatusOr<int64_t> parseIntFlag(std::string_view flag, std::string_view text);

/// "on" as true, "off" as false; anything else: "--flag must be on or off,
/// not 'text'".
StatusOr<bool> parseOnOffFlag(std::string_view flag, std::string_view text);

/// Comma-separated token ids ("1,2,3"), each in [0, INT32_MAX]. With
/// `trim_spaces`, spaces around each id and a trailing '\r' are ignored
/// (for ids read from files).
StatusOr<std::vector<int32_t>> parseTokenIdsFlag(std::string_view flag,
                                                 std::string_view text,
                                                 bool trim_spaces = false);

} // namespace strata::runtime

#endif // STRATA_RUNTIME_BASE_FLAG_VALUES_H
