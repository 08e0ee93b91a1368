// Several small kernels in one shared object, each showing one instruction class that
// kernelpro's SASS summary reports. Built (sass_toolchain_test.cc, and kernels.sass here) with
//   nvcc -std=c++17 -O3 -shared -Xcompiler -fPIC -use_fast_math -Xptxas -v
//        -gencode=arch=compute_90a,code=sm_90a kernels.cu -o kernels.so
#include <cuda_runtime.h>

// 16 bytes per thread: LDG.E.128 / STG.E.128.
__global__ void copy_float4(const float4* __restrict__ in, float4* __restrict__ out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i];
}

// 4 bytes per thread: LDG.E / STG.E.
__global__ void copy_scalar(const float* in, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i];
}

// 1 byte per thread: LDG.E.U8 / STG.E.U8.
__global__ void copy_bytes(const unsigned char* in, unsigned char* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i];
}

// Double precision: DFMA, DADD, DMUL.
__global__ void daxpy_sum(const double* x, const double* y, double* out, double a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = (a * x[i] + y[i]) + x[i] * y[i] + (x[i] + a);
}

// expf under -use_fast_math: MUFU.EX2.
__global__ void fast_exp(const float* in, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = expf(in[i]);
}

// Block reduction through shared memory: STS/LDS and BAR.SYNC from __syncthreads.
__global__ void block_sum(const float* in, float* out) {
  __shared__ float buf[256];
  int t = threadIdx.x;
  buf[t] = in[blockIdx.x * 256 + t];
  __syncthreads();
  for (int s = 128; s > 0; s >>= 1) {
    if (t < s) buf[t] += buf[t + s];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = buf[0];
}
