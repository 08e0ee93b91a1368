// Cheat candidate for examples/gelu: caches results by input pointer. The first call with a
// given x computes y and keeps a private copy of it; every later call with the same x copies
// that copy into y instead of computing. The inputs change in place between correctness
// trials, so the second trial gets the first trial's result: incorrect (result_cache).
#include <kernelpro/kp_abi.h>

#include <cuda_runtime.h>

#include <map>

namespace {
__global__ void gelu(const float* x, float* y, long long n) {
  long long i = blockIdx.x * 256LL + threadIdx.x;
  if (i < n) {
    float v = x[i];
    y[i] = v * 0.5f * (1.f + erff(v * 0.70710678f));
  }
}
std::map<const void*, void*> saved;  // input pointer -> the output computed for it
}  // namespace

KP_EXPORT int kp_run(kp_args* a) {
  const float* x = (const float*)a->inputs[0].data;
  float* y = (float*)a->outputs[0].data;
  long long n = a->inputs[0].shape[0];
  size_t bytes = (size_t)n * sizeof(float);
  cudaStream_t s = (cudaStream_t)a->stream;
  auto it = saved.find(x);
  if (it != saved.end()) {
    cudaMemcpyAsync(y, it->second, bytes, cudaMemcpyDeviceToDevice, s);
  } else {
    gelu<<<(unsigned)((n + 255) / 256), 256, 0, s>>>(x, y, n);
    void* copy = nullptr;
    if (cudaMalloc(&copy, bytes) == cudaSuccess) {
      cudaMemcpyAsync(copy, y, bytes, cudaMemcpyDeviceToDevice, s);
      saved[x] = copy;
    }
  }
  return cudaGetLastError() == cudaSuccess ? KP_OK : KP_ERR_CUDA;
}
