//===- bench_plot_test.cpp - tests of strata-bench's plots ----------------===//

#include "runtime/bench/bench_plot.h"

#include <gtest/gtest.h>

namespace strata::runtime {
namespace {

KernelStats kernel(std::vector<std::vector<int64_t>> shapes) {
  KernelStats k;
  k.name = "k";
  k.dispatches = 2;
  k.seconds = 1e-3;
  k.bytes_per_dispatch = 1e6;
  k.arg_shapes = std::move(shapes);
  return k;
}

TEST(BenchPlotTest, CountsMatrixProductFlopsOnly) {
  // x[M, K] . w[N, K] -> y[M, N], and w given as [K, N].
  EXPECT_EQ(matmulFlopsPerDispatch(kernel({{4, 64}, {32, 64}, {4, 32}})),
            2.0 * 4 * 32 * 64);
  EXPECT_EQ(matmulFlopsPerDispatch(kernel({{4, 64}, {64, 32}, {4, 32}})),
            2.0 * 4 * 32 * 64);
  // Input and weight of the same extents: an elementwise kernel.
  EXPECT_EQ(matmulFlopsPerDispatch(kernel({{64, 64}, {64, 64}, {64, 64}})),
            std::nullopt);
  // The input must come first and the weight second.
  EXPECT_EQ(matmulFlopsPerDispatch(kernel({{32, 64}, {4, 64}, {4, 32}})),
            std::nullopt);
  // A norm: x[M, K], gamma[K], y[M, K]: no matrix product.
  EXPECT_EQ(matmulFlopsPerDispatch(kernel({{4, 64}, {64}, {4, 64}})),
            std::nullopt);
  EXPECT_EQ(matmulFlopsPerDispatch(kernel({})), std::nullopt);
}

TEST(BenchPlotTest, DrawsStepsKernelsAndCeilings) {
  StepBenchReport r;
  r.target = "cpu";
  r.device = "test";
  r.step = "decode";
  r.requests = 1;
  r.context = 8;
  r.step_wall_seconds = 2e-3;
  r.copy_bytes_per_second = 10e9;
  r.gemm_flops_per_second = 1e12;
  r.roofline.weight_bytes = 1e6;
  r.roofline.flops = 2e6;
  r.kernels = {kernel({{4, 64}, {32, 64}, {4, 32}}),
               kernel({{4, 64}, {64}, {4, 64}}),
               kernel({{4, 64}, {32, 64}, {4, 32}})};
  // The third went through 1 MB in 1 us: far above the copy roof.
  r.kernels[2].name = "twin";
  r.kernels[2].seconds = 1e-6;
  std::string svg = benchPlotSvg({r});
  EXPECT_NE(svg.find("copy rate 10 GB/s x intensity"), std::string::npos);
  EXPECT_NE(svg.find("GEMM rate 1.0 TFLOP/s"), std::string::npos);
  EXPECT_NE(svg.find(">decode B=1 ctx 8</text>"), std::string::npos);
  EXPECT_NE(svg.find("1 kernel(s) without a linear's shape"),
            std::string::npos);
  EXPECT_NE(svg.find("1 kernel(s) above twice the run's roofline"),
            std::string::npos);
  EXPECT_EQ(svg.find("decode step wall time per batch size"),
            std::string::npos);
  // A matrix run adds the decode chart.
  StepBenchReport r2 = r;
  r2.requests = 8;
  svg = benchPlotSvg({r, r2});
  EXPECT_NE(svg.find("decode step wall time per batch size"),
            std::string::npos);
  EXPECT_NE(svg.find(">context 8</text>"), std::string::npos);
}

} // namespace
} // namespace strata::runtime
