// The epilogue of Linear -> ReLU -> scale, fused: y = max(acc + bias, 0) * scale, in place on
// the GEMM's output.
#include <cstdint>
#include <cuda_runtime.h>

__global__ void bias_relu_scale(float* __restrict__ y, const float* __restrict__ bias, int64_t rows, int64_t cols,
                                float scale) {
  int64_t n = rows * cols;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    y[i] = fmaxf(y[i] + bias[i % cols], 0.f) * scale;
}

extern "C" void bias_relu_scale(float* y, const float* bias, int64_t rows, int64_t cols, float scale,
                                cudaStream_t stream) {
  int64_t blocks = (rows * cols + 255) / 256;
  bias_relu_scale<<<(unsigned)(blocks < 132 * 16 ? blocks : 132 * 16), 256, 0, stream>>>(y, bias, rows, cols, scale);
}
