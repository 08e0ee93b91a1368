// Fixed: no block-wide exchange at all. One warp per row: each lane adds 32 of its 1024 floats
// (eight float4 loads, all in flight), then five __shfl_xor_sync steps; no barrier.
#include <kernelpro/kp_abi.h>
#include <kernelpro/kp_check.h>

#include <cuda_runtime.h>

#include <cstdint>

namespace {

constexpr int kCols = 1024;
constexpr int kWarps = 8;  // rows per 256-thread block

__global__ void __launch_bounds__(32 * kWarps) k(const float4* __restrict__ x, float* __restrict__ y, int64_t rows) {
  const int64_t row = (int64_t)blockIdx.x * kWarps + threadIdx.x / 32;
  const int lane = threadIdx.x & 31;
  if (row >= rows) return;
  const float4* p = x + row * (kCols / 4) + lane;
  float4 v[8];
#pragma unroll
  for (int i = 0; i < 8; ++i) v[i] = p[i * 32];
  float a = 0.0f;
#pragma unroll
  for (int i = 0; i < 8; ++i) a += (v[i].x + v[i].y) + (v[i].z + v[i].w);
  for (int o = 16; o > 0; o >>= 1) a += __shfl_xor_sync(0xffffffffu, a, o);
  if (lane == 0) y[row] = a;
}

}  // namespace

KP_EXPORT int kp_run(kp_args* args) {
  static const char* WHO = "flaw_barrier_overhead";
  if (int rc = kp_expect_tensors(args, WHO, {{"x", KP_FP32, 2, 2}}, {{"y", KP_FP32, 1, 1}})) return rc;
  const kp_tensor& x = args->inputs[0];
  const int64_t rows = x.shape[0], cols = x.shape[1];
  if (int rc = kp_expect_shape(args, WHO, args->outputs[0], "y", {rows})) return rc;
  if (cols != kCols) return kp_fail(args, KP_ERR_UNSUPPORTED_SHAPE, "rows must be 1024 wide");
  cudaStream_t st = (cudaStream_t)args->stream;
  k<<<(unsigned)((rows + kWarps - 1) / kWarps), 32 * kWarps, 0, st>>>(static_cast<const float4*>(x.data),
                                                                        static_cast<float*>(args->outputs[0].data), rows);
  return kp_check_launch(args, WHO);
}
