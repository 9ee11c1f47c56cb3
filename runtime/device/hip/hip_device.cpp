//===- hip_device.cpp - the HIP device backend ----------------------------===//
//
// Part of strata. See hip_device.h. The few HIP types and function
// signatures used are declared here (hip_runtime_api.h's C ABI, stable since
// ROCm 4.3); no ROCm header is needed.
//
//===----------------------------------------------------------------------===//

#include "runtime/device/hip/hip_device.h"

#include <cstring>

#include "runtime/device/gpu/dynamic_library.h"
#include "runtime/device/gpu/gpu_device.h"

namespace strata::runtime {
namespace {

//===----------------------------------------------------------------------===//
// The HIP runtime ABI subset
//===----------------------------------------------------------------------===//

using hipError = int;
using HipHandle = void *; // hipStream_t, hipEvent_t, hipModule_t, ...

constexpr hipError kHipSuccess = 0;
constexpr hipError kHipErrorOutOfMemory = 2;
constexpr hipError kHipErrorNoDevice = 100;
constexpr hipError kHipErrorInvalidImage = 200;
constexpr hipError kHipErrorNoBinaryForGpu = 209;
constexpr hipError kHipErrorInvalidKernelFile = 218;
constexpr hipError kHipErrorNotFound = 500;
constexpr int kHipMemcpyDefault = 4;
constexpr unsigned kHipStreamNonBlocking = 1;
/// hipStreamWaitValueGte.
constexpr unsigned kHipStreamWaitValueGte = 0;
constexpr unsigned kHipHostMallocDefault = 0;
constexpr int kHipStreamCaptureModeThreadLocal = 1;

struct HipApi {
  hipError (*hipInit)(unsigned);
  const char *(*hipGetErrorName)(hipError);
  const char *(*hipGetErrorString)(hipError);
  hipError (*hipRuntimeGetVersion)(int *);
  hipError (*hipGetDeviceCount)(int *);
  hipError (*hipSetDevice)(int);
  hipError (*hipDeviceGetName)(char *, int, int);
  hipError (*hipDeviceTotalMem)(size_t *, int);
  hipError (*hipDeviceSynchronize)();
  hipError (*hipMemGetInfo)(size_t *, size_t *);
  hipError (*hipMalloc)(void **, size_t);
  hipError (*hipFree)(void *);
  hipError (*hipHostMalloc)(void **, size_t, unsigned);
  hipError (*hipHostFree)(void *);
  hipError (*hipMemsetAsync)(void *, int, size_t, HipHandle);
  hipError (*hipMemcpyAsync)(void *, const void *, size_t, int, HipHandle);
  hipError (*hipMemcpy2DAsync)(void *, size_t, const void *, size_t, size_t,
                               size_t, int, HipHandle);
  hipError (*hipStreamCreateWithFlags)(HipHandle *, unsigned);
  hipError (*hipStreamDestroy)(HipHandle);
  hipError (*hipStreamSynchronize)(HipHandle);
  hipError (*hipStreamWaitEvent)(HipHandle, HipHandle, unsigned);
  hipError (*hipEventCreate)(HipHandle *);
  hipError (*hipEventDestroy)(HipHandle);
  hipError (*hipEventRecord)(HipHandle, HipHandle);
  hipError (*hipEventSynchronize)(HipHandle);
  hipError (*hipEventElapsedTime)(float *, HipHandle, HipHandle);
  hipError (*hipStreamBeginCapture)(HipHandle, int);
  hipError (*hipStreamEndCapture)(HipHandle, HipHandle *);
  hipError (*hipGraphInstantiate)(HipHandle *, HipHandle, HipHandle *, char *,
                                  size_t);
  hipError (*hipGraphLaunch)(HipHandle, HipHandle);
  hipError (*hipGraphExecDestroy)(HipHandle);
  hipError (*hipGraphDestroy)(HipHandle);
  hipError (*hipModuleLoadData)(HipHandle *, const void *);
  hipError (*hipModuleUnload)(HipHandle);
  hipError (*hipModuleGetFunction)(HipHandle *, HipHandle, const char *);
  hipError (*hipModuleLaunchKernel)(HipHandle, unsigned, unsigned, unsigned,
                                    unsigned, unsigned, unsigned, unsigned,
                                    HipHandle, void **, void **);
  /// Null when the runtime lacks it (no stream holds).
  hipError (*hipStreamWaitValue32)(HipHandle, void *, uint32_t, unsigned,
                                   uint32_t);
};

Status resolveApi(const DynamicLibrary &lib, HipApi &api) {
#define STRATA_HIP(field)                                                      \
  STRATA_RETURN_IF_ERROR(lib.resolve(api.field, {#field}))
  STRATA_HIP(hipInit);
  STRATA_HIP(hipGetErrorName);
  STRATA_HIP(hipGetErrorString);
  STRATA_HIP(hipRuntimeGetVersion);
  STRATA_HIP(hipGetDeviceCount);
  STRATA_HIP(hipSetDevice);
  STRATA_HIP(hipDeviceGetName);
  STRATA_HIP(hipDeviceTotalMem);
  STRATA_HIP(hipDeviceSynchronize);
  STRATA_HIP(hipMemGetInfo);
  STRATA_HIP(hipMalloc);
  STRATA_HIP(hipFree);
  STRATA_HIP(hipHostMalloc);
  STRATA_HIP(hipHostFree);
  STRATA_HIP(hipMemsetAsync);
  STRATA_HIP(hipMemcpyAsync);
  STRATA_HIP(hipMemcpy2DAsync);
  STRATA_HIP(hipStreamCreateWithFlags);
  STRATA_HIP(hipStreamDestroy);
  STRATA_HIP(hipStreamSynchronize);
  STRATA_HIP(hipStreamWaitEvent);
  STRATA_HIP(hipEventCreate);
  STRATA_HIP(hipEventDestroy);
  STRATA_HIP(hipEventRecord);
  STRATA_HIP(hipEventSynchronize);
  STRATA_HIP(hipEventElapsedTime);
  STRATA_HIP(hipStreamBeginCapture);
  STRATA_HIP(hipStreamEndCapture);
  STRATA_HIP(hipGraphInstantiate);
  STRATA_HIP(hipGraphLaunch);
  STRATA_HIP(hipGraphExecDestroy);
  STRATA_HIP(hipGraphDestroy);
  STRATA_HIP(hipModuleLoadData);
  STRATA_HIP(hipModuleUnload);
  STRATA_HIP(hipModuleGetFunction);
  STRATA_HIP(hipModuleLaunchKernel);
#undef STRATA_HIP
  if (!lib.resolve(api.hipStreamWaitValue32, {"hipStreamWaitValue32"}).ok())
    api.hipStreamWaitValue32 = nullptr;
  return okStatus();
}

/// "hipErrorX (description)" for `result`.
std::string describe(const HipApi &api, hipError result) {
  const char *name = api.hipGetErrorName(result);
  const char *text = api.hipGetErrorString(result);
  if (!name)
    return fmt::format("HIP error {}", result);
  if (!text || std::strcmp(name, text) == 0)
    return name;
  return fmt::format("{} ({})", name, text);
}

Status check(const HipApi &api, hipError result, const char *call) {
  if (result == kHipSuccess)
    return okStatus();
  std::string message = fmt::format("{}: {}", call, describe(api, result));
  switch (result) {
  case kHipErrorOutOfMemory:
    return Status(StatusCode::kResourceExhausted, std::move(message));
  case kHipErrorNotFound:
    return Status(StatusCode::kNotFound, std::move(message));
  case kHipErrorInvalidImage:
  case kHipErrorNoBinaryForGpu:
  case kHipErrorInvalidKernelFile:
    return Status(StatusCode::kInvalidArgument, std::move(message));
  case kHipErrorNoDevice:
    return Status(StatusCode::kUnavailable, std::move(message));
  default:
    return Status(StatusCode::kInternal, std::move(message));
  }
}

#define STRATA_HIP_CHECK(call) check(api_, api_.call, #call)

void *pointerOf(uint64_t address) { return reinterpret_cast<void *>(address); }

class HipDriver final : public GpuDriver {
public:
  HipDriver(HipApi api, int ordinal, std::string description)
      : api_(api), ordinal_(ordinal), description_(std::move(description)) {}

  const char *backendName() const override { return "hip"; }
  std::string description() const override { return description_; }
  BinaryFormat binaryFormat() const override { return BinaryFormat::kHsaco; }

  Status makeCurrent() override {
    return STRATA_HIP_CHECK(hipSetDevice(ordinal_));
  }
  Status memoryInfo(uint64_t &out_free, uint64_t &out_total) override {
    size_t free = 0, total = 0;
    STRATA_RETURN_IF_ERROR(STRATA_HIP_CHECK(hipMemGetInfo(&free, &total)));
    out_free = free;
    out_total = total;
    return okStatus();
  }
  Status deviceAlloc(uint64_t size, uint64_t &out_address) override {
    void *pointer = nullptr;
    STRATA_RETURN_IF_ERROR(STRATA_HIP_CHECK(hipMalloc(&pointer, size)));
    out_address = reinterpret_cast<uint64_t>(pointer);
    return okStatus();
  }
  Status deviceFree(uint64_t address) override {
    return STRATA_HIP_CHECK(hipFree(pointerOf(address)));
  }
  Status hostAlloc(uint64_t size, void *&out_pointer) override {
    return STRATA_HIP_CHECK(
        hipHostMalloc(&out_pointer, size, kHipHostMallocDefault));
  }
  Status hostFree(void *pointer) override {
    return STRATA_HIP_CHECK(hipHostFree(pointer));
  }
  Status memsetZeroAsync(uint64_t address, uint64_t size,
                         void *stream) override {
    return STRATA_HIP_CHECK(
        hipMemsetAsync(pointerOf(address), 0, size, stream));
  }
  Status memcpyAsync(uint64_t dst, uint64_t src, uint64_t size,
                     void *stream) override {
    return STRATA_HIP_CHECK(hipMemcpyAsync(pointerOf(dst), pointerOf(src), size,
                                           kHipMemcpyDefault, stream));
  }
  Status memcpy2DAsync(uint64_t dst, uint64_t dst_pitch, uint64_t src,
                       uint64_t src_pitch, uint64_t row_bytes, uint64_t rows,
                       void *stream) override {
    return STRATA_HIP_CHECK(hipMemcpy2DAsync(pointerOf(dst), dst_pitch,
                                             pointerOf(src), src_pitch,
                                             row_bytes, rows,
                                             kHipMemcpyDefault, stream));
  }
  Status streamCreate(void *&out_stream) override {
    return STRATA_HIP_CHECK(
        hipStreamCreateWithFlags(&out_stream, kHipStreamNonBlocking));
  }
  Status streamDestroy(void *stream) override {
    return STRATA_HIP_CHECK(hipStreamDestroy(stream));
  }
  Status streamSynchronize(void *stream) override {
    return STRATA_HIP_CHECK(hipStreamSynchronize(stream));
  }
  Status streamWaitEvent(void *stream, void *event) override {
    return STRATA_HIP_CHECK(hipStreamWaitEvent(stream, event, 0));
  }
  Status streamWaitValue(void *stream, const void *word,
                         uint32_t value) override {
    if (!api_.hipStreamWaitValue32)
      return unimplemented("the HIP runtime has no hipStreamWaitValue32");
    // hipHostMalloc memory is mapped: its pointer is its device address.
    return STRATA_HIP_CHECK(
        hipStreamWaitValue32(stream, const_cast<void *>(word), value,
                             kHipStreamWaitValueGte, 0xffffffffu));
  }
  Status eventCreate(void *&out_event) override {
    return STRATA_HIP_CHECK(hipEventCreate(&out_event));
  }
  Status eventDestroy(void *event) override {
    return STRATA_HIP_CHECK(hipEventDestroy(event));
  }
  Status eventRecord(void *event, void *stream) override {
    return STRATA_HIP_CHECK(hipEventRecord(event, stream));
  }
  Status eventSynchronize(void *event) override {
    return STRATA_HIP_CHECK(hipEventSynchronize(event));
  }
  Status eventElapsedMillis(void *start, void *end,
                            float &out_millis) override {
    return STRATA_HIP_CHECK(hipEventElapsedTime(&out_millis, start, end));
  }
  Status beginCapture(void *stream) override {
    return STRATA_HIP_CHECK(
        hipStreamBeginCapture(stream, kHipStreamCaptureModeThreadLocal));
  }
  Status endCapture(void *stream, void *&out_graph) override {
    return STRATA_HIP_CHECK(hipStreamEndCapture(stream, &out_graph));
  }
  Status graphInstantiate(void *graph, void *&out_exec) override {
    return STRATA_HIP_CHECK(
        hipGraphInstantiate(&out_exec, graph, nullptr, nullptr, 0));
  }
  Status graphLaunch(void *exec, void *stream) override {
    return STRATA_HIP_CHECK(hipGraphLaunch(exec, stream));
  }
  Status graphExecDestroy(void *exec) override {
    return STRATA_HIP_CHECK(hipGraphExecDestroy(exec));
  }
  Status graphDestroy(void *graph) override {
    return STRATA_HIP_CHECK(hipGraphDestroy(graph));
  }
  Status moduleLoad(const uint8_t *data, size_t size,
                    void *&out_module) override {
    static const char kBundle[] = "__CLANG_OFFLOAD_BUNDLE__";
    bool elf = size >= 4 && std::memcmp(data,
                                        "\x7f"
                                        "ELF",
                                        4) == 0;
    bool bundle = size >= sizeof(kBundle) - 1 &&
                  std::memcmp(data, kBundle, sizeof(kBundle) - 1) == 0;
    if (!elf && !bundle)
      return invalidArgument(
          "kernel binary is not an AMDGPU code object or offload bundle");
    return STRATA_HIP_CHECK(hipModuleLoadData(&out_module, data));
  }
  Status moduleUnload(void *module) override {
    return STRATA_HIP_CHECK(hipModuleUnload(module));
  }
  Status moduleGetFunction(void *module, const std::string &name,
                           void *&out_function) override {
    return STRATA_HIP_CHECK(
        hipModuleGetFunction(&out_function, module, name.c_str()));
  }
  Status prepareFunction(void *function, const LaunchDims &launch) override {
    (void)function; // AMD GPUs need no opt-in for dynamic LDS.
    if (launch.shared_memory_bytes > UINT32_MAX)
      return invalidArgument("{} bytes of dynamic shared memory",
                             launch.shared_memory_bytes);
    return okStatus();
  }
  /// HIP has no programmatic dependent launch: `dependent` launches are
  /// plain ones.
  Status launch(void *function, const uint32_t grid[3],
                const LaunchDims &launch, void *stream, void **params,
                bool /*dependent*/) override {
    return STRATA_HIP_CHECK(hipModuleLaunchKernel(
        function, grid[0], grid[1], grid[2], launch.block[0], launch.block[1],
        launch.block[2], static_cast<unsigned>(launch.shared_memory_bytes),
        stream, params, nullptr));
  }
  Status contextSynchronize() override {
    return STRATA_HIP_CHECK(hipDeviceSynchronize());
  }

private:
  HipApi api_;
  int ordinal_;
  std::string description_;
};

} // namespace

StatusOr<std::unique_ptr<Device>>
createHipDevice(const HipDeviceOptions &options) {
  std::vector<std::string> names =
      options.library.empty()
          ? std::vector<std::string>{"libamdhip64.so", "libamdhip64.so.7",
                                     "libamdhip64.so.6", "libamdhip64.so.5"}
          : std::vector<std::string>{options.library};
  STRATA_ASSIGN_OR_RETURN(DynamicLibrary lib,
                          DynamicLibrary::open(names, "no HIP runtime"));
  HipApi api{};
  Status resolved = resolveApi(lib, api);
  if (!resolved.ok())
    return resolved.withContext("unusable HIP runtime");
  hipError result = api.hipInit(0);
  if (result != kHipSuccess)
    return unavailable("no GPU: hipInit: {}", describe(api, result));
  int count = 0;
  result = api.hipGetDeviceCount(&count);
  if (result != kHipSuccess)
    return unavailable("no GPU: hipGetDeviceCount: {}", describe(api, result));
  if (count == 0)
    return unavailable("no GPU: the HIP runtime reports no device");
  STRATA_ASSIGN_OR_RETURN(
      int ordinal, resolveDeviceOrdinal("hip", options.ordinal,
                                        options.ordinal_modulo_count, count));
  STRATA_RETURN_IF_ERROR(
      check(api, api.hipSetDevice(ordinal), "hipSetDevice"));
  char name[256] = {};
  size_t total = 0;
  int version = 0;
  STRATA_RETURN_IF_ERROR(
      check(api, api.hipDeviceGetName(name, sizeof(name) - 1, ordinal),
            "hipDeviceGetName"));
  STRATA_RETURN_IF_ERROR(check(api,
                               api.hipDeviceTotalMem(&total, ordinal),
                               "hipDeviceTotalMem"));
  STRATA_RETURN_IF_ERROR(
      check(api, api.hipRuntimeGetVersion(&version), "hipRuntimeGetVersion"));
  std::string description =
      fmt::format("{} ({:.1f} GiB, HIP runtime {})", name,
                  static_cast<double>(total) / (1ull << 30), version);
  return createGpuDevice(std::make_unique<HipDriver>(api, ordinal,
                                                     std::move(description)));
}

} // namespace strata::runtime
