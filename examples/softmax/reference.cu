// Reference for the softmax task: y[i, :] = exp(x[i, :] - max_i) / sum_j exp(x[i, j] - max_i),
// over the last dim, fp32 in and out. One block per row; the max is taken in fp32 (exact), the
// exponentials and the row sum in double, and each output is rounded once to fp32.
#include <kernelpro/kp_abi.h>
#include <kernelpro/kp_check.h>

#include <cuda_runtime.h>

#include <climits>
#include <cmath>
#include <cstdint>

namespace {

constexpr int kBlock = 256;

__global__ void softmax_reference(const float* __restrict__ x, float* __restrict__ y,
                                  int64_t cols) {
  __shared__ double red[kBlock];
  const int tid = threadIdx.x;
  const float* xr = x + (int64_t)blockIdx.x * cols;
  float* yr = y + (int64_t)blockIdx.x * cols;

  float m = -INFINITY;
  for (int64_t j = tid; j < cols; j += kBlock) m = fmaxf(m, xr[j]);
  red[tid] = m;
  __syncthreads();
  for (int s = kBlock / 2; s > 0; s >>= 1) {
    if (tid < s) red[tid] = fmax(red[tid], red[tid + s]);
    __syncthreads();
  }
  const double row_max = red[0];
  __syncthreads();

  double sum = 0.0;
  for (int64_t j = tid; j < cols; j += kBlock) sum += exp((double)xr[j] - row_max);
  red[tid] = sum;
  __syncthreads();
  for (int s = kBlock / 2; s > 0; s >>= 1) {
    if (tid < s) red[tid] += red[tid + s];
    __syncthreads();
  }
  const double row_sum = red[0];

  for (int64_t j = tid; j < cols; j += kBlock) {
    yr[j] = (float)(exp((double)xr[j] - row_max) / row_sum);
  }
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

  softmax_reference<<<(unsigned)rows, kBlock, 0, (cudaStream_t)args->stream>>>(
      static_cast<const float*>(x.data), static_cast<float*>(y.data), cols);
  return kp_check_launch(args, "softmax");
}
