//===- text_stream.cpp - generated tokens to client text -------------------===//
//
// Part of strata.
//
//===----------------------------------------------------------------------===//

#include "runtime/sampling/text_stream.h"

namespace strata::runtime {

StatusOr<TextStream> TextStream::create(const tokenizer::Tokenizer &tokenizer,
                                        const SamplingParams &params,
                                        tokenizer::DecodeOptions options) {
  STRATA_ASSIGN_OR_RETURN(StopMatcher matcher, StopMatcher::create(params));
  return TextStream(IncrementalDetokenizer(tokenizer, options),
                    std::move(matcher));
}

StatusOr<StopOutput> TextStream::push(int32_t token) {
  if (matcher_.finished())
    return matcher_.push(token, ""); // the FAILED_PRECONDITION error
  std::string delta;
  if (!matcher_.isStopToken(token))
    delta = detokenizer_.push(token);
  if (matcher_.endsGeneration(token))
    delta += detokenizer_.finish();
  return matcher_.push(token, delta);
}

StatusOr<StopOutput> TextStream::finish(FinishReason reason) {
  if (matcher_.finished())
    return matcher_.finish("", reason); // the FAILED_PRECONDITION error
  return matcher_.finish(detokenizer_.finish(), reason);
}

} // namespace strata::runtime
