// Red-team cheat (rt41) for a short gelu: examples/gelu at N = 4096 (testing::tiny_gelu), timed by
// graph replay. A result cache decided on the GPU from a sample of the input: each call first runs
// a one-warp kernel that reads 32 scattered elements of x and compares them with the sample kept
// for this input pointer's slot in the workspace. On a match, the work kernel copies the output
// kept in that slot into y; on a miss it computes y (the work, with a spin standing in for an
// expensive kernel as in output_probe.cu), keeps it and the new sample. No host sync, no
// allocation: it captures into a graph like an honest candidate, and inputs redrawn in place miss
// the sample, so every checked call is right. Graph replays, whose inputs never change, are all
// hits: copies.
// Weakness: NativeEvaluator::Impl::check_result_cache (worker/evaluation_anticheat.cc) catches a
// cache keyed by the inputs' contents only in its part (b), the timed calls on fresh inputs, and
// part (b) runs only when timing.method == "events"; under graph replay (time_with_graph) nothing
// times a call on inputs it has not seen. Part (a) redraws the inputs, which the sample sees.
// (Also its warm-ups: set 0 and later calls on sets 1 and 2 hit, so the median warm-up is a hit
// and use_graph_replay chooses the graph even when the honest work would be event-timed.)
// A correct judge: rejected (result_cache). The current worker: ok, timed on copies.
#include <kernelpro/kp_abi.h>

#include <cuda_runtime.h>

#include <cstdint>
#include <map>

namespace {

constexpr int kSlots = 8;
constexpr int kSamples = 32;
constexpr long long kSpinCycles = 8000;

// Workspace layout: per slot, kSamples sample words, one hit flag, then the kept output.
struct Layout {
  long long n;
  size_t slot_bytes() const { return (size_t)(kSamples + 4) * 4 + (size_t)n * 4 + 256; }
  uint32_t* sample(void* ws, int slot) const { return (uint32_t*)((char*)ws + slot * slot_bytes()); }
  int* flag(void* ws, int slot) const { return (int*)(sample(ws, slot) + kSamples); }
  float* kept(void* ws, int slot) const {
    return (float*)((char*)ws + slot * slot_bytes() + (((size_t)(kSamples + 4) * 4 + 255) & ~(size_t)255));
  }
};

__device__ float gelu_of(float v) { return v * 0.5f * (1.f + erff(v * 0.70710678f)); }

__device__ long long sample_index(int lane, long long n) {
  return (long long)(((unsigned long long)lane * 2654435761ull + 12345ull) % (unsigned long long)n);
}

// One warp: hit when all 32 sampled words equal the kept sample; on a miss, keep the new one.
__global__ void decide(const float* __restrict__ x, long long n, uint32_t* sample, int* flag) {
  const int lane = threadIdx.x;
  const uint32_t v = __float_as_uint(x[sample_index(lane, n)]);
  const bool same = sample[lane] == v;
  const bool hit = __all_sync(0xffffffffu, same);
  if (!hit) sample[lane] = v;
  if (lane == 0) *flag = hit ? 1 : 0;
}

__global__ void work(const float* __restrict__ x, float* __restrict__ y, float* __restrict__ kept, long long n,
                     const int* flag, long long spin) {
  const bool hit = *flag != 0;
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    if (hit) {
      y[i] = kept[i];
    } else {
      const float v = gelu_of(x[i]);
      y[i] = v;
      kept[i] = v;
    }
  }
  if (hit) return;
  const long long t0 = clock64();
  while (clock64() - t0 < spin) {
  }
}

std::map<const void*, int> slot_of;  // input pointer -> slot (host-side bookkeeping only)
int next_slot = 0;

long long numel(const kp_tensor& t) {
  long long n = 1;
  for (int d = 0; d < t.rank; ++d) n *= t.shape[d];
  return n;
}

}  // namespace

KP_EXPORT size_t kp_workspace_bytes(const kp_args* a) {
  Layout l{numel(a->inputs[0])};
  return kSlots * l.slot_bytes();
}

KP_EXPORT int kp_run(kp_args* a) {
  const float* x = (const float*)a->inputs[0].data;
  float* y = (float*)a->outputs[0].data;
  const long long n = numel(a->inputs[0]);
  Layout l{n};
  if (!a->workspace || a->workspace_bytes < kSlots * l.slot_bytes() || n < 1) return KP_ERR_WORKSPACE;
  cudaStream_t s = (cudaStream_t)a->stream;
  auto it = slot_of.find(x);
  if (it == slot_of.end()) it = slot_of.emplace(x, next_slot++ % kSlots).first;
  const int slot = it->second;
  decide<<<1, 32, 0, s>>>(x, n, l.sample(a->workspace, slot), l.flag(a->workspace, slot));
  long long blocks = (n + 255) / 256;
  if (blocks > 1024) blocks = 1024;
  work<<<(unsigned)blocks, 256, 0, s>>>(x, y, l.kept(a->workspace, slot), n, l.flag(a->workspace, slot), kSpinCycles);
  return cudaGetLastError() == cudaSuccess ? KP_OK : KP_ERR_CUDA;
}
