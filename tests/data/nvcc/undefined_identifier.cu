// Two uses of undeclared names in a kernel: the EDG front end reports each one.
__global__ void scale(float* out, const float* in, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] * factor;
  out[0] += undeclared_bias;
}
