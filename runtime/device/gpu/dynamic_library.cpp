//===- dynamic_library.cpp - a vendor runtime opened with dlopen ----------===//
//
// Part of strata. See dynamic_library.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/device/gpu/dynamic_library.h"

#include <dlfcn.h>

namespace strata::runtime {

StatusOr<DynamicLibrary>
DynamicLibrary::open(const std::vector<std::string> &names, const char *what) {
  std::string errors;
  for (const std::string &name : names) {
    if (void *handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL))
      return DynamicLibrary(handle, name);
    const char *err = dlerror();
    errors += fmt::format("{}{}", errors.empty() ? "" : "; ",
                          err ? err : name.c_str());
  }
  return unavailable("{}: {} not found ({})", what,
                     names.empty() ? std::string("(no name)") : names[0],
                     errors);
}

Status
DynamicLibrary::resolveAddress(std::initializer_list<const char *> symbols,
                               void *&out) const {
  for (const char *symbol : symbols) {
    if (void *address = dlsym(handle_, symbol)) {
      out = address;
      return okStatus();
    }
  }
  return unavailable("{} lacks {}", name_, *symbols.begin());
}

} // namespace strata::runtime
