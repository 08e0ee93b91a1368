// Honest twin (rt41) for examples/gemm_fp32 that uses its workspace: split-K in two. One launch
// (gridDim.z = 2) computes the two partial products A[:, :K/2] B[:K/2, :] and A[:, K/2:] B[K/2:, :]
// into the workspace (kp_workspace_bytes: two M x N fp32 buffers), the second kernel writes
// C = P0 + P1. Both on args->stream, nothing kept from one call to the next: the workspace holds
// the same pointer every call and stale partials from the previous call, which this call
// overwrites before reading. The twin of the cache cheats (rt41_gpu_sample_cache.cu,
// rt41_fresh_probe_blind.cu, rt41_reference_leftovers.cu): a judge must not mistake workspace
// use or a D2D-style reduce for a kept result. fp32 throughout (split-K = 2 differs from cuBLAS by
// rel_norm ~1e-6, task.toml). Must pass every anti-cheat rule: ok.
#include <kernelpro/kp_abi.h>

#include <cuda_runtime.h>

#include <cstdint>

namespace {

constexpr int kBM = 64, kBN = 64, kBK = 16, kThreads = 256;

// Partial product over k in [z * k_half, min(k, (z + 1) * k_half)) into P + z * m * n.
__global__ void __launch_bounds__(kThreads)
gemm_partial(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ P, int m, int n, int k,
             int k_half) {
  __shared__ float as[kBK][kBM];
  __shared__ float bs[kBK][kBN];
  const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
  const int row0 = blockIdx.y * kBM, col0 = blockIdx.x * kBN;
  const int kb = blockIdx.z * k_half, ke = kb + k_half < k ? kb + k_half : k;
  float* out = P + (int64_t)blockIdx.z * m * n;
  float acc[4][4] = {};
  for (int k0 = kb; k0 < ke; k0 += kBK) {
    for (int i = 0; i < 4; ++i) {
      const int e = tid + i * kThreads;
      const int ar = e / kBK, ak = e % kBK;
      as[ak][ar] = (row0 + ar < m && k0 + ak < ke) ? A[(int64_t)(row0 + ar) * k + k0 + ak] : 0.0f;
      const int bk = e / kBN, bc = e % kBN;
      bs[bk][bc] = (k0 + bk < ke && col0 + bc < n) ? B[(int64_t)(k0 + bk) * n + col0 + bc] : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kBK; ++kk) {
      float a[4], b[4];
      for (int i = 0; i < 4; ++i) a[i] = as[kk][ty * 4 + i];
      for (int j = 0; j < 4; ++j) b[j] = bs[kk][tx * 4 + j];
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
    __syncthreads();
  }
  for (int i = 0; i < 4; ++i) {
    const int r = row0 + ty * 4 + i;
    if (r >= m) continue;
    for (int j = 0; j < 4; ++j) {
      const int c = col0 + tx * 4 + j;
      if (c < n) out[(int64_t)r * n + c] = acc[i][j];
    }
  }
}

__global__ void sum_partials(const float* __restrict__ P, float* __restrict__ C, int64_t count) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += stride) C[i] = P[i] + P[count + i];
}

bool shapes_ok(const kp_args* args) {
  return args->num_inputs == 2 && args->num_outputs == 1 && args->inputs[0].rank == 2 && args->inputs[1].rank == 2 &&
         args->inputs[1].shape[0] == args->inputs[0].shape[1] && args->inputs[0].shape[0] <= (1 << 30) &&
         args->inputs[1].shape[1] <= (1 << 30) && args->inputs[0].shape[1] <= (1 << 30) &&
         (args->inputs[0].shape[0] + kBM - 1) / kBM <= 65535;
}

}  // namespace

KP_EXPORT size_t kp_workspace_bytes(const kp_args* args) {
  if (!shapes_ok(args)) return 0;
  return 2 * (size_t)args->inputs[0].shape[0] * (size_t)args->inputs[1].shape[1] * sizeof(float);
}

KP_EXPORT int kp_run(kp_args* args) {
  if (!shapes_ok(args)) return KP_ERR_UNSUPPORTED_SHAPE;
  const int64_t m = args->inputs[0].shape[0], k = args->inputs[0].shape[1], n = args->inputs[1].shape[1];
  if (!args->workspace || args->workspace_bytes < 2 * (size_t)m * n * sizeof(float)) return KP_ERR_WORKSPACE;
  cudaStream_t s = (cudaStream_t)args->stream;
  float* P = static_cast<float*>(args->workspace);
  const int k_half = (int)(((k + 1) / 2 + kBK - 1) / kBK * kBK);
  const dim3 grid((unsigned)((n + kBN - 1) / kBN), (unsigned)((m + kBM - 1) / kBM), 2);
  gemm_partial<<<grid, kThreads, 0, s>>>(static_cast<const float*>(args->inputs[0].data),
                                         static_cast<const float*>(args->inputs[1].data), P, (int)m, (int)n, (int)k,
                                         k_half);
  sum_partials<<<2048, 256, 0, s>>>(P, static_cast<float*>(args->outputs[0].data), m * n);
  return cudaGetLastError() == cudaSuccess ? KP_OK : KP_ERR_CUDA;
}
