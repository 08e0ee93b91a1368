// Honest candidate for examples/gelu that launches 40 kernels a call, one per slice of the
// elements: correct, and slower than one launch. More launches than the worker's Range Profiler
// session holds at first (16, verdict/worker_plan.h), so profiling it grows the session and
// collects the call again (ProfileSessionCapacityGpu.ACallOfFortyLaunchesGrowsTheSession). Must pass
// every anti-cheat rule: ok.
#include <kernelpro/kp_abi.h>

#include <cuda_runtime.h>

#include <cstdint>

namespace {

constexpr int kSlices = 40;

__global__ void __launch_bounds__(256) gelu_slice(const float* __restrict__ x, float* __restrict__ y, int64_t begin,
                                                  int64_t end) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = begin + (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < end; i += stride) {
    const float v = x[i];
    y[i] = v * 0.5f * (1.0f + erff(v * 0.70710678118654752440f));
  }
}

}  // namespace

KP_EXPORT int kp_run(kp_args* args) {
  if (args->num_inputs != 1 || args->num_outputs != 1) return KP_ERR_INVALID_ARGUMENT;
  const kp_tensor& x = args->inputs[0];
  const kp_tensor& y = args->outputs[0];
  int64_t n = 1;
  for (int d = 0; d < x.rank; ++d) n *= x.shape[d];
  const int64_t slice = (n + kSlices - 1) / kSlices;
  cudaStream_t stream = (cudaStream_t)args->stream;
  for (int s = 0; s < kSlices; ++s) {
    const int64_t begin = s * slice, end = begin + slice < n ? begin + slice : n;
    if (begin >= end) break;
    const int64_t blocks = (end - begin + 255) / 256 < 1024 ? (end - begin + 255) / 256 : 1024;
    gelu_slice<<<(unsigned)blocks, 256, 0, stream>>>(static_cast<const float*>(x.data), static_cast<float*>(y.data),
                                                      begin, end);
  }
  return cudaGetLastError() == cudaSuccess ? KP_OK : KP_ERR_CUDA;
}
