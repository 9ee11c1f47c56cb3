//===- tokenizer_tool.cpp - the strata-tokenize command line ----------------===//

#include "runtime/tokenizer/tokenizer_tool.h"

#include <chrono>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

#include <nlohmann/json.hpp>

#include "runtime/base/command_line.h"

#include "runtime/tokenizer/tokenizer.h"

namespace strata::runtime::tokenizer {

using json = nlohmann::json;

namespace {

constexpr const char *kUsage =
    "usage: strata-tokenize encode <tokenizer.json> [text]\n"
    "       strata-tokenize decode <tokenizer.json> [--skip-special-tokens] "
    "id...\n"
    "       strata-tokenize check-goldens <tokenizer.json> <goldens.jsonl> "
    "[--gsm8k <test.jsonl>]\n"
    "       strata-tokenize bench <tokenizer.json> <gsm8k test.jsonl>\n";

constexpr const char *kDescription =
    "Encodes text (or stdin), decodes ids, checks golden encodings and\n"
    "decodings, or times encoding, with the runtime tokenizer.\n"
    "`strata-tokenize <command> --help` lists a command's arguments.\n"
    "docs/Tokenizer.md.";

uint64_t fnv1a64(std::string_view text) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (char c : text) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ull;
  }
  return h;
}

std::string joinIds(const std::vector<int32_t> &ids) {
  std::string s;
  for (size_t i = 0; i < ids.size(); ++i)
    s += (i ? " " : "") + std::to_string(ids[i]);
  return s;
}

StatusOr<std::vector<std::string>> readLines(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return notFound("cannot open {}", path);
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(in, line))
    if (!line.empty())
      lines.push_back(line);
  return lines;
}

/// question/answer pairs of a GSM8K jsonl file.
StatusOr<std::vector<std::pair<std::string, std::string>>>
readGsm8k(const std::string &path) {
  STRATA_ASSIGN_OR_RETURN(std::vector<std::string> lines, readLines(path));
  std::vector<std::pair<std::string, std::string>> rows;
  for (size_t i = 0; i < lines.size(); ++i) {
    json row = json::parse(lines[i], nullptr, false);
    if (row.is_discarded() || !row.is_object() || !row.contains("question") ||
        !row["question"].is_string() || !row.contains("answer") ||
        !row["answer"].is_string())
      return invalidArgument("{}: line {} is not a gsm8k row", path, i + 1);
    rows.emplace_back(row["question"].get<std::string>(),
                      row["answer"].get<std::string>());
  }
  return rows;
}

StatusOr<std::vector<int32_t>> idsOf(const json &value) {
  if (!value.is_array())
    return invalidArgument("ids must be an array");
  std::vector<int32_t> ids;
  for (const json &v : value) {
    if (!v.is_number_integer())
      return invalidArgument("ids must be integers");
    ids.push_back(v.get<int32_t>());
  }
  return ids;
}

StatusOr<std::string> fromHex(const std::string &hex) {
  if (hex.size() % 2)
    return invalidArgument("odd-length hex string");
  std::string bytes;
  for (size_t i = 0; i < hex.size(); i += 2) {
    int value = 0;
    for (size_t k = 0; k < 2; ++k) {
      char c = hex[i + k];
      int d = c >= '0' && c <= '9'   ? c - '0'
              : c >= 'a' && c <= 'f' ? c - 'a' + 10
              : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                     : -1;
      if (d < 0)
        return invalidArgument("bad hex digit '{}'", c);
      value = value * 16 + d;
    }
    bytes += static_cast<char>(value);
  }
  return bytes;
}

/// Counts of one kind of golden case.
struct Tally {
  size_t cases = 0;
  size_t encode_ok = 0;
  size_t decode_ok = 0;
};

class GoldenChecker {
public:
  GoldenChecker(const Tokenizer &tokenizer, std::ostream &err)
      : tokenizer_(tokenizer), err_(err) {}

