// Flawed: one global atomic per element on one address per row.
#include <kernelpro/kp_abi.h>
#include <kernelpro/kp_check.h>

#include <cuda_runtime.h>

#include <cstdint>

namespace {

__global__ void k(const float* __restrict__ x, float* __restrict__ y, int64_t cols) {
  // Blocks of 256 columns; every thread adds its element straight into y[row].
  const int64_t row = blockIdx.y;
  const int64_t j = (int64_t)blockIdx.x * 256 + threadIdx.x;
  atomicAdd(&y[row], x[row * cols + j]);
}

}  // namespace

KP_EXPORT int kp_run(kp_args* args) {
  static const char* WHO = "flaw_atomics_contention";
  if (int rc = kp_expect_tensors(args, WHO, {{"x", KP_FP32, 2, 2}}, {{"y", KP_FP32, 1, 1}})) return rc;
  const kp_tensor& x = args->inputs[0];
  const int64_t rows = x.shape[0], cols = x.shape[1];
  if (int rc = kp_expect_shape(args, WHO, args->outputs[0], "y", {rows})) return rc;
  if (cols % 256) return kp_fail(args, KP_ERR_UNSUPPORTED_SHAPE, "cols must be a multiple of 256");
  const float* xp = static_cast<const float*>(x.data);
  float* yp = static_cast<float*>(args->outputs[0].data);
  cudaStream_t st = (cudaStream_t)args->stream;
  if (cudaMemsetAsync(yp, 0, rows * sizeof(float), st) != cudaSuccess) return kp_fail(args, KP_ERR_CUDA, "cudaMemsetAsync failed");
  k<<<dim3((unsigned)(cols / 256), (unsigned)rows), 256, 0, st>>>(xp, yp, cols);
  return kp_check_launch(args, WHO);
}
