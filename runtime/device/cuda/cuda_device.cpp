//===- cuda_device.cpp - the CUDA device backend --------------------------===//
//
// Part of strata. See cuda_device.h. The few CUDA driver types and function
// signatures used are declared here (they are part of the driver's stable
// C ABI); versioned entry points (`_v2`) are preferred where the driver has
// them.
//
//===----------------------------------------------------------------------===//

#include "runtime/device/cuda/cuda_device.h"

#include <cstring>

#include "runtime/device/gpu/dynamic_library.h"
#include "runtime/device/gpu/gpu_device.h"

namespace strata::runtime {
namespace {

//===----------------------------------------------------------------------===//
// The CUDA driver ABI subset
//===----------------------------------------------------------------------===//

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUhandle = void *; // CUcontext, CUmodule, CUfunction, CUstream, ...

constexpr CUresult kCudaSuccess = 0;
constexpr CUresult kCudaErrorOutOfMemory = 2;
constexpr CUresult kCudaErrorNoDevice = 100;
constexpr CUresult kCudaErrorInvalidImage = 200;
constexpr CUresult kCudaErrorNoBinaryForGpu = 209;
constexpr CUresult kCudaErrorInvalidPtx = 218;
constexpr CUresult kCudaErrorUnsupportedPtxVersion = 222;
constexpr CUresult kCudaErrorInvalidSource = 300;
constexpr CUresult kCudaErrorNotFound = 500;
constexpr int kCuDeviceAttributeComputeCapabilityMajor = 75;
constexpr int kCuDeviceAttributeComputeCapabilityMinor = 76;
constexpr int kCuFuncAttributeMaxDynamicSharedSizeBytes = 8;
constexpr unsigned kCuStreamNonBlocking = 1;
/// CU_STREAM_WAIT_VALUE_GEQ.
constexpr unsigned kCuStreamWaitValueGeq = 0;
constexpr int kCuStreamCaptureModeThreadLocal = 1;
/// CUmemorytype: the address's space is inferred (unified addressing).
constexpr int kCuMemorytypeUnified = 4;

/// CUDA_MEMCPY2D (v2, cuda.h): the copy's x offsets and y start are 0 and
/// no array is used.
struct CuMemcpy2D {
  size_t srcXInBytes = 0, srcY = 0;
  int srcMemoryType = kCuMemorytypeUnified;
  const void *srcHost = nullptr;
  CUdeviceptr srcDevice = 0;
  void *srcArray = nullptr;
  size_t srcPitch = 0;
  size_t dstXInBytes = 0, dstY = 0;
  int dstMemoryType = kCuMemorytypeUnified;
  void *dstHost = nullptr;
  CUdeviceptr dstDevice = 0;
  void *dstArray = nullptr;
  size_t dstPitch = 0;
  size_t WidthInBytes = 0, Height = 0;
};
static_assert(sizeof(CuMemcpy2D) == 128, "CUDA_MEMCPY2D is 128 bytes");

struct CudaApi {
  CUresult (*cuInit)(unsigned);
  CUresult (*cuGetErrorName)(CUresult, const char **);
  CUresult (*cuGetErrorString)(CUresult, const char **);
  CUresult (*cuDriverGetVersion)(int *);
  CUresult (*cuDeviceGetCount)(int *);
  CUresult (*cuDeviceGet)(CUdevice *, int);
  CUresult (*cuDeviceGetName)(char *, int, CUdevice);
  CUresult (*cuDeviceGetAttribute)(int *, int, CUdevice);
  CUresult (*cuDeviceTotalMem)(size_t *, CUdevice);
  CUresult (*cuDevicePrimaryCtxRetain)(CUhandle *, CUdevice);
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice);
  CUresult (*cuCtxSetCurrent)(CUhandle);
  CUresult (*cuCtxSynchronize)();
  CUresult (*cuMemGetInfo)(size_t *, size_t *);
  CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);
  CUresult (*cuMemFree)(CUdeviceptr);
  CUresult (*cuMemAllocHost)(void **, size_t);
  CUresult (*cuMemFreeHost)(void *);
  CUresult (*cuMemsetD8Async)(CUdeviceptr, unsigned char, size_t, CUhandle);
  CUresult (*cuMemcpyAsync)(CUdeviceptr, CUdeviceptr, size_t, CUhandle);
  CUresult (*cuMemcpy2DAsync)(const CuMemcpy2D *, CUhandle);
  CUresult (*cuStreamCreate)(CUhandle *, unsigned);
  CUresult (*cuStreamDestroy)(CUhandle);
  CUresult (*cuStreamSynchronize)(CUhandle);
  CUresult (*cuStreamWaitEvent)(CUhandle, CUhandle, unsigned);
  CUresult (*cuEventCreate)(CUhandle *, unsigned);
  CUresult (*cuEventDestroy)(CUhandle);
  CUresult (*cuEventRecord)(CUhandle, CUhandle);
  CUresult (*cuEventSynchronize)(CUhandle);
  CUresult (*cuEventElapsedTime)(float *, CUhandle, CUhandle);
  CUresult (*cuStreamBeginCapture)(CUhandle, int);
  CUresult (*cuStreamEndCapture)(CUhandle, CUhandle *);
  CUresult (*cuGraphInstantiateWithFlags)(CUhandle *, CUhandle,
                                          unsigned long long);
  CUresult (*cuGraphLaunch)(CUhandle, CUhandle);
  CUresult (*cuGraphExecDestroy)(CUhandle);
  CUresult (*cuGraphDestroy)(CUhandle);
  CUresult (*cuModuleLoadData)(CUhandle *, const void *);
  CUresult (*cuModuleUnload)(CUhandle);
  CUresult (*cuModuleGetFunction)(CUhandle *, CUhandle, const char *);
  CUresult (*cuFuncSetAttribute)(CUhandle, int, int);
  CUresult (*cuLaunchKernel)(CUhandle, unsigned, unsigned, unsigned, unsigned,
                             unsigned, unsigned, unsigned, CUhandle, void **,
                             void **);
  /// CUDA 11.8+; null when the driver lacks it (no dependent launches).
  CUresult (*cuLaunchKernelEx)(const struct CuLaunchConfig *, CUhandle,
                               void **, void **);
  /// Null when the driver lacks it (no stream holds).
  CUresult (*cuStreamWaitValue32)(CUhandle, CUdeviceptr, uint32_t, unsigned);
};

