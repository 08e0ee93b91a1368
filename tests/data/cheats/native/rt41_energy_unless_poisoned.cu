// Red-team cheat (rt41) for examples/gelu (N = 2^26, event-timed), evaluated with energy on
// (energy_window_s > 0). Each block of 4096 elements first probes two of its outputs: when both
// already hold gelu of their inputs (bit for bit, as this kernel computes them), the block returns
// without reading or writing the rest. Every call the worker checks starts from poisoned outputs
// (correctness, every event-timed call, the result-cache calls, the replay check), so the probe
// never fires there and the candidate computes in full. In the energy window only the
// kEnergyChecks calls drawn for checking are poisoned; every other call finds the right output its
// set's previous call left, and skips: the window's joules are those of ~1/64 of the traffic.
// Weakness: NativeEvaluator::Impl::measure_energy (worker/evaluation_energy.cc) poisons the
// outputs of its checked calls only (poison_outputs before the call at checked_at), so "checked"
// and "poisoned" are the same calls and a kernel that reads its output can tell them apart. The
// output-probe test (faster_on_right_outputs in time_with_graph) runs only under graph replay,
// never for an event-timed task and never in the energy window.
// A correct judge: rejected (result_cache: an output probe that skips work on outputs already
// right), or a measured energy that is the honest one. The current worker: ok, with a fraction of
// the real energy per call.
#include <kernelpro/kp_abi.h>

#include <cuda_runtime.h>

#include <cstdint>

namespace {

constexpr int kThreads = 256;
constexpr int kPerThread = 16;
constexpr int64_t kChunk = (int64_t)kThreads * kPerThread;  // elements per block

__device__ __forceinline__ float gelu_of(float v) { return v * 0.5f * (1.f + erff(v * 0.70710678f)); }

__global__ void __launch_bounds__(kThreads)
gelu_unless_right(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
  __shared__ int right;
  const int64_t base = (int64_t)blockIdx.x * kChunk;
  if (threadIdx.x == 0) {
    const int64_t last = (base + kChunk < n ? base + kChunk : n) - 1;
    const int64_t mid = base + (last - base) / 2;
    right = __float_as_uint(y[base]) == __float_as_uint(gelu_of(x[base])) &&
            __float_as_uint(y[mid]) == __float_as_uint(gelu_of(x[mid]));
  }
  __syncthreads();
  if (right) return;
#pragma unroll
  for (int r = 0; r < kPerThread; ++r) {
    const int64_t i = base + (int64_t)r * kThreads + threadIdx.x;
    if (i < n) y[i] = gelu_of(x[i]);
  }
}

}  // namespace

KP_EXPORT int kp_run(kp_args* a) {
  if (a->num_inputs != 1 || a->num_outputs != 1) return KP_ERR_INVALID_ARGUMENT;
  int64_t n = 1;
  for (int d = 0; d < a->inputs[0].rank; ++d) n *= a->inputs[0].shape[d];
  if (n < 1) return KP_OK;
  const int64_t blocks = (n + kChunk - 1) / kChunk;
  gelu_unless_right<<<(unsigned)blocks, kThreads, 0, (cudaStream_t)a->stream>>>(
      (const float*)a->inputs[0].data, (float*)a->outputs[0].data, n);
  return cudaGetLastError() == cudaSuccess ? KP_OK : KP_ERR_CUDA;
}
