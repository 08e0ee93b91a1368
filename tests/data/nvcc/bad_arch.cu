// Built with an architecture nvcc does not know: the driver itself fails.
__global__ void noop() {}

// Captured with CUDA 13.0 (run in this directory): nvcc -std=c++17 -O3 -shared -Xcompiler -fPIC -gencode=arch=compute_99,code=sm_99 -Xptxas -v bad_arch.cu -o /tmp/x.so > bad_arch.log 2>&1
