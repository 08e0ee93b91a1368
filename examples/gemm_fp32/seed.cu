// Seed candidate for the gemm_fp32 task: C = A @ B, row-major, fp32.
// Correct but naive: the textbook shared-memory tiled GEMM. Each block computes a TILE x TILE
// tile of C, one output per thread, staging TILE x TILE tiles of A and B through shared memory
// with a barrier on each side. Left on the table: register blocking (many outputs per thread,
// so each shared-memory load feeds several FMAs), larger block tiles for reuse, vectorized and
// asynchronous (cp.async / TMA) loads with multi-stage pipelining, and, where the accuracy is
// kept (3xTF32, BF16x9 split schemes), tensor cores.
#include <kernelpro/kp_abi.h>

#include <cuda_runtime.h>

#include <climits>
#include <cstdarg>
#include <cstdint>
#include <cstdio>

KP_TUNE(TILE, 16, 8, 32)

namespace {

__attribute__((format(printf, 3, 4)))
int fail(kp_args* args, int code, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(args->message, sizeof(args->message), fmt, ap);
  va_end(ap);
  return code;
}

bool is_contiguous(const kp_tensor& t) {
  int64_t expected = 1;
  for (int d = t.rank - 1; d >= 0; --d) {
    if (t.shape[d] != 1 && t.strides[d] != expected) return false;
    expected *= t.shape[d];
  }
  return true;
}

__global__ void __launch_bounds__(TILE * TILE)
gemm_seed(const float* A, const float* B, float* C, int m, int n, int k) {
  __shared__ float as[TILE][TILE];
  __shared__ float bs[TILE][TILE];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * TILE + ty;
  const int col = blockIdx.x * TILE + tx;

  float acc = 0.0f;
  for (int k0 = 0; k0 < k; k0 += TILE) {
    as[ty][tx] = (row < m && k0 + tx < k) ? A[(int64_t)row * k + k0 + tx] : 0.0f;
    bs[ty][tx] = (k0 + ty < k && col < n) ? B[(int64_t)(k0 + ty) * n + col] : 0.0f;
    __syncthreads();
    for (int kk = 0; kk < TILE; ++kk) acc += as[ty][kk] * bs[kk][tx];
    __syncthreads();
  }
  if (row < m && col < n) C[(int64_t)row * n + col] = acc;
}

}  // namespace

KP_EXPORT int kp_run(kp_args* args) {
  if (args->num_inputs != 2 || args->num_outputs != 1) {
    return fail(args, KP_ERR_INVALID_ARGUMENT,
                "gemm_fp32: expected 2 inputs (A, B) and 1 output (C), got %d and %d",
                args->num_inputs, args->num_outputs);
  }
  const kp_tensor& a = args->inputs[0];
  const kp_tensor& b = args->inputs[1];
  const kp_tensor& c = args->outputs[0];
  if (a.dtype != KP_FP32 || b.dtype != KP_FP32 || c.dtype != KP_FP32) {
    return fail(args, KP_ERR_INVALID_ARGUMENT, "gemm_fp32: A, B and C must be fp32 (%d, %d, %d)",
                a.dtype, b.dtype, c.dtype);
  }
  if (a.rank != 2 || b.rank != 2 || c.rank != 2) {
    return fail(args, KP_ERR_UNSUPPORTED_SHAPE, "gemm_fp32: A, B and C must be 2-D (%d, %d, %d)",
                a.rank, b.rank, c.rank);
  }
  const int64_t m = a.shape[0], k = a.shape[1], n = b.shape[1];
  if (m <= 0 || n <= 0 || k <= 0 || b.shape[0] != k || c.shape[0] != m || c.shape[1] != n) {
    return fail(args, KP_ERR_UNSUPPORTED_SHAPE,
                "gemm_fp32: shapes A [%lld, %lld], B [%lld, %lld], C [%lld, %lld] do not match",
                (long long)a.shape[0], (long long)a.shape[1], (long long)b.shape[0],
                (long long)b.shape[1], (long long)c.shape[0], (long long)c.shape[1]);
  }
  // Rows and columns are indexed with int inside the kernel; the grid's y dimension is
  // limited to 65535 blocks.
  if (m > INT_MAX - TILE || n > INT_MAX - TILE || k > INT_MAX - TILE ||
      (m + TILE - 1) / TILE > 65535) {
    return fail(args, KP_ERR_UNSUPPORTED_SHAPE, "gemm_fp32: M=%lld N=%lld K=%lld is too large",
                (long long)m, (long long)n, (long long)k);
  }
  if (!is_contiguous(a) || !is_contiguous(b) || !is_contiguous(c)) {
    return fail(args, KP_ERR_UNSUPPORTED_SHAPE, "gemm_fp32: A, B and C must be contiguous");
  }

  const dim3 block(TILE, TILE);
  const dim3 grid((unsigned)((n + TILE - 1) / TILE), (unsigned)((m + TILE - 1) / TILE));
  gemm_seed<<<grid, block, 0, (cudaStream_t)args->stream>>>(
      static_cast<const float*>(a.data), static_cast<const float*>(b.data),
      static_cast<float*>(c.data), (int)m, (int)n, (int)k);
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    return fail(args, KP_ERR_CUDA, "gemm_fp32: launch failed: %s", cudaGetErrorString(err));
  }
  return KP_OK;
}
