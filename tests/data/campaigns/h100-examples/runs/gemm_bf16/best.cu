// Seed candidate for the gemm_bf16 task: C = A @ B, row-major, bf16 in and out, fp32
// accumulation.
// Correct but naive: the textbook shared-memory tiled GEMM on CUDA cores. Each block computes a
// TILE x TILE tile of C, one output per thread; tiles of A and B are converted to fp32 as they
// are staged through shared memory, and each output is accumulated in fp32 and rounded to
// bf16 (round to nearest even) once. Left on the table, nearly all of it: tensor cores (wgmma
// on sm_90a runs bf16 at ~800 TFLOP/s against ~67 TFLOP/s for fp32 FMA), large block tiles
// with register blocking, TMA loads into swizzled shared memory with a multi-stage pipeline,
// warp specialization.
#include <kernelpro/kp_abi.h>
#include <kernelpro/kp_check.h>

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <climits>
#include <cstdint>

KP_TUNE(TILE, 32, 8, 16)

namespace {

__global__ void __launch_bounds__(TILE * TILE)
gemm_seed(const __nv_bfloat16* A, const __nv_bfloat16* B, __nv_bfloat16* C, int m, int n, int k) {
  __shared__ float as[TILE][TILE];
  __shared__ float bs[TILE][TILE];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * TILE + ty;
  const int col = blockIdx.x * TILE + tx;

  float acc = 0.0f;
  for (int k0 = 0; k0 < k; k0 += TILE) {
    as[ty][tx] =
        (row < m && k0 + tx < k) ? __bfloat162float(A[(int64_t)row * k + k0 + tx]) : 0.0f;
    bs[ty][tx] =
        (k0 + ty < k && col < n) ? __bfloat162float(B[(int64_t)(k0 + ty) * n + col]) : 0.0f;
    __syncthreads();
    for (int kk = 0; kk < TILE; ++kk) acc += as[ty][kk] * bs[kk][tx];
    __syncthreads();
  }
  if (row < m && col < n) C[(int64_t)row * n + col] = __float2bfloat16(acc);
}

}  // namespace

KP_EXPORT int kp_run(kp_args* args) {
  if (int rc = kp_expect_tensors(args, "gemm_bf16", {{"A", KP_BF16, 2, 2}, {"B", KP_BF16, 2, 2}},
                                 {{"C", KP_BF16, 2, 2}})) {
    return rc;
  }
  const kp_tensor& a = args->inputs[0];
  const kp_tensor& b = args->inputs[1];
  const kp_tensor& c = args->outputs[0];
  const int64_t m = a.shape[0], k = a.shape[1], n = b.shape[1];
  if (int rc = kp_expect_shape(args, "gemm_bf16", b, "B", {k, n})) return rc;
  if (int rc = kp_expect_shape(args, "gemm_bf16", c, "C", {m, n})) return rc;
  // Rows and columns are indexed with int inside the kernel; the grid's y dimension is
  // limited to 65535 blocks.
  if (m > INT_MAX - TILE || n > INT_MAX - TILE || k > INT_MAX - TILE ||
      (m + TILE - 1) / TILE > 65535) {
    return kp_fail(args, KP_ERR_UNSUPPORTED_SHAPE, "gemm_bf16: M=%lld N=%lld K=%lld is too large",
                   (long long)m, (long long)n, (long long)k);
  }

  const dim3 block(TILE, TILE);
  const dim3 grid((unsigned)((n + TILE - 1) / TILE), (unsigned)((m + TILE - 1) / TILE));
  gemm_seed<<<grid, block, 0, (cudaStream_t)args->stream>>>(
      static_cast<const __nv_bfloat16*>(a.data), static_cast<const __nv_bfloat16*>(b.data),
      static_cast<__nv_bfloat16*>(c.data), (int)m, (int)n, (int)k);
  return kp_check_launch(args, "gemm_bf16");
}
