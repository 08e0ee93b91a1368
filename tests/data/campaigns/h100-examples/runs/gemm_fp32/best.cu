// Seed candidate for the gemm_fp32 task: C = A @ B, row-major, fp32.
// Correct but naive: the textbook shared-memory tiled GEMM. Each block computes a TILE x TILE
// tile of C, one output per thread, staging TILE x TILE tiles of A and B through shared memory
// with a barrier on each side. Left on the table: register blocking (many outputs per thread,
// so each shared-memory load feeds several FMAs), larger block tiles for reuse, vectorized and
// asynchronous (cp.async / TMA) loads with multi-stage pipelining, and, where the accuracy is
// kept (3xTF32, BF16x9 split schemes), tensor cores.
#include <kernelpro/kp_abi.h>
#include <kernelpro/kp_check.h>

#include <cuda_runtime.h>

#include <climits>
#include <cstdint>

KP_TUNE(TILE, 32, 8, 16)

namespace {

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
  if (int rc = kp_expect_tensors(args, "gemm_fp32", {{"A", KP_FP32, 2, 2}, {"B", KP_FP32, 2, 2}},
                                 {{"C", KP_FP32, 2, 2}})) {
    return rc;
  }
  const kp_tensor& a = args->inputs[0];
  const kp_tensor& b = args->inputs[1];
  const kp_tensor& c = args->outputs[0];
  const int64_t m = a.shape[0], k = a.shape[1], n = b.shape[1];
  if (int rc = kp_expect_shape(args, "gemm_fp32", b, "B", {k, n})) return rc;
  if (int rc = kp_expect_shape(args, "gemm_fp32", c, "C", {m, n})) return rc;
  // Rows and columns are indexed with int inside the kernel; the grid's y dimension is
  // limited to 65535 blocks.
  if (m > INT_MAX - TILE || n > INT_MAX - TILE || k > INT_MAX - TILE ||
      (m + TILE - 1) / TILE > 65535) {
    return kp_fail(args, KP_ERR_UNSUPPORTED_SHAPE, "gemm_fp32: M=%lld N=%lld K=%lld is too large",
                   (long long)m, (long long)n, (long long)k);
  }

  const dim3 block(TILE, TILE);
  const dim3 grid((unsigned)((n + TILE - 1) / TILE), (unsigned)((m + TILE - 1) / TILE));
  gemm_seed<<<grid, block, 0, (cudaStream_t)args->stream>>>(
      static_cast<const float*>(a.data), static_cast<const float*>(b.data),
      static_cast<float*>(c.data), (int)m, (int)n, (int)k);
  return kp_check_launch(args, "gemm_fp32");
}
