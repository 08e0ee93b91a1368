// The microbenchmarks of `kernelpro calibrate` (contract in calibrate.h).
#include "worker/calibrate.h"

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <cublas_api.h>  // types and enums only: cuBLAS is loaded with dlopen, never linked
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

namespace kp::worker {
namespace {

std::string printf_string(const char* format, ...) __attribute__((format(printf, 1, 2)));
std::string printf_string(const char* format, ...) {
  char buf[1024];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buf, sizeof buf, format, args);
  va_end(args);
  return buf;
}

std::string sci(double v) { return printf_string("%.3g", v); }

Error cuda_failure(const std::string& what, cudaError_t e) {
  return make_error(ErrorCode::kTool, printf_string("calibrate: %s failed: %s (%s); the CUDA context may be lost",
                                                    what.c_str(), cudaGetErrorString(e), cudaGetErrorName(e)));
}

#define KP_CAL_CUDA(what, expr)                                         \
  do {                                                                  \
    cudaError_t kp_cal_e_ = (expr);                                     \
    if (kp_cal_e_ != cudaSuccess) return cuda_failure(what, kp_cal_e_); \
  } while (0)

// Device memory owned for one benchmark. allocate() clears an out-of-memory error, which is
// not sticky, so the caller can report the figure as not measured.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    if (ptr_) cudaFree(ptr_);
  }
  cudaError_t allocate(size_t bytes) {
    cudaError_t e = cudaMalloc(&ptr_, bytes);
    if (e != cudaSuccess) {
      ptr_ = nullptr;
      cudaGetLastError();
    }
    return e;
  }
  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }

 private:
  void* ptr_ = nullptr;
};

// The stream and events every benchmark times on, and how many launches it times.
struct Timer {
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  int warmup = 2, reps = 7;
  double target_s = 2e-3;  // one launch should last about this long

  ~Timer() {
    if (stream) cudaStreamSynchronize(stream);
    if (start) cudaEventDestroy(start);
    if (stop) cudaEventDestroy(stop);
    if (stream) cudaStreamDestroy(stream);
  }

  Result<double> once(const std::function<cudaError_t()>& launch) const {
    KP_CAL_CUDA("cudaEventRecord", cudaEventRecord(start, stream));
    KP_CAL_CUDA("a benchmark launch", launch());
    KP_CAL_CUDA("cudaEventRecord", cudaEventRecord(stop, stream));
    KP_CAL_CUDA("a benchmark (cudaEventSynchronize)", cudaEventSynchronize(stop));
    float ms = 0;
    KP_CAL_CUDA("cudaEventElapsedTime", cudaEventElapsedTime(&ms, start, stop));
    return static_cast<double>(ms) * 1e-3;
  }

  // The shortest of `reps` timed launches after `warmup` untimed ones, seconds.
  Result<double> best(const std::function<cudaError_t()>& launch) const {
    for (int i = 0; i < warmup; ++i) KP_CAL_CUDA("a warm-up launch", launch());
    double best_s = std::numeric_limits<double>::infinity();
    for (int i = 0; i < reps; ++i) {
      KP_TRY(double s, once(launch));
      best_s = std::min(best_s, s);
    }
    return best_s;
  }

  // Chooses `count` (iterations or passes of the kernel) so that one launch lasts about
  // target_s, starting from count0, then times it as best() does.
  struct Scaled {
    double seconds = 0;
    int64_t count = 0;
  };
  Result<Scaled> scaled(int64_t count0, int64_t max_count, const std::function<cudaError_t(int64_t)>& launch) const {
    int64_t count = count0;
    KP_CAL_CUDA("a first launch", launch(count));  // module load, clocks up
    for (int step = 0; step < 6; ++step) {
      KP_TRY(double s, once([&] { return launch(count); }));
      if (s >= 0.5 * target_s || count >= max_count) break;
      double factor = s > 0 ? std::min(64.0, target_s / s) : 64.0;
      count = std::min(max_count, std::max(count * 2, static_cast<int64_t>(static_cast<double>(count) * factor)));
    }
    KP_TRY(double best_s, best([&] { return launch(count); }));
    return Scaled{best_s, count};
  }
};

// ---------------------------------------------------------------------------------------------
// Memory

__global__ void copy_kernel(const int4* __restrict__ src, int4* __restrict__ dst, size_t n) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (; i + 3 * stride < n; i += 4 * stride) {  // four 16-byte loads in flight per thread
    int4 a = src[i], b = src[i + stride], c = src[i + 2 * stride], d = src[i + 3 * stride];
    dst[i] = a;
    dst[i + stride] = b;
    dst[i + 2 * stride] = c;
    dst[i + 3 * stride] = d;
  }
  for (; i < n; i += stride) dst[i] = src[i];
}

// `passes` sweeps over buf with L2-only loads; the sum is written only when it equals `flag`
// (never, but the compiler cannot know), so the loads are not dead.
__global__ void l2_read_kernel(const int4* __restrict__ buf, size_t n, int passes, int flag, int* out) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  const size_t first = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  int sum = 0;
  for (int p = 0; p < passes; ++p) {
#pragma unroll 4
    for (size_t i = first; i < n; i += stride) {
      int4 v = __ldcg(buf + i);
      sum += v.x + v.y + v.z + v.w;
    }
  }
  if (sum == flag) out[first] = sum;
}