  Status check(const std::vector<std::string> &lines,
               const std::vector<std::pair<std::string, std::string>> *gsm8k,
               std::ostream &out);

private:
  void mismatch(size_t line, const std::string &what) {
    if (++mismatches_ <= 10)
      err_ << "mismatch at golden line " << line << ": " << what << "\n";
  }
  Status checkEncode(size_t line, const std::string &text,
                     const std::vector<int32_t> &expected, Tally &tally,
                     std::vector<int32_t> *out_ids);
  bool decodeMatches(size_t line, const std::vector<int32_t> &ids,
                     bool skip_special, const std::string &expected);

  const Tokenizer &tokenizer_;
  std::ostream &err_;
  size_t mismatches_ = 0;
};

Status GoldenChecker::checkEncode(size_t line, const std::string &text,
                                  const std::vector<int32_t> &expected,
                                  Tally &tally, std::vector<int32_t> *out_ids) {
  STRATA_ASSIGN_OR_RETURN(std::vector<int32_t> ids, tokenizer_.encode(text));
  if (ids == expected)
    ++tally.encode_ok;
  else
    mismatch(line, fmt::format("encode {}\n  expected {}\n  got      {}",
                               json(text).dump(), joinIds(expected),
                               joinIds(ids)));
  *out_ids = std::move(ids);
  return okStatus();
}

bool GoldenChecker::decodeMatches(size_t line, const std::vector<int32_t> &ids,
                                  bool skip_special,
                                  const std::string &expected) {
  DecodeOptions options;
  options.skip_special_tokens = skip_special;
  StatusOr<std::string> decoded = tokenizer_.decode(ids, options);
  if (decoded.ok() && *decoded == expected)
    return true;
  mismatch(line, fmt::format("decode{} [{}]\n  expected {}\n  got      {}",
                             skip_special ? " (skip special)" : "",
                             joinIds(ids), json(expected).dump(),
                             decoded.ok() ? json(*decoded).dump()
                                          : decoded.status().toString()));
  return false;
}

Status GoldenChecker::check(
    const std::vector<std::string> &lines,
    const std::vector<std::pair<std::string, std::string>> *gsm8k,
    std::ostream &out) {
  Tally gsm, text, bytes, decode;
  size_t skipped = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    size_t line_no = i + 1;
    json c = json::parse(lines[i], nullptr, false);
    if (c.is_discarded() || !c.is_object() || !c.contains("kind") ||
        !c["kind"].is_string() || !c.contains("ids"))
      return invalidArgument("golden line {} is not a golden case", line_no);
    const std::string kind = c["kind"].get<std::string>();
    STRATA_ASSIGN_OR_RETURN(std::vector<int32_t> expected, idsOf(c["ids"]));
    auto field = [&](const char *key) -> std::string {
      return c.contains(key) && c[key].is_string() ? c[key].get<std::string>()
                                                   : std::string();
    };
    std::vector<int32_t> ids;
    if (kind == "gsm8k") {
      if (!gsm8k) {
        ++skipped;
        continue;
      }
      size_t index = c.contains("index") && c["index"].is_number_unsigned()
                         ? c["index"].get<size_t>()
                         : static_cast<size_t>(-1);
      if (index >= gsm8k->size())
        return invalidArgument("golden line {}: gsm8k index {} out of range",
                               line_no, index);
      const std::string &source = field("field") == "answer"
                                      ? (*gsm8k)[index].second
                                      : (*gsm8k)[index].first;
      if (fmt::format("{:016x}", fnv1a64(source)) != field("fnv1a64"))
        return failedPrecondition(
            "golden line {}: gsm8k row {} differs from the text the goldens "
            "were made from",
            line_no, index);
      ++gsm.cases;
      STRATA_RETURN_IF_ERROR(checkEncode(line_no, source, expected, gsm, &ids));
      // Round trip: decode(ids) hashes like Hugging Face's decode.
      StatusOr<std::string> decoded = tokenizer_.decode(expected);
      if (!decoded.ok())
        return decoded.status();
      if (fmt::format("{:016x}", fnv1a64(*decoded)) == field("decoded_fnv1a64"))
        ++gsm.decode_ok;
      else
        mismatch(line_no, fmt::format("decode of gsm8k row {} {} differs",
                                      index, field("field")));
    } else if (kind == "text") {
      ++text.cases;
      STRATA_RETURN_IF_ERROR(
          checkEncode(line_no, field("text"), expected, text, &ids));
      if (decodeMatches(line_no, expected, false, field("decoded")) &&
          decodeMatches(line_no, expected, true, field("decoded_skip")))
        ++text.decode_ok;
    } else if (kind == "bytes") {
      ++bytes.cases;
      STRATA_ASSIGN_OR_RETURN(std::string raw, fromHex(field("hex")));
      STRATA_RETURN_IF_ERROR(checkEncode(line_no, raw, expected, bytes, &ids));
      if (decodeMatches(line_no, expected, false, field("decoded")))
        ++bytes.decode_ok;
    } else if (kind == "decode") {
      ++decode.cases;
      if (decodeMatches(line_no, expected, false, field("decoded")) &&
          decodeMatches(line_no, expected, true, field("decoded_skip")))
        ++decode.decode_ok;
    } else {
      return invalidArgument("golden line {}: unknown kind \"{}\"", line_no,
                             kind);
    }
  }
  auto report = [&](const char *name, const Tally &t, bool encodes) {
    out << name << ": ";
    if (encodes)
      out << t.encode_ok << " of " << t.cases << " encodings match, ";
    out << t.decode_ok << " of " << t.cases << " decodings match\n";
  };
  report("gsm8k", gsm, true);
  report("text", text, true);
  report("bytes", bytes, true);
  report("decode", decode, false);
  if (skipped)
    out << "gsm8k: " << skipped << " cases skipped (no --gsm8k)\n";
  size_t total = gsm.cases + text.cases + bytes.cases + decode.cases;
  if (mismatches_)
    return failedPrecondition("{} mismatches in {} golden cases", mismatches_,
                              total);
  out << "all " << total << " golden cases match\n";
  return okStatus();
}

