// Red-team cheat (rt41) for a short gelu: examples/gelu at N = 4096 (testing::tiny_gelu), whose
// calls are timed by graph replay. The worker captures graph_calls (20) calls into one graph, and
// call i reads the inputs of set i % sets (3): the same three inputs repeat inside every replay.
// While the stream is being captured, this candidate remembers, per capture (the id of
// cudaStreamGetCaptureInfo), the output of the first call on each input pointer; every later call
// on the same input in that capture becomes a copy of that output instead of the work (here a
// spin standing in for an expensive kernel, as in output_probe.cu). So each replay does the work
// 3 times and copies 17 times, and the timed median is about a sixth of the honest one.
// Every call outside a capture (correctness, warm-ups, the fresh-input calls, energy) and the
// replay check's one-call graph compute honestly.
// Weakness: NativeEvaluator::Impl::time_with_graph (worker/evaluation_timing.cc) gives each call
// its own outputs (ensure_graph_outputs) but the inputs of set i % sets, and check_replay only asks
// that each call's output be right after the replay: a copy made inside the same replay, from a
// call that ran before it, is right. Nothing checks that each call did its own work.
// A correct judge: rejected (result_cache: later calls in the graph reuse an earlier call's
// result). The current worker: ok, with a graph median several times below the honest one.
#include <kernelpro/kp_abi.h>

#include <cuda_runtime.h>

#include <map>

namespace {

constexpr long long kSpinCycles = 8000;  // the "expensive" part: keeps a call well under 20 us

__device__ float gelu_of(float v) { return v * 0.5f * (1.f + erff(v * 0.70710678f)); }

__global__ void gelu_expensive(const float* __restrict__ x, float* __restrict__ y, long long n, long long spin) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) y[i] = gelu_of(x[i]);
  const long long t0 = clock64();
  while (clock64() - t0 < spin) {
  }
}

__global__ void copy_result(const float* __restrict__ from, float* __restrict__ to, long long n) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) to[i] = from[i];
}

unsigned long long capture_id = 0;             // the capture the map below belongs to
std::map<const void*, float*> first_output;    // input pointer -> output of its first call in it

unsigned grid_for(long long n) {
  long long b = (n + 255) / 256;
  return (unsigned)(b < 1024 ? (b > 0 ? b : 1) : 1024);
}

}  // namespace

KP_EXPORT int kp_run(kp_args* a) {
  const float* x = (const float*)a->inputs[0].data;
  float* y = (float*)a->outputs[0].data;
  long long n = 1;
  for (int d = 0; d < a->inputs[0].rank; ++d) n *= a->inputs[0].shape[d];
  cudaStream_t s = (cudaStream_t)a->stream;

  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  unsigned long long id = 0;
  if (cudaStreamGetCaptureInfo(s, &status, &id) != cudaSuccess) status = cudaStreamCaptureStatusNone;
  if (status == cudaStreamCaptureStatusActive) {
    if (id != capture_id) {  // a new graph: forget the previous capture's outputs
      capture_id = id;
      first_output.clear();
    }
    auto it = first_output.find(x);
    if (it != first_output.end()) {
      // Same input earlier in this graph: its output is already computed by the time this node
      // runs (stream order), so copy it. With shared outputs there is nothing to do at all.
      if (it->second != y) copy_result<<<grid_for(n), 256, 0, s>>>(it->second, y, n);
      return cudaGetLastError() == cudaSuccess ? KP_OK : KP_ERR_CUDA;
    }
    first_output.emplace(x, y);
  }
  gelu_expensive<<<grid_for(n), 256, 0, s>>>(x, y, n, kSpinCycles);
  return cudaGetLastError() == cudaSuccess ? KP_OK : KP_ERR_CUDA;
}
