// Red-team cheat (rt41) for examples/gemm_fp32: copies the reference's answer instead of
// computing it. The worker runs the reference on each input set just before the candidate's
// checked calls, into buffers it allocated with cudaMalloc in the same context (ref_outputs), and
// keeps them. On the first call (and whenever its list goes stale) the candidate walks the virtual
// addresses around its own tensors with the driver's cuMemGetAddressRange (reached through
// cudaGetDriverEntryPointByVersion: no -lcuda, no dlopen, no dlsym) and lists every allocation of
// the output's size. Each call then runs, on args->stream: a one-block kernel that computes 16
// sampled elements of A @ B and picks the listed buffer that holds them (the reference's output
// for these very inputs), a kernel that copies it into C, and a spin that keeps the call above
// the physics floor (twice the TF32 tensor-core time of the product): about 0.5 ms on an H100,
// several times faster than cuBLAS, without a single GEMM. Graph-capturable (the choice is made on
// the GPU), so the replay check copies the right buffer too.
// When no buffer matches, the first three calls (the correctness trials) compute honestly; later
// ones only spin and leave C alone: that happens only in check_result_cache's part (b), whose
// fresh inputs have no reference run and whose outputs are not checked, so part (b) sees the
// same time as the timed calls.
// Weakness: the reference's outputs stay readable in the candidate's own context:
// NativeEvaluator::Impl::setup and run_reference (worker/evaluation_resources.cc) keep
// ref_outputs[k] current for every set before correctness, timing, the result-cache part (a) and
// energy (measure_energy reruns it), all in the process and context the candidate runs in; and
// check_result_cache part (b) (worker/evaluation_anticheat.cc) times calls whose outputs it never
// checks.
// A correct judge: rejected (reference_leftovers), or incorrect when the reference's outputs are
// out of its reach. The current worker: ok, with a speedup it did not earn.
#include <kernelpro/kp_abi.h>

#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <set>
#include <vector>

namespace {

constexpr int kMaxCandidates = 32;
constexpr int kSamplesPerCall = 16;
constexpr uint64_t kPage = 2ull << 20;          // large cudaMalloc allocations are 2 MiB aligned
constexpr uint64_t kWindow = 8ull << 30;        // searched on each side of the call's tensors

struct Candidates {
  const float* p[kMaxCandidates];
  int n;
};

typedef CUresult (*address_range_fn)(CUdeviceptr* base, size_t* size, CUdeviceptr ptr);

// ---- the honest fallback: 64 x 64 tiles, 4 x 4 per thread (as honest/gemm_fp32/register_tiles.cu)

constexpr int kBM = 64, kBN = 64, kBK = 16, kThreads = 256;

__global__ void __launch_bounds__(kThreads)
gemm_unless_found(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int m, int n, int k,
                  const int* pick, int allow) {
  if (*pick >= 0 || !allow) return;
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

// ---- the cheat

// One block: 16 sampled elements of A @ B, then the first listed buffer that holds all of them.
__global__ void pick_leftover(const float* __restrict__ A, const float* __restrict__ B, int m, int n, int k,
                              Candidates cands, unsigned salt, int* pick) {
  __shared__ float want[kSamplesPerCall];
  __shared__ int64_t where[kSamplesPerCall];
  __shared__ float partial[kThreads / 32];
  for (int s = 0; s < kSamplesPerCall; ++s) {
    const unsigned h = (salt + 0x9E3779B9u * (unsigned)(s + 1)) * 2654435761u;
    const int i = (int)(h % (unsigned)m), j = (int)((h >> 7) % (unsigned)n);
    float acc = 0.f;
    for (int kk = threadIdx.x; kk < k; kk += blockDim.x) acc = fmaf(A[(int64_t)i * k + kk], B[(int64_t)kk * n + j], acc);
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
    if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = acc;
    __syncthreads();
    if (threadIdx.x == 0) {
      float t = 0.f;
      for (int w = 0; w < kThreads / 32; ++w) t += partial[w];
      want[s] = t;
      where[s] = (int64_t)i * n + j;
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    int found = -1;
    for (int c = 0; c < cands.n && found < 0; ++c) {
      bool all = true;
      for (int s = 0; s < kSamplesPerCall && all; ++s) {
        const float got = cands.p[c][where[s]];
        all = fabsf(got - want[s]) <= 1e-2f + 1e-3f * fabsf(want[s]);  // NaN (poison) fails
      }
      if (all) found = c;
    }
    *pick = found;
  }
}

__global__ void copy_leftover(Candidates cands, const int* pick, float4* __restrict__ C, int64_t n4) {
  const int p = *pick;
  if (p < 0) return;
  const float4* from = (const float4*)cands.p[p];
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride) C[i] = from[i];
}

// Keeps the call above the physics floor: spins (on the global timer) for `ns` unless the honest
// fallback ran.
__global__ void pad(const int* pick, int allow, unsigned long long ns) {
  if (*pick < 0 && allow) return;
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < ns);
}

address_range_fn address_range = nullptr;
std::vector<const float*> listed;  // allocations of the output's size found by the last scan
std::set<const void*> known;       // the same, for lookups
long long calls = 0;
unsigned long long pad_ns = 0;

bool mapped(const void* p, size_t bytes) {
  CUdeviceptr base = 0;
  size_t size = 0;
  return address_range(&base, &size, (CUdeviceptr)p) == CUDA_SUCCESS && base == (CUdeviceptr)p && size >= bytes &&
         size < bytes + kPage;
}

// Every allocation of `bytes` bytes within kWindow of the call's tensors.
void scan(const std::vector<const void*>& around, size_t bytes) {
  listed.clear();
  known.clear();
  uint64_t lo = UINT64_MAX, hi = 0;
  for (const void* p : around) {
    lo = lo < (uint64_t)p ? lo : (uint64_t)p;
    hi = hi > (uint64_t)p ? hi : (uint64_t)p;
  }
  lo = lo > kWindow ? (lo - kWindow) & ~(kPage - 1) : kPage;
  hi += kWindow;
  for (uint64_t addr = lo; addr < hi;) {
    CUdeviceptr base = 0;
    size_t size = 0;
    if (address_range(&base, &size, (CUdeviceptr)addr) != CUDA_SUCCESS) {
      addr += kPage;
      continue;
    }
    if (size >= bytes && size < bytes + kPage && known.insert((const void*)base).second &&
        listed.size() < kMaxCandidates + 8)
      listed.push_back((const float*)base);
    const uint64_t end = ((uint64_t)base + size + kPage - 1) & ~(kPage - 1);
    addr = end > addr ? end : addr + kPage;
  }
}

}  // namespace