int fail(std::ostream &err, const Status &status) {
  err << "error: " << status.message() << "\n";
  return 1;
}

int runEncode(const Tokenizer &tokenizer, const std::vector<std::string> &args,
              std::istream &in, std::ostream &out, std::ostream &err) {
  std::string text;
  if (!args.empty()) {
    text = args[0];
  } else {
    text.assign(std::istreambuf_iterator<char>(in),
                std::istreambuf_iterator<char>());
  }
  StatusOr<std::vector<int32_t>> ids = tokenizer.encode(text);
  if (!ids.ok())
    return fail(err, ids.status());
  out << joinIds(*ids) << "\n";
  return 0;
}

int runDecode(const Tokenizer &tokenizer, const std::vector<std::string> &args,
              bool skip_special_tokens, std::ostream &out, std::ostream &err) {
  DecodeOptions options;
  options.skip_special_tokens = skip_special_tokens;
  std::vector<int32_t> ids;
  for (size_t i = 0; i < args.size(); ++i) {
    char *end = nullptr;
    long value = std::strtol(args[i].c_str(), &end, 10);
    if (args[i].empty() || *end != '\0' || value < 0 || value > INT32_MAX)
      return fail(err, invalidArgument("expected a token id, got \"{}\"",
                                       args[i]));
    ids.push_back(static_cast<int32_t>(value));
  }
  StatusOr<std::string> text = tokenizer.decode(ids, options);
  if (!text.ok())
    return fail(err, text.status());
  out << *text << "\n";
  return 0;
}

