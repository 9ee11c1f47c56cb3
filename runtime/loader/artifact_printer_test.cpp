//===- artifact_printer_test.cpp - tests of the artifact text form --------===//
//
// Part of strata. The compiled end-to-end artifact is pinned by
// test/Artifact/end-to-end.test; this covers what it lacks: byte offsets,
// weight and cache bindings in one dispatch, and a hand-written debug info.
//
//===----------------------------------------------------------------------===//

#include "runtime/loader/artifact_printer.h"

#include <gtest/gtest.h>

#include "runtime/loader/test_artifact_builder.h"

namespace strata::runtime {
namespace {

// Tests the plan, cache and debug sections of the printed form.
TEST(ArtifactPrinter, PrintsPlansCachesAndDebugInfo) {
  auto artifact = Artifact::fromBytes(testing::buildTestArtifact());
  ASSERT_TRUE(artifact.ok());
  std::string text = printArtifact(**artifact);
  EXPECT_NE(text.find("  kernel 0 'scale': binary 0, entry "
                      "'strata_test_scale', abi packed_memref_descriptor\n"
                      "    arg 0 'in': buffer f32 [?]\n"
                      "    arg 1 'out': buffer f32 [?]\n"
                      "    arg 2 'alpha': scalar f32\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("    buffer 0 'in': input, ((num_tokens + 1) * 4) "
                      "bytes\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("    dispatch 0 'first': kernel 0 'scale'\n"
                      "      bind 0: buffer 0 'in' offset 4 shape "
                      "[num_tokens]\n"
                      "      bind 1: buffer 1 'out' shape [num_tokens]\n"
                      "      bind 2: float 1.5\n"
                      "    dispatch 1 'second': kernel 0 'scale'\n"
                      "      bind 0: weight 0 'w' shape [4]\n"
                      "      bind 1: cache 0 'layer0.kda_recurrent' shape [4]\n"
                      "      bind 2: float 2\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  kda: layers 1, heads 1, recurrent 4x4 f32 (64 "
                      "bytes), conv 1x12 bf16 (64 bytes)\n"
                      "  cache 0 'layer0.kda_recurrent': kda_recurrent layer "
                      "0 slot 0\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("debug_info: 1 kernels\n  cpu kernel 0: test.dsl:3:1 "
                      "'scale'\n"),
            std::string::npos)
      << text;
}

// Tests that a GPU target prints its binary format and launch geometry.
TEST(ArtifactPrinter, PrintsGpuLaunchInfo) {
  testing::TestArtifactKnobs knobs;
  knobs.gpu_target = true;
  auto artifact = Artifact::fromBytes(testing::buildTestArtifact(knobs));
  ASSERT_TRUE(artifact.ok());
  std::string text = printArtifact(**artifact);
  EXPECT_NE(text.find("target gfx942 chip 'gfx942'\n"
                      "  binary 0: hsaco, 8 bytes\n"
                      "  kernel 0 'scale': binary 0, entry 'scale', abi "
                      "gpu_memref_descriptor\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("    launch block [256, 1, 1] grid "
                      "[ceil_div(num_tokens, 256), 1, 1] shared 0\n"),
            std::string::npos)
      << text;
}

} // namespace
} // namespace strata::runtime
