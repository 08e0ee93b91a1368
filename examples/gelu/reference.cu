// Reference for the gelu task: y = x * 0.5 * (1 + erf(x / sqrt(2))), fp32 in and out.
// Each element is evaluated in double and rounded once to fp32, so the reference is accurate
// to about half an fp32 ulp.
#include <kernelpro/kp_abi.h>

#include <cuda_runtime.h>

#include <cstdarg>
#include <cstdint>
#include <cstdio>

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

__global__ void gelu_reference(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    const double v = x[i];
    y[i] = (float)(v * 0.5 * (1.0 + erf(v * 0.70710678118654752440)));
  }
}

}  // namespace

KP_EXPORT int kp_run(kp_args* args) {
  if (args->num_inputs != 1 || args->num_outputs != 1) {
    return fail(args, KP_ERR_INVALID_ARGUMENT, "gelu: expected 1 input and 1 output, got %d and %d",
                args->num_inputs, args->num_outputs);
  }
  const kp_tensor& x = args->inputs[0];
  const kp_tensor& y = args->outputs[0];
  if (x.dtype != KP_FP32 || y.dtype != KP_FP32) {
    return fail(args, KP_ERR_INVALID_ARGUMENT, "gelu: x and y must be fp32 (dtypes %d, %d)",
                x.dtype, y.dtype);
  }
  if (x.rank < 0 || x.rank > KP_MAX_RANK || x.rank != y.rank) {
    return fail(args, KP_ERR_UNSUPPORTED_SHAPE,
                "gelu: ranks of x (%d) and y (%d) differ or are invalid", x.rank, y.rank);
  }
  int64_t n = 1;
  for (int d = 0; d < x.rank; ++d) {
    if (x.shape[d] <= 0 || x.shape[d] != y.shape[d]) {
      return fail(args, KP_ERR_UNSUPPORTED_SHAPE, "gelu: dim %d: x has %lld, y has %lld", d,
                  (long long)x.shape[d], (long long)y.shape[d]);
    }
    n *= x.shape[d];
  }
  if (!is_contiguous(x) || !is_contiguous(y)) {
    return fail(args, KP_ERR_UNSUPPORTED_SHAPE, "gelu: x and y must be contiguous");
  }

  constexpr int kBlock = 256;
  const int64_t blocks_needed = (n + kBlock - 1) / kBlock;
  const unsigned grid = (unsigned)(blocks_needed < (1 << 20) ? blocks_needed : (1 << 20));
  gelu_reference<<<grid, kBlock, 0, (cudaStream_t)args->stream>>>(
      static_cast<const float*>(x.data), static_cast<float*>(y.data), n);
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    return fail(args, KP_ERR_CUDA, "gelu: launch failed: %s", cudaGetErrorString(err));
  }
  return KP_OK;
}
