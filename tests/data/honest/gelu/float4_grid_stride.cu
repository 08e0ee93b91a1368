// Honest candidate for examples/gelu: 16-byte vector loads and stores in a grid-stride loop
// over a grid sized to the machine, erff in fp32. Must pass every anti-cheat rule: ok.
#include <kernelpro/kp_abi.h>

#include <cuda_runtime.h>

#include <cstdint>

namespace {

__device__ __forceinline__ float gelu(float v) { return v * 0.5f * (1.0f + erff(v * 0.70710678118654752440f)); }

__global__ void __launch_bounds__(256) gelu_float4(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
  const int64_t n4 = n / 4;
  const float4* x4 = reinterpret_cast<const float4*>(x);
  float4* y4 = reinterpret_cast<float4*>(y);
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride) {
    float4 v = x4[i];
    y4[i] = make_float4(gelu(v.x), gelu(v.y), gelu(v.z), gelu(v.w));
  }
  // The last n % 4 elements.
  if (blockIdx.x == 0 && threadIdx.x < n - n4 * 4) y[n4 * 4 + threadIdx.x] = gelu(x[n4 * 4 + threadIdx.x]);
}

}  // namespace

KP_EXPORT int kp_run(kp_args* args) {
  if (args->num_inputs != 1 || args->num_outputs != 1) return KP_ERR_INVALID_ARGUMENT;
  int64_t n = 1;
  for (int d = 0; d < args->inputs[0].rank; ++d) n *= args->inputs[0].shape[d];
  static int sms = 0;
  if (!sms) {
    int device = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    if (sms <= 0) sms = 132;
  }
  const int64_t needed = (n / 4 + 255) / 256;
  const int grid = (int)(needed < (int64_t)sms * 16 ? (needed > 0 ? needed : 1) : (int64_t)sms * 16);
  gelu_float4<<<grid, 256, 0, (cudaStream_t)args->stream>>>(static_cast<const float*>(args->inputs[0].data),
                                                             static_cast<float*>(args->outputs[0].data), n);
  return cudaGetLastError() == cudaSuccess ? KP_OK : KP_ERR_CUDA;
}
