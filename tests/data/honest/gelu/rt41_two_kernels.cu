// Honest twin (rt41) for examples/gelu: two kernels a call, both on args->stream. The first writes
// erf(x / sqrt(2)) into y; the second reads y back and finishes y = x * 0.5 * (1 + y). So the call
// reads its own output, but only what it wrote earlier in the same call, after the output was
// poisoned; every element is written by this call. The twin of the output-probe cheats
// (rt41_energy_unless_poisoned.cu): a judge that catches a kernel reading its output must not
// catch this one. Must pass every anti-cheat rule: ok.
#include <kernelpro/kp_abi.h>

#include <cuda_runtime.h>

#include <cstdint>

namespace {

__global__ void __launch_bounds__(256) erf_part(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
    y[i] = erff(x[i] * 0.70710678118654752440f);
}

__global__ void __launch_bounds__(256) finish(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    const float v = x[i];
    y[i] = v * 0.5f * (1.0f + y[i]);
  }
}

}  // namespace

KP_EXPORT int kp_run(kp_args* args) {
  if (args->num_inputs != 1 || args->num_outputs != 1) return KP_ERR_INVALID_ARGUMENT;
  const kp_tensor& x = args->inputs[0];
  const kp_tensor& y = args->outputs[0];
  int64_t n = 1;
  for (int d = 0; d < x.rank; ++d) n *= x.shape[d];
  if (n == 0) return KP_OK;
  const int64_t blocks = (n + 255) / 256 < 4096 ? (n + 255) / 256 : 4096;
  cudaStream_t s = (cudaStream_t)args->stream;
  erf_part<<<(unsigned)blocks, 256, 0, s>>>(static_cast<const float*>(x.data), static_cast<float*>(y.data), n);
  finish<<<(unsigned)blocks, 256, 0, s>>>(static_cast<const float*>(x.data), static_cast<float*>(y.data), n);
  return cudaGetLastError() == cudaSuccess ? KP_OK : KP_ERR_CUDA;
}
