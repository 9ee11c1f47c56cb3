//===- sampling_check.cpp - the sampling pipeline as a command ------------===//
//
// Part of strata. TEST ONLY: reads a JSON array of cases
//   {"logits": [..], "prompt": [ids], "output": [ids], "drafts": [ids],
//    "params": {"temperature", "top_k", "top_p", "min_p",
//               "repetition_penalty", "presence_penalty",
//               "frequency_penalty", "logit_bias": {"id": b},
//               "min_tokens", "stop_token_ids": [..]},
//    "logprobs": n}
// and prints, per case, one JSON line with what runtime/sampling computes:
//   "processed": the row after the logits processors (logits_processors.h;
//                the output tokens feed the penalties, the drafts are the
//                uncommitted extra tokens),
//   "greedy":    the argmax of the processed row,
//   "dist":      {id: probability} of processLogits (temperature > 0),
//   "logprobs":  computeLogprobs of the raw row for the greedy token.
// test/runtime/sampling/Inputs/vllm_sampling_reference.py computes the same
// from vLLM's definitions and compares.
//
//===----------------------------------------------------------------------===//

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "runtime/sampling/logits_processors.h"
#include "runtime/sampling/sampler.h"

using namespace strata::runtime;
using nlohmann::json;

static json number(double x) {
  return std::isfinite(x) ? json(x) : json(x > 0 ? "inf" : "-inf");
}

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: strata-sampling-check CASES.json\n");
    return 2;
  }
  std::ifstream in(argv[1]);
  std::stringstream buffer;
  buffer << in.rdbuf();
  json cases = json::parse(buffer.str(), nullptr, false);
  if (!cases.is_array()) {
    std::fprintf(stderr, "%s: expected a JSON array of cases\n", argv[1]);
    return 1;
  }
  for (const json &c : cases) {
    std::vector<float> row = c.at("logits").get<std::vector<float>>();
    std::vector<int32_t> prompt = c.value("prompt", std::vector<int32_t>{});
    std::vector<int32_t> output = c.value("output", std::vector<int32_t>{});
    std::vector<int32_t> drafts = c.value("drafts", std::vector<int32_t>{});
    const json p = c.value("params", json::object());
    SamplingParams params;
    params.temperature = p.value("temperature", 1.0f);
    params.top_k = p.value("top_k", 0);
    params.top_p = p.value("top_p", 1.0f);
    params.min_p = p.value("min_p", 0.0f);
    params.repetition_penalty = p.value("repetition_penalty", 1.0f);
    params.presence_penalty = p.value("presence_penalty", 0.0f);
    params.frequency_penalty = p.value("frequency_penalty", 0.0f);
    params.min_tokens = p.value("min_tokens", 0);
    params.stop_token_ids = p.value("stop_token_ids", std::vector<int32_t>{});
    const json bias_map = p.value("logit_bias", json::object());
    for (auto &[id, bias] : bias_map.items())
      params.logit_bias.emplace_back(std::stoi(id), bias.get<float>());
    Status valid = validateSamplingParams(params, row.size());
    if (!valid.ok()) {
      std::printf("%s\n",
                  json({{"error", std::string(valid.message())}}).dump().c_str());
      continue;
    }

    std::vector<float> processed = row;
    PenaltyTracker penalties(prompt);
    for (int32_t t : output)
      penalties.addOutput(t);
    processLogitsRow(params, output.size() + drafts.size(), &penalties,
                     drafts.data(), drafts.size(), processed.data(),
                     processed.size());
    json result;
    json processed_json = json::array();
    for (float x : processed)
      processed_json.push_back(number(x));
    result["processed"] = processed_json;
    StatusOr<int32_t> greedy = greedyToken(processed.data(), processed.size());
    result["greedy"] = greedy.ok() ? json(*greedy) : json(nullptr);
    if (params.temperature > 0) {
      StatusOr<TokenDistribution> dist =
          processLogits(processed.data(), processed.size(), params);
      json d = json::object();
      if (dist.ok())
        for (size_t i = 0; i < dist->ids.size(); ++i)
          d[std::to_string(dist->ids[i])] = dist->probs[i];
      result["dist"] = d;
    }
    if (greedy.ok()) {
      TokenLogprobs lp = computeLogprobs(row.data(), row.size(), *greedy,
                                         size_t(c.value("logprobs", 0)));
      json top = json::array();
      for (const auto &[id, x] : lp.top)
        top.push_back({id, number(x)});
      result["logprobs"] = {{"token", lp.token},
                            {"logprob", number(lp.logprob)},
                            {"top", top}};
    }
    std::printf("%s\n", result.dump().c_str());
  }
  return 0;
}
