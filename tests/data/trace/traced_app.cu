// The program src/profile/trace/trace_gpu_test.cc runs under libkp_trace.so.
//
//   traced_app            warm-up kernel, then 3 calls scoped with kp_trace_begin/end
//   traced_app --no-scope the same work without begin/end (everything is outside any call)
//
// Each call: scale_kernel and offset_kernel<3> on stream a, square_kernel on stream b, a
// cudaMemsetAsync of kMemsetBytes and a cudaMemcpyAsync device-to-host of kCopyBytes on stream a,
// then cudaDeviceSynchronize. Prints "traced_app: ok" and exits 0; exits 1 on a CUDA error and
// 2 when scoping was asked for but the library's functions cannot be found.
#include <cstdio>
#include <cstring>

#include <cuda_runtime.h>

#include "profile/trace/kp_trace_api.h"

constexpr int kN = 1 << 16;
constexpr size_t kMemsetBytes = 1 << 20;  // 1 MiB
constexpr size_t kCopyBytes = 256 << 10;  // 256 KiB
constexpr int kCalls = 3;

__global__ void warmup_kernel(int* p) {
  if (threadIdx.x == 0 && blockIdx.x == 0) *p = 1;
}

__global__ void scale_kernel(float* x, int n, float s) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= s;
}

template <int kOffset>
__global__ void offset_kernel(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += kOffset;
}

__global__ void square_kernel(float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = y[i] * y[i];
}

#define CHECK(expr)                                                                       \
  do {                                                                                    \
    cudaError_t e_ = (expr);                                                              \
    if (e_ != cudaSuccess) {                                                              \
      std::fprintf(stderr, "traced_app: %s failed: %s\n", #expr, cudaGetErrorString(e_)); \
      return 1;                                                                           \
    }                                                                                     \
  } while (0)

int main(int argc, char** argv) {
  bool scope = !(argc > 1 && std::strcmp(argv[1], "--no-scope") == 0);
  CHECK(cudaFree(0));  // initializes CUDA: the driver loads the injection library here

  kp_trace_fns fns;
  if (scope && kp_trace_lookup(&fns) != 0) {
    std::fprintf(stderr, "traced_app: kp_trace_begin/end not found (CUDA_INJECTION64_PATH=%s)\n",
                 getenv("CUDA_INJECTION64_PATH") ? getenv("CUDA_INJECTION64_PATH") : "(unset)");
    return 2;
  }

  int* flag = nullptr;
  float *x = nullptr, *y = nullptr, *host = nullptr;
  unsigned char* scratch = nullptr;
  CHECK(cudaMalloc(&flag, sizeof(int)));
  CHECK(cudaMalloc(&x, kN * sizeof(float)));
  CHECK(cudaMalloc(&y, kN * sizeof(float)));
  CHECK(cudaMalloc(&scratch, kMemsetBytes));
  CHECK(cudaMallocHost(&host, kCopyBytes));
  cudaStream_t a, b;
  CHECK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));

  warmup_kernel<<<1, 32>>>(flag);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());

  const int threads = 256, blocks = (kN + threads - 1) / threads;
  for (int i = 0; i < kCalls; ++i) {
    if (scope && fns.begin(i) != 0) {
      std::fprintf(stderr, "traced_app: kp_trace_begin(%d) failed (is KP_TRACE_OUT set?)\n", i);
      return 2;
    }
    scale_kernel<<<blocks, threads, 0, a>>>(x, kN, 2.0f);
    offset_kernel<3><<<blocks, threads, 0, a>>>(x, kN);
    square_kernel<<<blocks, threads, 0, b>>>(y, kN);
    CHECK(cudaGetLastError());
    CHECK(cudaMemsetAsync(scratch, 0, kMemsetBytes, a));
    CHECK(cudaMemcpyAsync(host, scratch, kCopyBytes, cudaMemcpyDeviceToHost, a));
    CHECK(cudaDeviceSynchronize());
    if (scope && fns.end(i) != 0) {
      std::fprintf(stderr, "traced_app: kp_trace_end(%d) failed\n", i);
      return 2;
    }
  }
  std::printf("traced_app: ok\n");
  return 0;
}
