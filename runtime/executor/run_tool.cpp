//===- run_tool.cpp - the strata-run command line -------------------------===//
//
// Part of strata.
//
//===----------------------------------------------------------------------===//

#include "runtime/executor/run_tool.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <tuple>

#include <fmt/format.h>

#include "runtime/base/command_line.h"
#include "runtime/base/flag_values.h"
#include "runtime/base/progress.h"
#include "runtime/executor/model_executor.h"
#include "runtime/executor/npy.h"
#include "runtime/executor/rank_flags.h"
#include "runtime/tokenizer/tokenizer.h"

namespace strata::runtime {

namespace {

using artifact::StepKind;
using Clock = std::chrono::steady_clock;

constexpr const char *kUsage =
    "usage: strata-run --artifact A --checkpoint DIR|procedural:CONFIG.json\n"
    "                  (--prompt-ids IDS | --prompt-ids-file F |\n"
    "                   --prompt TEXT --tokenizer FILE)...\n"
    "                  [--max-tokens N] [--chunk N] [--dump-logits F.npy]\n"
    "                  [--dump-ids F.npy] [--dump-mtp-logits F.npy] "
    "[--ignore-eos]\n"
    "                  [--target cpu|sm_90|sm_90a|gfx942|gfx950]\n"
    "                  [--kv-pages N] [--first-page P] [--decode-graphs on|off]\n"
    "                  [--tensor-parallel-size T] [--expert-parallel-size E]\n"
    "                  [--rank R --world-size N --store file:DIR|tcp:HOST:PORT]\n"
    "                  [--collective-timeout-ms MS] [--collectives LIB]\n"
    "                  [--quiet]\n";

constexpr const char *kDescription =
    "Each --prompt-ids (comma-separated token ids), line of a\n"
    "--prompt-ids-file or --prompt is one request; all requests are prefilled\n"
    "in chunks of --chunk tokens (0: whole prompts) and decoded greedily\n"
    "together until an end-of-sequence id of the model or --max-tokens (dumps\n"
    "imply --ignore-eos). docs/Run.md. An artifact compiled for T x E ranks\n"
    "runs one process per rank: without --rank strata-run starts them itself;\n"
    "with --rank (or STRATA_RANK, STRATA_WORLD_SIZE, STRATA_STORE) it is that\n"
    "rank. Rank 0 prints and dumps. docs/Parallel.md.";

struct RunOptions {
  std::string artifact, checkpoint, tokenizer;
  std::vector<std::vector<int32_t>> prompt_ids;
  std::vector<std::string> prompts;
  int64_t max_tokens = 16;
  int64_t chunk = 0;
  std::string dump_logits, dump_ids, dump_mtp;
  bool ignore_eos = false;
  std::string target = "cpu";
  // Pages in each paged pool (0: just enough) and the first page id used,
  // so that tests can place a request's pages anywhere in a large pool.
  uint64_t kv_pages = 0, first_page = 0;
  // Decode steps replayed from captured graphs (ExecutorOptions).
  bool decode_graphs = true;
  // No progress lines (weight loading).
  bool quiet = false;
  // Tensor/expert parallelism (rank_flags.h).
  RankRunOptions ranks;
  // The command line, which the launcher gives every rank.
  std::vector<std::string> args;
};

/// The flags as typed; numbers stay text so that parseIntFlag reports bad
/// values the way every runtime tool does.
struct RunFlags {
  std::vector<std::string> prompt_ids, prompt_files, prompts;
  std::string max_tokens = "16", chunk = "0", kv_pages = "0", first_page = "0";
  std::string decode_graphs = "on";
  RankFlags ranks;
};

void declareFlags(CommandLine &cl, RunOptions &o, RunFlags &f) {
  CLI::App &app = cl.app();
  app.add_option("--artifact", o.artifact, "the .strata artifact")
      ->type_name("A");
  app.add_option("--checkpoint", o.checkpoint,
                 "checkpoint folder, or procedural:CONFIG.json")
      ->type_name("DIR");
  cl.addRepeated("--prompt-ids", f.prompt_ids,
                 "one request: comma-separated token ids (repeatable)")
      ->type_name("IDS");
  cl.addRepeated("--prompt-ids-file", f.prompt_files,
                 "one request per non-blank line of token ids")
      ->type_name("F");
  cl.addRepeated("--prompt", f.prompts,
                 "one request: text, encoded with --tokenizer")
      ->type_name("TEXT");
  app.add_option("--tokenizer", o.tokenizer,
                 "tokenizer.json (for --prompt; prints the generated text)")
      ->type_name("FILE");
  app.add_option("--max-tokens", f.max_tokens,
                 "tokens to generate per request (default 16)")
      ->type_name("N");
  app.add_option("--chunk", f.chunk,
                 "prefill chunk in tokens (default 0: whole prompts)")
      ->type_name("N");
  app.add_option("--dump-logits", o.dump_logits,
                 "write every prompt and generated row's logits (.npy)")
      ->type_name("F.npy");
  app.add_option("--dump-ids", o.dump_ids, "write the generated ids (.npy)")
      ->type_name("F.npy");
  app.add_option("--dump-mtp-logits", o.dump_mtp,
                 "write the MTP draft's logits over the prompts (.npy)")
      ->type_name("F.npy");
  app.add_flag("--ignore-eos", o.ignore_eos,
               "decode --max-tokens tokens whatever the model ends with");
  app.add_option("--target", o.target, "cpu (default), sm_90, sm_90a, gfx942 or gfx950")
      ->type_name("T");
  app.add_option("--kv-pages", f.kv_pages,
                 "pages in each paged pool (default 0: just enough)")
      ->type_name("N");
  app.add_option("--first-page", f.first_page,
                 "first page id the requests use (default 0)")
      ->type_name("P");
  app.add_option("--decode-graphs", f.decode_graphs,
                 "replay decode steps from captured graphs (default on)")
      ->type_name("on|off");
  declareRankFlags(app, o.ranks, f.ranks);
  app.add_flag("-q,--quiet", o.quiet, "no progress lines on stderr");
}

StatusOr<RunOptions> finishOptions(const CommandLine &cl, RunOptions options,
                                   const RunFlags &f) {
  // --prompt-ids and --prompt-ids-file lines, in command-line order.
  for (const auto &[flag, text] :
       cl.valuesInOrder({"--prompt-ids", "--prompt-ids-file"})) {
    if (flag == "--prompt-ids") {
      STRATA_ASSIGN_OR_RETURN(std::vector<int32_t> ids,
                              parseTokenIdsFlag("--prompt-ids", text));
      options.prompt_ids.push_back(std::move(ids));
      continue;
    }
    std::ifstream file(text);
    if (!file)
      return notFound("--prompt-ids-file: cannot open '{}'", text);
    std::string line;
    while (std::getline(file, line)) {
      if (line.find_first_not_of(" \t\r") == std::string::npos)
        continue;
      STRATA_ASSIGN_OR_RETURN(std::vector<int32_t> ids,
                              parseTokenIdsFlag("--prompt-ids", line));
      options.prompt_ids.push_back(std::move(ids));
    }
  }
  options.prompts = f.prompts;
  STRATA_ASSIGN_OR_RETURN(options.max_tokens,
                          parseIntFlag("--max-tokens", f.max_tokens));
  STRATA_ASSIGN_OR_RETURN(options.chunk, parseIntFlag("--chunk", f.chunk));
  for (const auto &[flag, text, field] :
       {std::tuple{"--kv-pages", &f.kv_pages, &options.kv_pages},
        std::tuple{"--first-page", &f.first_page, &options.first_page}}) {
    STRATA_ASSIGN_OR_RETURN(int64_t n, parseIntFlag(flag, *text));
    if (n < 0)
      return invalidArgument("{} must be >= 0", flag);
    *field = static_cast<uint64_t>(n);
  }
  STRATA_ASSIGN_OR_RETURN(options.decode_graphs,
                          parseOnOffFlag("--decode-graphs", f.decode_graphs));
  STRATA_RETURN_IF_ERROR(finishRankFlags(options.ranks, f.ranks));
  if (options.artifact.empty() || options.checkpoint.empty())
    return invalidArgument("--artifact and --checkpoint are required");
  if (options.prompt_ids.empty() && options.prompts.empty())
    return invalidArgument("no prompt: give --prompt-ids or --prompt");
  if (!options.prompts.empty() && options.tokenizer.empty())
    return invalidArgument("--prompt needs --tokenizer");
  if (options.max_tokens < 0 || options.chunk < 0)
    return invalidArgument("--max-tokens and --chunk must be >= 0");
  for (const auto &ids : options.prompt_ids)
    if (ids.empty())
      return invalidArgument("--prompt-ids: empty prompt");
  // Dumps have one row per step for every request.
  if (!options.dump_logits.empty() || !options.dump_ids.empty() ||
      !options.dump_mtp.empty())
    options.ignore_eos = true;
  return options;
}

/// Greedy choice: the largest logit, ties to the lowest id.
int32_t argmax(const float *row, size_t vocab) {
  return static_cast<int32_t>(std::max_element(row, row + vocab) - row);
}

double seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

Status run(const RunOptions &options, std::ostream &out) {
  std::unique_ptr<tokenizer::Tokenizer> tok;
  std::vector<std::vector<int32_t>> prompts = options.prompt_ids;
  if (!options.tokenizer.empty()) {
    STRATA_ASSIGN_OR_RETURN(tok,
                            tokenizer::Tokenizer::fromFile(options.tokenizer));
    for (const std::string &text : options.prompts) {
      STRATA_ASSIGN_OR_RETURN(std::vector<int32_t> ids, tok->encode(text));
      if (ids.empty())
        return invalidArgument("--prompt '{}' encodes to no tokens", text);
      prompts.push_back(std::move(ids));
    }
  }

  Clock::time_point load_start = Clock::now();
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<Artifact> artifact,
                          Artifact::fromFile(options.artifact));
  // A sharded artifact without --rank: start every rank and wait for them.
  STRATA_ASSIGN_OR_RETURN(RankRole role,
                          resolveRankRole(options.ranks, *artifact,
                                          options.args));
  if (role.launcher)
    return role.launched;
  const std::optional<RankGroupsOptions> &ranks = role.ranks;
  // Every rank runs every step (the collectives need all); rank 0 dumps.
  bool writes_output = !ranks || ranks->rank == 0;
  // Pages: each request gets a disjoint run of pages for its whole length.
  uint64_t page = artifact->def().cache_layout()->page_size_tokens();
  if (page == 0)
    page = 1;
  std::vector<std::vector<int32_t>> tables;
  uint64_t kv_pages = options.first_page;
  for (const auto &prompt : prompts) {
    uint64_t tokens = prompt.size() + options.max_tokens + 1;
    uint64_t pages = (tokens + page - 1) / page;
    std::vector<int32_t> table;
    for (uint64_t p = 0; p < pages; ++p)
      table.push_back(static_cast<int32_t>(kv_pages + p));
    kv_pages += pages;
    tables.push_back(std::move(table));
  }
  if (options.kv_pages != 0 && options.kv_pages < kv_pages)
    return invalidArgument("--kv-pages {} is too small: the requests use "
                           "pages up to {}",
                           options.kv_pages, kv_pages - 1);
  if (kv_pages > static_cast<uint64_t>(INT32_MAX))
    return outOfRange("page ids up to {} do not fit the i32 block table",
                      kv_pages - 1);
  ExecutorOptions executor_options;
  executor_options.kv_pages = std::max(kv_pages, options.kv_pages);
  executor_options.state_slots = static_cast<uint32_t>(prompts.size());
  executor_options.target = options.target;
  executor_options.step_graphs = options.decode_graphs;
  executor_options.ranks = ranks;
  ProgressReporter progress({"strata-run", stderr, options.quiet});
  executor_options.progress = &progress;
  STRATA_ASSIGN_OR_RETURN(
      std::unique_ptr<ModelExecutor> executor,
      ModelExecutor::create(std::move(artifact), options.checkpoint,
                            executor_options));
  double load_seconds = seconds(load_start);
  size_t vocab = executor->model().vocab_size();
  bool want_mtp = !options.dump_mtp.empty();
  if (want_mtp && !executor->hasStep(StepKind::mtp_draft))
    return notFound("--dump-mtp-logits: the artifact has no mtp_draft plan");
  for (size_t r = 0; r < prompts.size(); ++r)
    STRATA_RETURN_IF_ERROR(executor->resetSlot(static_cast<int32_t>(r)));

