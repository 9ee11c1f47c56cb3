//===- cts_kernels.cpp - the conformance kernels per backend --------------===//
//
// Part of strata. See cts_kernels.h. The PTX below was checked with CUDA
// 13's `ptxas -arch=sm_90` and `-arch=sm_75`; `.target sm_52` lets every
// driver since CUDA 11 JIT it for its GPU.
//
//===----------------------------------------------------------------------===//

#include "runtime/device/cts/cts_kernels.h"

#include <algorithm>
#include <fstream>
#include <iterator>

#include <dirent.h>
#include <unistd.h>

namespace strata::runtime::cts {
namespace {

// cts_axpb in the gpu_memref_descriptor ABI: 12 parameters (5 per memref,
// then alpha and beta). Generic loads and stores, so host (kHost) buffers
// work as well as device memory.
constexpr char kAxpbPtx[] = R"(
.version 7.0
.target sm_52
.address_size 64

.visible .entry cts_axpb(
    .param .u64 in_allocated, .param .u64 in_aligned, .param .u64 in_offset,
    .param .u64 in_size, .param .u64 in_stride,
    .param .u64 out_allocated, .param .u64 out_aligned, .param .u64 out_offset,
    .param .u64 out_size, .param .u64 out_stride,
    .param .f32 alpha, .param .f32 beta)
{
  .reg .pred %p<2>;
  .reg .b32 %r<4>;
  .reg .b64 %rd<16>;
  .reg .f32 %f<5>;
  ld.param.u64 %rd1, [in_aligned];
  ld.param.u64 %rd2, [in_offset];
  ld.param.u64 %rd3, [in_stride];
  ld.param.u64 %rd4, [out_aligned];
  ld.param.u64 %rd5, [out_offset];
  ld.param.u64 %rd6, [out_size];
  ld.param.u64 %rd7, [out_stride];
  ld.param.f32 %f1, [alpha];
  ld.param.f32 %f2, [beta];
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r2, %ntid.x;
  mov.u32 %r3, %tid.x;
  mul.wide.u32 %rd8, %r1, %r2;
  cvt.u64.u32 %rd9, %r3;
  add.u64 %rd8, %rd8, %rd9;
  setp.ge.u64 %p1, %rd8, %rd6;
  @%p1 bra DONE;
  mad.lo.u64 %rd10, %rd8, %rd3, %rd2;
  shl.b64 %rd10, %rd10, 2;
  add.u64 %rd10, %rd1, %rd10;
  ld.f32 %f3, [%rd10];
  fma.rn.f32 %f4, %f3, %f1, %f2;
  mad.lo.u64 %rd11, %rd8, %rd7, %rd5;
  shl.b64 %rd11, %rd11, 2;
  add.u64 %rd11, %rd4, %rd11;
  st.f32 [%rd11], %f4;
DONE:
  ret;
}
)";

std::string testdataDir() {
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n <= 0)
    return "testdata";
  exe[n] = 0;
  std::string dir(exe);
  return dir.substr(0, dir.rfind('/')) + "/testdata";
}

std::vector<uint8_t> readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

} // namespace

std::vector<CtsBinary> ctsBinaries(const std::string &backend) {
  std::vector<CtsBinary> result;
  if (backend == "cpu") {
    CtsBinary binary{"elf shared object", BinaryFormat::kElfSharedObject,
                     readFile(testdataDir() + "/libstrata_cts_kernels.so")};
    if (!binary.bytes.empty())
      result.push_back(std::move(binary));
  } else if (backend == "cuda") {
    result.push_back(
        {"ptx", BinaryFormat::kCubin,
         std::vector<uint8_t>(kAxpbPtx, kAxpbPtx + sizeof(kAxpbPtx) - 1)});
  } else if (backend == "hip") {
    // Every cts_axpb_<chip>.hsaco CMake built (STRATA_CTS_AMDGPU_CHIPS).
    std::string dir = testdataDir();
    std::vector<std::string> names;
    if (DIR *listing = opendir(dir.c_str())) {
      while (dirent *entry = readdir(listing)) {
        std::string name = entry->d_name;
        if (name.rfind("cts_axpb_", 0) == 0 && name.size() > 6 &&
            name.compare(name.size() - 6, 6, ".hsaco") == 0)
          names.push_back(name);
      }
      closedir(listing);
    }
    std::sort(names.begin(), names.end());
    for (const std::string &name : names) {
      CtsBinary binary{name, BinaryFormat::kHsaco, readFile(dir + "/" + name)};
      if (!binary.bytes.empty())
        result.push_back(std::move(binary));
    }
  }
  return result;
}

KernelSpec ctsAxpbSpec() {
  KernelSpec kernel;
  kernel.name = "axpb";
  kernel.entry_symbol = "cts_axpb";
  kernel.args = {{KernelArgKind::kBuffer, 1, 4},
                 {KernelArgKind::kBuffer, 1, 4},
                 {KernelArgKind::kScalar, 0, 4},
                 {KernelArgKind::kScalar, 0, 4}};
  kernel.launch.block[0] = kCtsBlockSize;
  return kernel;
}

} // namespace strata::runtime::cts
