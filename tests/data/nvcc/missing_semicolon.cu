// A missing semicolon after a declaration.
__global__ void add(float* c, const float* a, const float* b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x
  if (i < n) c[i] = a[i] + b[i];
}