  // Prefill: round k takes tokens [k * chunk, (k + 1) * chunk) of every
  // request that still has prompt left.
  size_t n = prompts.size();
  std::vector<std::vector<float>> prompt_logits(n);
  std::vector<std::vector<uint8_t>> prompt_hidden(n);
  std::vector<int32_t> next(n, 0);
  size_t longest = 0, prompt_tokens = 0;
  for (const auto &p : prompts) {
    longest = std::max(longest, p.size());
    prompt_tokens += p.size();
  }
  size_t chunk = options.chunk > 0 ? static_cast<size_t>(options.chunk)
                                   : longest;
  bool all_logits = !options.dump_logits.empty();
  Clock::time_point prefill_start = Clock::now();
  for (size_t begin = 0; begin < longest; begin += chunk) {
    std::vector<StepRequest> step;
    std::vector<size_t> owners;
    for (size_t r = 0; r < n; ++r) {
      if (begin >= prompts[r].size())
        continue;
      size_t end = std::min(prompts[r].size(), begin + chunk);
      StepRequest request;
      request.tokens.assign(prompts[r].begin() + begin,
                            prompts[r].begin() + end);
      request.start_position = static_cast<int64_t>(begin);
      request.block_table = tables[r];
      request.slot = static_cast<int32_t>(r);
      request.all_logits = all_logits;
      step.push_back(std::move(request));
      owners.push_back(r);
    }
    STRATA_ASSIGN_OR_RETURN(StepResult result,
                            executor->run(StepKind::prefill, step));
    size_t token_offset = 0;
    for (size_t i = 0; i < owners.size(); ++i) {
      size_t r = owners[i];
      auto [first, count] = result.request_rows[i];
      const float *rows = result.logits.data() + first * vocab;
      if (all_logits)
        prompt_logits[r].insert(prompt_logits[r].end(), rows,
                                rows + count * vocab);
      next[r] = argmax(rows + (count - 1) * vocab, vocab);
      size_t tokens = step[i].tokens.size();
      if (want_mtp)
        prompt_hidden[r].insert(
            prompt_hidden[r].end(),
            result.hidden.begin() + token_offset * result.hidden_row_bytes,
            result.hidden.begin() +
                (token_offset + tokens) * result.hidden_row_bytes);
      token_offset += tokens;
    }
  }
  double prefill_seconds = seconds(prefill_start);

