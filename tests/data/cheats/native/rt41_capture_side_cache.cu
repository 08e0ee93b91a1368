// Red-team cheat (rt41) for a short gelu: examples/gelu at N = 4096 (testing::tiny_gelu), timed by
// graph replay. While args->stream is being captured, the work does not go into the graph: the
// candidate launches it once per input pointer on a side stream of its own, which runs eagerly,
// during the capture, into a slot of its workspace; the graph gets only a copy from that slot into
// y. The captured inputs never change while the graph is replayed, so every replay writes the right
// outputs without computing anything: the timed median is that of a 16 KiB copy, against the
// work (a spin standing in for an expensive kernel, as in output_probe.cu). Outside a capture
// (correctness, warm-ups, result-cache calls, energy) it computes honestly on args->stream.
// Weakness: NativeEvaluator::Impl::replay_check (worker/evaluation_anticheat.cc) assumes that work
// which escapes the capture leaves the graph's outputs unwritten, and it synchronizes the device
// ("work that escaped the capture ran eagerly during it: let it finish") before replaying: the
// escaped work's result is then in place for the graph's copy. time_with_graph
// (worker/evaluation_timing.cc) replays on the inputs captured, so a result computed at capture
// time stays right for every timed replay, and the untimed first launch's sync lets it finish.
// A correct judge: rejected (side_stream: the work ran outside the graph it is timed by).
// The current worker: ok, timed on copies.
#include <kernelpro/kp_abi.h>

#include <cuda_runtime.h>

#include <map>

namespace {

constexpr int kSlots = 8;
constexpr long long kSpinCycles = 8000;

__device__ float gelu_of(float v) { return v * 0.5f * (1.f + erff(v * 0.70710678f)); }

__global__ void gelu_expensive(const float* __restrict__ x, float* __restrict__ y, long long n, long long spin) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) y[i] = gelu_of(x[i]);
  const long long t0 = clock64();
  while (clock64() - t0 < spin) {
  }
}

__global__ void copy_slot(const float* __restrict__ from, float* __restrict__ to, long long n) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) to[i] = from[i];
}

cudaStream_t side = nullptr;
unsigned long long capture_id = 0;
std::map<const void*, int> slot_of;   // input pointer -> workspace slot, for this capture
int next_slot = 0;

long long numel(const kp_tensor& t) {
  long long n = 1;
  for (int d = 0; d < t.rank; ++d) n *= t.shape[d];
  return n;
}

unsigned grid_for(long long n) {
  long long b = (n + 255) / 256;
  return (unsigned)(b < 1024 ? (b > 0 ? b : 1) : 1024);
}

}  // namespace

KP_EXPORT size_t kp_workspace_bytes(const kp_args* a) { return (size_t)kSlots * (size_t)numel(a->inputs[0]) * 4; }

KP_EXPORT int kp_run(kp_args* a) {
  const float* x = (const float*)a->inputs[0].data;
  float* y = (float*)a->outputs[0].data;
  const long long n = numel(a->inputs[0]);
  if (!a->workspace || a->workspace_bytes < (size_t)kSlots * n * 4) return KP_ERR_WORKSPACE;
  cudaStream_t s = (cudaStream_t)a->stream;
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  unsigned long long id = 0;
  if (cudaStreamGetCaptureInfo(s, &status, &id) != cudaSuccess) status = cudaStreamCaptureStatusNone;
  if (status != cudaStreamCaptureStatusActive) {
    if (!side && cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking) != cudaSuccess) {
      side = nullptr;
      cudaGetLastError();
    }
    gelu_expensive<<<grid_for(n), 256, 0, s>>>(x, y, n, kSpinCycles);
    return cudaGetLastError() == cudaSuccess ? KP_OK : KP_ERR_CUDA;
  }
  if (!side) {  // no side stream yet (cannot create one during a capture): behave
    gelu_expensive<<<grid_for(n), 256, 0, s>>>(x, y, n, kSpinCycles);
    return cudaGetLastError() == cudaSuccess ? KP_OK : KP_ERR_CUDA;
  }
  if (id != capture_id) {
    capture_id = id;
    slot_of.clear();
    next_slot = 0;
  }
  float* slots = (float*)a->workspace;
  auto it = slot_of.find(x);
  if (it == slot_of.end()) {
    it = slot_of.emplace(x, next_slot++ % kSlots).first;
    // Eager, outside the graph: runs now, while the worker is still capturing.
    gelu_expensive<<<grid_for(n), 256, 0, side>>>(x, slots + (size_t)it->second * n, n, kSpinCycles);
  }
  copy_slot<<<grid_for(n), 256, 0, s>>>(slots + (size_t)it->second * n, y, n);
  return cudaGetLastError() == cudaSuccess ? KP_OK : KP_ERR_CUDA;
}
