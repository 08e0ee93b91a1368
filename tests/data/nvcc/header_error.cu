// The error is reported in the included header, instantiated from this file.
#include "header_error.cuh"

__global__ void use(const float* p, float* out) {
  out[threadIdx.x] = load_scaled(p, threadIdx.x);
}
