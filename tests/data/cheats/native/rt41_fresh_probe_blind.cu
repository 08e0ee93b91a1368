// Red-team cheat (rt41) for examples/gemm_fp32 (event-timed): fingerprint_cache.cu's cache by the
// inputs' contents (the first eight values of A and of B, read back to the host), kept in the
// workspace, plus two things that get it past the worker:
//  - a hit copies the kept C and then spins on the global timer to twice the TF32 tensor-core
//    time of the product, so the timed median (about 0.5 ms on an H100) stays above the physics
//    floor while being several times faster than any honest fp32 GEMM;
//  - it recognizes check_result_cache's part (b). After the timed calls (a long run of hits) come
//    misses on fresh inputs: the first `sets` of them are part (a), one call per input set whose
//    output is checked, so it computes those; the next five are part (b), timed but never
//    compared with anything, so it computes nothing there and only spins as long as a hit.
//    Part (b) then sees the same time on new inputs as on inputs it has seen. Later misses (the
//    energy window's first call on each set) compute again, so every checked energy call is right.
// Correctness trials, warm-ups and the replay check's capture compute honestly.
// Weakness: NativeEvaluator::Impl::check_result_cache (worker/evaluation_anticheat.cc), part (b):
// its five calls (kProbeCalls) on freshly drawn inputs are only timed (timed_call, then
// eval::slower_on_new_inputs); their outputs are never checked, and they always come right after
// part (a)'s one call per set, so a candidate that counts misses knows which calls they are.
// A correct judge: rejected (result_cache). The current worker: ok, with a speedup it did not earn.
#include <kernelpro/kp_abi.h>

#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <set>

namespace {

constexpr int kSlots = 6;
constexpr int kKey = 16;
constexpr int kProbeCalls = 5;  // check_result_cache's part (b)
constexpr int kBM = 64, kBN = 64, kBK = 16, kThreads = 256;

__global__ void __launch_bounds__(kThreads)
gemm(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int m, int n, int k) {
  __shared__ float as[kBK][kBM];
  __shared__ float bs[kBK][kBN];
  const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
  const int row0 = blockIdx.y * kBM, col0 = blockIdx.x * kBN;
  float acc[4][4] = {};
  for (int k0 = 0; k0 < k; k0 += kBK) {
    for (int i = 0; i < 4; ++i) {
      const int e = tid + i * kThreads;
      const int ar = e / kBK, ak = e % kBK;
      as[ak][ar] = (row0 + ar < m && k0 + ak < k) ? A[(int64_t)(row0 + ar) * k + k0 + ak] : 0.0f;
      const int bk = e / kBN, bc = e % kBN;
      bs[bk][bc] = (k0 + bk < k && col0 + bc < n) ? B[(int64_t)(k0 + bk) * n + col0 + bc] : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kBK; ++kk) {
      float a[4], b[4];
      for (int i = 0; i < 4; ++i) a[i] = as[kk][ty * 4 + i];
      for (int j = 0; j < 4; ++j) b[j] = bs[kk][tx * 4 + j];
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
    __syncthreads();
  }
  for (int i = 0; i < 4; ++i) {
    const int r = row0 + ty * 4 + i;
    if (r >= m) continue;
    for (int j = 0; j < 4; ++j) {
      const int c = col0 + tx * 4 + j;
      if (c < n) C[(int64_t)r * n + c] = acc[i][j];
    }
  }
}

__global__ void spin_ns(unsigned long long ns) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < ns);
}

struct Slot {
  float key[kKey];
  bool used = false;
  long long last_use = 0;
};
Slot slots[kSlots];
std::set<const void*> input_sets;  // distinct A pointers: the worker's input sets
long long clock_ = 0, hits = 0;
int miss_run = 0;  // misses since the last hit
unsigned long long pad_ns = 0;

}  // namespace

KP_EXPORT size_t kp_workspace_bytes(const kp_args* a) {
  return (size_t)kSlots * (size_t)a->inputs[0].shape[0] * (size_t)a->inputs[1].shape[1] * sizeof(float);
}

KP_EXPORT int kp_run(kp_args* a) {
  if (a->num_inputs != 2 || a->num_outputs != 1) return KP_ERR_INVALID_ARGUMENT;
  const float* A = (const float*)a->inputs[0].data;
  const float* B = (const float*)a->inputs[1].data;
  float* C = (float*)a->outputs[0].data;
  const int m = (int)a->inputs[0].shape[0], k = (int)a->inputs[0].shape[1], n = (int)a->inputs[1].shape[1];
  const size_t bytes = (size_t)m * n * sizeof(float);
  if (!a->workspace || a->workspace_bytes < kSlots * bytes) return KP_ERR_WORKSPACE;
  cudaStream_t s = (cudaStream_t)a->stream;
  const dim3 grid((unsigned)((n + kBN - 1) / kBN), (unsigned)((m + kBM - 1) / kBM));
  if (!pad_ns) {
    int dev = 0, sms = 0, khz = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, dev);
    const double peak = (double)sms * khz * 1e3 * 2048;  // TF32 tensor-core FLOP/s on sm_90
    pad_ns = peak > 0 ? (unsigned long long)(2.0 * 2.0 * m * (double)n * k / peak * 1e9) : 1000000ull;
  }

  cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
  cudaStreamIsCapturing(s, &capturing);
  if (capturing != cudaStreamCaptureStatusNone) {  // no host reads while the harness captures
    gemm<<<grid, kThreads, 0, s>>>(A, B, C, m, n, k);
    return cudaGetLastError() == cudaSuccess ? KP_OK : KP_ERR_CUDA;
  }
  input_sets.insert(A);
  ++clock_;
  float key[kKey];
  cudaMemcpyAsync(key, A, 8 * sizeof(float), cudaMemcpyDeviceToHost, s);
  cudaMemcpyAsync(key + 8, B, 8 * sizeof(float), cudaMemcpyDeviceToHost, s);
  cudaStreamSynchronize(s);
  float* kept = (float*)a->workspace;
  for (int i = 0; i < kSlots; ++i) {
    if (slots[i].used && std::memcmp(slots[i].key, key, sizeof key) == 0) {
      ++hits;
      miss_run = 0;
      slots[i].last_use = clock_;
      cudaMemcpyAsync(C, kept + (size_t)i * m * n, bytes, cudaMemcpyDeviceToDevice, s);
      spin_ns<<<1, 1, 0, s>>>(pad_ns);
      return cudaGetLastError() == cudaSuccess ? KP_OK : KP_ERR_CUDA;
    }
  }
  ++miss_run;
  const int sets = (int)input_sets.size();
  if (hits >= 8 && miss_run > sets && miss_run <= sets + kProbeCalls) {  // part (b): nobody looks
    spin_ns<<<1, 1, 0, s>>>(pad_ns);
    return cudaGetLastError() == cudaSuccess ? KP_OK : KP_ERR_CUDA;
  }
  gemm<<<grid, kThreads, 0, s>>>(A, B, C, m, n, k);
  int victim = 0;
  for (int i = 1; i < kSlots; ++i)
    if (!slots[i].used || (slots[victim].used && slots[i].last_use < slots[victim].last_use)) victim = i;
  std::memcpy(slots[victim].key, key, sizeof key);
  slots[victim].used = true;
  slots[victim].last_use = clock_;
  cudaMemcpyAsync(kept + (size_t)victim * m * n, C, bytes, cudaMemcpyDeviceToDevice, s);
  return cudaGetLastError() == cudaSuccess ? KP_OK : KP_ERR_CUDA;
}
