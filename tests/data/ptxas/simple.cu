// A simple elementwise kernel: few registers, no shared memory, no stack.
__global__ void vector_add(float* c, const float* a, const float* b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