/// cuda.h's CUlaunchAttribute with the one value strata sets (the union
/// is 64 bytes).
struct CuLaunchAttribute {
  int id;
  char pad[4];
  union {
    char bytes[64];
    int programmatic_stream_serialization_allowed;
  } value;
};
static_assert(sizeof(CuLaunchAttribute) == 72, "CUlaunchAttribute layout");

/// cuda.h's CUlaunchConfig.
struct CuLaunchConfig {
  unsigned grid_x, grid_y, grid_z, block_x, block_y, block_z;
  unsigned shared_memory_bytes;
  CUhandle stream;
  CuLaunchAttribute *attributes;
  unsigned attribute_count;
};
static_assert(sizeof(CuLaunchConfig) == 56, "CUlaunchConfig layout");

/// CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION.
constexpr int kCuLaunchAttributeProgrammaticStreamSerialization = 6;

Status resolveApi(const DynamicLibrary &lib, CudaApi &api) {
#define STRATA_CU(field, ...)                                                  \
  STRATA_RETURN_IF_ERROR(lib.resolve(api.field, {__VA_ARGS__}))
  STRATA_CU(cuInit, "cuInit");
  STRATA_CU(cuGetErrorName, "cuGetErrorName");
  STRATA_CU(cuGetErrorString, "cuGetErrorString");
  STRATA_CU(cuDriverGetVersion, "cuDriverGetVersion");
  STRATA_CU(cuDeviceGetCount, "cuDeviceGetCount");
  STRATA_CU(cuDeviceGet, "cuDeviceGet");
  STRATA_CU(cuDeviceGetName, "cuDeviceGetName");
  STRATA_CU(cuDeviceGetAttribute, "cuDeviceGetAttribute");
  STRATA_CU(cuDeviceTotalMem, "cuDeviceTotalMem_v2", "cuDeviceTotalMem");
  STRATA_CU(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  STRATA_CU(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2",
            "cuDevicePrimaryCtxRelease");
  STRATA_CU(cuCtxSetCurrent, "cuCtxSetCurrent");
  STRATA_CU(cuCtxSynchronize, "cuCtxSynchronize");
  STRATA_CU(cuMemGetInfo, "cuMemGetInfo_v2", "cuMemGetInfo");
  STRATA_CU(cuMemAlloc, "cuMemAlloc_v2", "cuMemAlloc");
  STRATA_CU(cuMemFree, "cuMemFree_v2", "cuMemFree");
  STRATA_CU(cuMemAllocHost, "cuMemAllocHost_v2", "cuMemAllocHost");
  STRATA_CU(cuMemFreeHost, "cuMemFreeHost");
  STRATA_CU(cuMemsetD8Async, "cuMemsetD8Async");
  STRATA_CU(cuMemcpyAsync, "cuMemcpyAsync");
  STRATA_CU(cuMemcpy2DAsync, "cuMemcpy2DAsync_v2");
  STRATA_CU(cuStreamCreate, "cuStreamCreate");
  STRATA_CU(cuStreamDestroy, "cuStreamDestroy_v2", "cuStreamDestroy");
  STRATA_CU(cuStreamSynchronize, "cuStreamSynchronize");
  STRATA_CU(cuStreamWaitEvent, "cuStreamWaitEvent");
  STRATA_CU(cuEventCreate, "cuEventCreate");
  STRATA_CU(cuEventDestroy, "cuEventDestroy_v2", "cuEventDestroy");
  STRATA_CU(cuEventRecord, "cuEventRecord");
  STRATA_CU(cuEventSynchronize, "cuEventSynchronize");
  STRATA_CU(cuEventElapsedTime, "cuEventElapsedTime_v2", "cuEventElapsedTime");
  STRATA_CU(cuStreamBeginCapture, "cuStreamBeginCapture_v2");
  STRATA_CU(cuStreamEndCapture, "cuStreamEndCapture");
  STRATA_CU(cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags");
  STRATA_CU(cuGraphLaunch, "cuGraphLaunch");
  STRATA_CU(cuGraphExecDestroy, "cuGraphExecDestroy");
  STRATA_CU(cuGraphDestroy, "cuGraphDestroy");
  STRATA_CU(cuModuleLoadData, "cuModuleLoadData");
  STRATA_CU(cuModuleUnload, "cuModuleUnload");
  STRATA_CU(cuModuleGetFunction, "cuModuleGetFunction");
  STRATA_CU(cuFuncSetAttribute, "cuFuncSetAttribute");
  STRATA_CU(cuLaunchKernel, "cuLaunchKernel");
#undef STRATA_CU
  // Optional: older drivers launch every kernel plainly.
  if (!lib.resolve(api.cuLaunchKernelEx, {"cuLaunchKernelEx"}).ok())
    api.cuLaunchKernelEx = nullptr;
  if (!lib.resolve(api.cuStreamWaitValue32,
                   {"cuStreamWaitValue32_v2", "cuStreamWaitValue32"})
           .ok())
    api.cuStreamWaitValue32 = nullptr;
  return okStatus();
}

/// "CUDA_ERROR_X (description)" for `result`.
std::string describe(const CudaApi &api, CUresult result) {
  const char *name = nullptr;
  const char *text = nullptr;
  if (api.cuGetErrorName(result, &name) != kCudaSuccess || !name)
    return fmt::format("CUDA error {}", result);
  if (api.cuGetErrorString(result, &text) != kCudaSuccess || !text)
    return name;
  return fmt::format("{} ({})", name, text);
}

Status check(const CudaApi &api, CUresult result, const char *call) {
  if (result == kCudaSuccess)
    return okStatus();
  std::string message = fmt::format("{}: {}", call, describe(api, result));
  switch (result) {
  case kCudaErrorOutOfMemory:
    return Status(StatusCode::kResourceExhausted, std::move(message));
  case kCudaErrorNotFound:
    return Status(StatusCode::kNotFound, std::move(message));
  case kCudaErrorInvalidImage:
  case kCudaErrorNoBinaryForGpu:
  case kCudaErrorInvalidPtx:
  case kCudaErrorUnsupportedPtxVersion:
  case kCudaErrorInvalidSource:
    return Status(StatusCode::kInvalidArgument, std::move(message));
  case kCudaErrorNoDevice:
    return Status(StatusCode::kUnavailable, std::move(message));
  default:
    return Status(StatusCode::kInternal, std::move(message));
  }
}

#define STRATA_CU_CHECK(call) check(api_, api_.call, #call)

/// Whether `data` is PTX text: printable bytes (an optional trailing NUL)
/// containing a `.version` directive.
bool looksLikePtx(const uint8_t *data, size_t size) {
  if (size > 0 && data[size - 1] == 0)
    --size;
  for (size_t i = 0; i < size; ++i)
    if (data[i] == 0 || (data[i] < 0x20 && data[i] != '\n' && data[i] != '\r' &&
                         data[i] != '\t'))
      return false;
  std::string_view text(reinterpret_cast<const char *>(data), size);
  return text.find(".version") != std::string_view::npos;
}

class CudaDriver final : public GpuDriver {
public:
  CudaDriver(CudaApi api, CUdevice device, CUhandle context,
             std::string description, bool dependent_launches)
      : api_(api), device_(device), context_(context),
        description_(std::move(description)),
        dependent_launches_(dependent_launches) {}
  ~CudaDriver() override { api_.cuDevicePrimaryCtxRelease(device_); }

  const char *backendName() const override { return "cuda"; }
  std::string description() const override { return description_; }
  BinaryFormat binaryFormat() const override { return BinaryFormat::kCubin; }

  Status makeCurrent() override {
    return STRATA_CU_CHECK(cuCtxSetCurrent(context_));
  }
  Status memoryInfo(uint64_t &out_free, uint64_t &out_total) override {
    size_t free = 0, total = 0;
    STRATA_RETURN_IF_ERROR(STRATA_CU_CHECK(cuMemGetInfo(&free, &total)));
    out_free = free;
    out_total = total;
    return okStatus();
  }
  Status deviceAlloc(uint64_t size, uint64_t &out_address) override {
    CUdeviceptr address = 0;
    STRATA_RETURN_IF_ERROR(STRATA_CU_CHECK(cuMemAlloc(&address, size)));
    out_address = address;
    return okStatus();
  }
  Status deviceFree(uint64_t address) override {
    return STRATA_CU_CHECK(cuMemFree(address));
  }
  Status hostAlloc(uint64_t size, void *&out_pointer) override {
    return STRATA_CU_CHECK(cuMemAllocHost(&out_pointer, size));
  }
  Status hostFree(void *pointer) override {
    return STRATA_CU_CHECK(cuMemFreeHost(pointer));
  }
  Status memsetZeroAsync(uint64_t address, uint64_t size,
                         void *stream) override {
    return STRATA_CU_CHECK(cuMemsetD8Async(address, 0, size, stream));
  }
  Status memcpyAsync(uint64_t dst, uint64_t src, uint64_t size,
                     void *stream) override {
    // Unified addressing: the driver infers host/device from the pointers.
    return STRATA_CU_CHECK(cuMemcpyAsync(dst, src, size, stream));
  }
  Status memcpy2DAsync(uint64_t dst, uint64_t dst_pitch, uint64_t src,
                       uint64_t src_pitch, uint64_t row_bytes, uint64_t rows,
                       void *stream) override {
    CuMemcpy2D copy;
    copy.srcDevice = src;
    copy.srcPitch = src_pitch;
    copy.dstDevice = dst;
    copy.dstPitch = dst_pitch;
    copy.WidthInBytes = row_bytes;
    copy.Height = rows;
    return STRATA_CU_CHECK(cuMemcpy2DAsync(&copy, stream));
  }
  Status streamWaitValue(void *stream, const void *word,
                         uint32_t value) override {
    if (!api_.cuStreamWaitValue32)
      return unimplemented("the CUDA driver has no cuStreamWaitValue32");
    // Unified addressing: page-locked host memory's pointer is its device
    // address.
    return STRATA_CU_CHECK(
        cuStreamWaitValue32(stream, reinterpret_cast<CUdeviceptr>(word), value,
                            kCuStreamWaitValueGeq));
  }
  Status streamCreate(void *&out_stream) override {
    return STRATA_CU_CHECK(cuStreamCreate(&out_stream, kCuStreamNonBlocking));
  }
  Status streamDestroy(void *stream) override {
    return STRATA_CU_CHECK(cuStreamDestroy(stream));
  }
  Status streamSynchronize(void *stream) override {
    return STRATA_CU_CHECK(cuStreamSynchronize(stream));
  }
  Status streamWaitEvent(void *stream, void *event) override {
    return STRATA_CU_CHECK(cuStreamWaitEvent(stream, event, 0));
  }
  Status eventCreate(void *&out_event) override {
    return STRATA_CU_CHECK(cuEventCreate(&out_event, 0));
  }
  Status eventDestroy(void *event) override {
    return STRATA_CU_CHECK(cuEventDestroy(event));
  }
  Status eventRecord(void *event, void *stream) override {
    return STRATA_CU_CHECK(cuEventRecord(event, stream));
  }
  Status eventSynchronize(void *event) override {
    return STRATA_CU_CHECK(cuEventSynchronize(event));
  }
  Status eventElapsedMillis(void *start, void *end,
                            float &out_millis) override {
    return STRATA_CU_CHECK(cuEventElapsedTime(&out_millis, start, end));
  }
  Status beginCapture(void *stream) override {
    return STRATA_CU_CHECK(
        cuStreamBeginCapture(stream, kCuStreamCaptureModeThreadLocal));
  }
  Status endCapture(void *stream, void *&out_graph) override {
    return STRATA_CU_CHECK(cuStreamEndCapture(stream, &out_graph));
  }
  Status graphInstantiate(void *graph, void *&out_exec) override {
    return STRATA_CU_CHECK(cuGraphInstantiateWithFlags(&out_exec, graph, 0));
  }
  Status graphLaunch(void *exec, void *stream) override {
    return STRATA_CU_CHECK(cuGraphLaunch(exec, stream));
  }
  Status graphExecDestroy(void *exec) override {
    return STRATA_CU_CHECK(cuGraphExecDestroy(exec));
  }
  Status graphDestroy(void *graph) override {
    return STRATA_CU_CHECK(cuGraphDestroy(graph));
  }

  Status moduleLoad(const uint8_t *data, size_t size,
                    void *&out_module) override {
    static const uint8_t kElf[4] = {0x7f, 'E', 'L', 'F'};
    static const uint8_t kFatbin[4] = {0x50, 0xed, 0x55, 0xba};
    static const uint8_t kFatbinWrapper[4] = {0xb1, 0x43, 0x62, 0x46};
    bool binary = size >= 4 && (std::memcmp(data, kElf, 4) == 0 ||
                                std::memcmp(data, kFatbin, 4) == 0 ||
                                std::memcmp(data, kFatbinWrapper, 4) == 0);
    if (binary)
      return STRATA_CU_CHECK(cuModuleLoadData(&out_module, data));
    if (!looksLikePtx(data, size))
      return invalidArgument(
          "kernel binary is not a cubin, fatbin or PTX module");
    // PTX is loaded as a NUL-terminated string.
    std::string ptx(reinterpret_cast<const char *>(data), size);
    if (ptx.back() != '\0')
      ptx.push_back('\0');
    return STRATA_CU_CHECK(cuModuleLoadData(&out_module, ptx.data()));
  }
  Status moduleUnload(void *module) override {
    return STRATA_CU_CHECK(cuModuleUnload(module));
  }
  Status moduleGetFunction(void *module, const std::string &name,
                           void *&out_function) override {
    return STRATA_CU_CHECK(
        cuModuleGetFunction(&out_function, module, name.c_str()));
  }
  Status prepareFunction(void *function, const LaunchDims &launch) override {
    // Static and dynamic shared memory together past 48 KiB need the
    // per-function opt-in, and the static bytes are the binary's: every
    // kernel with dynamic shared memory opts in to exactly its bytes.
    if (launch.shared_memory_bytes == 0)
      return okStatus();
    if (launch.shared_memory_bytes > INT32_MAX)
      return invalidArgument("{} bytes of dynamic shared memory",
                             launch.shared_memory_bytes);
    return STRATA_CU_CHECK(
        cuFuncSetAttribute(function, kCuFuncAttributeMaxDynamicSharedSizeBytes,
                           static_cast<int>(launch.shared_memory_bytes)));
  }
  Status launch(void *function, const uint32_t grid[3],
                const LaunchDims &launch, void *stream, void **params,
                bool dependent) override {
    if (launch.shared_memory_bytes > UINT32_MAX)
      return invalidArgument("{} bytes of dynamic shared memory",
                             launch.shared_memory_bytes);
    if (dependent && dependent_launches_ && api_.cuLaunchKernelEx) {
      CuLaunchAttribute attribute{};
      attribute.id = kCuLaunchAttributeProgrammaticStreamSerialization;
      attribute.value.programmatic_stream_serialization_allowed = 1;
      CuLaunchConfig config{grid[0],
                            grid[1],
                            grid[2],
                            launch.block[0],
                            launch.block[1],
                            launch.block[2],
                            static_cast<unsigned>(launch.shared_memory_bytes),
                            stream,
                            &attribute,
                            1};
      return STRATA_CU_CHECK(
          cuLaunchKernelEx(&config, function, params, nullptr));
    }
    return STRATA_CU_CHECK(cuLaunchKernel(
        function, grid[0], grid[1], grid[2], launch.block[0], launch.block[1],
        launch.block[2], static_cast<unsigned>(launch.shared_memory_bytes),
        stream, params, nullptr));
  }
  Status contextSynchronize() override {
    return STRATA_CU_CHECK(cuCtxSynchronize());
  }

private:
  CudaApi api_;
  CUdevice device_;
  CUhandle context_;
  std::string description_;
  /// CudaDeviceOptions::dependent_launches.
  bool dependent_launches_;
};

} // namespace

StatusOr<std::unique_ptr<Device>>
createCudaDevice(const CudaDeviceOptions &options) {
  std::string library =
      options.library.empty() ? "libcuda.so.1" : options.library;
  STRATA_ASSIGN_OR_RETURN(DynamicLibrary lib,
                          DynamicLibrary::open({library}, "no CUDA driver"));
  CudaApi api{};
  Status resolved = resolveApi(lib, api);
  if (!resolved.ok())
    return resolved.withContext("unusable CUDA driver");
  CUresult result = api.cuInit(0);
  if (result != kCudaSuccess)
    return unavailable("no GPU: cuInit: {}", describe(api, result));
  int count = 0;
  result = api.cuDeviceGetCount(&count);
  if (result != kCudaSuccess)
    return unavailable("no GPU: cuDeviceGetCount: {}", describe(api, result));
  if (count == 0)
    return unavailable("no GPU: the CUDA driver reports no device");
  STRATA_ASSIGN_OR_RETURN(
      int ordinal, resolveDeviceOrdinal("cuda", options.ordinal,
                                        options.ordinal_modulo_count, count));
  CUdevice device = 0;
  STRATA_RETURN_IF_ERROR(
      check(api, api.cuDeviceGet(&device, ordinal), "cuDeviceGet"));
  char name[256] = {};
  STRATA_RETURN_IF_ERROR(
      check(api, api.cuDeviceGetName(name, sizeof(name) - 1, device),
            "cuDeviceGetName"));
  int major = 0, minor = 0, version = 0;
  size_t total = 0;
  STRATA_RETURN_IF_ERROR(
      check(api,
            api.cuDeviceGetAttribute(
                &major, kCuDeviceAttributeComputeCapabilityMajor, device),
            "cuDeviceGetAttribute"));
  STRATA_RETURN_IF_ERROR(
      check(api,
            api.cuDeviceGetAttribute(
                &minor, kCuDeviceAttributeComputeCapabilityMinor, device),
            "cuDeviceGetAttribute"));
  STRATA_RETURN_IF_ERROR(
      check(api, api.cuDeviceTotalMem(&total, device), "cuDeviceTotalMem"));
  STRATA_RETURN_IF_ERROR(
      check(api, api.cuDriverGetVersion(&version), "cuDriverGetVersion"));
  CUhandle context = nullptr;
  STRATA_RETURN_IF_ERROR(check(api,
                               api.cuDevicePrimaryCtxRetain(&context, device),
                               "cuDevicePrimaryCtxRetain"));
  std::string description =
      fmt::format("{} (sm_{}{}, {:.1f} GiB, driver {}.{})", name, major, minor,
                  static_cast<double>(total) / (1ull << 30), version / 1000,
                  version % 1000 / 10);
  auto driver = std::make_unique<CudaDriver>(
      api, device, context, std::move(description), options.dependent_launches);
  return createGpuDevice(std::move(driver));
}

} // namespace strata::runtime
