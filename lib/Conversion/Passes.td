//===- Passes.td - strata conversion passes ----------------*- tablegen -*-===//
//
// Part of strata, under the Apache License v2.0.
//
// Every convert-<a>-to-<b> pass of strata. Each pass is a thin driver over
// the populate*Patterns functions of its folder (lib/Conversion/<A>To<B>/
// Patterns.h).
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_LIB_CONVERSION_PASSES_TD
#define STRATA_LIB_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertLLMToKernelPass : Pass<"convert-llm-to-kernel", "ModuleOp"> {
  let summary = "outline every llm op into a kernel function over memrefs";
  let description = [{
    Rewrites every compute and cache op of the `llm` dialect into a
    `func.call` of an outlined kernel function in destination-passing style:
    the kernel takes one memref per operand and one per result (results are
    `memref.alloc`ed by the caller) and returns nothing. Kernel bodies are
    upstream linalg / scf / arith / math / memref; static dimensions come
    from the op's types and attributes, the token count stays dynamic.
    Identical ops (same name, attributes and types) share one kernel.

    Weights (`llm.weight`, `llm.expert_weights`) become `memref.get_global`
    of a `memref.global` named after the checkpoint tensor (an existing
    global of that name is reused, which lets tests give weights values);
    an fp8 weight is two globals, the data and `<...>weight_scale_inv`.
    Cache values become memrefs (layouts in docs/Lowering.md) updated in
    place; function signatures are converted accordingly. Tensors that stay
    in upstream ops are bridged with `bufferization.to_buffer` /
    `bufferization.to_tensor`, so `one-shot-bufferize` runs next.

    Before:
    ```mlir
    %y = llm.rms_norm %x {eps = 1.0e-05 : f32} : (tensor<?x64xf32>) -> tensor<?x64xf32>
    ```
    After:
    ```mlir
    %xm = bufferization.to_buffer %x : tensor<?x64xf32> to memref<?x64xf32>
    %ym = memref.alloc(%t) : memref<?x64xf32>
    call @rms_norm_0(%xm, %ym) : (memref<?x64xf32>, memref<?x64xf32>) -> ()
    %y = bufferization.to_tensor %ym restrict writable : memref<?x64xf32> to tensor<?x64xf32>
    ```
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::bufferization::BufferizationDialect",
    "::mlir::func::FuncDialect", "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect", "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect",
    // #llm.kernel on the outlined functions.
    "::mlir::strata::llm::LLMDialect"
  ];
}

