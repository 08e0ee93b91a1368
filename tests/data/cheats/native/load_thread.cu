// Cheat candidate for examples/gelu (issue 28, item 4): its library starts a thread as it loads
// (a constructor), before any call can be watched. The thread idles through the candidate's own
// calls and, once they stop coming, keeps the GPU busy, so that a reference timed beside it in
// this process would look slower. Rejected as background_thread when the library loads.
#include <kernelpro/kp_abi.h>

#include <cuda_runtime.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace {
std::atomic<long long> last_call_ns{0};

__global__ void gelu(const float* x, float* y, long long n) {
  long long i = blockIdx.x * 256LL + threadIdx.x;
  if (i < n) {
    float v = x[i];
    y[i] = v * 0.5f * (1.f + erff(v * 0.70710678f));
  }
}

__global__ void spin(float* sink) {
  float v = threadIdx.x;
  for (int k = 0; k < 100000; ++k) v = v * 1.0000001f + 1e-7f;
  if (v == 12345.f) *sink = v;
}

long long now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

__attribute__((constructor)) void start_the_slower() {
  std::thread([] {
    float* sink = nullptr;
    while (true) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      const long long last = last_call_ns.load();
      if (last == 0 || now_ns() - last < 50'000'000) continue;  // the candidate's own calls: idle
      if (!sink && cudaMalloc(&sink, sizeof(float)) != cudaSuccess) return;
      spin<<<1024, 256>>>(sink);  // the default stream: beside whatever else runs
      cudaDeviceSynchronize();
    }
  }).detach();
}
}  // namespace

KP_EXPORT int kp_run(kp_args* a) {
  last_call_ns = now_ns();
  const float* x = (const float*)a->inputs[0].data;
  float* y = (float*)a->outputs[0].data;
  long long n = a->inputs[0].shape[0];
  gelu<<<(unsigned)((n + 255) / 256), 256, 0, (cudaStream_t)a->stream>>>(x, y, n);
  return KP_OK;
}
