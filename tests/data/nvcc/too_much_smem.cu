// 256 KiB of static shared memory: more than an sm_90 block may have, so ptxas rejects it.
__global__ void big_smem(float* out) {
  __shared__ float s[1 << 16];
  s[threadIdx.x] = threadIdx.x;
  __syncthreads();
  out[threadIdx.x] = s[(threadIdx.x + 1) % blockDim.x];
}

// Captured with CUDA 13.0 (run in this directory): nvcc -std=c++17 -O3 -shared -Xcompiler -fPIC -gencode=arch=compute_90a,code=sm_90a -Xptxas -v too_much_smem.cu -o /tmp/x.so > too_much_smem.log 2>&1