def ConvertMemRefCopyToLinalgPass
    : Pass<"convert-memref-copy-to-linalg", "func::FuncOp"> {
  let summary = "rewrite memref.copy as linalg.copy (loops, no runtime call)";
  let description = [{
    Bufferization materializes copies as `memref.copy`, which the LLVM
    lowering turns into a call of `memrefCopy` from MLIR's C runner utils
    whenever a side is strided. Kernels in an artifact link against libc
    and libm only, so the target phase rewrites every copy as `linalg.copy`,
    which `convert-linalg-to-loops` turns into a loop nest.

    ```mlir
    memref.copy %a, %b : memref<?x256xf32> to memref<?x256xf32, strided<[512, 1]>>
    // becomes
    linalg.copy ins(%a : memref<?x256xf32>) outs(%b : memref<?x256xf32, strided<[512, 1]>>)
    ```
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
}

def ConvertLLMToGPUPass : Pass<"convert-llm-to-gpu", "ModuleOp"> {
  let summary = "lower the hot llm ops to GPU kernels on the matrix units";
  let description = [{
    Replaces each `llm.linear` whose shapes tile on the target (rank-2 bf16
    `x`, bf16 or fp8 block-scaled weight) by a `gpu.launch_func` of a tiled
    matmul kernel built in `gpu.module @strata_kernels` (one kernel per
    distinct weight shape and kind). The kernel uses the target's matrix
    instructions (`amdgpu.mfma` on gfx942/gfx950, `nvvm.mma.sync` on sm_90),
    chosen from TargetInfo by one shared tiling description
    (lib/Conversion/LLMToGPU/MatmulTiling.h). Operands are bridged with
    `bufferization.to_buffer` / `to_tensor`, as in convert-llm-to-kernel,
    which runs next and lowers every op left. docs/GPULowering.md.

    ```mlir
    %y = llm.linear %x, %w : (tensor<?x256xbf16>, tensor<128x256xbf16>) -> tensor<?x128xbf16>
    ```
    becomes
    ```mlir
    gpu.launch_func @strata_kernels::@linear_bf16_128x256_bf16
        blocks in (%gx, %c2, %c1) threads in (%c256, %c1, %c1)
        args(%xm : memref<?x256xbf16>, %wm : memref<128x256xbf16>, %ym : memref<?x128xbf16>)
    ```
  }];
  let options = [
    Option<"chip", "chip", "std::string", "\"gfx942\"",
           "GPU chip: gfx942, gfx950, sm_90 or sm_90a">
  ];
  let dependentDialects = [
    "::mlir::amdgpu::AMDGPUDialect", "::mlir::arith::ArithDialect",
    "::mlir::bufferization::BufferizationDialect", "::mlir::gpu::GPUDialect",
    "::mlir::LLVM::LLVMDialect", "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect", "::mlir::NVVM::NVVMDialect",
    "::mlir::nvgpu::NVGPUDialect",
    "::mlir::scf::SCFDialect", "::mlir::vector::VectorDialect"
  ];
}

def SelectKernelStrategyPass : Pass<"select-kernel-strategy", "ModuleOp"> {
  let summary = "choose how a GPU target builds each llm.kernel function";
  let description = [{
    For the TargetInfo of `chip`, marks every `llm.kernel` function with
    `llm.gpu_strategy` (a `#llm.gpu_strategy`), the builder that makes its
    GPU kernel: `tiled_matmul` (linears, lm_head's logits, o_proj with mHC's
    residual write), `grouped_experts` (moe_up / moe_down), `dense_matmul`
    (the dense projections, MLA's absorb / project), `mla_attend`,
    `mla_combine`, `moe_select`, `kda_chunk`, `kpool_scores`,
    `kpool_select`, `mhc_mix`, `mhc_pre` — each a matrix-unit builder of
    lib/Conversion/LLMToGPU that accepted the function (it is built once
    into a scratch module; the builders read the arguments by the roles of
    the function's `#llm.kernel`, and a function without roles keeps the
    generic kernel) — else `generic` (convert-kernels-to-gpu's rows over the grid and threads
    within a row). A `_rows` twin (`llm.rows_twin`) of a matrix kernel that
    takes every step size (it has a decode form) is marked `empty_twin`.
    With `remarks`, each kernel a builder declines gets a remark with the
    builder's reason, and each emptied twin one saying why. Kernels whose
    strategy is in `generic-strategies` keep the generic kernel (a remark
    says so).

    ```mlir
    func.func @linear_3(%x: memref<?x256xbf16>, %w: memref<2x256xbf16>, %y: memref<?x2xbf16>)
        attributes {llm.kernel = #llm.kernel<"...", roles = [x, weight, out]>,
                    llm.linear_kernel}
    ```
    becomes (sm_90: N = 2 does not tile)
    ```mlir
    func.func @linear_3(...) attributes {llm.gpu_strategy = #llm.gpu_strategy<generic>, ...}
    ```
  }];
  let options = [
    Option<"chip", "chip", "std::string", "\"sm_90\"",
           "GPU chip: gfx942, gfx950, sm_90 or sm_90a">,
    Option<"remarks", "remarks", "bool", "false",
           "A remark for every declined kernel and every emptied twin">,
    ListOption<"genericStrategies", "generic-strategies", "std::string",
               "Strategies whose kernels keep the generic kernel (A/B "
               "timing, bisecting)">
  ];
  let dependentDialects = [
    "::mlir::amdgpu::AMDGPUDialect", "::mlir::arith::ArithDialect",
    "::mlir::gpu::GPUDialect", "::mlir::LLVM::LLVMDialect",
    "::mlir::math::MathDialect", "::mlir::memref::MemRefDialect",
    "::mlir::NVVM::NVVMDialect", "::mlir::nvgpu::NVGPUDialect",
    "::mlir::scf::SCFDialect", "::mlir::vector::VectorDialect"
  ];
}

def BuildStrategyKernelsPass : Pass<"build-strategy-kernels", "ModuleOp"> {
  let summary = "build each llm.kernel function's GPU kernel by its strategy";
  let description = [{
    After `select-kernel-strategy` on the same `chip`: every function whose
    `llm.gpu_strategy` names a matrix-unit or SIMT builder becomes a
    `gpu.func` of the same name and arguments in the `strata_kernels`
    `gpu.module`, built by that strategy's builder (one per strategy,
    `buildKernelByStrategy`), which records the grid it chose
    (`strata.matrix_grid`, LaunchGridAttr.h) beside its matrix instruction
    (`strata.mma`); the function is erased. An `empty_twin`
    keeps an empty body; `generic` functions stay for
    `convert-kernels-to-gpu`. A builder that refuses a function it accepted
    during the selection is an error naming its reason.

    ```mlir
    func.func @linear_0(%x: memref<?x256xbf16>, %w: memref<128x256xbf16>, %y: memref<?x128xbf16>)
        attributes {llm.gpu_strategy = #llm.gpu_strategy<tiled_matmul>, ...}
    ```
    becomes
    ```mlir
    gpu.module @strata_kernels {
      gpu.func @linear_0(%x: memref<?x256xbf16>, ...) kernel
          attributes {strata.matrix_grid = [...], strata.mma = "...", ...}
    }
    ```
  }];
  let options = [
    Option<"chip", "chip", "std::string", "\"sm_90\"",
           "GPU chip: gfx942, gfx950, sm_90 or sm_90a">
  ];
  let dependentDialects = [
    "::mlir::amdgpu::AMDGPUDialect", "::mlir::arith::ArithDialect",
    "::mlir::gpu::GPUDialect", "::mlir::LLVM::LLVMDialect",
    "::mlir::math::MathDialect", "::mlir::memref::MemRefDialect",
    "::mlir::NVVM::NVVMDialect", "::mlir::nvgpu::NVGPUDialect",
    "::mlir::scf::SCFDialect", "::mlir::vector::VectorDialect"
  ];
}

def ConvertKernelsToGPUPass : Pass<"convert-kernels-to-gpu", "ModuleOp"> {
  let summary = "turn every outlined llm.kernel function into a GPU kernel";
  let description = [{
    Moves each `func.func` with the `llm.kernel` attribute (the output of
    convert-llm-to-kernel: scf loops over memrefs) into
    `gpu.module @strata_kernels` as a `gpu.func` kernel, with its outermost
    parallel loop spread over the grid and, given a `chip`, the threads of a
    block sharing the work of a row:

    1. A temporary allocation whose last use copies it into an output
       argument (linalg results, `tensor.concat`) is replaced by that output.
    2. linalg and `memref.copy` become `scf.parallel` loops; adjacent equal
       loops are fused (`scf-parallel-loop-fusion`).
    3. The last top-level loop (`scf.for` without results, or `scf.parallel`
       without reductions) is the row loop: block b of the grid runs
       iterations b, b + gridDim, ... of each of its (at most 3) dimensions
       (a grid-stride loop, correct for any grid). What precedes it (scratch
       allocation and initialisation) runs in every block; it may only
       write memory the kernel allocates. Kernels of another shape (several
       loops writing arguments, loop-carried values) run on one block.
    4. Static scratch allocations up to 32 KiB in total become private
       memory (`memref.alloca`); larger or dynamic ones become views
       (`memref.view`) into the block's slice of a global scratch buffer,
       a new last kernel argument `memref<?xi8>`: block
       `x + gridDim.x * (y + gridDim.y * z)` owns bytes `[id * S, (id + 1)
       * S)` with `S = dim(scratch, 0) / (gridDim.x * gridDim.y *
       gridDim.z)`. Such allocations must be at kernel scope with sizes
       that are expressions of argument extents (else an error).
    5. With `chip`: blocks of 4 subgroups (128 threads on NVIDIA, 256 on
       AMD). Independent loops inside the row (scf.parallel, scf.for whose
       iterations write disjoint elements) are distributed over the threads,
       loops that store and reduce are split into the two, reductions that
       every thread runs become strided partials + `gpu.all_reduce`, loops
       around distributed ones stay serial in every thread, code writing memory
       between them runs on thread 0 (its scalar results broadcast through
       workgroup memory), gpu.barrier before and after each phase that
       writes, and scratch that threads share becomes workgroup memory
       (ThreadMapping.h). Scratch left for the global buffer is one slice per
       block, shared by its threads (the slicing runs after this step). A
       kernel that needs more workgroup memory than the chip allows
       statically keeps one thread per block and says why in
       `strata.single_thread`. Without `chip` every kernel has one thread.

    Each kernel gets `strata.grid`: per grid dimension x/y/z, `[-1, n]` for
    n blocks or `[a, d]` for extent d of argument a (the artifact emitter
    turns it into a size expression of the dispatch's binding). A kernel
    with a scratch argument gets `strata.scratch`: its bytes per block as a
    postfix program over constants and argument extents (KernelToGPU.h).
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::gpu::GPUDialect",
    "::mlir::linalg::LinalgDialect", "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect"
  ];
  let options = [
    Option<"chip", "chip", "std::string", "\"\"",
           "GPU chip (gfx942, gfx950, sm_90, sm_90a) whose subgroup size and "
           "shared memory set the block; empty: one thread per block">,
    Option<"unroll", "unroll", "bool", "true",
           "unroll each thread's strided loops with their loads first "
           "(ThreadMapping.h); off: the mapping alone, as its tests check it">
  ];
}

def NarrowKernelSumsPass : Pass<"narrow-kernel-sums", "ModuleOp"> {
  let summary = "sum in f32 where the kernels sum in f64 (GPU targets)";
  let description = [{
    fp32 mode's kernels accumulate their matmul-form sums in f64
    (`dotAccumulatorType`, docs/Lowering.md "Accumulators"): on the CPU that
    makes a sharded step match one rank's within 4.5e-7. f64 arithmetic runs
    at a small fraction of the f32 rate on GPUs, so before the GPU kernels
    are built every `llm.kernel` function's f64 values become f32: f64
    results, block arguments and memref / vector element types are
    narrowed in place, f64 constants rebuilt as f32, and the `arith.extf` /
    `arith.truncf` between f32 and f64 dropped. The kernels then sum in f32
    exactly as they did before the f64 accumulators existed; the fp32
    goldens' bounds hold on the GPU with f32 sums. f64 in a kernel's
    signature is an error (kernel arguments keep their artifact types).

    Before:
    ```mlir
    %zero = arith.constant 0.0 : f64
    %s = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero) -> (f64) {
      %v = memref.load %x[%i] : memref<?xf32>
      %w = arith.extf %v : f32 to f64
      %a = arith.addf %acc, %w : f64
      scf.yield %a : f64
    }
    %r = arith.truncf %s : f64 to f32
    ```
    After:
    ```mlir
    %zero = arith.constant 0.0 : f32
    %s = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero) -> (f32) {
      %v = memref.load %x[%i] : memref<?xf32>
      %a = arith.addf %acc, %v : f32
      scf.yield %a : f32
    }
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def StripLLMAttributesPass : Pass<"strip-llm-attributes", "ModuleOp"> {
  let summary = "drop the llm dialect's attributes from every op";
  let description = [{
    Removes every discardable attribute whose value is an `llm` dialect
    attribute (the kernel contract `#llm.kernel`, `#llm.gpu_strategy`, ...)
    from every op of the module. The CPU pipeline ends with it: its LLVM
    dialect output is read by upstream tools (mlir-runner, mlir-translate)
    that do not load the llm dialect, and nothing after the kernel phase
    reads the contract.
  }];
}

def PrintKernelPlanPass : Pass<"strata-print-kernel-plan", "ModuleOp"> {
  let summary = "print the kernel plan of every step function (kernel phase)";
  let description = [{
    Runs extractKernelPlan (LLMToKernel/KernelPlan.h) on every function of
    the module that has a body and is not a kernel, and prints its buffers,
    weights, caches and dispatches to stdout: what the artifact writer
    serializes as an ExecutionPlan. Fails on a step that contains an op
    outside the kernels. Used by test/Pipelines.

    ```
    plan @decode
    buffer 0 arg0 input i32 [arg0.0]
    weight 0 model.embed_tokens.weight
    dispatch embedding_0(buffer 0[arg0.0], weight 0[16, 8], buffer 1[arg0.0, 8])
    ```
  }];
}

#endif // STRATA_LIB_CONVERSION_PASSES_TD
