//===- mtp_draft_limit.h - MTP drafts per verification ------*- C++ -*-===//
//
// Part of strata. Shared by the compiler and the runtime: the runtime's
// speculative decoding verifies at most kMaxMtpDraftTokens drafts per
// request (the MTP layer chains that many), and the compiler's mtp_verify
// plans take requests of at most kMaxMtpDraftTokens + 1 tokens
// (strata_artifact_def.fbs ExecutionPlan.max_request_tokens).
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_SCHEMAS_MTP_DRAFT_LIMIT_H
#define STRATA_RUNTIME_SCHEMAS_MTP_DRAFT_LIMIT_H

#include <cstdint>

namespace strata {

/// The most draft tokens one MTP verification takes.
inline constexpr uint32_t kMaxMtpDraftTokens = 3;

/// Rows of the MTP draft layer's shared selection cache
/// (!llm.shared_selection, CacheLayout.shared_selection): a step 0 keeps
/// the selections of each request's last kSharedSelectionRows rows, so
/// that the chain can take the accepted one of a verification's k + 1.
inline constexpr uint32_t kSharedSelectionRows = kMaxMtpDraftTokens + 1;

} // namespace strata

#endif // STRATA_RUNTIME_SCHEMAS_MTP_DRAFT_LIMIT_H