  // Decode: every running request feeds its last token; max_tokens steps, so
  // the dump also holds the logits after the last generated token. A
  // request ends at an end-of-sequence id (not part of its output) unless
  // --ignore-eos.
  std::vector<int64_t> eos;
  const artifact::ModelConfig &model = executor->model();
  if (model.eos_token_ids() && model.eos_token_ids()->size() > 0)
    eos.assign(model.eos_token_ids()->begin(), model.eos_token_ids()->end());
  else if (model.eos_token_id() >= 0)
    eos.push_back(model.eos_token_id());
  std::vector<std::vector<int32_t>> generated(n);
  std::vector<std::vector<float>> decode_logits(n);
  std::vector<bool> stopped(n, false);
  Clock::time_point decode_start = Clock::now();
  std::vector<int32_t> first_generated = next;
  size_t decoded = 0;
  for (int64_t s = 0; s < options.max_tokens; ++s) {
    std::vector<StepRequest> step;
    std::vector<size_t> owners;
    for (size_t r = 0; r < n; ++r) {
      if (stopped[r])
        continue;
      if (!options.ignore_eos &&
          std::find(eos.begin(), eos.end(), next[r]) != eos.end()) {
        stopped[r] = true;
        continue;
      }
      generated[r].push_back(next[r]);
      owners.push_back(r);
      StepRequest request;
      request.tokens = {next[r]};
      request.start_position =
          static_cast<int64_t>(prompts[r].size() + s);
      request.block_table = tables[r];
      request.slot = static_cast<int32_t>(r);
      step.push_back(std::move(request));
    }
    if (step.empty())
      break;
    decoded += step.size();
    STRATA_ASSIGN_OR_RETURN(StepResult result,
                            executor->run(StepKind::decode, step));
    for (size_t i = 0; i < owners.size(); ++i) {
      size_t r = owners[i];
      const float *row = result.logits.data() + i * vocab;
      if (all_logits)
        decode_logits[r].insert(decode_logits[r].end(), row, row + vocab);
      next[r] = argmax(row, vocab);
    }
  }
  double decode_seconds = seconds(decode_start);

