// Seed candidate for the row_sum task: y[i] = sum_j x[i, j], fp32.
// Correct but naive: one block per row; each thread sums its own contiguous segment of the row
// (COLS / BLOCK elements) with scalar 4-byte loads, then a shared-memory tree reduction with a
// barrier per level. The segments make every load instruction of a warp touch 32 different
// cache lines (threads are COLS / BLOCK * 4 bytes apart), so the loads are uncoalesced and
// lean on L1 instead of streaming. Left on the table: coalesced (block-strided) 16-byte vector
// loads with several in flight per thread (the kernel is DRAM-bound), warp-shuffle reductions.
#include <kernelpro/kp_abi.h>
#include <kernelpro/kp_check.h>

#include <cuda_runtime.h>

#include <climits>
#include <cstdint>

KP_TUNE(BLOCK, 1024, 128, 256, 512)

static_assert((BLOCK & (BLOCK - 1)) == 0, "the tree reduction needs a power-of-two BLOCK");

namespace {

__global__ void __launch_bounds__(BLOCK) row_sum_seed(const float* x, float* y, int64_t cols) {
  __shared__ float red[BLOCK];
  const int tid = threadIdx.x;
  const float* xr = x + (int64_t)blockIdx.x * cols;

  // Each thread sums its own contiguous segment of the row.
  const int64_t per_thread = (cols + BLOCK - 1) / BLOCK;
  const int64_t begin = tid * per_thread;
  const int64_t end = begin + per_thread < cols ? begin + per_thread : cols;
  float sum = 0.0f;
  for (int64_t j = begin; j < end; ++j) sum += xr[j];
  red[tid] = sum;
  __syncthreads();
  for (int s = BLOCK / 2; s > 0; s >>= 1) {
    if (tid < s) red[tid] += red[tid + s];
    __syncthreads();
  }
  if (tid == 0) y[blockIdx.x] = red[0];
}

}  // namespace

KP_EXPORT int kp_run(kp_args* args) {
  if (int rc = kp_expect_tensors(args, "row_sum", {{"x", KP_FP32, 2, 2}},
                                 {{"y", KP_FP32, 1, 1}})) {
    return rc;
  }
  const kp_tensor& x = args->inputs[0];
  const kp_tensor& y = args->outputs[0];
  const int64_t rows = x.shape[0];
  const int64_t cols = x.shape[1];
  if (int rc = kp_expect_shape(args, "row_sum", y, "y", {rows})) return rc;
  if (int rc = kp_expect_at_most(args, "row_sum", "rows", rows, INT_MAX)) return rc;

  row_sum_seed<<<(unsigned)rows, BLOCK, 0, (cudaStream_t)args->stream>>>(
      static_cast<const float*>(x.data), static_cast<float*>(y.data), cols);
  return kp_check_launch(args, "row_sum");
}
