// Tests that an unknown GPU chip is reported, by the pass and through the
// kernel phase's `target` option.

// RUN: not strata-opt --convert-llm-to-gpu=chip=gfx90a %s 2>&1 | FileCheck %s
// RUN: not strata-opt --strata-kernel=target=sm_80 %s 2>&1 | FileCheck %s --check-prefix=PIPE

// CHECK: error: unknown GPU chip 'gfx90a' (expected one of gfx942, gfx950, sm_90, sm_90a)
// PIPE: error: unknown GPU chip 'sm_80'
func.func @f(%x: tensor<?x64xbf16>) -> tensor<?x64xbf16> {
  return %x : tensor<?x64xbf16>
}
