// Cheat candidate for examples/gelu: caches results by input pointer, but only from its ninth
// call on, past the correctness trials: until then it computes y and keeps a copy per input
// pointer; afterwards a call with a pointer it has seen copies that copy into y. Correct while
// the inputs stay put (the timed calls), stale once they change in place after timing:
// rejected (result_cache).
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
std::map<const void*, void*> saved;  // input pointer -> the last output computed for it
int calls = 0;
}  // namespace

KP_EXPORT int kp_run(kp_args* a) {
  const float* x = (const float*)a->inputs[0].data;
  float* y = (float*)a->outputs[0].data;
  long long n = a->inputs[0].shape[0];
  size_t bytes = (size_t)n * sizeof(float);
  cudaStream_t s = (cudaStream_t)a->stream;
  cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
  cudaStreamIsCapturing(s, &capturing);
  auto it = saved.find(x);
  if (++calls > 8 && it != saved.end() && capturing == cudaStreamCaptureStatusNone) {
    cudaMemcpyAsync(y, it->second, bytes, cudaMemcpyDeviceToDevice, s);
    return cudaGetLastError() == cudaSuccess ? KP_OK : KP_ERR_CUDA;
  }
  gelu<<<(unsigned)((n + 255) / 256), 256, 0, s>>>(x, y, n);
  if (capturing == cudaStreamCaptureStatusNone) {  // no allocation while the harness captures
    if (it == saved.end()) {
      void* copy = nullptr;
      if (cudaMalloc(&copy, bytes) != cudaSuccess) return KP_ERR_CUDA;
      it = saved.emplace(x, copy).first;
    }
    cudaMemcpyAsync(it->second, y, bytes, cudaMemcpyDeviceToDevice, s);
  }
  return cudaGetLastError() == cudaSuccess ? KP_OK : KP_ERR_CUDA;
}
