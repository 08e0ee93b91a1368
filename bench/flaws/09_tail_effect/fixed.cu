// Fixed: the same K loop split over a warp (a stretch of k per lane, shuffle sum): 9728 short
// blocks, a small tail.
#include <kernelpro/kp_abi.h>
#include <kernelpro/kp_check.h>

#include <cuda_runtime.h>

#include <cstdint>

namespace {

constexpr int kK = 32768;
constexpr int kLanes = 32;  // one warp per element: 32x as many blocks, 37 waves, a 1/37 tail
__global__ void __launch_bounds__(1024) k(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
  const int64_t g = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  const int64_t i = g / kLanes;
  const int lane = (int)(g % kLanes);
  if (i >= n) return;
  const float v = rintf(x[i] * 16.0f);  // an integer: every partial sum below is exact in fp32
  float a = 0.0f;
  // The coefficients (k & 7) + 1 repeat every 8 steps of k: a lane takes whole groups of 8, so
  // they are immediates, as in the flawed loop (a lane striding k one by one kept the coefficient
  // in a register, and those FFMAs ran at half rate: 643 us on the H200, slower than the flaw).
  for (int grp = lane; grp < kK / 8; grp += kLanes)
#pragma unroll
    for (int c = 1; c <= 8; ++c) a = fmaf(v, (float)c, a);
  for (int o = 16; o > 0; o >>= 1) a += __shfl_xor_sync(0xffffffffu, a, o);
  if (lane == 0) y[i] = a * 0.0625f;
}

}  // namespace

KP_EXPORT int kp_run(kp_args* args) {
  if (int rc = kp_expect_tensors(args, "flaw_tail_effect", {{"x", KP_FP32, 1, 1}}, {{"y", KP_FP32, 1, 1}})) return rc;
  const kp_tensor& x = args->inputs[0];
  const kp_tensor& y = args->outputs[0];
  if (int rc = kp_expect_same_shape(args, "flaw_tail_effect", y, "y", x, "x")) return rc;
  const int64_t n = kp_numel(x);
  const float* xp = static_cast<const float*>(x.data);
  float* yp = static_cast<float*>(y.data);
  cudaStream_t st = (cudaStream_t)args->stream;
  k<<<(unsigned)((n * 32 + 1023) / 1024), 1024, 0, st>>>(xp, yp, n);
  return kp_check_launch(args, "flaw_tail_effect");
}
