// The ReLU kernel of bench/build_latency (the same kernel load_inline_relu.py builds).
#include <kernelpro/kp_abi.h>
#include <cuda_runtime.h>

__global__ void relu(const float* x, float* y, long long n) {
  long long i = blockIdx.x * 256LL + threadIdx.x;
  if (i < n) y[i] = x[i] > 0.f ? x[i] : 0.f;
}

KP_EXPORT int kp_run(kp_args* a) {
  long long n = a->inputs[0].shape[0];
  relu<<<(unsigned)((n + 255) / 256), 256, 0, a->stream>>>((const float*)a->inputs[0].data, (float*)a->outputs[0].data, n);
  return cudaGetLastError() == cudaSuccess ? KP_OK : KP_ERR_CUDA;
}
