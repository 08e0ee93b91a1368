// A device function declared but defined nowhere, with relocatable device code: nvlink fails.
extern __device__ float missing_device_helper(float x);

__global__ void apply(float* p, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = missing_device_helper(p[i]);
}

int main() {
  apply<<<1, 32>>>(nullptr, 32);
  return 0;
}

// Captured with CUDA 13.0 (run in this directory): nvcc -std=c++17 -O3 -rdc=true -Xcompiler -fPIC -gencode=arch=compute_90a,code=sm_90a -Xptxas -v nvlink_undefined.cu -o /tmp/x.out > nvlink_undefined.log 2>&1
