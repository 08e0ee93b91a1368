// Compiles, with front-end warnings: an unused variable and a set-but-unused one.
__global__ void copy(float* out, const float* in, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int unused;
  float scratch = 0.0f;
  scratch = 1.0f;
  if (i < n) out[i] = in[i];
}
