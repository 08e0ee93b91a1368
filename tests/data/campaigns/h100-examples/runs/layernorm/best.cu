// Seed candidate for the layernorm task: y = (x - mean) / sqrt(var + eps) * gamma + beta over
// the last dim, biased variance, fp32, eps from the scalars.
// Correct but naive: one block per row and three passes over the row in global memory (mean,
// centred variance, write), scalar 4-byte loads, a shared-memory tree reduction per pass.
// Left on the table: one read of x from DRAM (keep the 32 KiB row in registers or shared
// memory, Welford or sum/sum-of-squares in one pass), 16-byte vector accesses, warp-shuffle
// reductions, several rows per block.
#include <kernelpro/kp_abi.h>
#include <kernelpro/kp_check.h>

#include <cuda_runtime.h>

#include <climits>
#include <cmath>
#include <cstdint>

KP_TUNE(BLOCK, 512, 128, 256, 1024)

static_assert((BLOCK & (BLOCK - 1)) == 0, "the tree reduction needs a power-of-two BLOCK");

namespace {

// Sum of v over the block; every thread gets the result.
__device__ float block_sum(float v, float* red) {
  const int tid = threadIdx.x;
  red[tid] = v;
  __syncthreads();
  for (int s = BLOCK / 2; s > 0; s >>= 1) {
    if (tid < s) red[tid] += red[tid + s];
    __syncthreads();
  }
  const float total = red[0];
  __syncthreads();  // everyone has read red[0] before it is reused
  return total;
}

__global__ void __launch_bounds__(BLOCK)
layernorm_seed(const float* x, const float* gamma, const float* beta, float* y, int64_t cols,
               float eps) {
  __shared__ float red[BLOCK];
  const int tid = threadIdx.x;
  const float* xr = x + (int64_t)blockIdx.x * cols;
  float* yr = y + (int64_t)blockIdx.x * cols;

  float sum = 0.0f;
  for (int64_t j = tid; j < cols; j += BLOCK) sum += xr[j];
  const float mean = block_sum(sum, red) / (float)cols;

  float sq = 0.0f;
  for (int64_t j = tid; j < cols; j += BLOCK) {
    const float d = xr[j] - mean;
    sq += d * d;
  }
  const float var = block_sum(sq, red) / (float)cols;
  const float rstd = 1.0f / sqrtf(var + eps);

  for (int64_t j = tid; j < cols; j += BLOCK) yr[j] = (xr[j] - mean) * rstd * gamma[j] + beta[j];
}

}  // namespace

KP_EXPORT int kp_run(kp_args* args) {
  if (int rc = kp_expect_counts(args, "layernorm", 3, 1, 1)) return rc;
  const kp_tensor& x = args->inputs[0];
  const kp_tensor& gamma = args->inputs[1];
  const kp_tensor& beta = args->inputs[2];
  const kp_tensor& y = args->outputs[0];
  const double eps = args->scalars[0].f;
  if (!(eps >= 0.0) || !std::isfinite(eps)) {
    return kp_fail(args, KP_ERR_INVALID_ARGUMENT, "layernorm: eps must be finite and >= 0, got %g",
                   eps);
  }
  if (int rc = kp_expect_tensors(args, "layernorm",
                                 {{"x", KP_FP32, 1, KP_MAX_RANK}, {"gamma", KP_FP32, 1, 1},
                                  {"beta", KP_FP32, 1, 1}},
                                 {{"y", KP_FP32, 1, KP_MAX_RANK}})) {
    return rc;
  }
  if (int rc = kp_expect_same_shape(args, "layernorm", y, "y", x, "x")) return rc;
  const int64_t rows = kp_rows(x);
  const int64_t cols = x.shape[x.rank - 1];
  if (int rc = kp_expect_shape(args, "layernorm", gamma, "gamma", {cols})) return rc;
  if (int rc = kp_expect_shape(args, "layernorm", beta, "beta", {cols})) return rc;
  if (int rc = kp_expect_at_most(args, "layernorm", "rows", rows, INT_MAX)) return rc;

  layernorm_seed<<<(unsigned)rows, BLOCK, 0, (cudaStream_t)args->stream>>>(
      static_cast<const float*>(x.data), static_cast<const float*>(gamma.data),
      static_cast<const float*>(beta.data), static_cast<float*>(y.data), cols, (float)eps);
  return kp_check_launch(args, "layernorm");
}
