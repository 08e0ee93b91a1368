// Honest twin (rt41) for examples/gemm_fp32 of rt41_side_stream_slack.cu: the same split of C's
// rows, three quarters in one kernel and the last quarter in a second, but both launched on
// args->stream, in order, so the end event follows all of the work. Must pass every anti-cheat
// rule: ok (its time is that of all of its work).
#include <kernelpro/kp_abi.h>

#include <cuda_runtime.h>

#include <cstdint>

namespace {

constexpr int kBM = 64, kBN = 64, kBK = 16, kThreads = 256;

__global__ void __launch_bounds__(kThreads)
gemm_rows(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int m, int n, int k, int tile0) {
  __shared__ float as[kBK][kBM];
  __shared__ float bs[kBK][kBN];
  const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
  const int row0 = (tile0 + blockIdx.y) * kBM, col0 = blockIdx.x * kBN;
  float acc[4][4] = {};
  for (int k0 = 0; k0 < k; k0 += kBK) {
    for (int i = 0; i < 4; ++i) {
      const int e = tid + i * kThreads;
      const int ar = e / kBK, ak = e % kBK;
      as[ak][ar] = (row0 + ar < m && k0 + ak < k) ? A[(int64_t)(row0 + ar) * k + k0 + ak] : 0.0f;
      const int bk = e / kBN, bc = e % kBN;
      bs[bk][bc] = (k0 + bk < k && col0 + bc < n) ? B[(int64_t)(k0 + bk) * n + col0 + bc] : 0.0f;
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
      if (c < n) C[(int64_t)r * n + c] = acc[i][j];
    }
  }
}

}  // namespace

KP_EXPORT int kp_run(kp_args* args) {
  if (args->num_inputs != 2 || args->num_outputs != 1 || args->inputs[0].rank != 2 || args->inputs[1].rank != 2)
    return KP_ERR_INVALID_ARGUMENT;
  const int64_t m = args->inputs[0].shape[0], k = args->inputs[0].shape[1], n = args->inputs[1].shape[1];
  if (args->inputs[1].shape[0] != k || m > (1 << 30) || n > (1 << 30) || k > (1 << 30) || (m + kBM - 1) / kBM > 65535)
    return KP_ERR_UNSUPPORTED_SHAPE;
  const int tiles = (int)((m + kBM - 1) / kBM), cols = (int)((n + kBN - 1) / kBN), last = tiles / 4;
  const float* A = static_cast<const float*>(args->inputs[0].data);
  const float* B = static_cast<const float*>(args->inputs[1].data);
  float* C = static_cast<float*>(args->outputs[0].data);
  cudaStream_t s = (cudaStream_t)args->stream;
  gemm_rows<<<dim3((unsigned)cols, (unsigned)(tiles - last)), kThreads, 0, s>>>(A, B, C, (int)m, (int)n, (int)k, last);
  if (last > 0) gemm_rows<<<dim3((unsigned)cols, (unsigned)last), kThreads, 0, s>>>(A, B, C, (int)m, (int)n, (int)k, 0);
  return cudaGetLastError() == cudaSuccess ? KP_OK : KP_ERR_CUDA;
}
