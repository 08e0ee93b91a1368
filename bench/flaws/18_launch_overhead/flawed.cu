// Flawed: a launch per row.
#include <kernelpro/kp_abi.h>
#include <kernelpro/kp_check.h>

#include <cuda_runtime.h>

#include <cstdint>

namespace {

__global__ void k(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
  const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = fmaf(2.0f, x[i], 1.0f);
}

}  // namespace

KP_EXPORT int kp_run(kp_args* args) {
  static const char* WHO = "flaw_launch_overhead";
  if (int rc = kp_expect_tensors(args, WHO, {{"x", KP_FP32, 2, 2}}, {{"y", KP_FP32, 2, 2}})) return rc;
  const kp_tensor& x = args->inputs[0];
  const int64_t rows = x.shape[0], cols = x.shape[1];
  if (int rc = kp_expect_same_shape(args, WHO, args->outputs[0], "y", x, "x")) return rc;
  if (cols % 256) return kp_fail(args, KP_ERR_UNSUPPORTED_SHAPE, "cols must be a multiple of 256");
  const float* xp = static_cast<const float*>(x.data);
  float* yp = static_cast<float*>(args->outputs[0].data);
  cudaStream_t st = (cudaStream_t)args->stream;
  for (int64_t r = 0; r < rows; ++r) k<<<(unsigned)(cols / 256), 256, 0, st>>>(xp + r * cols, yp + r * cols, cols);
  return kp_check_launch(args, WHO);
}
