// Two uses of undeclared names in a kernel: the EDG front end reports each one.
__global__ void scale(float* out, const float* in, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] * factor;
  out[0] += undeclared_bias;
}

// Captured with CUDA 13.0 (run in this directory): nvcc -std=c++17 -O3 -shared -Xcompiler -fPIC -gencode=arch=compute_90a,code=sm_90a -Xptxas -v undefined_identifier.cu -o /tmp/x.so > undefined_identifier.log 2>&1