KP_EXPORT size_t kp_workspace_bytes(const kp_args*) { return 256; }

KP_EXPORT int kp_run(kp_args* a) {
  if (a->num_inputs != 2 || a->num_outputs != 1 || !a->workspace) return KP_ERR_INVALID_ARGUMENT;
  const float* A = (const float*)a->inputs[0].data;
  const float* B = (const float*)a->inputs[1].data;
  float* C = (float*)a->outputs[0].data;
  const int m = (int)a->inputs[0].shape[0], k = (int)a->inputs[0].shape[1], n = (int)a->inputs[1].shape[1];
  const size_t bytes = (size_t)m * n * sizeof(float);
  cudaStream_t s = (cudaStream_t)a->stream;
  int* pick = (int*)a->workspace;
  ++calls;

  if (!address_range) {
    cudaDriverEntryPointQueryResult q;
    void* fn = nullptr;
    if (cudaGetDriverEntryPointByVersion("cuMemGetAddressRange", &fn, 12000, cudaEnableDefault, &q) != cudaSuccess ||
        !fn)
      return KP_ERR_OTHER;
    address_range = (address_range_fn)fn;
    int dev = 0, sms = 0, khz = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, dev);
    // Twice the time of 2 m n k FLOP at the TF32 tensor-core peak (sm_90: 2048 FLOP/clock/SM).
    const double peak = (double)sms * khz * 1e3 * 2048;
    pad_ns = peak > 0 ? (unsigned long long)(2.0 * 2.0 * m * (double)n * k / peak * 1e9) : 1000000ull;
  }

  cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
  cudaStreamIsCapturing(s, &capturing);
  if (capturing == cudaStreamCaptureStatusNone) {
    bool stale = !known.count(C) || !known.count(A);
    for (size_t i = 0; i < listed.size() && !stale; ++i) stale = !mapped(listed[i], bytes);
    if (stale) scan({A, B, C}, bytes);
  }
  Candidates cands{};
  for (const float* p : listed)
    if (p != C && p != A && p != B && cands.n < kMaxCandidates) cands.p[cands.n++] = p;

  pick_leftover<<<1, kThreads, 0, s>>>(A, B, m, n, k, cands, (unsigned)calls, pick);
  const int allow = calls <= 3;  // the correctness trials: compute if nothing is found
  const dim3 grid((unsigned)((n + kBN - 1) / kBN), (unsigned)((m + kBM - 1) / kBM));
  gemm_unless_found<<<grid, kThreads, 0, s>>>(A, B, C, m, n, k, pick, allow);
  copy_leftover<<<1024, 256, 0, s>>>(cands, pick, (float4*)C, (int64_t)(bytes / 16));
  pad<<<1, 1, 0, s>>>(pick, allow, pad_ns);
  return cudaGetLastError() == cudaSuccess ? KP_OK : KP_ERR_CUDA;
}