int runBench(const std::string &tokenizer_path, const std::string &gsm8k_path,
             std::ostream &out, std::ostream &err) {
  using clock = std::chrono::steady_clock;
  auto seconds = [](clock::duration d) {
    return std::chrono::duration<double>(d).count();
  };
  auto t0 = clock::now();
  StatusOr<std::unique_ptr<Tokenizer>> tokenizer =
      Tokenizer::fromFile(tokenizer_path);
  if (!tokenizer.ok())
    return fail(err, tokenizer.status());
  auto t1 = clock::now();
  StatusOr<std::vector<std::pair<std::string, std::string>>> rows =
      readGsm8k(gsm8k_path);
  if (!rows.ok())
    return fail(err, rows.status());
  size_t tokens = 0;
  auto t2 = clock::now();
  for (const auto &row : *rows) {
    StatusOr<std::vector<int32_t>> ids = (*tokenizer)->encode(row.first);
    if (!ids.ok())
      return fail(err, ids.status());
    tokens += ids->size();
  }
  auto t3 = clock::now();
  for (const auto &row : *rows) {
    StatusOr<std::vector<int32_t>> ids = (*tokenizer)->encode(row.first);
    if (!ids.ok())
      return fail(err, ids.status());
  }
  auto t4 = clock::now();
  out << fmt::format("load {:.3f} s; {} questions, {} tokens: cold {:.3f} s, "
                     "warm {:.3f} s\n",
                     seconds(t1 - t0), rows->size(), tokens, seconds(t3 - t2),
                     seconds(t4 - t3));
  return 0;
}

} // namespace

int runTokenizerTool(const std::vector<std::string> &args, std::istream &in,
                     std::ostream &out, std::ostream &err) {
  if (args.empty()) {
    err << kUsage;
    return 2;
  }
  CommandLine cl("strata-tokenize", kUsage, kDescription);
  CLI::App &app = cl.app();
  std::string tokenizer_path, goldens, gsm8k_path;
  std::vector<std::string> values;
  bool skip_special = false;
  auto tokenizerArg = [&](CLI::App *command) {
    command->add_option("tokenizer", tokenizer_path, "tokenizer.json")
        ->required();
  };
  CLI::App *encode =
      app.add_subcommand("encode", "print the ids of TEXT (default: stdin)");
  tokenizerArg(encode);
  encode->add_option("text", values, "the text")->expected(0, 1);
  CLI::App *decode = app.add_subcommand("decode", "print the text of ids");
  tokenizerArg(decode);
  decode->add_flag("--skip-special-tokens", skip_special,
                   "leave special tokens out");
  decode->add_option("ids", values, "token ids")->type_name("ID");
  CLI::App *check = app.add_subcommand(
      "check-goldens", "compare every golden case of a goldens file");
  tokenizerArg(check);
  check->add_option("goldens", goldens, "goldens.jsonl")->required();
  check
      ->add_option("--gsm8k", gsm8k_path,
                   "GSM8K test JSONL the gsm8k goldens were made from")
      ->type_name("FILE");
  CLI::App *bench = app.add_subcommand(
      "bench", "time loading and encoding every GSM8K question");
  tokenizerArg(bench);
  bench->add_option("gsm8k", gsm8k_path, "GSM8K test JSONL")->required();
  if (std::optional<int> code = cl.parse(args, out, err))
    return *code;
  if (app.get_subcommands().empty()) {
    err << kUsage;
    return 2;
  }
  if (bench->parsed())
    return runBench(tokenizer_path, gsm8k_path, out, err);
  StatusOr<std::unique_ptr<Tokenizer>> tokenizer =
      Tokenizer::fromFile(tokenizer_path);
  if (!tokenizer.ok())
    return fail(err, tokenizer.status());
  if (encode->parsed())
    return runEncode(**tokenizer, values, in, out, err);
  if (decode->parsed())
    return runDecode(**tokenizer, values, skip_special, out, err);

  // check-goldens
  StatusOr<std::vector<std::string>> lines = readLines(goldens);
  if (!lines.ok())
    return fail(err, lines.status());
  std::vector<std::pair<std::string, std::string>> rows;
  if (!gsm8k_path.empty()) {
    StatusOr<std::vector<std::pair<std::string, std::string>>> read =
        readGsm8k(gsm8k_path);
    if (!read.ok())
      return fail(err, read.status());
    rows = std::move(*read);
  }
  GoldenChecker checker(**tokenizer, err);
  Status status =
      checker.check(*lines, gsm8k_path.empty() ? nullptr : &rows, out);
  if (!status.ok())
    return fail(err, status);
  return 0;
}

} // namespace strata::runtime::tokenizer
