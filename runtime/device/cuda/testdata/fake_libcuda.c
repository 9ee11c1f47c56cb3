/*===- fake_libcuda.c - a CUDA driver stand-in without a device -----------===*
 *
 * Part of strata. Test data for cuda_device_test.cpp: exports every driver
 * entry point cuda_device.cpp resolves; cuInit reports CUDA_ERROR_NO_DEVICE
 * (as the real driver does on a machine without an NVIDIA GPU), every other
 * call CUDA_ERROR_NOT_INITIALIZED.
 *
 *===----------------------------------------------------------------------===*/

#define NO_DEVICE 100
#define NOT_INITIALIZED 3

int cuInit(unsigned flags) {
  (void)flags;
  return NO_DEVICE;
}

int cuGetErrorName(int error, const char **out) {
  *out = error == NO_DEVICE ? "CUDA_ERROR_NO_DEVICE"
                            : "CUDA_ERROR_NOT_INITIALIZED";
  return 0;
}

int cuGetErrorString(int error, const char **out) {
  *out = error == NO_DEVICE ? "no CUDA-capable device is detected"
                            : "initialization error";
  return 0;
}

#define FAKE(name)                                                             \
  int name(void) { return NOT_INITIALIZED; }
FAKE(cuDriverGetVersion)
FAKE(cuDeviceGetCount)
FAKE(cuDeviceGet)
FAKE(cuDeviceGetName)
FAKE(cuDeviceGetAttribute)
FAKE(cuDeviceTotalMem_v2)
FAKE(cuDevicePrimaryCtxRetain)
FAKE(cuDevicePrimaryCtxRelease_v2)
FAKE(cuCtxSetCurrent)
FAKE(cuCtxSynchronize)
FAKE(cuMemGetInfo_v2)
FAKE(cuMemAlloc_v2)
FAKE(cuMemFree_v2)
FAKE(cuMemAllocHost_v2)
FAKE(cuMemFreeHost)
FAKE(cuMemsetD8Async)
FAKE(cuMemcpyAsync)
FAKE(cuMemcpy2DAsync_v2)
FAKE(cuStreamCreate)
FAKE(cuStreamDestroy_v2)
FAKE(cuStreamSynchronize)
FAKE(cuStreamWaitEvent)
FAKE(cuEventCreate)
FAKE(cuEventDestroy_v2)
FAKE(cuEventRecord)
FAKE(cuEventSynchronize)
FAKE(cuEventElapsedTime_v2)
FAKE(cuStreamBeginCapture_v2)
FAKE(cuStreamEndCapture)
FAKE(cuGraphInstantiateWithFlags)
FAKE(cuGraphLaunch)
FAKE(cuGraphExecDestroy)
FAKE(cuGraphDestroy)
FAKE(cuModuleLoadData)
FAKE(cuModuleUnload)
FAKE(cuModuleGetFunction)
FAKE(cuFuncSetAttribute)
FAKE(cuLaunchKernel)
