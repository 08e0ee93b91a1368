// Cheat candidate for examples/gelu: after its first eight calls (the correctness trials and
// the graph capture) it computes only on every fourth call and returns at once from the three
// in between, so that most timed calls cost nothing (the batch-and-skip of
// gpu-mode/reference-kernels#104, reduced to its effect on the timed calls): rejected
// (batched_calls), from the outputs the last timed calls left.
#include <kernelpro/kp_abi.h>

#include <cuda_runtime.h>

namespace {
__global__ void gelu(const float* x, float* y, long long n) {
  long long i = blockIdx.x * 256LL + threadIdx.x;
  if (i < n) {
    float v = x[i];
    y[i] = v * 0.5f * (1.f + erff(v * 0.70710678f));
  }
}
int calls = 0;
}  // namespace

KP_EXPORT int kp_run(kp_args* a) {
  ++calls;
  if (calls > 8 && calls % 4 != 0) return KP_OK;
  long long n = a->inputs[0].shape[0];
  gelu<<<(unsigned)((n + 255) / 256), 256, 0, (cudaStream_t)a->stream>>>((const float*)a->inputs[0].data,
                                                                         (float*)a->outputs[0].data, n);
  return cudaGetLastError() == cudaSuccess ? KP_OK : KP_ERR_CUDA;
}
