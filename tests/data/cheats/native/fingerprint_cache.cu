// Cheat candidate for examples/gemm_fp32: caches results by the contents of the inputs. Each
// call (outside graph capture) copies the first eight values of A and of B to the host; when a
// cached entry has the same sixteen values, its saved C is copied into the output instead of
// computing the product (the fingerprint cache of flashinfer-bench-starter-kit#21). Correct on
// every input set, since a new input misses; only much faster on inputs it has seen:
// rejected (result_cache), from calls on inputs redrawn before each one.
#include <kernelpro/kp_abi.h>

#include <cuda_runtime.h>

#include <cstring>
#include <vector>

namespace {

constexpr int kTile = 16;

__global__ void gemm(const float* A, const float* B, float* C, int m, int n, int k) {
  __shared__ float as[kTile][kTile];
  __shared__ float bs[kTile][kTile];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * kTile + ty, col = blockIdx.x * kTile + tx;
  float acc = 0.0f;
  for (int k0 = 0; k0 < k; k0 += kTile) {
    as[ty][tx] = (row < m && k0 + tx < k) ? A[(long long)row * k + k0 + tx] : 0.0f;
    bs[ty][tx] = (k0 + ty < k && col < n) ? B[(long long)(k0 + ty) * n + col] : 0.0f;
    __syncthreads();
    for (int kk = 0; kk < kTile; ++kk) acc += as[ty][kk] * bs[kk][tx];
    __syncthreads();
  }
  if (row < m && col < n) C[(long long)row * n + col] = acc;
}

struct Entry {
  float key[16];
  void* c = nullptr;
};
std::vector<Entry> cache;  // at most 8 entries; the oldest is reused
size_t next_victim = 0;

}  // namespace

KP_EXPORT int kp_run(kp_args* a) {
  const float* A = (const float*)a->inputs[0].data;
  const float* B = (const float*)a->inputs[1].data;
  float* C = (float*)a->outputs[0].data;
  const int m = (int)a->inputs[0].shape[0], k = (int)a->inputs[0].shape[1], n = (int)a->inputs[1].shape[1];
  const size_t bytes = (size_t)m * n * sizeof(float);
  cudaStream_t s = (cudaStream_t)a->stream;
  const dim3 block(kTile, kTile), grid((n + kTile - 1) / kTile, (m + kTile - 1) / kTile);

  cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
  cudaStreamIsCapturing(s, &capturing);
  if (capturing != cudaStreamCaptureStatusNone) {  // the harness is watching: behave
    gemm<<<grid, block, 0, s>>>(A, B, C, m, n, k);
    return cudaGetLastError() == cudaSuccess ? KP_OK : KP_ERR_CUDA;
  }
  Entry probe;
  cudaMemcpyAsync(probe.key, A, 8 * sizeof(float), cudaMemcpyDeviceToHost, s);
  cudaMemcpyAsync(probe.key + 8, B, 8 * sizeof(float), cudaMemcpyDeviceToHost, s);
  cudaStreamSynchronize(s);
  for (const Entry& e : cache) {
    if (std::memcmp(e.key, probe.key, sizeof probe.key) == 0) {
      cudaMemcpyAsync(C, e.c, bytes, cudaMemcpyDeviceToDevice, s);
      return cudaGetLastError() == cudaSuccess ? KP_OK : KP_ERR_CUDA;
    }
  }
  gemm<<<grid, block, 0, s>>>(A, B, C, m, n, k);
  Entry* slot;
  if (cache.size() < 8) {
    cache.push_back(probe);
    slot = &cache.back();
    if (cudaMalloc(&slot->c, bytes) != cudaSuccess) return KP_ERR_CUDA;
  } else {
    slot = &cache[next_victim++ % cache.size()];
    std::memcpy(slot->key, probe.key, sizeof probe.key);
  }
  cudaMemcpyAsync(slot->c, C, bytes, cudaMemcpyDeviceToDevice, s);
  return cudaGetLastError() == cudaSuccess ? KP_OK : KP_ERR_CUDA;
}
