// Cheat candidate for examples/gelu (issue 28, item 8): honest through correctness and timing,
// it stops computing after its first 1000 calls, which on the gelu task (a quarter of a
// millisecond a call) falls inside the energy window: the window's calls then cost almost no
// joules and the candidate looks far more efficient than it is. Rejected as batched_calls by
// the energy window's checked calls (or by the timed checks, when timing reached call 1000).
#include <kernelpro/kp_abi.h>

#include <cuda_runtime.h>

namespace {
long long calls = 0;

__global__ void gelu(const float* x, float* y, long long n) {
  long long i = blockIdx.x * 256LL + threadIdx.x;
  if (i < n) {
    float v = x[i];
    y[i] = v * 0.5f * (1.f + erff(v * 0.70710678f));
  }
}
}  // namespace

KP_EXPORT int kp_run(kp_args* a) {
  if (++calls > 1000) return KP_OK;
  const float* x = (const float*)a->inputs[0].data;
  float* y = (float*)a->outputs[0].data;
  long long n = a->inputs[0].shape[0];
  gelu<<<(unsigned)((n + 255) / 256), 256, 0, (cudaStream_t)a->stream>>>(x, y, n);
  return KP_OK;
}
