// Red-team cheat (rt42) for examples/gelu (N = 2^26, event-timed), evaluated with energy on
// (energy_window_s > 0). rt41_energy_unless_poisoned, made to pass the judge core's window tests.
// Every call is three kernels on args->stream:
//  1. probe (one block of 64 threads): 64 outputs spread over y hold gelu of their inputs, bit for
//     bit as this kernel computes them? Then skip = 1; else skip = 0 and the start time
//     (%globaltimer) is kept in a __device__ variable.
//  2. gelu, the seed's kernel (one element a thread), whose blocks return at once when skip is
//     set: the timing is the seed's, so the gain is all in the energy.
//  3. pad (one thread): after real work, keeps the measured duration of probe + work; after a
//     skip, sleeps (__nanosleep) for 0.6 x that duration.
// Every call the worker checks starts from poisoned outputs (correctness, the replay check, each
// timed call of the core: refresh() poisons), so the probe never fires there. The core's energy
// window refreshes (and poisons) each set once, then calls back to back on unchanged inputs and
// outputs: every call after the first on a set finds the right output its previous call left and
// skips. The window's rate is then about 0.6 x the timed median (energy_rate_says_skipped flags
// under 1/3), a kernel runs almost all the time (energy_gpu_idle wants 25% of the expected busy
// share), and the kEnergyChecks copies taken after their calls are right. The joules per call are
// those of one sleeping thread on an otherwise idle GPU.
// Weakness: session.cc Session::energy_inner calls refresh_set once per set before the window
// and never poisons, flips or redraws between the window's calls (the timed loop flips after
// every check); the window's only tests of work are its call rate and "a kernel is running"
// (verdict/worker_plan.cc energy_rate_says_skipped, energy_gpu_idle).
// A correct judge: rejected (result_cache / phase_dependent), or an energy that is the honest
// one. The current worker: ok, the seed's timing, a fraction of the real energy per call.
#include <kernelpro/kp_abi.h>

#include <cuda_runtime.h>

#include <cstdint>

namespace {

__device__ unsigned g_skip;
__device__ unsigned long long g_t0, g_real_ns;

__device__ __forceinline__ unsigned long long now_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ __forceinline__ float gelu_of(float v) { return v * 0.5f * (1.0f + erff(v * 0.70710678118654752440f)); }

__global__ void probe(const float* __restrict__ x, const float* __restrict__ y, long long n) {
  const long long i = ((long long)threadIdx.x * 1048583LL + 977LL) % n;
  const int right = __float_as_uint(y[i]) == __float_as_uint(gelu_of(x[i]));
  const int all = __syncthreads_and(right);
  if (threadIdx.x == 0) {
    const unsigned skip = all && g_real_ns > 0;
    g_skip = skip;
    if (!skip) g_t0 = now_ns();
  }
}

__global__ void __launch_bounds__(256) gelu(const float* __restrict__ x, float* __restrict__ y, long long n) {
  if (*(volatile unsigned*)&g_skip) return;
  const long long i = (long long)blockIdx.x * 256 + threadIdx.x;  // the seed's kernel, otherwise
  if (i < n) y[i] = gelu_of(x[i]);
}

__global__ void pad() {
  if (!g_skip) {
    g_real_ns = now_ns() - g_t0;
    return;
  }
  const unsigned long long t = now_ns(), want = g_real_ns * 6 / 10;
  while (now_ns() - t < want) __nanosleep(4000);
}

}  // namespace

KP_EXPORT int kp_run(kp_args* a) {
  if (a->num_inputs != 1 || a->num_outputs != 1) return KP_ERR_INVALID_ARGUMENT;
  long long n = 1;
  for (int d = 0; d < a->inputs[0].rank; ++d) n *= a->inputs[0].shape[d];
  if (n < 1) return KP_OK;
  const float* x = (const float*)a->inputs[0].data;
  float* y = (float*)a->outputs[0].data;
  cudaStream_t s = (cudaStream_t)a->stream;
  probe<<<1, 64, 0, s>>>(x, y, n);
  gelu<<<(unsigned)((n + 255) / 256), 256, 0, s>>>(x, y, n);
  pad<<<1, 1, 0, s>>>();
  return cudaGetLastError() == cudaSuccess ? KP_OK : KP_ERR_CUDA;
}