// ---------------------------------------------------------------------------------------------
// CUDA-core arithmetic: kChains independent FMA chains per thread, kUnroll steps per iteration.

constexpr int kChains = 8;
constexpr int kUnroll = 16;
constexpr int kThreads = 256;
constexpr int kWaves = 4;  // blocks = SMs x resident blocks per SM x kWaves

__device__ __forceinline__ float fma_step(float a, float b, float c) { return fmaf(a, b, c); }
__device__ __forceinline__ double fma_step(double a, double b, double c) { return fma(a, b, c); }
__device__ __forceinline__ __half2 fma_step(__half2 a, __half2 b, __half2 c) { return __hfma2(a, b, c); }

template <typename T>
__device__ __forceinline__ T from_float(float v);
template <>
__device__ __forceinline__ float from_float<float>(float v) {
  return v;
}
template <>
__device__ __forceinline__ double from_float<double>(float v) {
  return v;
}
template <>
__device__ __forceinline__ __half2 from_float<__half2>(float v) {
  return __floats2half2_rn(v, v * 0.5f);
}

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(double v) { return static_cast<float>(v); }
__device__ __forceinline__ float to_float(__half2 v) { return __low2float(v) + __high2float(v); }

// a = a * b + c converges to c / (1 - b) (about 1 for the arguments used), so no chain leaves
// the normal range. Each chain starts elsewhere, so none can be merged with another.
template <typename T>
__global__ void fma_chains_kernel(T* out, int iters, float b_in, float c_in, float start, float flag) {
  const T b = from_float<T>(b_in), c = from_float<T>(c_in);
  T a[kChains];
#pragma unroll
  for (int k = 0; k < kChains; ++k) a[k] = from_float<T>(start + 0.01f * k + 1e-6f * threadIdx.x);
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
#pragma unroll
      for (int k = 0; k < kChains; ++k) a[k] = fma_step(a[k], b, c);
    }
  }
  float sum = 0;
#pragma unroll
  for (int k = 0; k < kChains; ++k) sum += to_float(a[k]);
  if (sum == flag) out[static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x] = a[0];
}

// ---------------------------------------------------------------------------------------------
// Warp-level tensor cores (mma.sync) on registers only: the peak of the mma.sync path. These
// shapes need sm_80 code; a build for older targets only (CMAKE_CUDA_ARCHITECTURES) gets empty
// kernels, which measure_mma detects and reports instead of timing.

constexpr int kMmaChains = 4;
constexpr int kMmaUnroll = 8;

__device__ __forceinline__ uint32_t mix32(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352dU;
  x ^= x >> 15;
  x *= 0x846ca68bU;
  x ^= x >> 16;
  return x;
}
// In [-1, 1).
__device__ __forceinline__ float unit(uint32_t h) { return static_cast<float>(h >> 8) * (2.0f / 16777216.0f) - 1.0f; }

template <typename T>
__device__ __forceinline__ uint32_t bits_of(T v) {
  static_assert(sizeof(T) == 4, "a 32-bit register");
  uint32_t r;
  memcpy(&r, &v, 4);
  return r;
}

struct MmaFp16 {  // m16n8k16, fp16 x fp16 -> fp32
  static constexpr double kFlop = 2.0 * 16 * 8 * 16;
  struct Acc {
    float d[4];
  };
  struct Frag {
    uint32_t a[4], b[2];
  };
  __device__ static Frag frag(uint32_t h) {
    Frag f;
    for (int i = 0; i < 4; ++i) f.a[i] = bits_of(__floats2half2_rn(unit(mix32(h + 2 * i)), unit(mix32(h + 2 * i + 1))));
    for (int i = 0; i < 2; ++i)
      f.b[i] = bits_of(__floats2half2_rn(unit(mix32(h + 20 + 2 * i)), unit(mix32(h + 21 + 2 * i))));
    return f;
  }
  __device__ static void init(Acc& c, int k) {
    for (int i = 0; i < 4; ++i) c.d[i] = static_cast<float>(k * 4 + i);
  }
  __device__ static void mma(Acc& c, const Frag& f) {
#if __CUDA_ARCH__ >= 800
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
        : "+f"(c.d[0]), "+f"(c.d[1]), "+f"(c.d[2]), "+f"(c.d[3])
        : "r"(f.a[0]), "r"(f.a[1]), "r"(f.a[2]), "r"(f.a[3]), "r"(f.b[0]), "r"(f.b[1]));
#endif
  }
  __device__ static double total(const Acc& c) { return c.d[0] + c.d[1] + c.d[2] + c.d[3]; }
};

