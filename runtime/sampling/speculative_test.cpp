//===- speculative_test.cpp - tests of MTP draft verification --------------===//
//
// Greedy verification against plain greedy decoding of a toy model; the
// statistical check that rejection sampling reproduces the target
// distribution at every position; the acceptance counters and their /metrics
// text (read back with strata-eval's parser).
//
// Statistical tolerance: each check draws 200k verifications from a fixed
// seed and computes Pearson's chi-square of the tokens emitted at one position
// (given the earlier drafts were accepted) against the processed target
// distribution p. The bound is the chi-square quantile at p-value 1e-6 for
// (support - 1) degrees of freedom, so a correct verifier fails one of the 12
// checks for about 1 seed in 100k; the fixed seed makes the outcome
// deterministic. (At p-value 0.001 the fixed seed 12345 happened to fail one
// check with 19.3 > 18.5; over seeds 1..6 the statistics averaged ~3.9 for 4
// degrees of freedom, as a correct sampler should.) The total variation
// distance must also stay below 0.01: for 200k draws over 5 tokens its
// expectation is about 0.002 (and at most ~0.005 for the ~30k draws of the
// bonus position). A deliberately wrong verifier (resampling from p instead
// of max(0, p - q) on rejection) misses the bound by orders of magnitude, so
// the check has power.
//===----------------------------------------------------------------------===//

#include "runtime/sampling/speculative.h"

#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/eval/eval_client.h"

