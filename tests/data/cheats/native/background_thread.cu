// Cheat candidate for examples/gelu: kp_run starts a detached thread that launches the GELU
// kernel on args->stream a few milliseconds after kp_run has returned, so the call itself
// takes no time: rejected or incorrect (background_thread), from the threads the call leaves
// running.
#include <kernelpro/kp_abi.h>

#include <cuda_runtime.h>

#include <chrono>
#include <thread>

namespace {
__global__ void gelu(const float* x, float* y, long long n) {
  long long i = blockIdx.x * 256LL + threadIdx.x;
  if (i < n) {
    float v = x[i];
    y[i] = v * 0.5f * (1.f + erff(v * 0.70710678f));
  }
}
}  // namespace

KP_EXPORT int kp_run(kp_args* a) {
  const float* x = (const float*)a->inputs[0].data;
  float* y = (float*)a->outputs[0].data;
  long long n = a->inputs[0].shape[0];
  cudaStream_t s = (cudaStream_t)a->stream;
  std::thread([=] {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    gelu<<<(unsigned)((n + 255) / 256), 256, 0, s>>>(x, y, n);
  }).detach();
  return KP_OK;
}