struct MmaBf16 {  // m16n8k16, bf16 x bf16 -> fp32
  static constexpr double kFlop = 2.0 * 16 * 8 * 16;
  using Acc = MmaFp16::Acc;
  using Frag = MmaFp16::Frag;
  __device__ static Frag frag(uint32_t h) {
    Frag f;
    for (int i = 0; i < 4; ++i)
      f.a[i] = bits_of(__floats2bfloat162_rn(unit(mix32(h + 2 * i)), unit(mix32(h + 2 * i + 1))));
    for (int i = 0; i < 2; ++i)
      f.b[i] = bits_of(__floats2bfloat162_rn(unit(mix32(h + 20 + 2 * i)), unit(mix32(h + 21 + 2 * i))));
    return f;
  }
  __device__ static void init(Acc& c, int k) { MmaFp16::init(c, k); }
  __device__ static void mma(Acc& c, const Frag& f) {
#if __CUDA_ARCH__ >= 800
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
        : "+f"(c.d[0]), "+f"(c.d[1]), "+f"(c.d[2]), "+f"(c.d[3])
        : "r"(f.a[0]), "r"(f.a[1]), "r"(f.a[2]), "r"(f.a[3]), "r"(f.b[0]), "r"(f.b[1]));
#endif
  }
  __device__ static double total(const Acc& c) { return MmaFp16::total(c); }
};

struct MmaTf32 {  // m16n8k8, tf32 x tf32 -> fp32
  static constexpr double kFlop = 2.0 * 16 * 8 * 8;
  using Acc = MmaFp16::Acc;
  using Frag = MmaFp16::Frag;
  __device__ static Frag frag(uint32_t h) {
    Frag f;
    for (int i = 0; i < 4; ++i) f.a[i] = bits_of(unit(mix32(h + i)));
    for (int i = 0; i < 2; ++i) f.b[i] = bits_of(unit(mix32(h + 20 + i)));
    return f;
  }
  __device__ static void init(Acc& c, int k) { MmaFp16::init(c, k); }
  __device__ static void mma(Acc& c, const Frag& f) {
#if __CUDA_ARCH__ >= 800
    asm volatile(
        "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
        : "+f"(c.d[0]), "+f"(c.d[1]), "+f"(c.d[2]), "+f"(c.d[3])
        : "r"(f.a[0]), "r"(f.a[1]), "r"(f.a[2]), "r"(f.a[3]), "r"(f.b[0]), "r"(f.b[1]));
#endif
  }
  __device__ static double total(const Acc& c) { return MmaFp16::total(c); }
};

struct MmaInt8 {  // m16n8k32, s8 x s8 -> s32 (wraps; only the rate matters)
  static constexpr double kFlop = 2.0 * 16 * 8 * 32;
  struct Acc {
    int d[4];
  };
  using Frag = MmaFp16::Frag;
  __device__ static Frag frag(uint32_t h) {
    Frag f;
    for (int i = 0; i < 4; ++i) f.a[i] = mix32(h + i) | 0x01010101U;  // no zero bytes
    for (int i = 0; i < 2; ++i) f.b[i] = mix32(h + 20 + i) | 0x01010101U;
    return f;
  }
  __device__ static void init(Acc& c, int k) {
    for (int i = 0; i < 4; ++i) c.d[i] = k * 4 + i;
  }
  __device__ static void mma(Acc& c, const Frag& f) {
#if __CUDA_ARCH__ >= 800
    asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+r"(c.d[0]), "+r"(c.d[1]), "+r"(c.d[2]), "+r"(c.d[3])
                 : "r"(f.a[0]), "r"(f.a[1]), "r"(f.a[2]), "r"(f.a[3]), "r"(f.b[0]), "r"(f.b[1]));
#endif
  }
  __device__ static double total(const Acc& c) { return static_cast<double>(c.d[0]) + c.d[1] + c.d[2] + c.d[3]; }
};

struct MmaFp64 {  // m8n8k4, fp64 x fp64 -> fp64 (DMMA)
  static constexpr double kFlop = 2.0 * 8 * 8 * 4;
  struct Acc {
    double d[2];
  };
  struct Frag {
    double a, b;
  };
  __device__ static Frag frag(uint32_t h) { return Frag{unit(mix32(h)), unit(mix32(h + 1))}; }
  __device__ static void init(Acc& c, int k) {
    c.d[0] = k * 2;
    c.d[1] = k * 2 + 1;
  }
  __device__ static void mma(Acc& c, const Frag& f) {
#if __CUDA_ARCH__ >= 800
    asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%0,%1};"
                 : "+d"(c.d[0]), "+d"(c.d[1])
                 : "d"(f.a), "d"(f.b));
#endif
  }
  __device__ static double total(const Acc& c) { return c.d[0] + c.d[1]; }
};

template <typename Op>
__global__ void mma_kernel(typename Op::Acc* out, int iters, uint32_t seed, double flag) {
  const typename Op::Frag f = Op::frag(mix32(seed ^ (blockIdx.x * blockDim.x + threadIdx.x)) * 64);
  typename Op::Acc acc[kMmaChains];
#pragma unroll
  for (int k = 0; k < kMmaChains; ++k) Op::init(acc[k], k);
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int u = 0; u < kMmaUnroll; ++u) {
#pragma unroll
      for (int k = 0; k < kMmaChains; ++k) Op::mma(acc[k], f);
    }
  }
  double sum = 0;
#pragma unroll
  for (int k = 0; k < kMmaChains; ++k) sum += Op::total(acc[k]);
  if (sum == flag) out[static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x] = acc[0];
}

// ---------------------------------------------------------------------------------------------
// Random GEMM operands for cuBLAS: uniform in [-1, 1) (int8: [-64, 63], never 0).

