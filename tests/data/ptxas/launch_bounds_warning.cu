// __launch_bounds__ asks for more resident blocks than an SM can hold: ptxas warns and ignores it.
__global__ void __launch_bounds__(1024, 64) bounded(float* x) {
  x[blockIdx.x * blockDim.x + threadIdx.x] += 1.0f;
}
