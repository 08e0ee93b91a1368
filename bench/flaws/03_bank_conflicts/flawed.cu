// Flawed: tiled transpose with an unpadded [32][32] shared tile.
#include <kernelpro/kp_abi.h>
#include <kernelpro/kp_check.h>

#include <cuda_runtime.h>

#include <cstdint>

namespace {

__global__ void k(const float* __restrict__ x, float* __restrict__ y, int r, int c) {
  __shared__ float tile[32][32];
  const int bx = blockIdx.x * 32, by = blockIdx.y * 32;
  for (int j = threadIdx.y; j < 32; j += 8) tile[j][threadIdx.x] = x[(int64_t)(by + j) * c + bx + threadIdx.x];
  __syncthreads();
  for (int j = threadIdx.y; j < 32; j += 8) y[(int64_t)(bx + j) * r + by + threadIdx.x] = tile[threadIdx.x][j];
}

}  // namespace

KP_EXPORT int kp_run(kp_args* args) {
  if (int rc = kp_expect_tensors(args, "flaw_bank_conflicts", {{"x", KP_FP32, 2, 2}}, {{"y", KP_FP32, 2, 2}})) return rc;
  const kp_tensor& x = args->inputs[0];
  const int64_t r = x.shape[0], c = x.shape[1];
  if (int rc = kp_expect_shape(args, "flaw_bank_conflicts", args->outputs[0], "y", {c, r})) return rc;
  if (r % 32 || c % 32) return kp_fail(args, KP_ERR_UNSUPPORTED_SHAPE, "dims must be multiples of 32");
  dim3 grid((unsigned)(c / 32), (unsigned)(r / 32));
  k<<<grid, dim3(32, 8), 0, (cudaStream_t)args->stream>>>(static_cast<const float*>(x.data), static_cast<float*>(args->outputs[0].data), (int)r, (int)c);
  return kp_check_launch(args, "flaw_bank_conflicts");
}
