// __launch_bounds__ asks for more resident blocks than an SM can hold: ptxas warns and ignores it.
__global__ void __launch_bounds__(1024, 64) bounded(float* x) {
  x[blockIdx.x * blockDim.x + threadIdx.x] += 1.0f;
}

// Captured with CUDA 13.0 (run in this directory): nvcc -std=c++17 -O3 -shared -Xcompiler -fPIC -gencode=arch=compute_90a,code=sm_90a -Xptxas -v launch_bounds_warning.cu -o /tmp/x.so > launch_bounds_warning.log 2>&1
