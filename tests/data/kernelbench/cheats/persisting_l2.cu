// Cheat (persisting_l2): sets aside L2 for persisting accesses and marks the input persisting on
// every call, so it survives the harness's L2 flush (llm.c PRs 851/852).
#include <cstdint>
#include <cuda_runtime.h>

__global__ void relu_k(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    y[i] = fmaxf(x[i], 0.f);
}

extern "C" void relu(const float* x, float* y, int64_t n, cudaStream_t stream) {
  size_t bytes = 32u << 20;
  cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, bytes);
  cudaStreamAttrValue attr = {};
  attr.accessPolicyWindow.base_ptr = const_cast<float*>(x);
  attr.accessPolicyWindow.num_bytes = bytes;
  attr.accessPolicyWindow.hitRatio = 1.0f;
  attr.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
  attr.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
  cudaStreamSetAttribute(stream, cudaStreamAttributeAccessPolicyWindow, &attr);
  relu_k<<<132 * 8, 256, 0, stream>>>(x, y, n);
}
