// Several front-end errors in one file, one on an unindented line.
struct Pair { int a; int b; };

__device__ int first(Pair p) { return p.a; }

__global__ void mix(int* out, float* f) {
Pair p = 3;
  int* q = f;
  out[0] = first(1.0f) + *q;
  out[1] = p.c;
}

// Captured with CUDA 13.0 (run in this directory): nvcc -std=c++17 -O3 -shared -Xcompiler -fPIC -gencode=arch=compute_90a,code=sm_90a -Xptxas -v type_mismatch.cu -o /tmp/x.so > type_mismatch.log 2>&1