template <typename T>
__device__ __forceinline__ T random_value(uint32_t h);
template <>
__device__ __forceinline__ __half random_value<__half>(uint32_t h) {
  return __float2half(unit(h));
}
template <>
__device__ __forceinline__ __nv_bfloat16 random_value<__nv_bfloat16>(uint32_t h) {
  return __float2bfloat16(unit(h));
}
template <>
__device__ __forceinline__ float random_value<float>(uint32_t h) {
  return unit(h);
}
template <>
__device__ __forceinline__ double random_value<double>(uint32_t h) {
  return unit(h);
}
template <>
__device__ __forceinline__ int8_t random_value<int8_t>(uint32_t h) {
  int v = static_cast<int>(h % 127U) - 63;
  return static_cast<int8_t>(v == 0 ? 1 : v);
}

template <typename T>
__global__ void fill_random_kernel(T* p, size_t n, uint32_t seed) {
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    p[i] = random_value<T>(mix32(static_cast<uint32_t>(i) ^ mix32(seed + static_cast<uint32_t>(i >> 32))));
}

// ---------------------------------------------------------------------------------------------
// cuBLAS through dlopen.

struct Cublas {
  void* lib = nullptr;
  std::string path;
  cublasStatus_t (*create)(cublasHandle_t*) = nullptr;
  cublasStatus_t (*destroy)(cublasHandle_t) = nullptr;
  cublasStatus_t (*set_stream)(cublasHandle_t, cudaStream_t) = nullptr;
  cublasStatus_t (*set_math_mode)(cublasHandle_t, cublasMath_t) = nullptr;
  cublasStatus_t (*gemm_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*,
                            const void*, cudaDataType, int, const void*, cudaDataType, int, const void*, void*,
                            cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t) = nullptr;
  cublasStatus_t (*dgemm)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const double*,
                          const double*, int, const double*, int, const double*, double*, int) = nullptr;
};

// Loads cuBLAS, RTLD_LOCAL so that its symbols never become visible to candidates loaded later
// into this worker. It stays loaded for the worker's life (unloading cuBLAS is not worth the risk
// of its exit handlers). Returns the reason when it cannot.
std::string load_cublas(Cublas* api) {
  const char* kName = "libcublas.so.13";
  std::vector<std::string> candidates = {kName};
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"})
    if (const char* v = std::getenv(var); v && *v) candidates.push_back(std::string(v) + "/lib64/" + kName);
  candidates.push_back(std::string("/usr/local/cuda/lib64/") + kName);
  candidates.push_back(std::string("/usr/local/cuda-13.0/targets/x86_64-linux/lib/") + kName);
  std::string first_error;
  for (const std::string& c : candidates) {
    api->lib = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (api->lib) break;
    if (first_error.empty()) first_error = dlerror();
  }
  if (!api->lib)
    return printf_string("libcublas.so.13 not found (%s; also looked in $CUDA_HOME/lib64 and /usr/local/cuda/lib64)",
                         first_error.c_str());
  auto sym = [&](const char* name) { return dlsym(api->lib, name); };
  api->create = reinterpret_cast<decltype(api->create)>(sym("cublasCreate_v2"));
  api->destroy = reinterpret_cast<decltype(api->destroy)>(sym("cublasDestroy_v2"));
  api->set_stream = reinterpret_cast<decltype(api->set_stream)>(sym("cublasSetStream_v2"));
  api->set_math_mode = reinterpret_cast<decltype(api->set_math_mode)>(sym("cublasSetMathMode"));
  api->gemm_ex = reinterpret_cast<decltype(api->gemm_ex)>(sym("cublasGemmEx"));
  api->dgemm = reinterpret_cast<decltype(api->dgemm)>(sym("cublasDgemm_v2"));
  if (!api->create || !api->destroy || !api->set_stream || !api->set_math_mode || !api->gemm_ex || !api->dgemm)
    return "libcublas.so.13 lacks one of cublasCreate_v2, cublasDestroy_v2, cublasSetStream_v2, cublasSetMathMode, "
           "cublasGemmEx, cublasDgemm_v2";
  Dl_info info{};
  api->path = dladdr(reinterpret_cast<void*>(api->create), &info) && info.dli_fname ? info.dli_fname : kName;
  return "";
}

// ---------------------------------------------------------------------------------------------
// The benchmarks. Each returns a figure (0 with the reason when it could not be measured), or an
// Error after a CUDA failure.

struct Context {
  int device = 0;
  int sm_count = 0;
  int64_t l2_bytes = 0;
  int peak_clock_mhz = 0;
  int cc_major = 0, cc_minor = 0;
  Timer timer;
  const CalibrateOptions* options = nullptr;
  double lowest_clock_mhz = 0;  // over the compute benchmarks, from NVML

  int threads_per_sm = 2048;
  std::string reps_text() const { return printf_string("best of %d after %d warm-up", timer.reps, timer.warmup); }
  void read_clock() {
    if (!options->read_sm_clock_mhz) return;
    unsigned mhz = options->read_sm_clock_mhz();
    if (mhz > 0 && (lowest_clock_mhz == 0 || mhz < lowest_clock_mhz)) lowest_clock_mhz = mhz;
  }
  // Blocks of kThreads for `kernel` to fill every SM `waves` times.
  template <typename K>
  Result<int> blocks_for(K kernel, int waves) const {
    int per_sm = 0;
    KP_CAL_CUDA("cudaOccupancyMaxActiveBlocksPerMultiprocessor",
                cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kThreads, 0));
    return std::max(1, per_sm) * sm_count * waves;
  }
};

