// RUN: strata-opt --split-input-file --verify-diagnostics --select-kernel-strategy="chip=sm_90 remarks=true" %s | FileCheck %s

// Tests that the matrix strategies read a kernel function's arguments through
// its contract (#llm.kernel roles): a linear takes its roles in any order
// after x (argument 0 gives a matmul's step rows), mla_combine in any order;
// a function that names no roles, puts a matmul's x elsewhere than argument
// 0, or has roles its builder does not take keeps the generic kernel, with a
// remark saying why.

// The order convert-llm-to-kernel emits.
// CHECK-LABEL: func.func @linear_in_order
// CHECK-SAME: llm.gpu_strategy = #llm.gpu_strategy<tiled_matmul>
func.func @linear_in_order(%x: memref<?x256xbf16>, %w: memref<128x256xbf16>, %y: memref<?x128xbf16>)
    attributes {llm.kernel = #llm.kernel<"linear in order", roles = [x, weight, out]>, llm.linear_kernel} {
  return
}

// -----

// The result before the weight: the builder finds each by its role.
// CHECK-LABEL: func.func @linear_out_first
// CHECK-SAME: llm.gpu_strategy = #llm.gpu_strategy<tiled_matmul>
func.func @linear_out_first(%x: memref<?x256xbf16>, %y: memref<?x128xbf16>, %w: memref<128x256xbf16>)
    attributes {llm.kernel = #llm.kernel<"linear out first", roles = [x, out, weight]>, llm.linear_kernel} {
  return
}

// -----

// CHECK-LABEL: func.func @linear_without_roles
// CHECK-SAME: llm.gpu_strategy = #llm.gpu_strategy<generic>
// expected-remark@+1 {{sm_90: kernel 'linear_without_roles' keeps the generic kernel: the kernel names no argument roles}}
func.func @linear_without_roles(%x: memref<?x256xbf16>, %w: memref<128x256xbf16>, %y: memref<?x128xbf16>)
    attributes {llm.kernel = #llm.kernel<"linear without roles">, llm.linear_kernel} {
  return
}

// -----

// CHECK-LABEL: func.func @linear_weight_first
// CHECK-SAME: llm.gpu_strategy = #llm.gpu_strategy<generic>
// expected-remark@+1 {{sm_90: kernel 'linear_weight_first' keeps the generic kernel: x is not argument 0 (the step's rows)}}
func.func @linear_weight_first(%w: memref<128x256xbf16>, %x: memref<?x256xbf16>, %y: memref<?x128xbf16>)
    attributes {llm.kernel = #llm.kernel<"linear weight first", roles = [weight, x, out]>, llm.linear_kernel} {
  return
}

// -----

// A bf16 linear has no scales.
// CHECK-LABEL: func.func @linear_extra_role
// CHECK-SAME: llm.gpu_strategy = #llm.gpu_strategy<generic>
// expected-remark@+1 {{sm_90: kernel 'linear_extra_role' keeps the generic kernel: argument roles [x, weight, weight_scales, out], the builder takes [x, weight, out]}}
func.func @linear_extra_role(%x: memref<?x256xbf16>, %w: memref<128x256xbf16>, %s: memref<1x2xf32>, %y: memref<?x128xbf16>)
    attributes {llm.kernel = #llm.kernel<"linear extra role", roles = [x, weight, weight_scales, out]>, llm.linear_kernel} {
  return
}

// -----

// mla_combine's arguments in the other order: found by role too.
// CHECK-LABEL: func.func @combine_swapped
// CHECK-SAME: llm.gpu_strategy = #llm.gpu_strategy<mla_combine>
func.func @combine_swapped(%parts: memref<128x4x514xf32>, %oh: memref<?x4x512xf32>)
    attributes {llm.kernel = #llm.kernel<"combine swapped", roles = [split_parts, out]>, llm.mla_combine} {
  return
}

// -----

// CHECK-LABEL: func.func @combine_wrong_role
// CHECK-SAME: llm.gpu_strategy = #llm.gpu_strategy<generic>
// expected-remark@+1 {{sm_90: kernel 'combine_wrong_role' keeps the generic kernel: argument roles [out, latent_pool], the builder takes [out, split_parts]}}
func.func @combine_wrong_role(%oh: memref<?x4x512xf32>, %parts: memref<128x4x514xf32>)
    attributes {llm.kernel = #llm.kernel<"combine wrong role", roles = [out, latent_pool]>, llm.mla_combine} {
  return
}
