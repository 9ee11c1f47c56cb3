// RUN: strata-opt --convert-llm-to-gpu=chip=sm_90 %s | FileCheck %s --check-prefixes=CHECK,GEMV,SM90
// RUN: strata-opt --convert-llm-to-gpu=chip=gfx942 %s | FileCheck %s --check-prefixes=CHECK,GEMV,GFX942
// RUN: strata-opt --convert-llm-to-gpu=chip=gfx950 %s | FileCheck %s --check-prefixes=CHECK

// Tests a linear with bf16 x, an fp32 weight and an fp32 result (the MoE
// router's logits) on the matrix units (MatmulTiling.h MatmulProblem,
// MatmulKernel.cpp splitF32): each fp32 weight fragment is read as fp32 and
// split into three bf16 terms, hi (the value's top 16 bits), mid (those of
// the exact remainder) and lo (the rest), which sum to it exactly; the three
// bf16 products with the same A fragment accumulate in fp32, small terms
// first, so the result is the fp32 dot product up to summation order
// (the larger steps' forms below).
// CHECK-LABEL: gpu.func @linear_bf16_32x256_f32(%{{.*}}: memref<?x256xbf16>, %{{.*}}: memref<32x256xf32>, %{{.*}}: memref<?x32xf32>)
// CHECK: %[[MASK:.*]] = arith.constant dense<-65536> : vector<{{[0-9]+}}xi32>
// Steps of at most 16 rows take the GEMV (buildWeightGemv, takesWeightGemv):
// block y's 2 weight rows in registers (16-byte loads of 4 fp32, a run past
// K reads the last one and counts as zero), then per row of the step the
// thread's 4-element runs of x, fp32 fused multiply-adds, the subgroup's sum
// by XOR shuffles, the subgroups' sums in workgroup memory, added in
// subgroup order after a barrier (sm_90 and gfx942; this shape has no
// decode forms on gfx950).
// GEMV: %[[SMALL:.*]] = arith.cmpi ule, %{{.*}}, %c16 : index
// GEMV-NEXT: scf.if %[[SMALL]] {
// GEMV: vector.load %arg1[{{.*}}] {alignment = 16 : i64} : memref<32x256xf32>, vector<4xf32>
// GEMV: arith.select
// GEMV: scf.for %[[ROW:.*]] = %c0 to %{{.*}} step %c1 {
// GEMV: vector.load %arg0[%[[ROW]], {{.*}}] {alignment = 8 : i64} : memref<?x256xbf16>, vector<4xbf16>
// GEMV: math.fma
// SM90: gpu.shuffle  xor %{{.*}}, %c16_i32, %c32_i32 : f32
// GFX942: gpu.shuffle  xor %{{.*}}, %c32_i32, %c64_i32 : f32
// GEMV: memref.store %{{.*}}, %{{.*}}[%{{.*}}, %c0, %c0, %c0] : memref<4x1x{{[0-9]+}}x{{[0-9]+}}xf32, #gpu.address_space<workgroup>>
// GEMV: gpu.barrier
// GEMV: memref.store %{{.*}}, %arg2[%[[ROW]], %{{.*}}] : memref<?x32xf32>
// GEMV: gpu.barrier
// GEMV: } else {
// SM90: %[[W:.*]] = vector.load %arg1[{{.*}}] {alignment = 16 : i64} : memref<32x256xf32>, vector<16xf32>
// SM90: %[[V:.*]] = vector.shuffle %[[W]], %[[W]] [0, 1, 2, 3]
// SM90: %[[VB:.*]] = arith.bitcast %[[V]] : vector<4xf32> to vector<4xi32>
// SM90: %[[HIB:.*]] = arith.andi %[[VB]], %[[MASK]]
// SM90: %[[HI:.*]] = arith.bitcast %[[HIB]] : vector<4xi32> to vector<4xf32>
// SM90: %[[REST:.*]] = arith.subf %[[V]], %[[HI]]
// SM90: %[[RB:.*]] = arith.bitcast %[[REST]]
// SM90: %[[MIDB:.*]] = arith.andi %[[RB]], %[[MASK]]
// SM90: %[[MID:.*]] = arith.bitcast %[[MIDB]] : vector<4xi32> to vector<4xf32>
// SM90: %[[LO:.*]] = arith.subf %[[REST]], %[[MID]]
// SM90: %[[LO16:.*]] = arith.truncf %[[LO]] : vector<4xf32> to vector<4xbf16>
// SM90: %[[MID16:.*]] = arith.truncf %[[MID]] : vector<4xf32> to vector<4xbf16>
// SM90: %[[HI16:.*]] = arith.truncf %[[HI]] : vector<4xf32> to vector<4xbf16>
// SM90-COUNT-3: nvvm.mma.sync {{.*}}multiplicandAPtxType = #nvvm.mma_type<bf16>
// GFX942-COUNT-3: amdgpu.mfma 16x16x16 {{.*}} : vector<4xbf16>, vector<4xbf16>, vector<4xf32>
// The fp32 result is stored unrounded.
// CHECK: memref.store %{{.*}}, %arg2[%{{.*}}, %{{.*}}] : memref<?x32xf32>
func.func @router(%x: tensor<?x256xbf16>) -> tensor<?x32xf32> {
  %w = llm.weight "gate.weight" : tensor<32x256xf32>
  %y = llm.linear %x, %w : (tensor<?x256xbf16>, tensor<32x256xf32>) -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}
