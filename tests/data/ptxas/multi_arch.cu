// One kernel built for two architectures: ptxas reports it once per target.
__global__ void saxpy(float* y, const float* x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

// Captured with CUDA 13.0 (run in this directory): nvcc -std=c++17 -O3 -shared -Xcompiler -fPIC -gencode=arch=compute_80,code=sm_80 -gencode=arch=compute_90a,code=sm_90a -Xptxas -v multi_arch.cu -o /tmp/x.so > multi_arch.log 2>&1
