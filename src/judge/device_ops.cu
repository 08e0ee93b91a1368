#include "judge/device_ops.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace kp::judge {
namespace {

__device__ __forceinline__ uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Uniform in (0, 1): 53 random bits, never 0.
__device__ __forceinline__ double uniform01(uint64_t h) { return ((h >> 11) + 0.5) * (1.0 / 9007199254740992.0); }

template <typename T>
__device__ __forceinline__ T convert(double v);
template <> __device__ __forceinline__ float convert<float>(double v) { return static_cast<float>(v); }
template <> __device__ __forceinline__ double convert<double>(double v) { return v; }
template <> __device__ __forceinline__ __half convert<__half>(double v) { return __double2half(v); }
template <> __device__ __forceinline__ __nv_bfloat16 convert<__nv_bfloat16>(double v) { return __double2bfloat16(v); }
template <> __device__ __forceinline__ int32_t convert<int32_t>(double v) { return static_cast<int32_t>(v); }
template <> __device__ __forceinline__ int64_t convert<int64_t>(double v) { return static_cast<int64_t>(v); }
template <> __device__ __forceinline__ uint8_t convert<uint8_t>(double v) { return v != 0 ? 1 : 0; }

template <typename T>
__global__ void fill_random_kernel(T* out, int64_t n, int kind, double a, double b, uint64_t key) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    uint64_t h1 = splitmix64(key ^ splitmix64(static_cast<uint64_t>(i)));
    double v;
    switch (kind) {
      case 0: {  // normal: Box-Muller
        uint64_t h2 = splitmix64(h1 ^ 0xD1B54A32D192ED03ull);
        double r = sqrt(-2.0 * log(uniform01(h1)));
        v = a + b * r * cospi(2.0 * uniform01(h2));
        break;
      }
      case 1: v = a + (b - a) * uniform01(h1); break;  // uniform [a, b)
      case 2: {                                        // randint [a, b)
        double span = floor(b) - ceil(a);
        v = ceil(a) + floor(uniform01(h1) * span);
        break;
      }
      default: v = uniform01(h1) < a ? 1.0 : 0.0; break;  // bernoulli(p = a)
    }
    out[i] = convert<T>(v);
  }
}

__global__ void fill_pattern_kernel(unsigned char* out, size_t elem_size, int64_t n, uint64_t pattern) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    for (size_t b = 0; b < elem_size; ++b) out[i * elem_size + b] = static_cast<unsigned char>(pattern >> (8 * b));
  }
}

// Reads every 16 bytes; writes only if the data XOR to an impossible pattern (never, for the
// flush buffer is zero-filled), so that the loads are not optimised away.
__global__ void read_all_kernel(const uint4* data, size_t n, uint4* sink) {
  uint4 acc = make_uint4(0, 0, 0, 0);
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    uint4 v = data[i];
    acc.x ^= v.x;
    acc.y ^= v.y;
    acc.z ^= v.z;
    acc.w ^= v.w;
  }
  if (acc.x == 0x9E3779B9u && acc.y == 0x7F4A7C15u && acc.z == 0xC2B2AE3Du && acc.w == 0x27D4EB4Fu) *sink = acc;
}

__global__ void checksum_kernel(const unsigned char* data, size_t bytes, unsigned long long* acc) {
  unsigned long long local = 0;
  size_t words = bytes / 8;
  const unsigned long long* w = reinterpret_cast<const unsigned long long*>(data);
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < words;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    local += splitmix64(w[i] ^ splitmix64(i));
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    for (size_t i = words * 8; i < bytes; ++i) local += splitmix64(data[i] ^ (i << 8));
  }
  for (int off = 16; off > 0; off /= 2) local += __shfl_down_sync(0xFFFFFFFFu, local, off);
  if ((threadIdx.x & 31) == 0) atomicAdd(acc, local);
}

__global__ void checksum_bytes_kernel(const unsigned char* data, size_t bytes, unsigned long long* acc) {
  unsigned long long local = 0;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < bytes;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    local += splitmix64(data[i] ^ (splitmix64(i) << 8));
  for (int off = 16; off > 0; off /= 2) local += __shfl_down_sync(0xFFFFFFFFu, local, off);
  if ((threadIdx.x & 31) == 0) atomicAdd(acc, local);
}

// Position-independent: each 16-byte block (counted from data) hashed by its contents alone, so
// blocks moved or swapped leave the sum as it was; the tail shorter than a block keeps its place.
__global__ void block_multiset_kernel(const unsigned char* data, size_t bytes, unsigned long long* acc) {
  unsigned long long local = 0;
  const size_t blocks = bytes / 16;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < blocks;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    unsigned long long lo = 0, hi = 0;
    for (int b = 0; b < 8; ++b) {
      lo |= static_cast<unsigned long long>(data[i * 16 + b]) << (8 * b);
      hi |= static_cast<unsigned long long>(data[i * 16 + 8 + b]) << (8 * b);
    }
    local += splitmix64(lo ^ splitmix64(hi ^ 0x5851F42D4C957F2Dull));
  }
  if (blockIdx.x == 0 && threadIdx.x == 0)
    for (size_t i = blocks * 16; i < bytes; ++i) local += splitmix64(data[i] ^ (i << 8));
  for (int off = 16; off > 0; off /= 2) local += __shfl_down_sync(0xFFFFFFFFu, local, off);
  if ((threadIdx.x & 31) == 0) atomicAdd(acc, local);
}

