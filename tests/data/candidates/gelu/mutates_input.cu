// Test candidate for examples/gelu: computes GELU correctly but also overwrites its input x with the result: incorrect (input mutated)
#include <kernelpro/kp_abi.h>
#include <cuda_runtime.h>

__global__ void k(float* x, float* y, long long n) {
  long long i = blockIdx.x * 256LL + threadIdx.x;
  if (i < n) { float v = x[i]; float g = v * 0.5f * (1.f + erff(v * 0.70710678f)); y[i] = g; x[i] = g; }
}
KP_EXPORT int kp_run(kp_args* a) {
  long long n = a->inputs[0].shape[0];
  k<<<(unsigned)((n + 255) / 256), 256, 0, a->stream>>>((float*)a->inputs[0].data, (float*)a->outputs[0].data, n);
  return cudaGetLastError() == cudaSuccess ? KP_OK : KP_ERR_CUDA;
}