size_t free_memory() {
  size_t free_bytes = 0, total = 0;
  if (cudaMemGetInfo(&free_bytes, &total) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return free_bytes;
}

std::string gib(double bytes) { return printf_string("%.3g GiB", bytes / 1073741824.0); }
std::string mib(double bytes) { return printf_string("%.3g MiB", bytes / 1048576.0); }

Result<CalibrationFigure> measure_dram(Context& ctx) {
  const size_t wanted = std::max<size_t>(size_t{2} << 30, static_cast<size_t>(8 * ctx.l2_bytes));
  const size_t bytes = std::min(wanted, static_cast<size_t>(static_cast<double>(free_memory()) / 2.5)) & ~size_t{4095};
  if (bytes < (size_t{64} << 20))
    return CalibrationFigure{0,
                             printf_string("not measured: %s of free device memory is too little for two copy buffers",
                                           gib(static_cast<double>(free_memory())).c_str())};
  DeviceBuffer src, dst;
  if (src.allocate(bytes) != cudaSuccess || dst.allocate(bytes) != cudaSuccess)
    return CalibrationFigure{0, "not measured: cannot allocate two buffers of " + gib(static_cast<double>(bytes))};
  KP_CAL_CUDA("cudaMemsetAsync", cudaMemsetAsync(src.as<void>(), 0x5a, bytes, ctx.timer.stream));
  KP_CAL_CUDA("cudaMemsetAsync", cudaMemsetAsync(dst.as<void>(), 0, bytes, ctx.timer.stream));
  const size_t n = bytes / sizeof(int4);
  KP_TRY(int blocks, ctx.blocks_for(copy_kernel, 1));
  auto copy = [&] {
    copy_kernel<<<blocks, kThreads, 0, ctx.timer.stream>>>(src.as<int4>(), dst.as<int4>(), n);
    return cudaGetLastError();
  };
  auto memcpy_d2d = [&] {
    return cudaMemcpyAsync(dst.as<void>(), src.as<void>(), bytes, cudaMemcpyDeviceToDevice, ctx.timer.stream);
  };
  KP_TRY(double kernel_s, ctx.timer.best(copy));
  KP_TRY(double memcpy_s, ctx.timer.best(memcpy_d2d));
  const double moved = 2.0 * static_cast<double>(bytes);
  std::string note = bytes < wanted ? printf_string(" (less than 8 x L2: only %s free)",
                                                    gib(static_cast<double>(free_memory())).c_str())
                                    : "";
  // The ceiling is the faster of the two: both are honest ways to move the bytes, and on the
  // H200 the copy engine path of cudaMemcpy reached 4.27e12 B/s against the kernel's 3.91e12.
  const double kernel_rate = moved / kernel_s, memcpy_rate = moved / memcpy_s;
  return CalibrationFigure{
      std::max(kernel_rate, memcpy_rate),
      printf_string("max of a copy kernel (128-bit grid-stride loads and stores: %s B/s) and cudaMemcpy "
                    "device-to-device (%s B/s), %s read + %s written%s, %s: %s",
                    sci(kernel_rate).c_str(), sci(memcpy_rate).c_str(), gib(static_cast<double>(bytes)).c_str(),
                    gib(static_cast<double>(bytes)).c_str(), note.c_str(), ctx.reps_text().c_str(),
                    memcpy_rate > kernel_rate ? "cudaMemcpy" : "the kernel")};
}

Result<CalibrationFigure> measure_l2(Context& ctx) {
  if (ctx.l2_bytes <= 0) return CalibrationFigure{0, "not measured: the device reports no L2 cache size"};
  const size_t bytes = static_cast<size_t>(ctx.l2_bytes / 4) & ~size_t{4095};
  DeviceBuffer buf, out;
  KP_TRY(int blocks, ctx.blocks_for(l2_read_kernel, 1));
  if (buf.allocate(bytes) != cudaSuccess ||
      out.allocate(static_cast<size_t>(blocks) * kThreads * sizeof(int)) != cudaSuccess)
    return CalibrationFigure{0, "not measured: cannot allocate " + mib(static_cast<double>(bytes))};
  KP_CAL_CUDA("cudaMemsetAsync", cudaMemsetAsync(buf.as<void>(), 1, bytes, ctx.timer.stream));
  const size_t n = bytes / sizeof(int4);
  auto read = [&](int64_t passes) {
    l2_read_kernel<<<blocks, kThreads, 0, ctx.timer.stream>>>(buf.as<int4>(), n, static_cast<int>(passes), -7,
                                                              out.as<int>());
    return cudaGetLastError();
  };
  KP_TRY(Timer::Scaled r, ctx.timer.scaled(4, 1 << 20, read));
  return CalibrationFigure{
      static_cast<double>(bytes) * static_cast<double>(r.count) / r.seconds,
      printf_string("128-bit ld.global.cg reads (L1 bypassed) of a %s buffer (L2 / 4) resident in "
                    "L2, %lld passes per launch, %s",
                    mib(static_cast<double>(bytes)).c_str(), static_cast<long long>(r.count), ctx.reps_text().c_str())};
}

template <typename T>
Result<CalibrationFigure> measure_fma(Context& ctx, const char* instruction, double flop_per_op, float b, float c) {
  KP_TRY(int blocks, ctx.blocks_for(fma_chains_kernel<T>, kWaves));
  DeviceBuffer out;
  if (out.allocate(static_cast<size_t>(blocks) * kThreads * sizeof(T)) != cudaSuccess)
    return CalibrationFigure{0, "not measured: cannot allocate the output buffer"};
  auto chains = [&](int64_t iters) {
    fma_chains_kernel<T>
        <<<blocks, kThreads, 0, ctx.timer.stream>>>(out.as<T>(), static_cast<int>(iters), b, c, 0.5f, -1e30f);
    return cudaGetLastError();
  };
  KP_TRY(Timer::Scaled r, ctx.timer.scaled(16, 1 << 22, chains));
  ctx.read_clock();
  const double ops = static_cast<double>(blocks) * kThreads * static_cast<double>(r.count) * kUnroll * kChains;
  return CalibrationFigure{
      ops * flop_per_op / r.seconds,
      printf_string("%s chains, %d independent per thread, %g FLOP each, %d blocks of %d threads "
                    "(%d waves), %s",
                    instruction, kChains, flop_per_op, blocks, kThreads, kWaves, ctx.reps_text().c_str())};
}

// The own mma.sync kernel's rate, FLOP/s (or OP/s); 0 with the reason as method when it could
// not be measured.
template <typename Op>
Result<CalibrationFigure> measure_mma(Context& ctx) {
  if (ctx.cc_major < 8)
    return CalibrationFigure{
        0, printf_string("not measured: mma.sync of this shape needs compute capability 8.0, the GPU has %d.%d",
                         ctx.cc_major, ctx.cc_minor)};
  cudaFuncAttributes attr{};
  KP_CAL_CUDA("cudaFuncGetAttributes", cudaFuncGetAttributes(&attr, mma_kernel<Op>));
  if (attr.ptxVersion < 80)
    return CalibrationFigure{0, printf_string("not measured: kp-worker's kernels were built for compute_%d "
                                              "(CMAKE_CUDA_ARCHITECTURES); mma.sync needs sm_80 code",
                                              attr.ptxVersion)};
  KP_TRY(int blocks, ctx.blocks_for(mma_kernel<Op>, kWaves));
  DeviceBuffer out;
  if (out.allocate(static_cast<size_t>(blocks) * kThreads * sizeof(typename Op::Acc)) != cudaSuccess)
    return CalibrationFigure{0, "not measured: cannot allocate its output"};
  auto mmas = [&](int64_t iters) {
    mma_kernel<Op><<<blocks, kThreads, 0, ctx.timer.stream>>>(out.as<typename Op::Acc>(), static_cast<int>(iters),
                                                              12345u, -1e300);
    return cudaGetLastError();
  };
  KP_TRY(Timer::Scaled r, ctx.timer.scaled(4, 1 << 22, mmas));
  ctx.read_clock();
  const double warps = static_cast<double>(blocks) * kThreads / 32;
  return CalibrationFigure{warps * static_cast<double>(r.count) * kMmaUnroll * kMmaChains * Op::kFlop / r.seconds, ""};
}

// One precision of the cuBLAS GEMMs.
struct GemmCase {
  const char* figure;       // Ceilings field
  const char* description;  // "bf16 GEMM, fp32 accumulate"
  size_t elem_bytes;        // of A and B
  size_t c_elem_bytes;
  std::function<cudaError_t(void*, size_t, cudaStream_t)> fill;  // random A or B
  // One GEMM of n^3; sets *status to cuBLAS's status.
  std::function<void(cublasHandle_t, int n, void* a, void* b, void* c, cublasStatus_t* status)> gemm;
};

template <typename T>
cudaError_t fill_gemm_operand(void* p, size_t n, uint32_t seed, cudaStream_t s) {
  fill_random_kernel<T><<<1024, 256, 0, s>>>(static_cast<T*>(p), n, seed);
  return cudaGetLastError();
}

// cuBLAS rates by figure name, or the reason none was measured (in `why`, per figure or for all).
struct CublasRates {
  std::map<std::string, double> rate;
  std::map<std::string, std::string> why;
  std::string all_why;  // cuBLAS unavailable: the reason for every figure
  std::string path;
  int n = 0;
};

Result<CublasRates> measure_cublas(Context& ctx) {
  CublasRates out;
  Cublas api;
  out.all_why = load_cublas(&api);
  if (!out.all_why.empty()) return out;
  out.path = api.path;
  const int n = 8192;
  out.n = n;
  const size_t elems = static_cast<size_t>(n) * n;
  if (free_memory() < 3 * elems * 8 + (size_t{256} << 20)) {
    out.all_why = "not enough free device memory for three 8192 x 8192 fp64 matrices";
    return out;
  }
  DeviceBuffer a, b, c;
  if (a.allocate(elems * 8) != cudaSuccess || b.allocate(elems * 8) != cudaSuccess ||
      c.allocate(elems * 8) != cudaSuccess) {
    out.all_why = "cannot allocate three 8192 x 8192 fp64 matrices";
    return out;
  }
  cublasHandle_t handle = nullptr;
  if (cublasStatus_t s = api.create(&handle); s != CUBLAS_STATUS_SUCCESS) {
    cudaGetLastError();
    out.all_why = printf_string("cublasCreate_v2 returned status %d", static_cast<int>(s));
    return out;
  }
  api.set_stream(handle, ctx.timer.stream);
  api.set_math_mode(handle, CUBLAS_DEFAULT_MATH);

  const cublasOperation_t kT = CUBLAS_OP_T, kN = CUBLAS_OP_N;  // TN: the layout every GEMM kernel family has
  auto gemm_ex = [&](cudaDataType ab, cudaDataType ct, cublasComputeType_t compute, const void* alpha,
                     const void* beta) {
    return [=, &api](cublasHandle_t h, int m, void* pa, void* pb, void* pc, cublasStatus_t* st) {
      *st = api.gemm_ex(h, kT, kN, m, m, m, alpha, pa, ab, m, pb, ab, m, beta, pc, ct, m, compute, CUBLAS_GEMM_DEFAULT);
    };
  };
  static const float kOneF = 1.0f, kZeroF = 0.0f;
  static const int32_t kOneI = 1, kZeroI = 0;
  static const double kOneD = 1.0, kZeroD = 0.0;
  std::vector<GemmCase> cases = {
      {"tensor_fp16_flops", "fp16 GEMM, fp32 accumulate", 2, 2,
       [](void* p, size_t k, cudaStream_t s) { return fill_gemm_operand<__half>(p, k, 1, s); },
       gemm_ex(CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, &kOneF, &kZeroF)},
      {"tensor_bf16_flops", "bf16 GEMM, fp32 accumulate", 2, 2,
       [](void* p, size_t k, cudaStream_t s) { return fill_gemm_operand<__nv_bfloat16>(p, k, 2, s); },
       gemm_ex(CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, &kOneF, &kZeroF)},
      {"tensor_tf32_flops", "fp32 GEMM with CUBLAS_COMPUTE_32F_FAST_TF32", 4, 4,
       [](void* p, size_t k, cudaStream_t s) { return fill_gemm_operand<float>(p, k, 3, s); },
       gemm_ex(CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, &kOneF, &kZeroF)},
      {"tensor_int8_ops", "int8 GEMM, int32 accumulate", 1, 4,
       [](void* p, size_t k, cudaStream_t s) { return fill_gemm_operand<int8_t>(p, k, 4, s); },
       gemm_ex(CUDA_R_8I, CUDA_R_32I, CUBLAS_COMPUTE_32I, &kOneI, &kZeroI)},
      {"tensor_fp64_flops", "DGEMM", 8, 8,
       [](void* p, size_t k, cudaStream_t s) { return fill_gemm_operand<double>(p, k, 5, s); },
       [&api](cublasHandle_t h, int m, void* pa, void* pb, void* pc, cublasStatus_t* st) {
         *st = api.dgemm(h, kT, kN, m, m, m, &kOneD, static_cast<const double*>(pa), m, static_cast<const double*>(pb),
                         m, &kZeroD, static_cast<double*>(pc), m);
       }},
  };
  std::optional<Error> failure;
  for (const GemmCase& g : cases) {
    cudaError_t e = g.fill(a.as<void>(), elems, ctx.timer.stream);
    if (e == cudaSuccess) e = g.fill(b.as<void>(), elems, ctx.timer.stream);
    if (e != cudaSuccess) {
      failure = cuda_failure("filling the GEMM operands", e);
      break;
    }
    cublasStatus_t status = CUBLAS_STATUS_SUCCESS;
    auto seconds = ctx.timer.best([&] {
      cublasStatus_t st = CUBLAS_STATUS_SUCCESS;
      g.gemm(handle, n, a.as<void>(), b.as<void>(), c.as<void>(), &st);
      if (st != CUBLAS_STATUS_SUCCESS) status = st;
      return cudaSuccess;
    });
    if (!seconds.ok()) {
      failure = seconds.error();
      break;
    }
    ctx.read_clock();
    if (status != CUBLAS_STATUS_SUCCESS) {
      cudaGetLastError();
      out.why[g.figure] = printf_string("cuBLAS %s returned status %d", g.description, static_cast<int>(status));
    } else {
      out.rate[g.figure] = 2.0 * n * static_cast<double>(n) * n / *seconds;
      out.why[g.figure] = g.description;
    }
  }
  api.destroy(handle);
  if (failure) return *failure;
  return out;
}

// The tensor figure: the larger of the own kernel and cuBLAS, the method saying which.
CalibrationFigure tensor_figure(const std::string& figure, const char* own_text, const CalibrationFigure& own_figure,
                                const CublasRates& cublas, const Context& ctx) {
  const double own = own_figure.value;
  std::string own_part = printf_string("own mma.sync %s kernel on registers (%s)", own_text,
                                       own > 0 ? sci(own).c_str() : own_figure.method.c_str());
  if (!cublas.all_why.empty())
    return CalibrationFigure{own, own_part + ", " + ctx.reps_text() + "; cuBLAS not measured: " + cublas.all_why};
  auto it = cublas.rate.find(figure);
  if (it == cublas.rate.end())
    return CalibrationFigure{own,
                             own_part + ", " + ctx.reps_text() + "; cuBLAS not measured: " + cublas.why.at(figure)};
  const double lib = it->second;
  return CalibrationFigure{std::max(own, lib),
                           printf_string("max of %s and cuBLAS %d^3 %s (%s, %s), %s: %s", own_part.c_str(), cublas.n,
                                         cublas.why.at(figure).c_str(), sci(lib).c_str(), cublas.path.c_str(),
                                         ctx.reps_text().c_str(), lib >= own ? "cuBLAS" : "own kernel")};
}

}  // namespace