__global__ void swap_bytes_kernel(unsigned char* a, unsigned char* b, size_t bytes) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < bytes;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const unsigned char t = a[i];
    a[i] = b[i];
    b[i] = t;
  }
}

__global__ void flip_bits_kernel(unsigned char* data, size_t bytes) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < bytes;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    data[i] = static_cast<unsigned char>(~data[i]);
}

int grid_for(int64_t n) {
  int64_t blocks = (n + 255) / 256;
  return static_cast<int>(blocks < 132 * 32 ? (blocks < 1 ? 1 : blocks) : 132 * 32);
}

template <typename T>
cudaError_t launch_fill(void* data, int64_t n, const task::Distribution& d, uint64_t key, cudaStream_t s) {
  fill_random_kernel<T><<<grid_for(n), 256, 0, s>>>(static_cast<T*>(data), n, static_cast<int>(d.kind), d.a, d.b, key);
  return cudaGetLastError();
}

}  // namespace

cudaError_t fill_random(void* data, task::DType dtype, int64_t n, const task::Distribution& dist, uint64_t seed,
                        uint64_t stream_id, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  uint64_t key = seed * 0x9E3779B97F4A7C15ull ^ (stream_id + 1) * 0xC2B2AE3D27D4EB4Full;
  switch (dtype) {
    case task::DType::kFp32: return launch_fill<float>(data, n, dist, key, stream);
    case task::DType::kFp64: return launch_fill<double>(data, n, dist, key, stream);
    case task::DType::kFp16: return launch_fill<__half>(data, n, dist, key, stream);
    case task::DType::kBf16: return launch_fill<__nv_bfloat16>(data, n, dist, key, stream);
    case task::DType::kInt32: return launch_fill<int32_t>(data, n, dist, key, stream);
    case task::DType::kInt64: return launch_fill<int64_t>(data, n, dist, key, stream);
    case task::DType::kBool: return launch_fill<uint8_t>(data, n, dist, key, stream);
  }
  return cudaErrorInvalidValue;
}

cudaError_t fill_pattern(void* data, size_t elem_size, int64_t n, uint64_t pattern, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  fill_pattern_kernel<<<grid_for(n), 256, 0, stream>>>(static_cast<unsigned char*>(data), elem_size, n, pattern);
  return cudaGetLastError();
}

cudaError_t flip_bits(void* data, size_t bytes, cudaStream_t stream) {
  if (bytes == 0) return cudaSuccess;
  flip_bits_kernel<<<grid_for(static_cast<int64_t>(bytes)), 256, 0, stream>>>(static_cast<unsigned char*>(data), bytes);
  return cudaGetLastError();
}

cudaError_t block_multiset(const void* data, size_t bytes, uint64_t* scratch, uint64_t* out, cudaStream_t stream) {
  cudaError_t e = cudaMemsetAsync(scratch, 0, sizeof(uint64_t), stream);
  if (e != cudaSuccess) return e;
  block_multiset_kernel<<<grid_for(static_cast<int64_t>(bytes / 16) + 1), 256, 0, stream>>>(
      static_cast<const unsigned char*>(data), bytes, reinterpret_cast<unsigned long long*>(scratch));
  if ((e = cudaGetLastError()) != cudaSuccess) return e;
  if ((e = cudaMemcpyAsync(out, scratch, sizeof(uint64_t), cudaMemcpyDeviceToHost, stream)) != cudaSuccess) return e;
  return cudaStreamSynchronize(stream);
}

cudaError_t swap_bytes(void* a, void* b, size_t bytes, cudaStream_t stream) {
  if (bytes == 0) return cudaSuccess;
  swap_bytes_kernel<<<grid_for(static_cast<int64_t>(bytes)), 256, 0, stream>>>(static_cast<unsigned char*>(a),
                                                                             static_cast<unsigned char*>(b), bytes);
  return cudaGetLastError();
}

cudaError_t evict_l2(const void* flush, size_t bytes, cudaStream_t stream) {
  size_t n = bytes / sizeof(uint4);
  if (n < 2) return cudaErrorInvalidValue;
  // The sink is the buffer's own last element: never written, since the data are zeros.
  auto* data = static_cast<const uint4*>(flush);
  read_all_kernel<<<132 * 16, 256, 0, stream>>>(data, n - 1, const_cast<uint4*>(data + n - 1));
  return cudaGetLastError();
}

cudaError_t checksum(const void* data, size_t bytes, uint64_t* scratch, uint64_t* out, cudaStream_t stream) {
  cudaError_t e = cudaMemsetAsync(scratch, 0, sizeof(uint64_t), stream);
  if (e != cudaSuccess) return e;
  if (reinterpret_cast<uintptr_t>(data) % 8 == 0)
    checksum_kernel<<<grid_for(static_cast<int64_t>(bytes / 8) + 1), 256, 0, stream>>>(
        static_cast<const unsigned char*>(data), bytes, reinterpret_cast<unsigned long long*>(scratch));
  else
    checksum_bytes_kernel<<<grid_for(static_cast<int64_t>(bytes)), 256, 0, stream>>>(
        static_cast<const unsigned char*>(data), bytes, reinterpret_cast<unsigned long long*>(scratch));
  if ((e = cudaGetLastError()) != cudaSuccess) return e;
  if ((e = cudaMemcpyAsync(out, scratch, sizeof(uint64_t), cudaMemcpyDeviceToHost, stream)) != cudaSuccess) return e;
  return cudaStreamSynchronize(stream);
}

}  // namespace kp::judge
