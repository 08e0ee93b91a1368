// Reference for the gelu task: y = x * 0.5 * (1 + erf(x / sqrt(2))), fp32 in and out.
// Each element is evaluated in double and rounded once to fp32, so the reference is accurate
// to about half an fp32 ulp.
#include <kernelpro/kp_abi.h>
#include <kernelpro/kp_check.h>

#include <cuda_runtime.h>

#include <cstdint>

namespace {

__global__ void gelu_reference(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    const double v = x[i];
    y[i] = (float)(v * 0.5 * (1.0 + erf(v * 0.70710678118654752440)));
  }
}

}  // namespace

KP_EXPORT int kp_run(kp_args* args) {
  if (int rc = kp_expect_tensors(args, "gelu", {{"x", KP_FP32, 0, KP_MAX_RANK}},
                                 {{"y", KP_FP32, 0, KP_MAX_RANK}})) {
    return rc;
  }
  const kp_tensor& x = args->inputs[0];
  const kp_tensor& y = args->outputs[0];
  if (int rc = kp_expect_same_shape(args, "gelu", y, "y", x, "x")) return rc;
  const int64_t n = kp_numel(x);

  constexpr int kBlock = 256;
  const int64_t blocks_needed = (n + kBlock - 1) / kBlock;
  const unsigned grid = (unsigned)(blocks_needed < (1 << 20) ? blocks_needed : (1 << 20));
  gelu_reference<<<grid, kBlock, 0, (cudaStream_t)args->stream>>>(
      static_cast<const float*>(x.data), static_cast<float*>(y.data), n);
  return kp_check_launch(args, "gelu");
}
