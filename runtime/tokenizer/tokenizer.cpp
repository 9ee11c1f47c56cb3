//===- tokenizer.cpp - Hugging Face tokenizer.json tokenizer ----------------===//

#include "runtime/tokenizer/tokenizer.h"

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "runtime/tokenizer/bpe_model.h"
#include "runtime/tokenizer/byte_level.h"
#include "runtime/tokenizer/normalizer.h"
#include "runtime/tokenizer/pre_tokenizer.h"
#include "runtime/tokenizer/utf8.h"

namespace strata::runtime::tokenizer {

using json = nlohmann::json;

Tokenizer::Tokenizer() = default;
Tokenizer::~Tokenizer() = default;

namespace {

bool boolField(const json &node, const char *key) {
  auto it = node.find(key);
  return it != node.end() && it->is_boolean() && it->get<bool>();
}

StatusOr<std::vector<AddedToken>> parseAddedTokens(const json &root) {
  std::vector<AddedToken> tokens;
  auto list = root.find("added_tokens");
  if (list == root.end() || list->is_null())
    return tokens;
  if (!list->is_array())
    return invalidArgument("added_tokens: expected an array");
  for (const json &entry : *list) {
    if (!entry.is_object() || !entry.contains("id") ||
        !entry["id"].is_number_integer() || !entry.contains("content") ||
        !entry["content"].is_string())
      return invalidArgument(
          "added_tokens: each entry needs an integer id and a content string, "
          "got {}",
          entry.dump());
    AddedToken token;
    int64_t id = entry["id"].get<int64_t>();
    if (id < 0 || id > INT32_MAX)
      return invalidArgument("added_tokens: id {} is out of range", id);
    token.id = static_cast<int32_t>(id);
    token.content = entry["content"].get<std::string>();
    token.special = boolField(entry, "special");
    token.single_word = boolField(entry, "single_word");
    token.lstrip = boolField(entry, "lstrip");
    token.rstrip = boolField(entry, "rstrip");
    token.normalized = boolField(entry, "normalized");
    tokens.push_back(std::move(token));
  }
  return tokens;
}

} // namespace

StatusOr<std::unique_ptr<Tokenizer>>
Tokenizer::fromFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return notFound("cannot open tokenizer file {}", path);
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad())
    return dataLoss("cannot read tokenizer file {}", path);
  StatusOr<std::unique_ptr<Tokenizer>> tokenizer = fromJson(buffer.str());
  if (!tokenizer.ok())
    return tokenizer.status().withContext(path);
  return tokenizer;
}

StatusOr<std::unique_ptr<Tokenizer>>
Tokenizer::fromJson(std::string_view json_text) {
  json root = json::parse(json_text.begin(), json_text.end(),
                          /*cb=*/nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded())
    return invalidArgument("tokenizer.json is not valid json");
  if (!root.is_object())
    return invalidArgument("tokenizer.json: expected a top-level object");

  std::unique_ptr<Tokenizer> tokenizer(new Tokenizer());
  STRATA_ASSIGN_OR_RETURN(Normalizer normalizer,
                          Normalizer::fromJson(root.value("normalizer", json())));
  tokenizer->normalizer_ = std::make_unique<Normalizer>(std::move(normalizer));
  STRATA_ASSIGN_OR_RETURN(
      PreTokenizer pre_tokenizer,
      PreTokenizer::fromJson(root.value("pre_tokenizer", json())));
  tokenizer->pre_tokenizer_ =
      std::make_unique<PreTokenizer>(std::move(pre_tokenizer));
  auto model = root.find("model");
  if (model == root.end())
    return invalidArgument("tokenizer.json: missing model");
  STRATA_ASSIGN_OR_RETURN(tokenizer->model_, BpeModel::fromJson(*model));

  auto decoder = root.find("decoder");
  if (decoder != root.end() && !decoder->is_null()) {
    bool byte_level = decoder->is_object() && decoder->contains("type") &&
                      (*decoder)["type"].is_string() &&
                      (*decoder)["type"] == "ByteLevel";
    if (!byte_level)
      return unimplemented("decoder: unsupported decoder {}, expected ByteLevel",
                           decoder->is_object() && decoder->contains("type")
                               ? (*decoder)["type"].dump()
                               : decoder->dump());
    tokenizer->byte_level_decoder_ = true;
  }

  STRATA_ASSIGN_OR_RETURN(std::vector<AddedToken> added, parseAddedTokens(root));
  STRATA_ASSIGN_OR_RETURN(
      tokenizer->added_,
      AddedVocabulary::create(std::move(added), *tokenizer->normalizer_));
  return tokenizer;
}

