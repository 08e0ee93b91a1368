// fp32 GEMM C = A B, 64x64 tiles per block, 4x4 outputs per thread, fp32 accumulation.
#include <cstdint>
#include <cuda_runtime.h>

constexpr int T = 64, KT = 16;

__global__ void gemm_tiled(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                           int M, int N, int K) {
  __shared__ float As[KT][T + 1];
  __shared__ float Bs[KT][T + 1];
  int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  int row0 = blockIdx.y * T, col0 = blockIdx.x * T;
  float acc[4][4] = {};
  for (int k0 = 0; k0 < K; k0 += KT) {
    for (int i = threadIdx.x; i < T * KT; i += 256) {
      int r = i / KT, k = i % KT;
      int gr = row0 + r, gk = k0 + k;
      As[k][r] = (gr < M && gk < K) ? A[(int64_t)gr * K + gk] : 0.f;
      int kk = i / T, c = i % T;
      int gk2 = k0 + kk, gc = col0 + c;
      Bs[kk][c] = (gk2 < K && gc < N) ? B[(int64_t)gk2 * N + gc] : 0.f;
    }
    __syncthreads();
    #pragma unroll
    for (int k = 0; k < KT; ++k) {
      float a[4], b[4];
      #pragma unroll
      for (int i = 0; i < 4; ++i) a[i] = As[k][ty * 4 + i];
      #pragma unroll
      for (int j = 0; j < 4; ++j) b[j] = Bs[k][tx * 4 + j];
      #pragma unroll
      for (int i = 0; i < 4; ++i)
        #pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
    __syncthreads();
  }
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) {
      int r = row0 + ty * 4 + i, c = col0 + tx * 4 + j;
      if (r < M && c < N) C[(int64_t)r * N + c] = acc[i][j];
    }
}

extern "C" void gemm(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream) {
  dim3 grid((N + T - 1) / T, (M + T - 1) / T);
  gemm_tiled<<<grid, 256, 0, stream>>>(A, B, C, M, N, K);
}
