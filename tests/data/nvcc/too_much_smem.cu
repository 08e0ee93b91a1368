// 256 KiB of static shared memory: more than an sm_90 block may have, so ptxas rejects it.
__global__ void big_smem(float* out) {
  __shared__ float s[1 << 16];
  s[threadIdx.x] = threadIdx.x;
  __syncthreads();
  out[threadIdx.x] = s[(threadIdx.x + 1) % blockDim.x];
}
