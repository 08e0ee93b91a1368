// Test candidate for examples/gelu: writes only the first half of y: incorrect (never written)
#include <kernelpro/kp_abi.h>
#include <cuda_runtime.h>

__global__ void k(const float* x, float* y, long long n) {
  long long i = blockIdx.x * 256LL + threadIdx.x;
  if (i < n / 2) { float v = x[i]; y[i] = v * 0.5f * (1.f + erff(v * 0.70710678f)); }
}
KP_EXPORT int kp_run(kp_args* a) {
  long long n = a->inputs[0].shape[0];
  k<<<(unsigned)((n + 255) / 256), 256, 0, a->stream>>>((const float*)a->inputs[0].data, (float*)a->outputs[0].data, n);
  return cudaGetLastError() == cudaSuccess ? KP_OK : KP_ERR_CUDA;
}
