// The error is reported in the included header, instantiated from this file.
#include "header_error.cuh"

__global__ void use(const float* p, float* out) {
  out[threadIdx.x] = load_scaled(p, threadIdx.x);
}

// Captured with CUDA 13.0 (run in this directory): nvcc -std=c++17 -O3 -shared -Xcompiler -fPIC -gencode=arch=compute_90a,code=sm_90a -Xptxas -v header_error.cu -o /tmp/x.so > header_error.log 2>&1
