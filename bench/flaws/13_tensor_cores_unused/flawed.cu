// Flawed: a 64x64-tiled bf16 GEMM on CUDA cores (FFMA).
#include <kernelpro/kp_abi.h>
#include <kernelpro/kp_check.h>

#include <cuda_runtime.h>

#include <cstdint>
#include <cuda_bf16.h>
#include <mma.h>

namespace {

// 64x64 output tile per block of 256 threads, 4x4 outputs per thread, fp32 accumulation on CUDA cores.
__global__ void __launch_bounds__(256) k(const __nv_bfloat16* __restrict__ a, const __nv_bfloat16* __restrict__ b,
                                         __nv_bfloat16* __restrict__ c, int m, int n, int kk) {
  __shared__ float as[16][64 + 1];
  __shared__ float bs[16][64];
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  const int row0 = blockIdx.y * 64, col0 = blockIdx.x * 64;
  float acc[4][4] = {};
  for (int k0 = 0; k0 < kk; k0 += 16) {
    for (int e = threadIdx.x; e < 64 * 16; e += 256) {
      const int r = e / 16, q = e % 16;
      as[q][r] = __bfloat162float(a[(int64_t)(row0 + r) * kk + k0 + q]);
      const int qb = e / 64, cb = e % 64;
      bs[qb][cb] = __bfloat162float(b[(int64_t)(k0 + qb) * n + col0 + cb]);
    }
    __syncthreads();
#pragma unroll
    for (int q = 0; q < 16; ++q)
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(as[q][ty * 4 + i], bs[q][tx * 4 + j], acc[i][j]);
    __syncthreads();
  }
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) c[(int64_t)(row0 + ty * 4 + i) * n + col0 + tx * 4 + j] = __float2bfloat16(acc[i][j]);
}

}  // namespace

KP_EXPORT int kp_run(kp_args* args) {
  static const char* WHO = "flaw_tensor_cores_unused";
  if (int rc = kp_expect_tensors(args, WHO, {{"A", KP_BF16, 2, 2}, {"B", KP_BF16, 2, 2}}, {{"C", KP_BF16, 2, 2}})) return rc;
  const kp_tensor& a = args->inputs[0];
  const kp_tensor& b = args->inputs[1];
  const int64_t m = a.shape[0], kd = a.shape[1], n = b.shape[1];
  if (b.shape[0] != kd) return kp_fail(args, KP_ERR_UNSUPPORTED_SHAPE, "A and B inner dims differ");
  if (int rc = kp_expect_shape(args, WHO, args->outputs[0], "C", {m, n})) return rc;
  if (m % 64 || n % 64 || kd % 64) return kp_fail(args, KP_ERR_UNSUPPORTED_SHAPE, "dims must be multiples of 64");
  const __nv_bfloat16* ap = static_cast<const __nv_bfloat16*>(a.data);
  const __nv_bfloat16* bp = static_cast<const __nv_bfloat16*>(b.data);
  __nv_bfloat16* cp = static_cast<__nv_bfloat16*>(args->outputs[0].data);
  cudaStream_t st = (cudaStream_t)args->stream;
  k<<<dim3((unsigned)(n / 64), (unsigned)(m / 64)), 256, 0, st>>>(ap, bp, cp, (int)m, (int)n, (int)kd);
  return kp_check_launch(args, WHO);
}
