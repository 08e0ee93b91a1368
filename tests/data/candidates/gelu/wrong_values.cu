// Test candidate for examples/gelu: computes the tanh approximation of GELU instead of the exact one (off by up to 5e-4): incorrect
#include <kernelpro/kp_abi.h>
#include <cuda_runtime.h>

__global__ void k(const float* x, float* y, long long n) {
  long long i = blockIdx.x * 256LL + threadIdx.x;
  if (i < n) { float v = x[i]; y[i] = 0.5f * v * (1.f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v))); }
}
KP_EXPORT int kp_run(kp_args* a) {
  long long n = a->inputs[0].shape[0];
  k<<<(unsigned)((n + 255) / 256), 256, 0, a->stream>>>((const float*)a->inputs[0].data, (float*)a->outputs[0].data, n);
  return cudaGetLastError() == cudaSuccess ? KP_OK : KP_ERR_CUDA;
}
