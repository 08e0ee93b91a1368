// Compiles, with front-end warnings: an unused variable and a set-but-unused one.
__global__ void copy(float* out, const float* in, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int unused;
  float scratch = 0.0f;
  scratch = 1.0f;
  if (i < n) out[i] = in[i];
}

// Captured with CUDA 13.0 (run in this directory): nvcc -std=c++17 -O3 -shared -Xcompiler -fPIC -gencode=arch=compute_90a,code=sm_90a -Xptxas -v unused_variable.cu -o /tmp/x.so > unused_variable.log 2>&1
