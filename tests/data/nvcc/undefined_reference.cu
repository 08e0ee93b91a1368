// A host function declared but defined nowhere: linking an executable fails in ld.
extern "C" void missing_host_helper(float* p, int n);

__global__ void fill(float* p, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = 1.0f;
}

int main() {
  float* p = nullptr;
  fill<<<1, 32>>>(p, 32);
  missing_host_helper(p, 32);
  return 0;
}

// Captured with CUDA 13.0 (run in this directory): nvcc -std=c++17 -O3 -Xcompiler -fPIC -gencode=arch=compute_90a,code=sm_90a -Xptxas -v undefined_reference.cu -o /tmp/x.out > undefined_reference.log 2>&1
