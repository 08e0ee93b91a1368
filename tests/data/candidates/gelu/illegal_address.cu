// Test candidate for examples/gelu: writes far past the end of y: crash (illegal memory access, context lost)
#include <kernelpro/kp_abi.h>
#include <cuda_runtime.h>

__global__ void k(float* y, long long n) {
  long long i = blockIdx.x * 256LL + threadIdx.x;
  if (i < n) y[i + (1LL << 40)] = 1.f;
}
KP_EXPORT int kp_run(kp_args* a) {
  long long n = a->inputs[0].shape[0];
  k<<<(unsigned)((n + 255) / 256), 256, 0, a->stream>>>((float*)a->outputs[0].data, n);
  return cudaGetLastError() == cudaSuccess ? KP_OK : KP_ERR_CUDA;
}
