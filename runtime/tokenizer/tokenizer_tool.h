//===- tokenizer_tool.h - the strata-tokenize command line ------------------===//
//
// Part of strata. The logic behind tools/strata-tokenize (whose main only
// calls runTokenizerTool):
//   strata-tokenize encode <tokenizer.json> [TEXT]       ids of TEXT (or stdin)
//   strata-tokenize decode <tokenizer.json> [--skip-special-tokens] ID...
//   strata-tokenize check-goldens <tokenizer.json> <goldens.jsonl>
//                   [--gsm8k <test.jsonl>]
//       compares every golden case written by
//       test/runtime/tokenizer/make_goldens.mjs (encodings, decodings,
//       round trips) and prints the counts;
//   strata-tokenize bench <tokenizer.json> <gsm8k test.jsonl>
//       load time and the time to encode every question with a cold cache.
// Results go to `out`, diagnostics ("error: ...") to `err`; the exit code is
// 0 on success, 1 on any failure or mismatch, 2 on a usage error.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_TOKENIZER_TOKENIZER_TOOL_H
#define STRATA_RUNTIME_TOKENIZER_TOKENIZER_TOOL_H

#include <iosfwd>
#include <string>
#include <vector>

namespace strata::runtime::tokenizer {

int runTokenizerTool(const std::vector<std::string> &args, std::istream &in,
                     std::ostream &out, std::ostream &err);

} // namespace strata::runtime::tokenizer

#endif // STRATA_RUNTIME_TOKENIZER_TOKENIZER_TOOL_H