Result<Calibration> run_calibration(const CalibrateOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  Context ctx;
  ctx.options = &options;
  ctx.device = options.device;
  KP_CAL_CUDA("cudaSetDevice", cudaSetDevice(options.device));
  int l2 = 0, clock_khz = 0;
  KP_CAL_CUDA("cudaDeviceGetAttribute",
              cudaDeviceGetAttribute(&ctx.sm_count, cudaDevAttrMultiProcessorCount, options.device));
  KP_CAL_CUDA("cudaDeviceGetAttribute", cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, options.device));
  KP_CAL_CUDA("cudaDeviceGetAttribute", cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, options.device));
  KP_CAL_CUDA("cudaDeviceGetAttribute",
              cudaDeviceGetAttribute(&ctx.cc_major, cudaDevAttrComputeCapabilityMajor, options.device));
  KP_CAL_CUDA("cudaDeviceGetAttribute",
              cudaDeviceGetAttribute(&ctx.cc_minor, cudaDevAttrComputeCapabilityMinor, options.device));
  ctx.l2_bytes = l2;
  ctx.peak_clock_mhz = clock_khz / 1000;
  if (options.depth == CalibrationDepth::kQuick) {
    ctx.timer.warmup = 1;
    ctx.timer.reps = 3;
    ctx.timer.target_s = 1e-3;
  }
  KP_CAL_CUDA("cudaStreamCreateWithFlags", cudaStreamCreateWithFlags(&ctx.timer.stream, cudaStreamNonBlocking));
  KP_CAL_CUDA("cudaEventCreate", cudaEventCreate(&ctx.timer.start));
  KP_CAL_CUDA("cudaEventCreate", cudaEventCreate(&ctx.timer.stop));

  Calibration cal;
  auto& f = cal.figures;
  KP_TRY(f["dram_bytes_per_s"], measure_dram(ctx));
  KP_TRY(f["l2_bytes_per_s"], measure_l2(ctx));
  KP_TRY(f["fp32_flops"], measure_fma<float>(ctx, "FFMA", 2, 0.9999f, 1e-4f));
  KP_TRY(f["fp64_flops"], measure_fma<double>(ctx, "DFMA", 2, 0.9999f, 1e-4f));
  KP_TRY(f["fp16_flops"], measure_fma<__half2>(ctx, "HFMA2 (half2)", 4, 0.999f, 1e-3f));
  KP_TRY(CalibrationFigure own_fp16, measure_mma<MmaFp16>(ctx));
  KP_TRY(CalibrationFigure own_bf16, measure_mma<MmaBf16>(ctx));
  KP_TRY(CalibrationFigure own_tf32, measure_mma<MmaTf32>(ctx));
  KP_TRY(CalibrationFigure own_fp64, measure_mma<MmaFp64>(ctx));
  KP_TRY(CalibrationFigure own_int8, measure_mma<MmaInt8>(ctx));
  KP_TRY(CublasRates cublas, measure_cublas(ctx));
  f["tensor_fp16_flops"] = tensor_figure("tensor_fp16_flops", "m16n8k16 fp16 -> fp32", own_fp16, cublas, ctx);
  f["tensor_bf16_flops"] = tensor_figure("tensor_bf16_flops", "m16n8k16 bf16 -> fp32", own_bf16, cublas, ctx);
  f["tensor_tf32_flops"] = tensor_figure("tensor_tf32_flops", "m16n8k8 tf32 -> fp32", own_tf32, cublas, ctx);
  f["tensor_fp64_flops"] = tensor_figure("tensor_fp64_flops", "m8n8k4 fp64 (DMMA)", own_fp64, cublas, ctx);
  f["tensor_int8_ops"] = tensor_figure("tensor_int8_ops", "m16n8k32 s8 -> s32", own_int8, cublas, ctx);
  KP_CAL_CUDA("the final cudaStreamSynchronize", cudaStreamSynchronize(ctx.timer.stream));

  if (ctx.lowest_clock_mhz > 0) {
    cal.sm_clock_mhz = ctx.lowest_clock_mhz;
    cal.sm_clock_method = printf_string(
        "NVML: the lowest SM clock read right after each compute benchmark (peak %d MHz)", ctx.peak_clock_mhz);
  } else {
    cal.sm_clock_mhz = ctx.peak_clock_mhz;
    cal.sm_clock_method = "the peak SM clock (cudaDevAttrClockRate); NVML is not available to read it under load";
  }
  cal.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return cal;
}

}  // namespace kp::worker
