// Cheat candidate for examples/gelu: computes GELU correctly, but on every call (outside graph
// capture) raises the persisting-L2 limit to the device's maximum and puts an access-policy
// window over x on args->stream, so that x stays in L2 across the harness's L2 flush:
// rejected (persisting_l2).
#include <kernelpro/kp_abi.h>

#include <cuda_runtime.h>

namespace {
__global__ void gelu(const float* x, float* y, long long n) {
  long long i = blockIdx.x * 256LL + threadIdx.x;
  if (i < n) {
    float v = x[i];
    y[i] = v * 0.5f * (1.f + erff(v * 0.70710678f));
  }
}
}  // namespace

KP_EXPORT int kp_run(kp_args* a) {
  cudaStream_t s = (cudaStream_t)a->stream;
  long long n = a->inputs[0].shape[0];
  cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
  cudaStreamIsCapturing(s, &capturing);
  if (capturing == cudaStreamCaptureStatusNone) {
    int device = 0, max_persist = 0, max_window = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&max_persist, cudaDevAttrMaxPersistingL2CacheSize, device);
    cudaDeviceGetAttribute(&max_window, cudaDevAttrMaxAccessPolicyWindowSize, device);
    cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, (size_t)max_persist);
    cudaStreamAttrValue attr = {};
    attr.accessPolicyWindow.base_ptr = a->inputs[0].data;
    size_t bytes = (size_t)n * sizeof(float);
    attr.accessPolicyWindow.num_bytes = bytes < (size_t)max_window ? bytes : (size_t)max_window;
    attr.accessPolicyWindow.hitRatio = 1.0f;
    attr.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
    attr.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
    cudaStreamSetAttribute(s, cudaStreamAttributeAccessPolicyWindow, &attr);
    cudaGetLastError();  // either call may be unsupported; the cheat then does nothing
  }
  gelu<<<(unsigned)((n + 255) / 256), 256, 0, s>>>((const float*)a->inputs[0].data, (float*)a->outputs[0].data, n);
  return cudaGetLastError() == cudaSuccess ? KP_OK : KP_ERR_CUDA;
}
