//===- normalizer.cpp - tokenizer.json normalizers --------------------------===//

#include "runtime/tokenizer/normalizer.h"

#include <nlohmann/json.hpp>

#include "runtime/tokenizer/utf8.h"

namespace strata::runtime::tokenizer {

using json = nlohmann::json;

namespace {

Status addSteps(const json &node, std::vector<Normalizer::Step> &steps,
                int depth) {
  if (depth > 16)
    return invalidArgument("normalizer: sequences nested too deeply");
  if (!node.is_object() || !node.contains("type") || !node["type"].is_string())
    return invalidArgument("normalizer: expected an object with a type");
  const std::string &type = node["type"].get_ref<const std::string &>();
  if (type == "NFC") {
    steps.push_back(Normalizer::Step::kNfc);
    return okStatus();
  }
  if (type == "Sequence") {
    auto list = node.find("normalizers");
    if (list == node.end() || !list->is_array())
      return invalidArgument("normalizer: Sequence needs a normalizers array");
    for (const json &child : *list)
      STRATA_RETURN_IF_ERROR(addSteps(child, steps, depth + 1));
    return okStatus();
  }
  return unimplemented("normalizer: unsupported type {}", type);
}

} // namespace

StatusOr<Normalizer> Normalizer::fromJson(const json &normalizer) {
  Normalizer result;
  if (normalizer.is_null())
    return result;
  STRATA_RETURN_IF_ERROR(addSteps(normalizer, result.steps_, 0));
  return result;
}

StatusOr<std::string> Normalizer::apply(std::string_view text) const {
  std::string current(text);
  for (Step step : steps_) {
    switch (step) {
    case Step::kNfc: {
      STRATA_ASSIGN_OR_RETURN(current, normalizeNfc(current));
      break;
    }
    }
  }
  return current;
}

} // namespace strata::runtime::tokenizer
