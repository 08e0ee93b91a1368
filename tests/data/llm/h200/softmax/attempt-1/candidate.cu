// Softmax over the last dim, fp32: one block of 1024 threads per row, the row kept in
// registers so that x is read from DRAM once and y written once.
#include <kernelpro/kp_abi.h>
#include <kernelpro/kp_check.h>

#include <cuda_runtime.h>

#include <climits>
#include <cmath>
#include <cstdint>

namespace {

constexpr int kThreads = 1024;
constexpr int kVecPerThread = 4;  // float4 per thread: rows up to 16384 columns stay in registers
constexpr float kLog2e = 1.4426950408889634f;

__device__ __forceinline__ float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
// Block-wide reduction of one value per thread; every thread gets the result.
template <bool kMax>
__device__ __forceinline__ float block_reduce(float v, float* red) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  v = kMax ? warp_max(v) : warp_sum(v);
  if (lane == 0) red[warp] = v;
  __syncthreads();
  float r = lane < (int)(blockDim.x >> 5) ? red[lane] : (kMax ? -INFINITY : 0.0f);
  r = kMax ? warp_max(r) : warp_sum(r);
  __syncthreads();  // red is reused by the next reduction
  return r;
}

// Rows of cols % 4 == 0 and cols <= kThreads * 4 * kVecPerThread, 16-byte aligned.
__global__ void __launch_bounds__(kThreads) softmax_regs(const float* __restrict__ x, float* __restrict__ y,
                                                         int64_t cols) {
  __shared__ float red[32];
  const float4* xr = reinterpret_cast<const float4*>(x + (int64_t)blockIdx.x * cols);
  float4* yr = reinterpret_cast<float4*>(y + (int64_t)blockIdx.x * cols);
  const int n4 = (int)(cols / 4);
  float4 v[kVecPerThread];
  float m = -INFINITY;
#pragma unroll
  for (int i = 0; i < kVecPerThread; ++i) {
    const int j = threadIdx.x + i * kThreads;
    v[i] = j < n4 ? __ldcs(xr + j) : make_float4(-INFINITY, -INFINITY, -INFINITY, -INFINITY);
    m = fmaxf(m, fmaxf(fmaxf(v[i].x, v[i].y), fmaxf(v[i].z, v[i].w)));
  }
  m = block_reduce<true>(m, red);
  const float ms = m * kLog2e;
  float s = 0.0f;
#pragma unroll
  for (int i = 0; i < kVecPerThread; ++i) {
    v[i].x = exp2f(fmaf(v[i].x, kLog2e, -ms));
    v[i].y = exp2f(fmaf(v[i].y, kLog2e, -ms));
    v[i].z = exp2f(fmaf(v[i].z, kLog2e, -ms));
    v[i].w = exp2f(fmaf(v[i].w, kLog2e, -ms));
    s += (v[i].x + v[i].y) + (v[i].z + v[i].w);
  }
  s = block_reduce<false>(s, red);
  const float inv = 1.0f / s;
#pragma unroll
  for (int i = 0; i < kVecPerThread; ++i) {
    const int j = threadIdx.x + i * kThreads;
    if (j < n4) __stcs(yr + j, make_float4(v[i].x * inv, v[i].y * inv, v[i].z * inv, v[i].w * inv));
  }
}

// Any row: an online max and sum in one pass over x, then a second pass to write.
__global__ void __launch_bounds__(kThreads) softmax_any(const float* __restrict__ x, float* __restrict__ y,
                                                        int64_t cols) {
  __shared__ float red[32];
  const float* xr = x + (int64_t)blockIdx.x * cols;
  float* yr = y + (int64_t)blockIdx.x * cols;
  float m = -INFINITY, s = 0.0f;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    const float t = xr[j];
    if (t > m) {
      s = s * exp2f((m - t) * kLog2e) + 1.0f;
      m = t;
    } else {
      s += exp2f((t - m) * kLog2e);
    }
  }
  const float row_max = block_reduce<true>(m, red);
  s = m == -INFINITY ? 0.0f : s * exp2f((m - row_max) * kLog2e);
  const float inv = 1.0f / block_reduce<false>(s, red);
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) yr[j] = exp2f((xr[j] - row_max) * kLog2e) * inv;
}

}  // namespace

KP_EXPORT int kp_run(kp_args* args) {
  if (int rc = kp_expect_tensors(args, "softmax", {{"x", KP_FP32, 1, KP_MAX_RANK}}, {{"y", KP_FP32, 1, KP_MAX_RANK}})) {
    return rc;
  }
  const kp_tensor& x = args->inputs[0];
  const kp_tensor& y = args->outputs[0];
  if (int rc = kp_expect_same_shape(args, "softmax", y, "y", x, "x")) return rc;
  const int64_t rows = kp_rows(x);
  const int64_t cols = x.shape[x.rank - 1];
  if (int rc = kp_expect_at_most(args, "softmax", "rows", rows, INT_MAX)) return rc;
  if (rows == 0 || cols == 0) return kp_check_launch(args, "softmax");
  const float* xp = static_cast<const float*>(x.data);
  float* yp = static_cast<float*>(y.data);
  cudaStream_t stream = (cudaStream_t)args->stream;
  const bool aligned = reinterpret_cast<uintptr_t>(xp) % 16 == 0 && reinterpret_cast<uintptr_t>(yp) % 16 == 0;
  if (aligned && cols % 4 == 0 && cols <= (int64_t)kThreads * 4 * kVecPerThread) {
    softmax_regs<<<(unsigned)rows, kThreads, 0, stream>>>(xp, yp, cols);
  } else {
    softmax_any<<<(unsigned)rows, kThreads, 0, stream>>>(xp, yp, cols);
  }
  return kp_check_launch(args, "softmax");
}
