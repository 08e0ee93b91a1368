// Cheat candidate for a short gelu (testing::tiny_gelu, timed by graph replay): each block first
// probes its part of the output, and when the probed values already equal gelu of the input it
// returns at once, skipping its work (here a spin standing in for an expensive kernel). Timed
// replays that are not poisoned find the previous replay's right outputs, so all but the first
// cost nothing: issue 28's output probe, a 2.4x "speedup" before every timed replay started
// from poisoned outputs. Rejected (result_cache): replays on already-right outputs run much
// faster than the timed ones.
#include <kernelpro/kp_abi.h>

#include <cuda_runtime.h>

namespace {
__device__ float gelu_of(float v) { return v * 0.5f * (1.f + erff(v * 0.70710678f)); }

__global__ void gelu_probe(const float* x, float* y, long long n, long long spin_cycles) {
  __shared__ int right;
  const long long base = blockIdx.x * 256LL;
  if (threadIdx.x == 0) {
    right = 1;
    for (long long j = base; j < base + 256 && j < n; j += 37)
      if (y[j] != gelu_of(x[j])) right = 0;
  }
  __syncthreads();
  if (right) return;
  const long long i = base + threadIdx.x;
  if (i < n) y[i] = gelu_of(x[i]);
  const long long t0 = clock64();
  while (clock64() - t0 < spin_cycles) {
  }
}
}  // namespace

KP_EXPORT int kp_run(kp_args* a) {
  const long long n = a->inputs[0].shape[0];
  gelu_probe<<<(unsigned)((n + 255) / 256), 256, 0, (cudaStream_t)a->stream>>>(
      (const float*)a->inputs[0].data, (float*)a->outputs[0].data, n, 15000);
  return cudaGetLastError() == cudaSuccess ? KP_OK : KP_ERR_CUDA;
}
