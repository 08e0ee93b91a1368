// Seed candidate for the softmax task: row softmax over the last dim, fp32.
// Correct but naive: one block per row and three passes over the row in global memory (max,
// sum of exp, write), each with scalar 4-byte loads and a shared-memory tree reduction, expf
// evaluated twice per element. Left on the table: one read of x from DRAM (keep the row in
// registers or shared memory, or an online max/sum in one pass), 16-byte vector accesses,
// warp-shuffle reductions, fast exp2-based exponentials, several rows per block.
#include <kernelpro/kp_abi.h>
#include <kernelpro/kp_check.h>

#include <cuda_runtime.h>

#include <climits>
#include <cmath>
#include <cstdint>

KP_TUNE(BLOCK, 1024, 128, 256, 512)

static_assert((BLOCK & (BLOCK - 1)) == 0, "the tree reduction needs a power-of-two BLOCK");

namespace {

__global__ void __launch_bounds__(BLOCK)
softmax_seed(const float* x, float* y, int64_t cols) {
  __shared__ float red[BLOCK];
  const int tid = threadIdx.x;
  const float* xr = x + (int64_t)blockIdx.x * cols;
  float* yr = y + (int64_t)blockIdx.x * cols;

  // Pass 1: row max.
  float m = -INFINITY;
  for (int64_t j = tid; j < cols; j += BLOCK) m = fmaxf(m, xr[j]);
  red[tid] = m;
  __syncthreads();
  for (int s = BLOCK / 2; s > 0; s >>= 1) {
    if (tid < s) red[tid] = fmaxf(red[tid], red[tid + s]);
    __syncthreads();
  }
  const float row_max = red[0];
  __syncthreads();  // everyone has read red[0] before it is overwritten

  // Pass 2: sum of exp(x - max).
  float sum = 0.0f;
  for (int64_t j = tid; j < cols; j += BLOCK) sum += expf(xr[j] - row_max);
  red[tid] = sum;
  __syncthreads();
  for (int s = BLOCK / 2; s > 0; s >>= 1) {
    if (tid < s) red[tid] += red[tid + s];
    __syncthreads();
  }
  const float row_sum = red[0];

  // Pass 3: write.
  for (int64_t j = tid; j < cols; j += BLOCK) yr[j] = expf(xr[j] - row_max) / row_sum;
}

}  // namespace

KP_EXPORT int kp_run(kp_args* args) {
  if (int rc = kp_expect_tensors(args, "softmax", {{"x", KP_FP32, 1, KP_MAX_RANK}},
                                 {{"y", KP_FP32, 1, KP_MAX_RANK}})) {
    return rc;
  }
  const kp_tensor& x = args->inputs[0];
  const kp_tensor& y = args->outputs[0];
  if (int rc = kp_expect_same_shape(args, "softmax", y, "y", x, "x")) return rc;
  const int64_t rows = kp_rows(x);
  const int64_t cols = x.shape[x.rank - 1];
  if (int rc = kp_expect_at_most(args, "softmax", "rows", rows, INT_MAX)) return rc;

  softmax_seed<<<(unsigned)rows, BLOCK, 0, (cudaStream_t)args->stream>>>(
      static_cast<const float*>(x.data), static_cast<float*>(y.data), cols);
  return kp_check_launch(args, "softmax");
}
