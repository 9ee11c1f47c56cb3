; ===- cts_axpb.ll - the conformance kernel for the HIP backend ---------=== ;
;
; Part of strata. cts_axpb (see cts_kernels.h) in the gpu_memref_descriptor
; ABI as AMDGPU LLVM IR: 12 kernel arguments (5 per memref, then alpha and
; beta), one work-item per element of `out`, workgroups of exactly 64
; work-items (kCtsBlockSize). Flat loads and stores, so host (kHost) buffers
; work as well as device memory. CMake compiles it with clang for each chip
; in STRATA_CTS_AMDGPU_CHIPS into unittests/testdata/cts_axpb_<chip>.hsaco.
;
; ===-------------------------------------------------------------------=== ;

target triple = "amdgcn-amd-amdhsa"

declare i32 @llvm.amdgcn.workgroup.id.x()
declare i32 @llvm.amdgcn.workitem.id.x()
declare float @llvm.fma.f32(float, float, float)

define amdgpu_kernel void @cts_axpb(ptr %in_allocated, ptr %in_aligned,
                                    i64 %in_offset, i64 %in_size,
                                    i64 %in_stride, ptr %out_allocated,
                                    ptr %out_aligned, i64 %out_offset,
                                    i64 %out_size, i64 %out_stride,
                                    float %alpha, float %beta)
    "amdgpu-flat-work-group-size"="64,64" {
entry:
  %block = call i32 @llvm.amdgcn.workgroup.id.x()
  %thread = call i32 @llvm.amdgcn.workitem.id.x()
  %block64 = zext i32 %block to i64
  %thread64 = zext i32 %thread to i64
  %first = mul i64 %block64, 64
  %i = add i64 %first, %thread64
  %inside = icmp ult i64 %i, %out_size
  br i1 %inside, label %body, label %exit

body:
  %in_scaled = mul i64 %i, %in_stride
  %in_index = add i64 %in_scaled, %in_offset
  %in_ptr = getelementptr float, ptr %in_aligned, i64 %in_index
  %x = load float, ptr %in_ptr, align 4
  %y = call float @llvm.fma.f32(float %x, float %alpha, float %beta)
  %out_scaled = mul i64 %i, %out_stride
  %out_index = add i64 %out_scaled, %out_offset
  %out_ptr = getelementptr float, ptr %out_aligned, i64 %out_index
  store float %y, ptr %out_ptr, align 4
  br label %exit

exit:
  ret void
}

!llvm.module.flags = !{!0}
!0 = !{i32 1, !"amdhsa_code_object_version", i32 500}
