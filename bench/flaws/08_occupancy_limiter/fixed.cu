// Fixed: the staging buffer sized to the block (512 bytes).
#include <kernelpro/kp_abi.h>
#include <kernelpro/kp_check.h>

#include <cuda_runtime.h>

#include <cstdint>

namespace {

__global__ void k(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
  __shared__ float s[128];
  const int t = threadIdx.x;
  for (int64_t base = (int64_t)blockIdx.x * 128; base < n; base += (int64_t)gridDim.x * 128) {
    s[t] = x[base + t];
    __syncthreads();
    y[base + t] = s[t ^ 1];
    __syncthreads();
  }
}

}  // namespace

KP_EXPORT int kp_run(kp_args* args) {
  if (int rc = kp_expect_tensors(args, "flaw_occupancy_limiter", {{"x", KP_FP32, 1, 1}}, {{"y", KP_FP32, 1, 1}})) return rc;
  const kp_tensor& x = args->inputs[0];
  const kp_tensor& y = args->outputs[0];
  if (int rc = kp_expect_same_shape(args, "flaw_occupancy_limiter", y, "y", x, "x")) return rc;
  const int64_t n = kp_numel(x);
  const float* xp = static_cast<const float*>(x.data);
  float* yp = static_cast<float*>(y.data);
  cudaStream_t st = (cudaStream_t)args->stream;
  if (n % 128) return kp_fail(args, KP_ERR_UNSUPPORTED_SHAPE, "n must be a multiple of 128");
  k<<<132 * 16, 128, 0, st>>>(xp, yp, n);
  return kp_check_launch(args, "flaw_occupancy_limiter");
}
