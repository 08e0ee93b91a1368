// Reference for the layernorm task: y = (x - mean) / sqrt(var + eps) * gamma + beta over the
// last dim, biased variance (as torch.nn.LayerNorm), fp32 in and out, eps from the scalars.
// One block per row; mean and the centred variance (two passes) are accumulated in double, and
// each output is computed in double and rounded once to fp32.
#include <kernelpro/kp_abi.h>
#include <kernelpro/kp_check.h>

#include <cuda_runtime.h>

#include <climits>
#include <cmath>
#include <cstdint>

namespace {

constexpr int kBlock = 256;

// Sum of v over the block, in double; every thread gets the result.
__device__ double block_sum(double v, double* red) {
  const int tid = threadIdx.x;
  red[tid] = v;
  __syncthreads();
  for (int s = kBlock / 2; s > 0; s >>= 1) {
    if (tid < s) red[tid] += red[tid + s];
    __syncthreads();
  }
  const double total = red[0];
  __syncthreads();  // everyone has read red[0] before it is reused
  return total;
}

__global__ void layernorm_reference(const float* __restrict__ x, const float* __restrict__ gamma,
                                    const float* __restrict__ beta, float* __restrict__ y,
                                    int64_t cols, double eps) {
  __shared__ double red[kBlock];
  const int tid = threadIdx.x;
  const float* xr = x + (int64_t)blockIdx.x * cols;
  float* yr = y + (int64_t)blockIdx.x * cols;

  double sum = 0.0;
  for (int64_t j = tid; j < cols; j += kBlock) sum += (double)xr[j];
  const double mean = block_sum(sum, red) / (double)cols;

  double sq = 0.0;
  for (int64_t j = tid; j < cols; j += kBlock) {
    const double d = (double)xr[j] - mean;
    sq += d * d;
  }
  const double var = block_sum(sq, red) / (double)cols;
  const double rstd = 1.0 / sqrt(var + eps);

  for (int64_t j = tid; j < cols; j += kBlock) {
    yr[j] = (float)(((double)xr[j] - mean) * rstd * (double)gamma[j] + (double)beta[j]);
  }
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

  layernorm_reference<<<(unsigned)rows, kBlock, 0, (cudaStream_t)args->stream>>>(
      static_cast<const float*>(x.data), static_cast<const float*>(gamma.data),
      static_cast<const float*>(beta.data), static_cast<float*>(y.data), cols, eps);
  return kp_check_launch(args, "layernorm");
}
