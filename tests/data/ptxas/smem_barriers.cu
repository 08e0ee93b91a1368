// Static shared memory and __syncthreads: a block-wide tree reduction.
__global__ void smem_reduce(const float* in, float* out) {
  __shared__ float tile[256];
  tile[threadIdx.x] = in[blockIdx.x * 256 + threadIdx.x];
  __syncthreads();
  for (int s = 128; s > 0; s >>= 1) {
    if (threadIdx.x < s) tile[threadIdx.x] += tile[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = tile[0];
}

// Captured with CUDA 13.0 (run in this directory): nvcc -std=c++17 -O3 -shared -Xcompiler -fPIC -gencode=arch=compute_90a,code=sm_90a -Xptxas -v smem_barriers.cu -o /tmp/x.so > smem_barriers.log 2>&1
