//===- normalizer.h - tokenizer.json normalizers ----------------------------===//
//
// Part of strata. The "normalizer" of a tokenizer.json: null (identity), NFC,
// or a Sequence of supported normalizers applied in order. Other normalizer
// types are rejected at load time with UNIMPLEMENTED. NFC uses utf8proc.
//
// Thread-safety: apply is const and thread-safe.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_TOKENIZER_NORMALIZER_H
#define STRATA_RUNTIME_TOKENIZER_NORMALIZER_H

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "runtime/base/status.h"

namespace strata::runtime::tokenizer {

class Normalizer {
public:
  /// Builds the normalizer from the "normalizer" value (null allowed).
  static StatusOr<Normalizer> fromJson(const nlohmann::json &normalizer);

  /// True when apply() is the identity.
  bool isIdentity() const { return steps_.empty(); }

  /// Normalizes valid UTF-8 `text`.
  StatusOr<std::string> apply(std::string_view text) const;

  /// One normalization step, in application order.
  enum class Step { kNfc };
  const std::vector<Step> &steps() const { return steps_; }

private:
  std::vector<Step> steps_;
};

} // namespace strata::runtime::tokenizer

#endif // STRATA_RUNTIME_TOKENIZER_NORMALIZER_H
