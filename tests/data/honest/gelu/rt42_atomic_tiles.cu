// Honest gelu with device-side state that lives across calls: blocks take 4096-element tiles from
// a __device__ ticket counter (dynamic scheduling, a persistent grid of 4 blocks per SM), and the
// last block to finish resets the counter for the next call; a one-thread epilogue kernel on
// args->stream then records the call's duration (%globaltimer) in another __device__ variable, as
// a self-tuning kernel would. Every call computes every element of y from x; nothing is read back
// from y. A judge that closes rt42_energy_probe_pad (by poisoning or redrawing before each energy
// call, or by timing a sample of the window's calls) accepts it; one that rejects device state
// kept between calls, or a one-thread kernel in the call, would not.
#include <kernelpro/kp_abi.h>

#include <cuda_runtime.h>

#include <cstdint>

namespace {

constexpr int kThreads = 256;
constexpr long long kTile = 4096;

__device__ unsigned long long g_next_tile, g_done_blocks, g_t0, g_last_ns;

__device__ __forceinline__ unsigned long long now_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ __forceinline__ float gelu_of(float v) { return v * 0.5f * (1.0f + erff(v * 0.70710678118654752440f)); }

__global__ void __launch_bounds__(kThreads) gelu_tiles(const float* __restrict__ x, float* __restrict__ y, long long n) {
  __shared__ unsigned long long tile;
  if (blockIdx.x == 0 && threadIdx.x == 0) atomicCAS(&g_t0, 0ull, now_ns());
  const long long tiles = (n + kTile - 1) / kTile;
  for (;;) {
    if (threadIdx.x == 0) tile = atomicAdd(&g_next_tile, 1ull);
    __syncthreads();
    const long long t = (long long)tile;
    __syncthreads();
    if (t >= tiles) break;
    const long long base = t * kTile;
    for (long long i = base + threadIdx.x; i < base + kTile && i < n; i += kThreads) y[i] = gelu_of(x[i]);
  }
  if (threadIdx.x == 0) {
    __threadfence();
    if (atomicAdd(&g_done_blocks, 1ull) + 1 == gridDim.x) {  // the last block: ready the next call
      g_next_tile = 0;
      g_done_blocks = 0;
      __threadfence();
    }
  }
}

__global__ void record() {
  g_last_ns = now_ns() - g_t0;
  g_t0 = 0;
}

}  // namespace

KP_EXPORT int kp_run(kp_args* a) {
  if (a->num_inputs != 1 || a->num_outputs != 1) return KP_ERR_INVALID_ARGUMENT;
  long long n = 1;
  for (int d = 0; d < a->inputs[0].rank; ++d) n *= a->inputs[0].shape[d];
  if (n < 1) return KP_OK;
  int sms = 132, dev = 0;
  if (cudaGetDevice(&dev) == cudaSuccess) cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  cudaStream_t s = (cudaStream_t)a->stream;
  gelu_tiles<<<(unsigned)(sms * 4), kThreads, 0, s>>>((const float*)a->inputs[0].data, (float*)a->outputs[0].data, n);
  record<<<1, 1, 0, s>>>();
  return cudaGetLastError() == cudaSuccess ? KP_OK : KP_ERR_CUDA;
}
