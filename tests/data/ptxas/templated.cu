// A templated kernel, instantiated twice: the mangled names demangle to the template.
template <typename T, int kBlock>
__global__ void tiled_copy(const T* in, T* out, int n) {
  __shared__ T tile[kBlock];
  int i = blockIdx.x * kBlock + threadIdx.x;
  if (i < n) tile[threadIdx.x] = in[i];
  __syncthreads();
  if (i < n) out[i] = tile[threadIdx.x];
}

template __global__ void tiled_copy<float, 256>(const float*, float*, int);
template __global__ void tiled_copy<double, 128>(const double*, double*, int);
