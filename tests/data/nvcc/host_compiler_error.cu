// Accepted by the CUDA front end but rejected by the host compiler (gcc) when it optimizes
// the call: gcc reports it in its own format, with an "In function" preamble.
__attribute__((error("do not call checked_abort from host code"))) void checked_abort();

__global__ void fill(float* p) { p[threadIdx.x] = 1.0f; }

void launch(float* p, int n) {
  if (n < 0) checked_abort();
  fill<<<1, 32>>>(p);
}

// Captured with CUDA 13.0 (run in this directory): nvcc -std=c++17 -O3 -shared -Xcompiler -fPIC -gencode=arch=compute_90a,code=sm_90a -Xptxas -v host_compiler_error.cu -o /tmp/x.so > host_compiler_error.log 2>&1
