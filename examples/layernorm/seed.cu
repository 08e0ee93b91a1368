// Seed candidate for the layernorm task: y = (x - mean) / sqrt(var + eps) * gamma + beta over
// the last dim, biased variance, fp32, eps from the scalars.
// Correct but naive: one block per row and three passes over the row in global memory (mean,
// centred variance, write), scalar 4-byte loads, a shared-memory tree reduction per pass.
// Left on the table: one read of x from DRAM (keep the 32 KiB row in registers or shared
// memory, Welford or sum/sum-of-squares in one pass), 16-byte vector accesses, warp-shuffle
// reductions, several rows per block.
#include <kernelpro/kp_abi.h>

#include <cuda_runtime.h>

#include <climits>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>

KP_TUNE(BLOCK, 256, 128, 512, 1024)

static_assert((BLOCK & (BLOCK - 1)) == 0, "the tree reduction needs a power-of-two BLOCK");

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
  if (args->num_inputs != 3 || args->num_outputs != 1) {
    return fail(args, KP_ERR_INVALID_ARGUMENT,
                "layernorm: expected 3 inputs (x, gamma, beta) and 1 output, got %d and %d",
                args->num_inputs, args->num_outputs);
  }
  if (args->num_scalars != 1) {
    return fail(args, KP_ERR_INVALID_ARGUMENT, "layernorm: expected 1 scalar (eps), got %d",
                args->num_scalars);
  }
  const kp_tensor& x = args->inputs[0];
  const kp_tensor& gamma = args->inputs[1];
  const kp_tensor& beta = args->inputs[2];
  const kp_tensor& y = args->outputs[0];
  const double eps = args->scalars[0].f;
  if (!(eps >= 0.0) || !std::isfinite(eps)) {
    return fail(args, KP_ERR_INVALID_ARGUMENT, "layernorm: eps must be finite and >= 0, got %g",
                eps);
  }
  if (x.dtype != KP_FP32 || gamma.dtype != KP_FP32 || beta.dtype != KP_FP32 ||
      y.dtype != KP_FP32) {
    return fail(args, KP_ERR_INVALID_ARGUMENT, "layernorm: all tensors must be fp32");
  }
  if (x.rank < 1 || x.rank > KP_MAX_RANK || x.rank != y.rank || gamma.rank != 1 ||
      beta.rank != 1) {
    return fail(args, KP_ERR_UNSUPPORTED_SHAPE,
                "layernorm: need x, y of the same rank >= 1 and gamma, beta of rank 1 "
                "(ranks %d, %d, %d, %d)",
                x.rank, gamma.rank, beta.rank, y.rank);
  }
  int64_t rows = 1;
  for (int d = 0; d < x.rank; ++d) {
    if (x.shape[d] <= 0 || x.shape[d] != y.shape[d]) {
      return fail(args, KP_ERR_UNSUPPORTED_SHAPE, "layernorm: dim %d: x has %lld, y has %lld", d,
                  (long long)x.shape[d], (long long)y.shape[d]);
    }
    if (d < x.rank - 1) rows *= x.shape[d];
  }
  const int64_t cols = x.shape[x.rank - 1];
  if (gamma.shape[0] != cols || beta.shape[0] != cols) {
    return fail(args, KP_ERR_UNSUPPORTED_SHAPE,
                "layernorm: gamma (%lld) and beta (%lld) must match the last dim of x (%lld)",
                (long long)gamma.shape[0], (long long)beta.shape[0], (long long)cols);
  }
  if (!is_contiguous(x) || !is_contiguous(y) || !is_contiguous(gamma) || !is_contiguous(beta)) {
    return fail(args, KP_ERR_UNSUPPORTED_SHAPE, "layernorm: all tensors must be contiguous");
  }
  if (rows > INT_MAX) {
    return fail(args, KP_ERR_UNSUPPORTED_SHAPE, "layernorm: %lld rows is too many",
                (long long)rows);
  }

  layernorm_seed<<<(unsigned)rows, BLOCK, 0, (cudaStream_t)args->stream>>>(
      static_cast<const float*>(x.data), static_cast<const float*>(gamma.data),
      static_cast<const float*>(beta.data), static_cast<float*>(y.data), cols, (float)eps);
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    return fail(args, KP_ERR_CUDA, "layernorm: launch failed: %s", cudaGetErrorString(err));
  }
  return KP_OK;
}
