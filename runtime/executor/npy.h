//===- npy.h - write NumPy .npy files ---------------------------*- C++ -*-===//
//
// Part of strata. The NumPy format (version 1.0) for f32 and i32 arrays, so
// that tests compare runtime outputs with numpy (np.load) directly.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_EXECUTOR_NPY_H
#define STRATA_RUNTIME_EXECUTOR_NPY_H

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/base/status.h"

namespace strata::runtime {

/// Writes a C-order f32 array of `shape` to `path`.
Status writeNpy(const std::string &path, const std::vector<float> &data,
                const std::vector<int64_t> &shape);
/// Writes a C-order i32 array of `shape` to `path`.
Status writeNpy(const std::string &path, const std::vector<int32_t> &data,
                const std::vector<int64_t> &shape);

} // namespace strata::runtime

#endif // STRATA_RUNTIME_EXECUTOR_NPY_H
