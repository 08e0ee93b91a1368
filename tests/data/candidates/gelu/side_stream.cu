// Test candidate for examples/gelu: computes GELU correctly on a stream of its own, not the given one: rejected (work escaped the stream)
#include <kernelpro/kp_abi.h>
#include <cuda_runtime.h>

__global__ void k(const float* x, float* y, long long n) {
  long long i = blockIdx.x * 256LL + threadIdx.x;
  if (i < n) { float v = x[i]; y[i] = v * 0.5f * (1.f + erff(v * 0.70710678f)); }
}
KP_EXPORT int kp_run(kp_args* a) {
  static cudaStream_t side = nullptr;
  if (!side) cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking);
  long long n = a->inputs[0].shape[0];
  for (int rep = 0; rep < 4; ++rep)  // heavy enough that the escape is far above timing noise
    k<<<(unsigned)((n + 255) / 256), 256, 0, side>>>((const float*)a->inputs[0].data, (float*)a->outputs[0].data, n);
  return cudaGetLastError() == cudaSuccess ? KP_OK : KP_ERR_CUDA;
}
