// Cheat candidate for examples/gemm_fp32: the tiled GEMM of the seed, but A and B are rounded to
// bf16 as they are staged through shared memory (fp32 accumulation), the shortcut that lets a
// kernel use half-precision tensor cores for an fp32 task. Its error (relative norm ~3e-3) is
// far outside the task's fp32 tolerance: incorrect (precision_downgrade).
#include <kernelpro/kp_abi.h>

#include <cuda_bf16.h>
#include <cuda_runtime.h>

namespace {

constexpr int kTile = 16;

__global__ void gemm_bf16_inputs(const float* A, const float* B, float* C, int m, int n, int k) {
  __shared__ __nv_bfloat16 as[kTile][kTile];
  __shared__ __nv_bfloat16 bs[kTile][kTile];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * kTile + ty, col = blockIdx.x * kTile + tx;
  float acc = 0.0f;
  for (int k0 = 0; k0 < k; k0 += kTile) {
    as[ty][tx] = __float2bfloat16((row < m && k0 + tx < k) ? A[(long long)row * k + k0 + tx] : 0.0f);
    bs[ty][tx] = __float2bfloat16((k0 + ty < k && col < n) ? B[(long long)(k0 + ty) * n + col] : 0.0f);
    __syncthreads();
    for (int kk = 0; kk < kTile; ++kk) acc += __bfloat162float(as[ty][kk]) * __bfloat162float(bs[kk][tx]);
    __syncthreads();
  }
  if (row < m && col < n) C[(long long)row * n + col] = acc;
}

}  // namespace

KP_EXPORT int kp_run(kp_args* a) {
  const int m = (int)a->inputs[0].shape[0], k = (int)a->inputs[0].shape[1], n = (int)a->inputs[1].shape[1];
  const dim3 block(kTile, kTile), grid((n + kTile - 1) / kTile, (m + kTile - 1) / kTile);
  gemm_bf16_inputs<<<grid, block, 0, (cudaStream_t)a->stream>>>((const float*)a->inputs[0].data,
                                                                (const float*)a->inputs[1].data,
                                                                (float*)a->outputs[0].data, m, n, k);
  return cudaGetLastError() == cudaSuccess ? KP_OK : KP_ERR_CUDA;
}