namespace strata::runtime {
namespace {

using Logits = std::vector<float>;
using Ids = std::vector<int32_t>;

Sampler makeSampler(float temperature, uint64_t seed = 0, int32_t top_k = 0,
                    float top_p = 1.0f) {
  SamplingParams p;
  p.temperature = temperature;
  p.seed = seed;
  p.top_k = top_k;
  p.top_p = top_p;
  StatusOr<Sampler> s = Sampler::create(p);
  EXPECT_TRUE(s.ok()) << s.status().toString();
  return std::move(s).value();
}

/// Rows of logits with the given argmaxes (V = 8).
Logits argmaxRows(const Ids &argmaxes) {
  Logits rows;
  for (int32_t a : argmaxes)
    for (int32_t v = 0; v < 8; ++v)
      rows.push_back(v == a ? 5.0f : static_cast<float>(v % 3));
  return rows;
}

StatusOr<DraftVerificationResult> verify(const Logits &target, size_t vocab,
                                         const Ids &drafts, Sampler &sampler,
                                         const Logits *draft_logits = nullptr,
                                         MtpAcceptanceCounters *c = nullptr) {
  DraftVerification v;
  v.target_logits = target.data();
  v.vocab_size = vocab;
  v.draft_tokens = drafts;
  v.draft_logits = draft_logits ? draft_logits->data() : nullptr;
  return verifyDrafts(v, sampler, c);
}

// Tests the greedy rule: accept while the draft is the target argmax, then the
// correction, or the bonus token after all drafts.
TEST(Speculative, GreedyAcceptsPrefixThenCorrects) {
  Sampler s = makeSampler(0.0f);
  Logits target = argmaxRows({5, 2, 7, 1});
  auto r = verify(target, 8, {5, 2, 7}, s);
  ASSERT_TRUE(r.ok()) << r.status().toString();
  EXPECT_EQ(r->accepted, 3u);
  EXPECT_EQ(r->tokens, (Ids{5, 2, 7, 1}));
  r = verify(target, 8, {5, 3, 7}, s);
  EXPECT_EQ(r->accepted, 1u);
  EXPECT_EQ(r->tokens, (Ids{5, 2}));
  r = verify(target, 8, {4, 2, 7}, s);
  EXPECT_EQ(r->accepted, 0u);
  EXPECT_EQ(r->tokens, (Ids{5}));
  Logits two = argmaxRows({6, 0});
  r = verify(two, 8, {6}, s);
  EXPECT_EQ(r->tokens, (Ids{6, 0}));
}

// Tests greedy verification from the target's greedy tokens: the same
// outcome as verifyDrafts over rows with those argmaxes, the counters fed,
// and the refusals (bad k, wrong row count, a row without a finite maximum).
TEST(Speculative, GreedyTokensVerifyLikeGreedyLogits) {
  Sampler s = makeSampler(0.0f);
  const Ids target_tokens = {5, 2, 7, 1};
  Logits target = argmaxRows(target_tokens);
  MtpAcceptanceCounters counters;
  for (const Ids &drafts : {Ids{5, 2, 7}, Ids{5, 3, 7}, Ids{4, 2, 7}}) {
    auto from_logits = verify(target, 8, drafts, s);
    auto from_tokens = verifyGreedyDrafts(target_tokens, drafts, &counters);
    ASSERT_TRUE(from_tokens.ok()) << from_tokens.status().toString();
    EXPECT_EQ(from_tokens->accepted, from_logits->accepted);
    EXPECT_EQ(from_tokens->tokens, from_logits->tokens);
  }
  auto two = verifyGreedyDrafts({6, 0}, {6});
  ASSERT_TRUE(two.ok());
  EXPECT_EQ(two->tokens, (Ids{6, 0}));
  MtpAcceptanceCounters::Snapshot c = counters.snapshot();
  EXPECT_EQ(c.draft_tokens, 9u);
  EXPECT_EQ(c.accepted_tokens, 3u + 1u + 0u);
  EXPECT_EQ(verifyGreedyDrafts({1}, {}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(verifyGreedyDrafts({5, 2}, {5, 2}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(verifyGreedyDrafts({5, -1, 3}, {5, 2}).status().code(),
            StatusCode::kInvalidArgument);
}

/// A deterministic toy language model over V = 16 tokens: the logits of the
/// next token are a hash of the last three tokens, with occasional exact ties.
constexpr size_t kToyVocab = 16;
Logits toyLogits(const Ids &prefix) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = prefix.size() >= 3 ? prefix.size() - 3 : 0; i < prefix.size();
       ++i)
    h = (h ^ static_cast<uint64_t>(prefix[i] + 1)) * 1099511628211ull;
  Logits l(kToyVocab);
  for (size_t v = 0; v < kToyVocab; ++v) {
    uint64_t x = (h + v * 0x9E3779B97F4A7C15ull) * 0xBF58476D1CE4E5B9ull;
    l[v] = static_cast<float>((x >> 40) % 8); // few values: ties are common
  }
  return l;
}

// Tests that greedy speculative decoding (drafts right ~70% of the time, k
// cycling 1..3) commits exactly the tokens of plain greedy decoding, and that
// the counters add up.
TEST(Speculative, GreedyVerificationEqualsGreedyDecoding) {
  const size_t n = 300;
  Ids plain = {3};
  while (plain.size() < n + 1) {
    Logits l = toyLogits(plain);
    plain.push_back(*greedyToken(l.data(), l.size()));
  }

  Sampler s = makeSampler(0.0f);
  SamplingRng coin(11);
  MtpAcceptanceCounters counters;
  Ids spec = {3};
  size_t steps = 0, accepted = 0, drafted = 0;
  while (spec.size() < n + 1) {
    size_t k = 1 + steps % kMaxDraftTokens;
    Ids context = spec, drafts;
    for (size_t i = 0; i < k; ++i) {
      Logits l = toyLogits(context);
      int32_t d = *greedyToken(l.data(), l.size());
      if (coin.uniform() >= 0.7)
        d = static_cast<int32_t>((d + 1) % kToyVocab);
      drafts.push_back(d);
      context.push_back(d);
    }
    Logits target;
    Ids rows = spec;
    for (size_t i = 0; i <= k; ++i) {
      Logits l = toyLogits(rows);
      target.insert(target.end(), l.begin(), l.end());
      if (i < k)
        rows.push_back(drafts[i]);
    }
    auto r = verify(target, kToyVocab, drafts, s, nullptr, &counters);
    ASSERT_TRUE(r.ok()) << r.status().toString();
    ASSERT_EQ(r->tokens.size(), r->accepted + 1);
    spec.insert(spec.end(), r->tokens.begin(), r->tokens.end());
    ++steps;
    accepted += r->accepted;
    drafted += k;
  }
  spec.resize(n + 1);
  EXPECT_EQ(spec, plain);
  EXPECT_GT(accepted, drafted / 3); // the drafter is right often enough
  EXPECT_LT(accepted, drafted);     // and wrong sometimes
  MtpAcceptanceCounters::Snapshot snap = counters.snapshot();
  EXPECT_EQ(snap.draft_tokens, drafted);
  EXPECT_EQ(snap.accepted_tokens, accepted);
  EXPECT_EQ(snap.draft_by_position[0], steps);
}

//===----------------------------------------------------------------------===//
// Rejection sampling reproduces the target distribution
//===----------------------------------------------------------------------===//

constexpr size_t kVocab = 6;
constexpr int kTrials = 200000;

/// Chi-square quantiles at p-value 1e-6 for 1..5 degrees of freedom.
double chiSquareBound(size_t dof) {
  static const double q[] = {0, 23.928, 27.631, 30.665, 33.377, 35.888};
  return q[dof];
}

struct Fit {
  double chi2 = 0, tv = 0, bound = 0;
  size_t samples = 0;
  bool zeroOutsideSupport = true;
};

/// Compares token counts with distribution `p`.
Fit fit(const std::vector<double> &counts, const TokenDistribution &p) {
  Fit f;
  for (double c : counts)
    f.samples += static_cast<size_t>(c);
  for (size_t v = 0; v < counts.size(); ++v) {
    double expected = f.samples * p.prob(static_cast<int32_t>(v));
    if (expected == 0.0) {
      f.zeroOutsideSupport &= counts[v] == 0.0;
      continue;
    }
    f.chi2 += (counts[v] - expected) * (counts[v] - expected) / expected;
    f.tv += std::abs(counts[v] / f.samples - p.prob(static_cast<int32_t>(v)));
  }
  f.tv /= 2;
  f.bound = chiSquareBound(p.ids.size() - 1);
  return f;
}

/// Target rows (k + 1 = 4) and draft rows (3) over 6 tokens. The drafts are
/// close enough to the target for ~half the chains to be fully accepted.
const Logits kTarget = {
    2.0f, 1.0f, 0.5f, 0.0f, -1.0f, -3.0f, // p_0
    0.0f, 1.5f, 1.5f, 0.5f, -0.5f, 0.2f,  // p_1
    -1.0f, 0.0f, 1.0f, 2.0f, 0.3f, 0.1f,  // p_2
    1.0f, 1.0f, 0.0f, -2.0f, 0.5f, 2.5f,  // p_3 (bonus)
};
const Logits kDraft = {
    1.5f, 1.5f, 0.0f, 0.3f, -1.0f, -1.0f, // q_0
    0.5f, 1.0f, 2.0f, 0.0f, 0.0f, 0.0f,   // q_1
    -0.5f, 0.5f, 0.5f, 2.5f, 0.0f, 0.5f,  // q_2
};

/// Runs `kTrials` verifications of 3 drafts sampled from q (or, when
/// `greedy_drafts`, the argmax of q with a one-hot q) and counts the token
/// emitted at each of the 4 positions. `naive` swaps in the wrong rejection
/// rule (resample from p). Returns counts[position][token].
std::vector<std::vector<double>> emittedCounts(bool greedy_drafts, bool naive,
                                               size_t *out_all_accepted) {
  Sampler s = makeSampler(0.8f, /*seed=*/12345, /*top_k=*/5);
  SamplingRng draft_rng(777);
  std::vector<TokenDistribution> q(3);
  Ids argmaxes(3);
  for (size_t i = 0; i < 3; ++i) {
    q[i] = *s.distribution(kDraft.data() + i * kVocab, kVocab);
    argmaxes[i] = *greedyToken(kDraft.data() + i * kVocab, kVocab);
  }
  std::vector<std::vector<double>> counts(4, std::vector<double>(kVocab, 0.0));
  *out_all_accepted = 0;
  for (int t = 0; t < kTrials; ++t) {
    Ids drafts = argmaxes;
    if (!greedy_drafts)
      for (size_t i = 0; i < 3; ++i)
        drafts[i] = sampleToken(q[i], draft_rng);
    Ids tokens;
    if (!naive) {
      auto r = verify(kTarget, kVocab, drafts, s,
                      greedy_drafts ? nullptr : &kDraft);
      EXPECT_TRUE(r.ok());
      tokens = r->tokens;
    } else {
      for (size_t i = 0; i <= 3; ++i) {
        TokenDistribution p = *s.distribution(kTarget.data() + i * kVocab, kVocab);
        if (i == 3) {
          tokens.push_back(sampleToken(p, s.rng()));
          break;
        }
        double ratio = p.prob(drafts[i]) / q[i].prob(drafts[i]);
        if (s.rng().uniform() < ratio) {
          tokens.push_back(drafts[i]);
          continue;
        }
        tokens.push_back(sampleToken(p, s.rng())); // wrong: should be p - q
        break;
      }
    }
    for (size_t i = 0; i < tokens.size(); ++i)
      counts[i][tokens[i]] += 1;
    *out_all_accepted += tokens.size() == 4;
  }
  return counts;
}

void expectTargetDistribution(const std::vector<std::vector<double>> &counts) {
  Sampler s = makeSampler(0.8f, 0, 5);
  for (size_t i = 0; i < 4; ++i) {
    TokenDistribution p = *s.distribution(kTarget.data() + i * kVocab, kVocab);
    ASSERT_EQ(p.ids.size(), 5u); // top_k 5 of 6
    Fit f = fit(counts[i], p);
    SCOPED_TRACE(::testing::Message() << "position " << i + 1 << ", "
                                    << f.samples << " samples");
    EXPECT_TRUE(f.zeroOutsideSupport);
    EXPECT_LT(f.chi2, f.bound);
    EXPECT_LT(f.tv, 0.01);
    EXPECT_GT(f.samples, 20000u); // enough samples for the bound to mean much
  }
}

// Tests that with drafts sampled from q, the token emitted at each position
// (given the earlier drafts were accepted) is distributed as the target's p.
TEST(Speculative, RejectionSamplingMatchesTargetWithSampledDrafts) {
  size_t all_accepted = 0;
  auto counts = emittedCounts(/*greedy_drafts=*/false, /*naive=*/false,
                              &all_accepted);
  expectTargetDistribution(counts);
  EXPECT_GT(all_accepted, 0u);
}

// Tests the same with greedy (argmax, one-hot q) drafts, as the MTP layer
// proposes them.
TEST(Speculative, RejectionSamplingMatchesTargetWithGreedyDrafts) {
  size_t all_accepted = 0;
  auto counts = emittedCounts(/*greedy_drafts=*/true, /*naive=*/false,
                              &all_accepted);
  expectTargetDistribution(counts);
}

// Tests that the check has power: resampling from p on rejection is biased,
// and the first position's chi-square is far above the bound.
TEST(Speculative, NaiveResamplingFailsTheCheck) {
  size_t all_accepted = 0;
  auto counts = emittedCounts(false, /*naive=*/true, &all_accepted);
  Sampler s = makeSampler(0.8f, 0, 5);
  TokenDistribution p0 = *s.distribution(kTarget.data(), kVocab);
  Fit f = fit(counts[0], p0);
  EXPECT_GT(f.chi2, 10 * f.bound);
  EXPECT_GT(f.tv, 0.03);
}

// Tests that a seeded sampling verification is reproducible.
TEST(Speculative, SeededVerificationIsReproducible) {
  auto run = [](uint64_t seed) {
    Sampler s = makeSampler(1.0f, seed);
    Ids out;
    for (int i = 0; i < 200; ++i) {
      auto r = verify(kTarget, kVocab, {0, 1, 3}, s, &kDraft);
      out.insert(out.end(), r->tokens.begin(), r->tokens.end());
    }
    return out;
  };
  EXPECT_EQ(run(5), run(5));
  EXPECT_NE(run(5), run(6));
}

//===----------------------------------------------------------------------===//
// Errors and counters
//===----------------------------------------------------------------------===//

// Tests the rejected inputs and their messages.
TEST(Speculative, RejectsBadInput) {
  Sampler s = makeSampler(0.0f);
  Logits target = argmaxRows({1, 2, 3, 4, 5});
  EXPECT_EQ(verify(target, 8, {}, s).status().message(),
            "expected 1 to 3 draft tokens, got 0");
  EXPECT_EQ(verify(target, 8, {1, 2, 3, 4}, s).status().message(),
            "expected 1 to 3 draft tokens, got 4");
  EXPECT_EQ(verify(target, 8, {1, 8}, s).status().message(),
            "draft token 8 at position 2 is outside the vocabulary of 8 ids");
  EXPECT_EQ(verify(target, 8, {-1}, s).status().code(),
            StatusCode::kInvalidArgument);
  Logits empty;
  EXPECT_EQ(verify(empty, 8, {1}, s).status().message(),
            "draft verification without target logits");
  Logits nan_rows = argmaxRows({1, 2});
  nan_rows[8 + 3] = std::nanf("");
  EXPECT_EQ(verify(nan_rows, 8, {1}, s).status().message(),
            "logit of token 3 is NaN");
  // A sampled draft outside its own q (top_k 1 keeps only q's argmax 0).
  Sampler topk = makeSampler(1.0f, 0, 1);
  Logits q = {3.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
  EXPECT_EQ(verify(kTarget, kVocab, {2}, topk, &q).status().message(),
            "draft token 2 at position 1 has probability 0 under its draft "
            "distribution");
}

// Tests the per-position counters and their Prometheus text, read back by
// strata-eval's /metrics parser.
TEST(Speculative, CountersAndMetricsText) {
  MtpAcceptanceCounters c;
  c.record(3, 3);
  c.record(3, 1);
  c.record(2, 0);
  c.record(1, 1);
  MtpAcceptanceCounters::Snapshot s = c.snapshot();
  EXPECT_EQ(s.draft_tokens, 9u);
  EXPECT_EQ(s.accepted_tokens, 5u);
  EXPECT_EQ(s.draft_by_position, (std::array<uint64_t, 3>{4, 3, 2}));
  EXPECT_EQ(s.accepted_by_position, (std::array<uint64_t, 3>{3, 1, 1}));

  std::string text;
  c.appendPrometheus(text);
  EXPECT_NE(text.find("# TYPE strata_mtp_accepted_tokens_total counter\n"),
            std::string::npos);
  EXPECT_NE(text.find("strata_mtp_accepted_tokens_by_position_total"
                      "{position=\"2\"} 1\n"),
            std::string::npos);
  StatusOr<eval::ServerCounters> parsed = eval::parseServerCounters(text);
  ASSERT_TRUE(parsed.ok()) << parsed.status().toString();
  EXPECT_EQ(parsed->mtpDraftTokens, 9.0);
  EXPECT_EQ(parsed->mtpAcceptedTokens, 5.0);
  EXPECT_EQ(parsed->mtpDraftByPosition,
            (std::map<int, double>{{1, 4}, {2, 3}, {3, 2}}));
  EXPECT_EQ(parsed->mtpAcceptedByPosition,
            (std::map<int, double>{{1, 3}, {2, 1}, {3, 1}}));
}

// Tests that verifyDrafts records into the counters it is given.
TEST(Speculative, VerifyRecordsCounters) {
  Sampler s = makeSampler(0.0f);
  MtpAcceptanceCounters c;
  Logits target = argmaxRows({5, 2, 7, 1});
  ASSERT_TRUE(verify(target, 8, {5, 3, 7}, s, nullptr, &c).ok());
  EXPECT_EQ(c.snapshot().draft_tokens, 3u);
  EXPECT_EQ(c.snapshot().accepted_by_position,
            (std::array<uint64_t, 3>{1, 0, 0}));
}

} // namespace
} // namespace strata::runtime
