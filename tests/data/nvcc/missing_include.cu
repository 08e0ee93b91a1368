// A header that does not exist: the host preprocessor (gcc) reports it in gcc's format.
#include "kernel_helpers_that_do_not_exist.cuh"

__global__ void noop() {}

// Captured with CUDA 13.0 (run in this directory): nvcc -std=c++17 -O3 -shared -Xcompiler -fPIC -gencode=arch=compute_90a,code=sm_90a -Xptxas -v missing_include.cu -o /tmp/x.so > missing_include.log 2>&1
