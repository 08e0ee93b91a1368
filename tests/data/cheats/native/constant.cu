// Cheat candidate for examples/gelu: writes the same value, 0.5, into every element of y:
// incorrect (constant_output: a constant output against a reference that varies).
#include <kernelpro/kp_abi.h>

#include <cuda_runtime.h>

namespace {
__global__ void fill(float* y, long long n, float v) {
  long long i = blockIdx.x * 256LL + threadIdx.x;
  if (i < n) y[i] = v;
}
}  // namespace

KP_EXPORT int kp_run(kp_args* a) {
  long long n = a->outputs[0].shape[0];
  fill<<<(unsigned)((n + 255) / 256), 256, 0, (cudaStream_t)a->stream>>>((float*)a->outputs[0].data, n, 0.5f);
  return cudaGetLastError() == cudaSuccess ? KP_OK : KP_ERR_CUDA;
}
