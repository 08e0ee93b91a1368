// Test candidate for examples/gelu: correct GELU that also prints to stdout and stderr: ok, and its output is kept with the evaluation
#include <kernelpro/kp_abi.h>
#include <cuda_runtime.h>

#include <cstdio>
__global__ void k(const float* x, float* y, long long n) {
  long long i = blockIdx.x * 256LL + threadIdx.x;
  if (i < n) { float v = x[i]; y[i] = v * 0.5f * (1.f + erff(v * 0.70710678f)); }
}
KP_EXPORT int kp_run(kp_args* a) {
  static int calls = 0;
  if (calls++ == 0) { std::printf("hello from the candidate\n"); std::fprintf(stderr, "a warning from the candidate\n"); }
  long long n = a->inputs[0].shape[0];
  k<<<(unsigned)((n + 255) / 256), 256, 0, a->stream>>>((const float*)a->inputs[0].data, (float*)a->outputs[0].data, n);
  return cudaGetLastError() == cudaSuccess ? KP_OK : KP_ERR_CUDA;
}
