//===- json_util.cpp - exception-free JSON parsing with duplicate detection ===//
//
// Part of strata. See json_util.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/checkpoint/json_util.h"

#include <set>

namespace strata::runtime::json_util {
namespace {

// SAX handler that accepts everything and records the first parse error; used
// only to explain a failed parse (position and reason) without exceptions.
struct ErrorRecorder {
  std::string message;
  bool null() { return true; }
  bool boolean(bool) { return true; }
  bool number_integer(Json::number_integer_t) { return true; }
  bool number_unsigned(Json::number_unsigned_t) { return true; }
  bool number_float(Json::number_float_t, const std::string &) { return true; }
  bool string(std::string &) { return true; }
  bool binary(Json::binary_t &) { return true; }
  bool start_object(std::size_t) { return true; }
  bool key(std::string &) { return true; }
  bool end_object() { return true; }
  bool start_array(std::size_t) { return true; }
  bool end_array() { return true; }
  bool parse_error(std::size_t position, const std::string &,
                   const nlohmann::detail::exception &error) {
    message = fmt::format("invalid JSON at byte {}: {}", position, error.what());
    return false;
  }
};

} // namespace

StatusOr<Json> parse(std::string_view text, std::string_view source) {
  try {
    // Stack of key sets, one per open object, plus the path of each object.
    std::vector<std::set<std::string>> keys;
    std::vector<std::string> paths;
    std::string pendingKey;
    std::optional<std::string> duplicate;
    Json::parser_callback_t callback = [&](int, Json::parse_event_t event,
                                           Json &parsed) {
      switch (event) {
      case Json::parse_event_t::object_start:
        paths.push_back(paths.empty() ? std::string()
                                      : joinPath(paths.back(), pendingKey));
        keys.emplace_back();
        break;
      case Json::parse_event_t::object_end:
        if (!keys.empty()) {
          keys.pop_back();
          paths.pop_back();
        }
        break;
      case Json::parse_event_t::key:
        if (parsed.is_string()) {
          pendingKey = parsed.get_ref<const std::string &>();
          if (!keys.empty() && !keys.back().insert(pendingKey).second &&
              !duplicate) {
            duplicate = paths.back().empty()
                            ? fmt::format("duplicate key '{}' at top level",
                                          pendingKey)
                            : fmt::format("duplicate key '{}' in object '{}'",
                                          pendingKey, paths.back());
          }
        }
        break;
      default:
        break;
      }
      return true;
    };
    Json result = Json::parse(text.begin(), text.end(), callback,
                              /*allow_exceptions=*/false);
    if (result.is_discarded()) {
      ErrorRecorder recorder;
      Json::sax_parse(text.begin(), text.end(), &recorder);
      if (recorder.message.empty())
        recorder.message = "invalid JSON";
      return invalidArgument("{}: {}", source, recorder.message);
    }
    if (duplicate)
      return invalidArgument("{}: {}", source, *duplicate);
    return result;
  } catch (const std::exception &error) {
    // Not expected with allow_exceptions=false; kept so nothing escapes.
    return invalidArgument("{}: invalid JSON: {}", source, error.what());
  }
}

std::string typeName(const Json &value) {
  switch (value.type()) {
  case Json::value_t::null:
    return "null";
  case Json::value_t::object:
    return "object";
  case Json::value_t::array:
    return "array";
  case Json::value_t::string:
    return "string";
  case Json::value_t::boolean:
    return "boolean";
  case Json::value_t::number_integer:
  case Json::value_t::number_unsigned:
    return "integer";
  case Json::value_t::number_float:
    return "number";
  default:
    return "other";
  }
}

std::string joinPath(std::string_view parent, std::string_view key) {
  if (parent.empty())
    return std::string(key);
  return fmt::format("{}.{}", parent, key);
}

bool Reader::has(const Json &object, std::string_view key) {
  return object.is_object() && object.find(key) != object.end();
}

Status Reader::missing(std::string_view path, std::string_view key) const {
  return invalidArgument("{}: required field '{}' is missing", source,
                         joinPath(path, key));
}

Status Reader::wrongType(std::string_view path, std::string_view key,
                         std::string_view expected, const Json &found) const {
  return invalidArgument("{}: field '{}' must be {}, found {}", source,
                         joinPath(path, key), expected, typeName(found));
}

static const Json *lookup(const Json &object, std::string_view key) {
  if (!object.is_object())
    return nullptr;
  auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

StatusOr<int64_t> Reader::requireInt(const Json &object, std::string_view path,
                                     std::string_view key) const {
  const Json *value = lookup(object, key);
  if (!value)
    return missing(path, key);
  if (value->is_number_unsigned()) {
    uint64_t v = value->get<uint64_t>();
    if (v > static_cast<uint64_t>(INT64_MAX))
      return invalidArgument("{}: field '{}' is out of range: {}", source,
                             joinPath(path, key), v);
    return static_cast<int64_t>(v);
  }
  if (value->is_number_integer())
    return value->get<int64_t>();
  return wrongType(path, key, "an integer", *value);
}

StatusOr<double> Reader::requireNumber(const Json &object, std::string_view path,
                                       std::string_view key) const {
  const Json *value = lookup(object, key);
  if (!value)
    return missing(path, key);
  if (!value->is_number())
    return wrongType(path, key, "a number", *value);
  return value->get<double>();
}

StatusOr<bool> Reader::requireBool(const Json &object, std::string_view path,
                                   std::string_view key) const {
  const Json *value = lookup(object, key);
  if (!value)
    return missing(path, key);
  if (!value->is_boolean())
    return wrongType(path, key, "a boolean", *value);
  return value->get<bool>();
}

StatusOr<std::string> Reader::requireString(const Json &object,
                                            std::string_view path,
                                            std::string_view key) const {
  const Json *value = lookup(object, key);
  if (!value)
    return missing(path, key);
  if (!value->is_string())
    return wrongType(path, key, "a string", *value);
  return value->get<std::string>();
}

StatusOr<std::vector<int64_t>>
Reader::requireIntArray(const Json &object, std::string_view path,
                        std::string_view key) const {
  const Json *value = lookup(object, key);
  if (!value)
    return missing(path, key);
  if (!value->is_array())
    return wrongType(path, key, "an array of integers", *value);
  std::vector<int64_t> result;
  for (std::size_t i = 0; i < value->size(); ++i) {
    const Json &item = (*value)[i];
    if (item.is_number_unsigned() &&
        item.get<uint64_t>() <= static_cast<uint64_t>(INT64_MAX))
      result.push_back(static_cast<int64_t>(item.get<uint64_t>()));
    else if (item.is_number_integer() && !item.is_number_unsigned())
      result.push_back(item.get<int64_t>());
    else
      return invalidArgument("{}: field '{}[{}]' must be an integer, found {}",
                             source, joinPath(path, key), i, typeName(item));
  }
  return result;
}

StatusOr<std::vector<std::string>>
Reader::requireStringArray(const Json &object, std::string_view path,
                           std::string_view key) const {
  const Json *value = lookup(object, key);
  if (!value)
    return missing(path, key);
  if (!value->is_array())
    return wrongType(path, key, "an array of strings", *value);
  std::vector<std::string> result;
  for (std::size_t i = 0; i < value->size(); ++i) {
    const Json &item = (*value)[i];
    if (!item.is_string())
      return invalidArgument("{}: field '{}[{}]' must be a string, found {}",
                             source, joinPath(path, key), i, typeName(item));
    result.push_back(item.get<std::string>());
  }
  return result;
}

StatusOr<const Json *> Reader::requireObject(const Json &object,
                                             std::string_view path,
                                             std::string_view key) const {
  const Json *value = lookup(object, key);
  if (!value)
    return missing(path, key);
  if (!value->is_object())
    return wrongType(path, key, "an object", *value);
  return value;
}

} // namespace strata::runtime::json_util
