// A simple elementwise kernel: few registers, no shared memory, no stack.
__global__ void vector_add(float* c, const float* a, const float* b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

// Captured with CUDA 13.0 (run in this directory): nvcc -std=c++17 -O3 -shared -Xcompiler -fPIC -gencode=arch=compute_90a,code=sm_90a -Xptxas -v simple.cu -o /tmp/x.so > simple.log 2>&1
