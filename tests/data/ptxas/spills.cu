// Built with -maxrregcount=24: a big fully unrolled register array cannot fit and spills.
__global__ void pressure(const float* in, float* out) {
  float acc[64];
#pragma unroll
  for (int k = 0; k < 64; ++k) acc[k] = in[threadIdx.x + k * 32];
#pragma unroll
  for (int r = 0; r < 8; ++r) {
#pragma unroll
    for (int k = 0; k < 64; ++k) acc[k] = acc[k] * acc[(k + r + 1) % 64] + 1.0f;
  }
  float s = 0.0f;
#pragma unroll
  for (int k = 0; k < 64; ++k) s += acc[k];
  out[threadIdx.x] = s;
}

// Captured with CUDA 13.0 (run in this directory): nvcc -std=c++17 -O3 -shared -Xcompiler -fPIC -gencode=arch=compute_90a,code=sm_90a -Xptxas -v -maxrregcount=24 spills.cu -o /tmp/x.so > spills.log 2>&1
