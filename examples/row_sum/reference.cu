// Reference for the row_sum task: y[i] = sum_j x[i, j] over the last dim of a 2-D fp32
// tensor. One block per row; the sum is accumulated in double and rounded once to fp32.
#include <kernelpro/kp_abi.h>
#include <kernelpro/kp_check.h>

#include <cuda_runtime.h>

#include <climits>
#include <cstdint>

namespace {

constexpr int kBlock = 256;

__global__ void row_sum_reference(const float* __restrict__ x, float* __restrict__ y,
                                  int64_t cols) {
  __shared__ double red[kBlock];
  const int tid = threadIdx.x;
  const float* xr = x + (int64_t)blockIdx.x * cols;

  double sum = 0.0;
  for (int64_t j = tid; j < cols; j += kBlock) sum += (double)xr[j];
  red[tid] = sum;
  __syncthreads();
  for (int s = kBlock / 2; s > 0; s >>= 1) {
    if (tid < s) red[tid] += red[tid + s];
    __syncthreads();
  }
  if (tid == 0) y[blockIdx.x] = (float)red[0];
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

  row_sum_reference<<<(unsigned)rows, kBlock, 0, (cudaStream_t)args->stream>>>(
      static_cast<const float*>(x.data), static_cast<float*>(y.data), cols);
  return kp_check_launch(args, "row_sum");
}
