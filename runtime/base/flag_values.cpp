//===- flag_values.cpp - values of command-line flags ---------------------===//
//
// Part of strata.
//
//===----------------------------------------------------------------------===//

#include "runtime/base/flag_values.h"

#include <charconv>
#include <climits>

namespace strata::runtime {

StatusOr<int64_t> parseIntFlag(std::string_view flag, std::string_view text) {
  int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(),
                                   value);
  if (ec != std::errc() || end != text.data() + text.size())
    return invalidArgument("{}: '{}' is not an integer", flag, text);
  return value;
}

StatusOr<bool> parseOnOffFlag(std::string_view flag, std::string_view text) {
  if (text != "on" && text != "off")
    return invalidArgument("{} must be on or off, not '{}'", flag, text);
  return text == "on";
}

StatusOr<std::vector<int32_t>> parseTokenIdsFlag(std::string_view flag,
                                                 std::string_view text,
                                                 bool trim_spaces) {
  std::vector<int32_t> ids;
  size_t start = 0;
  for (;;) {
    size_t comma = text.find(',', start);
    std::string_view item = text.substr(
        start, comma == std::string_view::npos ? std::string_view::npos
                                               : comma - start);
    if (trim_spaces) {
      while (!item.empty() && item.front() == ' ')
        item.remove_prefix(1);
      while (!item.empty() && (item.back() == ' ' || item.back() == '\r'))
        item.remove_suffix(1);
    }
    STRATA_ASSIGN_OR_RETURN(int64_t id, parseIntFlag(flag, item));
    if (id < 0 || id > INT32_MAX)
      return invalidArgument("{}: {} is not a token id", flag, id);
    ids.push_back(static_cast<int32_t>(id));
    if (comma == std::string_view::npos)
      return ids;
    start = comma + 1;
  }
}

} // namespace strata::runtime