  for (size_t r = 0; r < n; ++r) {
    out << "request " << r << ": " << prompts[r].size()
        << " prompt tokens, generated:";
    for (int32_t id : generated[r])
      out << ' ' << id;
    out << (stopped[r] ? " (end of sequence)" : "") << '\n';
    if (tok) {
      StatusOr<std::string> text = tok->decode(generated[r]);
      if (text.ok())
        out << "text " << r << ": " << *text << '\n';
    }
  }
  out << fmt::format("load: {:.3f} s\n", load_seconds);
  out << fmt::format("prefill: {} tokens in {:.3f} s ({:.1f} tokens/s, chunk "
                     "{})\n",
                     prompt_tokens, prefill_seconds,
                     prompt_tokens / std::max(prefill_seconds, 1e-9), chunk);
  out << fmt::format("decode: {} tokens of {} requests in {:.3f} s ({:.1f} "
                     "tokens/s)\n",
                     decoded, n, decode_seconds,
                     decoded / std::max(decode_seconds, 1e-9));
  out << fmt::format("decode graphs: {} captured, {} replays{}\n",
                     executor->graphCounts().captures[size_t(StepKind::decode)],
                     executor->graphCounts().replays[size_t(StepKind::decode)],
                     executor->graphError().ok()
                         ? ""
                         : " (turned off: " +
                               executor->graphError().toString() + ")");

