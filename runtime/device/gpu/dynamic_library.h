//===- dynamic_library.h - a vendor runtime opened with dlopen --*- C++ -*-===//
//
// Part of strata. Opens the first loadable of several library names (the
// vendor runtime's soname and its versioned variants) and resolves function
// symbols, trying versioned names first (`cuMemAlloc_v2` before
// `cuMemAlloc`). The handle is never closed: vendor runtimes keep threads
// and atexit handlers that must not outlive their code.
//
// Ownership: plain value. Thread-safety: dlopen/dlsym are thread-safe.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_DEVICE_GPU_DYNAMIC_LIBRARY_H
#define STRATA_RUNTIME_DEVICE_GPU_DYNAMIC_LIBRARY_H

#include <initializer_list>
#include <string>
#include <vector>

#include "runtime/base/status.h"

namespace strata::runtime {

class DynamicLibrary {
public:
  /// Opens the first of `names` that dlopen accepts (RTLD_NOW | RTLD_LOCAL).
  /// UNAVAILABLE "<what>: <names[0]> not found" when none loads, with each
  /// dlerror appended after the first line's "(...)".
  static StatusOr<DynamicLibrary> open(const std::vector<std::string> &names,
                                       const char *what);

  /// The name that was loaded.
  const std::string &name() const { return name_; }

  /// Resolves the first of `symbols` that exists into `out` (a function
  /// pointer). UNAVAILABLE "<library> lacks <symbols[0]>" otherwise.
  template <typename Fn>
  Status resolve(Fn &out, std::initializer_list<const char *> symbols) const {
    void *address = nullptr;
    STRATA_RETURN_IF_ERROR(resolveAddress(symbols, address));
    out = reinterpret_cast<Fn>(address);
    return okStatus();
  }

private:
  DynamicLibrary(void *handle, std::string name)
      : handle_(handle), name_(std::move(name)) {}
  Status resolveAddress(std::initializer_list<const char *> symbols,
                        void *&out) const;

  void *handle_;
  std::string name_;
};

} // namespace strata::runtime

#endif // STRATA_RUNTIME_DEVICE_GPU_DYNAMIC_LIBRARY_H
