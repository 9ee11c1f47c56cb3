//===- json_util.h - exception-free JSON parsing with duplicate detection --===//
//
// Part of strata. Internal to runtime/checkpoint. nlohmann::json is parsed
// with exceptions disabled; a parser callback records duplicate object keys
// (nlohmann silently keeps the last one), and on a syntax error a SAX pass
// recovers the byte position and reason. The Json* accessors check types
// before reading, so no nlohmann exception can escape. Every error names the
// source (file) and the dotted field path.
//
// Thread-safety: all functions are pure.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_CHECKPOINT_JSON_UTIL_H
#define STRATA_RUNTIME_CHECKPOINT_JSON_UTIL_H

#include "runtime/base/status.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace strata::runtime::json_util {

using Json = nlohmann::json;

/// Parses `text`. Errors (INVALID_ARGUMENT, prefixed with `source`): syntax
/// errors with byte offset, and any object holding the same key twice
/// ("duplicate key 'x' in object 'a.b'").
StatusOr<Json> parse(std::string_view text, std::string_view source);

/// A name for a JSON type in messages ("string", "integer", ...).
std::string typeName(const Json &value);

/// Joins a parent path and a key ("text_config" + "hidden_size").
std::string joinPath(std::string_view parent, std::string_view key);

/// Typed, checked readers of `object[key]`. `path` is the object's dotted
/// path for messages; `source` names the file. The require* forms fail on a
/// missing key; the optional* forms return std::nullopt then. Both fail on a
/// wrong type.
struct Reader {
  std::string source;

  StatusOr<int64_t> requireInt(const Json &object, std::string_view path,
                               std::string_view key) const;
  StatusOr<double> requireNumber(const Json &object, std::string_view path,
                                 std::string_view key) const;
  StatusOr<bool> requireBool(const Json &object, std::string_view path,
                             std::string_view key) const;
  StatusOr<std::string> requireString(const Json &object, std::string_view path,
                                      std::string_view key) const;
  StatusOr<std::vector<int64_t>> requireIntArray(const Json &object,
                                                 std::string_view path,
                                                 std::string_view key) const;
  StatusOr<std::vector<std::string>>
  requireStringArray(const Json &object, std::string_view path,
                     std::string_view key) const;
  StatusOr<const Json *> requireObject(const Json &object, std::string_view path,
                                       std::string_view key) const;

  /// True when `object` has `key` (and `object` is an object).
  static bool has(const Json &object, std::string_view key);

  Status missing(std::string_view path, std::string_view key) const;
  Status wrongType(std::string_view path, std::string_view key,
                   std::string_view expected, const Json &found) const;
};

} // namespace strata::runtime::json_util

#endif // STRATA_RUNTIME_CHECKPOINT_JSON_UTIL_H