Status Tokenizer::encodePlain(std::string_view text,
                              std::vector<int32_t> &out_ids) const {
  std::vector<std::string> words{std::string(text)};
  STRATA_RETURN_IF_ERROR(pre_tokenizer_->apply(words));
  for (const std::string &word : words)
    model_->encodeWord(word, out_ids);
  return okStatus();
}

StatusOr<std::vector<int32_t>> Tokenizer::encode(std::string_view input) const {
  std::string text = toValidUtf8Lossy(input);
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 4);
  // 1. Added tokens that match the raw text.
  for (const TextPiece &raw : added_.split(text, /*normalized_pass=*/false)) {
    if (raw.token_id >= 0) {
      ids.push_back(raw.token_id);
      continue;
    }
    // 2. Normalize the rest, then match the normalized added tokens.
    STRATA_ASSIGN_OR_RETURN(
        std::string normalized,
        normalizer_->apply(std::string_view(text).substr(
            raw.begin, raw.end - raw.begin)));
    for (const TextPiece &piece :
         added_.split(normalized, /*normalized_pass=*/true)) {
      if (piece.token_id >= 0) {
        ids.push_back(piece.token_id);
        continue;
      }
      // 3. Pre-tokenize and run BPE on each word.
      STRATA_RETURN_IF_ERROR(encodePlain(
          std::string_view(normalized).substr(piece.begin,
                                              piece.end - piece.begin),
          ids));
    }
  }
  return ids;
}

bool Tokenizer::appendTokenBytes(int32_t id, const DecodeOptions &options,
                                 bool first, std::string &out) const {
  const std::string *token = nullptr;
  if (const AddedToken *added = added_.findById(id))
    token = &added->decoded_content;
  else
    token = model_->idToToken(id);
  if (!token)
    return false;
  if (options.skip_special_tokens && added_.isSpecialContent(*token))
    return false;
  if (byte_level_decoder_) {
    out += byteLevelTokenToBytes(*token);
  } else {
    // No decoder: Hugging Face joins the tokens with spaces.
    if (!first)
      out += ' ';
    out += *token;
  }
  return true;
}

StatusOr<std::string> Tokenizer::decode(const std::vector<int32_t> &ids,
                                        const DecodeOptions &options) const {
  std::string bytes;
  bool first = true;
  for (int32_t id : ids)
    if (appendTokenBytes(id, options, first, bytes))
      first = false;
  return toValidUtf8Lossy(bytes);
}

std::optional<int32_t> Tokenizer::tokenToId(std::string_view token) const {
  if (std::optional<int32_t> id = added_.findByContent(token))
    return id;
  return model_->tokenToId(token);
}

std::optional<std::string> Tokenizer::idToToken(int32_t id) const {
  if (const AddedToken *added = added_.findById(id))
    return added->content;
  if (const std::string *token = model_->idToToken(id))
    return *token;
  return std::nullopt;
}

bool Tokenizer::isSpecialId(int32_t id) const {
  const AddedToken *added = added_.findById(id);
  return added && added->special;
}

size_t Tokenizer::idLimit() const {
  size_t limit = model_->idLimit();
  for (const AddedToken &token : added_.tokens())
    limit = std::max(limit, static_cast<size_t>(token.id) + 1);
  return limit;
}

size_t Tokenizer::mergeCount() const { return model_->mergeCount(); }

StatusOr<std::string> Tokenizer::normalize(std::string_view text) const {
  return normalizer_->apply(toValidUtf8Lossy(text));
}

StatusOr<std::vector<std::string>>
Tokenizer::preTokenize(std::string_view text) const {
  std::vector<std::string> words{toValidUtf8Lossy(text)};
  STRATA_RETURN_IF_ERROR(pre_tokenizer_->apply(words));
  return words;
}

} // namespace strata::runtime::tokenizer
