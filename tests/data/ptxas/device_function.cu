// A non-inlined recursive device function called by a kernel, plus a __device__ global:
// ptxas reports the device function's own properties (no "Compiling entry function"),
// a cumulative stack size for the kernel and gmem for the module.
__device__ float g_bias[4];

__device__ __noinline__ float depth_sum(const float* p, int depth) {
  if (depth <= 0) return p[0];
  return p[depth] + depth_sum(p, depth - 1);
}

__global__ void walk(const float* in, float* out, int depth) {
  out[threadIdx.x] = depth_sum(in + threadIdx.x, depth) + g_bias[threadIdx.x & 3];
}

// Captured with CUDA 13.0 (run in this directory): nvcc -std=c++17 -O3 -shared -Xcompiler -fPIC -gencode=arch=compute_90a,code=sm_90a -Xptxas -v device_function.cu -o /tmp/x.so > device_function.log 2>&1
