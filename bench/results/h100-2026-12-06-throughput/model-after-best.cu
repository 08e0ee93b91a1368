// FLOAT4
#include <kernelpro/kp_abi.h>
#include <kernelpro/kp_check.h>
#include <cuda_runtime.h>

__device__ __forceinline__ float gelu1(float v) { return v * 0.5f * (1.0f + erff(v * 0.70710678118654752440f)); }

__global__ void __launch_bounds__(256) gelu_vec(const float4* x, float4* y, const float* xs, float* ys, int64_t n) {
  const int64_t n4 = n / 4;
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride) {
    float4 v = x[i];
    v.x = gelu1(v.x); v.y = gelu1(v.y); v.z = gelu1(v.z); v.w = gelu1(v.w);
    y[i] = v;
  }
  for (int64_t i = n4 * 4 + (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) ys[i] = gelu1(xs[i]);
}

KP_EXPORT int kp_run(kp_args* args) {
  if (int rc = kp_expect_tensors(args, "gelu", {{"x", KP_FP32, 0, KP_MAX_RANK}}, {{"y", KP_FP32, 0, KP_MAX_RANK}}))
    return rc;
  const kp_tensor& x = args->inputs[0];
  const kp_tensor& y = args->outputs[0];
  if (int rc = kp_expect_same_shape(args, "gelu", y, "y", x, "x")) return rc;
  const int64_t n = kp_numel(x);
  gelu_vec<<<132 * 16, 256, 0, (cudaStream_t)args->stream>>>(static_cast<const float4*>(x.data),
                                                             static_cast<float4*>(y.data),
                                                             static_cast<const float*>(x.data),
                                                             static_cast<float*>(y.data), n);
  return kp_check_launch(args, "gelu");
}