  auto dump = [&](const std::string &path, const auto &values,
                  std::vector<int64_t> shape) {
    return writes_output ? writeNpy(path, values, shape) : okStatus();
  };
  if (!options.dump_logits.empty()) {
    std::vector<float> all;
    int64_t rows = 0;
    for (size_t r = 0; r < n; ++r) {
      all.insert(all.end(), prompt_logits[r].begin(), prompt_logits[r].end());
      all.insert(all.end(), decode_logits[r].begin(), decode_logits[r].end());
      rows += prompts[r].size() + options.max_tokens;
    }
    STRATA_RETURN_IF_ERROR(dump(options.dump_logits, all,
                                    {rows, static_cast<int64_t>(vocab)}));
  }
  if (!options.dump_ids.empty()) {
    std::vector<int32_t> all;
    for (const auto &g : generated)
      all.insert(all.end(), g.begin(), g.end());
    STRATA_RETURN_IF_ERROR(dump(
        options.dump_ids, all,
        {static_cast<int64_t>(n), static_cast<int64_t>(options.max_tokens)}));
  }
  if (want_mtp) {
    // Draft step 0 over every prompt row: row p feeds token p + 1 (the first
    // generated token for the last row) with the target's hidden h_p, in the
    // same chunks as the prefill, into the draft layer's own caches.
    std::vector<float> all;
    int64_t rows = 0;
    for (size_t r = 0; r < n; ++r) {
      STRATA_RETURN_IF_ERROR(executor->resetSlot(static_cast<int32_t>(r)));
      std::vector<int32_t> shifted(prompts[r].begin() + 1, prompts[r].end());
      shifted.push_back(first_generated[r]);
      size_t row_bytes = prompt_hidden[r].size() / prompts[r].size();
      for (size_t begin = 0; begin < shifted.size(); begin += chunk) {
        size_t end = std::min(shifted.size(), begin + chunk);
        StepRequest request;
        request.tokens.assign(shifted.begin() + begin, shifted.begin() + end);
        request.start_position = static_cast<int64_t>(begin);
        request.block_table = tables[r];
        request.slot = static_cast<int32_t>(r);
        request.all_logits = true;
        request.hidden.assign(prompt_hidden[r].begin() + begin * row_bytes,
                              prompt_hidden[r].begin() + end * row_bytes);
        STRATA_ASSIGN_OR_RETURN(StepResult result,
                                executor->run(StepKind::mtp_draft, {request}));
        all.insert(all.end(), result.logits.begin(), result.logits.end());
      }
      rows += shifted.size();
    }
    STRATA_RETURN_IF_ERROR(dump(options.dump_mtp, all,
                                    {rows, static_cast<int64_t>(vocab)}));
  }
  return okStatus();
}

} // namespace

int runRunTool(const std::vector<std::string> &args, std::ostream &out,
               std::ostream &err) {
  CommandLine cl("strata-run", kUsage, kDescription);
  RunOptions parsed;
  RunFlags flags;
  declareFlags(cl, parsed, flags);
  if (std::optional<int> code = cl.parse(args, out, err))
    return *code;
  StatusOr<RunOptions> options = finishOptions(cl, parsed, flags);
  if (!options.ok())
    return cl.usageError(err, options.status().message());
  options->args = args;
  Status status = run(*options, out);
  if (!status.ok()) {
    err << "strata-run: " << status.message() << "\n";
    return 1;
  }
  return 0;
}

} // namespace strata::runtime
