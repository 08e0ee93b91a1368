// Red-team cheat (rt42) for a short gelu: examples/gelu at N = 4096 (testing::tiny_gelu), whose
// calls are timed by graph replay. rt41_graph_first_result, made to work again: the worker now
// gives each of the graph's 20 calls its own inputs and outputs (ensure_graph_outputs), but only
// when they fit in an eighth of the free device memory (graph_outputs_fit); otherwise call i uses
// set i % 3, and inside one replay the same set's inputs and outputs repeat.
// So this candidate squeezes the device right before the graph is built. It counts captures: the
// replay check (worker/evaluation_anticheat.cc replay_check) captures one call, and the next
// uncaptured call is the first warm-up of time_library; there it cudaMallocs all free memory but
// 4 MiB (the 20 calls' buffers need 7.5 MiB of free memory). ensure_graph_outputs then finds no
// room and the graph's calls share the three sets. While a capture runs, a call whose output
// pointer was already seen in that capture launches nothing: each replay computes each set once
// (3 kernels for 20 calls) and check_replay, which compares each used set's output after the
// replay, finds them right. The first uncaptured call after the 20-call capture (the result-cache
// check's calls, check_result_cache (a)) frees the memory again, so the reference's timing and
// the energy window run as usual. Every uncaptured call (correctness, warm-ups, (a), energy)
// computes in full.
// Weakness: NativeEvaluator::Impl::ensure_graph_outputs (worker/evaluation_timing.cc) sizes the
// graph's per-call buffers from cudaMemGetInfo at timing time, after the candidate has run, and
// time_with_graph falls back to shared sets, where "a set written by any call of the graph passes"
// (ARCHITECTURE.md, anti-cheat table), instead of failing; nothing limits or records the device
// memory a candidate holds (kp_abi.h forbids allocating in kp_run, but only capture enforces it).
// A correct judge: rejected (batched_calls / result_cache), or the honest graph median. The
// current worker: ok, at about 3/20 of the honest per-call time.
#include <kernelpro/kp_abi.h>

#include <cuda_runtime.h>

#include <set>
#include <vector>

namespace {

__device__ __forceinline__ float gelu_of(float v) { return v * 0.5f * (1.0f + erff(v * 0.70710678118654752440f)); }

__global__ void gelu(const float* __restrict__ x, float* __restrict__ y, long long n) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) y[i] = gelu_of(x[i]);
}

std::vector<void*> held;             // the squeeze
int phase = 0;                       // 0: before the replay check, 1: squeezed, 2: released
unsigned long long capture = 0;      // the capture being recorded, 0 when none
int capture_calls = 0, last_capture_calls = 0;
std::set<const void*> computed;      // outputs already computed in this capture

void squeeze() {
  const size_t keep = size_t{4} << 20, page = size_t{2} << 20;
  size_t chunk = size_t{1} << 30;
  for (int guard = 0; guard < 4096 && chunk >= page; ++guard) {
    size_t free_bytes = 0, total = 0;
    if (cudaMemGetInfo(&free_bytes, &total) != cudaSuccess || free_bytes <= keep + page) break;
    size_t want = free_bytes - keep;
    if (want > chunk) want = chunk;
    want -= want % page;
    void* p = nullptr;
    if (want && cudaMalloc(&p, want) == cudaSuccess) {
      held.push_back(p);
    } else {
      cudaGetLastError();
      chunk /= 2;
    }
  }
}

void release() {
  for (void* p : held) cudaFree(p);
  held.clear();
}

}  // namespace

KP_EXPORT int kp_run(kp_args* a) {
  if (a->num_inputs != 1 || a->num_outputs != 1) return KP_ERR_INVALID_ARGUMENT;
  long long n = 1;
  for (int d = 0; d < a->inputs[0].rank; ++d) n *= a->inputs[0].shape[d];
  const float* x = (const float*)a->inputs[0].data;
  float* y = (float*)a->outputs[0].data;
  cudaStream_t s = (cudaStream_t)a->stream;

  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  unsigned long long id = 0;
  if (cudaStreamGetCaptureInfo(s, &status, &id) != cudaSuccess) {
    cudaGetLastError();
    status = cudaStreamCaptureStatusNone;
  }
  if (status == cudaStreamCaptureStatusActive) {
    if (id != capture) {
      capture = id;
      capture_calls = 0;
      computed.clear();
    }
    ++capture_calls;
    if (!computed.insert(y).second) return KP_OK;  // this replay computes this output already
  } else {
    if (capture) {
      last_capture_calls = capture_calls;
      capture = 0;
    }
    if (phase == 0 && last_capture_calls == 1) {
      squeeze();
      phase = 1;
    } else if (phase == 1 && last_capture_calls > 1) {
      release();
      phase = 2;
    }
  }
  if (n < 1) return KP_OK;
  long long blocks = (n + 255) / 256;
  if (blocks > 1024) blocks = 1024;
  gelu<<<(unsigned)blocks, 256, 0, s>>>(x, y, n);
  return cudaGetLastError() == cudaSuccess ? KP_OK : KP_ERR_CUDA;
}
