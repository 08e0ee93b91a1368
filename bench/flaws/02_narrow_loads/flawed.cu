// Flawed: scalar 4-byte loads and stores, from a grid of 3 blocks of 256 threads per SM (24 of
// 64 warps): each warp keeps 128 bytes per load in flight, too few to cover DRAM latency.
#include <kernelpro/kp_abi.h>
#include <kernelpro/kp_check.h>

#include <cuda_runtime.h>

#include <cstdint>

namespace {

__global__ void k(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    y[i] = fmaf(2.0f, x[i], 1.0f);
}

}  // namespace

KP_EXPORT int kp_run(kp_args* args) {
  if (int rc = kp_expect_tensors(args, "flaw_narrow", {{"x", KP_FP32, 1, 1}}, {{"y", KP_FP32, 1, 1}})) return rc;
  const kp_tensor& x = args->inputs[0];
  const kp_tensor& y = args->outputs[0];
  if (int rc = kp_expect_same_shape(args, "flaw_narrow", y, "y", x, "x")) return rc;
  const int64_t n = kp_numel(x);
  const float* xp = static_cast<const float*>(x.data);
  float* yp = static_cast<float*>(y.data);
  cudaStream_t st = (cudaStream_t)args->stream;
  const unsigned grid = 132 * 3;  // a grid sized to the GPU, as many grid-stride kernels are
  k<<<grid, 256, 0, st>>>(xp, yp, n);
  return kp_check_launch(args, "flaw_narrow");
}
