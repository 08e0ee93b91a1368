// #warning is handled by the host preprocessor, so it is reported in gcc's format.
#warning "this kernel is a placeholder"

__global__ void placeholder(float* x) { x[threadIdx.x] = 0.0f; }

// Captured with CUDA 13.0 (run in this directory): nvcc -std=c++17 -O3 -shared -Xcompiler -fPIC -gencode=arch=compute_90a,code=sm_90a -Xptxas -v preprocessor_warning.cu -o /tmp/x.so > preprocessor_warning.log 2>&1
