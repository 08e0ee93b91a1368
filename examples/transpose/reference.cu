// Reference for the transpose task: y[j, i] = x[i, j], x [R, C] and y [C, R], fp32, row-major.
// One thread per output element: writes are coalesced, reads gather down a column of x. Values
// are copied, never computed, so the result is exact.
#include <kernelpro/kp_abi.h>
#include <kernelpro/kp_check.h>

#include <cuda_runtime.h>

#include <cstdint>

namespace {

// x is [rows, cols]; y is [cols, rows].
__global__ void transpose_reference(const float* __restrict__ x, float* __restrict__ y,
                                    int64_t rows, int64_t cols) {
  const int64_t total = rows * cols;
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t o = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; o < total; o += stride) {
    const int64_t j = o / rows;  // row of y = column of x
    const int64_t i = o % rows;  // column of y = row of x
    y[o] = x[i * cols + j];
  }
}

}  // namespace

KP_EXPORT int kp_run(kp_args* args) {
  if (int rc = kp_expect_tensors(args, "transpose", {{"x", KP_FP32, 2, 2}},
                                 {{"y", KP_FP32, 2, 2}})) {
    return rc;
  }
  const kp_tensor& x = args->inputs[0];
  const kp_tensor& y = args->outputs[0];
  const int64_t rows = x.shape[0];
  const int64_t cols = x.shape[1];
  if (int rc = kp_expect_shape(args, "transpose", y, "y", {cols, rows})) return rc;

  constexpr int kBlock = 256;
  const int64_t blocks_needed = (rows * cols + kBlock - 1) / kBlock;
  const unsigned grid = (unsigned)(blocks_needed < (1 << 20) ? blocks_needed : (1 << 20));
  transpose_reference<<<grid, kBlock, 0, (cudaStream_t)args->stream>>>(
      static_cast<const float*>(x.data), static_cast<float*>(y.data), rows, cols);
  return kp_check_launch(args, "transpose");
}
